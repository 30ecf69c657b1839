// tests/runtime (GPU suite): the autotuner end to end (runtime/tune/autotune.cpp + the swz-worker process):
// a real tune picks a winner that transposes exactly; injected faulting, hanging and wrong candidates
// are recorded as failures without harming the caller's context; a grown space re-measures only the
// new config; a second Engine and a second process get the winner with no compile and no benchmark.
// GEMM (runtime/tune/autotune_gemm.cpp): f16 NT and f32 NN tunes pick winners that match an f64 host
// reference; a second Engine gets the winner with no compile and no benchmark.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "generator/families/transpose/transpose_family.hpp"
#include "generator/families/gemm/gemm_family.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "tests/gpu_child.hpp"

using namespace swz;

namespace {

constexpr std::uint8_t kPoison = 0xFF;
constexpr std::size_t kGuard = 4096;
constexpr const char* kWarmDirVariable = "SWZ_TEST_AUTOTUNE_WARM_DIR";

std::string temp_cache_dir() {
  char tmpl[] = "/tmp/swz_autotune_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

TransposeProblem problem_of(long long rows, long long cols) {
  TransposeProblem p;
  p.dtype = DType::F32;
  p.rows = rows;
  p.cols = cols;
  return p;
}

// Transposes fresh random data with the engine (`cfg`, or the engine's own choice when null) and
// counts the wrong bytes, guards around the output included. Returns -1 on a setup problem.
long long transpose_errors(Engine& engine, const TransposeProblem& p, const TransposeConfig* cfg, unsigned seed) {
  const TransposeProblem r = p.resolved();
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(r.dtype));
  const std::size_t in_bytes = static_cast<std::size_t>(r.batch * r.stride_in) * eb;
  const std::size_t out_bytes = static_cast<std::size_t>(r.batch * r.stride_out) * eb;
  std::vector<std::uint8_t> h_in(in_bytes);
  std::mt19937 rng(seed);
  for (auto& b : h_in) b = static_cast<std::uint8_t>(rng() % 255);  // never the poison
  DeviceBuffer d_in(in_bytes), d_out(out_bytes + 2 * kGuard);
  d_in.copy_from_host(h_in.data(), in_bytes);
  d_out.memset8(kPoison);
  Stream stream;
  engine.transpose(p, d_in.ptr(), d_out.ptr() + kGuard, stream.handle(), cfg);
  stream.synchronize();
  std::vector<std::uint8_t> h_out(d_out.size());
  d_out.copy_to_host(h_out.data(), h_out.size());
  long long bad = 0;
  for (std::size_t i = 0; i < kGuard; ++i) bad += (h_out[i] != kPoison) + (h_out[h_out.size() - 1 - i] != kPoison);
  const std::uint8_t* out = h_out.data() + kGuard;
  for (long long b = 0; b < r.batch; ++b)
    for (long long c = 0; c < r.cols; ++c)
      for (long long row = 0; row < r.rows; ++row)
        bad += std::memcmp(out + static_cast<std::size_t>(b * r.stride_out + c * r.ld_out + row) * eb,
                           h_in.data() + static_cast<std::size_t>(b * r.stride_in + row * r.ld_in + c) * eb, eb) != 0;
  return bad;
}

const TuneCandidate* find(const TuneReport& r, const std::string& config) {
  for (const auto& c : r.candidates)
    if (c.config == config) return &c;
  return nullptr;
}

std::string describe(const TuneReport& r) {
  std::string s = "winner '" + r.winner + "'\n";
  for (const auto& c : r.candidates)
    s += "  " + c.config + ": " + c.status + " " + std::to_string(c.median_ms) + " ms (re-time " +
         std::to_string(c.retime_ms) + " ms) " + c.reason + "\n";
  return s;
}

// The warm second process (run as `swzjit_gpu_tests --swz-child autotune-warm`): with the cache the
// parent tuned into, the first transpose uses the tuned winner with no compile and no benchmark.
int warm_child() {
  const char* dir = getenv(kWarmDirVariable);
  if (dir == nullptr) {
    std::printf("%s is not set\n", kWarmDirVariable);
    return 1;
  }
  try {
    EngineOptions eo;
    eo.cache_dir = dir;
    eo.policy = TunePolicy::TuneOnMiss;  // a miss here would tune: the counters would show it
    Engine engine(eo);
    const long long bad = transpose_errors(engine, problem_of(1024, 768), nullptr, 99);
    const EngineCounters c = engine.counters();
    const CacheCounters cc = engine.cache().counters();
    int failures = 0;
    const auto expect = [&](bool ok, const char* what) {
      if (!ok) {
        std::printf("warm child: expected %s\n", what);
        ++failures;
      }
    };
    expect(bad == 0, "an exact transpose");
    expect(c.compiles == 0, "zero NVRTC compiles");
    expect(c.benchmark_runs == 0, "zero benchmark runs");
    expect(c.tunes == 0, "no tune");
    expect(c.tuned_hits == 1, "the winner from the tuning cache");
    expect(cc.misses == 0 && cc.hits >= 1, "the winner's kernel from the kernel cache");
    std::printf("warm child: compiles=%llu benchmark_runs=%llu tuned_hits=%llu kernel hits=%llu misses=%llu\n",
                static_cast<unsigned long long>(c.compiles), static_cast<unsigned long long>(c.benchmark_runs),
                static_cast<unsigned long long>(c.tuned_hits), static_cast<unsigned long long>(cc.hits),
                static_cast<unsigned long long>(cc.misses));
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("warm child: %s\n", e.what());
    return 1;
  }
}
const bool kWarmRegistered = swz::test::register_child_mode("autotune-warm", &warm_child);

// --- GEMM helpers: host data exactly representable in every input type, an f64 host reference ---


// Runs C = A * B (alpha 1, beta 0) with the engine's own choice (or `cfg`) on fresh random data and
// returns the relative Frobenius error against an f64 host reference (inf if any output is not finite).
double gemm_error(Engine& engine, const GemmProblem& problem, const GemmConfig* cfg, unsigned seed) {
  const GemmProblem p = problem.resolved();
  const bool ar = p.a_order == MatrixOrder::RowMajor, br = p.b_order == MatrixOrder::RowMajor;
  const std::size_t ei = static_cast<std::size_t>(dtype_bytes(p.dtype)), eo = static_cast<std::size_t>(dtype_bytes(p.out_dtype));
  const std::size_t na = static_cast<std::size_t>((ar ? p.m : p.k) * p.lda), nb = static_cast<std::size_t>((br ? p.k : p.n) * p.ldb);
  const std::size_t nc = static_cast<std::size_t>(p.m * p.ldc);  // C row-major
  std::vector<float> a(na), b(nb);
  std::mt19937 rng(seed);
  for (auto& v : a) v = static_cast<float>(static_cast<int>(rng() % 129) - 64) / 64.0f;
  for (auto& v : b) v = static_cast<float>(static_cast<int>(rng() % 129) - 64) / 64.0f;
  std::vector<std::uint8_t> ha(na * ei), hb(nb * ei);
  // Multiples of 1/64 in [-1, 1]: exact in every input type.
  for (std::size_t i = 0; i < na; ++i) store_element(p.dtype, &ha[i * ei], a[i]);
  for (std::size_t i = 0; i < nb; ++i) store_element(p.dtype, &hb[i * ei], b[i]);
  DeviceBuffer da(ha.size()), db(hb.size()), dc(nc * eo);
  da.copy_from_host(ha.data(), ha.size());
  db.copy_from_host(hb.data(), hb.size());
  dc.memset32(0x7FD57FD5u);  // NaN: a C element not written (or read although beta = 0) shows
  Stream stream;
  engine.gemm(p, da.ptr(), db.ptr(), dc.ptr(), 1.0f, 0.0f, stream.handle(), cfg);
  stream.synchronize();
  std::vector<std::uint8_t> hc(nc * eo);
  dc.copy_to_host(hc.data(), hc.size());
  double num = 0, den = 0;
  for (long long i = 0; i < p.m; ++i)
    for (long long j = 0; j < p.n; ++j) {
      double want = 0;
      for (long long kk = 0; kk < p.k; ++kk)
        want += static_cast<double>(a[static_cast<std::size_t>(ar ? i * p.lda + kk : kk * p.lda + i)]) *
                static_cast<double>(b[static_cast<std::size_t>(br ? kk * p.ldb + j : j * p.ldb + kk)]);
      const double got = load_element(p.out_dtype, &hc[static_cast<std::size_t>(i * p.ldc + j) * eo]);
      if (!std::isfinite(got)) return INFINITY;
      num += (got - want) * (got - want);
      den += want * want;
    }
  return std::sqrt(num / den);
}

GemmProblem gemm_problem(DType in, DType out, MatrixOrder a, MatrixOrder b) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = 512;
  p.n = 384;
  p.k = 256;
  p.a_order = a;
  p.b_order = b;
  return p;
}

