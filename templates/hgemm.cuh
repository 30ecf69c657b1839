// templates: the f16/bf16 HGEMM family on tensor cores (sm_80+): a multistage cp.async pipeline into
// XOR-swizzled shared tiles, ldmatrix.x4 (.trans for MN-major operands), mma.sync m16n8k16 with f32
// accumulators, block rasterization, alpha/beta epilogue converting to f16/bf16/f32. The index maps
// below are the kernel's and the host bank analyzer's (generator/hgemm.cpp): one source of truth.
#pragma once

#include "common.cuh"
#include "gemm_common.cuh"
#include "swizzle.cuh"

namespace swz {
namespace tpl {

/// Everything that shapes an HGEMM block's shared-memory traffic.
///   block tile BM x BN, k-tile BK (multiple of 16); warps tile the block as (BM/WM) x (BN/WN); a warp
///   computes WM/16 x WN/8 mma tiles. A k-major operand's tile is [MN][BK] (rows of BK elements), an
///   MN-major one's [BK][MN]; either is swizzled on its element offsets.
struct HgemmGeom {
  int bm, bn, bk;
  int wm, wn;
  int threads;
  int a_kmajor, b_kmajor;
  int vec;                  // elements (2 bytes each) per cp.async
  int swa_b, swa_m, swa_s;  // Swizzle<B,M,S> of the A tile
  int swb_b, swb_m, swb_s;  // ... of the B tile
};

SWZ_HD constexpr int hgemm_warps_n(const HgemmGeom& g) { return g.bn / g.wn; }
SWZ_HD constexpr int hgemm_a_iters(const HgemmGeom& g) { return (g.bm * g.bk) / (g.vec * g.threads); }
SWZ_HD constexpr int hgemm_b_iters(const HgemmGeom& g) { return (g.bn * g.bk) / (g.vec * g.threads); }
SWZ_HD constexpr int hgemm_stage_elems(const HgemmGeom& g) { return (g.bm + g.bn) * g.bk; }

/// Element offset of A(m, k) / B(n, k) inside one stage's tile (the truth both sides share).
SWZ_HD constexpr int hgemm_a_offset(const HgemmGeom& g, int m, int k) {
  return static_cast<int>(swizzle_apply(g.a_kmajor ? static_cast<long long>(m) * g.bk + k : static_cast<long long>(k) * g.bm + m,
                                        g.swa_b, g.swa_m, g.swa_s));
}
SWZ_HD constexpr int hgemm_b_offset(const HgemmGeom& g, int n, int k) {
  return static_cast<int>(swizzle_apply(g.b_kmajor ? static_cast<long long>(n) * g.bk + k : static_cast<long long>(k) * g.bn + n,
                                        g.swb_b, g.swb_m, g.swb_s));
}

// --- global -> shared (cp.async) ---------------------------------------------------------------
// Chunk c = it * threads + tid covers the tile's row-major elements [c * vec, (c + 1) * vec), so its
// swizzled offset splits (the swizzle is linear over XOR and the two parts share no bits) into a
// per-thread part and a compile-time per-iteration part.
SWZ_HD constexpr int hgemm_a_load_mn(const HgemmGeom& g, int tid, int it) {
  return gemm_chunk_mn(g.bm, g.bk, g.a_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int hgemm_a_load_k(const HgemmGeom& g, int tid, int it) {
  return gemm_chunk_k(g.bm, g.bk, g.a_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int hgemm_b_load_mn(const HgemmGeom& g, int tid, int it) {
  return gemm_chunk_mn(g.bn, g.bk, g.b_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int hgemm_b_load_k(const HgemmGeom& g, int tid, int it) {
  return gemm_chunk_k(g.bn, g.bk, g.b_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int hgemm_a_store_offset(const HgemmGeom& g, int tid, int it) {
  return static_cast<int>(swizzle_apply(static_cast<long long>(tid) * g.vec, g.swa_b, g.swa_m, g.swa_s) ^
                          swizzle_apply(static_cast<long long>(it) * g.threads * g.vec, g.swa_b, g.swa_m, g.swa_s));
}
SWZ_HD constexpr int hgemm_b_store_offset(const HgemmGeom& g, int tid, int it) {
  return static_cast<int>(swizzle_apply(static_cast<long long>(tid) * g.vec, g.swb_b, g.swb_m, g.swb_s) ^
                          swizzle_apply(static_cast<long long>(it) * g.threads * g.vec, g.swb_b, g.swb_m, g.swb_s));
}

// --- shared -> registers (ldmatrix.x4) -----------------------------------------------------------
// Lane l of an ldmatrix.x4 gives the 16-byte row address of matrix l / 8. For A (m16 x k16 of mma tile
// mi at k-step kk) the four matrices are (m 0-7 | 8-15) x (k 0-7 | 8-15) in the mma.m16n8k16 register
// order a0..a3; for B (n16 x k16 of n-tile pair nj) they are b0, b1 of n-tile 2nj then of 2nj + 1.
// A k-major tile is read with plain ldmatrix, an MN-major one with .trans. The row a lane addresses is
// (thread part) + (kk part) + (mi / nj part), three disjoint bit fields, so the swizzled offset is the
// XOR of a per-thread, per-kk base (a few registers) and a compile-time constant.
SWZ_HD constexpr int hgemm_a_lane_m(const HgemmGeom& g, int tid) {
  return ((tid / 32) / hgemm_warps_n(g)) * g.wm + (g.a_kmajor ? (tid % 16) : ((tid % 32) / 8 % 2) * 8);
}
SWZ_HD constexpr int hgemm_a_lane_k(const HgemmGeom& g, int tid) {
  return g.a_kmajor ? ((tid % 32) / 16) * 8 : ((tid % 32) / 16) * 8 + tid % 8;
}
SWZ_HD constexpr int hgemm_b_lane_n(const HgemmGeom& g, int tid) {
  return ((tid / 32) % hgemm_warps_n(g)) * g.wn + ((tid % 32) / 16) * 8 + (g.b_kmajor ? tid % 8 : 0);
}
SWZ_HD constexpr int hgemm_b_lane_k(const HgemmGeom& g, int tid) {
  return ((tid % 32) / 8 % 2) * 8 + (g.b_kmajor ? 0 : tid % 8);
}
SWZ_HD constexpr int hgemm_a_ldsm_base(const HgemmGeom& g, int tid, int kk) {
  return hgemm_a_offset(g, hgemm_a_lane_m(g, tid), hgemm_a_lane_k(g, tid) + 16 * kk);
}
SWZ_HD constexpr int hgemm_a_ldsm_xor(const HgemmGeom& g, int mi) { return hgemm_a_offset(g, 16 * mi, 0); }
SWZ_HD constexpr int hgemm_b_ldsm_base(const HgemmGeom& g, int tid, int kk) {
  return hgemm_b_offset(g, hgemm_b_lane_n(g, tid), hgemm_b_lane_k(g, tid) + 16 * kk);
}
SWZ_HD constexpr int hgemm_b_ldsm_xor(const HgemmGeom& g, int nj) { return hgemm_b_offset(g, 16 * nj, 0); }
/// Element offsets the kernel hands to ldmatrix (what the analyzer evaluates).
SWZ_HD constexpr int hgemm_a_ldsm_offset(const HgemmGeom& g, int tid, int kk, int mi) {
  return hgemm_a_ldsm_base(g, tid, kk) ^ hgemm_a_ldsm_xor(g, mi);
}
SWZ_HD constexpr int hgemm_b_ldsm_offset(const HgemmGeom& g, int tid, int kk, int nj) {
  return hgemm_b_ldsm_base(g, tid, kk) ^ hgemm_b_ldsm_xor(g, nj);
}

#if SWZ_DEVICE_CODE

/// One operand tile's cp.async issue for k-tile starting at k0. MN_LEFT: valid rows/cols from the
/// tile's origin; K_LEFT: valid k from k0. Out-of-range chunks are zero-filled (partially, at an edge).
template <int MN_EXT, int BK, int THREADS, int VEC, int KMAJOR, int SW_B, int SW_M, int SW_S>
__device__ __forceinline__ void hgemm_load_tile(unsigned char* smem_tile, unsigned smem_tile_u32,
                                                const unsigned short* __restrict__ base, long long ld, int mn_left,
                                                int k_left, int tid, int st_base) {
  constexpr int kIters = (MN_EXT * BK) / (VEC * THREADS);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = it * THREADS + tid;
    const int mn = gemm_chunk_mn(MN_EXT, BK, KMAJOR, VEC, c), k = gemm_chunk_k(MN_EXT, BK, KMAJOR, VEC, c);
    const int st = st_base ^ static_cast<int>(swizzle_apply(static_cast<long long>(it) * THREADS * VEC, SW_B, SW_M, SW_S));
    // Valid elements of this chunk along its contiguous dimension (0 .. VEC).
    const int along = KMAJOR ? (mn < mn_left ? k_left - k : 0) : (k < k_left ? mn_left - mn : 0);
    const int valid = along < 0 ? 0 : (along > VEC ? VEC : along);
    const unsigned short* src = KMAJOR ? base + static_cast<long long>(mn) * ld + k : base + static_cast<long long>(k) * ld + mn;
    if (VEC >= 2) {
      gemm_cp_async<(VEC >= 2 ? VEC * 2 : 4)>(smem_tile_u32 + 2 * st, valid > 0 ? src : base, 2 * valid);
    } else {
      // 2-byte rows (odd pitches): cp.async has no 2-byte form; a plain load and store.
      *reinterpret_cast<unsigned short*>(smem_tile + 2 * st) = valid > 0 ? *src : static_cast<unsigned short>(0);
    }
  }
}

template <int IN_KIND, int OUT_KIND, int BM, int BN, int BK, int WM, int WN, int STAGES, int A_KMAJOR, int B_KMAJOR,
          int VEC, int SWA_B, int SWA_M, int SWA_S, int SWB_B, int SWB_M, int SWB_S, int RASTER>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1) hgemm_kernel(const __grid_constant__ GemmParams p) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr HgemmGeom g{BM, BN, BK, WM, WN, THREADS, A_KMAJOR, B_KMAJOR, VEC, SWA_B, SWA_M, SWA_S, SWB_B, SWB_M, SWB_S};
  constexpr int MI = WM / 16, NI = WN / 8, KSTEPS = BK / 16;
  static_assert(BK % 16 == 0 && WM % 16 == 0 && WN % 16 == 0, "hgemm: BK, WM, WN must be multiples of 16");
  static_assert(STAGES >= 2, "hgemm: at least two pipeline stages");
  static_assert(hgemm_a_iters(g) * VEC * THREADS == BM * BK && hgemm_b_iters(g) * VEC * THREADS == BN * BK,
                "hgemm: tiles must split evenly into cp.async chunks");
  typedef typename GemmElem<OUT_KIND>::type OutT;
  extern __shared__ __align__(128) unsigned char hgemm_smem[];
  const unsigned smem_u32 = gemm_smem_u32(hgemm_smem);
  constexpr int kStageBytes = 2 * hgemm_stage_elems(g), kABytes = 2 * BM * BK;

  const int tid = threadIdx.x;
  const int tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int pid = blockIdx.x;
  if (pid >= tiles_m * tiles_n) return;
  const int m0 = gemm_raster_m(pid, tiles_m, tiles_n, RASTER) * BM;
  const int n0 = gemm_raster_n(pid, tiles_m, tiles_n, RASTER) * BN;
  const long long b = blockIdx.z;  // one matrix of the batch per z (the host splits huge batches)
  const unsigned short* a_base =
      static_cast<const unsigned short*>(p.a) + b * p.stride_a + (A_KMAJOR ? m0 * p.lda : m0);
  const unsigned short* b_base =
      static_cast<const unsigned short*>(p.b) + b * p.stride_b + (B_KMAJOR ? n0 * p.ldb : n0);
  const int kt_count = (p.k + BK - 1) / BK;

  const int a_st = static_cast<int>(swizzle_apply(static_cast<long long>(tid) * VEC, SWA_B, SWA_M, SWA_S));
  const int b_st = static_cast<int>(swizzle_apply(static_cast<long long>(tid) * VEC, SWB_B, SWB_M, SWB_S));
  auto load_stage = [&](int kt, int stage) {
    const int k0 = kt * BK;
    unsigned char* tile = hgemm_smem + stage * kStageBytes;
    const unsigned tile_u32 = smem_u32 + stage * kStageBytes;
    hgemm_load_tile<BM, BK, THREADS, VEC, A_KMAJOR, SWA_B, SWA_M, SWA_S>(
        tile, tile_u32, a_base + (A_KMAJOR ? k0 : static_cast<long long>(k0) * p.lda), p.lda, p.m - m0, p.k - k0, tid, a_st);
    hgemm_load_tile<BN, BK, THREADS, VEC, B_KMAJOR, SWB_B, SWB_M, SWB_S>(
        tile + kABytes, tile_u32 + kABytes, b_base + (B_KMAJOR ? k0 : static_cast<long long>(k0) * p.ldb), p.ldb,
        p.n - n0, p.k - k0, tid, b_st);
  };

  // Per-thread ldmatrix bases (bytes), one per k-step; the mi / nj parts are compile-time XORs.
  int a_ld[KSTEPS], b_ld[KSTEPS];
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) {
    a_ld[kk] = 2 * hgemm_a_ldsm_base(g, tid, kk);
    b_ld[kk] = 2 * hgemm_b_ldsm_base(g, tid, kk);
  }

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  unsigned af[2][MI][4], bf[2][NI / 2][4];
  auto load_frags = [&](int buf, int stage, int kk) {
    const unsigned a_addr = smem_u32 + stage * kStageBytes;
    const unsigned b_addr = a_addr + kABytes;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
      gemm_ldmatrix_x4<!A_KMAJOR>(af[buf][mi], a_addr + (a_ld[kk] ^ (2 * hgemm_a_ldsm_xor(g, mi))));
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj)
      gemm_ldmatrix_x4<!B_KMAJOR>(bf[buf][nj], b_addr + (b_ld[kk] ^ (2 * hgemm_b_ldsm_xor(g, nj))));
  };

  // Prologue: STAGES - 1 tiles in flight. Then per k-tile: read its k-steps from read_stage while the
  // tile STAGES - 1 ahead is copied into the stage everyone finished reading last iteration.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kt_count) load_stage(s, s);
    gemm_cp_async_commit();
  }
  gemm_cp_async_wait<STAGES - 2>();
  __syncthreads();

  int read_stage = 0, write_stage = STAGES - 1;
  for (int kt = 0; kt < kt_count; ++kt) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      // Fragments alternate between two register sets by k-step, so the loads of step kk + 1 can be
      // scheduled over the mma of step kk (ptxas does it within the unrolled k-steps).
      load_frags(kk & 1, read_stage, kk);
      if (kk == 0) {
        if (kt + STAGES - 1 < kt_count) load_stage(kt + STAGES - 1, write_stage);
        gemm_cp_async_commit();
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const int nn = (mi & 1) ? NI - 1 - ni : ni;
          gemm_mma_16816<IN_KIND>(acc[mi][nn], af[kk & 1][mi], bf[kk & 1][nn / 2][(nn & 1) * 2],
                                  bf[kk & 1][nn / 2][(nn & 1) * 2 + 1]);
        }
      if (kk == KSTEPS - 1) {
        // Tile kt + 1 must have landed, and every warp must be done with this stage before it is refilled.
        gemm_cp_async_wait<STAGES - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
      }
    }
  }
  gemm_cp_async_wait<0>();

  // Epilogue: C = alpha * acc + beta * C, converted; beta == 0 never reads C (it may hold NaN).
  OutT* c_base = static_cast<OutT*>(p.c) + b * p.stride_c;
  const bool c_pair = gemm_c_aligned<2 * sizeof(OutT)>(p, sizeof(OutT));
  const bool use_beta = p.beta != 0.0f;
  const int lane = tid % 32;
  const int row0 = m0 + ((tid / 32) / hgemm_warps_n(g)) * WM + lane / 4;
  const int col0 = n0 + ((tid / 32) % hgemm_warps_n(g)) * WN + (lane % 4) * 2;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + mi * 16 + h * 8;
      if (row >= p.m) continue;
      OutT* crow = c_base + static_cast<long long>(row) * p.ldc;
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int col = col0 + ni * 8;
        float v0 = p.alpha * acc[mi][ni][2 * h], v1 = p.alpha * acc[mi][ni][2 * h + 1];
        if (c_pair && col + 1 < p.n) {
          if (use_beta) {
            v0 = fmaf(p.beta, gemm_to_f32<OUT_KIND>(crow[col]), v0);
            v1 = fmaf(p.beta, gemm_to_f32<OUT_KIND>(crow[col + 1]), v1);
          }
          if (sizeof(OutT) == 4) {
            *reinterpret_cast<float2*>(crow + col) = make_float2(v0, v1);
          } else {
            const unsigned lo = static_cast<unsigned>(gemm_from_f32<OUT_KIND>(v0));
            const unsigned hi = static_cast<unsigned>(gemm_from_f32<OUT_KIND>(v1));
            *reinterpret_cast<unsigned*>(crow + col) = lo | (hi << 16);
          }
        } else {
          if (col < p.n) crow[col] = gemm_from_f32<OUT_KIND>(use_beta ? fmaf(p.beta, gemm_to_f32<OUT_KIND>(crow[col]), v0) : v0);
          if (col + 1 < p.n)
            crow[col + 1] =
                gemm_from_f32<OUT_KIND>(use_beta ? fmaf(p.beta, gemm_to_f32<OUT_KIND>(crow[col + 1]), v1) : v1);
        }
      }
    }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
