// tests/runtime: `swz cache` run as a user would (tools/cmd_cache.cpp over runtime/cache*.cpp):
// JSON output, gc, export/import, explain, and exit code 2 for bad usage.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "swzjit/cache.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/tools/cli_support.hpp"

using swz_cache_test::make_entry;
using swz_cache_test::make_key;
using swz_test::run_swz;
using swz_cache_test::settings_for;
using swz_cache_test::TempDir;
using swz_cache_test::WarningLog;

namespace {

std::string env_for(const std::string& dir) { return "SWZJIT_CACHE_DIR='" + dir + "'"; }

void populate(const std::string& dir) {
  WarningLog log;
  swz::Cache c(settings_for(dir, log));
  c.store(make_key(1), make_entry(1));
  c.store(make_key(2), make_entry(2));
  swz::TuningProblemKey p;
  p.operation = "transpose";
  p.problem = "f32 256x256";
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.arch = "sm_90";
  p.sm_count = 132;
  c.store_candidate(p, swz::CandidateResult{"t32x8", "ok", "", 0.5, 0.4, 0.6, 20});
  c.store_winner(p, "space-1", "t32x8", 0.5);
}

}  // namespace

TEST_CASE("swz cache: stats --json, ls --json, gc --max-size 0") {
  TempDir dir;
  populate(dir.path());
  auto r = run_swz("cache stats --json", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("\"kernel_entries\": 2,") != std::string::npos);
  CHECK(r.out.find("\"mode\": \"disk\"") != std::string::npos);
  CHECK(r.out.find("\"tuning_problems\": 1,") != std::string::npos);
  CHECK(r.out.find("\"directory\": \"" + dir.path() + "\"") != std::string::npos);
  CHECK(r.err.empty());

  r = run_swz("cache ls --json", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find(make_key(1).hash()) != std::string::npos);
  CHECK(r.out.find(make_key(2).hash()) != std::string::npos);
  CHECK(r.out.find("\"space-1\": {\"config\": \"t32x8\"") != std::string::npos);

  r = run_swz("cache ls", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("kernels: 2") != std::string::npos);

  r = run_swz("cache gc --max-size 0 --json", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("\"evicted_entries\": 2") != std::string::npos);
  r = run_swz("cache stats --json", env_for(dir.path()));
  CHECK(r.out.find("\"kernel_entries\": 0,") != std::string::npos);
  CHECK(r.out.find("\"tuning_problems\": 1,") != std::string::npos);  // gc evicts kernels only

  r = run_swz("cache gc --max-size 10M", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("evicted 0 kernel entries") != std::string::npos);
}

TEST_CASE("swz cache: bad usage exits 2 and touches nothing") {
  TempDir dir;
  const std::string fresh = dir / "never-created";
  for (const char* args : {"cache", "cache frobnicate", "cache gc", "cache gc --max-size", "cache gc --max-size 12Q",
                           "cache gc --max-size -5", "cache ls --bogus", "cache stats --max-size 1", "cache export",
                           "cache import", "cache clear --json", "cache ls extra", "cache explain",
                           "cache explain kernel", "cache explain kernel --name x --sm-count 3",
                           "cache explain tuning", "cache explain tuning --problem p --sm-count many"}) {
    CAPTURE(args);
    const auto r = run_swz(args, env_for(fresh));
    CHECK(r.code == 2);
    CHECK(r.err.find("swz cache: error:") != std::string::npos);
  }
  struct stat st;
  CHECK(stat(fresh.c_str(), &st) != 0);  // usage errors are found before the cache is opened
}

TEST_CASE("swz cache: --help explains every action with examples") {
  const auto r = run_swz("cache --help");
  CHECK(r.code == 0);
  for (const char* word : {"ls", "stats", "verify", "gc --max-size", "clear", "export FILE", "import FILE",
                           "explain kernel", "explain tuning", "--json", "examples:", "SWZJIT_CACHE_DIR"})
    CHECK(r.out.find(word) != std::string::npos);
  const auto top = run_swz("--help");
  CHECK(top.out.find("cache") != std::string::npos);
}

TEST_CASE("swz cache: verify, export, clear, import, explain") {
  TempDir dir, files;
  populate(dir.path());
  const std::string file = files / "out.swzdb";
  auto r = run_swz("cache verify --json", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("\"kernels_checked\": 2") != std::string::npos);
  r = run_swz("cache export '" + file + "'", env_for(dir.path()));
  CHECK(r.code == 0);
  r = run_swz("cache clear", env_for(dir.path()));
  CHECK(r.code == 0);
  r = run_swz("cache stats --json", env_for(dir.path()));
  CHECK(r.out.find("\"kernel_entries\": 0,") != std::string::npos);
  r = run_swz("cache import '" + file + "' --json", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("\"kernels_added\": 2") != std::string::npos);
  r = run_swz("cache --dir '" + dir.path() + "' stats --json");  // --dir instead of the environment
  CHECK(r.out.find("\"kernel_entries\": 2,") != std::string::npos);

  const swz::KernelKey k = make_key(1);
  r = run_swz("cache explain kernel --name '" + k.name_expression + "' --arch sm_80 --json", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("\"found\": false") != std::string::npos);
  CHECK(r.out.find("\"field\": \"arch\", \"wanted\": \"sm_80\", \"stored\": \"sm_90\"") != std::string::npos);
  CHECK(r.out.find("nvrtc_version") == std::string::npos);  // not given: matches any

  r = run_swz("cache explain 'f32 256x256' --device 'NVIDIA A100' --space-hash space-1", env_for(dir.path()));
  CHECK(r.code == 0);
  CHECK(r.out.find("device_name: wanted 'NVIDIA A100', stored 'NVIDIA H100 80GB HBM3'") != std::string::npos);

  r = run_swz("cache import '" + files / "missing" + "'", env_for(dir.path()));
  CHECK(r.code == 1);
  CHECK(r.err.find("cannot read") != std::string::npos);
}

TEST_CASE("swz cache: an insecure directory is reported once and nothing is written") {
  TempDir dir;
  const std::string shared = dir / "shared";
  REQUIRE(mkdir(shared.c_str(), 0777) == 0);
  REQUIRE(chmod(shared.c_str(), 0777) == 0);
  const auto r = run_swz("cache stats --json", env_for(shared));
  CHECK(r.code == 0);
  CHECK(r.out.find("\"mode\": \"memory\"") != std::string::npos);
  std::size_t warnings = 0;
  for (std::size_t pos = r.err.find("swzjit: warning:"); pos != std::string::npos;
       pos = r.err.find("swzjit: warning:", pos + 1))
    ++warnings;
  CHECK(warnings == 1);
  CHECK(swz_cache_test::files_in(shared).empty());
}