// A typed config string as the transpose family stores it (its candidates and winners in the cache).
std::string family_text(const std::string& typed) {
  return get_family("transpose")->config_text(detail::transpose_family_config(TransposeConfig::parse(typed)));
}

}  // namespace

TEST_CASE("autotune: a tune of the f32 transpose space picks a winner that transposes exactly") {
  const std::string dir = temp_cache_dir();
  EngineOptions eo;
  eo.cache_dir = dir;
  Engine engine(eo);
  const TransposeProblem p = problem_of(2048, 1024);
  const std::vector<TransposeConfig> space = transpose_tuning_space(DType::F32, 16);
  std::vector<TuneProgress> progress;
  TuneOptions o;
  o.progress = [&](const TuneProgress& e) { progress.push_back(e); };
  const TuneReport r = autotune_transpose(engine, p, 16, o);
  INFO(describe(r));
  REQUIRE(!r.winner.empty());
  CHECK(r.failures.empty());
  CHECK(r.benchmarked == static_cast<int>(space.size()));
  CHECK(r.reused == 0);
  // The best three, and the default when it is not among them.
  CHECK(r.retimed >= std::min<int>(3, static_cast<int>(space.size())));
  CHECK(r.retimed <= std::min<int>(3, static_cast<int>(space.size())) + 1);
  CHECK(r.default_config == default_transpose_config(DType::F32, 16).to_string());
  CHECK(r.default_ms > 0);
  CHECK(r.winner_ms <= r.default_ms);  // same re-time; near-ties keep the default
  CHECK(r.worker_restarts == 0);
  CHECK(r.device == device_info(0).name);
  CHECK(r.winner_ms > 0);
  CHECK(r.winner_gbps > 0);
  // Times are ordered and honest: p20 <= median <= p80, enough repetitions; the re-timed first by their
  // re-time (the winner's and the default's among them), then the other ok ones by their first pass.
  double previous = 0;
  int retimed = 0;
  bool past_retimed = false;
  for (const auto& c : r.candidates) {
    if (c.status != "ok") continue;
    if (c.retime_ms > 0) {
      CHECK_FALSE(past_retimed);
      CHECK(c.retime_ms >= previous);
      previous = c.retime_ms;
      CHECK(c.retime_p20_ms <= c.retime_ms);
      CHECK(c.retime_ms <= c.retime_p80_ms);
      ++retimed;
    } else {
      if (!past_retimed) previous = 0;
      past_retimed = true;
      CHECK(c.median_ms >= previous);
      previous = c.median_ms;
    }
    CHECK(c.p20_ms <= c.median_ms);
    CHECK(c.median_ms <= c.p80_ms);
    CHECK(c.repetitions >= 10);
  }
  CHECK(retimed == r.retimed);
  REQUIRE(find(r, r.winner) != nullptr);
  CHECK(find(r, r.winner)->retime_ms == r.winner_ms);  // the winner is chosen on the re-time
  CHECK(engine.counters().benchmark_runs == static_cast<std::uint64_t>(r.benchmarked + r.retimed));
  CHECK(engine.counters().tunes == 1);
  REQUIRE(!progress.empty());
  CHECK(progress.back().phase == "done");
  CHECK(progress.back().benchmarked == static_cast<int>(space.size()));

  // What was stored: every candidate, and the winner under the transpose family's definition (its id).
  const TuningProblemKey key = engine.transpose_tuning_key(p, 16);
  CHECK(key.operation == "family:transpose");
  CHECK(engine.cache().load_candidates(key).size() == space.size());
  CHECK(r.space_hash == get_family("transpose")->definition_hash());
  const auto stored = engine.cache().load_winner(key, r.space_hash);
  REQUIRE(stored.has_value());
  CHECK(stored->config == family_text(r.winner));

  // The winner is correct, and the engine now chooses it by itself.
  const TransposeConfig winner = TransposeConfig::parse(r.winner);
  CHECK(transpose_errors(engine, p, &winner, 1) == 0);
  CHECK(transpose_errors(engine, p, nullptr, 2) == 0);
  CHECK(engine.counters().tuned_hits == 1);
  CHECK(engine.counters().tunes == 1);

  // Adding a config to the space re-measures only the new config (and re-times the best few).
  TuneOptions grown;
  const std::string plain = "f32,tile=32x32,threads=256,vec=4,smem=plain";
  grown.extra_configs = {plain};
  const TuneReport g = autotune_transpose(engine, p, 16, grown);
  INFO(describe(g));
  CHECK(g.benchmarked == 1);
  CHECK(g.reused == static_cast<int>(space.size()));
  REQUIRE(find(g, plain) != nullptr);
  CHECK(find(g, plain)->status == "ok");
  CHECK(!find(g, plain)->from_cache);
  CHECK(!g.winner.empty());
  CHECK(g.space_hash != r.space_hash);
  CHECK(engine.counters().compiles == space.size() + 1);  // only the new config was compiled
}

