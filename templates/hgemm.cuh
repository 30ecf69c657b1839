// templates: the f16/bf16 HGEMM family on tensor cores (sm_80+): a multistage cp.async pipeline into
// XOR-swizzled shared tiles, ldmatrix.x4 (.trans for MN-major operands), mma.sync m16n8k16 with f32
// accumulators, block rasterization, alpha/beta epilogue converting to f16/bf16/f32. The index maps
// below are the kernel's and the host bank analyzer's (generator/families/gemm/hgemm.cpp): one source of truth.
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
// The k-step part is a third disjoint field: base(tid, kk) = base(tid, 0) ^ offset(0, 16 kk) (the swizzle
// is linear over XOR), so one base register per operand serves every k-step.
SWZ_HD constexpr int hgemm_a_ldsm_kxor(const HgemmGeom& g, int kk) { return hgemm_a_offset(g, 0, 16 * kk); }
SWZ_HD constexpr int hgemm_b_ldsm_kxor(const HgemmGeom& g, int kk) { return hgemm_b_offset(g, 0, 16 * kk); }
SWZ_HD constexpr int hgemm_a_ldsm_base(const HgemmGeom& g, int tid, int kk) {
  return hgemm_a_offset(g, hgemm_a_lane_m(g, tid), hgemm_a_lane_k(g, tid)) ^ hgemm_a_ldsm_kxor(g, kk);
}
SWZ_HD constexpr int hgemm_a_ldsm_xor(const HgemmGeom& g, int mi) { return hgemm_a_offset(g, 16 * mi, 0); }
SWZ_HD constexpr int hgemm_b_ldsm_base(const HgemmGeom& g, int tid, int kk) {
  return hgemm_b_offset(g, hgemm_b_lane_n(g, tid), hgemm_b_lane_k(g, tid)) ^ hgemm_b_ldsm_kxor(g, kk);
}
SWZ_HD constexpr int hgemm_b_ldsm_xor(const HgemmGeom& g, int nj) { return hgemm_b_offset(g, 16 * nj, 0); }
/// True when the per-tile XOR constants of an operand share no bit with any thread's base: then base ^ c
/// equals base + c and the constant folds into ldmatrix's immediate offset (no ALU op per ldmatrix).
SWZ_HD constexpr bool hgemm_ldsm_xor_is_add(const HgemmGeom& g, bool a) {
  int bases = 0, consts = 0;
  for (int tid = 0; tid < g.threads; ++tid)
    for (int kk = 0; kk < g.bk / 16; ++kk) bases |= a ? hgemm_a_ldsm_base(g, tid, kk) : hgemm_b_ldsm_base(g, tid, kk);
  for (int t = 0; t < (a ? g.wm : g.wn) / 16; ++t) consts |= a ? hgemm_a_ldsm_xor(g, t) : hgemm_b_ldsm_xor(g, t);
  return (bases & consts) == 0;
}
/// True when the k-step constants share no bit with any (thread base ^ tile constant): then the kernel keeps
/// one register per tile (base ^ tile constant) and adds each k-step's constant as an immediate.
SWZ_HD constexpr bool hgemm_ldsm_kxor_is_add(const HgemmGeom& g, bool a) {
  int vals = 0, consts = 0;
  for (int tid = 0; tid < g.threads; ++tid)
    for (int t = 0; t < (a ? g.wm : g.wn) / 16; ++t)
      vals |= a ? hgemm_a_ldsm_base(g, tid, 0) ^ hgemm_a_ldsm_xor(g, t) : hgemm_b_ldsm_base(g, tid, 0) ^ hgemm_b_ldsm_xor(g, t);
  for (int kk = 0; kk < g.bk / 16; ++kk) consts |= a ? hgemm_a_ldsm_kxor(g, kk) : hgemm_b_ldsm_kxor(g, kk);
  return (vals & consts) == 0;
}
/// Element offsets the kernel hands to ldmatrix (what the analyzer evaluates).
SWZ_HD constexpr int hgemm_a_ldsm_offset(const HgemmGeom& g, int tid, int kk, int mi) {
  return hgemm_a_ldsm_base(g, tid, kk) ^ hgemm_a_ldsm_xor(g, mi);
}
SWZ_HD constexpr int hgemm_b_ldsm_offset(const HgemmGeom& g, int tid, int kk, int nj) {
  return hgemm_b_ldsm_base(g, tid, kk) ^ hgemm_b_ldsm_xor(g, nj);
}

