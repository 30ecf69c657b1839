// tests/runtime (GPU suite): the family contract's GEMM-facing parts end to end on "rowsum2" (scaled
// row sums in two launches: per-chunk partial sums into an engine-placed scratch buffer, then out =
// alpha * sum + beta * c): run_family with non-default scalars over every configuration and with a
// lent workspace, against a host f64 reference; a tune in the isolated worker (the then launch verified
// and timed with the kernel) whose winner the engine then runs.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_ext_fixtures.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuardFloats = 64;

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_family_ext_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    return e.what();
  }
  FAIL("no error");
  return "";
}

// One problem's data on the device and its f64 host answer for the given scalars.
struct Rowsum2Data {
  long long rows, cols;
  std::vector<float> in, c;
  DeviceBuffer d_in, d_c, d_out;

  Rowsum2Data(long long r, long long k, std::mt19937& rng) : rows(r), cols(k) {
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    in.resize(static_cast<std::size_t>(rows * cols));
    c.resize(static_cast<std::size_t>(rows));
    for (float& v : in) v = dist(rng);
    for (float& v : c) v = dist(rng);
    d_in = DeviceBuffer(std::max<std::size_t>(1, in.size()) * 4);
    d_c = DeviceBuffer(std::max<std::size_t>(1, c.size()) * 4);
    d_out = DeviceBuffer((static_cast<std::size_t>(rows) + 2 * kGuardFloats) * 4);
    if (!in.empty()) d_in.copy_from_host(in.data(), in.size() * 4);
    if (!c.empty()) d_c.copy_from_host(c.data(), c.size() * 4);
  }
  FamilyValues problem() const { return {{"rows", rows}, {"cols", cols}}; }
  std::map<std::string, DevicePtr> buffers() const {
    return {{"in", d_in.ptr()}, {"c", d_c.ptr()}, {"out", d_out.ptr() + kGuardFloats * 4}};
  }
  // Wrong outputs (relative error over 1e-5 of the row's magnitude) plus guard words that changed.
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
      const double want = alpha * sum + beta * c[static_cast<std::size_t>(r)];
      float got;
      std::memcpy(&got, &bits[kGuardFloats + static_cast<std::size_t>(r)], 4);
      const double scale = std::fabs(alpha) * mag + std::fabs(beta * c[static_cast<std::size_t>(r)]) + 1e-30;
      if (!std::isfinite(got) || std::fabs(got - want) > 1e-5 * scale) ++bad;
    }
    return bad;
  }
  void poison(CUstream s) { d_out.memset8(0xFF, s); }
};

}  // namespace

TEST_CASE("rowsum2 (scalars, scratch, then launch): every configuration with non-default alpha and beta") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::rowsum2_family_text()));
  std::mt19937 rng(11);
  const FamilyScalars scalars{{"alpha", -0.75}, {"beta", 2.0}};
  for (const auto& shape : std::vector<std::pair<long long, long long>>{{1, 1}, {37, 1000}, {1000, 3}, {5, 0}}) {
    Rowsum2Data d(shape.first, shape.second, rng);
    for (const FamilyValues& cfg : f->space(d.problem())) {
      Stream s;
      d.poison(s.handle());
      engine.run_family(*f, d.problem(), d.buffers(), scalars, s.handle(), &cfg);
      s.synchronize();
      CHECK_MESSAGE(d.wrong(-0.75, 2.0) == 0, (f->problem_text(d.problem()) + " " + f->config_text(cfg)));
    }
    // The defaults when no scalars are given; the reference takes the scalars too.
    Stream s;
    d.poison(s.handle());
    engine.run_family(*f, d.problem(), d.buffers(), s.handle());
    s.synchronize();
    CHECK(d.wrong(1.5, -0.5) == 0);
    d.poison(s.handle());
    engine.run_family_reference(*f, d.problem(), d.buffers(), scalars, s.handle());
    s.synchronize();
    CHECK(d.wrong(-0.75, 2.0) == 0);
  }
}

