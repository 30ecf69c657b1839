// templates: the transpose kernel family (out-of-place, tiled through shared memory laid out plain,
// padded or XOR-swizzled). The shared-memory index maps below are the ones the kernel uses and the
// ones the host bank analyzer evaluates (generator/families/transpose/transpose.cpp): one source of truth.
#pragma once

#include "common.cuh"
#include "swizzle.cuh"

namespace swz {
namespace tpl {

enum SmemLayoutKind { kSmemPlain = 0, kSmemPad = 1, kSmemSwizzle = 2 };

/// Everything that shapes a transpose block's shared-memory traffic.
///   input tile: tile_r rows x tile_c cols; `threads` threads; global vectors of `vec` elements.
///   load phase : thread t, iteration i handles input vector v = i*threads + t at
///                (row v / (tile_c/vec), cols (v % (tile_c/vec))*vec + [0, vec)) -> one smem store per element
///   store phase: thread t, iteration i handles output vector u = i*threads + t: output row = input col
///                u / (tile_r/vec_out), output cols = input rows (u % (tile_r/vec_out))*vec_out + [0, vec_out)
///                -> one smem load each
/// In "pair" mode (2-byte elements, PAIR = 1) the geometry is in 4-byte words: shared word (q, c) holds
/// input elements (2q, c) and (2q+1, c) — two rows transposed in registers — so tile_r is halved,
/// elem_bytes is 4, the load phase moves vec words per row pair and the store phase reads
/// vec_out = vec/2 words per output vector. Every shared access is then a full 4-byte word.
struct TransposeGeom {
  int elem_bytes;
  int tile_r;
  int tile_c;
  int threads;
  int vec;
  int layout;  // SmemLayoutKind
  int pad;     // elements appended to each smem row (kSmemPad)
  int sw_b, sw_m, sw_s;     // Swizzle<B,M,S> on element offsets (kSmemSwizzle)
  int sw2_b, sw2_m, sw2_s;  // optional second swizzle applied after the first (B = 0: none)
  int raster;               // 0: blockIdx.x walks column tiles; 1: it walks row tiles
  int hint;                 // 0: default caching; 1: streaming (.cs) global loads and stores
  int vec_out;              // elements (words in pair mode) per thread vector in the store phase
};

SWZ_HD constexpr int transpose_smem_row_elems(const TransposeGeom& g) {
  return g.tile_c + (g.layout == kSmemPad ? g.pad : 0);
}
SWZ_HD constexpr int transpose_smem_elems(const TransposeGeom& g) { return g.tile_r * transpose_smem_row_elems(g); }
SWZ_HD constexpr int transpose_load_iters(const TransposeGeom& g) { return (g.tile_r * g.tile_c) / (g.vec * g.threads); }
SWZ_HD constexpr int transpose_store_iters(const TransposeGeom& g) {
  return (g.tile_r * g.tile_c) / (g.vec_out * g.threads);
}

/// Element offset in shared memory of input-tile element (r, c).
SWZ_HD constexpr int transpose_smem_offset(const TransposeGeom& g, int r, int c) {
  return g.layout == kSmemSwizzle
             ? static_cast<int>(swizzle_apply(
                   swizzle_apply(static_cast<long long>(r) * transpose_smem_row_elems(g) + c, g.sw_b, g.sw_m, g.sw_s),
                   g.sw2_b, g.sw2_m, g.sw2_s))
             : r * transpose_smem_row_elems(g) + c;
}

/// Load phase: first element (r, c) of the vector thread `tid` loads in iteration `it`.
SWZ_HD constexpr int transpose_load_row(const TransposeGeom& g, int tid, int it) {
  return (it * g.threads + tid) / (g.tile_c / g.vec);
}
SWZ_HD constexpr int transpose_load_col(const TransposeGeom& g, int tid, int it) {
  return ((it * g.threads + tid) % (g.tile_c / g.vec)) * g.vec;
}
/// Store phase: input column (= output row) and first input row of thread `tid`'s vector in iteration `it`.
SWZ_HD constexpr int transpose_store_in_col(const TransposeGeom& g, int tid, int it) {
  return (it * g.threads + tid) / (g.tile_r / g.vec_out);
}
SWZ_HD constexpr int transpose_store_in_row(const TransposeGeom& g, int tid, int it) {
  return ((it * g.threads + tid) % (g.tile_r / g.vec_out)) * g.vec_out;
}

/// Cells (elements, or words in pair mode) one shared store of the load phase writes: the widest
/// power of two <= vec (and <= 16 bytes) that the layout keeps contiguous and aligned for every
/// vector. The kernel issues exactly these stores, so the analyzer sees the instructions the GPU
/// executes (the compiler would otherwise merge adjacent scalar stores on its own).
SWZ_HD constexpr bool transpose_keeps_contiguous(const TransposeGeom& g, int w) {
  return transpose_smem_row_elems(g) % w == 0 &&
         (g.layout != kSmemSwizzle || ((g.sw_b == 0 || (1 << g.sw_m) >= w) && (g.sw2_b == 0 || (1 << g.sw2_m) >= w)));
}
SWZ_HD constexpr int transpose_store_width(const TransposeGeom& g) {
  int w = g.vec;
  while (w > 1 && (w * g.elem_bytes > 16 || !transpose_keeps_contiguous(g, w))) w /= 2;
  return w;
}

/// Byte address of the k-th element a thread writes to / reads from shared memory (what the bank
/// analyzer feeds to the model, lane by lane).
SWZ_HD constexpr int transpose_smem_store_addr(const TransposeGeom& g, int tid, int it, int k) {
  return transpose_smem_offset(g, transpose_load_row(g, tid, it), transpose_load_col(g, tid, it) + k) * g.elem_bytes;
}
SWZ_HD constexpr int transpose_smem_load_addr(const TransposeGeom& g, int tid, int it, int k) {
  return transpose_smem_offset(g, transpose_store_in_row(g, tid, it) + k, transpose_store_in_col(g, tid, it)) *
         g.elem_bytes;
}

/// The geometry a kernel instantiation works in (element or, in pair mode, word units).
SWZ_HD constexpr TransposeGeom transpose_kernel_geom(int elem, int tile_r, int tile_c, int threads, int vec, int layout,
                                                     int pad, int sb, int sm, int ss, int s2b, int s2m, int s2s,
                                                     int raster, int hint, int pair) {
  return pair ? TransposeGeom{4, tile_r / 2, tile_c, threads, vec, layout, pad, sb, sm, ss, s2b, s2m, s2s, raster, hint,
                              vec / 2}
              : TransposeGeom{elem, tile_r, tile_c, threads, vec, layout, pad, sb, sm, ss, s2b, s2m, s2s, raster, hint,
                              vec};
}

/// Kernel arguments (passed by value as a __grid_constant__ parameter). Sizes are in elements.
struct TransposeParams {
  const void* in;
  void* out;
  long long rows;        // input rows (R); output has C rows
  long long cols;        // input cols (C)
  long long ld_in;       // input row pitch  (>= cols)
  long long ld_out;      // output row pitch (>= rows)
  long long batch;       // number of matrices (>= 1)
  long long stride_in;   // elements between consecutive input matrices
  long long stride_out;  // elements between consecutive output matrices
};

#if SWZ_DEVICE_CODE

template <int BYTES> struct RawWord;
template <> struct RawWord<2> { unsigned short v; };
template <> struct alignas(4) RawWord<4> { unsigned int v; };
template <> struct alignas(8) RawWord<8> { unsigned int v[2]; };
template <> struct alignas(16) RawWord<16> { unsigned int v[4]; };

template <int ELEM> struct ElemType;
template <> struct ElemType<2> { typedef unsigned short type; };
template <> struct ElemType<4> { typedef unsigned int type; };

/// Global vector load/store; HINT = 1 uses the streaming (evict-first) cache operators.
template <int HINT, int BYTES> __device__ __forceinline__ RawWord<BYTES> load_global(const void* p) {
  RawWord<BYTES> w;
  if (HINT == 0) {
    w = *static_cast<const RawWord<BYTES>*>(p);
  } else if (BYTES == 16) {
    asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(reinterpret_cast<unsigned int*>(&w)[0]), "=r"(reinterpret_cast<unsigned int*>(&w)[1]),
                   "=r"(reinterpret_cast<unsigned int*>(&w)[2]), "=r"(reinterpret_cast<unsigned int*>(&w)[3])
                 : "l"(p));
  } else if (BYTES == 8) {
    asm volatile("ld.global.cs.v2.u32 {%0,%1}, [%2];"
                 : "=r"(reinterpret_cast<unsigned int*>(&w)[0]), "=r"(reinterpret_cast<unsigned int*>(&w)[1])
                 : "l"(p));
  } else if (BYTES == 4) {
    asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(*reinterpret_cast<unsigned int*>(&w)) : "l"(p));
  } else {
    asm volatile("ld.global.cs.u16 %0, [%1];" : "=h"(*reinterpret_cast<unsigned short*>(&w)) : "l"(p));
  }
  return w;
}
template <int HINT, int BYTES> __device__ __forceinline__ void store_global(void* p, const RawWord<BYTES>& w) {
  if (HINT == 0) {
    *static_cast<RawWord<BYTES>*>(p) = w;
  } else if (BYTES == 16) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(reinterpret_cast<const unsigned int*>(&w)[0]),
                 "r"(reinterpret_cast<const unsigned int*>(&w)[1]), "r"(reinterpret_cast<const unsigned int*>(&w)[2]),
                 "r"(reinterpret_cast<const unsigned int*>(&w)[3])
                 : "memory");
  } else if (BYTES == 8) {
    asm volatile("st.global.cs.v2.u32 [%0], {%1,%2};" ::"l"(p), "r"(reinterpret_cast<const unsigned int*>(&w)[0]),
                 "r"(reinterpret_cast<const unsigned int*>(&w)[1])
                 : "memory");
  } else if (BYTES == 4) {
    asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(p), "r"(*reinterpret_cast<const unsigned int*>(&w)) : "memory");
  } else {
    asm volatile("st.global.cs.u16 [%0], %1;" ::"l"(p), "h"(*reinterpret_cast<const unsigned short*>(&w)) : "memory");
  }
}