TEST_CASE("autotune: injected fault, hang, wrong and out-of-bounds candidates are recorded; the winner is correct; "
          "the caller's context stays healthy") {
  const std::string dir = temp_cache_dir();
  EngineOptions eo;
  eo.cache_dir = dir;
  Engine engine(eo);
  const TransposeProblem p = problem_of(1024, 512);
  const std::vector<TransposeConfig> space = transpose_tuning_space(DType::F32, 16);
  REQUIRE(space.size() >= 6);
  // The caller's own context, in use before the tune.
  CHECK(transpose_errors(engine, p, &space.back(), 3) == 0);
  DeviceBuffer mine(1 << 20);
  mine.memset32(0x12345678u);

  const std::string fault = space[0].to_string(), hang = space[1].to_string(), wrong = space[2].to_string(),
                    oob = space[3].to_string();
  TuneOptions o;
  o.max_candidates = 6;
  o.candidate_timeout_s = 3;
  o.inject = {{fault, "fault"}, {hang, "hang"}, {wrong, "wrong"}, {oob, "oob"}};
  const TuneReport r = autotune_transpose(engine, p, 16, o);
  INFO(describe(r));
  REQUIRE(find(r, fault) != nullptr);
  REQUIRE(find(r, hang) != nullptr);
  REQUIRE(find(r, wrong) != nullptr);
  CHECK(find(r, fault)->status == "launch-failed");
  CHECK(find(r, fault)->reason.find("ILLEGAL_ADDRESS") != std::string::npos);
  CHECK(find(r, hang)->status == "timeout");
  CHECK(find(r, wrong)->status == "wrong-result");
  CHECK(find(r, wrong)->reason.find("largest difference at out[0]") != std::string::npos);
  REQUIRE(find(r, oob) != nullptr);
  CHECK(find(r, oob)->status == "wrong-result");
  CHECK(find(r, oob)->reason.find("wrote outside out (0 bytes after its end)") != std::string::npos);
  CHECK(r.failures.at("launch-failed") == 1);
  CHECK(r.failures.at("timeout") == 1);
  CHECK(r.failures.at("wrong-result") == 2);
  CHECK(r.worker_restarts >= 2);  // after the fault and after the hang
  CHECK(r.budget_exhausted);      // max_candidates cut the space
  REQUIRE(!r.winner.empty());
  CHECK(r.winner != fault);
  CHECK(r.winner != hang);
  CHECK(r.winner != wrong);
  CHECK(r.winner != oob);

  // The failures are data in the cache too.
  const auto stored = engine.cache().load_candidates(engine.transpose_tuning_key(p, 16));
  REQUIRE(stored.count(family_text(hang)) == 1);
  CHECK(stored.at(family_text(hang)).status == "timeout");
  CHECK(stored.at(family_text(fault)).status == "launch-failed");

  // The caller's context never saw any of it.
  std::string why;
  CHECK_MESSAGE(!context_lost(&why), why);
  std::vector<std::uint32_t> back(4);
  mine.copy_to_host(back.data(), 16);
  CHECK(back[0] == 0x12345678u);
  const TransposeConfig winner = TransposeConfig::parse(r.winner);
  CHECK(transpose_errors(engine, p, &winner, 4) == 0);
}

