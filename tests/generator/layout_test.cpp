// tests/generator: swizzled layouts and their text/csv/svg renderings (generator/analysis/layout.cpp).
#include <doctest/doctest.h>

#include <climits>
#include <string>
#include <vector>

#include "swzjit/error.hpp"
#include "swzjit/analysis/layout.hpp"

namespace {

template <class F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const swz::Error& e) {
    return e.kind() == swz::ErrorKind::InvalidArgument ? std::string(e.what()) : std::string("wrong kind");
  }
  return "no error";
}

}  // namespace

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

TEST_CASE("SwizzleSpec validation and application never overflow (issue 10 item 6)") {
  // B + M + |S| in int wrapped for these; now each is an InvalidArgument saying why.
  CHECK(invalid_message([] { swz::SwizzleSpec{INT_MAX, 0, INT_MAX}.validate(); }).find("<= 40") != std::string::npos);
  CHECK(invalid_message([] { swz::SwizzleSpec{1, INT_MAX, INT_MIN}.validate(); }).find("<= 40") != std::string::npos);
  CHECK(invalid_message([] { swz::SwizzleSpec{0, 0, INT_MIN}.validate(); }).find("<= 40") != std::string::npos);
  // operator() on an invalid spec validates instead of shifting 1LL by 64 or more
  CHECK(invalid_message([] { (void)swz::SwizzleSpec{70, 0, 70}(5); }).find("swizzle") != std::string::npos);
  CHECK(swz::SwizzleSpec{1, 1, 1}(6) == 4);
  CHECK(swz::parse_swizzle("-0,0,0") == swz::SwizzleSpec{0, 0, 0});
  for (const char* bad : {" 3,3,3", "3, 3,3", "+3,3,3", "0x3,3,3", "3,3,3,", "3,3,"})
    CHECK_MESSAGE(invalid_message([&] { swz::parse_swizzle(bad); }).find("--swizzle") == 0, bad);
}

TEST_CASE("layouts with strides near LLONG_MAX are refused; SVG output is capped (issue 10)") {
  CHECK(invalid_message([] { swz::layout_offsets({0, 0, 0}, swz::LayoutSpec{4, 4, LLONG_MAX, 1}); }).find("strides") !=
        std::string::npos);
  CHECK(invalid_message([] { swz::layout_offsets({0, 0, 0}, swz::LayoutSpec{4, 4, 1, LLONG_MIN}); }) != "no error");
  CHECK(invalid_message([] { swz::LayoutSpec{LLONG_MAX, LLONG_MAX, 1, 1}.validate(); }).find("2^20") !=
        std::string::npos);
  // the largest strides allowed still give exact offsets and banks
  const auto offs = swz::layout_offsets({0, 0, 0}, swz::LayoutSpec{2, 2, 1LL << 30, -(1LL << 30)});
  CHECK(offs[3] == 0);
  CHECK(offs[1] == -(1LL << 30));
  CHECK(swz::format_layout_svg({0, 0, 0}, swz::LayoutSpec{2, 2, 1LL << 30, -(1LL << 30)}, 16).find("bank 0<") !=
        std::string::npos);
  // 1024x1024 made a 316 MB SVG; now refused with the limit and a way out
  const std::string m = invalid_message([] { swz::format_layout_svg({3, 3, 3}, swz::LayoutSpec::row_major(1024, 1024), 4); });
  CHECK(m.find("at most 16384 cells") != std::string::npos);
  CHECK(m.find("smaller --shape") != std::string::npos);
  CHECK(swz::format_layout_svg({3, 3, 3}, swz::LayoutSpec::row_major(128, 128), 4).size() < 8000000);
}

TEST_CASE("svg is well-formed XML: the swizzle's angle brackets are escaped") {
  const std::string svg = swz::format_layout_svg({3, 3, 3}, swz::LayoutSpec::row_major(8, 64), 2);
  CHECK(svg.find("Sw&lt;3,3,3&gt;") != std::string::npos);
  // Outside tags no '<' or '>' may stand, and every tag is closed or self-closed in order.
  std::vector<std::string> open;
  std::size_t pos = 0;
  while (pos < svg.size()) {
    const std::size_t lt = svg.find('<', pos);
    const std::string text = svg.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
    CHECK(text.find('>') == std::string::npos);
    if (lt == std::string::npos) break;
    const std::size_t gt = svg.find('>', lt);
    REQUIRE(gt != std::string::npos);
    const std::string tag = svg.substr(lt + 1, gt - lt - 1);
    REQUIRE(!tag.empty());
    CHECK(tag.find('<') == std::string::npos);
    if (tag[0] == '/') {
      REQUIRE(!open.empty());
      CHECK(open.back() == tag.substr(1));
      open.pop_back();
    } else if (tag.back() != '/' && tag[0] != '?' && tag[0] != '!') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    pos = gt + 1;
  }
  CHECK(open.empty());
}