#if SWZ_DEVICE_CODE

/// One operand's global -> shared copies (cp.async; plain 2-byte loads and stores when VEC = 1).
/// Chunk c = it * THREADS + tid of the MN_EXT x BK tile starts at (gemm_chunk_mn, gemm_chunk_k). When
/// THREADS is a multiple of the chunks per contiguous line (kRegular), iteration `it` moves a thread
/// kLineStep lines further along the strided dimension and keeps its column, so its source is one
/// pointer plus it * kLineStep * ld; each k-tile advances that pointer by a constant.
template <int MN_EXT, int BK, int THREADS, int VEC, int KMAJOR, int SW_B, int SW_M, int SW_S>
struct HgemmTileCopy {
  static constexpr int kIters = (MN_EXT * BK) / (VEC * THREADS);
  static constexpr int kLineChunks = KMAJOR ? BK / VEC : MN_EXT / VEC;
  static constexpr bool kRegular = THREADS % kLineChunks == 0;
  static constexpr int kLineStep = kRegular ? THREADS / kLineChunks : 0;

  const unsigned short* src;  // this thread's chunk (it = 0) in the current k-tile
  long long ld;
  int mn, k;                  // its tile coordinates
  int st;                     // its swizzled element offset (it = 0)

  __device__ __forceinline__ void init(const unsigned short* tile_origin, long long ld_, int tid) {
    ld = ld_;
    mn = gemm_chunk_mn(MN_EXT, BK, KMAJOR, VEC, tid);
    k = gemm_chunk_k(MN_EXT, BK, KMAJOR, VEC, tid);
    src = tile_origin + (KMAJOR ? static_cast<long long>(mn) * ld + k : static_cast<long long>(k) * ld + mn);
    st = static_cast<int>(swizzle_apply(static_cast<long long>(tid) * VEC, SW_B, SW_M, SW_S));
  }
  /// Move to the next k-tile.
  __device__ __forceinline__ void advance() { src += KMAJOR ? static_cast<long long>(BK) : BK * ld; }

  SWZ_HD static constexpr int st_it(int it) {
    return static_cast<int>(swizzle_apply(static_cast<long long>(it) * THREADS * VEC, SW_B, SW_M, SW_S));
  }
  /// True when no thread's offset shares a bit with any iteration's: st ^ st_it(it) == st + st_it(it),
  /// so the per-iteration part folds into the copy's immediate offset (one address register per stage).
  SWZ_HD static constexpr bool xor_is_add() {
    int threads = 0, iters = 0;
    for (int t = 0; t < THREADS; ++t)
      threads |= static_cast<int>(swizzle_apply(static_cast<long long>(t) * VEC, SW_B, SW_M, SW_S));
    for (int it = 0; it < kIters; ++it) iters |= st_it(it);
    return (threads & iters) == 0;
  }
  __device__ __forceinline__ int dst_of(int it) const { return xor_is_add() ? st + st_it(it) : st ^ st_it(it); }

  /// Iterations [IT0, IT1) of a whole tile (inside the matrix): no predicates, no per-chunk index arithmetic.
  template <int IT0, int IT1>
  __device__ __forceinline__ void copy_full(unsigned char* tile, unsigned tile_u32, int tid) const {
    const long long step = static_cast<long long>(kLineStep) * ld;  // one register pair, not one per `it`
    const unsigned short* line = src + IT0 * step;
#pragma unroll
    for (int it = IT0; it < IT1; ++it) {
      const int dst = dst_of(it);
      const unsigned short* s;
      if (kRegular) {
        s = line;
        line += step;
      } else {
        const int c = it * THREADS + tid;
        const int cm = gemm_chunk_mn(MN_EXT, BK, KMAJOR, VEC, c) - mn, ck = gemm_chunk_k(MN_EXT, BK, KMAJOR, VEC, c) - k;
        s = src + (KMAJOR ? static_cast<long long>(cm) * ld + ck : static_cast<long long>(ck) * ld + cm);
      }
      if (VEC >= 2)
        gemm_cp_async_full<(VEC >= 2 ? VEC * 2 : 4)>(tile_u32 + 2 * dst, s);
      else
        *reinterpret_cast<unsigned short*>(tile + 2 * dst) = *s;
    }
  }

