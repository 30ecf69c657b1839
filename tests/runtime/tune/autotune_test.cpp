// tests/runtime: the autotuner's CPU side (runtime/autotune*.cpp, tools/cmd_autotune.cpp): the space
// after the static checks, the deterministic winner choice, time statistics, and the offline warm-up:
// a compile-only tune fills the kernel cache so that a second process compiles nothing.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "generator/families/transpose/transpose_family.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/transpose.hpp"
#include "tests/tools/cli_support.hpp"

using namespace swz;

namespace {

std::string temp_cache_dir() {
  char tmpl[] = "/tmp/swz_autotune_test_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

// The integer after the first `"key": ` in a JSON text (-1 if absent).
long long json_int(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

std::vector<std::string> strings_of(const std::vector<TransposeConfig>& configs) {
  std::vector<std::string> out;
  for (const auto& c : configs) out.push_back(c.to_string());
  return out;
}

TransposeProblem small_problem() {
  TransposeProblem p;
  p.dtype = DType::F32;
  p.rows = 256;
  p.cols = 512;
  return p;
}

}  // namespace

TEST_CASE("the tuning space drops bank-conflicted configs unless asked to keep them") {
  for (DType t : {DType::F32, DType::F16}) {
    CAPTURE(to_string(t));
    const detail::TuningSpace filtered = detail::select_transpose_space(t, 16, /*keep_conflicted=*/false);
    const detail::TuningSpace kept_all = detail::select_transpose_space(t, 16, /*keep_conflicted=*/true);
    REQUIRE(!filtered.kept.empty());
    CHECK(!filtered.rejected.empty());
    for (const auto& c : filtered.kept) CHECK_MESSAGE(analyze_transpose(c).excess() == 0, c.to_string());
    for (const auto& r : filtered.rejected) {
      CHECK(analyze_transpose(r.first).excess() > 0);
      CHECK(r.second.find("excess wavefronts") != std::string::npos);
    }
    // Nothing lost, nothing invented: the filter only splits the generator's space.
    CHECK(kept_all.rejected.empty());
    CHECK(kept_all.kept.size() == filtered.kept.size() + filtered.rejected.size());
    CHECK(kept_all.kept.size() == transpose_search_space(t, 16, true).size());
    bool has_plain = false;
    for (const auto& c : kept_all.kept) has_plain |= c.smem == SmemLayout::Plain;
    CHECK(has_plain);
    // The engine's default space is the filtered one, and its hash ignores order.
    CHECK(strings_of(transpose_tuning_space(t, 16)) == strings_of(filtered.kept));
    std::vector<TransposeConfig> reversed(filtered.kept.rbegin(), filtered.kept.rend());
    CHECK(space_hash_of(reversed) == space_hash_of(filtered.kept));
    CHECK(space_hash_of(kept_all.kept) != space_hash_of(filtered.kept));
  }
  // The alignment caps the vector width.
  for (const auto& c : transpose_tuning_space(DType::F32, 8)) CHECK(c.vec * 4 <= 8);
}

TEST_CASE("extra configs join the space at its end; duplicates, misfits and wrong dtypes are handled") {
  const auto base = transpose_tuning_space(DType::F32, 16);
  const std::string plain = "f32,tile=32x32,threads=256,vec=4,smem=plain";  // conflicted, but asked for
  const std::string dup = base.front().to_string();
  const std::string wide = "f32,tile=32x32,threads=256,vec=4,smem=pad:1";
  const detail::TuningSpace s = detail::select_transpose_space(DType::F32, 16, false, {plain, dup});
  REQUIRE(s.kept.size() == base.size() + 1);
  CHECK(s.kept.back().to_string() == plain);
  CHECK(space_hash_of(s.kept) != space_hash_of(base));
  // With only 8-byte alignment a 16-byte vector cannot run: rejected, with the reason.
  const detail::TuningSpace narrow = detail::select_transpose_space(DType::F32, 8, false, {wide});
  bool rejected = false;
  for (const auto& r : narrow.rejected)
    if (r.first.to_string() == wide) rejected = r.second.find("aligned") != std::string::npos;
  CHECK(rejected);
  CHECK_THROWS_AS(detail::select_transpose_space(DType::F32, 16, false, {"f16,tile=32x32,threads=256,vec=8,smem=plain"}),
                  Error);
  CHECK_THROWS_AS(detail::select_transpose_space(DType::F32, 16, false, {"not a config"}), Error);
}

TEST_CASE("the winner is the fastest, near-ties (within 1%) go to the earliest in the space, in any input order") {
  using detail::RankedCandidate;
  CHECK(detail::choose_winner({}) == -1);
  // A clear winner wins whatever its position.
  std::vector<RankedCandidate> clear{{"a", 1.50, 0}, {"b", 1.00, 9}, {"c", 1.30, 3}};
  CHECK(clear[static_cast<std::size_t>(detail::choose_winner(clear))].config == "b");
  // b is 0.5% slower than a but earlier in the space: a near-tie, b wins.
  std::vector<RankedCandidate> tie{{"a", 1.000, 7}, {"b", 1.005, 2}, {"c", 1.200, 0}};
  CHECK(tie[static_cast<std::size_t>(detail::choose_winner(tie))].config == "b");
  // 2% is not a tie.
  std::vector<RankedCandidate> apart{{"a", 1.000, 7}, {"b", 1.020, 2}};
  CHECK(apart[static_cast<std::size_t>(detail::choose_winner(apart))].config == "a");
  // With no tolerance only exact ties fall back to the order.
  CHECK(tie[static_cast<std::size_t>(detail::choose_winner(tie, 0.0))].config == "a");
  std::vector<RankedCandidate> exact{{"x", 2.0, 5}, {"y", 2.0, 1}};
  CHECK(exact[static_cast<std::size_t>(detail::choose_winner(exact, 0.0))].config == "y");
  // Shuffling the input never changes the choice.
  std::vector<RankedCandidate> many;
  for (int i = 0; i < 40; ++i) many.push_back({"cfg" + std::to_string(i), 1.0 + 0.003 * ((i * 7) % 13), i});
  const std::string first = many[static_cast<std::size_t>(detail::choose_winner(many))].config;
  std::mt19937 rng(1234);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(many.begin(), many.end(), rng);
    CHECK(many[static_cast<std::size_t>(detail::choose_winner(many))].config == first);
  }
  CHECK(first == "cfg0");  // 1.0 ms is the best; cfg0 has it and the lowest order
}

TEST_CASE("time statistics: median and p20/p80 interpolate between order statistics") {
  const detail::TimeStats s = detail::summarize_times({5, 1, 4, 2, 3});
  CHECK(s.count == 5);
  CHECK(s.median_ms == doctest::Approx(3.0));
  CHECK(s.p20_ms == doctest::Approx(1.8));
  CHECK(s.p80_ms == doctest::Approx(4.2));
  const detail::TimeStats one = detail::summarize_times({0.25});
  CHECK(one.median_ms == 0.25);
  CHECK(one.p20_ms == 0.25);
  CHECK(one.p80_ms == 0.25);
  CHECK(detail::summarize_times({}).count == 0);
  CHECK(detail::summarize_times({1, 2, 3, 4}).median_ms == doctest::Approx(2.5));
}

TEST_CASE("bad tuning requests are InvalidArgument before any work") {
  EngineOptions eo;
  eo.use_cache = false;
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  TransposeProblem empty = small_problem();
  empty.rows = 0;
  CHECK_THROWS_AS(autotune_transpose(engine, empty, 16, o), Error);
  CHECK_THROWS_AS(autotune_transpose(engine, small_problem(), 3, o), Error);   // not a power of two
  CHECK_THROWS_AS(autotune_transpose(engine, small_problem(), 32, o), Error);  // wider than 16 bytes
  TuneOptions bad = o;
  bad.arch = "sm_75";
  CHECK_THROWS_AS(autotune_transpose(engine, small_problem(), 16, bad), Error);
  bad = o;
  bad.inject["f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5"] = "explode";
  CHECK_THROWS_AS(autotune_transpose(engine, small_problem(), 16, bad), Error);
  bad = o;
  bad.min_repetitions = 0;
  CHECK_THROWS_AS(autotune_transpose(engine, small_problem(), 16, bad), Error);
  CHECK(engine.counters().compiles == 0);
}

TEST_CASE("compile-only warm-up fills the kernel cache; a second process then compiles nothing") {
  const std::string dir = temp_cache_dir();
  const std::vector<TransposeConfig> space = transpose_tuning_space(DType::F32, 16);
  std::vector<TuneProgress> seen;
  {
    EngineOptions eo;
    eo.cache_dir = dir;
    Engine engine(eo);
    TuneOptions o;
    o.compile_only = true;
    o.arch = "sm_90";
    o.progress = [&](const TuneProgress& p) { seen.push_back(p); };
    const TuneReport r = autotune_transpose(engine, small_problem(), 16, o);
    CHECK(r.arch == "sm_90");
    CHECK(r.winner.empty());
    CHECK(r.benchmarked == 0);
    CHECK(r.space_size == static_cast<int>(transpose_search_space(DType::F32, 16, true).size()));
    CHECK(r.static_rejected == r.space_size - static_cast<int>(space.size()));
    CHECK(r.static_rejected > 0);
    // Every candidate was compiled now (plus the reference and check kernels); none came from the empty cache.
    CHECK(r.compiled == static_cast<int>(space.size()) + 2);
    CHECK(r.kernel_cache_hits == 0);
    CHECK(engine.counters().compiles == space.size());
    CHECK(engine.counters().benchmark_runs == 0);
    int compiled = 0, skipped = 0;
    std::set<std::string> tuned;
    for (const auto& c : r.candidates) {
      if (c.status == "compiled") {
        ++compiled;
        tuned.insert(c.config);
        CHECK_MESSAGE(analyze_transpose(TransposeConfig::parse(c.config)).excess() == 0, c.config);
      } else {
        CHECK_MESSAGE(c.status == "skipped-static", c.config << ": " << c.status << " " << c.reason);
        ++skipped;
      }
    }
    CHECK(compiled == static_cast<int>(space.size()));
    CHECK(skipped == r.static_rejected);
    const std::vector<std::string> names = strings_of(space);
    CHECK(tuned == std::set<std::string>(names.begin(), names.end()));
    CHECK(r.failures.empty());
    // Progress: one event per candidate, counts rising to the total.
    REQUIRE(!seen.empty());
    for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].compiled >= seen[i - 1].compiled);
    CHECK(seen.back().compiled == static_cast<int>(space.size()));
    CHECK(seen.back().total == static_cast<int>(space.size()));
  }

  // A second process, through the CLI, on the same cache: everything is a hit.
  const auto second = swz_test::run_swz(
      "autotune transpose --rows 256 --cols 512 --compile-only --arch sm_90 --json --quiet", "SWZJIT_CACHE_DIR=" + dir);
  INFO(second.out << second.err);
  REQUIRE(second.code == 0);
  CHECK(second.err.empty());  // --quiet
  CHECK(json_int(second.out, "compiled") == 0);
  CHECK(json_int(second.out, "kernel_cache_hits") == static_cast<long long>(space.size()) + 2);
  CHECK(json_int(second.out, "compiles") == 0);  // the engine's counter
  CHECK(json_int(second.out, "builds") == 0);    // the cache's counter: no builder ever ran
  CHECK(json_int(second.out, "misses") == 0);
  CHECK(json_int(second.out, "static_rejected") > 0);
  CHECK(json_int(second.out, "benchmark_runs") == 0);
  CHECK(second.out.find("\"skipped-static\"") != std::string::npos);

  // The budget: only the first N configs and the default config, all from the cache, and the report says
  // it stopped early.
  EngineOptions eo;
  eo.cache_dir = dir;
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  o.max_candidates = 3;
  const TuneReport r = autotune_transpose(engine, small_problem(), 16, o);
  CHECK(r.budget_exhausted);
  CHECK_FALSE(r.time_budget_exhausted);  // the cap, not the clock
  CHECK(r.compiled == 0);
  const std::string def = default_transpose_config(DType::F32, 16).to_string();
  CHECK(r.default_config == def);
  std::set<std::string> expected = {def};
  for (std::size_t i = 0; i < 3; ++i) expected.insert(space[i].to_string());
  std::set<std::string> compiled;
  for (const auto& c : r.candidates)
    if (c.status == "compiled") compiled.insert(c.config);
  CHECK(compiled == expected);
  CHECK(expected.size() == 4);  // the default is not among the first three: it was added
}

