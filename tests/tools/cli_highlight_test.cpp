// tests/tools: `swz layout --highlight` (tools/layout_highlight.cpp): one warp instruction drawn on a
// swizzled tile -- the cells its lanes touch, their banks and wavefronts -- in text, JSON and SVG.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli_formats.hpp"
#include "cli_support.hpp"

using swz_test::json_valid;
using swz_test::run_swz;
using swz_test::xml_well_formed;

namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The number after `"key":` in a JSON text (the first one).
long long json_int(const std::string& json, const std::string& key) {
  // swz bank writes "key":N, the others "key": N
  std::size_t p = json.find("\"" + key + "\":");
  REQUIRE_MESSAGE(p != std::string::npos, key);
  p += key.size() + 3;
  while (p < json.size() && json[p] == ' ') ++p;
  return std::stoll(json.substr(p));
}

const char kPlain[] = "layout --swizzle 0,0,0 --shape 32,32 --highlight lds:col=0";
const char kSwizzled[] = "layout --swizzle 5,0,5 --shape 32,32 --highlight lds:col=0";

}  // namespace

TEST_CASE("a transpose's column read of a 32x32 f32 tile: 32 wavefronts plain, 1 swizzled") {
  const auto plain = run_swz(std::string(kPlain) + " --format json");
  const auto swz = run_swz(std::string(kSwizzled) + " --format json");
  REQUIRE_MESSAGE(plain.code == 0, plain.err);
  REQUIRE_MESSAGE(swz.code == 0, swz.err);
  CHECK(json_valid(plain.out));
  CHECK(json_valid(swz.out));
  const std::string hp = plain.out.substr(plain.out.find("\"highlight\": "));
  const std::string hs = swz.out.substr(swz.out.find("\"highlight\": "));
  CHECK(json_int(hp, "wavefronts") == 32);
  CHECK(json_int(hp, "max_way") == 32);
  CHECK(json_int(hp, "excess_wavefronts") == 31);
  CHECK(json_int(hs, "wavefronts") == 1);
  CHECK(json_int(hs, "excess_wavefronts") == 0);
  // The same logical cells in both: lane i touches (i, 0), exactly one cell each.
  for (int lane = 0; lane < 32; ++lane) {
    const std::string l = "\"lane\": " + std::to_string(lane) + ", ";
    for (const std::string* h : {&hp, &hs}) {
      const std::size_t p = h->find(l);
      REQUIRE(p != std::string::npos);
      const std::string rest = h->substr(p, h->find('}', p) - p);
      CHECK_MESSAGE(rest.find("\"cells\": [[" + std::to_string(lane) + ", 0]]") != std::string::npos, rest);
    }
    // plain: every lane in bank 0, lane i served by wavefront i; swizzled: bank i, all in wavefront 0
    CHECK(hp.find(l + "\"address\": " + std::to_string(lane * 128) + ", \"bank\": 0, \"issued\": true, "
                  "\"phase\": 0, \"wavefront\": " + std::to_string(lane) + ",") != std::string::npos);
    CHECK(hs.find(l + "\"address\": " + std::to_string((lane * 32 + lane) * 4) + ", \"bank\": " +
                  std::to_string(lane) + ", \"issued\": true, \"phase\": 0, \"wavefront\": 0,") != std::string::npos);
  }
}

TEST_CASE("the highlight's cost is swz bank's for the same addresses") {
  // ldmatrix.x4 of a 16x16 fp16 block of a 16x64 tile with 128-byte rows: 8-way plain, free with Sw<3,3,3>.
  for (const std::string sw : {"0,0,0", "3,3,3"}) {
    const auto h = run_swz("layout --swizzle " + sw + " --shape 16,64 --elem-bytes 2 --highlight ldmatrix.x4:at=0,0 "
                           "--format json");
    REQUIRE_MESSAGE(h.code == 0, h.err);
    std::string addresses;
    std::size_t p = 0;
    for (int lane = 0; lane < 32; ++lane) {
      p = h.out.find("\"address\": ", p);
      REQUIRE(p != std::string::npos);
      p += 11;
      addresses += (lane ? "," : "") + std::to_string(std::stoll(h.out.substr(p)));
    }
    const auto b = run_swz("bank --op ldmatrix.x4 --addresses " + addresses + " --format json");
    REQUIRE_MESSAGE(b.code == 0, b.err);
    const std::string hl = h.out.substr(h.out.find("\"highlight\": "));
    CHECK(json_int(hl, "wavefronts") == json_int(b.out, "wavefronts"));
    CHECK(json_int(hl, "max_way") == json_int(b.out, "max_way"));
    CHECK(json_int(hl, "wavefronts") == (sw == "0,0,0" ? 32 : 4));
    // each ldmatrix lane gives one 16-byte row: 8 fp16 cells
    CHECK(count(hl, "], [") >= 32 * 7);
  }
}