  /// Iterations [IT0, IT1) at an edge: mn_left valid rows/cols from the tile's origin, k_left valid k from the k-tile's
  /// start; out-of-range chunks are zero-filled (partially, at an edge).
  template <int IT0, int IT1>
  __device__ __forceinline__ void copy_masked(unsigned char* tile, unsigned tile_u32, int tid, int mn_left,
                                              int k_left) const {
    // Recomputed per call from an opaque copy of tid: hoisted out of the loop, the per-chunk source offsets
    // would pin one 64-bit register pair per chunk for the whole edge loop (and spill on large tiles).
    int t = tid;
    asm volatile("" : "+r"(t));
#pragma unroll
    for (int it = IT0; it < IT1; ++it) {
      const int c = it * THREADS + t;
      const int cmn = gemm_chunk_mn(MN_EXT, BK, KMAJOR, VEC, c), ck = gemm_chunk_k(MN_EXT, BK, KMAJOR, VEC, c);
      const int dst = dst_of(it);
      // Valid elements of this chunk along its contiguous dimension (0 .. VEC).
      const int along = KMAJOR ? (cmn < mn_left ? k_left - ck : 0) : (ck < k_left ? mn_left - cmn : 0);
      const int valid = along < 0 ? 0 : (along > VEC ? VEC : along);
      const unsigned short* s =
          src + (KMAJOR ? static_cast<long long>(cmn - mn) * ld + (ck - k) : static_cast<long long>(ck - k) * ld + (cmn - mn));
      if (VEC >= 2) {
        gemm_cp_async<(VEC >= 2 ? VEC * 2 : 4)>(tile_u32 + 2 * dst, valid > 0 ? s : src, 2 * valid);
      } else {
        // 2-byte rows (odd pitches): cp.async has no 2-byte form; a plain load and store.
        *reinterpret_cast<unsigned short*>(tile + 2 * dst) = valid > 0 ? *s : static_cast<unsigned short>(0);
      }
    }
  }
};

/// A compile-time flag passed to generic lambdas (no <type_traits> under NVRTC).
template <bool B> struct HgemmBool {
  static constexpr bool value = B;
};
template <int I> struct HgemmInt {
  static constexpr int value = I;
};
/// Whether a k-tile iteration tagged T copies at all: HgemmBool (whole or masked tiles) does, HgemmInt<0> (the
/// drain: the last STAGES - 1 iterations) does not.
template <class T> struct HgemmCopies {
  static constexpr bool value = true;
};
template <> struct HgemmCopies<HgemmInt<0>> {
  static constexpr bool value = false;
};