TEST_CASE("autotune: a second Engine and a second process get the winner with no compile and no benchmark") {
  const std::string dir = temp_cache_dir();
  const TransposeProblem p = problem_of(1024, 768);
  std::string winner;
  {
    EngineOptions eo;
    eo.cache_dir = dir;
    eo.policy = TunePolicy::TuneOnMiss;
    Engine engine(eo);
    CHECK(transpose_errors(engine, p, nullptr, 5) == 0);  // tunes on this miss, then launches the winner
    CHECK(engine.counters().tunes == 1);
    CHECK(engine.counters().benchmark_runs > 0);
    CHECK(engine.counters().tuned_misses == 1);
    winner = engine.transpose_config(p, 256, 256).to_string();
    CHECK(transpose_errors(engine, p, nullptr, 6) == 0);
    CHECK(engine.counters().tunes == 1);  // not again
  }
  {
    EngineOptions eo;
    eo.cache_dir = dir;
    eo.policy = TunePolicy::TuneOnMiss;
    Engine engine(eo);
    CHECK(engine.transpose_config(p, 256, 256).to_string() == winner);
    CHECK(transpose_errors(engine, p, nullptr, 7) == 0);
    CHECK(engine.counters().compiles == 0);
    CHECK(engine.counters().benchmark_runs == 0);
    CHECK(engine.counters().tunes == 0);
    CHECK(engine.counters().tuned_hits == 1);
  }
  REQUIRE(setenv(kWarmDirVariable, dir.c_str(), 1) == 0);
  const swz::test::ChildResult child = swz::test::run_child_mode("autotune-warm");
  unsetenv(kWarmDirVariable);
  INFO(child.output);
  CHECK(child.exit_code == 0);
}

