// tests/runtime: the GEMM autotuner's CPU side (runtime/autotune_gemm.cpp, tools/cmd_autotune.cpp): the
// space after the bank filter, the space id, the support kernels, request validation, and the offline
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
#include "templates/gemm_check.cuh"
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

TEST_CASE("gemm tuning space: the bank filter only splits the generator's space; extras join at the end") {
  for (DType in : {DType::F32, DType::F16}) {
    const DType out = in;
    const GemmLayout layout = in == DType::F32 ? GemmLayout::NN : GemmLayout::NT;
    CAPTURE(to_string(in));
    const detail::GemmTuningSpace filtered = detail::select_gemm_space(in, out, layout, 16, false);
    const detail::GemmTuningSpace all = detail::select_gemm_space(in, out, layout, 16, true);
    const std::vector<GemmConfig> generated = gemm_search_space(in, out, layout, 16);
    REQUIRE(!filtered.kept.empty());
    for (const auto& c : filtered.kept) CHECK_MESSAGE(analyze_gemm(c).excess() == 0, c.to_string());
    for (const auto& r : filtered.rejected) {
      CHECK(analyze_gemm(r.first).excess() > 0);
      CHECK(r.second.find("excess wavefronts") != std::string::npos);
    }
    CHECK(all.rejected.empty());
    CHECK(all.kept.size() == filtered.kept.size() + filtered.rejected.size());
    CHECK(names(all.kept) == names(generated));
    for (const auto& c : filtered.kept) {
      CHECK(c.in_dtype() == in);
      CHECK(c.layout() == layout);
    }
  }
  // The alignment caps the vector width.
  for (const auto& c : detail::select_gemm_space(DType::F16, DType::F32, GemmLayout::NT, 4, false).kept)
    CHECK(c.vec_bytes() <= 4);

  // An unswizzled config is conflicted: the filter would drop it, but asked for it joins at the end.
  const detail::GemmTuningSpace base = detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NT, 16, false);
  GemmConfig plain = base.kept.front();
  plain.hgemm.swizzle_a = SwizzleSpec{};
  plain.hgemm.swizzle_b = SwizzleSpec{};
  REQUIRE(analyze_gemm(plain).excess() > 0);
  const std::string dup = base.kept.front().to_string();
  const detail::GemmTuningSpace grown =
      detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NT, 16, false, {plain.to_string(), dup});
  REQUIRE(grown.kept.size() == base.kept.size() + 1);
  CHECK(grown.kept.back().to_string() == plain.to_string());
  // Too wide for the alignment: rejected with the reason; other dtypes or layouts: an error.
  const detail::GemmTuningSpace narrow =
      detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NT, 8, false, {dup});
  bool rejected = false;
  for (const auto& r : narrow.rejected)
    if (r.first.to_string() == dup) rejected = r.second.find("allows 8") != std::string::npos;
  CHECK(rejected);
  CHECK_THROWS_AS(detail::select_gemm_space(DType::BF16, DType::BF16, GemmLayout::NT, 16, false, {dup}), Error);
  CHECK_THROWS_AS(detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NN, 16, false, {dup}), Error);
  CHECK_THROWS_AS(detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NT, 16, false, {"sgemm,junk"}), Error);
}

TEST_CASE("gemm space id: cheap, stable, and changes with every input that changes the space") {
  const std::string base = gemm_space_id(DType::F16, DType::F16, GemmLayout::NT, 16);
  CHECK(base.size() == 32);
  CHECK(base == gemm_space_id(DType::F16, DType::F16, GemmLayout::NT, 16));
  CHECK(base != gemm_space_id(DType::BF16, DType::F16, GemmLayout::NT, 16));
  CHECK(base != gemm_space_id(DType::F16, DType::F32, GemmLayout::NT, 16));
  CHECK(base != gemm_space_id(DType::F16, DType::F16, GemmLayout::NN, 16));
  CHECK(base != gemm_space_id(DType::F16, DType::F16, GemmLayout::NT, 8));
  CHECK(base != gemm_space_id(DType::F16, DType::F16, GemmLayout::NT, 16, true));
  CHECK(base != gemm_space_id(DType::F16, DType::F16, GemmLayout::NT, 16, false, {"x"}));
  CHECK(base != transpose_space_id(DType::F16, 16));
}

