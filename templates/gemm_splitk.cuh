// templates: the split-K reduction. A GEMM config with split > 1 computes K in `splits` slices into
// an f32 workspace (hgemm.cuh with OUT_KIND = f32, or sgemm.cuh; one workspace matrix per blockIdx.z); this kernel
// sums the slices and applies alpha, beta and the conversion to C's element kind.
#pragma once

#include "common.cuh"
#include "gemm_common.cuh"

namespace swz {
namespace tpl {

/// Threads per block of the reduction; each thread sums kGemmSplitKVec consecutive columns of a row.
constexpr int kGemmSplitKBlock = 256;
constexpr int kGemmSplitKVec = 4;

/// The workspace pitch for N columns: rows padded to a multiple of kGemmSplitKVec floats, so every
/// group of columns is one aligned float4 (and the HGEMM's pair stores into it stay aligned).
SWZ_HD constexpr long long gemm_splitk_ldw(long long n) {
  return (n + kGemmSplitKVec - 1) / kGemmSplitKVec * kGemmSplitKVec;
}

/// Reduction arguments, in the kernels' frame (C row-major M x N, pitch ldc):
///   C[b] = alpha * sum_s W[b * splits + s] + beta * C[b]      (beta == 0 never reads C)
/// W is f32, matrix z at w + z * stride_w, row r at + r * ldw; ldw and stride_w are multiples of
/// kGemmSplitKVec and w is 16-byte aligned (the host's workspace). splits = 0 gives C = beta * C
/// (an empty K). C may have any pitch, stride and alignment.
struct GemmSplitKParams {
  const float* w;
  void* c;
  int m, n;
  long long ldw, stride_w;
  long long ldc, stride_c;
  long long batch;
  int splits;
  float alpha, beta;
};

#if SWZ_DEVICE_CODE

template <int OUT_KIND>
__global__ void __launch_bounds__(kGemmSplitKBlock) gemm_splitk_reduce_kernel(const __grid_constant__ GemmSplitKParams p) {
#if __CUDA_ARCH__ >= 900
  // Launched as a programmatic dependent (Kernel::launch_dependent) its blocks may start while the GEMM
  // that writes the workspace still runs: wait for that grid's completion and memory (a no-op otherwise).
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  typedef typename GemmElem<OUT_KIND>::type OutT;
  constexpr int V = kGemmSplitKVec;
  const long long groups_per_row = (p.n + V - 1) / V;
  const long long groups = p.batch * p.m * groups_per_row;
  const bool use_beta = p.beta != 0.0f;
  for (long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row_id = g / groups_per_row;  // b * m + r
    const long long b = row_id / p.m, r = row_id - b * p.m;
    const int col = static_cast<int>(g - row_id * groups_per_row) * V;

    // Sum the slices: one aligned float4 per slice. Columns past N (row padding) are summed too but
    // never stored, so whatever the workspace holds there does not matter.
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float* w = p.w + b * p.splits * p.stride_w + r * p.ldw + col;
#pragma unroll 4
    for (int s = 0; s < p.splits; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(w + s * p.stride_w);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    float out[V] = {p.alpha * sum.x, p.alpha * sum.y, p.alpha * sum.z, p.alpha * sum.w};

    OutT* c = static_cast<OutT*>(p.c) + b * p.stride_c + r * p.ldc + col;
    const bool whole = col + V <= p.n &&
                       reinterpret_cast<unsigned long long>(c) % (V * sizeof(OutT)) == 0;
    if (whole) {
      if constexpr (OUT_KIND == kGemmF32) {
        // f32 C: one 16-byte load (beta) and store.
        float4* c4 = reinterpret_cast<float4*>(c);
        if (use_beta) {
          const float4 old = *c4;
          out[0] = fmaf(p.beta, old.x, out[0]), out[1] = fmaf(p.beta, old.y, out[1]);
          out[2] = fmaf(p.beta, old.z, out[2]), out[3] = fmaf(p.beta, old.w, out[3]);
        }
        *c4 = make_float4(out[0], out[1], out[2], out[3]);
      } else {
        // 16-bit C: four elements as one 8-byte load (beta) and store of raw bits.
        uint2* c2 = reinterpret_cast<uint2*>(c);
        if (use_beta) {
          const uint2 old = *c2;
          const unsigned short e[V] = {static_cast<unsigned short>(old.x & 0xFFFFu), static_cast<unsigned short>(old.x >> 16),
                                       static_cast<unsigned short>(old.y & 0xFFFFu), static_cast<unsigned short>(old.y >> 16)};
#pragma unroll
          for (int j = 0; j < V; ++j) out[j] = fmaf(p.beta, gemm_to_f32<OUT_KIND>(e[j]), out[j]);
        }
        unsigned bits[V];
#pragma unroll
        for (int j = 0; j < V; ++j) bits[j] = static_cast<unsigned>(gemm_from_f32<OUT_KIND>(out[j]));
        *c2 = make_uint2(bits[0] | (bits[1] << 16), bits[2] | (bits[3] << 16));
      }
    } else {
      // The row's last columns, or a C whose pointer, pitch or stride breaks the vector alignment.
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (col + j >= p.n) break;
        const float v = use_beta ? fmaf(p.beta, gemm_to_f32<OUT_KIND>(c[j]), out[j]) : out[j];
        c[j] = gemm_from_f32<OUT_KIND>(v);
      }
    }
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
