// templates: the trusted reference GEMM (one thread per C element, a plain dot product in f64 or f32),
// used by the autotuner and the tests to verify candidates. Same GemmParams and frame as the fast
// kernels (gemm_common.cuh); deliberately simple: no shared memory, no vectors, no tiling.
#pragma once

#include "common.cuh"
#include "gemm_common.cuh"

namespace swz {
namespace tpl {

/// Threads per block of the reference kernel (16 x 16 C elements).
constexpr int kGemmReferenceBlock = 16;

#if SWZ_DEVICE_CODE

template <int F64> struct ReferenceAcc { typedef float type; };
template <> struct ReferenceAcc<1> { typedef double type; };

template <int IN_KIND, int OUT_KIND, int A_KMAJOR, int B_KMAJOR, int ACC_F64>
__global__ void __launch_bounds__(kGemmReferenceBlock * kGemmReferenceBlock)
    gemm_reference_kernel(const __grid_constant__ GemmParams p) {
  typedef typename GemmElem<IN_KIND>::type InT;
  typedef typename GemmElem<OUT_KIND>::type OutT;
  typedef typename ReferenceAcc<ACC_F64>::type Acc;
  const long long col = static_cast<long long>(blockIdx.x) * kGemmReferenceBlock + threadIdx.x;
  if (col >= p.n) return;
  // Rows and matrices past the grid's y and z limits (65535 blocks): the grid strides over them.
  for (long long row = static_cast<long long>(blockIdx.y) * kGemmReferenceBlock + threadIdx.y; row < p.m;
       row += static_cast<long long>(gridDim.y) * kGemmReferenceBlock) {
    for (long long b = blockIdx.z; b < p.batch; b += gridDim.z) {
      const InT* a = static_cast<const InT*>(p.a) + b * p.stride_a;
      const InT* bm = static_cast<const InT*>(p.b) + b * p.stride_b;
      OutT* c = static_cast<OutT*>(p.c) + b * p.stride_c + row * p.ldc + col;
      Acc sum = 0;
      for (long long k = 0; k < p.k; ++k) {
        const float x = gemm_to_f32<IN_KIND>(A_KMAJOR ? a[row * p.lda + k] : a[k * p.lda + row]);
        const float y = gemm_to_f32<IN_KIND>(B_KMAJOR ? bm[col * p.ldb + k] : bm[k * p.ldb + col]);
        sum += static_cast<Acc>(x) * static_cast<Acc>(y);
      }
      Acc out = static_cast<Acc>(p.alpha) * sum;
      if (p.beta != 0.0f) out += static_cast<Acc>(p.beta) * static_cast<Acc>(gemm_to_f32<OUT_KIND>(*c));
      *c = gemm_from_f32<OUT_KIND>(static_cast<float>(out));
    }
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
