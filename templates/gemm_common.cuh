// templates: pieces shared by the GEMM kernel templates (sgemm.cuh, hgemm.cuh, gemm_reference.cuh):
// the kernel argument struct, the global->shared chunk maps, block rasterization, and (device only)
// raw 16-bit float conversions and the inline-PTX wrappers for cp.async, ldmatrix and mma.sync.
#pragma once

#include "common.cuh"
#include "swizzle.cuh"

namespace swz {
namespace tpl {

// Element kinds as template arguments (no cuda_fp16.h: 16-bit floats travel as raw bits).
enum GemmElemKind { kGemmF16 = 0, kGemmBF16 = 1, kGemmF32 = 2 };

/// Kernel arguments, in the kernel's frame: C (M x N, row-major, pitch ldc) = alpha * A * B + beta * C.
/// A is M x K, stored K-contiguous ("k-major": element (m, k) at m * lda + k) or M-contiguous
/// (k * lda + m); B is K x N, stored K-contiguous (n * ldb + k) or N-contiguous (k * ldb + n).
/// The host maps every public layout (column-major C included) onto this frame.
struct GemmParams {
  const void* a;
  const void* b;
  void* c;
  int m, n, k;
  long long lda, ldb, ldc;  // elements
  long long batch;          // >= 1; matrix blockIdx.z of the batch (the host keeps gridDim.z <= 65535)
  long long stride_a, stride_b, stride_c;
  float alpha, beta;
  /// Split-K: K is cut into k_splits slices of k_slice elements (a multiple of the kernel's k-tile);
  /// blockIdx.z = matrix * k_splits + slice, and slice z's partial result goes to C matrix z (the host
  /// points C at an f32 workspace and reduces it). k_splits <= 1: no split (blockIdx.z = matrix).
  int k_splits, k_slice;
};

/// The part of the problem one blockIdx.z computes: matrix `batch` of A and B, k in [k0, k1).
struct GemmSlice {
  long long batch;
  int k0, k1;
};
SWZ_HD constexpr GemmSlice gemm_slice(const GemmParams& p, int z) {
  return p.k_splits <= 1 ? GemmSlice{z, 0, p.k}
                         : GemmSlice{z / p.k_splits, (z % p.k_splits) * p.k_slice,
                                     imin(p.k, (z % p.k_splits) * p.k_slice + p.k_slice)};
}

// Global -> shared copies of one operand tile (MN x BK elements) move `vec`-element chunks along the
// operand's contiguous dimension: k-major tiles have BK/vec chunks per row of the tile, MN-major
// tiles MN/vec chunks per k. Chunk c of the tile starts at (mn, k):
SWZ_HD constexpr int gemm_chunk_mn(int mn_ext, int bk, int kmajor, int vec, int c) {
  return kmajor ? c / (bk / vec) : (c % (mn_ext / vec)) * vec;
}
SWZ_HD constexpr int gemm_chunk_k(int mn_ext, int bk, int kmajor, int vec, int c) {
  return kmajor ? (c % (bk / vec)) * vec : c / (mn_ext / vec);
}

/// Block rasterization ("threadblock swizzle") for L2 reuse: linear block id -> (tile_m, tile_n).
/// Blocks walk `group` tile-rows at a time, column by column inside the group, so consecutive
/// blocks share A rows and B columns. group = 1 is a plain row-major raster.
SWZ_HD constexpr int gemm_raster_m(int pid, int tiles_m, int tiles_n, int group) {
  return (pid / (group * tiles_n)) * group + (pid % (group * tiles_n)) % imin(group, tiles_m - (pid / (group * tiles_n)) * group);
}
SWZ_HD constexpr int gemm_raster_n(int pid, int tiles_m, int tiles_n, int group) {
  return (pid % (group * tiles_n)) / imin(group, tiles_m - (pid / (group * tiles_n)) * group);
}

#if SWZ_DEVICE_CODE

// --- 16-bit float conversions (inline PTX; bit patterns in unsigned short) ---------------------

template <int KIND> struct GemmElem;
template <> struct GemmElem<kGemmF16> { typedef unsigned short type; };
template <> struct GemmElem<kGemmBF16> { typedef unsigned short type; };
template <> struct GemmElem<kGemmF32> { typedef float type; };

template <int KIND> __device__ __forceinline__ float gemm_to_f32(typename GemmElem<KIND>::type v);
template <> __device__ __forceinline__ float gemm_to_f32<kGemmF32>(float v) { return v; }
template <> __device__ __forceinline__ float gemm_to_f32<kGemmF16>(unsigned short v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
template <> __device__ __forceinline__ float gemm_to_f32<kGemmBF16>(unsigned short v) {
  return __uint_as_float(static_cast<unsigned>(v) << 16);  // exact: bf16 is the top half of an f32
}

template <int KIND> __device__ __forceinline__ typename GemmElem<KIND>::type gemm_from_f32(float f);
template <> __device__ __forceinline__ float gemm_from_f32<kGemmF32>(float f) { return f; }
template <> __device__ __forceinline__ unsigned short gemm_from_f32<kGemmF16>(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
template <> __device__ __forceinline__ unsigned short gemm_from_f32<kGemmBF16>(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// --- shared-memory addressing, cp.async, ldmatrix, mma ------------------------------------------

__device__ __forceinline__ unsigned gemm_smem_u32(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

/// cp.async of BYTES (4, 8 or 16) from global to shared; src_bytes < BYTES zero-fills the rest
/// (src_bytes = 0: nothing is read, the destination becomes zeros).
template <int BYTES> __device__ __forceinline__ void gemm_cp_async(unsigned dst, const void* src, int src_bytes);
template <> __device__ __forceinline__ void gemm_cp_async<16>(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
template <> __device__ __forceinline__ void gemm_cp_async<8>(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
template <> __device__ __forceinline__ void gemm_cp_async<4>(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
/// cp.async of a whole BYTES chunk (no zero-fill operand: the interior fast path).
template <int BYTES> __device__ __forceinline__ void gemm_cp_async_full(unsigned dst, const void* src);
template <> __device__ __forceinline__ void gemm_cp_async_full<16>(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
template <> __device__ __forceinline__ void gemm_cp_async_full<8>(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}
template <> __device__ __forceinline__ void gemm_cp_async_full<4>(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void gemm_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void gemm_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

template <bool TRANS> __device__ __forceinline__ void gemm_ldmatrix_x4(unsigned (&r)[4], unsigned addr);
template <> __device__ __forceinline__ void gemm_ldmatrix_x4<false>(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
template <> __device__ __forceinline__ void gemm_ldmatrix_x4<true>(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// d += a * b for one m16n8k16 tile, f32 accumulators; IN_KIND picks f16 or bf16 inputs.
template <int IN_KIND>
__device__ __forceinline__ void gemm_mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <> __device__ __forceinline__ void gemm_mma_16816<kGemmF16>(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                                                     unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void gemm_mma_16816<kGemmBF16>(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                                                      unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// True when C's pointer, pitch and batch stride allow BYTES-wide stores of consecutive columns
/// (block-uniform; decided at run time so a misaligned C never needs a different kernel).
template <int BYTES> __device__ __forceinline__ bool gemm_c_aligned(const GemmParams& p, int elem_bytes) {
  const unsigned long long ptr = reinterpret_cast<unsigned long long>(p.c);
  const unsigned long long ld = static_cast<unsigned long long>(p.ldc) * elem_bytes;
  // blockIdx.z > 0 exists with a batch or with split-K slices: C matrix z starts z * stride_c further.
  const unsigned long long st =
      p.batch > 1 || p.k_splits > 1 ? static_cast<unsigned long long>(p.stride_c) * elem_bytes : 0ULL;
  return ((ptr | ld | st) % BYTES) == 0;
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
