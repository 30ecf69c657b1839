// tests/generator: the swizzle solver (generator/analysis/solver.cpp): pattern expansion, pattern costs,
// the seed tiles it must free of conflicts, a tile only a composition frees, one nothing frees.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "swzjit/error.hpp"
#include "swzjit/analysis/solver.hpp"
#include "templates/swizzle.cuh"

namespace {

using swz::AccessPattern;
using swz::SmemTile;
using swz::SolveResult;
using swz::SolveStatus;
using swz::SwizzleSpec;

std::vector<AccessPattern> pats(const std::vector<std::string>& names) {
  std::vector<AccessPattern> out;
  for (const auto& n : names) out.push_back(swz::parse_access_pattern(n));
  return out;
}

SolveResult solve(SmemTile t, const std::vector<std::string>& names, swz::SolveOptions o = {}) {
  return swz::solve_swizzle(t, pats(names), o);
}

void check_all_free_after(const SolveResult& r) {
  for (const auto& p : r.patterns) {
    CAPTURE(p.pattern);
    CHECK(p.after.legal);
    CHECK(p.after.excess_wavefronts == 0);
    CHECK(p.after.instructions == p.before.instructions);
    CHECK(p.after.ideal_wavefronts == p.before.ideal_wavefronts);  // a permutation moves no bytes
  }
}

void check_invalid(const std::function<void()>& f, const std::string& start) {
  try {
    f();
    FAIL("no error thrown");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    CHECK_MESSAGE(std::string(e.what()).rfind(start, 0) == 0, e.what());
  }
}

}  // namespace

TEST_CASE("solver: pattern names parse and print canonically") {
  for (const char* n : {"store:4", "store:8", "store:16", "load:16", "colread", "tstore:4", "ldmatrix",
                        "ldmatrix.trans", "ldmatrix.flat", "ldmatrix.flat.trans"})
    CHECK(swz::parse_access_pattern(n).name() == n);
  CHECK(swz::parse_access_pattern("ldmatrix.trans").trans);
  CHECK_FALSE(swz::parse_access_pattern("ldmatrix").trans);
  for (const char* bad : {"store:3", "store:", "store:32", "colwrite", "ldmatrix.x3", "", "tstore:x", "load"}) {
    CAPTURE(bad);
    check_invalid([&] { swz::parse_access_pattern(bad); }, "pattern");
  }
}

TEST_CASE("solver: patterns expand with the documented lane mapping") {
  // colread on a 32x32 fp32 tile: lane i reads (i, c) -> byte (i*32 + c)*4, one instruction per column
  const auto col = swz::expand_pattern({32, 128, 4}, swz::parse_access_pattern("colread"));
  REQUIRE(col.size() == 32);
  for (int i = 0; i < 32; ++i) CHECK(col[5].addresses[static_cast<std::size_t>(i)] == (i * 32 + 5) * 4);
  // store:16 on 16 x 128 bytes: 128 chunks, 4 warps; lane i of warp j at (32j+i)*16
  const auto st = swz::expand_pattern({16, 128, 2}, swz::parse_access_pattern("store:16"));
  REQUIRE(st.size() == 4);
  CHECK(st[2].op == swz::SmemOp::Sts);
  CHECK(st[2].width == 16);
  CHECK(st[2].addresses[7] == (64 + 7) * 16);
  // colread past the last row: lanes are inactive (40 rows: a second group of 8 lanes)
  const auto c40 = swz::expand_pattern({40, 128, 4}, swz::parse_access_pattern("colread"));
  REQUIRE(c40.size() == 64);
  CHECK(c40[1].addresses.size() == 8);
  // tstore:4 on seed 004's As (BK=8 rows of BM=64 floats) is the kernel's own index expression
  const auto ts = swz::expand_pattern({8, 256, 4}, swz::parse_access_pattern("tstore:4"));
  REQUIRE(ts.size() == 16);
  for (int warp = 0; warp < 4; ++warp)
    for (int k = 0; k < 4; ++k)
      for (int lane = 0; lane < 32; ++lane) {
        const int t = warp * 32 + lane, inner_row = t / 2, inner_col = t % 2;
        CHECK(ts[static_cast<std::size_t>(warp * 4 + k)].addresses[static_cast<std::size_t>(lane)] ==
              ((inner_col * 4 + k) * 64 + inner_row) * 4);
      }
  // ldmatrix: lane l reads block row l%16, column (l/16)*8; the second block starts 16 columns on
  const auto lm = swz::expand_pattern({16, 128, 2}, swz::parse_access_pattern("ldmatrix"));
  REQUIRE(lm.size() == 4);
  CHECK(lm[1].op == swz::SmemOp::LdmatrixX4);
  CHECK(lm[1].addresses[17] == (1 * 64 + 8 + 16) * 2);
  // ldmatrix.flat: 256 consecutive elements as a 16x16 block (row stride 16 elements)
  const auto lf = swz::expand_pattern({16, 512, 2}, swz::parse_access_pattern("ldmatrix.flat"));
  REQUIRE(lf.size() == 16);
  CHECK(lf[3].addresses[18] == (3 * 256 + 2 * 16 + 8) * 2);
  // with a swizzle the addresses move: Swizzle<5,0,5> turns (i, c) into (i, c ^ i)
  const auto sw = swz::expand_pattern({32, 128, 4}, swz::parse_access_pattern("colread"), {SwizzleSpec{5, 0, 5}});
  for (int i = 0; i < 32; ++i) CHECK(sw[5].addresses[static_cast<std::size_t>(i)] == (i * 32 + (5 ^ i)) * 4);
}