TEST_CASE("the text picture marks each lane's cell and lists the wavefronts") {
  const auto plain = run_swz(kPlain);
  REQUIRE_MESSAGE(plain.code == 0, plain.err);
  CHECK(plain.out.find("Sw<0,0,0> o _0 o (32,32)") == 0);  // the layout grid first, as without --highlight
  CHECK(plain.out.find("highlight lds:col=0: lds, 4 bytes per lane, 32 lane(s)") != std::string::npos);
  CHECK(plain.out.find("phase 0 (lanes 0-31): 32 wavefront(s), ideal 1") != std::string::npos);
  CHECK(plain.out.find("  wavefront 31: lane 31 (bank 0)\n") != std::string::npos);
  CHECK(plain.out.find("total: 32 wavefront(s), ideal 1, excess 31, worst bank 0: 32-way") != std::string::npos);
  // row 5 of the lane map: lane 5 in column 0, nothing elsewhere
  CHECK(plain.out.find("\n 5 |   5   .   .") != std::string::npos);
  const auto swz = run_swz(kSwizzled);
  CHECK(swz.out.find("  wavefront 0: lanes 0-31 (banks 0-31)\n") != std::string::npos);
  CHECK(swz.out.find("total: 1 wavefront(s), ideal 1, excess 0") != std::string::npos);
}

TEST_CASE("the highlighted SVG is well-formed and outlines exactly the lanes' cells") {
  for (const char* base : {kPlain, kSwizzled}) {
    const auto r = run_swz(std::string(base) + " --format svg");
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::string why;
    CHECK_MESSAGE(xml_well_formed(r.out, &why), base << ": " << why);
    CHECK(r.out.find("<svg") == 0);
    CHECK(count(r.out, "<g class=\"lane\">") == 32);
    CHECK(count(r.out, "<g class=\"cell\">") == 32 * 31);
    for (int lane = 0; lane < 32; ++lane)
      CHECK(r.out.find("<title>(" + std::to_string(lane) + ",0) ") != std::string::npos);
  }
  const auto plain = run_swz(std::string(kPlain) + " --format svg");
  CHECK(plain.out.find("32 wavefront(s), ideal 1, excess 31") != std::string::npos);
  CHECK(plain.out.find(", lane 7, wavefront 7</title>") != std::string::npos);
  const auto swz = run_swz(std::string(kSwizzled) + " --format svg");
  CHECK(swz.out.find("1 wavefront(s), ideal 1, excess 0") != std::string::npos);
  CHECK(swz.out.find(", lane 7, wavefront 0</title>") != std::string::npos);
  CHECK(swz.out.find("Sw&lt;5,0,5&gt;") != std::string::npos);
}

TEST_CASE("--highlight addresses as swz bank takes them, and its errors") {
  const auto r = run_swz("layout --swizzle 0,0,0 --shape 8,8 --highlight lds:0,32,64,96,128,160,192,224");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("total: 2 wavefront(s), ideal 1, excess 1, worst bank 0: 2-way") != std::string::npos);
  const auto bank = run_swz("bank --op lds --addresses 0,32,64,96,128,160,192,224");
  CHECK(bank.out.find("total: 2 wavefront(s), ideal 1, excess 1, worst bank 2-way") != std::string::npos);
  struct Case {
    const char* args;
    const char* needle;
  } cases[] = {
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight col=0", "no ':'"},
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight ldx:col=0", "'ldx' is not an instruction"},
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight lds:col=8", "--highlight"},
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight lds:at=0,0", "at=R,C is for ldmatrix"},
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight ldmatrix.x4:col=0", "ldmatrix takes at=R,C"},
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight ldmatrix.x4:at=0,0", "outside the 8x8 tile"},
      {"layout --swizzle 0,0,0 --shape 8,8 --highlight lds:1,2", "--highlight: addresses"},
  };
  for (const auto& c : cases) {
    const auto e = run_swz(c.args);
    CHECK_MESSAGE(e.code == 2, c.args);
    CHECK_MESSAGE(e.err.find(c.needle) != std::string::npos, c.args << " -> " << e.err);
    CHECK_MESSAGE(e.out.empty(), c.args);
  }
}
