// tests/generator/families: the built-in declared family rowscan (templates/rowscan.cuh,
// generator/families/rowscan/rowscan.cpp): its bank analysis from the template's own index function, its
// space and launch, every configuration compiled by NVRTC for sm_80 and sm_90 (its template check), and
// the kernel's arithmetic run on the host over the template's index function (the GPU runs it through
// `swz autotune rowscan` and `swz run rowscan`, which compare it with its reference).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swzjit/family.hpp"
#include "templates/rowscan.cuh"
#include "tests/generator/core/family_test_util.hpp"

using namespace swz;

TEST_CASE("rowscan: the plain tile's scan is 32-way conflicted; swizzle and padding are free") {
  const auto f = get_family("rowscan");
  const FamilyBankReport plain = f->analyze(f->parse_config("LAYOUT=0"));
  REQUIRE(plain.analysed);
  REQUIRE(plain.per_instruction.size() == 4);
  CHECK(plain.per_instruction[0].excess_wavefronts == 0);  // the row store: lane = column
  CHECK(plain.per_instruction[1].max_way == 32);           // the scan's read: lane = row
  CHECK(plain.per_instruction[2].max_way == 32);           // and its write
  CHECK(plain.per_instruction[3].excess_wavefronts == 0);  // the write-out's read: lane = column
  CHECK(plain.excess_wavefronts == 62);
  for (const char* layout : {"LAYOUT=1", "LAYOUT=2"}) {
    const FamilyBankReport r = f->analyze(f->parse_config(layout));
    CHECK_MESSAGE(r.excess_wavefronts == 0, layout);
    CHECK_MESSAGE(r.wavefronts == 4, layout);
  }
}

TEST_CASE("rowscan: the space, the default and the launch") {
  const auto f = get_family("rowscan");
  const FamilyValues p = f->parse_problem("batch=3,rows=1000,cols=777");
  CHECK(f->space(p).size() == 12);
  CHECK(f->config_text(f->default_config(p)) == "BLOCK_ROWS=32,LAYOUT=1");
  const FamilyLaunchShape s = f->shape(f->parse_config("BLOCK_ROWS=256,LAYOUT=2"), p);
  CHECK(s.grid[0] == 4);
  CHECK(s.grid[1] == 3);
  CHECK(s.block[0] == 256);
  CHECK(s.dynamic_smem == tpl::row_tile_smem_bytes(256, tpl::kRowTilePad));
  CHECK(f->shape(f->parse_config("BLOCK_ROWS=32,LAYOUT=1"), p).dynamic_smem == 32 * 32 * 4);
  CHECK(f->space(f->parse_problem("batch=70000,rows=4,cols=4")).empty());  // grid y past 65535
  CHECK(f->check_config(f->parse_config("BLOCK_ROWS=48,LAYOUT=1"), p).find("BLOCK_ROWS") != std::string::npos);
  CHECK(f->check_config(f->parse_config("BLOCK_ROWS=32,LAYOUT=0"), p).empty());
}

// The kernel's three phases on the host for one block, over the template's own index function: every
// element lands in its own word and comes back scanned, in every layout.
TEST_CASE("rowscan: the tile's index function holds every element of a block exactly once") {
  for (int layout = 0; layout <= 2; ++layout) {
    const int block_rows = 64, words = tpl::row_tile_smem_bytes(block_rows, layout) / 4;
    std::vector<int> owner(static_cast<std::size_t>(words), -1);
    for (int r = 0; r < block_rows; ++r)
      for (int c = 0; c < 32; ++c) {
        const int w = tpl::row_tile_index(r, c, layout);
        REQUIRE(w >= 0);
        REQUIRE(w < words);
        CHECK(owner[static_cast<std::size_t>(w)] == -1);
        owner[static_cast<std::size_t>(w)] = r * 32 + c;
      }
    // A scan through the tile as the kernel does it gives the row prefix sums.
    std::vector<float> tile(static_cast<std::size_t>(words), 0.f);
    for (int r = 0; r < block_rows; ++r)
      for (int c = 0; c < 32; ++c) tile[static_cast<std::size_t>(tpl::row_tile_index(r, c, layout))] = float(r + c);
    for (int r = 0; r < block_rows; ++r) {
      float carry = 0;
      for (int c = 0; c < 32; ++c) {
        float& v = tile[static_cast<std::size_t>(tpl::row_tile_index(r, c, layout))];
        carry += v;
        v = carry;
      }
      for (int c = 0; c < 32; ++c)
        CHECK(tile[static_cast<std::size_t>(tpl::row_tile_index(r, c, layout))] ==
              float((c + 1) * r + c * (c + 1) / 2));
    }
  }
}

TEST_CASE("rowscan: every configuration compiles with NVRTC for sm_80 and sm_90") {
  swz_test::check_space_compiles(*get_family("rowscan"), "batch=1,rows=64,cols=64");
}
