// examples: the CUDA template of the "tile_transpose_add" family (examples/own_family.cpp):
// out[b] = A[b]^T + B[b] for a batch of row-major matrices, through a shared tile XOR-swizzled with
// Swizzle<5,0,log2(TILE)>. NVRTC compiles it for the device; own_family.cpp includes it on the host
// too, so the static bank analysis evaluates the very index functions the kernel uses.
// An include guard, not #pragma once: NVRTC compiles this file as its main translation unit.
#ifndef SWZ_EXAMPLE_TILE_TRANSPOSE_ADD_CUH
#define SWZ_EXAMPLE_TILE_TRANSPOSE_ADD_CUH

#include "swizzle.cuh"

namespace tta {

/// log2 of a power of two (TILE is 32 or 64).
SWZ_HD constexpr int log2_exact(int v) { return v <= 1 ? 0 : 1 + log2_exact(v / 2); }

/// Offset (in floats) of tile element (r, c) in shared memory. SWIZZLE = 1 XORs the row's low five
/// bits into the column's (col ^ row within each 32-column group): a column read by 32 lanes then
/// touches 32 different banks, and a row write stays one contiguous permutation of 32 words.
template <int TILE, int SWIZZLE>
SWZ_HD constexpr int tile_offset(int r, int c) {
  return SWIZZLE ? swz::tpl::Swizzle<5, 0, log2_exact(TILE)>{}(r * TILE + c) : r * TILE + c;
}

/// Thread t of a block of TILE x ROWS threads: tile column tx = t % TILE, first tile row ty = t / TILE.
/// Pass k (0 .. TILE / ROWS - 1) handles tile row ty + k * ROWS.
SWZ_HD constexpr int thread_x(int t, int tile) { return t % tile; }
SWZ_HD constexpr int thread_y(int t, int tile) { return t / tile; }

#if SWZ_DEVICE_CODE
/// One block moves one TILE x TILE tile of A[b] (rows x cols, row-major) into shared memory, row by
/// row (coalesced reads of A), then writes out[b] (cols x rows) row by row from the tile's columns,
/// adding B[b]. grid = (ceil(cols / TILE), ceil(rows / TILE), batch), block = (TILE * ROWS).
template <int TILE, int ROWS, int SWIZZLE>
__global__ void __launch_bounds__(TILE * ROWS)
    tile_transpose_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                       long long rows, long long cols) {
  static_assert(TILE % 32 == 0 && TILE % ROWS == 0 && TILE * ROWS <= 1024, "tile_transpose_add: bad tile");
  __shared__ float tile[TILE * TILE];
  const long long batch_offset = static_cast<long long>(blockIdx.z) * rows * cols;
  const long long r0 = static_cast<long long>(blockIdx.y) * TILE, c0 = static_cast<long long>(blockIdx.x) * TILE;
  const int t = static_cast<int>(threadIdx.x);
  const int tx = thread_x(t, TILE), ty = thread_y(t, TILE);
#pragma unroll
  for (int k = 0; k < TILE / ROWS; ++k) {
    const int r = ty + k * ROWS;
    if (r0 + r < rows && c0 + tx < cols) tile[tile_offset<TILE, SWIZZLE>(r, tx)] = a[batch_offset + (r0 + r) * cols + c0 + tx];
  }
  __syncthreads();
  // out row j = c0 + (ty + k * ROWS), out column i = r0 + tx: out[j][i] = A[i][j] + B[j][i].
#pragma unroll
  for (int k = 0; k < TILE / ROWS; ++k) {
    const int c = ty + k * ROWS;
    if (c0 + c < cols && r0 + tx < rows) {
      const long long o = batch_offset + (c0 + c) * rows + r0 + tx;
      out[o] = tile[tile_offset<TILE, SWIZZLE>(tx, c)] + b[o];
    }
  }
}

/// The trusted reference: one thread per output element, no shared memory. grid = (ceil(rows * cols /
/// THREADS), batch), block = THREADS.
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
    tile_transpose_add_reference(const float* a, const float* b, float* out, long long rows, long long cols) {
  const long long i = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x;
  if (i >= rows * cols) return;
  const long long batch_offset = static_cast<long long>(blockIdx.y) * rows * cols;
  const long long j = i / rows, r = i % rows;  // out[j][r], j < cols
  out[batch_offset + i] = a[batch_offset + r * cols + j] + b[batch_offset + i];
}
#endif

}  // namespace tta

#endif  // SWZ_EXAMPLE_TILE_TRANSPOSE_ADD_CUH
