// templates: batched row sums through a shared-memory tile (the built-in declared family "rowsum",
// generator/families/rowsum/rowsum.cpp). A block stages BLOCK_ROWS x 32 floats (templates/row_tile.cuh),
// then thread t sums row t, so one read instruction touches one column of 32 rows: 32-way conflicted
// when plain, conflict-free with the XOR swizzle or padding.
#pragma once

#include "row_tile.cuh"

namespace swz {
namespace tpl {

#if SWZ_DEVICE_CODE
/// out[b * rows + r] = sum over c of in[(b * rows + r) * cols + c]; grid (ceil(rows / BLOCK_ROWS), batch).
template <int BLOCK_ROWS, int LAYOUT>
__global__ void __launch_bounds__(BLOCK_ROWS) rowsum_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                             long long rows, long long cols) {
  extern __shared__ float tile[];
  const long long row0 = static_cast<long long>(blockIdx.x) * BLOCK_ROWS;
  const float* src = in + (static_cast<long long>(blockIdx.y) * rows + row0) * cols;
  float acc = 0.f;
  for (long long c0 = 0; c0 < cols; c0 += 32) {
    row_tile_load<BLOCK_ROWS, LAYOUT>(tile, src, rows - row0, cols, c0);
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < 32; ++c) acc += tile[row_tile_index(threadIdx.x, c, LAYOUT)];
    __syncthreads();
  }
  if (row0 + threadIdx.x < rows) out[static_cast<long long>(blockIdx.y) * rows + row0 + threadIdx.x] = acc;
}

/// The trusted reference: one thread per row, f64 sums.
__global__ void rowsum_reference(const float* __restrict__ in, float* __restrict__ out, long long rows, long long cols) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* src = in + (static_cast<long long>(blockIdx.y) * rows + r) * cols;
  double acc = 0;
  for (long long c = 0; c < cols; ++c) acc += src[c];
  out[static_cast<long long>(blockIdx.y) * rows + r] = static_cast<float>(acc);
}
#endif

}  // namespace tpl
}  // namespace swz
