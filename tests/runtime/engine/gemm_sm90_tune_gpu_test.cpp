// tests/runtime/engine (GPU suite): the Hopper GEMM variant under tuning on an sm_90 device -- autotune_gemm
// tunes its space in the worker (each candidate verified against the f64 reference there), the winner is
// stored under the variant's space and run by a later engine with no tune, TuneOnMiss tunes it on the first
// call, the winner is never slower than the default in the same re-time, and threads sharing one engine
// run it concurrently with exact results.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

std::uint16_t to_half(float f) {  // round to nearest even, finite inputs in range
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (exp <= 0) return static_cast<std::uint16_t>(sign);
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(h);
}

float from_half(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1F;
  const std::uint32_t mant = h & 0x3FFu;
  std::uint32_t x;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) x = sign | 0x7F800000u | (mant << 13);
  else x = sign | (static_cast<std::uint32_t>(exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// An f16 NT problem (A row-major m x k, B column-major, C row-major) on fresh random data: runs
// engine.gemm on `stream` and returns the relative Frobenius error of `samples` random elements of C
// against f64 sums (C poisoned with NaN first: beta = 0 must not read it).
struct NtRun {
  long long m, n, k;
  std::vector<float> a, b;  // the values as rounded to f16
  DeviceBuffer da, db, dc;
  NtRun(long long m_, long long n_, long long k_, std::mt19937_64& rng)
      : m(m_), n(n_), k(k_), a(static_cast<std::size_t>(m_ * k_)), b(static_cast<std::size_t>(n_ * k_)),
        da(static_cast<std::size_t>(m_ * k_ * 2)), db(static_cast<std::size_t>(n_ * k_ * 2)),
        dc(static_cast<std::size_t>(m_ * n_ * 2)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<std::uint16_t> ha(a.size()), hb(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = from_half(ha[i] = to_half(u(rng)));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = from_half(hb[i] = to_half(u(rng)));
    da.copy_from_host(ha.data(), ha.size() * 2);
    db.copy_from_host(hb.data(), hb.size() * 2);
  }
  GemmProblem problem() const {
    GemmProblem p;
    p.dtype = p.out_dtype = DType::F16;
    p.m = m, p.n = n, p.k = k;
    p.a_order = MatrixOrder::RowMajor;
    p.b_order = MatrixOrder::ColMajor;
    p.c_order = MatrixOrder::RowMajor;
    return p;
  }
  double run(Engine& engine, CUstream stream, std::mt19937_64& rng) {
    std::vector<std::uint16_t> poison(static_cast<std::size_t>(m * n), 0x7E00u);  // NaN
    dc.copy_from_host(poison.data(), poison.size() * 2);
    engine.gemm(problem(), da.ptr(), db.ptr(), dc.ptr(), 1.0f, 0.0f, stream);
    synchronize(stream);
    std::vector<std::uint16_t> hc(static_cast<std::size_t>(m * n));
    dc.copy_to_host(hc.data(), hc.size() * 2);
    std::uniform_int_distribution<long long> ri(0, m - 1), ci(0, n - 1);
    double num = 0, den = 0;
    for (int s = 0; s < 400; ++s) {
      const long long r = ri(rng), c = ci(rng);
      double ref = 0;
      for (long long q = 0; q < k; ++q)
        ref += static_cast<double>(a[static_cast<std::size_t>(r * k + q)]) * b[static_cast<std::size_t>(c * k + q)];
      const double got = from_half(hc[static_cast<std::size_t>(r * n + c)]);
      if (!std::isfinite(got)) return 1e9;
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
    return std::sqrt(num / (den > 0 ? den : 1));
  }
};

bool ran_sm90(Engine& e) {
  for (const KernelListing& k : e.cache().list_kernels())
    if (k.fields.name_expression.find("gemm_sm90") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("gemm on sm_90: the Hopper variant is tuned, stored, reused by a later engine, and TuneOnMiss tunes it") {
  if (device_info(0).arch() != "sm_90") {
    MESSAGE("skipped: device 0 is " << device_info(0).arch() << ", the Hopper GEMM variant needs sm_90");
    return;
  }
  std::mt19937_64 rng(std::random_device{}());
  NtRun run(2048, 2048, 1024, rng);
  const swz_cache_test::TempDir cache_dir;
  const std::string dir = cache_dir.path();
  std::string winner;
  {
    Engine engine(EngineOptions{0, TunePolicy::Default, dir, true});
    TuneOptions o;
    o.max_candidates = 8;
    const TuneReport r = autotune_gemm(engine, run.problem(), 16, o);
    CAPTURE(r.winner);
    REQUIRE(is_sm90_candidate(r.winner));
    const DeviceInfo info = device_info(0);
    CHECK(r.default_config ==
          sm90_candidate_text(choose_sm90_gemm_config(run.problem().resolved(), info.sm_count, info.dram_gbps)));
    CHECK(r.benchmarked >= 2);
    for (const TuneCandidate& c : r.candidates) CHECK_MESSAGE(c.status == "ok", c.config << ": " << c.status << " " << c.reason);
    // The winner is never slower than the default in the measurement it was chosen on.
    REQUIRE(r.default_ms > 0);
    CHECK(r.winner_ms <= r.default_ms);
    // Stored under the built-in family gemm_sm90's definition (the variant's tuner is the family's).
    CHECK(r.space_hash == detail::gemm_sm90_builtin()->definition_hash());
    winner = r.winner;
    MESSAGE("Hopper tune of 2048x2048x1024: winner " << r.winner << " " << r.winner_tflops << " TFLOP/s, default "
                                                     << r.default_ms << " ms, " << r.seconds << " s");
  }
  {
    Engine engine(EngineOptions{0, TunePolicy::Default, dir, true});
    CHECK(run.run(engine, nullptr, rng) < 1e-2);
    CHECK(ran_sm90(engine));
    CHECK(engine.counters().tuned_hits == 1);
    CHECK(engine.counters().tunes == 0);
  }
  {
    const swz_cache_test::TempDir other;
    Engine engine(EngineOptions{0, TunePolicy::TuneOnMiss, other.path(), true});
    CHECK(run.run(engine, nullptr, rng) < 1e-2);
    CHECK(engine.counters().tunes == 1);
    CHECK(ran_sm90(engine));
    CHECK(run.run(engine, nullptr, rng) < 1e-2);  // remembered: no second tune
    CHECK(engine.counters().tunes == 1);
  }
}

TEST_CASE("gemm on sm_90: threads sharing one engine run the Hopper variant on their own streams, exact") {
  if (device_info(0).arch() != "sm_90") {
    MESSAGE("skipped: device 0 is " << device_info(0).arch() << ", the Hopper GEMM variant needs sm_90");
    return;
  }
  const swz_cache_test::TempDir dir;
  Engine engine(EngineOptions{0, TunePolicy::Default, dir.path(), true});
  const long long shapes[4][3] = {{1024, 1536, 512}, {2048, 1024, 1000}, {1000, 2040, 776}, {1536, 1536, 256}};
  std::vector<double> errors(8, -1);
  std::vector<std::string> failures(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        std::mt19937_64 rng(0x5EED0000u + static_cast<unsigned>(t));
        const long long* s = shapes[t % 4];
        NtRun run(s[0], s[1], s[2], rng);
        Stream stream(0);
        double worst = 0;
        for (int rep = 0; rep < 3; ++rep) worst = std::max(worst, run.run(engine, stream.handle(), rng));
        errors[static_cast<std::size_t>(t)] = worst;
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(t)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) {
    CHECK_MESSAGE(failures[static_cast<std::size_t>(t)].empty(), "thread " << t << ": " << failures[static_cast<std::size_t>(t)]);
    CHECK_MESSAGE(errors[static_cast<std::size_t>(t)] >= 0, "thread " << t);
    CHECK_MESSAGE(errors[static_cast<std::size_t>(t)] < 1e-2, "thread " << t << ": relative error " << errors[static_cast<std::size_t>(t)]);
  }
  CHECK(ran_sm90(engine));
  // Four shapes, one config each at most: each kernel compiled and loaded once.
  CHECK(engine.counters().kernel_loads <= 4);
}

TEST_CASE("gemm on sm_90: the default and the tune follow the device's DRAM bandwidth (skinny K in a cluster pair)") {
  if (device_info(0).arch() != "sm_90") {
    MESSAGE("skipped: device 0 is " << device_info(0).arch() << ", the Hopper GEMM variant needs sm_90");
    return;
  }
  const DeviceInfo info = device_info(0);
  MESSAGE(info.name << ": " << info.dram_gbps << " GB/s of DRAM, " << info.sm_count << " SMs");
  CHECK(info.dram_gbps > 0);  // an sm_90 driver reports the memory clock and bus width
  std::mt19937_64 rng(std::random_device{}());
  NtRun run(16, 4096, 4096, rng);
  const GemmProblem p = run.problem().resolved();
  const Sm90GemmConfig want = choose_sm90_gemm_config(p, info.sm_count, info.dram_gbps);
  // The rule's device class: an H200 (36.5 GB/s per SM) splits K, an H100 SXM (25.4) keeps it whole.
  CHECK((want.splits == 2 && want.reduce_cluster) == (info.dram_gbps >= 30 * info.sm_count));
  const swz_cache_test::TempDir dir;
  Engine engine(EngineOptions{0, TunePolicy::Default, dir.path(), true});
  // What the engine runs untuned, what the tune reports as the default, and that the tune can come back to
  // the default of an unknown bandwidth.
  const FamilyValues fp = detail::gemm_family_problem(p, 16);
  CHECK(detail::gemm_sm90_config_of(engine.family_config(*detail::gemm_sm90_builtin(), fp), fp) == want);
  CHECK(run.run(engine, nullptr, rng) < 1e-2);
  TuneOptions o;
  o.max_candidates = 4;
  const TuneReport r = autotune_gemm(engine, p, 16, o);
  CHECK(r.default_config == sm90_candidate_text(want));
  const std::vector<FamilyValues> space =
      detail::gemm_sm90_builtin()->space(with_device(fp, info.sm_count, info.dram_gbps));
  CHECK(r.space_size == static_cast<int>(space.size()));
  CHECK(std::find(space.begin(), space.end(), detail::gemm_sm90_family_config(want)) != space.end());
  CHECK(std::find(space.begin(), space.end(),
                  detail::gemm_sm90_family_config(choose_sm90_gemm_config(p, info.sm_count))) != space.end());
  CHECK(run.run(engine, nullptr, rng) < 1e-2);
}
