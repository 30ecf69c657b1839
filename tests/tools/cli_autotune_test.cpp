// tests/tools: `swz autotune` without a GPU (--compile-only): rows say "cached" when the kernel cache
// served a candidate, --seed is printed in every format, and --threads (the block size everywhere else)
// still means compile threads here for one release, with a warning.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "cli_formats.hpp"
#include "cli_support.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::TempDir;
using swz_test::json_valid;
using swz_test::parse_csv;
using swz_test::run_swz;

namespace {

const char kTune[] = "autotune transpose --rows 256 --cols 256 --compile-only --arch sm_80 --max-candidates 1 --quiet";

// The "kernel" column of every compiled row of a CSV report.
std::vector<std::string> kernel_column(const std::string& csv) {
  const auto rows = parse_csv(csv);
  std::vector<std::string> out;
  if (rows.empty()) return out;
  std::size_t status = 0, kernel = 0;
  for (std::size_t i = 0; i < rows[0].size(); ++i) {
    if (rows[0][i] == "status") status = i;
    if (rows[0][i] == "kernel") kernel = i;
  }
  for (std::size_t r = 1; r < rows.size(); ++r)
    if (rows[r][status] == "compiled") out.push_back(rows[r][kernel]);
  return out;
}

}  // namespace

TEST_CASE("swz autotune --compile-only: a fresh compile says compiled, a kernel-cache hit says cached") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const auto first = run_swz(std::string(kTune) + " --format csv", env);
  REQUIRE_MESSAGE(first.code == 0, first.err);
  const auto fresh = kernel_column(first.out);
  REQUIRE(fresh.size() >= 2);  // the default config and the first of the space
  for (const auto& k : fresh) CHECK(k == "compiled");

  const auto again = run_swz(std::string(kTune) + " --format csv", env);
  REQUIRE_MESSAGE(again.code == 0, again.err);
  const auto cached = kernel_column(again.out);
  CHECK(cached.size() == fresh.size());
  for (const auto& k : cached) CHECK(k == "cached");

  // the text table's rows and the JSON say so too
  const auto text = run_swz(kTune, env);
  REQUIRE_MESSAGE(text.code == 0, text.err);
  CHECK(text.out.find("  cached\n") != std::string::npos);
  CHECK(text.out.find("  compiled\n") == std::string::npos);
  CHECK(text.out.find("compiles 0, kernel cache hits") != std::string::npos);
  const auto json = run_swz(std::string(kTune) + " --format json", env);
  REQUIRE_MESSAGE(json.code == 0, json.err);
  std::vector<std::string> keys;
  CHECK(json_valid(json.out, &keys));
  REQUIRE(!keys.empty());
  CHECK(keys[0] == "swzjit_version");
  CHECK(json.out.find("\"status\": \"compiled\"") != std::string::npos);  // the library's status is unchanged
  CHECK(json.out.find("\"kernel_cached\": true") != std::string::npos);
  // every compiled candidate's kernel came from the cache this time
  std::size_t compiled = 0, hits = 0;
  for (std::size_t p = json.out.find("\"status\": \"compiled\""); p != std::string::npos;
       p = json.out.find("\"status\": \"compiled\"", p + 1)) {
    ++compiled;
    const std::string want = "\"kernel_cached\": true}";
    hits += json.out.compare(json.out.find("\"kernel_cached\": ", p), want.size(), want) == 0;
  }
  CHECK(compiled >= 2);
  CHECK(hits == compiled);

  // CSV rows all have the header's width; the problem (with commas) is quoted
  const auto rows = parse_csv(again.out);
  for (const auto& r : rows) CHECK(r.size() == rows[0].size());
  CHECK(again.out.find(",\"f32 256x256 batch=1 ld=256,256 stride=0,0 align=16\",") != std::string::npos);
}

TEST_CASE("swz autotune --seed: printed in text, JSON and CSV; the default is the stated fixed one") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const auto def = run_swz(std::string(kTune) + " --format json", env);
  REQUIRE_MESSAGE(def.code == 0, def.err);
  CHECK(def.out.find("\"seed\": 24301,") != std::string::npos);
  const auto seeded = run_swz(std::string(kTune) + " --seed 7 --format json", env);
  CHECK(seeded.out.find("\"seed\": 7,") != std::string::npos);
  const auto text = run_swz(std::string(kTune) + " --seed 4294967295", env);
  CHECK(text.code == 0);
  CHECK(text.out.find("(sm_80), seed 4294967295\n") != std::string::npos);
  const auto csv = parse_csv(run_swz(std::string(kTune) + " --seed 12 --format csv", env).out);
  REQUIRE(csv.size() >= 2);
  CHECK(csv[0][4] == "seed");
  CHECK(csv[1][4] == "12");
  for (const char* bad : {" --seed -1", " --seed 4294967296", " --seed x"}) {
    const auto r = run_swz(std::string(kTune) + bad, env);
    CHECK_MESSAGE(r.code == 2, bad);
    CHECK_MESSAGE(r.err.find("--seed") != std::string::npos, bad << " -> " << r.err);
  }
}

TEST_CASE("swz autotune --threads is the old spelling of --compile-threads: it works, with a warning") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const auto now = run_swz(std::string(kTune) + " --compile-threads 2", env);
  CHECK_MESSAGE(now.code == 0, now.err);
  CHECK(now.err.empty());
  const auto old = run_swz(std::string(kTune) + " --threads 2", env);
  CHECK_MESSAGE(old.code == 0, old.err);
  CHECK(old.err.find("warning: --threads is deprecated here") != std::string::npos);
  CHECK(old.err.find("use --compile-threads") != std::string::npos);
  const auto both = run_swz(std::string(kTune) + " --threads 2 --compile-threads 2", env);
  CHECK(both.code == 2);
  const auto range = run_swz(std::string(kTune) + " --compile-threads 5000", env);
  CHECK(range.code == 2);
  CHECK(range.err.find("--compile-threads") != std::string::npos);
}

TEST_CASE("swz autotune --problems --format csv: one header row for every problem's rows") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const std::string list = dir / "problems.txt";
  FILE* f = std::fopen(list.c_str(), "w");
  REQUIRE(f);
  std::fputs("transpose --rows 256 --cols 256\ntranspose --rows 512 --cols 256\n", f);
  std::fclose(f);
  const auto r = run_swz("autotune --problems " + list +
                             " --compile-only --arch sm_80 --max-candidates 1 --quiet --format csv",
                         env);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto rows = parse_csv(r.out);
  REQUIRE(rows.size() > 2);
  int headers = 0, first = 0, second = 0;
  for (const auto& row : rows) {
    CHECK(row.size() == rows[0].size());
    headers += row[0] == "family";
    if (row.size() > 1 && row[1].rfind("f32 256x256", 0) == 0) ++first;
    if (row.size() > 1 && row[1].rfind("f32 512x256", 0) == 0) ++second;
  }
  CHECK(headers == 1);
  CHECK(first > 0);
  CHECK(second > 0);
}

TEST_CASE("swz cache takes --cache-dir, as run and autotune spell it, for --dir") {
  TempDir dir;
  const auto a = run_swz("cache stats --format json --cache-dir " + (dir / "c"));
  CHECK_MESSAGE(a.code == 0, a.err);
  CHECK(a.out.find("\"directory\": \"" + (dir / "c") + "\"") != std::string::npos);
  const auto both = run_swz("cache stats --cache-dir " + (dir / "c") + " --dir " + (dir / "d"));
  CHECK(both.code == 2);
  CHECK(both.err.find("--cache-dir") != std::string::npos);
}