TEST_CASE("autotune gemm: f16 NT and f32 NN tunes pick winners that match an f64 host reference; a second "
          "Engine uses the winner with no compile and no benchmark") {
  struct Case {
    GemmProblem problem;
    double tolerance;
  };
  const Case cases[] = {
      {gemm_problem(DType::F16, DType::F16, MatrixOrder::RowMajor, MatrixOrder::ColMajor), 1e-2},
      {gemm_problem(DType::F32, DType::F32, MatrixOrder::RowMajor, MatrixOrder::RowMajor), 1e-5},
  };
  for (const Case& c : cases) {
    const GemmProblem& p = c.problem;
    CAPTURE(p.key(16));
    const std::string dir = temp_cache_dir();
    // The candidates the tuner measures: the family's space (sgemm or hgemm on the problem in its kernels'
    // frame) after the bank filter, less the split-K configs the family skips on this shape
    // (FamilyProgram::skip) and configs over the device's shared memory. The default config is always one.
    const std::shared_ptr<const Family> family = detail::gemm_mma_builtin(p.dtype);
    const FamilyValues fp = detail::gemm_family_problem(p.resolved(), 16);
    std::size_t space = 0;
    const int smem_limit = device_info(0).max_smem_per_block_optin;
    const std::string def = default_gemm_config(p, 16).to_string();
    bool has_default = false;
    for (const FamilyValues& v : family->space(fp)) {
      const GemmConfig cfg = detail::gemm_mma_config_of(v, fp);
      if (analyze_gemm(cfg).excess() == 0 && family->def().program->skip(v, fp).empty() &&
          cfg.smem_bytes() <= smem_limit) {
        ++space;
        has_default = has_default || cfg.to_string() == def;
      }
    }
    if (!has_default) ++space;
    std::string winner;
    {
      EngineOptions eo;
      eo.cache_dir = dir;
      Engine engine(eo);
      const TuneReport r = autotune_gemm(engine, p, 16);
      INFO(describe(r));
      REQUIRE(!r.winner.empty());
      CHECK(r.failures.empty());
      CHECK(r.benchmarked == static_cast<int>(space));
      CHECK(r.retimed >= std::min<int>(3, static_cast<int>(space)));
      CHECK(r.retimed <= std::min<int>(3, static_cast<int>(space)) + 1);  // the default joins the best three
      CHECK(r.default_config == def);
      CHECK(r.default_ms > 0);
      CHECK(r.winner_ms <= r.default_ms);
      CHECK(r.worker_restarts == 0);
      CHECK(r.winner_ms > 0);
      CHECK(r.winner_tflops > 0);
      CHECK(r.compiled == static_cast<int>(space) + 2);  // candidates, check and reference kernels
      for (const auto& cand : r.candidates) {
        if (cand.status != "ok") continue;
        CHECK(cand.p20_ms <= cand.median_ms);
        CHECK(cand.median_ms <= cand.p80_ms);
        CHECK(cand.repetitions >= 10);
      }
      // Stored as the family's: its tuning key and definition hash, the config in its text.
      const TuningProblemKey key = engine.gemm_tuning_key(p, 16);
      CHECK(key.operation == "family:" + family->name());
      CHECK(key.operation == engine.family_tuning_key(*family, fp).operation);
      CHECK(engine.cache().load_candidates(key).size() == space);
      CHECK(r.space_hash == family->definition_hash());
      const auto stored = engine.cache().load_winner(key, family->definition_hash());
      REQUIRE(stored.has_value());
      CHECK(detail::gemm_mma_config_of(family->parse_config(stored->config), fp).to_string() == r.winner);
      winner = r.winner;
      // The winner is correct on other data, given explicitly and as the engine's own choice.
      const GemmConfig w = GemmConfig::parse(r.winner);
      CHECK(gemm_error(engine, p, &w, 11) < c.tolerance);
      CHECK(engine.gemm_config(p, 256, 256).to_string() == winner);
      CHECK(gemm_error(engine, p, nullptr, 12) < c.tolerance);
      CHECK(engine.counters().tuned_hits == 1);
      CHECK(engine.counters().tunes == 1);
    }
    {
      EngineOptions eo;
      eo.cache_dir = dir;
      eo.policy = TunePolicy::TuneOnMiss;  // a miss would tune: the counters would show it
      Engine engine(eo);
      CHECK(gemm_error(engine, p, nullptr, 13) < c.tolerance);
      CHECK(engine.gemm_config(p, 256, 256).to_string() == winner);
      CHECK(engine.counters().compiles == 0);
      CHECK(engine.counters().benchmark_runs == 0);
      CHECK(engine.counters().tunes == 0);
      CHECK(engine.counters().tuned_hits == 1);
      CHECK(engine.cache().counters().misses == 0);
    }
  }
}

