// tests/runtime: the cache's keys, round trips, tuning results and explanations
// (runtime/cache*.cpp); corruption, environment, concurrency and maintenance have their own files.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <thread>

#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::make_entry;
using swz_cache_test::make_key;
using swz_cache_test::settings_for;
using swz_cache_test::TempDir;
using swz_cache_test::WarningLog;

namespace {

swz::KernelKey base_key() {
  swz::KernelKey k;
  k.format_version = 1;
  k.templates_hash = "tpl";
  k.name_expression = "swz::k<1>";
  k.nvrtc_version = "12.4";
  k.options = {"-O3", "--std=c++17"};
  k.arch = "sm_90";
  return k;
}

swz::TuningProblemKey base_problem() {
  swz::TuningProblemKey p;
  p.operation = "transpose";
  p.problem = "f32 16384x8192 rm->rm align16";
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.arch = "sm_90";
  p.sm_count = 132;
  p.nvrtc_version = "12.4";
  p.templates_hash = "tpl";
  return p;
}

}  // namespace

TEST_CASE("cache: each kernel key field changes the key, alone") {
  const swz::KernelKey base = base_key();
  std::vector<swz::KernelKey> variants;
  auto vary = [&](auto change) {
    swz::KernelKey k = base;
    change(k);
    variants.push_back(k);
  };
  vary([](swz::KernelKey& k) { k.format_version = 2; });
  vary([](swz::KernelKey& k) { k.templates_hash = "tpm"; });
  vary([](swz::KernelKey& k) { k.name_expression = "swz::k<2>"; });
  vary([](swz::KernelKey& k) { k.nvrtc_version = "12.5"; });
  vary([](swz::KernelKey& k) { k.options = {"-O3"}; });
  vary([](swz::KernelKey& k) { k.options.push_back("-lineinfo"); });
  vary([](swz::KernelKey& k) { k.options = {"--std=c++17", "-O3"}; });  // order matters to NVRTC
  vary([](swz::KernelKey& k) { k.options = {"-O3 --std=c++17"}; });
  vary([](swz::KernelKey& k) { k.options = {}; });
  vary([](swz::KernelKey& k) { k.arch = "sm_90a"; });
  std::set<std::string> hashes{base.hash()};
  for (const auto& v : variants) {
    CHECK(v.hash() != base.hash());
    hashes.insert(v.hash());
  }
  CHECK(hashes.size() == variants.size() + 1);
  // 32 lowercase hex digits
  const std::string h = base.hash();
  CHECK(h.size() == 32);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("cache: kernel key fields are length-prefixed (no concatenation collisions)") {
  swz::KernelKey a = base_key(), b = base_key();
  a.templates_hash = "ab";
  a.name_expression = "c";
  b.templates_hash = "a";
  b.name_expression = "bc";
  CHECK(a.hash() != b.hash());
  std::set<std::string> seen;
  for (const std::vector<std::string>& opts : std::vector<std::vector<std::string>>{
           {"ab", "c"}, {"a", "bc"}, {"abc"}, {"ab", "c", ""}, {}, {""}, {"", ""}}) {
    swz::KernelKey k = base_key();
    k.options = opts;
    CHECK(seen.insert(k.hash()).second);
  }
  // a field's bytes cannot leak into the next field either
  swz::KernelKey c = base_key(), d = base_key();
  c.nvrtc_version = "12.4sm_90";
  c.arch = "";
  d.nvrtc_version = "12.4";
  d.arch = "sm_90";
  CHECK(c.hash() != d.hash());
}

TEST_CASE("cache: nothing but the fields enters the key (time, process, cache path)") {
  const swz::KernelKey k = base_key();
  const std::string h = k.hash();
  // Golden value: the encoding is part of the on-disk format; changing it needs a new kCacheFormatVersion.
  CHECK(h == "b3edb3f31a5fc0ae3bbbc58fc108e844");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(k.hash() == h);

  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string child = base_key().hash();
    const ssize_t n = write(fds[1], child.data(), child.size());
    _exit(n == static_cast<ssize_t>(child.size()) ? 0 : 1);
  }
  close(fds[1]);
  char buf[64] = {};
  const ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0) == h);

  TempDir a, b;
  WarningLog log;
  {
    swz::Cache ca(settings_for(a.path(), log)), cb(settings_for(b.path(), log));
    ca.store(k, make_entry(1));
    cb.store(k, make_entry(1));
    REQUIRE(ca.list_kernels().size() == 1);
    REQUIRE(cb.list_kernels().size() == 1);
    CHECK(ca.list_kernels()[0].key == h);
    CHECK(cb.list_kernels()[0].key == h);
  }
  CHECK(log.size() == 0);
}

