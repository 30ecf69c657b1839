// tests/templates: the template of examples/own_family.cpp (examples/tile_transpose_add.cuh) on the host
// and through NVRTC: its swizzled tile is a bijection, its column reads are 32-way conflicted plain and
// conflict-free swizzled (the bank model of docs/ARCHITECTURE.md), and every instantiation compiles.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "examples/tile_transpose_add.cuh"
#include "swzjit/analysis/bank.hpp"
#include "swzjit/jit.hpp"

namespace {

// The instructions of one block as own_family.cpp's SmemAccessMap builds them: each warp's tile row
// stores (phase 0) or tile column reads (phase 1), one instruction per pass.
template <int TILE, int SWIZZLE>
std::vector<swz::SmemInstruction> block_accesses(int rows_per_pass, int phase) {
  std::vector<swz::SmemInstruction> out;
  for (int warp = 0; warp < TILE * rows_per_pass / 32; ++warp)
    for (int k = 0; k < TILE / rows_per_pass; ++k) {
      swz::SmemInstruction in;
      in.op = phase == 0 ? swz::SmemOp::Sts : swz::SmemOp::Lds;
      for (int lane = 0; lane < 32; ++lane) {
        const int t = warp * 32 + lane;
        const int tx = tta::thread_x(t, TILE), ty = tta::thread_y(t, TILE) + k * rows_per_pass;
        in.addresses.push_back(4LL * (phase == 0 ? tta::tile_offset<TILE, SWIZZLE>(ty, tx)
                                                 : tta::tile_offset<TILE, SWIZZLE>(tx, ty)));
      }
      out.push_back(std::move(in));
    }
  return out;
}

struct Cost {
  int instructions = 0, wavefronts = 0, excess = 0, max_way = 0;
};

Cost cost(const std::vector<swz::SmemInstruction>& instrs) {
  Cost c;
  for (const auto& in : instrs) {
    const swz::BankReport r = swz::analyze_bank(in);
    ++c.instructions;
    c.wavefronts += r.wavefronts;
    c.excess += r.excess_wavefronts;
    c.max_way = std::max(c.max_way, r.max_way);
  }
  return c;
}

template <int TILE, int SWIZZLE>
bool tile_is_bijection() {
  std::set<int> seen;
  for (int r = 0; r < TILE; ++r)
    for (int c = 0; c < TILE; ++c) {
      const int o = tta::tile_offset<TILE, SWIZZLE>(r, c);
      if (o < 0 || o >= TILE * TILE || !seen.insert(o).second) return false;
    }
  return true;
}

}  // namespace

TEST_CASE("example family: the swizzled tile is col ^ row within each 32 columns, a bijection") {
  CHECK(tta::log2_exact(32) == 5);
  CHECK(tta::log2_exact(64) == 6);
  static_assert(tta::tile_offset<32, 1>(3, 5) == 3 * 32 + (5 ^ 3), "Swizzle<5,0,5> is col ^ row");
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      CHECK(tta::tile_offset<64, 0>(r, c) == r * 64 + c);
      CHECK(tta::tile_offset<64, 1>(r, c) == r * 64 + ((c & 32) | ((c & 31) ^ (r & 31))));
    }
  CHECK(tile_is_bijection<32, 1>());
  CHECK(tile_is_bijection<64, 1>());
  CHECK(tile_is_bijection<64, 0>());
}

TEST_CASE("example family: plain column reads are 32-way, swizzled ones and every row store are free") {
  for (int rows : {4, 8, 16}) {
    CAPTURE(rows);
    const Cost plain_reads = cost(block_accesses<64, 0>(rows, 1));
    CHECK(plain_reads.instructions == 64 * 64 / 32);  // one instruction per 32 elements of the tile
    CHECK(plain_reads.max_way == 32);
    CHECK(plain_reads.excess == 31 * plain_reads.instructions);
    CHECK(cost(block_accesses<64, 0>(rows, 0)).excess == 0);
    const Cost swizzled_reads = cost(block_accesses<64, 1>(rows, 1));
    CHECK(swizzled_reads.excess == 0);
    CHECK(swizzled_reads.wavefronts == swizzled_reads.instructions);
    CHECK(cost(block_accesses<64, 1>(rows, 0)).excess == 0);
    CHECK(cost(block_accesses<32, 1>(rows, 1)).excess == 0);
    CHECK(cost(block_accesses<32, 0>(rows, 1)).max_way == 32);
  }
}

TEST_CASE("example family: the template and its reference compile with NVRTC for sm_90") {
  const std::string path = std::string(SWZ_SOURCE_DIR) + "/examples/tile_transpose_add.cuh";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  for (const char* name : {"tta::tile_transpose_add<64, 8, 1>", "tta::tile_transpose_add<32, 16, 0>",
                           "tta::tile_transpose_add_reference<256>"}) {
    CAPTURE(name);
    swz::CompileRequest r;
    r.source = text.str();
    r.source_name = "tile_transpose_add.cuh";
    r.name_expression = name;
    r.arch = "sm_90";
    const swz::CompiledKernel k = swz::compile(r);
    CHECK_FALSE(k.lowered_name.empty());
    CHECK(k.log.find("warning") == std::string::npos);
    if (!k.is_ptx) {
      const swz::CubinResources res = swz::cubin_resources(k);
      CHECK(res.local_bytes == 0);  // no spills
      // the tiled kernels stage a 64x64 or 32x32 float tile in static shared memory; the reference none
      const std::string n = name;
      CHECK(res.static_smem_bytes == (n.find("<64") != std::string::npos   ? 64 * 64 * 4
                                      : n.find("<32") != std::string::npos ? 32 * 32 * 4
                                                                           : 0));
    }
  }
}