/// W consecutive shared cells written by one store instruction of W * sizeof(S) bytes (the load
/// phase's store; transpose_store_width() says how wide). `cells` is filled element-wise first.
template <typename S, int W> union SmemCells {
  RawWord<W * sizeof(S)> raw;
  S s[W];
  __device__ __forceinline__ void store(S* smem, int offset) const {
    *reinterpret_cast<RawWord<W * sizeof(S)>*>(&smem[offset]) = raw;
  }
};

/// One vector of VEC elements, addressable element-wise in registers.
template <int ELEM, int VEC> union ElemVec {
  RawWord<ELEM * VEC> raw;
  typename ElemType<ELEM>::type e[VEC];
};

template <int ELEM, int TILE_R, int TILE_C, int THREADS, int VEC, int LAYOUT, int PAD, int SW_B, int SW_M, int SW_S,
          int SW2_B, int SW2_M, int SW2_S, int RASTER, int HINT, int PAIR>
__global__ void __launch_bounds__(THREADS) transpose_kernel(const __grid_constant__ TransposeParams p) {
  typedef typename ElemType<ELEM>::type T;
  typedef ElemVec<ELEM, VEC> V;
  static_assert(PAIR == 0 || (ELEM == 2 && VEC % 2 == 0 && TILE_R % 2 == 0), "transpose: pair mode needs 2-byte "
                                                                               "elements, even VEC and even TILE_R");
  constexpr TransposeGeom g = transpose_kernel_geom(ELEM, TILE_R, TILE_C, THREADS, VEC, LAYOUT, PAD, SW_B, SW_M, SW_S,
                                                    SW2_B, SW2_M, SW2_S, RASTER, HINT, PAIR);
  typedef typename ElemType<(PAIR ? 4 : ELEM)>::type S;  // a shared-memory cell: an element, or a word of two
  constexpr int kLoadIters = transpose_load_iters(g), kStoreIters = transpose_store_iters(g);
  constexpr int kStoreW = transpose_store_width(g);  // cells per shared store in the load phase
  constexpr int kRowsPerLoad = PAIR ? 2 : 1;  // input rows one load-phase vector covers
  static_assert(kLoadIters * VEC * THREADS * kRowsPerLoad == TILE_R * TILE_C, "transpose: tile must split evenly");
  static_assert(TILE_C % VEC == 0 && TILE_R % VEC == 0, "transpose: VEC must divide both tile sides");
  __shared__ __align__(16) S smem[transpose_smem_elems(g)];

  const int tid = threadIdx.x;
  const long long tiles_r = (p.rows + TILE_R - 1) / TILE_R;
  const long long tiles_c = (p.cols + TILE_C - 1) / TILE_C;
  for (long long b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const T* __restrict__ in = static_cast<const T*>(p.in) + b * p.stride_in;
    T* __restrict__ out = static_cast<T*>(p.out) + b * p.stride_out;
    // RASTER 0: x walks column tiles (consecutive blocks read along input rows); 1: x walks row tiles
    // (consecutive blocks write along output rows).
    const long long tiles_x = RASTER == 0 ? tiles_c : tiles_r, tiles_y = RASTER == 0 ? tiles_r : tiles_c;
    for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
      for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
        const long long ty = RASTER == 0 ? by : bx, tx = RASTER == 0 ? bx : by;
        const long long r0 = ty * TILE_R, c0 = tx * TILE_C;
        const bool full = r0 + TILE_R <= p.rows && c0 + TILE_C <= p.cols;
        if (full) {
          // All global loads first (VEC-wide, several per thread) so many bytes are in flight.
          V v[kLoadIters][kRowsPerLoad];
#pragma unroll
          for (int it = 0; it < kLoadIters; ++it) {
            const int q = transpose_load_row(g, tid, it), c = transpose_load_col(g, tid, it);
#pragma unroll
            for (int h = 0; h < kRowsPerLoad; ++h)
              v[it][h].raw = load_global<HINT, ELEM * VEC>(in + (r0 + kRowsPerLoad * q + h) * p.ld_in + c0 + c);
          }
#pragma unroll
          for (int it = 0; it < kLoadIters; ++it) {
            const int q = transpose_load_row(g, tid, it), c = transpose_load_col(g, tid, it);
#pragma unroll
            for (int k = 0; k < VEC; k += kStoreW) {
              SmemCells<S, kStoreW> cells;
#pragma unroll
              for (int j = 0; j < kStoreW; ++j) {
                if (PAIR)  // word = (row 2q, row 2q+1) of column c+k+j: two consecutive output elements
                  cells.s[j] = static_cast<S>(v[it][0].e[k + j]) |
                               (static_cast<S>(v[it][kRowsPerLoad - 1].e[k + j]) << (PAIR ? 16 : 0));
                else
                  cells.s[j] = static_cast<S>(v[it][0].e[k + j]);
              }
              cells.store(smem, transpose_smem_offset(g, q, c + k));
            }
          }
          __syncthreads();
#pragma unroll
          for (int it = 0; it < kStoreIters; ++it) {
            const int ic = transpose_store_in_col(g, tid, it), iq = transpose_store_in_row(g, tid, it);
            union {
              RawWord<ELEM * VEC> raw;
              S s[PAIR ? VEC / 2 : VEC];
            } w;
#pragma unroll
            for (int k = 0; k < g.vec_out; ++k) w.s[k] = smem[transpose_smem_offset(g, iq + k, ic)];
            store_global<HINT, ELEM * VEC>(out + (c0 + ic) * p.ld_out + r0 + kRowsPerLoad * iq, w.raw);
          }
        } else {
          // Edge tile: element-wise, predicated; same shared-memory maps.
#pragma unroll 1
          for (int it = 0; it < kLoadIters; ++it) {
            const int q = transpose_load_row(g, tid, it), c = transpose_load_col(g, tid, it);
            for (int k = 0; k < VEC; ++k) {
              if (c0 + c + k >= p.cols) continue;
              S cell = 0;
              for (int h = 0; h < kRowsPerLoad; ++h) {
                const long long r = r0 + kRowsPerLoad * q + h;
                if (r < p.rows) cell |= static_cast<S>(in[r * p.ld_in + c0 + c + k]) << (PAIR ? 16 * h : 0);
              }
              smem[transpose_smem_offset(g, q, c + k)] = cell;
            }
          }
          __syncthreads();
#pragma unroll 1
          for (int it = 0; it < kStoreIters; ++it) {
            const int ic = transpose_store_in_col(g, tid, it), iq = transpose_store_in_row(g, tid, it);
            if (c0 + ic >= p.cols) continue;
            for (int k = 0; k < g.vec_out; ++k) {
              const S cell = smem[transpose_smem_offset(g, iq + k, ic)];
              for (int h = 0; h < kRowsPerLoad; ++h) {
                const long long r = r0 + kRowsPerLoad * (iq + k) + h;
                if (r < p.rows) out[(c0 + ic) * p.ld_out + r] = static_cast<T>(PAIR ? (cell >> (16 * h)) : cell);
              }
            }
          }
        }
        __syncthreads();  // the tile buffer is reused by the next iteration
      }
    }
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
