// templates: batched inclusive row scans (cumulative sums along each row, as torch.cumsum(x, -1)) through a
// shared-memory tile (the built-in declared family "rowscan", generator/families/rowscan/rowscan.cpp).
// A block stages BLOCK_ROWS x 32 floats (templates/row_tile.cuh); then thread t scans row t in place, so
// each read and write touches one column of 32 rows (32-way conflicted when plain, conflict-free with the
// XOR swizzle or padding); then the warps write the scanned rows out (lane = column). Thread t carries its
// row's sum from one 32-column slab to the next.
#pragma once

#include "row_tile.cuh"

namespace swz {
namespace tpl {

#if SWZ_DEVICE_CODE
/// out[b][r][c] = sum over c' <= c of in[b][r][c'] (row-major, packed); grid (ceil(rows / BLOCK_ROWS), batch).
template <int BLOCK_ROWS, int LAYOUT>
__global__ void __launch_bounds__(BLOCK_ROWS) rowscan_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                              long long rows, long long cols) {
  extern __shared__ float tile[];
  constexpr int kWarps = BLOCK_ROWS / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long row0 = static_cast<long long>(blockIdx.x) * BLOCK_ROWS;
  const long long base = (static_cast<long long>(blockIdx.y) * rows + row0) * cols;
  float carry = 0.f;
  for (long long c0 = 0; c0 < cols; c0 += 32) {
    row_tile_load<BLOCK_ROWS, LAYOUT>(tile, in + base, rows - row0, cols, c0);
    __syncthreads();
    // Sixteen words of the row into registers, then their scan written back, twice: the compiler cannot
    // prove that a swizzled store misses the next swizzled load, so word by word each load waits for the
    // previous store. (A whole row at once spilled at 64 and 128 rows; chunks of 4 or 8 at 256.)
#pragma unroll
    for (int c16 = 0; c16 < 32; c16 += 16) {
      float v[16];
#pragma unroll
      for (int c = 0; c < 16; ++c) v[c] = tile[row_tile_index(threadIdx.x, c16 + c, LAYOUT)];
#pragma unroll
      for (int c = 0; c < 16; ++c) {
        carry += v[c];
        tile[row_tile_index(threadIdx.x, c16 + c, LAYOUT)] = carry;
      }
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < 32; ++k) {
      const int r = k * kWarps + warp;
      if (row0 + r < rows && c0 + lane < cols)
        out[base + r * cols + c0 + lane] = tile[row_tile_index(r, lane, LAYOUT)];
    }
    __syncthreads();
  }
}

/// The trusted reference: one thread per row, f64 running sums.
__global__ void rowscan_reference(const float* __restrict__ in, float* __restrict__ out, long long rows,
                                  long long cols) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const long long at = (static_cast<long long>(blockIdx.y) * rows + r) * cols;
  double acc = 0;
  for (long long c = 0; c < cols; ++c) {
    acc += in[at + c];
    out[at + c] = static_cast<float>(acc);
  }
}
#endif

}  // namespace tpl
}  // namespace swz
