// tests/tools: one --format spelling on every `swz` command (tools/output.cpp): JSON objects that parse
// and name the library's version first, --json as an alias, CSV tables with a header row and one row per
// result (quoted only when needed), and formats a command does not print refused with exit 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_formats.hpp"
#include "cli_support.hpp"
#include "generator/families/registry.hpp"
#include "swzjit/version.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::TempDir;
using swz_test::json_valid;
using swz_test::parse_csv;
using swz_test::run_swz;

namespace {

// Commands that print results without a GPU, each with the options that make it print something.
std::vector<std::string> json_commands(const std::string& dir) {
  return {
      "bank --op lds --addresses 0,128,256",
      "solve --rows 32 --row-bytes 128 --pattern store:4,colread",
      "layout --swizzle 5,0,5 --shape 4,4",
      "layout --swizzle 5,0,5 --shape 32,32 --highlight lds:col=0",
      "analyze transpose",
      "analyze gemm --dtype f16",
      "analyze rowsum",
      "info",
      "cache stats --dir " + dir,
      "cache ls --dir " + dir,
      "cache verify --dir " + dir,
      "cache check --dir " + dir,
      "cache gc --max-size 1G --dir " + dir,
      "cache explain 'f32 64x64' --dir " + dir,
  };
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("every JSON object swz prints parses and names the library's version first; --json = --format json") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const std::string version_member = std::string("\"swzjit_version\": \"") + SWZJIT_VERSION_STRING + "\"";
  for (const std::string& cmd : json_commands(dir / "cache")) {
    const auto r = run_swz(cmd + " --format json", env);
    REQUIRE_MESSAGE(r.code == 0, cmd << ": " << r.err);
    std::vector<std::string> keys;
    CHECK_MESSAGE(json_valid(r.out, &keys), cmd << " printed invalid JSON: " << r.out.substr(0, 400));
    REQUIRE_MESSAGE(!keys.empty(), cmd);
    CHECK_MESSAGE(keys[0] == "swzjit_version", cmd);
    CHECK_MESSAGE(r.out.find(version_member) != std::string::npos, cmd);
    const auto alias = run_swz(cmd + " --json", env);
    CHECK_MESSAGE(alias.code == 0, cmd);
    // (the database file grows as it is used: stats' file_bytes may differ between the two runs)
    if (cmd.rfind("cache stats", 0) != 0) CHECK_MESSAGE(alias.out == r.out, cmd << ": --json differs from --format json");
  }
  // Existing keys stay: swz info still says "version", swz bank still starts its counts with "op".
  const auto info = run_swz("info --format json", env);
  CHECK(info.out.find(std::string("\"version\": \"") + SWZJIT_VERSION_STRING + "\"") != std::string::npos);
  const auto bank = run_swz("bank --op lds --addresses 0,128 --json");
  CHECK(bank.out.find(version_member + ", \"op\":\"lds\",\"width\":4,\"lanes\":2,\"wavefronts\":2") == 1);
  // family ls stays an array; each family's object carries the version.
  const auto ls = run_swz("family ls --format json");
  CHECK(ls.code == 0);
  CHECK(json_valid(ls.out));
  CHECK(ls.out.front() == '[');
  CHECK(count(ls.out, version_member) == count(ls.out, "\"family\":"));
  CHECK(count(ls.out, "\"family\": \"rowsum\"") == 1);
}

TEST_CASE("swz compile prints one JSON object or one CSV row, with the version") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const std::string cfg = "compile transpose --config f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5 --arch sm_80";
  const auto j = run_swz(cfg + " --json", env);
  REQUIRE_MESSAGE(j.code == 0, j.err);
  std::vector<std::string> keys;
  CHECK(json_valid(j.out, &keys));
  REQUIRE(keys.size() > 2);
  CHECK(keys[0] == "swzjit_version");
  CHECK(keys[1] == "config");
  const auto c = run_swz(cfg + " --format csv", env);
  REQUIRE_MESSAGE(c.code == 0, c.err);
  const auto rows = parse_csv(c.out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0][0] == "config");
  CHECK(rows[0].size() == rows[1].size());
  CHECK(rows[1][0] == "f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5");
  CHECK(rows[1][1] == "sm_80");
  CHECK(rows[1][2] == "cubin");
  // the config holds commas, so it is quoted; the arch is not
  CHECK(c.out.find("\n\"f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5\",sm_80,cubin,") != std::string::npos);
}