TEST_CASE("gemm check helpers: inputs in [-1, 1) and random-looking; the poison is NaN in all three formats") {
  std::set<float> distinct;
  double sum = 0;
  for (unsigned long long i = 0; i < 100000; ++i) {
    const float v = tpl::gemm_check_value(i, 0x6E33u);
    CHECK_MESSAGE((v >= -1.0f && v < 1.0f), i);
    distinct.insert(v);
    sum += v;
  }
  CHECK(distinct.size() > 99000u);
  CHECK(std::abs(sum / 100000) < 0.02);  // centred
  CHECK(tpl::gemm_check_value(5, 1) != tpl::gemm_check_value(5, 2));
  float f;
  const unsigned p32 = tpl::kGemmCheckPoison32;
  std::memcpy(&f, &p32, 4);
  CHECK(f != f);                                       // f32 NaN
  const unsigned p16 = p32 & 0xFFFFu;
  CHECK(p16 == (p32 >> 16));                           // the pattern repeats its half
  CHECK(((p16 >> 10) & 0x1F) == 0x1F);                 // f16: exponent all ones,
  CHECK((p16 & 0x3FF) != 0);                           //      mantissa not zero
  CHECK(((p16 >> 7) & 0xFF) == 0xFF);                  // bf16: exponent all ones,
  CHECK((p16 & 0x7F) != 0);                            //       mantissa not zero
}

TEST_CASE("gemm support kernels (check and f64 reference) compile with NVRTC through the cache") {
  const std::string dir = temp_cache_dir();
  Cache cache(dir);
  std::atomic<int> compiles{0};
  using detail::GemmSupportKernel;
  struct Case {
    DType in, out;
    GemmLayout layout;
  };
  for (const Case& c : {Case{DType::F32, DType::F32, GemmLayout::NN}, Case{DType::F16, DType::F32, GemmLayout::NT},
                        Case{DType::BF16, DType::BF16, GemmLayout::TT}})
    for (GemmSupportKernel which : {GemmSupportKernel::Check, GemmSupportKernel::Reference}) {
      const KernelEntry e = detail::compile_gemm_support_kernel(cache, which, c.in, c.out, c.layout, "sm_90", &compiles);
      CHECK(!e.image.empty());
      CHECK(e.lowered_name.find(which == GemmSupportKernel::Check ? "gemm_check_kernel" : "gemm_reference_kernel") !=
            std::string::npos);
    }
  CHECK(compiles == 6);
  detail::compile_gemm_support_kernel(cache, GemmSupportKernel::Check, DType::F16, DType::F32, GemmLayout::NT, "sm_90",
                                      &compiles);
  CHECK(compiles == 6);  // a cache hit
  CHECK_THROWS_AS(detail::compile_gemm_support_kernel(cache, GemmSupportKernel::Check, DType::F32, DType::F16,
                                                      GemmLayout::NN, "sm_90", &compiles),
                  Error);
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
  // The tune's candidates: the bank-filtered space without the split-K configs this problem rejects
  // (512x384 has 48 tiles of 64x64, but K = 256 is too short to slice).
  std::vector<GemmConfig> space;
  for (const GemmConfig& c : detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NT, 16, false).kept)
    if (detail::gemm_split_mismatch(c, p.resolved(), false).empty()) space.push_back(c);
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
    CHECK(r.space_hash == gemm_space_id(DType::F16, DType::F16, GemmLayout::NT, 16));
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
  const std::vector<GemmConfig> space =
      detail::select_gemm_space(DType::F16, DType::F16, GemmLayout::NT, 16, false).kept;
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

  // Compile-only tunes: the reduction joins the support kernels only when a split candidate remains, and
  // the rejected split configs are reported with their reason.
  EngineOptions eo;
  eo.cache_dir = temp_cache_dir();
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  o.max_candidates = 1;  // the first candidate is enough: the support kernels are what is counted
  // Each tune also compiles the problem's default config (thin: a split-K one; big: an unsplit one).
  const std::string first = space.front().to_string();
  const std::string thin_default = default_gemm_config(thin, 16).to_string();
  const std::string big_default = default_gemm_config(big, 16).to_string();
  CHECK(gemm_k_splits(GemmConfig::parse(thin_default)) > 1);
  CHECK(gemm_k_splits(GemmConfig::parse(big_default)) == 1);
  const int thin_candidates = thin_default == first ? 1 : 2;
  const TuneReport thin_report = autotune_gemm(engine, thin, 16, o);
  CHECK(thin_report.compiled == thin_candidates + 3);  // candidates; check, reference, split-K reduction
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

TEST_CASE("without a GPU a gemm tune says so, and the TuneOnMiss path falls back to the default config") {
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
    autotune_gemm(engine, small_f16_nt(), 16);
    FAIL("a tune without a GPU should throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::NoDevice);
  }
  const GemmConfig fallback = autotune_gemm_for_engine(engine, small_f16_nt(), 16);
  CHECK(fallback == default_gemm_config(small_f16_nt(), 16));
  CHECK(engine.counters().benchmark_runs == 0);
}
