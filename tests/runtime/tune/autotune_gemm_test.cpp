// tests/runtime: the GEMM autotuner's CPU side (runtime/tune/autotune_gemm.cpp, tools/cmd_autotune.cpp): a
// GEMM tune is the built-in family sgemm/hgemm's, reported in GemmConfig text: the space after the bank
// filter and the split-K skips, extra configs, where winners are stored, request validation, and the offline
// warm-up: a compile-only GEMM tune fills the kernel cache so that a second process compiles nothing.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <atomic>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "runtime/tune/autotune_internal.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm/gemm_family.hpp"
#include "swzjit/family.hpp"
#include "tests/tools/cli_support.hpp"

using namespace swz;

namespace {

std::string temp_cache_dir() {
  char tmpl[] = "/tmp/swz_autotune_gemm_test_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

long long json_int(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

// 512 x 384 x 256, f16 in and out, A row-major, B column-major: the tensor-core-native NT layout.
GemmProblem small_f16_nt() {
  GemmProblem p;
  p.dtype = DType::F16;
  p.out_dtype = DType::F16;
  p.m = 512;
  p.n = 384;
  p.k = 256;
  p.a_order = MatrixOrder::RowMajor;
  p.b_order = MatrixOrder::ColMajor;
  return p;
}

std::vector<std::string> names(const std::vector<GemmConfig>& configs) {
  std::vector<std::string> out;
  for (const auto& c : configs) out.push_back(c.to_string());
  return out;
}

}  // namespace

TEST_CASE("gemm tune space: the family's space less bank-conflicted and split-K skips, reported as GemmConfigs") {
  // Compile-only tunes on sm_80 (no Hopper variant there), one candidate compiled each: the report lists every
  // config of the typed space once, in GemmConfig text, the skipped ones with their reason.
  EngineOptions eo;
  eo.cache_dir = temp_cache_dir();
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_80";
  o.max_candidates = 1;
  for (DType in : {DType::F32, DType::F16}) {
    GemmProblem p = small_f16_nt();
    p.dtype = p.out_dtype = in;
    if (in == DType::F32) p.b_order = MatrixOrder::RowMajor;  // NN, the f32 kernels' layout
    const GemmLayout layout = p.kernel_layout();
    CAPTURE(to_string(in));
    const std::vector<GemmConfig> generated = gemm_search_space(in, in, layout, 16);
    const TuneReport r = autotune_gemm(engine, p, 16, o);
    CHECK(r.space_size == static_cast<int>(generated.size()));
    CHECK(r.default_config == default_gemm_config(p, 16).to_string());
    std::set<std::string> listed;
    int bank = 0, split = 0;
    for (const TuneCandidate& c : r.candidates) {
      const GemmConfig cfg = GemmConfig::parse(c.config);  // typed text, not the family's
      CHECK(cfg.in_dtype() == in);
      CHECK(cfg.layout() == layout);
      CHECK(listed.insert(c.config).second);
      if (c.status != "skipped-static") continue;
      if (c.reason.find("excess wavefronts") != std::string::npos) {
        ++bank;
        CHECK_MESSAGE(analyze_gemm(cfg).excess() > 0, c.config);
      } else {
        ++split;
        CHECK_MESSAGE(c.reason.find("split-K") != std::string::npos, c.config << ": " << c.reason);
        CHECK(c.reason == detail::gemm_split_mismatch(cfg, p.resolved(), false));
      }
    }
    CHECK(bank + split == r.static_rejected);
    CHECK(split == 4);  // K = 256 is too short to slice: every split config is skipped
    // Listed: the skipped ones, the first candidate and the default (max_candidates cuts the rest).
    CHECK(static_cast<int>(listed.size()) >= r.static_rejected + 1);
    std::set<std::string> space;
    for (const GemmConfig& c : generated) space.insert(c.to_string());
    for (const std::string& c : listed) CHECK_MESSAGE(space.count(c) == 1, c);
    // Kept conflicts: only the split skips remain.
    TuneOptions keep = o;
    keep.keep_conflicted = true;
    const TuneReport all = autotune_gemm(engine, p, 16, keep);
    CHECK(all.static_rejected == split);
    CHECK(all.space_hash != r.space_hash);
  }
  // The alignment caps the vector width of every config listed.
  const TuneReport narrow = autotune_gemm(engine, small_f16_nt(), 4, o);
  for (const TuneCandidate& c : narrow.candidates) CHECK_MESSAGE(GemmConfig::parse(c.config).vec_bytes() <= 4, c.config);

  // Extra configs join the candidates: one outside the space (unswizzled, so the bank filter would drop it)
  // is appended; one the tune skips (a split config, on this short K) is a candidate once asked for.
  GemmConfig plain = default_gemm_config(small_f16_nt(), 16);
  plain.hgemm.swizzle_a = SwizzleSpec{};
  plain.hgemm.swizzle_b = SwizzleSpec{};
  REQUIRE(analyze_gemm(plain).excess() > 0);
  const TuneReport base = autotune_gemm(engine, small_f16_nt(), 16, o);
  std::string skipped_split;
  for (const TuneCandidate& c : base.candidates)
    if (c.status == "skipped-static" && skipped_split.empty()) skipped_split = c.config;
  REQUIRE(!skipped_split.empty());
  o.extra_configs = {plain.to_string(), skipped_split};
  const TuneReport grown = autotune_gemm(engine, small_f16_nt(), 16, o);
  CHECK(grown.space_size == base.space_size + 1);
  CHECK(grown.static_rejected == base.static_rejected - 1);
  for (const TuneCandidate& c : grown.candidates) CHECK(!(c.config == skipped_split && c.status == "skipped-static"));
  CHECK(grown.space_hash != base.space_hash);
  o.extra_configs.clear();
  // Too wide for the alignment, other dtypes or layouts, or no config at all: an error naming it.
  const std::string dup = default_gemm_config(small_f16_nt(), 16).to_string();
  for (const auto& bad : {std::make_pair(8, dup), std::make_pair(16, std::string("sgemm,junk"))}) {
    TuneOptions x = o;
    x.extra_configs = {bad.second};
    CHECK_THROWS_AS(autotune_gemm(engine, small_f16_nt(), bad.first, x), Error);
  }
  GemmProblem bf = small_f16_nt();
  bf.dtype = bf.out_dtype = DType::BF16;
  TuneOptions x = o;
  x.extra_configs = {dup};
  CHECK_THROWS_WITH_AS(autotune_gemm(engine, bf, 16, x), doctest::Contains("the problem is bf16>bf16"), Error);
  GemmProblem nn = small_f16_nt();
  nn.b_order = MatrixOrder::RowMajor;
  CHECK_THROWS_WITH_AS(autotune_gemm(engine, nn, 16, x), doctest::Contains("NN"), Error);
}

TEST_CASE("gemm winners live under the built-in family's problem text, in the kernels' frame") {
  // The tuning key's problem is the family's problem text, in the kernels' frame: a column-major C is the
  // transposed call's problem; the alignment class is part of it.
  const GemmProblem p = small_f16_nt();
  const std::shared_ptr<const Family> h = detail::gemm_mma_builtin(DType::F16);
  CHECK(h->name() == "hgemm");
  CHECK(detail::gemm_mma_builtin(DType::BF16) == h);
  CHECK(detail::gemm_mma_builtin(DType::F32)->name() == "sgemm");
  const auto text = [&](const GemmProblem& g, int align) {
    return h->problem_text(detail::gemm_family_problem(g.resolved(), align));
  };
  CHECK(text(p, 16) != text(p, 8));
  GemmProblem colc = p;
  colc.c_order = MatrixOrder::ColMajor;
  GemmProblem swapped = p;
  swapped.m = p.n, swapped.n = p.m;
  CHECK(text(colc, 16) == text(swapped, 16));
  CHECK(text(colc, 16) != text(p, 16));
  std::string why;
  if (!driver_available(&why)) {
    MESSAGE("the engine's keys need a device (its identity is part of them): the GPU suite checks them");
    return;
  }
  EngineOptions eo;
  eo.use_cache = false;
  Engine engine(eo);
  const TuningProblemKey key = engine.gemm_tuning_key(colc, 16);
  CHECK(key.operation == "family:hgemm");
  CHECK(key.problem == engine.gemm_tuning_key(swapped, 16).problem);
  CHECK(key.problem == engine.family_tuning_key(*h, detail::gemm_family_problem(swapped.resolved(), 16)).problem);
}

TEST_CASE("bad gemm tuning requests are errors before any work") {
  EngineOptions eo;
  eo.use_cache = false;
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  GemmProblem empty = small_f16_nt();
  empty.k = 0;
  CHECK_THROWS_AS(autotune_gemm(engine, empty, 16, o), Error);
  GemmProblem huge = small_f16_nt();
  huge.batch = 70000;
  CHECK_THROWS_AS(autotune_gemm(engine, huge, 16, o), Error);
  CHECK_THROWS_AS(autotune_gemm(engine, small_f16_nt(), 1, o), Error);   // below one f16
  CHECK_THROWS_AS(autotune_gemm(engine, small_f16_nt(), 12, o), Error);  // not a power of two
  CHECK_THROWS_AS(autotune_gemm(engine, small_f16_nt(), 32, o), Error);
  GemmProblem mixed = small_f16_nt();
  mixed.dtype = DType::F32;  // f32 -> f16 is not a supported pair
  try {
    autotune_gemm(engine, mixed, 16, o);
    FAIL("an unsupported dtype pair should throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
  }
  TuneOptions bad = o;
  bad.inject["anything"] = "fault";
  CHECK_THROWS_AS(autotune_gemm(engine, small_f16_nt(), 16, bad), Error);
  bad = o;
  bad.arch = "sm_75";
  CHECK_THROWS_AS(autotune_gemm(engine, small_f16_nt(), 16, bad), Error);
  CHECK(engine.counters().compiles == 0);
}

TEST_CASE("gemm compile-only warm-up fills the kernel cache; a second process then compiles nothing") {
  const std::string dir = temp_cache_dir();
  const GemmProblem p = small_f16_nt();
  // The tune's candidates: the bank-filtered space without the split-K configs this problem skips
  // (512x384 has 48 tiles of 64x64, but K = 256 is too short to slice).
  std::vector<GemmConfig> space;
  for (const GemmConfig& c : gemm_search_space(DType::F16, DType::F16, GemmLayout::NT, 16))
    if (analyze_gemm(c).excess() == 0 && detail::gemm_split_mismatch(c, p.resolved(), false).empty()) space.push_back(c);
  REQUIRE(!space.empty());
  for (const GemmConfig& c : space) CHECK(gemm_k_splits(c) == 1);
  {
    EngineOptions eo;
    eo.cache_dir = dir;
    Engine engine(eo);
    TuneOptions o;
    o.compile_only = true;
    o.arch = "sm_90";
    const TuneReport r = autotune_gemm(engine, p, 16, o);
    CHECK(r.arch == "sm_90");
    CHECK(r.winner.empty());
    CHECK(r.benchmarked == 0);
    CHECK(r.problem == p.key(16));
    CHECK(r.space_hash == detail::gemm_mma_builtin(DType::F16)->definition_hash());
    CHECK(r.space_size == static_cast<int>(gemm_search_space(DType::F16, DType::F16, GemmLayout::NT, 16).size()));
    // Every candidate, the check kernel and the reference kernel: compiled now, none from the empty cache.
    CHECK(r.compiled == static_cast<int>(space.size()) + 2);
    CHECK(r.kernel_cache_hits == 0);
    CHECK(engine.counters().compiles == space.size());  // the engine counts its GEMM compiles
    CHECK(engine.counters().benchmark_runs == 0);
    std::set<std::string> compiled;
    for (const auto& c : r.candidates) {
      if (c.status == "skipped-static") {  // the split-K configs this shape leaves out
        CHECK_MESSAGE(c.reason.find("split-K") != std::string::npos, c.config << ": " << c.reason);
        continue;
      }
      CHECK_MESSAGE(c.status == "compiled", c.config << ": " << c.status << " " << c.reason);
      compiled.insert(c.config);
    }
    const std::vector<std::string> expected = names(space);
    CHECK(compiled == std::set<std::string>(expected.begin(), expected.end()));
    CHECK(r.failures.empty());
  }
  // A second process, through the CLI, on the same cache: everything is a hit.
  const auto second = swz_test::run_swz(
      "autotune gemm --m 512 --n 384 --k 256 --dtype f16 --layout NT --compile-only --arch sm_90 --json --quiet",
      "SWZJIT_CACHE_DIR=" + dir);
  INFO(second.out << second.err);
  REQUIRE(second.code == 0);
  CHECK(second.err.empty());  // --quiet
  CHECK(second.out.find("\"family\": \"gemm\"") != std::string::npos);
  CHECK(json_int(second.out, "compiled") == 0);
  CHECK(json_int(second.out, "kernel_cache_hits") == static_cast<long long>(space.size()) + 2);
  CHECK(json_int(second.out, "compiles") == 0);  // the engine's counter
  CHECK(json_int(second.out, "builds") == 0);    // the cache's: no builder ran
  CHECK(json_int(second.out, "misses") == 0);
  CHECK(json_int(second.out, "benchmark_runs") == 0);
  // The table form names the family and the problem.
  const auto table = swz_test::run_swz(
      "autotune gemm --m 512 --n 384 --k 256 --dtype f16 --layout NT --compile-only --arch sm_90 --quiet --top 2",
      "SWZJIT_CACHE_DIR=" + dir);
  CHECK(table.code == 0);
  CHECK(table.out.find("gemm f16>f16 512x384x256 A=row B=col") != std::string::npos);
  CHECK(table.out.find("compiles 0") != std::string::npos);
}

TEST_CASE("gemm split-K candidates: kept only for few tiles and long K, with the reduction as a support kernel") {
  std::vector<GemmConfig> space;  // the bank-filtered space, in its order
  for (const GemmConfig& c : gemm_search_space(DType::F16, DType::F16, GemmLayout::NT, 16))
    if (analyze_gemm(c).excess() == 0) space.push_back(c);
  std::vector<GemmConfig> splits;
  for (const GemmConfig& c : space)
    if (gemm_k_splits(c) > 1) splits.push_back(c);
  REQUIRE(splits.size() == 4);  // split 4, 8, 16, 32 (the bank filter keeps them: same tiles as unsplit ones)
  GemmProblem thin = small_f16_nt();
  thin.m = 127, thin.n = 129, thin.k = 4100;  // 6 tiles of 64x64, long K: every split fits
  for (const GemmConfig& c : splits) CHECK_MESSAGE(detail::gemm_split_mismatch(c, thin.resolved(), false).empty(), c.to_string());
  for (const GemmConfig& c : space)
    if (gemm_k_splits(c) == 1) CHECK(detail::gemm_split_mismatch(c, thin.resolved(), false).empty());
  GemmProblem big = thin;
  big.m = 2048, big.n = 2048;  // 1024 tiles: splitting K only adds traffic
  GemmProblem shallow = thin;
  shallow.k = 1000;  // 16 slices of 1000 / 16 < 128
  GemmProblem batched = thin;
  batched.batch = 20000;  // 20000 x 4 > 65535 grid z
  for (const GemmConfig& c : splits) {
    CHECK(detail::gemm_split_mismatch(c, big.resolved(), false).find("block tiles") != std::string::npos);
    CHECK(detail::gemm_split_mismatch(c, big.resolved(), true).empty());  // asked for: only the hard limit
    CHECK(detail::gemm_split_mismatch(c, batched.resolved(), true).find("65535") != std::string::npos);
  }
  CHECK(detail::gemm_split_mismatch(splits.back(), shallow.resolved(), false).find("per slice") != std::string::npos);
  CHECK(detail::gemm_split_mismatch(splits.front(), shallow.resolved(), false).empty());  // 4 x 250

  // Compile-only tunes: the reduction is compiled only when a split candidate remains (a launch of its
  // plan), and the skipped split configs are reported with their reason.
  EngineOptions eo;
  eo.cache_dir = temp_cache_dir();
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  o.max_candidates = 1;  // the first candidate is enough: the support kernels are what is counted
  // Each tune also compiles the problem's default config (thin: a split-K one; big: an unsplit one).
  // K = 4100 rows are 8-byte aligned: the problems' alignment class is 8 whatever the pointers.
  REQUIRE(thin.max_vec_bytes(256, 256) == 8);
  std::string first;  // the first candidate of both: the first conflict-free config at that alignment
  for (const GemmConfig& c : gemm_search_space(DType::F16, DType::F16, GemmLayout::NT, 8))
    if (first.empty() && analyze_gemm(c).excess() == 0) first = c.to_string();
  REQUIRE(gemm_k_splits(GemmConfig::parse(first)) == 1);
  const std::string thin_default = default_gemm_config(thin, 8).to_string();
  const std::string big_default = default_gemm_config(big, 8).to_string();
  CHECK(gemm_k_splits(GemmConfig::parse(thin_default)) > 1);
  CHECK(gemm_k_splits(GemmConfig::parse(big_default)) == 1);
  const int thin_candidates = thin_default == first ? 1 : 2;
  const TuneReport thin_report = autotune_gemm(engine, thin, 16, o);
  CHECK(thin_report.compiled == thin_candidates + 3);  // candidates, the split-K reduction; check, reference
  CHECK(thin_report.static_rejected == 0);
  CHECK(thin_report.default_config == thin_default);
  const TuneReport big_report = autotune_gemm(engine, big, 16, o);
  // The first candidate, check and reference kernels: cache hits; no reduction is asked for. Its default
  // is new unless it is the first config.
  const int big_new = big_default != first && big_default != thin_default ? 1 : 0;
  CHECK(big_report.compiled == big_new);
  CHECK(big_report.kernel_cache_hits == 2 + (big_default == first ? 1 : 2) - big_new);
  CHECK(big_report.static_rejected == 4);
  CHECK(big_report.default_config == big_default);
  int skipped = 0;
  for (const auto& c : big_report.candidates)
    if (c.status == "skipped-static") {
      ++skipped;
      CHECK_MESSAGE(c.reason.find("split-K") != std::string::npos, c.config << ": " << c.reason);
      CHECK(c.config.find(",split=") != std::string::npos);
    }
  CHECK(skipped == 4);
}

TEST_CASE("swz autotune gemm: usage errors exit 2 and name the argument") {
  auto r = swz_test::run_swz("autotune gemm --m 64 --n 64");
  CHECK(r.code == 2);
  CHECK(r.err.find("--k") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --m 64 --n 64 --k 64 --dtype f32 --out f16 --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--out") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --m 64 --n 64 --k 64 --dtype f64 --compile-only --arch sm_90");
  CHECK(r.code == 2);
  r = swz_test::run_swz("autotune gemm --m 64 --n 64 --k 64 --layout NX --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--layout") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --m 64 --n 64 --k 64 --compile-only");
  CHECK(r.code == 2);
  CHECK(r.err.find("--arch") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --m 0 --n 64 --k 64 --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--m") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --m 64 --n 64 --k 64 --batch 70000 --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("--batch") != std::string::npos);
  r = swz_test::run_swz("autotune gemm --m 64 --n 64 --k 64 --rows 3 --compile-only --arch sm_90");
  CHECK(r.code == 2);
  CHECK(r.err.find("rows") != std::string::npos);
  r = swz_test::run_swz("autotune matmul --m 64");
  CHECK(r.code == 2);
  r = swz_test::run_swz("autotune --help");
  CHECK(r.code == 0);
  CHECK(r.out.find("swz autotune gemm --m") != std::string::npos);
  CHECK(r.out.find("--layout") != std::string::npos);
}

TEST_CASE("without a GPU a gemm tune says so, and so does the engine's choice under TuneOnMiss") {
  std::string why;
  if (driver_available(&why)) {
    MESSAGE("skipped: a driver is present here; the GPU suite covers real tunes");
    return;
  }
  EngineOptions eo;
  eo.cache_dir = temp_cache_dir();
  eo.policy = TunePolicy::TuneOnMiss;
  Engine engine(eo);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (attempt == 0)
        autotune_gemm(engine, small_f16_nt(), 16);
      else
        engine.gemm_config(small_f16_nt(), 256, 256);
      FAIL("without a GPU this should throw");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::NoDevice);
    }
  }
  CHECK(engine.counters().benchmark_runs == 0);
  CHECK(engine.counters().tunes == 0);
}