TEST_CASE("CSV: a header row, then one row per result, plain values quoted only when needed") {
  // bank: one row per phase (8-byte stores: two phases of 16 lanes)
  const auto b = run_swz("bank --op sts --width 8 --addresses 0,8,16,24,32,40,48,56,64,72,80,88,96,104,112,120,128 "
                         "--format csv");
  REQUIRE_MESSAGE(b.code == 0, b.err);
  auto rows = parse_csv(b.out);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == std::vector<std::string>{"op", "width", "lanes", "phase", "first_lane", "lane_count",
                                            "active_lanes", "wavefronts", "ideal_wavefronts", "excess_wavefronts",
                                            "max_way", "worst_bank"});
  CHECK(rows[1][3] == "0");
  CHECK(rows[2][3] == "1");
  CHECK(rows[2][4] == "16");
  CHECK(b.out.find('"') == std::string::npos);  // nothing needed quoting

  // solve: one row per pattern; the swizzle's name holds commas and is quoted
  const auto s = run_swz("solve --rows 32 --row-bytes 128 --pattern store:4,colread --format csv");
  REQUIRE_MESSAGE(s.code == 0, s.err);
  rows = parse_csv(s.out);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1][4] == "Swizzle<5,0,5>");
  CHECK(rows[1][5] == "store:4");
  CHECK(rows[2][5] == "colread");
  CHECK(rows[2][7] == "1024");  // column reads before: 32-way on 32 instructions
  CHECK(rows[2][11] == "32");   // after: 1 wavefront each
  CHECK(s.out.find(",\"Swizzle<5,0,5>\",colread,") != std::string::npos);

  // analyze: one row per instruction, as many as the JSON lists
  for (const std::string fam : {"transpose", "gemm", "rowsum"}) {
    const auto csv = run_swz("analyze " + fam + " --format csv");
    const auto json = run_swz("analyze " + fam + " --format json");
    REQUIRE_MESSAGE(csv.code == 0, fam << ": " << csv.err);
    rows = parse_csv(csv.out);
    REQUIRE(rows.size() >= 2);
    CHECK(rows[0][0] == "family");
    CHECK(rows[0][2] == "instruction");
    CHECK_MESSAGE(rows.size() - 1 == count(json.out, "\"excess_wavefronts\"") - 1, fam);
    for (const auto& row : rows) CHECK(row.size() == rows[0].size());
    CHECK(json.out.find("\"config\": \"" + rows[1][1] + "\"") != std::string::npos);
  }

  // family ls: one row per family; the description holds commas, quoted
  const auto f = run_swz("family ls --format csv");
  rows = parse_csv(f.out);
  REQUIRE(rows.size() >= 2);
  CHECK(rows[0] == std::vector<std::string>{"family", "dims", "params", "space", "about"});
  std::vector<std::string> names;
  for (std::size_t i = 1; i < rows.size(); ++i) names.push_back(rows[i][0]);
  // The built-ins, by name: the library's own list (so adding a family does not touch this test).
  std::vector<std::string> builtins;
  for (const swz::detail::FamilyDefinition define : swz::detail::builtin_family_definitions())
    builtins.push_back(define().name);
  std::sort(builtins.begin(), builtins.end());
  CHECK(names == builtins);
  for (const char* known : {"gemm_sm90", "hgemm", "rowsum", "sgemm", "transpose"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), known) != names.end(), known);

  // a cache with nothing in it: the header alone
  TempDir dir;
  const auto ls = run_swz("cache ls --format csv --dir " + (dir / "cache"));
  CHECK(ls.code == 0);
  rows = parse_csv(ls.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0][0] == "kind");
  const auto st = run_swz("cache stats --format csv --dir " + (dir / "cache"));
  rows = parse_csv(st.out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1][4] == "0");  // kernel_entries
}

TEST_CASE("a format a command does not print is refused: exit 2, one line naming the accepted values") {
  TempDir dir;
  struct Case {
    std::string args, needle;
  } cases[] = {
      {"gen transpose --format json", "(allowed: text)"},
      {"gen transpose --json", "accepted --format values: text"},
      {"gen rowsum --format csv", "(allowed: text)"},
      {"info --format csv", "(allowed: text|json)"},
      {"family show rowsum --format json", "(allowed: text)"},
      {"cache clear --format csv --dir " + (dir / "c"), "(accepted: text)"},
      {"cache export x.db --format json --dir " + (dir / "c"), "(accepted: text)"},
      {"bank --op lds --addresses 0 --json --format csv", "--json contradicts --format csv"},
      {"layout --swizzle 1,1,1 --shape 8,8 --format png", "text|json|csv|svg"},
      {"analyze transpose --format xml", "text|json|csv"},
      {"layout --swizzle 1,1,1 --shape 8,8 --format csv --highlight lds:col=0", "--highlight"},
  };
  for (const auto& c : cases) {
    const auto r = run_swz(c.args);
    CHECK_MESSAGE(r.code == 2, c.args);
    CHECK_MESSAGE(r.err.find(c.needle) != std::string::npos, c.args << " -> " << r.err);
    CHECK_MESSAGE(r.err.find('\n') == r.err.size() - 1, c.args);
    CHECK_MESSAGE(r.out.empty(), c.args);
  }
}

TEST_CASE("every command's --help shows --format with the values it accepts") {
  const auto top = run_swz("--help");
  std::size_t line = top.out.find('\n', top.out.find("commands:")) + 1;
  int seen = 0;
  while (line < top.out.size() && top.out.compare(line, 2, "  ") == 0) {
    const std::size_t end = top.out.find(' ', line + 2);
    const std::string name = top.out.substr(line + 2, end - line - 2);
    const auto h = run_swz(name + " --help");
    CHECK_MESSAGE(h.out.find("--format") != std::string::npos, name);
    ++seen;
    line = top.out.find('\n', line) + 1;
  }
  CHECK(seen >= 10);
}
