// tests/runtime (GPU suite): declared families end to end — rowsum against a host f64 reference on
// fresh random data with odd shapes, poisoned outputs and guards, every configuration; a tune that
// verifies in the worker and persists its winner (a second engine starts with it, 0 compiles); an
// application's own family whose faulting and wrong candidates are contained and recorded.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <atomic>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_fixtures.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuardFloats = 256;

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_family_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

// Runs rowsum with `cfg` (nullptr: the engine's choice) and returns the number of wrong outputs plus
// guard words that changed.
long long run_rowsum(Engine& engine, const Family& f, long long batch, long long rows, long long cols,
                     const FamilyValues* cfg, std::mt19937& rng) {
  const FamilyValues p{{"batch", batch}, {"rows", rows}, {"cols", cols}};
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> in(static_cast<std::size_t>(batch * rows * cols));
  for (float& v : in) v = dist(rng);
  const std::size_t out_n = static_cast<std::size_t>(batch * rows);
  DeviceBuffer d_in(in.size() * 4), d_out((out_n + 2 * kGuardFloats) * 4);
  d_in.copy_from_host(in.data(), in.size() * 4);
  d_out.memset8(0xFF);
  Stream stream;
  engine.run_family(f, p, {{"in", d_in.ptr()}, {"out", d_out.ptr() + kGuardFloats * 4}}, stream.handle(), cfg);
  stream.synchronize();
  std::vector<std::uint32_t> out(out_n + 2 * kGuardFloats);
  d_out.copy_to_host(out.data(), out.size() * 4);
  long long wrong = 0;
  for (std::size_t i = 0; i < kGuardFloats; ++i)
    wrong += (out[i] != 0xFFFFFFFFu) + (out[kGuardFloats + out_n + i] != 0xFFFFFFFFu);
  for (std::size_t r = 0; r < out_n; ++r) {
    double want = 0, mag = 0;
    for (long long c = 0; c < cols; ++c) {
      want += in[r * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
      mag += std::fabs(in[r * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)]);
    }
    float got;
    std::memcpy(&got, &out[kGuardFloats + r], 4);
    if (!(std::fabs(got - want) <= 1e-5 * mag + 1e-6)) ++wrong;
  }
  return wrong;
}

}  // namespace

TEST_CASE("rowsum (declared family): every configuration matches the f64 host sums on odd shapes") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const auto f = get_family("rowsum");
  std::mt19937 rng(1234);
  struct Shape {
    long long batch, rows, cols;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 1000, 777}, Shape{2, 33, 31}, Shape{1, 257, 4096}, Shape{5, 64, 32}}) {
    const FamilyValues p{{"batch", s.batch}, {"rows", s.rows}, {"cols", s.cols}};
    for (const FamilyValues& c : f->space(p))
      CHECK_MESSAGE(run_rowsum(engine, *f, s.batch, s.rows, s.cols, &c, rng) == 0,
                    (f->config_text(c) + " on " + f->problem_text(p)));
    CHECK(run_rowsum(engine, *f, s.batch, s.rows, s.cols, nullptr, rng) == 0);
  }
}

TEST_CASE("rowsum (declared family): a tune verifies in the worker, stores its winner, and a new engine uses it") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  const auto f = get_family("rowsum");
  const FamilyValues p{{"batch", 4}, {"rows", 4099}, {"cols", 1000}};
  TuneReport report;
  {
    Engine engine(eo);
    report = autotune_family(engine, *f, p);
    CHECK(!report.winner.empty());
    CHECK(report.default_config == "BLOCK_ROWS=64,LAYOUT=2");
    int ok = 0;
    for (const auto& c : report.candidates) {
      ok += c.status == "ok";
      CHECK_MESSAGE((c.status == "ok" || c.status == "skipped-static"), (c.config + ": " + c.status + " " + c.reason));
    }
    CHECK(ok == 8);  // the 4 plain layouts are rejected by the bank analysis
  }
  Engine warm(eo);
  CHECK(f->config_text(warm.family_config(*f, p)) == report.winner);
  std::mt19937 rng(5);
  CHECK(run_rowsum(warm, *f, 4, 4099, 1000, nullptr, rng) == 0);
  CHECK(warm.counters().tuned_hits == 1);
  CHECK(warm.counters().compiles == 0);
  CHECK(warm.counters().tunes == 0);
}

