// tests/runtime: the remote tier through the swz CLI, as separate processes: `swz cache warm
// --problems` from a shared redis-server (64 at once), `--shard i/n` coverage, problem-file and
// --shard errors, `swz cache stats` remote lines, and libhiredis never loaded without a remote.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/runtime/cache/remote_redis_util.hpp"
#include "tests/tools/cli_support.hpp"

using namespace swz_cache_test;
using swz_test::run_swz;

namespace {

const char kProblems[] =
    "# a model's shapes\n"
    "transpose --rows 4096 --cols 4096\n"
    "\n"
    "gemm --m 1024 --n 1024 --k 1024 --dtype f16   # attention\n"
    "transpose --rows 4096 --cols 4096\n";  // a repeat: warmed once

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string env_for(const std::string& dir, const std::string& url) {
  return "SWZJIT_CACHE_DIR=" + dir + " SWZJIT_REMOTE_CACHE=" + url +
         " SWZJIT_REMOTE_CACHE_KEY=cli-test-signing-key-0123456789abcdef SWZJIT_REMOTE_CACHE_TIMEOUT_MS=2000";
}

}  // namespace

TEST_CASE("remote cli: 64 processes with empty caches warm from one Redis with 0 compiles") {
  TempDir tmp;
  RedisServer redis(tmp.path(), {"--maxclients", "1000"});
  if (!redis.available()) {
    MESSAGE("skipped: redis-server not installed");
    return;
  }
  write_file(tmp / "model.txt", kProblems);
  // One CPU machine fills the kernel tier for sm_90 ...
  const auto first = run_swz("cache warm --problems " + (tmp / "model.txt") + " --arch sm_90 --json",
                             env_for(tmp / "filler", redis.url()));
  REQUIRE_MESSAGE(first.code == 0, first.err);
  CHECK(first.out.find("\"problems\": 2") != std::string::npos);
  CHECK(first.out.find("\"compiled\": 2") != std::string::npos);
  CHECK(first.out.find("\"remote_stores\": 2") != std::string::npos);
  // ... and 64 processes, each with its own empty local cache, start at once.
  const int kProcs = 64;
  std::string script = "cd " + tmp.path() + " && for i in $(seq 1 " + std::to_string(kProcs) + "); do (" +
                       env_for(tmp / "node$i", redis.url()) + " " + SWZ_TOOL_PATH + " cache warm --problems " +
                       (tmp / "model.txt") + " --arch sm_90 --json > out.$i 2> err.$i; echo $? > rc.$i) & done; wait";
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(std::system(script.c_str()) == 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int ok = 0;
  for (int i = 1; i <= kProcs; ++i) {
    const std::string n = std::to_string(i);
    const std::string out = read_file(tmp / ("out." + n));
    INFO("process " << i << ": " << out << read_file(tmp / ("err." + n)));
    CHECK(read_file(tmp / ("rc." + n)) == "0\n");
    CHECK(out.find("\"compiled\": 0") != std::string::npos);
    CHECK(out.find("\"remote_hits\": 2") != std::string::npos);
    CHECK(out.find("\"remote_errors\": 0") != std::string::npos);
    if (out.find("\"remote_hits\": 2") != std::string::npos) ++ok;
  }
  CHECK(ok == kProcs);
  MESSAGE(kProcs << " processes warmed 2 kernels each from one Redis in " << seconds << " s (all processes)");
}

TEST_CASE("remote cli: --shard i/n over n processes covers every problem exactly once") {
  TempDir tmp;
  std::string text = "# shapes\n";
  std::set<std::string> expected;
  for (int i = 1; i <= 23; ++i) {
    const std::string line = "gemm --m " + std::to_string(64 * i) + " --n 512 --k 256 --dtype f16";
    text += line + "\n";
    if (i % 5 == 0) text += line + "   # repeated\n";  // repeats are one problem
    expected.insert(line);
  }
  write_file(tmp / "p.txt", text);
  for (int n : {1, 2, 3, 4, 7, 23, 40}) {
    std::map<std::string, int> seen;
    for (int i = 0; i < n; ++i) {
      const auto r = run_swz("cache warm --list --problems " + (tmp / "p.txt") + " --shard " + std::to_string(i) + "/" +
                             std::to_string(n));
      REQUIRE_MESSAGE(r.code == 0, r.err);
      std::istringstream lines(r.out);
      for (std::string l; std::getline(lines, l);) ++seen[l.substr(l.find(": ") + 2)];
    }
    INFO("n = " << n);
    CHECK(seen.size() == expected.size());
    for (const auto& e : expected) CHECK(seen[e] == 1);
  }
}

TEST_CASE("remote cli: swz autotune --problems --shard runs each problem of its slice (compile-only)") {
  TempDir tmp;
  write_file(tmp / "p.txt", "transpose --rows 256 --cols 256\ntranspose --rows 512 --cols 256 --dtype f16\n"
                            "transpose --rows 256 --cols 512 --dtype bf16\n");
  std::map<std::string, int> seen;
  for (int i = 0; i < 2; ++i) {
    const auto r = run_swz("autotune --problems " + (tmp / "p.txt") + " --shard " + std::to_string(i) +
                               "/2 --compile-only --arch sm_90 --max-candidates 1 --quiet",
                           "SWZJIT_CACHE_DIR=" + (tmp / "c"));
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::istringstream lines(r.err);
    for (std::string l; std::getline(lines, l);)
      if (l.rfind("swz autotune: [", 0) == 0) ++seen[l.substr(l.find("p.txt:"))];
  }
  CHECK(seen.size() == 3);
  for (const auto& s : seen) CHECK(s.second == 1);
  CHECK(seen.count("p.txt:2: transpose --rows 512 --cols 256 --dtype f16") == 1);
}

TEST_CASE("remote cli: problem files and --shard are validated; errors name the line") {
  TempDir tmp;
  write_file(tmp / "bad.txt", "transpose --rows 64 --cols 64\n# fine\ngemm --m 64 --n x --k 64\n");
  auto r = run_swz("cache warm --problems " + (tmp / "bad.txt") + " --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("bad.txt:3") != std::string::npos);
  CHECK(r.err.find("--n") != std::string::npos);
  write_file(tmp / "family.txt", "\n\nconv --rows 4\n");
  r = run_swz("autotune --problems " + (tmp / "family.txt") + " --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("family.txt:3") != std::string::npos);
  write_file(tmp / "extra.txt", "transpose --rows 64 --cols 64 --bogus 1\n");
  r = run_swz("cache warm --problems " + (tmp / "extra.txt"));
  CHECK(r.code == 2);
  CHECK(r.err.find("extra.txt:1") != std::string::npos);
  write_file(tmp / "empty.txt", "# nothing\n\n");
  r = run_swz("cache warm --problems " + (tmp / "empty.txt"));
  CHECK(r.code == 2);
  CHECK(r.err.find("lists no problem") != std::string::npos);
  r = run_swz("cache warm --problems " + (tmp / "missing.txt"));
  CHECK(r.code == 2);
  CHECK(r.err.find("cannot read") != std::string::npos);
  write_file(tmp / "ok.txt", "transpose --rows 64 --cols 64\n");
  for (const char* shard : {"2/2", "0/0", "a/2", "1", "-1/2", "1/2/3", "0/100001"}) {
    r = run_swz("cache warm --list --problems " + (tmp / "ok.txt") + " --shard " + shard);
    INFO(shard << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("--shard") != std::string::npos);
  }
  r = run_swz("autotune transpose --rows 64 --cols 64 --shard 0/2 --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--problems") != std::string::npos);
  r = run_swz("cache warm --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--problems") != std::string::npos);
  r = run_swz("cache warm --help");
  CHECK(r.code == 0);
  CHECK(r.out.find("warm --problems FILE") != std::string::npos);
  CHECK(r.out.find("--shard i/n") != std::string::npos);
  r = run_swz("cache stats --remote");
  CHECK(r.code == 2);
  r = run_swz("cache stats --remote http://u:hunter2@x");
  CHECK(r.code == 2);
  CHECK(r.err.find("hunter2") == std::string::npos);
}

TEST_CASE("remote cli: stats shows the remote tier with the password redacted") {
  TempDir tmp;
  const auto r = run_swz("cache stats --dir " + (tmp / "c") + " --remote redis://alice:hunter2@127.0.0.1:1/2");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("remote:          redis://alice:***@127.0.0.1:1/2 (read-only") != std::string::npos);
  CHECK(r.out.find("hunter2") == std::string::npos);
  CHECK(r.err.find("hunter2") == std::string::npos);
  const auto j = run_swz("cache stats --json --dir " + (tmp / "c"),
                         "SWZJIT_REMOTE_CACHE=redis://127.0.0.1:1 SWZJIT_REMOTE_CACHE_KEY=k-0123456789abcdef0123456789abcdef");
  CHECK(j.out.find("\"remote_mode\": \"read-write\"") != std::string::npos);
  CHECK(j.out.find("\"remote_errors\": 0") != std::string::npos);
  CHECK(j.out.find("0123456789abcdef0123456789abcdef") == std::string::npos);
}

TEST_CASE("remote cli: libhiredis is loaded only when a remote cache is configured") {
  TempDir tmp;
  write_file(tmp / "p.txt", "transpose --rows 64 --cols 64\n");
  // LD_DEBUG=files names every library the dynamic loader maps, dlopen included.
  const auto without = run_swz("cache warm --problems " + (tmp / "p.txt") + " --arch sm_90",
                               "LD_DEBUG=files SWZJIT_CACHE_DIR=" + (tmp / "a"));
  REQUIRE_MESSAGE(without.code == 0, without.err);
  CHECK(without.err.find("libhiredis") == std::string::npos);
  CHECK(without.err.find("libsqlite3") != std::string::npos);  // the probe sees libraries at all
  const auto with = run_swz("cache warm --problems " + (tmp / "p.txt") + " --arch sm_90",
                            "LD_DEBUG=files SWZJIT_CACHE_DIR=" + (tmp / "b") + " SWZJIT_REMOTE_CACHE=redis://127.0.0.1:1");
  CHECK(with.code == 0);
  CHECK(with.err.find("libhiredis") != std::string::npos);
}