template <int IN_KIND, int OUT_KIND, int BM, int BN, int BK, int WM, int WN, int STAGES, int A_KMAJOR, int B_KMAJOR,
          int VEC, int SWA_B, int SWA_M, int SWA_S, int SWB_B, int SWB_M, int SWB_S, int RASTER>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1) hgemm_kernel(const __grid_constant__ GemmParams p) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr HgemmGeom g{BM, BN, BK, WM, WN, THREADS, A_KMAJOR, B_KMAJOR, VEC, SWA_B, SWA_M, SWA_S, SWB_B, SWB_M, SWB_S};
  constexpr int MI = WM / 16, NI = WN / 8, KSTEPS = BK / 16;
  static_assert((BK == 32 || BK == 64) && WM % 16 == 0 && WN % 16 == 0, "hgemm: BK 32 or 64, WM and WN multiples of 16");
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
  // Matrix of the batch and k-range (split-K) of this blockIdx.z; the host splits huge batches.
  const GemmSlice sl = gemm_slice(p, blockIdx.z);
  const int k_len = sl.k1 > sl.k0 ? sl.k1 - sl.k0 : 0;
  const unsigned short* a_origin = static_cast<const unsigned short*>(p.a) + sl.batch * p.stride_a +
                                   (A_KMAJOR ? m0 * p.lda + sl.k0 : static_cast<long long>(sl.k0) * p.lda + m0);
  const unsigned short* b_origin = static_cast<const unsigned short*>(p.b) + sl.batch * p.stride_b +
                                   (B_KMAJOR ? n0 * p.ldb + sl.k0 : static_cast<long long>(sl.k0) * p.ldb + n0);
  const int kt_count = (k_len + BK - 1) / BK;
  // Tiles needing no predicates: the block's rows and columns all exist and the k-tile is whole.
  const bool mn_full = m0 + BM <= p.m && n0 + BN <= p.n;
  const int kt_full = mn_full ? k_len / BK : 0;

  HgemmTileCopy<BM, BK, THREADS, VEC, A_KMAJOR, SWA_B, SWA_M, SWA_S> ca;
  HgemmTileCopy<BN, BK, THREADS, VEC, B_KMAJOR, SWB_B, SWB_M, SWB_S> cb;
  ca.init(a_origin, p.lda, tid);
  cb.init(b_origin, p.ldb, tid);
  // Copies part PART (of KSTEPS) of k-tile `kt` into `stage`: the copies of a tile are spread over the k-steps
  // of the iteration that issues them. FULL: the tile is known to be whole (no predicates). The copiers
  // advance to the next k-tile after the last part.
  constexpr int kIA = decltype(ca)::kIters, kIB = decltype(cb)::kIters;
  auto copy_part = [&](int kt, int stage, auto full, auto part) {
    constexpr int P = decltype(part)::value;
    unsigned char* tile = hgemm_smem + stage * kStageBytes;
    const unsigned tile_u32 = smem_u32 + stage * kStageBytes;
    constexpr int a0 = kIA * P / KSTEPS, a1 = kIA * (P + 1) / KSTEPS;
    constexpr int b0 = kIB * P / KSTEPS, b1 = kIB * (P + 1) / KSTEPS;
    if (decltype(full)::value) {
      ca.template copy_full<a0, a1>(tile, tile_u32, tid);
      cb.template copy_full<b0, b1>(tile + kABytes, tile_u32 + kABytes, tid);
    } else {
      ca.template copy_masked<a0, a1>(tile, tile_u32, tid, p.m - m0, k_len - kt * BK);
      cb.template copy_masked<b0, b1>(tile + kABytes, tile_u32 + kABytes, tid, p.n - n0, k_len - kt * BK);
    }
    if (P == KSTEPS - 1) {
      ca.advance();
      cb.advance();
    }
  };
  // Part kk (a constant once the k-step loop is unrolled) of the copy of tile kt.
  auto copy_step = [&](int kt, int stage, auto full, int kk) {
    if (kk == 0) copy_part(kt, stage, full, HgemmInt<0>());
    if (KSTEPS > 1 && kk == 1) copy_part(kt, stage, full, HgemmInt<(KSTEPS > 1 ? 1 : 0)>());
    if (KSTEPS > 2 && kk == 2) copy_part(kt, stage, full, HgemmInt<(KSTEPS > 2 ? 2 : 0)>());
    if (KSTEPS > 3 && kk == 3) copy_part(kt, stage, full, HgemmInt<(KSTEPS > 3 ? 3 : 0)>());
  };
  auto copy_stage = [&](int kt, int stage, auto full) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) copy_step(kt, stage, full, kk);
  };

  // Per-thread ldmatrix addresses (bytes). When an operand's tile constants fold into immediates (kAAdd), one
  // base register serves every tile and k-step. Otherwise (the .trans side: the swizzle XORs into the bits the
  // tile constant sets) one register per tile holds base ^ tile constant, and the k-step constant, which
  // shares no bit with them (kAK), is added as an immediate; failing both, the XOR is computed per ldmatrix.
  constexpr bool kAAdd = hgemm_ldsm_xor_is_add(g, true), kBAdd = hgemm_ldsm_xor_is_add(g, false);
  constexpr bool kAK = !kAAdd && hgemm_ldsm_kxor_is_add(g, true), kBK = !kBAdd && hgemm_ldsm_kxor_is_add(g, false);
  const int a_ld0 = 2 * hgemm_a_ldsm_base(g, tid, 0), b_ld0 = 2 * hgemm_b_ldsm_base(g, tid, 0);
  int a_tile_ld[kAK ? MI : 1], b_tile_ld[kBK ? NI / 2 : 1];
#pragma unroll
  for (int mi = 0; mi < (kAK ? MI : 1); ++mi) a_tile_ld[mi] = a_ld0 ^ (2 * hgemm_a_ldsm_xor(g, mi));