TEST_CASE("an application's own family: faulting and wrong candidates are recorded, the tune goes on") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::scale_family_text("0 1 2", "scale2_gpu")));
  const FamilyValues p{{"n", 100003}};
  TuneOptions o;
  o.candidate_timeout_s = 20;
  const TuneReport r = autotune_family(engine, *f, p, o);
  int ok = 0, wrong = 0, failed = 0;
  for (const auto& c : r.candidates) {
    const bool fault1 = c.config.find("FAULT=1") != std::string::npos;
    const bool fault2 = c.config.find("FAULT=2") != std::string::npos;
    if (!fault1 && !fault2) {
      CHECK_MESSAGE(c.status == "ok", (c.config + ": " + c.status + " " + c.reason));
      ++ok;
    } else if (fault2) {
      CHECK_MESSAGE(c.status == "wrong-result", (c.config + ": " + c.status + " " + c.reason));
      ++wrong;
    } else {
      // An illegal address: the worker reports it and restarts; never "ok".
      CHECK_MESSAGE((c.status == "wrong-result" || c.status == "launch-failed"), (c.config + ": " + c.status));
      ++failed;
    }
  }
  CHECK(ok == 3);
  CHECK(wrong == 3);
  CHECK(failed == 3);
  CHECK(r.winner.find("FAULT=0") != std::string::npos);
  // run_family with the winner, and the reference, agree on the GPU.
  std::vector<float> in(100003);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97) - 48.f;
  DeviceBuffer d_in(in.size() * 4), d_out(in.size() * 4), d_ref(in.size() * 4);
  d_in.copy_from_host(in.data(), in.size() * 4);
  Stream s;
  engine.run_family(*f, p, {{"in", d_in.ptr()}, {"out", d_out.ptr()}}, s.handle());
  engine.run_family_reference(*f, p, {{"in", d_in.ptr()}, {"out", d_ref.ptr()}}, s.handle());
  s.synchronize();
  std::vector<float> out(in.size()), ref(in.size());
  d_out.copy_to_host(out.data(), out.size() * 4);
  d_ref.copy_to_host(ref.data(), ref.size() * 4);
  CHECK(out == ref);
  CHECK(out[7] == 2.f * in[7]);
  // A missing buffer is an error naming it.
  try {
    engine.run_family(*f, p, {{"in", d_in.ptr()}}, s.handle());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("'out'") != std::string::npos);
  }
}

TEST_CASE("declared families from several threads and engines at once: TuneOnMiss and Default, odd shapes") {
  EngineOptions tuned_opts, plain_opts;
  tuned_opts.cache_dir = temp_dir();
  tuned_opts.policy = TunePolicy::TuneOnMiss;
  plain_opts.cache_dir = tuned_opts.cache_dir;  // the same cache: winners appear while the other runs
  Engine tuned(tuned_opts), plain(plain_opts);
  const auto f = get_family("rowsum");
  std::vector<std::thread> threads;
  std::atomic<long long> wrong{0};
  std::atomic<int> runs{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      Engine& e = t % 2 ? tuned : plain;
      for (int i = 0; i < 6; ++i) {
        // A few shapes repeat across threads (the same problem tuned by one, run by all).
        const long long rows = 1 + static_cast<long long>(rng() % 3) * 517, cols = 1 + static_cast<long long>(rng() % 3) * 301;
        const long long batch = 1 + static_cast<long long>(rng() % 3);
        wrong += run_rowsum(e, *f, batch, rows, cols, nullptr, rng);
        ++runs;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(runs == 36);
  CHECK(wrong == 0);
  CHECK(tuned.counters().tunes >= 1);
  CHECK(plain.counters().tunes == 0);
}

TEST_CASE("run_family's repeated calls: the prepared launch takes each call's new buffers, no compile or load") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const auto f = get_family("rowsum");
  std::mt19937 rng(99);
  CHECK(run_rowsum(engine, *f, 3, 77, 1001, nullptr, rng) == 0);  // chooses, compiles, loads, prepares
  const EngineCounters before = engine.counters();
  for (int i = 0; i < 4; ++i) CHECK(run_rowsum(engine, *f, 3, 77, 1001, nullptr, rng) == 0);  // fresh buffers each
  const EngineCounters after = engine.counters();
  CHECK(after.compiles == before.compiles);
  CHECK(after.kernel_loads == before.kernel_loads);
  CHECK(after.launches == before.launches + 4);
  // Another shape gets its own preparation; a missing buffer is still refused on the prepared path.
  CHECK(run_rowsum(engine, *f, 1, 5, 33, nullptr, rng) == 0);
  DeviceBuffer d_in(3 * 77 * 1001 * 4);
  const FamilyValues p{{"batch", 3}, {"rows", 77}, {"cols", 1001}};
  CHECK_THROWS_WITH_AS(engine.run_family(*f, p, {{"in", d_in.ptr()}}, nullptr),
                       doctest::Contains("no device pointer for buffer 'out'"), Error);
  CHECK_THROWS_WITH_AS(engine.run_family(*f, p, {{"in", d_in.ptr()}, {"out", d_in.ptr()}, {"bogus", d_in.ptr()}}, nullptr),
                       doctest::Contains("unknown buffer 'bogus'"), Error);
}
