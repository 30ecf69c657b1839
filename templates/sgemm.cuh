// templates: the fp32 SGEMM family on CUDA cores (seed 004's block / warp / thread tiling). Both operand
// tiles live in shared memory MN-contiguous ([BK][BM] for A, [BK][BN] for B); an operand stored
// K-contiguous in global memory is transposed on the way in, through an XOR-swizzled tile that keeps
// the transposing stores and the float4 reads conflict-free. The index maps below are the kernel's and
// the host bank analyzer's (generator/families/gemm/sgemm.cpp): one source of truth.
#pragma once

#include "common.cuh"
#include "gemm_common.cuh"
#include "swizzle.cuh"

namespace swz {
namespace tpl {

/// Everything that shapes an SGEMM block's shared-memory traffic.
///   block tile BM x BN, k-tile BK; warps tile the block as (BM/WM) x (BN/WN); a warp tile is
///   WMITER x WNITER sub-tiles of WSUBM x WSUBN; a thread owns TM x TN of each sub-tile.
struct SgemmGeom {
  int bm, bn, bk;
  int wm, wn, wniter;
  int tm, tn;
  int threads;
  int a_kmajor, b_kmajor;  // global layout of the operands (1: K-contiguous, transposed into smem)
  int vec;                 // elements per global load
  int swa_b, swa_m, swa_s; // Swizzle<B,M,S> on the A tile's element offsets
  int swb_b, swb_m, swb_s; // ... and on the B tile's
};

SWZ_HD constexpr int sgemm_wmiter(const SgemmGeom& g) { return (g.wm * g.wn) / (32 * g.tm * g.tn * g.wniter); }
SWZ_HD constexpr int sgemm_wsubm(const SgemmGeom& g) { return g.wm / sgemm_wmiter(g); }
SWZ_HD constexpr int sgemm_wsubn(const SgemmGeom& g) { return g.wn / g.wniter; }
SWZ_HD constexpr int sgemm_a_iters(const SgemmGeom& g) { return (g.bm * g.bk) / (g.vec * g.threads); }
SWZ_HD constexpr int sgemm_b_iters(const SgemmGeom& g) { return (g.bn * g.bk) / (g.vec * g.threads); }

/// Element offset of A(k, m) / B(k, n) inside one stage of the shared tile.
SWZ_HD constexpr int sgemm_a_offset(const SgemmGeom& g, int k, int m) {
  return static_cast<int>(swizzle_apply(static_cast<long long>(k) * g.bm + m, g.swa_b, g.swa_m, g.swa_s));
}
SWZ_HD constexpr int sgemm_b_offset(const SgemmGeom& g, int k, int n) {
  return static_cast<int>(swizzle_apply(static_cast<long long>(k) * g.bn + n, g.swb_b, g.swb_m, g.swb_s));
}

/// Global -> shared: thread `tid`, load iteration `it`, first element (mn, k) of its chunk.
SWZ_HD constexpr int sgemm_a_load_m(const SgemmGeom& g, int tid, int it) {
  return gemm_chunk_mn(g.bm, g.bk, g.a_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int sgemm_a_load_k(const SgemmGeom& g, int tid, int it) {
  return gemm_chunk_k(g.bm, g.bk, g.a_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int sgemm_b_load_n(const SgemmGeom& g, int tid, int it) {
  return gemm_chunk_mn(g.bn, g.bk, g.b_kmajor, g.vec, it * g.threads + tid);
}
SWZ_HD constexpr int sgemm_b_load_k(const SgemmGeom& g, int tid, int it) {
  return gemm_chunk_k(g.bn, g.bk, g.b_kmajor, g.vec, it * g.threads + tid);
}
/// Shared byte address of element j of that chunk (k-major operands store element by element,
/// transposing; MN-major ones store the chunk as one vector at j = 0).
SWZ_HD constexpr int sgemm_a_store_addr(const SgemmGeom& g, int tid, int it, int j) {
  return 4 * (g.a_kmajor ? sgemm_a_offset(g, sgemm_a_load_k(g, tid, it) + j, sgemm_a_load_m(g, tid, it))
                         : sgemm_a_offset(g, sgemm_a_load_k(g, tid, it), sgemm_a_load_m(g, tid, it) + j));
}
SWZ_HD constexpr int sgemm_b_store_addr(const SgemmGeom& g, int tid, int it, int j) {
  return 4 * (g.b_kmajor ? sgemm_b_offset(g, sgemm_b_load_k(g, tid, it) + j, sgemm_b_load_n(g, tid, it))
                         : sgemm_b_offset(g, sgemm_b_load_k(g, tid, it), sgemm_b_load_n(g, tid, it) + j));
}

/// Compute phase: the warp's place in the block and the thread's place in a warp sub-tile.
SWZ_HD constexpr int sgemm_warp_row(const SgemmGeom& g, int tid) { return (tid / 32) / (g.bn / g.wn); }
SWZ_HD constexpr int sgemm_warp_col(const SgemmGeom& g, int tid) { return (tid / 32) % (g.bn / g.wn); }
SWZ_HD constexpr int sgemm_thread_row(const SgemmGeom& g, int tid) { return (tid % 32) / (sgemm_wsubn(g) / g.tn); }
SWZ_HD constexpr int sgemm_thread_col(const SgemmGeom& g, int tid) { return (tid % 32) % (sgemm_wsubn(g) / g.tn); }
/// First row (col) of the block tile that thread `tid` reads for sub-tile wmi (wni); it reads TM (TN)
/// consecutive elements as float4 loads q = 0 .. TM/4 - 1.
SWZ_HD constexpr int sgemm_read_m(const SgemmGeom& g, int tid, int wmi) {
  return sgemm_warp_row(g, tid) * g.wm + wmi * sgemm_wsubm(g) + sgemm_thread_row(g, tid) * g.tm;
}
SWZ_HD constexpr int sgemm_read_n(const SgemmGeom& g, int tid, int wni) {
  return sgemm_warp_col(g, tid) * g.wn + wni * sgemm_wsubn(g) + sgemm_thread_col(g, tid) * g.tn;
}
/// The read side as the kernel computes it. The row m = m_thr + off (thread part + sub-tile/float4
/// part, disjoint bits) of k-row k sits at k*BM + (m ^ x(k)) when the swizzle's YYY bits lie in the k
/// part (x(k): the XOR it applies to row k, inside its ZZZ bits). Split off into the bits inside ZZZ
/// (XORed) and outside (added): (m_thr ^ const) + const, so each float4 read is one of a few per-thread
/// base registers plus an immediate. The generator rejects swizzles for which this differs from
/// sgemm_a_offset at any (thread, k, sub-tile, q) (SgemmConfig validation).
SWZ_HD constexpr int sgemm_a_row_xor(const SgemmGeom& g, int k) {
  return static_cast<int>(swizzle_apply(static_cast<long long>(k) * g.bm, g.swa_b, g.swa_m, g.swa_s) ^
                          (static_cast<long long>(k) * g.bm));
}
SWZ_HD constexpr int sgemm_b_row_xor(const SgemmGeom& g, int k) {
  return static_cast<int>(swizzle_apply(static_cast<long long>(k) * g.bn, g.swb_b, g.swb_m, g.swb_s) ^
                          (static_cast<long long>(k) * g.bn));
}
SWZ_HD constexpr int sgemm_a_read_offset(const SgemmGeom& g, int m_thr, int k, int wmi, int q) {
  return (m_thr ^ (sgemm_a_row_xor(g, k) ^ ((wmi * sgemm_wsubm(g) + 4 * q) & static_cast<int>(swizzle_zzz_mask(g.swa_b, g.swa_m, g.swa_s))))) +
         ((wmi * sgemm_wsubm(g) + 4 * q) & ~static_cast<int>(swizzle_zzz_mask(g.swa_b, g.swa_m, g.swa_s))) + k * g.bm;
}
SWZ_HD constexpr int sgemm_b_read_offset(const SgemmGeom& g, int n_thr, int k, int wni, int q) {
  return (n_thr ^ (sgemm_b_row_xor(g, k) ^ ((wni * sgemm_wsubn(g) + 4 * q) & static_cast<int>(swizzle_zzz_mask(g.swb_b, g.swb_m, g.swb_s))))) +
         ((wni * sgemm_wsubn(g) + 4 * q) & ~static_cast<int>(swizzle_zzz_mask(g.swb_b, g.swb_m, g.swb_s))) + k * g.bn;
}
SWZ_HD constexpr int sgemm_a_read_addr(const SgemmGeom& g, int tid, int k, int wmi, int q) {
  return 4 * sgemm_a_read_offset(g, sgemm_read_m(g, tid, 0), k, wmi, q);
}
SWZ_HD constexpr int sgemm_b_read_addr(const SgemmGeom& g, int tid, int k, int wni, int q) {
  return 4 * sgemm_b_read_offset(g, sgemm_read_n(g, tid, 0), k, wni, q);
}

/// Blocks per SM the kernel is compiled for: two when the register file holds two blocks with the
/// accumulators plus ~72 registers of fragments (double-buffered), addresses and prefetch; otherwise
/// one, so ptxas never spills to fit a second block (NOTE: NVRTC's code for 256 threads x 64
/// accumulators spills at the 128-register cap where nvcc's does not).
SWZ_HD constexpr int sgemm_min_blocks(int threads, int acc_per_thread) {
  return 65536 / (2 * threads) >= acc_per_thread + 72 ? 2 : 1;
}

#if SWZ_DEVICE_CODE

template <int VEC> struct SgemmVec;
template <> struct SgemmVec<1> { typedef float type; };
template <> struct SgemmVec<2> { typedef float2 type; };
template <> struct SgemmVec<4> { typedef float4 type; };

/// VEC consecutive floats from registers to a VEC-aligned shared address, as one store.
template <int VEC> __device__ __forceinline__ void sgemm_st_vec(float* dst, const float (&v)[VEC]);
template <> __device__ __forceinline__ void sgemm_st_vec<1>(float* dst, const float (&v)[1]) { *dst = v[0]; }
template <> __device__ __forceinline__ void sgemm_st_vec<2>(float* dst, const float (&v)[2]) {
  *reinterpret_cast<float2*>(dst) = make_float2(v[0], v[1]);
}
template <> __device__ __forceinline__ void sgemm_st_vec<4>(float* dst, const float (&v)[4]) {
  *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
}
/// Four consecutive floats from a 16-byte aligned shared address into registers.
__device__ __forceinline__ void sgemm_ld4(float* dst, const float* src) {
  const float4 v = *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

/// One operand's global -> register -> shared path (A: MN = M; B: MN = N).
/// `base` points at the operand's (mn0, k = 0); `ld` is its pitch.
template <int MN_EXT, int BK, int THREADS, int VEC, int KMAJOR>
struct SgemmOperandLoader {
  static constexpr int kIters = (MN_EXT * BK) / (VEC * THREADS);
  float r[kIters][VEC];

  __device__ __forceinline__ void load(const float* __restrict__ base, long long ld, int mn_left, int k0, int k_total,
                                       int tid) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int c = it * THREADS + tid;
      const int mn = gemm_chunk_mn(MN_EXT, BK, KMAJOR, VEC, c), k = k0 + gemm_chunk_k(MN_EXT, BK, KMAJOR, VEC, c);
      const float* src = KMAJOR ? base + static_cast<long long>(mn) * ld + k : base + static_cast<long long>(k) * ld + mn;
      const bool whole = KMAJOR ? (mn < mn_left && k + VEC <= k_total) : (k < k_total && mn + VEC <= mn_left);
      if (whole) {
        const typename SgemmVec<VEC>::type v = *reinterpret_cast<const typename SgemmVec<VEC>::type*>(src);
        const float* e = reinterpret_cast<const float*>(&v);
#pragma unroll
        for (int j = 0; j < VEC; ++j) r[it][j] = e[j];
      } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const bool in = KMAJOR ? (mn < mn_left && k + j < k_total) : (k < k_total && mn + j < mn_left);
          r[it][j] = in ? src[j] : 0.0f;
        }
      }
    }
  }
};

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int THREADS, int STAGES, int A_KMAJOR,
          int B_KMAJOR, int VEC, int SWA_B, int SWA_M, int SWA_S, int SWB_B, int SWB_M, int SWB_S, int RASTER,
          int SPLIT = 0>
__global__ void __launch_bounds__(THREADS, sgemm_min_blocks(THREADS, (BM * BN) / THREADS))
    sgemm_kernel(const __grid_constant__ GemmParams p) {
  constexpr SgemmGeom g{BM, BN, BK, WM, WN, WNITER, TM, TN, THREADS, A_KMAJOR, B_KMAJOR, VEC,
                        SWA_B, SWA_M, SWA_S, SWB_B, SWB_M, SWB_S};
  constexpr int WMITER = sgemm_wmiter(g), WSUBM = sgemm_wsubm(g), WSUBN = sgemm_wsubn(g);
  static_assert(WMITER >= 1 && WMITER * 32 * TM * TN * WNITER == WM * WN, "sgemm: warp tile must split into thread tiles");
  static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "sgemm: THREADS must be one warp per warp tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "sgemm: TM and TN must be multiples of 4 (float4 reads)");
  static_assert((WSUBN / TN) * (WSUBM / TM) == 32, "sgemm: a warp sub-tile must hold 32 thread tiles");
  static_assert(sgemm_a_iters(g) * VEC * THREADS == BM * BK && sgemm_b_iters(g) * VEC * THREADS == BN * BK,
                "sgemm: tiles must split evenly into thread vectors");
  static_assert(STAGES == 1 || STAGES == 2, "sgemm: STAGES is 1 (single buffer) or 2 (double buffer)");
  __shared__ __align__(16) float as[STAGES][BM * BK];
  __shared__ __align__(16) float bs[STAGES][BN * BK];

  const int tid = threadIdx.x;
  const int tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int pid = blockIdx.x;
  if (pid >= tiles_m * tiles_n) return;
  const int m0 = gemm_raster_m(pid, tiles_m, tiles_n, RASTER) * BM;
  const int n0 = gemm_raster_n(pid, tiles_m, tiles_n, RASTER) * BN;
  // Matrix of the batch and k-range (split-K: the host then points C at an f32 workspace, alpha = 1, beta = 0)
  // of this blockIdx.z; the host splits batches past the grid limit into launches. SPLIT = 0 (unsplit
  // configs) keeps K a kernel-parameter constant: the main loop of this register-bound kernel stays as lean.
  const GemmSlice sl = SPLIT ? gemm_slice(p, blockIdx.z) : GemmSlice{static_cast<long long>(blockIdx.z), 0, p.k};
  const int k_len = SPLIT ? (sl.k1 > sl.k0 ? sl.k1 - sl.k0 : 0) : p.k;
  const int kt_count = (k_len + BK - 1) / BK;
  const int read_m0 = sgemm_read_m(g, tid, 0), read_n0 = sgemm_read_n(g, tid, 0);

  {
    // One matrix (and k-slice) per blockIdx.z: a loop over the batch here would cost the main loop its registers.
    const long long b = sl.batch;
    const float* a_base = static_cast<const float*>(p.a) + b * p.stride_a +
                          (A_KMAJOR ? m0 * p.lda + sl.k0 : static_cast<long long>(sl.k0) * p.lda + m0);
    const float* b_base = static_cast<const float*>(p.b) + b * p.stride_b +
                          (B_KMAJOR ? n0 * p.ldb + sl.k0 : static_cast<long long>(sl.k0) * p.ldb + n0);
    float* c_base = static_cast<float*>(p.c) + static_cast<long long>(blockIdx.z) * p.stride_c;

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
      for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;

    SgemmOperandLoader<BM, BK, THREADS, VEC, A_KMAJOR> la;
    SgemmOperandLoader<BN, BK, THREADS, VEC, B_KMAJOR> lb;
    auto store_tiles = [&](int stage) {
#pragma unroll
      for (int it = 0; it < la.kIters; ++it) {
        const int m = sgemm_a_load_m(g, tid, it), k = sgemm_a_load_k(g, tid, it);
        if (A_KMAJOR) {
#pragma unroll
          for (int j = 0; j < VEC; ++j) as[stage][sgemm_a_offset(g, k + j, m)] = la.r[it][j];
        } else {
          sgemm_st_vec<VEC>(&as[stage][sgemm_a_offset(g, k, m)], la.r[it]);
        }
      }
#pragma unroll
      for (int it = 0; it < lb.kIters; ++it) {
        const int n = sgemm_b_load_n(g, tid, it), k = sgemm_b_load_k(g, tid, it);
        if (B_KMAJOR) {
#pragma unroll
          for (int j = 0; j < VEC; ++j) bs[stage][sgemm_b_offset(g, k + j, n)] = lb.r[it][j];
        } else {
          sgemm_st_vec<VEC>(&bs[stage][sgemm_b_offset(g, k, n)], lb.r[it]);
        }
      }
    };
    auto load_tiles = [&](int kt) {
      const int k0 = kt * BK;
      const float* a_k = a_base + (A_KMAJOR ? k0 : static_cast<long long>(k0) * p.lda);
      const float* b_k = b_base + (B_KMAJOR ? k0 : static_cast<long long>(k0) * p.ldb);
      la.load(a_k, p.lda, p.m - m0, 0, k_len - k0, tid);
      lb.load(b_k, p.ldb, p.n - n0, 0, k_len - k0, tid);
    };

    if (kt_count > 0) {
      load_tiles(0);
      store_tiles(0);
      __syncthreads();
    }
    for (int kt = 0; kt < kt_count; ++kt) {
      const int cur = STAGES == 2 ? (kt & 1) : 0;
      if (kt + 1 < kt_count) load_tiles(kt + 1);  // global loads in flight during the math below
      const float* sa = as[cur];
      const float* sb = bs[cur];
      float fa[2][WMITER * TM], fb[2][WNITER * TN];
      auto load_frag = [&](int buf, int k) {
#pragma unroll
        for (int wmi = 0; wmi < WMITER; ++wmi)
#pragma unroll
          for (int q = 0; q < TM / 4; ++q)
            sgemm_ld4(&fa[buf][wmi * TM + 4 * q], &sa[sgemm_a_read_offset(g, read_m0, k, wmi, q)]);
#pragma unroll
        for (int wni = 0; wni < WNITER; ++wni)
#pragma unroll
          for (int q = 0; q < TN / 4; ++q)
            sgemm_ld4(&fb[buf][wni * TN + 4 * q], &sb[sgemm_b_read_offset(g, read_n0, k, wni, q)]);
      };
      load_frag(0, 0);
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k + 1 < BK) load_frag((k + 1) & 1, k + 1);  // register double buffering
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
          for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
      }
      if (kt + 1 < kt_count) {
        if (STAGES == 1) __syncthreads();  // single buffer: everyone must be done reading it
        store_tiles(STAGES == 2 ? cur ^ 1 : 0);
      }
      __syncthreads();
    }

    // Epilogue: C = alpha * acc + beta * C; beta == 0 never reads C (it may hold NaN).
    const int row0 = m0 + read_m0, col0 = n0 + read_n0;
    float* c_thr = c_base + static_cast<long long>(row0) * p.ldc + col0;
    const bool use_beta = p.beta != 0.0f;
    const bool c_vec4 = gemm_c_aligned<16>(p, 4);
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i) {
      const int dm = (i / TM) * WSUBM + i % TM;
      if (row0 + dm >= p.m) continue;
      float* crow = c_thr + static_cast<long long>(dm) * p.ldc;
#pragma unroll
      for (int j = 0; j < WNITER * TN; j += 4) {
        const int dn = (j / TN) * WSUBN + j % TN;
        const float* v = &acc[i][j];
        if (c_vec4 && col0 + dn + 4 <= p.n) {
          float4 o = make_float4(p.alpha * v[0], p.alpha * v[1], p.alpha * v[2], p.alpha * v[3]);
          if (use_beta) {
            const float4 old = *reinterpret_cast<const float4*>(crow + dn);
            o.x = fmaf(p.beta, old.x, o.x);
            o.y = fmaf(p.beta, old.y, o.y);
            o.z = fmaf(p.beta, old.z, o.z);
            o.w = fmaf(p.beta, old.w, o.w);
          }
          *reinterpret_cast<float4*>(crow + dn) = o;
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (col0 + dn + e < p.n)
              crow[dn + e] = use_beta ? fmaf(p.beta, crow[dn + e], p.alpha * v[e]) : p.alpha * v[e];
        }
      }
    }
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
