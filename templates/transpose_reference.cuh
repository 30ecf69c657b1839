// templates: the trusted reference of the transpose family (generator/families/transpose), what tuning
// compares its candidates with: one element per thread iteration, no shared memory, no vectors, so
// nothing a candidate could get wrong in the same way.
#pragma once

#include "common.cuh"
#include "transpose.cuh"

namespace swz {
namespace tpl {

#if SWZ_DEVICE_CODE

/// out[b][c][r] = in[b][r][c] over the problem of `p` (the transpose kernel's own parameters): a grid-
/// stride loop over every element, writing nothing else (pitch padding and batch gaps stay untouched).
template <int ELEM>
__global__ void transpose_reference_kernel(const __grid_constant__ TransposeParams p) {
  typedef typename ElemType<ELEM>::type T;  // the kernel's own element words (transpose.cuh)
  const T* in = static_cast<const T*>(p.in);
  T* out = static_cast<T*>(p.out);
  const long long per_matrix = p.rows * p.cols, total = per_matrix * p.batch;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const long long b = i / per_matrix, rc = i - b * per_matrix, r = rc / p.cols, c = rc - r * p.cols;
    out[b * p.stride_out + c * p.ld_out + r] = in[b * p.stride_in + r * p.ld_in + c];
  }
}

#endif

}  // namespace tpl
}  // namespace swz