TEST_CASE("swz autotune: usage errors exit 2 and name the argument") {
  auto r = swz_test::run_swz("autotune transpose --rows 64");
  CHECK(r.code == 2);
  CHECK(r.err.find("--cols") != std::string::npos);
  r = swz_test::run_swz("autotune transpose --rows 64 --cols 64 --compile-only");
  CHECK(r.code == 2);
  CHECK(r.err.find("--arch") != std::string::npos);
  r = swz_test::run_swz("autotune transpose --rows 64 --cols 64 --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--compile-only") != std::string::npos);
  r = swz_test::run_swz("autotune transpose --rows 64 --cols 64 --compile-only --arch sm_75");
  CHECK(r.code == 2);
  CHECK(r.err.find("sm_90") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --rows 64 --cols 64");
  CHECK(r.code == 2);
  r = swz_test::run_swz("autotune transpose --rows 64 --cols 64 --budget-s soon");
  CHECK(r.code == 2);
  CHECK(r.err.find("--budget-s") != std::string::npos);
  r = swz_test::run_swz("autotune --help");
  CHECK(r.code == 0);
  CHECK(r.out.find("--compile-only") != std::string::npos);
}

TEST_CASE("without a GPU a tune says so, and TuneOnMiss falls back to the default config") {
  std::string why;
  if (driver_available(&why)) {
    MESSAGE("skipped: a driver is present here; the GPU suite covers real tunes");
    return;
  }
  const std::string dir = temp_cache_dir();
  EngineOptions eo;
  eo.cache_dir = dir;
  Engine engine(eo);
  try {
    autotune_transpose(engine, small_problem(), 16);
    FAIL("a tune without a GPU should throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::NoDevice);
  }
  // The typed tune is the transpose family's: the same error through autotune_family.
  const TransposeProblem p = small_problem().resolved();
  try {
    autotune_family(engine, *get_family("transpose"),
                    detail::transpose_family_problem(p.dtype, p.rows, p.cols, p.ld_in, p.ld_out, p.batch, p.stride_in,
                                                     p.stride_out, 4, 4));
    FAIL("a tune without a GPU should throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::NoDevice);
  }
  CHECK(engine.counters().benchmark_runs == 0);
}

TEST_CASE("the tuning space id is cheap, stable and changes with every input that changes the space") {
  const std::string base = transpose_space_id(DType::F32, 16);
  CHECK(base.size() == 32);
  CHECK(base == transpose_space_id(DType::F32, 16));
  CHECK(base != transpose_space_id(DType::F16, 16));
  CHECK(base != transpose_space_id(DType::F32, 8));
  CHECK(base != transpose_space_id(DType::F32, 16, true));
  CHECK(base != transpose_space_id(DType::F32, 16, false, {"f32,tile=32x32,threads=256,vec=4,smem=plain"}));
}
