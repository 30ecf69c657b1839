// templates: a BLOCK_ROWS x 32 tile of f32 rows in shared memory, laid out plain, XOR-swizzled or padded,
// and its staging from a packed row-major matrix: the tile of the built-in families rowsum
// (templates/rowsum.cuh) and rowscan (templates/rowscan.cuh). Staging stores one row per warp instruction
// (lane = column); a kernel that then gives each thread a row reads one column of 32 rows per
// instruction: 32-way conflicted when plain, conflict-free with the swizzle or the padding.
#pragma once

#include "common.cuh"
#include "swizzle.cuh"

namespace swz {
namespace tpl {

enum RowTileLayout { kRowTilePlain = 0, kRowTileSwizzle = 1, kRowTilePad = 2 };

/// Word index of tile element (row, col), col < 32: row-major, XOR-swizzled with Swizzle<5,0,5> on the
/// row-major offset (col ^ (row mod 32)), or rows padded to 33 words. The host's bank analyses evaluate
/// this very function.
SWZ_HD constexpr int row_tile_index(int row, int col, int layout) {
  return layout == kRowTilePad ? row * 33 + col
                               : layout == kRowTileSwizzle ? static_cast<int>(swizzle_apply(row * 32 + col, 5, 0, 5))
                                                           : row * 32 + col;
}

/// Dynamic shared memory of a tile, in bytes.
SWZ_HD constexpr int row_tile_smem_bytes(int block_rows, int layout) {
  return block_rows * (layout == kRowTilePad ? 33 : 32) * 4;
}

#if SWZ_DEVICE_CODE
/// Stages columns [c0, c0 + 32) of the block's BLOCK_ROWS rows into `tile`, zeros past the matrix: `src`
/// is the block's first row (of `rows_left` rows that exist) of a packed matrix `cols` wide. A block of
/// BLOCK_ROWS threads calls it; warp w stores rows w, w + BLOCK_ROWS / 32, ... (lane = column).
template <int BLOCK_ROWS, int LAYOUT>
__device__ __forceinline__ void row_tile_load(float* tile, const float* __restrict__ src, long long rows_left,
                                              long long cols, long long c0) {
  static_assert(BLOCK_ROWS % 32 == 0 && BLOCK_ROWS >= 32 && BLOCK_ROWS <= 1024, "BLOCK_ROWS: a multiple of 32");
  static_assert(LAYOUT >= 0 && LAYOUT <= 2, "LAYOUT: plain, swizzle or pad");
  constexpr int kWarps = BLOCK_ROWS / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const bool column_inside = c0 + lane < cols;
#pragma unroll 8
  for (int k = 0; k < 32; ++k) {
    const int r = k * kWarps + warp;
    tile[row_tile_index(r, lane, LAYOUT)] = r < rows_left && column_inside ? src[r * cols + c0 + lane] : 0.f;
  }
}
#endif

}  // namespace tpl
}  // namespace swz