TEST_CASE("solver: patterns that do not fit the tile, swizzles that split a vector, bad tiles") {
  check_invalid([] { swz::expand_pattern({16, 128, 4}, swz::parse_access_pattern("ldmatrix")); }, "pattern ldmatrix");
  check_invalid([] { swz::expand_pattern({8, 128, 2}, swz::parse_access_pattern("ldmatrix")); }, "pattern ldmatrix");
  check_invalid([] { swz::expand_pattern({8, 24, 4}, swz::parse_access_pattern("store:16")); }, "pattern store:16");
  check_invalid([] { swz::expand_pattern({6, 256, 4}, swz::parse_access_pattern("tstore:4")); }, "pattern tstore:4");
  // Swizzle<3,0,3> on fp16 moves single elements: a 16-byte store would be torn apart
  check_invalid([] { swz::expand_pattern({16, 128, 2}, swz::parse_access_pattern("store:16"), {SwizzleSpec{3, 0, 3}}); },
                "pattern store:16");
  const auto torn = swz::evaluate_pattern({16, 128, 2}, swz::parse_access_pattern("store:16"), {SwizzleSpec{3, 0, 3}});
  CHECK_FALSE(torn.legal);
  CHECK(swz::evaluate_pattern({16, 128, 2}, swz::parse_access_pattern("store:16"), {SwizzleSpec{3, 3, 3}}).legal);
  check_invalid([] { SmemTile{0, 128, 4}.validate(); }, "rows");
  check_invalid([] { SmemTile{4, 128, 3}.validate(); }, "elem-bytes");
  check_invalid([] { SmemTile{4, 130, 4}.validate(); }, "row-bytes");
  check_invalid([] { SmemTile{4096, 1024, 4}.validate(); }, "rows x row-bytes");
  check_invalid([] { swz::solve_swizzle({32, 128, 4}, {}); }, "pattern");
}

TEST_CASE("solver: bijection of the tile") {
  CHECK(swz::is_tile_bijection({32, 128, 4}, {SwizzleSpec{5, 0, 5}}));
  CHECK(swz::is_tile_bijection({24, 128, 4}, {SwizzleSpec{5, 0, 5}}));  // 768 elements: XOR stays in the row
  // Swizzle<1,0,-9> flips bit 9 of odd offsets: 768 elements, so offset 1 would land on 513 and
  // offset 257 on 769, past the tile
  CHECK_FALSE(swz::is_tile_bijection({24, 128, 4}, {SwizzleSpec{1, 0, -9}}));
  CHECK(swz::is_tile_bijection({32, 128, 4}, {SwizzleSpec{1, 0, -9}}));
  // a field past the tile's 10 offset bits leaves it
  CHECK_FALSE(swz::is_tile_bijection({32, 128, 4}, {SwizzleSpec{1, 0, -10}}));
}

