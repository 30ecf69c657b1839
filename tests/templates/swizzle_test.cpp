// tests/templates: Swizzle<B,M,S> (templates/swizzle.cuh) against hand-worked tables (seed 002)
// and its invariants: bijection over its period, identity for B = 0, compile-time == run-time.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "templates/swizzle.cuh"

using swz::tpl::Layout2D;
using swz::tpl::Swizzle;
using swz::tpl::SwizzleRt;

namespace {

std::vector<long long> grid(const SwizzleRt& sw, const Layout2D& l) {
  std::vector<long long> out;
  for (long long r = 0; r < l.rows; ++r)
    for (long long c = 0; c < l.cols; ++c) out.push_back(swz::tpl::swizzled_offset(sw, l, r, c));
  return out;
}

}  // namespace

TEST_CASE("Swizzle<1,1,1> o (8,8):(8,1) matches seed 002") {
  const auto g = grid({1, 1, 1}, swz::tpl::make_row_major(8, 8));
  const std::vector<long long> row0 = {0, 1, 2, 3, 6, 7, 4, 5};
  const std::vector<long long> row7 = {56, 57, 58, 59, 62, 63, 60, 61};
  CHECK(std::vector<long long>(g.begin(), g.begin() + 8) == row0);
  CHECK(std::vector<long long>(g.begin() + 56, g.end()) == row7);
}

TEST_CASE("Swizzle<1,2,1> o (8,8):(8,1) matches seed 002") {
  const auto g = grid({1, 2, 1}, swz::tpl::make_row_major(8, 8));
  const std::vector<long long> row0 = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<long long> row1 = {12, 13, 14, 15, 8, 9, 10, 11};
  const std::vector<long long> row7 = {60, 61, 62, 63, 56, 57, 58, 59};
  CHECK(std::vector<long long>(g.begin(), g.begin() + 8) == row0);
  CHECK(std::vector<long long>(g.begin() + 8, g.begin() + 16) == row1);
  CHECK(std::vector<long long>(g.begin() + 56, g.end()) == row7);
}

TEST_CASE("Swizzle<2,1,2> o (8,8):(8,1): pairs permuted by the row's 2 bits") {
  // yyy = bits 3-4, zzz = bits 1-2: row r's pair index (c/2) is XORed with (r & 3).
  const auto g = grid({2, 1, 2}, swz::tpl::make_row_major(8, 8));
  const std::vector<long long> row1 = {10, 11, 8, 9, 14, 15, 12, 13};
  const std::vector<long long> row2 = {20, 21, 22, 23, 16, 17, 18, 19};
  const std::vector<long long> row3 = {30, 31, 28, 29, 26, 27, 24, 25};
  const std::vector<long long> row4 = {32, 33, 34, 35, 36, 37, 38, 39};
  CHECK(std::vector<long long>(g.begin() + 8, g.begin() + 16) == row1);
  CHECK(std::vector<long long>(g.begin() + 16, g.begin() + 24) == row2);
  CHECK(std::vector<long long>(g.begin() + 24, g.begin() + 32) == row3);
  CHECK(std::vector<long long>(g.begin() + 32, g.begin() + 40) == row4);
}

TEST_CASE("negative shift: Swizzle<1,0,-1> swaps within pairs, seed 002's hierarchical layout") {
  // Seed 002 prints ((2,2),(2,2)):((1,4),(2,8)) before and after Sw<1,0,-1>; row by row:
  const std::vector<std::vector<long long>> before = {{0, 2, 8, 10}, {1, 3, 9, 11}, {4, 6, 12, 14}, {5, 7, 13, 15}};
  const std::vector<std::vector<long long>> after = {{0, 2, 8, 10}, {3, 1, 11, 9}, {4, 6, 12, 14}, {7, 5, 15, 13}};
  const SwizzleRt sw{1, 0, -1};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) CHECK(sw(before[r][c]) == after[r][c]);
  // ... and Sw<1,0,1> on the same layout swaps the right-hand column of each 2x2 block.
  const std::vector<std::vector<long long>> pos = {{0, 3, 8, 11}, {1, 2, 9, 10}, {4, 7, 12, 15}, {5, 6, 13, 14}};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) CHECK(SwizzleRt{1, 0, 1}(before[r][c]) == pos[r][c]);
}

