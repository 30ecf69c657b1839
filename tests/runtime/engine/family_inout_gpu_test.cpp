// tests/runtime (GPU suite): inout buffers (BufferRole::InOut) end to end on "rowsum_acc" (out = alpha *
// row sums + beta * out in ONE buffer, as a GEMM's C with beta): run_family over every configuration
// with non-zero beta against a host f64 reference; a tune in the isolated worker, where several
// candidates verify on one buffer (restored before each) and a deliberately wrong variant that ignores
// out's initial values is recorded as wrong-result; the winner run by a new engine.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_inout_fixtures.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuardFloats = 64;

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_family_inout_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

// One problem's data: `in`, out's initial values, and out on the device between poisoned guards.
struct AccData {
  long long rows, cols;
  std::vector<float> in, initial;
  DeviceBuffer d_in, d_out;

  AccData(long long r, long long k, std::mt19937& rng) : rows(r), cols(k) {
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    in.resize(static_cast<std::size_t>(rows * cols));
    initial.resize(static_cast<std::size_t>(rows));
    for (float& v : in) v = dist(rng);
    for (float& v : initial) v = dist(rng);
    d_in = DeviceBuffer(std::max<std::size_t>(1, in.size()) * 4);
    d_out = DeviceBuffer((static_cast<std::size_t>(rows) + 2 * kGuardFloats) * 4);
    if (!in.empty()) d_in.copy_from_host(in.data(), in.size() * 4);
  }
  FamilyValues problem() const { return {{"rows", rows}, {"cols", cols}}; }
  std::map<std::string, DevicePtr> buffers() const { return {{"in", d_in.ptr()}, {"out", d_out.ptr() + kGuardFloats * 4}}; }
  // Guards poisoned, out back to its initial values.
  void reset(CUstream s) {
    d_out.memset8(0xFF, s);
    if (!initial.empty()) d_out.copy_from_host(initial.data(), initial.size() * 4, kGuardFloats * 4, s);
  }
  // Wrong elements (relative to the row's magnitude, against an f64 host reference) plus changed guard words.
  long long wrong(double alpha, double beta) const {
    std::vector<std::uint32_t> bits(static_cast<std::size_t>(rows) + 2 * kGuardFloats);
    d_out.copy_to_host(bits.data(), bits.size() * 4);
    long long bad = 0;
    for (std::size_t i = 0; i < kGuardFloats; ++i)
      bad += (bits[i] != 0xFFFFFFFFu) + (bits[kGuardFloats + static_cast<std::size_t>(rows) + i] != 0xFFFFFFFFu);
    for (long long r = 0; r < rows; ++r) {
      double sum = 0, mag = 0;
      for (long long k = 0; k < cols; ++k) {
        sum += in[static_cast<std::size_t>(r * cols + k)];
        mag += std::fabs(in[static_cast<std::size_t>(r * cols + k)]);
      }
      const double c0 = initial[static_cast<std::size_t>(r)];
      const double want = alpha * sum + beta * c0;
      float got;
      std::memcpy(&got, &bits[kGuardFloats + static_cast<std::size_t>(r)], 4);
      const double scale = std::fabs(alpha) * mag + std::fabs(beta * c0) + 1e-30;
      if (!std::isfinite(got) || std::fabs(got - want) > 1e-5 * scale) ++bad;
    }
    return bad;
  }
};

}  // namespace