TEST_CASE("autotune gemm: the default is measured and re-timed even when max_candidates cuts it; the stored winner "
          "is never slower than it in that re-time") {
  // The item 2 (bf16 8192^3 NN: default 510 TFLOP/s, tuned 445), on a shape that tunes quickly.
  GemmProblem p = gemm_problem(DType::BF16, DType::BF16, MatrixOrder::RowMajor, MatrixOrder::RowMajor);
  p.m = 1024;
  p.n = 1024;
  p.k = 1024;
  const std::string def = default_gemm_config(p, 16).to_string();
  EngineOptions eo;
  eo.cache_dir = temp_cache_dir();
  eo.hopper_gemm = false;  // the mma.sync space (the Hopper variant's: gemm_sm90_tune_gpu_test.cpp)
  Engine engine(eo);
  double default_first_pass = 0;  // the first round's, which the second reuses from the cache
  for (int max_candidates : {2, 0}) {
    CAPTURE(max_candidates);
    TuneOptions o;
    o.max_candidates = max_candidates;
    const TuneReport r = autotune_gemm(engine, p, 16, o);
    INFO(describe(r));
    REQUIRE(!r.winner.empty());
    CHECK(r.default_config == def);
    REQUIRE(find(r, def) != nullptr);
    CHECK(find(r, def)->status == "ok");
    // Its re-time is this tune's; its first pass is kept beside it (stored, and reused by the second tune).
    CHECK(find(r, def)->from_cache == (max_candidates == 0));
    CHECK(r.default_ms > 0);
    CHECK(r.default_ms == find(r, def)->retime_ms);
    CHECK(find(r, def)->median_ms > 0);
    // The cache keeps the first pass, not the re-time (which runs on a busy GPU): the second tune lists the
    // first tune's first pass, and ranks its re-time set on first passes alone.
    if (max_candidates == 2) default_first_pass = find(r, def)->median_ms;
    if (max_candidates == 0) CHECK(find(r, def)->median_ms == doctest::Approx(default_first_pass).epsilon(1e-12));
    CHECK(r.winner_ms <= r.default_ms);
    CHECK(r.retimed >= 2);
    // An engine made now runs the stored winner, which is correct. (`engine` keeps the choice it made
    // for the problem in the first round: Engine::gemm_config remembers it for the engine's life.)
    Engine fresh(eo);
    CHECK(fresh.gemm_config(p, 256, 256).to_string() == r.winner);
    CHECK(gemm_error(fresh, p, nullptr, 21) < 1e-2);
  }
}

