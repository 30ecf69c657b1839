// tests/generator: swizzled layouts and their text/csv/svg renderings (generator/layout.cpp).
#include <doctest/doctest.h>

#include "swzjit/error.hpp"
#include "swzjit/layout.hpp"

TEST_CASE("layout_offsets composes the layout first, then the swizzle") {
  const auto offs = swz::layout_offsets({2, 1, 2}, swz::LayoutSpec{8, 8, 8, 1});
  REQUIRE(offs.size() == 64);
  CHECK(offs[8] == 10);
  CHECK(offs[9] == 11);
  // arbitrary strides: (4,4):(1,4) is column-major
  const auto a = swz::layout_offsets({1, 0, -1}, swz::LayoutSpec{4, 4, 1, 4});
  const auto b = swz::layout_offsets({1, 0, -1}, swz::LayoutSpec::col_major(4, 4));
  CHECK(a == b);
  CHECK(a[4] == 3);
}

TEST_CASE("parse_swizzle accepts B,M,S and rejects bad input with a named argument") {
  CHECK(swz::parse_swizzle("3,3,3") == swz::SwizzleSpec{3, 3, 3});
  CHECK(swz::parse_swizzle("1,0,-1") == swz::SwizzleSpec{1, 0, -1});
  auto msg = [](const std::string& t) {
    try {
      swz::parse_swizzle(t);
    } catch (const swz::Error& e) {
      CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(msg("3,3,2").find("|S|") != std::string::npos);
  CHECK(msg("3,3").find("B,M,S") != std::string::npos);
  CHECK(msg("3,x,3").find("B,M,S") != std::string::npos);
  CHECK(msg("3,3,3,3").find("more than three") != std::string::npos);
  CHECK(msg("-1,0,1").find("B") != std::string::npos);
}

TEST_CASE("csv has R lines of C integers and nothing else") {
  const std::string csv = swz::format_layout_csv({1, 1, 1}, swz::LayoutSpec::row_major(2, 8));
  CHECK(csv == "0,1,2,3,6,7,4,5\n8,9,10,11,14,15,12,13\n");
}

TEST_CASE("text looks like print_layout and svg colours by bank") {
  const std::string text = swz::format_layout_text({1, 1, 1}, swz::LayoutSpec::row_major(8, 8));
  CHECK(text.find("Sw<1,1,1> o _0 o (8,8):(8,1)") == 0);
  CHECK(text.find("|  6 |") != std::string::npos);
  const std::string svg = swz::format_layout_svg({5, 0, 5}, swz::LayoutSpec::row_major(32, 32), 4);
  CHECK(svg.find("<svg") == 0);
  // In a 32x32 fp32 tile swizzled with x^y, column 0 holds 32 distinct banks.
  for (int bank = 0; bank < 32; ++bank) CHECK(svg.find("bank " + std::to_string(bank) + "<") != std::string::npos);
  CHECK_THROWS_AS(swz::format_layout_svg({0, 0, 0}, swz::LayoutSpec::row_major(2, 2), 3), swz::Error);
  CHECK_THROWS_AS(swz::layout_offsets({0, 0, 0}, swz::LayoutSpec{-1, 2, 2, 1}), swz::Error);
}
