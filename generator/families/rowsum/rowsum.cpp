// generator/families/rowsum: the built-in declared family "rowsum" (templates/rowsum.cuh): batched
// row sums through a BLOCK_ROWS x 32 shared tile, plain, XOR-swizzled or padded. Its whole wiring is
// this definition; the engine, tuner, worker and `swz` serve it through the family contract.
#include "swzjit/family.hpp"
#include "templates/rowsum.cuh"

namespace swz {
namespace detail {

namespace {

// Warp 0's shared-memory instructions, from the template's own index function: the first tile store
// (lane = column of row `warp`) and the first two reads of the sums (lane = row, one column).
std::vector<SmemInstruction> rowsum_accesses(const FamilyValues& config) {
  const int layout = static_cast<int>(config.at("LAYOUT"));
  std::vector<SmemInstruction> out;
  SmemInstruction store{SmemOp::Sts, 4, {}};
  for (int lane = 0; lane < 32; ++lane) store.addresses.push_back(4LL * tpl::row_tile_index(0, lane, layout));
  out.push_back(store);
  for (int c = 0; c < 2; ++c) {
    SmemInstruction load{SmemOp::Lds, 4, {}};
    for (int lane = 0; lane < 32; ++lane) load.addresses.push_back(4LL * tpl::row_tile_index(lane, c, layout));
    out.push_back(load);
  }
  return out;
}

}  // namespace

FamilyDef rowsum_family() {
  FamilyDef d = FamilyDef::parse(R"(
family = rowsum
about = batched row sums: out[b][r] = sum over c of in[b][r][c] (f32, row-major, packed)
dims = batch rows cols
param BLOCK_ROWS = 32 64 128 256 ; default 64
param LAYOUT = 0 1 2 ; default 2          # 0 plain, 1 XOR swizzle, 2 padded rows
require = batch <= 65535
buffer in = f32 [batch * rows * cols] input
buffer out = f32 [batch * rows] output
kernel = swz::tpl::rowsum_kernel<BLOCK_ROWS, LAYOUT>(in, out, rows, cols)
grid = max(1, ceil_div(rows, BLOCK_ROWS)), max(1, batch)
block = BLOCK_ROWS
smem = BLOCK_ROWS * (32 + (LAYOUT == 2)) * 4
reference = swz::tpl::rowsum_reference(in, out, rows, cols)
reference.grid = max(1, ceil_div(rows, 128)), max(1, batch)
reference.block = 128
tolerance = 1e-5
min_arch = 50
source_name = rowsum.cu
--- source
#include "rowsum.cuh"
)");
  d.smem_accesses = rowsum_accesses;
  return d;
}

}  // namespace detail
}  // namespace swz