TEST_CASE("solver: seed 001 32x32 fp32 transpose tile -> Swizzle<5,0,5> (col ^ row)") {
  const SolveResult r = solve({32, 128, 4}, {"store:4", "colread"});
  REQUIRE(r.status == SolveStatus::Found);
  REQUIRE(r.swizzles.size() == 1);
  CHECK(r.swizzles[0] == SwizzleSpec{5, 0, 5});
  REQUIRE(r.patterns.size() == 2);
  CHECK(r.patterns[0].before.excess_wavefronts == 0);  // row stores never conflict
  CHECK(r.patterns[1].pattern == "colread");
  CHECK(r.patterns[1].before.instructions == 32);
  CHECK(r.patterns[1].before.wavefronts == 1024);  // 32 columns x 32-way
  CHECK(r.patterns[1].before.excess_wavefronts == 992);
  CHECK(r.patterns[1].before.max_way == 32);
  CHECK(r.patterns[1].after.wavefronts == 32);
  CHECK(r.patterns[1].after.max_way == 1);
  check_all_free_after(r);
  // Fewer bits cannot work: 32 rows must reach 32 distinct banks.
  swz::SolveOptions four;
  four.max_bits = 4;
  four.allow_composition = false;
  CHECK(solve({32, 128, 4}, {"store:4", "colread"}, four).status == SolveStatus::NotFound);
  // A 24-row tile (not a power of two) takes the same swizzle; it is a bijection of its 768 elements.
  const SolveResult r24 = solve({24, 128, 4}, {"store:4", "colread"});
  REQUIRE(r24.status == SolveStatus::Found);
  CHECK(r24.swizzles[0] == SwizzleSpec{5, 0, 5});
  CHECK(swz::is_tile_bijection({24, 128, 4}, r24.swizzles));
  check_all_free_after(r24);
}

TEST_CASE("solver: seed 003 fp16 tiles read with ldmatrix -> Swizzle<B,3,S>") {
  struct Case {
    int rows, row_bytes;
    SwizzleSpec want;
    long long excess_per_block;
  };
  // 32-byte rows: 2-way (excess 4 per block); 64-byte: 4-way (12); 128-byte: 8-way (28);
  // 256-byte rows: 8 rows of a phase are 256 bytes apart, so the row bits start one higher (S = 4).
  for (const Case& k : {Case{16, 32, {1, 3, 3}, 4}, Case{16, 64, {2, 3, 3}, 12}, Case{16, 128, {3, 3, 3}, 28},
                        Case{64, 128, {3, 3, 3}, 28}, Case{64, 256, {3, 3, 4}, 28}}) {
    CAPTURE(k.rows);
    CAPTURE(k.row_bytes);
    const SolveResult r = solve({k.rows, k.row_bytes, 2}, {"store:16", "ldmatrix", "ldmatrix.trans"});
    REQUIRE(r.status == SolveStatus::Found);
    REQUIRE(r.swizzles.size() == 1);
    CHECK(r.swizzles[0] == k.want);
    const long long blocks = (k.rows / 16) * (k.row_bytes / 32);
    CHECK(r.patterns[1].before.instructions == blocks);
    CHECK(r.patterns[1].before.excess_wavefronts == k.excess_per_block * blocks);
    CHECK(r.patterns[2].before.excess_wavefronts == k.excess_per_block * blocks);  // .trans: same rows
    CHECK(r.patterns[1].after.wavefronts == 4 * blocks);
    check_all_free_after(r);
  }
  // seed 003: "a 16x64 FP16 matrix ... 4 blocks of 16x16 = 112 conflicts"
  CHECK(swz::evaluate_pattern({16, 128, 2}, swz::parse_access_pattern("ldmatrix")).excess_wavefronts == 112);
}

TEST_CASE("solver: seed 004 SGEMM A tile stored transposed -> Swizzle<1,4,4>") {
  // As holds BK = 8 rows of BM = 64 floats; the float4-load-then-scalar-store fill is tstore:4.
  const SolveResult r = solve({8, 256, 4}, {"tstore:4", "load:16"});
  REQUIRE(r.status == SolveStatus::Found);
  REQUIRE(r.swizzles.size() == 1);
  // Lanes differ in column bits 0-3 and in row bit 2 (innerColA): XOR row bit 2 (offset bit 8)
  // into column bit 4, the one bank bit the warp does not vary.
  CHECK(r.swizzles[0] == SwizzleSpec{1, 4, 4});
  CHECK(r.patterns[0].before.instructions == 16);
  CHECK(r.patterns[0].before.wavefronts == 32);
  CHECK(r.patterns[0].before.excess_wavefronts == 16);
  CHECK(r.patterns[0].before.max_way == 2);
  check_all_free_after(r);
  // The warp-tiled reads As[dotIdx*BM + warpRow*WM + wSubRowIdx*WSUBM + threadRowInWarp*TM + i]
  // stay conflict-free under the swizzle (each is a broadcast of 4 words of one row).
  for (int dot = 0; dot < 8; ++dot)
    for (int warp_row = 0; warp_row < 2; ++warp_row)
      for (int sub = 0; sub < 2; ++sub)
        for (int i = 0; i < 4; ++i) {
          swz::SmemInstruction in;
          for (int lane = 0; lane < 32; ++lane) {
            const long long off = dot * 64 + warp_row * 32 + sub * 16 + (lane / 8) * 4 + i;
            in.addresses.push_back(swz::tpl::swizzle_apply(off, 1, 4, 4) * 4);
          }
          CHECK(swz::analyze_bank(in).excess_wavefronts == 0);
        }
}