TEST_CASE("autotune gemm: TuneOnMiss on successive problems next to a default-policy Engine never hangs") {
  // The item 1(a): an application with a TuneOnMiss Engine calling gemm on successive problems
  // (f16 NT 128x14336x4096, then 4096x4096x512; smaller here) and a second, default-policy Engine in the
  // same process hung inside the second to fifth tune. Every call must return, with a correct result.
  const std::string dir = temp_cache_dir();
  EngineOptions tuned;
  tuned.cache_dir = dir;
  tuned.policy = TunePolicy::TuneOnMiss;
  Engine engine(tuned);
  EngineOptions plain;
  plain.cache_dir = dir;
  Engine other(plain);
  const long long shapes[][3] = {{128, 1024, 512}, {512, 512, 256}, {256, 768, 384}, {128, 1024, 512}};
  for (const auto& s : shapes) {
    GemmProblem p = gemm_problem(DType::F16, DType::F16, MatrixOrder::RowMajor, MatrixOrder::ColMajor);
    p.m = s[0];
    p.n = s[1];
    p.k = s[2];
    CAPTURE(p.key(16));
    CHECK(gemm_error(engine, p, nullptr, 31) < 1e-2);
    CHECK(gemm_error(other, p, nullptr, 32) < 1e-2);
  }
  CHECK(engine.counters().tunes == 3);  // the repeated shape is a hit
  CHECK(other.counters().tunes == 0);
}

TEST_CASE("autotune: TuneOnMiss calls from several threads on one problem while it is tuned are all exact") {
  // Found by the soak (bench/soak.cpp): a call that ran the default while another thread tuned the same
  // problem gave its kernel to the memo entry of the tuned config (wrong results from then on), or
  // found no entry (map::at). Every call here must be exact, during the tune and after it.
  EngineOptions o;
  o.cache_dir = temp_cache_dir();
  o.policy = TunePolicy::TuneOnMiss;
  Engine engine(o);
  TransposeProblem p = problem_of(1000, 776);
  p.dtype = DType::F16;
  std::atomic<long long> bad{0}, calls{0};
  std::atomic<bool> tuned{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    bad += transpose_errors(engine, p, nullptr, 1);  // the first call tunes
    tuned = true;
  });
  for (unsigned t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (unsigned i = 0; !tuned || i < 20; ++i) {
        bad += transpose_errors(engine, p, nullptr, 100 * t + i);
        ++calls;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  CHECK(calls >= 60);
  CHECK(engine.counters().tunes == 1);
}
