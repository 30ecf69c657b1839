// templates: the autotuner's trusted helpers for GEMM candidates, run by the benchmark worker
// (runtime/worker_gemm.cpp): fill A and B with hash-based random values in [-1, 1) on the GPU, and compare
// a candidate's C with the reference kernel's C (relative Frobenius error, sums in f64), guards included.
#pragma once

#include "common.cuh"
#include "gemm_common.cuh"

namespace swz {
namespace tpl {

enum GemmCheckMode { kGemmCheckFill = 0, kGemmCheckVerify = 1 };

/// Written over C (guards, padding and batch gaps included) before a candidate runs: a NaN in f32
/// (0x7FD57FD5) and in both 16-bit types (0x7FD5), so an element the candidate forgot to write, or a C
/// it read although beta = 0, shows up as non-finite.
constexpr unsigned kGemmCheckPoison32 = 0x7FD57FD5u;

/// Everything the check kernel needs. Sizes in elements. `out` and `ref` point at the start of their
/// front guards (same layout), so C proper starts guard_elems further; C is the kernel frame's m x n
/// row-major matrix with pitch ldc.
struct GemmCheckParams {
  int mode;        // GemmCheckMode
  unsigned seed;   // kGemmCheckFill: of the values
  void* fill;      // kGemmCheckFill: written (IN_KIND elements)
  long long fill_elems;
  const void* out;  // kGemmCheckVerify: the candidate's buffer
  const void* ref;  // and the reference's
  long long out_total_elems, guard_elems;
  long long m, n, ldc, batch, stride_c;
  double* sums;                 // [0] += sum (out - ref)^2, [1] += sum ref^2 over finite outputs (zeroed first)
  unsigned long long* counts;   // [0] elements outside C written, [1] first such index (~0 first),
                                // [2] non-finite elements of C,    [3] first such index (~0 first)
};

/// Elements of C proper: every matrix up to the end of the last one's last row.
SWZ_HD constexpr long long gemm_check_body_elems(long long m, long long ldc, long long batch, long long stride_c) {
  return (batch - 1) * stride_c + m * ldc;
}

/// The value of element `i` of a filled buffer: uniform in [-1, 1) with 24 random bits.
SWZ_HD constexpr float gemm_check_value(unsigned long long i, unsigned seed) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return static_cast<float>(static_cast<unsigned>(x >> 8) & 0xFFFFFFu) * (1.0f / 8388608.0f) - 1.0f;
}

#if SWZ_DEVICE_CODE

template <int KIND> struct GemmCheckBits { typedef unsigned short type; };
template <> struct GemmCheckBits<kGemmF32> { typedef unsigned type; };

template <int KIND> __device__ __forceinline__ float gemm_check_to_f32(typename GemmCheckBits<KIND>::type v) {
  return gemm_to_f32<KIND>(v);
}
template <> __device__ __forceinline__ float gemm_check_to_f32<kGemmF32>(unsigned v) { return __uint_as_float(v); }

template <int IN_KIND, int OUT_KIND>
__global__ void gemm_check_kernel(const __grid_constant__ GemmCheckParams p) {
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p.mode == kGemmCheckFill) {
    typedef typename GemmElem<IN_KIND>::type InT;
    InT* dst = static_cast<InT*>(p.fill);
    for (long long i = first; i < p.fill_elems; i += step)
      dst[i] = gemm_from_f32<IN_KIND>(gemm_check_value(static_cast<unsigned long long>(i), p.seed));
    return;
  }
  typedef typename GemmCheckBits<OUT_KIND>::type W;
  const W* out = static_cast<const W*>(p.out);
  const W* ref = static_cast<const W*>(p.ref);
  const W poison = static_cast<W>(kGemmCheckPoison32);
  const long long body = gemm_check_body_elems(p.m, p.ldc, p.batch, p.stride_c);
  double err = 0, norm = 0;
  for (long long i = first; i < p.out_total_elems; i += step) {
    const long long j = i - p.guard_elems;
    bool inside = false;
    if (j >= 0 && j < body) {
      const long long b = j / p.stride_c, rem = j - b * p.stride_c, r = rem / p.ldc, c = rem - r * p.ldc;
      inside = r < p.m && c < p.n;
    }
    const W got = out[i];
    if (!inside) {  // guards, padding between rows and gaps between matrices stay untouched
      if (got != poison) {
        atomicAdd(&p.counts[0], 1ull);
        atomicMin(&p.counts[1], static_cast<unsigned long long>(i));
      }
      continue;
    }
    const float x = gemm_check_to_f32<OUT_KIND>(got), y = gemm_check_to_f32<OUT_KIND>(ref[i]);
    if ((__float_as_uint(x) & 0x7F800000u) == 0x7F800000u) {  // inf or NaN
      atomicAdd(&p.counts[2], 1ull);
      atomicMin(&p.counts[3], static_cast<unsigned long long>(i));
      continue;
    }
    const double d = static_cast<double>(x) - static_cast<double>(y);
    err += d * d;
    norm += static_cast<double>(y) * static_cast<double>(y);
  }
  // One atomic per warp: the sums are reduced with shuffles first.
  for (int o = 16; o > 0; o /= 2) {
    err += __shfl_down_sync(0xFFFFFFFFu, err, o);
    norm += __shfl_down_sync(0xFFFFFFFFu, norm, o);
  }
  if ((threadIdx.x & 31) == 0 && (err != 0 || norm != 0)) {
    atomicAdd(&p.sums[0], err);
    atomicAdd(&p.sums[1], norm);
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