TEST_CASE("solver: seed 003 multi-layer problem needs a composition of two swizzles") {
  // 16 x 256 fp16: read as 16x16 blocks along the columns (ldmatrix) and with each row's 256
  // elements as a 16x16 block (ldmatrix.flat). The first needs row bits 8-10 XORed into the chunk
  // bits 3-5 (S = 5), the second needs offset bit 6 XORed into bit 3 (S = 3): no single
  // Swizzle<B,M,S> has both shifts.
  const SmemTile tile{16, 512, 2};
  const std::vector<std::string> names = {"store:16", "ldmatrix", "ldmatrix.flat"};
  swz::SolveOptions single;
  single.allow_composition = false;
  const SolveResult one = solve(tile, names, single);
  CHECK(one.status == SolveStatus::NotFound);
  CHECK(one.compositions_tried == 0);
  CHECK(one.patterns[1].after.excess_wavefronts == one.patterns[1].before.excess_wavefronts);

  const SolveResult r = solve(tile, names);
  REQUIRE(r.status == SolveStatus::Found);
  REQUIRE(r.swizzles.size() == 2);
  CHECK(r.swizzles[0] == SwizzleSpec{1, 3, 3});
  CHECK(r.swizzles[1] == SwizzleSpec{3, 3, 5});
  CHECK(r.patterns[1].before.excess_wavefronts == 16 * 28);
  CHECK(r.patterns[2].before.excess_wavefronts == 16 * 4);
  CHECK(r.patterns[2].before.max_way == 2);
  check_all_free_after(r);
  // either swizzle alone leaves one of the two reads conflicted
  CHECK(swz::evaluate_pattern(tile, swz::parse_access_pattern("ldmatrix.flat"), {SwizzleSpec{3, 3, 5}})
            .excess_wavefronts > 0);
  CHECK(swz::evaluate_pattern(tile, swz::parse_access_pattern("ldmatrix"), {SwizzleSpec{1, 3, 3}}).excess_wavefronts >
        0);
}

TEST_CASE("solver: none exists for float4 copies plus column reads of a 64x8 fp32 tile") {
  // store:16 needs M >= 2, so no swizzle touches offset bits 0-1; a column read's 32 lanes then
  // share those two bank bits and reach at most 8 banks: 4-way at best.
  const SolveResult r = solve({64, 32, 4}, {"store:16", "colread"});
  CHECK(r.status == SolveStatus::NotFound);
  CHECK(r.swizzles.empty());
  CHECK(r.singles_tried > 0);
  CHECK(r.compositions_tried > 0);
  CHECK(r.patterns[1].before.max_way == 8);
  CHECK(r.patterns[1].after.excess_wavefronts == r.patterns[1].before.excess_wavefronts);
  // without the vector store the same tile is solvable
  CHECK(solve({64, 32, 4}, {"store:4", "colread"}).status == SolveStatus::Found);
}

TEST_CASE("solver: a tile that is already free needs no swizzle; the order is deterministic") {
  const SolveResult r = solve({8, 128, 4}, {"store:16", "load:16"});
  CHECK(r.status == SolveStatus::IdentityIsFree);
  CHECK(r.swizzles.empty());
  CHECK(r.singles_tried == 0);
  const SolveResult a = solve({16, 512, 2}, {"ldmatrix", "ldmatrix.flat"});
  const SolveResult b = solve({16, 512, 2}, {"ldmatrix.flat", "ldmatrix"});
  CHECK(a.swizzles == b.swizzles);
}

TEST_CASE("solver: a pattern built in code with width 0 is an InvalidArgument, not SIGFPE (issue 10)") {
  SmemTile t;
  t.rows = 32;
  t.row_bytes = 128;
  t.elem_bytes = 4;
  for (auto kind : {AccessPattern::Kind::Store, AccessPattern::Kind::Load, AccessPattern::Kind::TransposedStore}) {
    AccessPattern p;
    p.kind = kind;
    p.width = 0;
    check_invalid([&] { swz::evaluate_pattern(t, p); }, "pattern");
    check_invalid([&] { swz::expand_pattern(t, p); }, "pattern");
    check_invalid([&] { swz::solve_swizzle(t, {p}); }, "pattern");
  }
}
