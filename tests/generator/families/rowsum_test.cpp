// tests/generator/families: the built-in declared family rowsum (templates/rowsum.cuh,
// generator/families/rowsum/rowsum.cpp): its bank analysis from the template's own index function,
// and every configuration of its space compiled by NVRTC for sm_80 and sm_90 (its template check).
#include <doctest/doctest.h>

#include <string>

#include "swzjit/family.hpp"
#include "templates/rowsum.cuh"
#include "tests/generator/core/family_test_util.hpp"

using namespace swz;

TEST_CASE("rowsum: the plain tile's column reads are 32-way conflicted; swizzle and padding are free") {
  const auto f = get_family("rowsum");
  const FamilyBankReport plain = f->analyze(f->parse_config("LAYOUT=0"));
  REQUIRE(plain.analysed);
  REQUIRE(plain.per_instruction.size() == 3);
  CHECK(plain.per_instruction[0].excess_wavefronts == 0);  // the row store: lane = column
  CHECK(plain.per_instruction[1].max_way == 32);           // the column read: lane = row
  CHECK(plain.excess_wavefronts == 62);
  for (const char* layout : {"LAYOUT=1", "LAYOUT=2"}) {
    const FamilyBankReport r = f->analyze(f->parse_config(layout));
    CHECK(r.excess_wavefronts == 0);
    CHECK(r.wavefronts == 3);
  }
  // The swizzle permutes each 32-word row (so no word is lost or shared).
  for (int row = 0; row < 64; ++row) {
    unsigned seen = 0;
    for (int col = 0; col < 32; ++col) {
      const int w = tpl::row_tile_index(row, col, tpl::kRowTileSwizzle);
      CHECK(w / 32 == row);
      seen |= 1u << (w % 32);
    }
    CHECK(seen == 0xFFFFFFFFu);
  }
}

TEST_CASE("rowsum: the space and its launch") {
  const auto f = get_family("rowsum");
  const FamilyValues p = f->parse_problem("batch=3,rows=1000,cols=777");
  CHECK(f->space(p).size() == 12);
  CHECK(f->config_text(f->default_config(p)) == "BLOCK_ROWS=64,LAYOUT=2");
  const FamilyLaunchShape s = f->shape(f->parse_config("BLOCK_ROWS=256,LAYOUT=2"), p);
  CHECK(s.grid[0] == 4);
  CHECK(s.grid[1] == 3);
  CHECK(s.block[0] == 256);
  CHECK(s.dynamic_smem == 256 * 33 * 4);
  CHECK(s.dynamic_smem == tpl::row_tile_smem_bytes(256, tpl::kRowTilePad));
  CHECK(f->space(f->parse_problem("batch=70000,rows=4,cols=4")).empty());  // grid y past 65535
}

TEST_CASE("rowsum: every configuration compiles with NVRTC for sm_80 and sm_90") {
  swz_test::check_space_compiles(*get_family("rowsum"), "batch=1,rows=64,cols=64");
}