TEST_CASE("cache: each tuning problem field changes the problem key") {
  const swz::TuningProblemKey base = base_problem();
  std::vector<std::function<void(swz::TuningProblemKey&)>> changes = {
      [](swz::TuningProblemKey& p) { p.operation = "sgemm"; },
      [](swz::TuningProblemKey& p) { p.problem = "f32 16384x8192 rm->rm align8"; },
      [](swz::TuningProblemKey& p) { p.device_name = "NVIDIA H200"; },
      [](swz::TuningProblemKey& p) { p.arch = "sm_90a"; },
      [](swz::TuningProblemKey& p) { p.sm_count = 114; },
      [](swz::TuningProblemKey& p) { p.nvrtc_version = "12.5"; },
      [](swz::TuningProblemKey& p) { p.templates_hash = "tpm"; },
  };
  std::set<std::string> hashes{base.hash()};
  for (const auto& change : changes) {
    swz::TuningProblemKey p = base;
    change(p);
    CHECK(p.hash() != base.hash());
    hashes.insert(p.hash());
  }
  CHECK(hashes.size() == changes.size() + 1);
  CHECK(base_problem().hash() == base.hash());
  CHECK(swz::search_space_hash({"a", "b", "c"}) == swz::search_space_hash({"c", "a", "b"}));
  CHECK(swz::search_space_hash({"a", "b"}) != swz::search_space_hash({"a", "b", "c"}));
  CHECK(swz::search_space_hash({"ab", "c"}) != swz::search_space_hash({"a", "bc"}));
}