#pragma unroll
  for (int nj = 0; nj < (kBK ? NI / 2 : 1); ++nj) b_tile_ld[nj] = b_ld0 ^ (2 * hgemm_b_ldsm_xor(g, nj));

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  // Fragments, double-buffered across k-steps: the next step's are loaded while this step's mma run.
  unsigned af[2][MI][4], bf[2][NI / 2][4];
  auto load_frags = [&](int buf, int stage, int kk) {
    const unsigned a_addr = smem_u32 + stage * kStageBytes;
    const unsigned b_addr = a_addr + kABytes;
    const int a_ld = a_ld0 ^ (2 * hgemm_a_ldsm_kxor(g, kk)), b_ld = b_ld0 ^ (2 * hgemm_b_ldsm_kxor(g, kk));
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
      gemm_ldmatrix_x4<!A_KMAJOR>(af[buf][mi], kAAdd ? a_addr + a_ld + 2 * hgemm_a_ldsm_xor(g, mi)
                                               : kAK  ? a_addr + a_tile_ld[kAK ? mi : 0] + 2 * hgemm_a_ldsm_kxor(g, kk)
                                                      : a_addr + (a_ld ^ (2 * hgemm_a_ldsm_xor(g, mi))));
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj)
      gemm_ldmatrix_x4<!B_KMAJOR>(bf[buf][nj], kBAdd ? b_addr + b_ld + 2 * hgemm_b_ldsm_xor(g, nj)
                                               : kBK  ? b_addr + b_tile_ld[kBK ? nj : 0] + 2 * hgemm_b_ldsm_kxor(g, kk)
                                                      : b_addr + (b_ld ^ (2 * hgemm_b_ldsm_xor(g, nj))));
  };

  // Prologue: STAGES - 1 tiles in flight, the first k-step's fragments in registers.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kt_full)
      copy_stage(s, s, HgemmBool<true>());
    else if (s < kt_count)
      copy_stage(s, s, HgemmBool<false>());
    gemm_cp_async_commit();
  }
  gemm_cp_async_wait<STAGES - 2>();
  __syncthreads();
  if (kt_count > 0) load_frags(0, 0, 0);

  // Per k-step: load the next step's fragments (buffer (kk + 1) & 1) while the mma of this step run
  // on buffer kk & 1. The next step of the last k-step is the next tile's first: wait for that tile,
  // barrier, then load — so the tensor cores never wait on a barrier plus ldmatrix latency. The copy
  // of tile kt + STAGES - 1 goes into the stage everyone finished reading before the last barrier.
  // Two loops: while the tile being copied is whole, the copies carry no predicates (one loop with a
  // branch per tile lets the compiler predicate both copy paths into every iteration).
  int read_stage = 0, write_stage = STAGES - 1;
  auto k_tile = [&](int kt, auto full) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      // Part kk of the copy of tile kt + STAGES - 1 (its stage was freed by the last barrier).
      if (decltype(full)::value || (HgemmCopies<decltype(full)>::value && kt + STAGES - 1 < kt_count))
        copy_step(kt + STAGES - 1, write_stage, HgemmBool<decltype(full)::value>(), kk);
      if (kk == KSTEPS - 1) {
        gemm_cp_async_commit();
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
        gemm_cp_async_wait<STAGES - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
        if (kt + 1 < kt_count) load_frags((kk + 1) & 1, read_stage, 0);
      } else {
        load_frags((kk + 1) & 1, read_stage, kk + 1);
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const int nn = (mi & 1) ? NI - 1 - ni : ni;
          gemm_mma_16816<IN_KIND>(acc[mi][nn], af[kk & 1][mi], bf[kk & 1][nn / 2][(nn & 1) * 2],
                                  bf[kk & 1][nn / 2][(nn & 1) * 2 + 1]);
        }
    }
  };
  // Iterations kt < kt_full - (STAGES - 1) copy whole tiles.
  const int kt_fast = kt_full - (STAGES - 1);
  int kt = 0;
  for (; kt < kt_fast; ++kt) k_tile(kt, HgemmBool<true>());
  // Edge tiles still to copy (masked), then the last STAGES - 1 iterations, which copy nothing: a loop of
  // their own keeps the masked copies' registers out of the common drain.
  for (; kt < kt_count - (STAGES - 1); ++kt) k_tile(kt, HgemmBool<false>());
  for (; kt < kt_count; ++kt) k_tile(kt, HgemmInt<0>());
  gemm_cp_async_wait<0>();

  // Epilogue: C = alpha * acc + beta * C, converted; beta == 0 never reads C (it may hold NaN).
  OutT* c_base = static_cast<OutT*>(p.c) + static_cast<long long>(blockIdx.z) * p.stride_c;
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
