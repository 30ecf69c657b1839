// templates: batched row sums through a shared-memory tile (the built-in declared family "rowsum",
// generator/families/rowsum/rowsum.cpp). A block stages BLOCK_ROWS x 32 floats, each warp storing one
// row per instruction (lane = column); then thread t sums row t, so one read instruction touches one
// column of 32 rows: 32-way conflicted when plain, conflict-free with the XOR swizzle or padding.
#pragma once

#include "common.cuh"
#include "swizzle.cuh"

namespace swz {
namespace tpl {

enum RowsumLayout { kRowsumPlain = 0, kRowsumSwizzle = 1, kRowsumPad = 2 };

/// Word index of tile element (row, col), col < 32. The swizzle is Swizzle<5,0,5> on the row-major
/// offset: col ^ (row mod 32). The host's bank analysis evaluates this very function.
SWZ_HD constexpr int rowsum_smem_index(int row, int col, int layout) {
  return layout == kRowsumPad ? row * 33 + col
                              : layout == kRowsumSwizzle ? static_cast<int>(swizzle_apply(row * 32 + col, 5, 0, 5))
                                                         : row * 32 + col;
}

/// Dynamic shared memory of a configuration, in bytes.
SWZ_HD constexpr int rowsum_smem_bytes(int block_rows, int layout) {
  return block_rows * (layout == kRowsumPad ? 33 : 32) * 4;
}

#if SWZ_DEVICE_CODE
/// out[b * rows + r] = sum over c of in[(b * rows + r) * cols + c]; grid (ceil(rows / BLOCK_ROWS), batch).
template <int BLOCK_ROWS, int LAYOUT>
__global__ void __launch_bounds__(BLOCK_ROWS) rowsum_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                             long long rows, long long cols) {
  static_assert(BLOCK_ROWS % 32 == 0 && BLOCK_ROWS >= 32 && BLOCK_ROWS <= 1024, "BLOCK_ROWS: a multiple of 32");
  static_assert(LAYOUT >= 0 && LAYOUT <= 2, "LAYOUT: plain, swizzle or pad");
  extern __shared__ float tile[];
  constexpr int kWarps = BLOCK_ROWS / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long row0 = static_cast<long long>(blockIdx.x) * BLOCK_ROWS;
  const float* src = in + (static_cast<long long>(blockIdx.y) * rows + row0) * cols;
  float acc = 0.f;
  for (long long c0 = 0; c0 < cols; c0 += 32) {
#pragma unroll 8
    for (int k = 0; k < 32; ++k) {
      const int r = k * kWarps + warp;
      const bool inside = row0 + r < rows && c0 + lane < cols;
      tile[rowsum_smem_index(r, lane, LAYOUT)] = inside ? src[r * cols + c0 + lane] : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < 32; ++c) acc += tile[rowsum_smem_index(threadIdx.x, c, LAYOUT)];
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