TEST_CASE("negative shift on a column-major layout") {
  // Sw<1,0,-1> o (4,4):(1,4): offset ^ ((offset & 1) << 1): odd rows swap offsets 1<->3 mod 4.
  const auto g = grid({1, 0, -1}, swz::tpl::make_col_major(4, 4));
  const std::vector<long long> want = {0, 4, 8, 12, 3, 7, 11, 15, 2, 6, 10, 14, 1, 5, 9, 13};
  CHECK(g == want);
  // Sw<2,1,-3> o (8,8) column-major: bits 1-2 (yyy) XORed into bits 4-5 (zzz).
  const auto h = grid({2, 1, -3}, swz::tpl::make_col_major(8, 8));
  CHECK(h[0 * 8 + 0] == 0);
  CHECK(h[2 * 8 + 0] == (2 ^ (1 << 4)));            // offset 2: yyy=01 -> zzz bit 4
  CHECK(h[6 * 8 + 1] == ((6 + 8) ^ (3 << 4)));      // offset 14 = 0b1110: yyy=11
}

TEST_CASE("compile-time Swizzle equals the run-time form and CuTe's masks") {
  constexpr Swizzle<3, 4, 3> sw;
  static_assert(Swizzle<3, 4, 3>::kYyyMask == (0b111 << 7), "yyy mask of Sw<3,4,3>");
  static_assert(Swizzle<3, 4, 3>::kZzzMask == (0b111 << 4), "zzz mask of Sw<3,4,3>");
  static_assert(Swizzle<2, 1, -3>::kYyyMask == (0b11 << 1), "negative shift: yyy is the low field");
  static_assert(Swizzle<2, 1, -3>::kZzzMask == (0b11 << 4), "negative shift: zzz is the high field");
  static_assert(sw(0b1010000000) == (0b1010000000 ^ (0b101 << 4)), "Sw<3,4,3> applied");
  for (long long x = 0; x < 4096; ++x) CHECK(sw(x) == SwizzleRt{3, 4, 3}(x));
  for (long long x = 0; x < 64; ++x) CHECK(SwizzleRt{0, 3, 0}(x) == x);  // B = 0 is the identity
}

TEST_CASE("every swizzle is a bijection of each aligned block of its period") {
  for (int b = 0; b <= 4; ++b)
    for (int m = 0; m <= 3; ++m)
      for (int s = -6; s <= 6; ++s) {
        if (!swz::tpl::swizzle_valid(b, m, s)) continue;
        const SwizzleRt sw{b, m, s};
        const long long period = 1LL << (b + m + swz::tpl::iabs(s));
        for (long long block = 0; block < 3; ++block) {
          std::set<long long> seen;
          for (long long x = block * period; x < (block + 1) * period; ++x) {
            const long long y = sw(x);
            CHECK(y >= block * period);
            CHECK(y < (block + 1) * period);
            seen.insert(y);
            CHECK(sw(y) == x);  // an XOR swizzle is its own inverse
          }
          CHECK(static_cast<long long>(seen.size()) == period);
        }
      }
}

TEST_CASE("iabs and swizzle_valid are defined for every int (no overflow, issue 10)") {
  static_assert(swz::tpl::iabs(-2147483647 - 1) == 2147483648LL, "iabs(INT_MIN) is 2^31");
  static_assert(swz::tpl::iabs(-5) == 5 && swz::tpl::iabs(7) == 7, "iabs");
  // B + M + |S| used to be computed in int: INT_MAX + 0 + INT_MAX wrapped negative and passed "<= 40".
  CHECK_FALSE(swz::tpl::swizzle_valid(2147483647, 0, 2147483647));
  CHECK_FALSE(swz::tpl::swizzle_valid(2147483647, 2147483647, -2147483647 - 1));
  CHECK_FALSE(swz::tpl::swizzle_valid(0, 2147483647, 0));
  CHECK(swz::tpl::swizzle_valid(3, 3, 3));
  CHECK(swz::tpl::swizzle_valid(10, 20, 10));
  CHECK_FALSE(swz::tpl::swizzle_valid(10, 21, 10));
}
