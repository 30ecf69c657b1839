// templates: the transpose kernel family (out-of-place, tiled through shared memory laid out plain,
// padded or XOR-swizzled). The shared-memory index maps below are the ones the kernel uses and the
// ones the host bank analyzer evaluates (generator/transpose.cpp): one source of truth.
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
///                u / (tile_r/vec), output cols = input rows (u % (tile_r/vec))*vec + [0, vec) -> one smem load each
struct TransposeGeom {
  int elem_bytes;
  int tile_r;
  int tile_c;
  int threads;
  int vec;
  int layout;  // SmemLayoutKind
  int pad;     // elements appended to each smem row (kSmemPad)
  int sw_b, sw_m, sw_s;  // Swizzle<B,M,S> on element offsets (kSmemSwizzle)
};

SWZ_HD constexpr int transpose_smem_row_elems(const TransposeGeom& g) {
  return g.tile_c + (g.layout == kSmemPad ? g.pad : 0);
}
SWZ_HD constexpr int transpose_smem_elems(const TransposeGeom& g) { return g.tile_r * transpose_smem_row_elems(g); }
SWZ_HD constexpr int transpose_load_iters(const TransposeGeom& g) { return (g.tile_r * g.tile_c) / (g.vec * g.threads); }
SWZ_HD constexpr int transpose_store_iters(const TransposeGeom& g) { return transpose_load_iters(g); }

/// Element offset in shared memory of input-tile element (r, c).
SWZ_HD constexpr int transpose_smem_offset(const TransposeGeom& g, int r, int c) {
  return g.layout == kSmemSwizzle
             ? static_cast<int>(swizzle_apply(static_cast<long long>(r) * transpose_smem_row_elems(g) + c, g.sw_b,
                                              g.sw_m, g.sw_s))
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
  return (it * g.threads + tid) / (g.tile_r / g.vec);
}
SWZ_HD constexpr int transpose_store_in_row(const TransposeGeom& g, int tid, int it) {
  return ((it * g.threads + tid) % (g.tile_r / g.vec)) * g.vec;
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

/// One vector of VEC elements, addressable element-wise in registers.
template <int ELEM, int VEC> union ElemVec {
  RawWord<ELEM * VEC> raw;
  typename ElemType<ELEM>::type e[VEC];
};

template <int ELEM, int TILE_R, int TILE_C, int THREADS, int VEC, int LAYOUT, int PAD, int SW_B, int SW_M, int SW_S>
__global__ void __launch_bounds__(THREADS) transpose_kernel(const __grid_constant__ TransposeParams p) {
  typedef typename ElemType<ELEM>::type T;
  typedef ElemVec<ELEM, VEC> V;
  constexpr TransposeGeom g{ELEM, TILE_R, TILE_C, THREADS, VEC, LAYOUT, PAD, SW_B, SW_M, SW_S};
  constexpr int kIters = transpose_load_iters(g);
  static_assert(kIters * VEC * THREADS == TILE_R * TILE_C, "transpose: tile must split evenly into thread vectors");
  static_assert(TILE_C % VEC == 0 && TILE_R % VEC == 0, "transpose: VEC must divide both tile sides");
  __shared__ T smem[transpose_smem_elems(g)];

  const int tid = threadIdx.x;
  const long long tiles_r = (p.rows + TILE_R - 1) / TILE_R;
  const long long tiles_c = (p.cols + TILE_C - 1) / TILE_C;
  for (long long b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const T* __restrict__ in = static_cast<const T*>(p.in) + b * p.stride_in;
    T* __restrict__ out = static_cast<T*>(p.out) + b * p.stride_out;
    for (long long ty = blockIdx.y; ty < tiles_r; ty += gridDim.y) {
      for (long long tx = blockIdx.x; tx < tiles_c; tx += gridDim.x) {
        const long long r0 = ty * TILE_R, c0 = tx * TILE_C;
        const bool full = r0 + TILE_R <= p.rows && c0 + TILE_C <= p.cols;
        if (full) {
          // All global loads first (VEC-wide, several per thread) so many bytes are in flight.
          V v[kIters];
#pragma unroll
          for (int it = 0; it < kIters; ++it) {
            const int r = transpose_load_row(g, tid, it), c = transpose_load_col(g, tid, it);
            v[it].raw = *reinterpret_cast<const RawWord<ELEM * VEC>*>(in + (r0 + r) * p.ld_in + c0 + c);
          }
#pragma unroll
          for (int it = 0; it < kIters; ++it) {
            const int r = transpose_load_row(g, tid, it), c = transpose_load_col(g, tid, it);
#pragma unroll
            for (int k = 0; k < VEC; ++k) smem[transpose_smem_offset(g, r, c + k)] = v[it].e[k];
          }
          __syncthreads();
#pragma unroll
          for (int it = 0; it < kIters; ++it) {
            const int ic = transpose_store_in_col(g, tid, it), ir = transpose_store_in_row(g, tid, it);
            V w;
#pragma unroll
            for (int k = 0; k < VEC; ++k) w.e[k] = smem[transpose_smem_offset(g, ir + k, ic)];
            *reinterpret_cast<RawWord<ELEM * VEC>*>(out + (c0 + ic) * p.ld_out + r0 + ir) = w.raw;
          }
        } else {
          // Edge tile: element-wise, predicated; same shared-memory maps.
#pragma unroll 1
          for (int it = 0; it < kIters; ++it) {
            const int r = transpose_load_row(g, tid, it), c = transpose_load_col(g, tid, it);
            for (int k = 0; k < VEC; ++k)
              if (r0 + r < p.rows && c0 + c + k < p.cols)
                smem[transpose_smem_offset(g, r, c + k)] = in[(r0 + r) * p.ld_in + c0 + c + k];
          }
          __syncthreads();
#pragma unroll 1
          for (int it = 0; it < kIters; ++it) {
            const int ic = transpose_store_in_col(g, tid, it), ir = transpose_store_in_row(g, tid, it);
            for (int k = 0; k < VEC; ++k)
              if (c0 + ic < p.cols && r0 + ir + k < p.rows)
                out[(c0 + ic) * p.ld_out + r0 + ir + k] = smem[transpose_smem_offset(g, ir + k, ic)];
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
