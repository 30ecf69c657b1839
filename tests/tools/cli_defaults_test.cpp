// tests/tools: the defaults `swz <command> --help` states are the ones the command uses: for each option,
// the output without it equals the output with the stated default given explicitly (and another value
// changes the output, so the comparison can fail).
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_test::run_swz;

namespace {

// The text after "(default" on the help lines of `--option` (up to the next option line), trimmed of
// ": " and ")"; "" when the help states none.
std::string help_default(const std::string& help, const std::string& option) {
  std::size_t p = help.find("  --" + option + " ");
  if (p == std::string::npos) return "";
  const std::size_t next = help.find("\n  --", p + 4);
  const std::string block = help.substr(p, next == std::string::npos ? std::string::npos : next - p);
  const std::size_t d = block.find("(default");
  if (d == std::string::npos) return "";
  std::size_t start = d + 8;
  while (start < block.size() && (block[start] == ':' || block[start] == ' ')) ++start;
  const std::size_t end = block.find(')', start);
  std::string v = block.substr(start, end - start);
  const std::size_t semi = v.find(';');  // "(default 4); ldmatrix is 16" stops at ')'; "(default 0: one per core)"
  if (semi != std::string::npos) v = v.substr(0, semi);
  const std::size_t colon = v.find(':');
  if (colon != std::string::npos && v.find(',') == std::string::npos) v = v.substr(0, colon);
  return v;
}

// "f32 64x64, f16 32x128, bf16 32x128" -> {f32: 64x64, f16: 32x128, bf16: 32x128}
std::map<std::string, std::string> per_dtype(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t p = 0;
  while (p < text.size()) {
    std::size_t comma = text.find(", ", p);
    const std::string item = text.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    const std::size_t sp = item.find(' ');
    if (sp != std::string::npos) out[item.substr(0, sp)] = item.substr(sp + 1);
    if (comma == std::string::npos) break;
    p = comma + 2;
  }
  return out;
}

struct Case {
  std::string command;  // whose --help states the default
  std::string base;     // a run that uses the default
  std::string option;
  std::string other;    // another value, which must change the output
};

void check_default(const Case& c, const std::string& stated) {
  INFO(c.base << " --" << c.option << " (help: default " << stated << ")");
  REQUIRE(!stated.empty());
  const auto plain = run_swz(c.base);
  const auto given = run_swz(c.base + " --" + c.option + " " + stated);
  const auto other = run_swz(c.base + " --" + c.option + " " + c.other);
  REQUIRE_MESSAGE(plain.code == 0, plain.err);
  CHECK_MESSAGE(given.code == 0, given.err);
  CHECK(plain.out == given.out);
  CHECK_MESSAGE(other.out != plain.out, "--" << c.option << " " << c.other << " changed nothing");
}

}  // namespace

TEST_CASE("the defaults --help states for layout, bank, solve and the gemm config are the ones used") {
  const std::vector<Case> cases = {
      {"layout", "layout --swizzle 3,3,3 --shape 8,64 --format svg", "elem-bytes", "2"},
      {"layout", "layout --swizzle 1,0,-1 --shape 4,4", "order", "col"},
      {"bank", "bank --op lds --addresses 0,128,256,384", "width", "8"},
      {"solve", "solve --rows 32 --row-bytes 128 --pattern store:4,colread", "elem-bytes", "8"},
      {"solve", "solve --rows 32 --row-bytes 128 --pattern store:4,colread", "max-bits", "4"},
      {"analyze", "analyze gemm", "dtype", "f16"},
      {"analyze", "analyze gemm", "layout", "NT"},
      {"analyze", "analyze transpose", "dtype", "f16"},
      {"analyze", "analyze transpose", "smem", "plain"},
      {"analyze", "analyze transpose --format json", "cache", "cs"},
  };
  for (const Case& c : cases) {
    const auto help = run_swz(c.command + " --help");
    REQUIRE(help.code == 0);
    check_default(c, help_default(help.out, c.option));
  }
}

TEST_CASE("the transpose config defaults --help states per dtype are each dtype's default config") {
  // gen, compile, analyze and run share the config options; each states the same defaults.
  const auto help = run_swz("analyze --help");
  for (const char* other : {"gen", "compile", "run"}) {
    const auto h = run_swz(std::string(other) + " --help");
    for (const char* opt : {"tile", "threads", "vec", "raster"})
      CHECK_MESSAGE(help_default(h.out, opt) == help_default(help.out, opt), other << " --" << opt);
  }
  const std::map<std::string, std::string> others = {{"tile", "32x32"}, {"threads", "512"}, {"vec", "1"},
                                                     {"raster", "0"}};
  int checked = 0;
  for (const char* opt : {"tile", "threads", "vec", "raster"}) {
    const auto stated = per_dtype(help_default(help.out, opt));
    CHECK_MESSAGE(stated.size() == 3, opt << ": " << help_default(help.out, opt));
    for (const auto& kv : stated) {
      const std::string other = std::string(opt) == "raster" ? (kv.second == "0" ? "1" : "0") : others.at(opt);
      check_default({"analyze", "analyze transpose --dtype " + kv.first + " --format json", opt, other}, kv.second);
      ++checked;
    }
  }
  CHECK(checked == 12);
  // And the config analyze prints with no options carries them (f32's).
  const auto a = run_swz("analyze transpose --format json");
  const auto f32 = [&](const char* opt) { return per_dtype(help_default(help.out, opt)).at("f32"); };
  CHECK(a.out.find("\"config\": \"f32,tile=" + f32("tile") + ",threads=" + f32("threads") + ",vec=" + f32("vec") +
                   ",") != std::string::npos);
}

TEST_CASE("autotune: the stated --compile-threads and --seed defaults are the ones used") {
  const auto help = run_swz("autotune --help");
  CHECK(help_default(help.out, "compile-threads") == "0");
  CHECK(help_default(help.out, "timeout-s") == "10");
  CHECK(help_default(help.out, "top") == "10");
  const std::string seeds = help_default(help.out, "seed");
  CHECK(seeds.find("24301 = 0x5EED") != std::string::npos);
  // What a tune reports is that seed, for a GEMM as for a transpose (compile-only: no GPU needed).
  for (const char* family : {"gemm --m 64 --n 64 --k 64", "transpose --rows 64 --cols 64"}) {
    swz_cache_test::TempDir dir;
    const auto r = run_swz(std::string("autotune ") + family + " --compile-only --arch sm_80 --max-candidates 1 --json --quiet",
                           "SWZJIT_CACHE_DIR=" + (dir / "cache"));
    CAPTURE(family);
    CHECK(r.code == 0);
    CHECK(r.out.find("\"seed\": 24301") != std::string::npos);
  }
}

TEST_CASE("autotune: the report says why not every config ran, --max-candidates or the time budget") {
  swz_cache_test::TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const auto capped =
      run_swz("autotune transpose --rows 256 --cols 256 --compile-only --arch sm_80 --max-candidates 1 --quiet", env);
  CHECK(capped.code == 0);
  CHECK(capped.out.find("--max-candidates 1: only the first 1 of the space's") != std::string::npos);
  CHECK(capped.out.find("time budget") == std::string::npos);
  // A budget already spent when the first compile comes back: the default is still compiled, nothing else.
  const auto timed = run_swz("autotune transpose --rows 256 --cols 256 --compile-only --arch sm_80 --budget-s 0.000001 --quiet", env);
  CHECK(timed.code == 0);
  CHECK(timed.out.find("time budget exhausted (--budget-s 1e-06): not every candidate was measured") != std::string::npos);
  CHECK(timed.out.find("--max-candidates") == std::string::npos);
}