TEST_CASE("cache: a stored kernel loads back byte for byte, in this object and the next") {
  TempDir dir;
  WarningLog log;
  const swz::KernelKey k = make_key(7);
  swz::KernelEntry e = make_entry(7, 70000);
  e.image[0] = '\0';  // binary, NULs included
  swz::KernelEntry ptx = make_entry(8, 0);
  ptx.is_ptx = true;
  ptx.image = ".version 8.4\n.target sm_90\n";
  {
    swz::Cache c(settings_for(dir.path(), log));
    CHECK(c.stats().mode == "disk");
    CHECK_FALSE(c.load(k).has_value());
    CHECK(c.counters().misses == 1);
    c.store(k, e);
    c.store(make_key(8), ptx);
    const auto back = c.load(k);
    REQUIRE(back.has_value());
    CHECK(*back == e);
    CHECK(c.counters().hits == 1);
    const swz::CacheStats s = c.stats();
    CHECK(s.kernel_entries == 2);
    CHECK(s.kernel_bytes == e.image.size() + e.lowered_name.size() + ptx.image.size() + ptx.lowered_name.size());
    CHECK(s.database.find(dir.path()) == 0);
  }
  swz::Cache again(settings_for(dir.path(), log));
  const auto back = again.load(k);
  REQUIRE(back.has_value());
  CHECK(*back == e);
  const auto back_ptx = again.load(make_key(8));
  REQUIRE(back_ptx.has_value());
  CHECK(back_ptx->is_ptx);
  CHECK(*back_ptx == ptx);
  // a different arch is a different kernel
  CHECK_FALSE(again.load(make_key(7, "sm_80")).has_value());
  // get_or_build on a stored key never calls the builder
  int calls = 0;
  const swz::KernelEntry got = again.get_or_build(k, [&] {
    ++calls;
    return make_entry(0);
  });
  CHECK(calls == 0);
  CHECK(got == e);
  CHECK(log.size() == 0);
  struct stat st;
  REQUIRE(stat(dir.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);  // created 0700 by mkdtemp; the cache never loosens it
}

TEST_CASE("cache: the directory is created with mode 0700") {
  TempDir dir;
  WarningLog log;
  const std::string nested = dir / "a/b/swzjit";
  swz::Cache c(settings_for(nested, log));
  CHECK(c.stats().mode == "disk");
  struct stat st;
  REQUIRE(stat(nested.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(log.size() == 0);
}

TEST_CASE("cache: adding a config to the search space re-measures only the new config") {
  TempDir dir;
  WarningLog log;
  const swz::TuningProblemKey p = base_problem();
  int measured = 0;
  auto tune = [&](swz::Cache& c, const std::vector<std::string>& space) {
    const auto known = c.load_candidates(p);
    for (const auto& config : space) {
      if (known.count(config)) continue;
      ++measured;
      swz::CandidateResult r;
      r.config = config;
      r.status = config == "bad" ? "compile-failed" : "ok";
      r.reason = config == "bad" ? "error: too many resources" : "";
      r.median_ms = config == "bad" ? std::numeric_limits<double>::infinity() : 1.0 + config.size();
      r.p20_ms = r.median_ms * 0.9;
      r.p80_ms = config == "bad" ? std::numeric_limits<double>::quiet_NaN() : r.median_ms * 1.1;
      r.repetitions = 50;
      c.store_candidate(p, r);
    }
  };
  const std::vector<std::string> space1 = {"t32x8", "t64x4", "bad"};
  {
    swz::Cache c(settings_for(dir.path(), log));
    tune(c, space1);
    c.store_winner(p, swz::search_space_hash(space1), "t32x8", 6.0);
  }
  CHECK(measured == 3);
  std::vector<std::string> space2 = space1;
  space2.push_back("t16x16");
  swz::Cache c(settings_for(dir.path(), log));
  tune(c, space2);
  CHECK(measured == 4);  // only the new config
  const auto all = c.load_candidates(p);
  REQUIRE(all.size() == 4);
  CHECK(all.at("bad").status == "compile-failed");
  CHECK(std::isinf(all.at("bad").median_ms));
  CHECK(std::isnan(all.at("bad").p80_ms));  // NaN survives SQLite (stored as NULL) and its checksum
  CHECK(all.at("t64x4").repetitions == 50);
  // re-storing a config replaces it (one row per config)
  swz::CandidateResult again = all.at("t64x4");
  again.median_ms = 0.5;
  c.store_candidate(p, again);
  CHECK(c.load_candidates(p).at("t64x4").median_ms == 0.5);
  CHECK(c.stats().candidates == 4);
  // winners are per search space
  const auto w1 = c.load_winner(p, swz::search_space_hash(space1));
  REQUIRE(w1.has_value());
  CHECK(w1->config == "t32x8");
  CHECK(w1->median_ms == 6.0);
  CHECK_FALSE(c.load_winner(p, swz::search_space_hash(space2)).has_value());
  CHECK(c.counters().tuning_hits == 1);
  CHECK(c.counters().tuning_misses == 1);
  // another device's problem shares nothing
  swz::TuningProblemKey other = p;
  other.sm_count = 114;
  CHECK(c.load_candidates(other).empty());
  // statuses are checked
  swz::CandidateResult wrong = again;
  wrong.status = "fast";
  CHECK_THROWS_AS(c.store_candidate(p, wrong), swz::Error);
  CHECK(log.size() == 0);
}

TEST_CASE("cache: explain names the key fields that differ") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  const swz::KernelKey k = make_key(3);
  c.store(k, make_entry(3));
  const swz::Explanation hit = c.explain(k);
  CHECK(hit.found);
  CHECK(hit.summary.rfind("hit:", 0) == 0);

  swz::KernelKey newer = k;
  newer.nvrtc_version = "12.6";
  swz::Explanation e = c.explain(newer);
  CHECK_FALSE(e.found);
  REQUIRE(e.near_misses.size() == 1);
  REQUIRE(e.near_misses[0].differences.size() == 1);
  CHECK(e.near_misses[0].differences[0].field == "nvrtc_version");
  CHECK(e.near_misses[0].differences[0].wanted == "12.6");
  CHECK(e.near_misses[0].differences[0].stored == "12.4");
  CHECK(e.text().find("nvrtc_version") != std::string::npos);

  swz::KernelKey two = k;
  two.templates_hash = "feed";
  two.options.push_back("-lineinfo");
  e = c.explain(two);
  REQUIRE(e.near_misses.size() == 1);
  REQUIRE(e.near_misses[0].differences.size() == 2);
  CHECK(e.near_misses[0].differences[0].field == "templates_hash");
  CHECK(e.near_misses[0].differences[1].field == "options");

  e = c.explain(make_key(4));
  CHECK_FALSE(e.found);
  CHECK(e.near_misses.empty());
  CHECK(e.summary.find("no stored kernel has the name expression") != std::string::npos);

  // tuning: same problem measured on another device; a changed search space
  const swz::TuningProblemKey p = base_problem();
  c.store_winner(p, "space-1", "t32x8", 1.0);
  swz::TuningProblemKey a100 = p;
  a100.device_name = "NVIDIA A100";
  a100.sm_count = 108;
  e = c.explain(a100, "space-1");
  CHECK_FALSE(e.found);
  REQUIRE(e.near_misses.size() == 1);
  REQUIRE(e.near_misses[0].differences.size() == 2);
  CHECK(e.near_misses[0].differences[0].field == "device_name");
  CHECK(e.near_misses[0].differences[1].field == "sm_count");
  CHECK(c.explain(p, "space-1").found);
  e = c.explain(p, "space-2");
  CHECK_FALSE(e.found);
  CHECK(e.summary.find("search space") != std::string::npos);
}

TEST_CASE("cache: settings come from the environment in order") {
  const char* names[] = {"SWZJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "SWZJIT_CACHE_MAX_BYTES"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  for (const char* n : names) {
    const char* v = std::getenv(n);
    saved.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
  }
  setenv("HOME", "/home/someone", 1);
  unsetenv("SWZJIT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("SWZJIT_CACHE_MAX_BYTES");
  CHECK(swz::CacheSettings::from_environment().directory == "/home/someone/.cache/swzjit");
  CHECK(swz::CacheSettings::from_environment().max_bytes == swz::kDefaultCacheMaxBytes);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  CHECK(swz::CacheSettings::from_environment().directory == "/xdg/swzjit");
  setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  CHECK(swz::CacheSettings::from_environment().directory == "/home/someone/.cache/swzjit");
  setenv("SWZJIT_CACHE_DIR", "/explicit", 1);
  setenv("SWZJIT_CACHE_MAX_BYTES", "10M", 1);
  CHECK(swz::CacheSettings::from_environment().directory == "/explicit");
  CHECK(swz::CacheSettings::from_environment().max_bytes == 10u << 20);
  for (const auto& s : saved) {
    if (s.second)
      setenv(s.first.c_str(), s.second->c_str(), 1);
    else
      unsetenv(s.first.c_str());
  }
}

TEST_CASE("cache: byte sizes parse with K/M/G/T suffixes and reject the rest") {
  CHECK(swz::parse_byte_size("0") == 0);
  CHECK(swz::parse_byte_size("1234") == 1234);
  CHECK(swz::parse_byte_size("10M") == 10ull << 20);
  CHECK(swz::parse_byte_size("1g") == 1ull << 30);
  CHECK(swz::parse_byte_size("512KiB") == 512ull << 10);
  CHECK(swz::parse_byte_size("2T") == 2ull << 40);
  for (const char* bad : {"", "M", "12Q", "-1", "1.5G", "99999999999999999999", "20000000T", "1 G"})
    CHECK_THROWS_AS(swz::parse_byte_size(bad), swz::Error);
}