TEST_CASE("rowsum2: a lent workspace, its size, and the errors of scratch and scalars") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::rowsum2_family_text()));
  std::mt19937 rng(12);
  Rowsum2Data d(300, 777, rng);
  const FamilyValues cfg = f->parse_config("CHUNK=16,THREADS=64");
  const std::size_t need = engine.family_workspace_size(*f, d.problem(), d.buffers(), &cfg);
  CHECK(need == 300 * 49 * 4 / 256 * 256 + 256);  // 300 rows * ceil_div(777, 16) partials, rounded up
  CHECK(engine.family_workspace_size(*f, d.problem()) == f->scratch_bytes(engine.family_config(*f, d.problem()), d.problem()));
  DeviceBuffer ws(need);
  Stream s;
  d.poison(s.handle());
  engine.run_family(*f, d.problem(), d.buffers(), {{"alpha", 3.0}}, s.handle(), &cfg, FamilyWorkspace{ws.ptr(), need});
  s.synchronize();
  CHECK(d.wrong(3.0, -0.5) == 0);
  CHECK(error_of([&] {
          engine.run_family(*f, d.problem(), d.buffers(), {}, s.handle(), &cfg, FamilyWorkspace{ws.ptr(), need - 256});
        }).find("too small") != std::string::npos);
  CHECK(error_of([&] {
          engine.run_family(*f, d.problem(), d.buffers(), {}, s.handle(), &cfg, FamilyWorkspace{ws.ptr() + 4, need - 256});
        }).find("too small") != std::string::npos);
  CHECK(error_of([&] {
          DeviceBuffer big(need + 256);
          engine.run_family(*f, d.problem(), d.buffers(), {}, s.handle(), &cfg, FamilyWorkspace{big.ptr() + 4, need});
        }).find("256-byte aligned") != std::string::npos);
  std::map<std::string, DevicePtr> with_scratch = d.buffers();
  with_scratch["part"] = ws.ptr();
  CHECK(error_of([&] { engine.run_family(*f, d.problem(), with_scratch, s.handle()); }).find("'part' is scratch") !=
        std::string::npos);
  CHECK(error_of([&] { engine.run_family(*f, d.problem(), d.buffers(), {{"gamma", 1.0}}, s.handle()); })
            .find("unknown scalar 'gamma'") != std::string::npos);
  s.synchronize();
}

TEST_CASE("rowsum2: a tune in the worker verifies the two launches together, and the engine runs its winner") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  const auto f = register_family(FamilyDef::parse(swz_test::rowsum2_family_text()));
  const FamilyValues p{{"rows", 4099}, {"cols", 1000}};
  TuneReport report;
  {
    Engine engine(eo);
    TuneOptions o;
    o.candidate_timeout_s = 20;
    report = autotune_family(engine, *f, p, o);
    REQUIRE(!report.winner.empty());
    int ok = 0;
    for (const auto& c : report.candidates) {
      ok += c.status == "ok";
      CHECK_MESSAGE(c.status == "ok", (c.config + ": " + c.status + " " + c.reason));
      CHECK(c.median_ms > 0);
    }
    CHECK(ok == 6);
  }
  // A new engine takes the stored winner and runs it, with its own scalars.
  Engine warm(eo);
  CHECK(f->config_text(warm.family_config(*f, p)) == report.winner);
  std::mt19937 rng(13);
  Rowsum2Data d(4099, 1000, rng);
  Stream s;
  d.poison(s.handle());
  warm.run_family(*f, d.problem(), d.buffers(), {{"alpha", 0.5}, {"beta", -4.0}}, s.handle());
  s.synchronize();
  CHECK(d.wrong(0.5, -4.0) == 0);
  CHECK(warm.counters().tunes == 0);
  // A then launch that writes a wrong value is caught by the worker's check (the tune goes on).
  EngineOptions eo2;
  eo2.cache_dir = temp_dir();
  Engine engine(eo2);
  std::string text = swz_test::rowsum2_family_text("rowsum2_wrong");
  text.replace(text.find("out[r] = alpha * s"), 18, "out[r] = (THREADS == 64 ? 1.01f : 1.f) * alpha * s");
  const auto g = register_family(FamilyDef::parse(text));
  const TuneReport r = autotune_family(engine, *g, p);
  for (const auto& c : r.candidates) {
    const bool bad = c.config.find("THREADS=64") != std::string::npos;
    CHECK_MESSAGE(c.status == (bad ? "wrong-result" : "ok"), (c.config + ": " + c.status + " " + c.reason));
  }
  CHECK(r.winner.find("THREADS=128") != std::string::npos);
}
