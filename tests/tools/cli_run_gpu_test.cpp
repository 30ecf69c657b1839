// tests/tools: `swz run` and `swz autotune` on a GPU: --seed draws the data and is printed (the default
// as --help states it), --format json|csv report the same run, and a tune's candidates are verified on
// the seeded data.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_formats.hpp"
#include "cli_support.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::TempDir;
using swz_test::json_valid;
using swz_test::parse_csv;
using swz_test::run_swz;

TEST_CASE("swz run transpose --seed: printed, verified, and the default is 0x5eed0000 + 131*R + C") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const std::string base = "run transpose --rows 300 --cols 200 --reps 3";
  const auto def = run_swz(base + " --format json", env);
  REQUIRE_MESSAGE(def.code == 0, def.err);
  std::vector<std::string> keys;
  CHECK(json_valid(def.out, &keys));
  REQUIRE(!keys.empty());
  CHECK(keys[0] == "swzjit_version");
  CHECK(def.out.find("\"seed\": " + std::to_string(0x5eed0000LL + 131 * 300 + 200) + ",") != std::string::npos);
  CHECK(def.out.find("\"verified\": true") != std::string::npos);
  const auto seeded = run_swz(base + " --seed 7", env);
  REQUIRE_MESSAGE(seeded.code == 0, seeded.err);
  CHECK(seeded.out.find("seed         7 (random input)") != std::string::npos);
  const auto csv = run_swz(base + " --seed 9 --format csv", env);
  REQUIRE_MESSAGE(csv.code == 0, csv.err);
  const auto rows = parse_csv(csv.out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0][4] == "seed");
  CHECK(rows[1][4] == "9");
  CHECK(rows[1][5] == "true");
}

TEST_CASE("swz run gemm --seed and --format json|csv") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const std::string base = "run gemm --m 128 --n 96 --k 64 --reps 2";
  const auto def = run_swz(base + " --json", env);
  REQUIRE_MESSAGE(def.code == 0, def.err);
  CHECK(json_valid(def.out));
  CHECK(def.out.find("\"seed\": 1,") != std::string::npos);  // the stated default
  CHECK(def.out.find("\"verified\": true") != std::string::npos);
  const auto csv = run_swz(base + " --seed 5 --format csv", env);
  REQUIRE_MESSAGE(csv.code == 0, csv.err);
  const auto rows = parse_csv(csv.out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1][4] == "5");
  CHECK(rows[1][5] == "true");
}

TEST_CASE("swz autotune transpose --seed: the tune verifies on the seeded data and reports the seed") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  const std::string base = "autotune transpose --rows 512 --cols 512 --max-candidates 2 --quiet";
  const auto def = run_swz(base + " --format json", env);
  REQUIRE_MESSAGE(def.code == 0, def.err);
  CHECK(def.out.find("\"seed\": 24301,") != std::string::npos);
  const auto seeded = run_swz(base + " --seed 99 --format csv", env);
  REQUIRE_MESSAGE(seeded.code == 0, seeded.err);
  const auto rows = parse_csv(seeded.out);
  REQUIRE(rows.size() >= 2);
  CHECK(rows[1][4] == "99");
  CHECK(rows[1][6] == "ok");
  // The re-timed rows come first, with their re-time beside the first pass; the winner is one of them.
  const auto column = [&](const std::string& name) {
    const auto it = std::find(rows[0].begin(), rows[0].end(), name);
    REQUIRE(it != rows[0].end());
    return static_cast<std::size_t>(it - rows[0].begin());
  };
  const std::size_t retime = column("retime_ms"), winner = column("winner"), median = column("median_ms");
  CHECK_FALSE(rows[1][retime].empty());
  int winners = 0;
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (rows[i][winner] == "true") {
      ++winners;
      CHECK_FALSE(rows[i][retime].empty());
      CHECK_FALSE(rows[i][median].empty());
    }
  CHECK(winners == 1);
  const auto table = run_swz(base + " --seed 99", env);  // the text table: the same tune, reused from the cache
  REQUIRE_MESSAGE(table.code == 0, table.err);
  CHECK(table.out.find("re-time ms") != std::string::npos);
  CHECK(table.out.find("<- winner") != std::string::npos);
}
