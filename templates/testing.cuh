// templates: TEST-ONLY misbehaving stand-ins for transpose candidates. The autotuner swaps one in
// for a candidate named in TuneOptions::inject (runtime/tune/autotune.cpp), so the GPU tests can prove that
// a faulting, a hanging and a wrong kernel are recorded as failures. Never part of a search space.
#pragma once

#include "common.cuh"
#include "transpose.cuh"

namespace swz {
namespace tpl {

enum MisbehaviourKind { kMisbehaveFault = 0, kMisbehaveHang = 1, kMisbehaveWrong = 2, kMisbehaveOutOfBounds = 3 };

#if SWZ_DEVICE_CODE

/// Same signature as transpose_kernel, so the worker launches it exactly like a real candidate.
template <int ELEM, int MODE>
__global__ void misbehaving_transpose_kernel(const __grid_constant__ TransposeParams p) {
  typedef typename ElemType<ELEM>::type T;
  if (MODE == kMisbehaveFault) {
    // The null page is never mapped: an illegal address, a sticky error for the whole context.
    if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<volatile unsigned*>(16) = 1u;
    return;
  }
  if (MODE == kMisbehaveHang) {
    // Volatile reads are side effects, so the compiler must keep this loop: it never ends.
    const volatile unsigned* word = static_cast<const volatile unsigned*>(p.in);
    while (*word == *word) {
    }
    return;
  }
  // kMisbehaveWrong: a correct naive transpose except one flipped bit in the first element.
  // kMisbehaveOutOfBounds: a correct naive transpose, then one element written just past the output.
  const T* in = static_cast<const T*>(p.in);
  T* out = static_cast<T*>(p.out);
  const long long block = (static_cast<long long>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const long long step = static_cast<long long>(gridDim.x) * gridDim.y * gridDim.z * blockDim.x;
  const long long n = p.batch * p.rows * p.cols;
  for (long long i = block * blockDim.x + threadIdx.x; i < n; i += step) {
    const long long b = i / (p.rows * p.cols), rc = i - b * p.rows * p.cols;
    const long long r = rc / p.cols, c = rc - r * p.cols;
    const T v = in[b * p.stride_in + r * p.ld_in + c];
    out[b * p.stride_out + c * p.ld_out + r] = MODE == kMisbehaveWrong && i == 0 ? static_cast<T>(v ^ 1u) : v;
  }
  if (MODE == kMisbehaveOutOfBounds && block == 0 && threadIdx.x == 0)
    out[(p.batch - 1) * p.stride_out + p.cols * p.ld_out] = in[0];
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