TEST_CASE("rowsum_acc (inout): every configuration reads and writes out, with non-zero beta") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::rowsum_acc_family_text()));
  std::mt19937 rng(21);
  const FamilyScalars scalars{{"alpha", -0.75}, {"beta", 2.0}};
  for (const auto& shape : std::vector<std::pair<long long, long long>>{{1, 1}, {37, 1000}, {1000, 3}, {5, 0}}) {
    AccData d(shape.first, shape.second, rng);
    for (const FamilyValues& cfg : f->space(d.problem())) {
      Stream s;
      d.reset(s.handle());
      engine.run_family(*f, d.problem(), d.buffers(), scalars, s.handle(), &cfg);
      s.synchronize();
      CHECK_MESSAGE(d.wrong(-0.75, 2.0) == 0, (f->problem_text(d.problem()) + " " + f->config_text(cfg)));
    }
    // The defaults when no scalars are given; the reference reads and writes out the same way.
    Stream s;
    d.reset(s.handle());
    engine.run_family(*f, d.problem(), d.buffers(), s.handle());
    s.synchronize();
    CHECK(d.wrong(1.5, 0.5) == 0);
    d.reset(s.handle());
    engine.run_family_reference(*f, d.problem(), d.buffers(), scalars, s.handle());
    s.synchronize();
    CHECK(d.wrong(-0.75, 2.0) == 0);
    // Twice in a row: the second run starts from the first's result (the engine never restores).
    if (d.rows > 1) {
      d.reset(s.handle());
      engine.run_family(*f, d.problem(), d.buffers(), {{"beta", 1.0}}, s.handle());
      engine.run_family(*f, d.problem(), d.buffers(), {{"beta", 1.0}}, s.handle());
      s.synchronize();
      CHECK(d.wrong(3.0, 1.0) == 0);  // 1.5 * sum + (1.5 * sum + out)
    }
  }
}

TEST_CASE("rowsum_acc (inout): a tune in the worker restores out for each candidate; a wrong variant is caught") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  const auto f = register_family(FamilyDef::parse(swz_test::rowsum_acc_family_text()));
  const FamilyValues p{{"rows", 4099}, {"cols", 1000}};
  TuneReport report;
  {
    Engine engine(eo);
    TuneOptions o;
    o.candidate_timeout_s = 20;
    report = autotune_family(engine, *f, p, o);
    REQUIRE(!report.winner.empty());
    int ok = 0;
    // Every candidate verifies on the buffer the ones before it were timed on (out changed each run):
    // they pass only if out is restored to the reference's initial values first.
    for (const auto& c : report.candidates) {
      ok += c.status == "ok";
      CHECK_MESSAGE(c.status == "ok", (c.config + ": " + c.status + " " + c.reason));
    }
    CHECK(ok == 6);
  }
  Engine warm(eo);
  CHECK(f->config_text(warm.family_config(*f, p)) == report.winner);
  std::mt19937 rng(22);
  AccData d(4099, 1000, rng);
  Stream s;
  d.reset(s.handle());
  warm.run_family(*f, d.problem(), d.buffers(), {{"alpha", 0.5}, {"beta", -4.0}}, s.handle());
  s.synchronize();
  CHECK(d.wrong(0.5, -4.0) == 0);
  CHECK(warm.counters().tunes == 0);

  // THREADS=64 ignores out's initial values (beta's term): wrong-result, and the tune goes on.
  EngineOptions eo2;
  eo2.cache_dir = temp_dir();
  Engine engine(eo2);
  std::string text = swz_test::rowsum_acc_family_text("rowsum_acc_wrong");
  const std::string term = "out[r] = alpha * s + beta * out[r];";
  REQUIRE(text.find(term) != std::string::npos);
  text.replace(text.find(term), term.size(), "out[r] = alpha * s + (THREADS == 64 ? 0.f : beta) * out[r];");
  const auto g = register_family(FamilyDef::parse(text));
  const TuneReport r = autotune_family(engine, *g, p);
  int wrong = 0;
  for (const auto& c : r.candidates) {
    const bool bad = c.config.find("THREADS=64") != std::string::npos;
    wrong += c.status == "wrong-result";
    CHECK_MESSAGE(c.status == (bad ? "wrong-result" : "ok"), (c.config + ": " + c.status + " " + c.reason));
    if (bad) CHECK_MESSAGE(c.reason.find("out") != std::string::npos, c.reason);
  }
  CHECK(wrong == 2);
  CHECK(r.winner.find("THREADS=64") == std::string::npos);
}
