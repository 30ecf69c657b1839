// generator/families/rowscan: the built-in declared family "rowscan" (templates/rowscan.cuh): batched
// inclusive row scans through a BLOCK_ROWS x 32 shared tile, plain, XOR-swizzled or padded. Its whole
// wiring is this definition and one registry entry; the engine, tuner, worker and `swz` serve it through
// the family contract (docs/ARCHITECTURE.md, "Adding a family").
#include "swzjit/family.hpp"
#include "templates/rowscan.cuh"

namespace swz {
namespace detail {

namespace {

// Warp 0's shared-memory instructions, from the template's own index function: the first tile store
// (lane = column of row 0), the scan's first read and write (lane = row, column 0) and the first read of
// the write-out (lane = column of row 0).
std::vector<SmemInstruction> rowscan_accesses(const FamilyValues& config) {
  const int layout = static_cast<int>(config.at("LAYOUT"));
  const auto instruction = [&](SmemOp op, bool lane_is_row) {
    SmemInstruction ins{op, 4, {}};
    for (int lane = 0; lane < 32; ++lane)
      ins.addresses.push_back(4LL * (lane_is_row ? tpl::row_tile_index(lane, 0, layout)
                                                 : tpl::row_tile_index(0, lane, layout)));
    return ins;
  };
  return {instruction(SmemOp::Sts, false), instruction(SmemOp::Lds, true), instruction(SmemOp::Sts, true),
          instruction(SmemOp::Lds, false)};
}

}  // namespace

FamilyDef rowscan_family() {
  FamilyDef d = FamilyDef::parse(R"(
family = rowscan
about = batched inclusive row scans: out[b][r][c] = sum over c' <= c of in[b][r][c'] (f32, row-major, packed)
dims = batch rows cols
param BLOCK_ROWS = 32 64 128 256 ; default 32   # a block per 32 rows: the most blocks
param LAYOUT = 0 1 2 ; default 1          # 0 plain, 1 XOR swizzle, 2 padded rows
require = batch <= 65535
buffer in = f32 [batch * rows * cols] input
buffer out = f32 [batch * rows * cols] output
kernel = swz::tpl::rowscan_kernel<BLOCK_ROWS, LAYOUT>(in, out, rows, cols)
grid = max(1, ceil_div(rows, BLOCK_ROWS)), max(1, batch)
block = BLOCK_ROWS
smem = BLOCK_ROWS * (32 + (LAYOUT == 2)) * 4
reference = swz::tpl::rowscan_reference(in, out, rows, cols)
reference.grid = max(1, ceil_div(rows, 128)), max(1, batch)
reference.block = 128
tolerance = 1e-5
min_arch = 50
source_name = rowscan.cu
--- source
#include "rowscan.cuh"
)");
  d.smem_accesses = rowscan_accesses;
  return d;
}

}  // namespace detail
}  // namespace swz
