// tests/runtime/engine (GPU suite, sm_90): tensor maps on the family contract (FamilyTensorMap) end to end
// on "tma_transpose" (tiles loaded with TMA into swizzled shared memory, read at the swizzled address and
// written transposed): every configuration on odd shapes against the host transpose, between poisoned
// guards; the map's swizzle checked by a variant whose map does not swizzle (its swizzled configurations
// must read the wrong elements); the map as a field of a struct argument; a misaligned pointer refused
// before any launch; a tune in the isolated worker and its winner run by a new engine.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_tma_fixtures.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuardFloats = 64;

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_family_tma_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

bool hopper_or_later() {
  const std::string arch = device_info(0).arch();
  if (arch >= "sm_90" && arch.size() == 5) return true;
  MESSAGE("skipped: device 0 is " << arch << "; tensor maps (TMA) need sm_90 or later");
  return false;
}

// One problem: `in` random, `out` on the device between poisoned guards.
struct TransposeData {
  long long rows, cols;
  std::vector<float> in;
  DeviceBuffer d_in, d_out;

  TransposeData(long long r, long long c, std::mt19937& rng) : rows(r), cols(c) {
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    in.resize(static_cast<std::size_t>(rows * cols));
    for (float& v : in) v = dist(rng);
    d_in = DeviceBuffer(in.size() * 4 + 256);
    d_out = DeviceBuffer((in.size() + 2 * kGuardFloats) * 4);
    d_in.copy_from_host(in.data(), in.size() * 4);
  }
  FamilyValues problem() const { return {{"rows", rows}, {"cols", cols}}; }
  std::map<std::string, DevicePtr> buffers(DevicePtr in_offset = 0) const {
    return {{"in", d_in.ptr() + in_offset}, {"out", d_out.ptr() + kGuardFloats * 4}};
  }
  void poison(CUstream s) { d_out.memset8(0xFF, s); }
  // Elements that differ from the host transpose, plus changed guard words.
  long long wrong() const {
    std::vector<std::uint32_t> bits(in.size() + 2 * kGuardFloats);
    d_out.copy_to_host(bits.data(), bits.size() * 4);
    long long bad = 0;
    for (std::size_t i = 0; i < kGuardFloats; ++i)
      bad += (bits[i] != 0xFFFFFFFFu) + (bits[kGuardFloats + in.size() + i] != 0xFFFFFFFFu);
    for (long long r = 0; r < rows; ++r)
      for (long long c = 0; c < cols; ++c) {
        float got;
        std::memcpy(&got, &bits[kGuardFloats + static_cast<std::size_t>(c * rows + r)], 4);
        bad += got != in[static_cast<std::size_t>(r * cols + c)];
      }
    return bad;
  }
};

const std::vector<std::pair<long long, long long>> kShapes = {{1, 4}, {37, 100}, {1000, 36}, {513, 1028}};

}  // namespace

TEST_CASE("tma_transpose: every configuration, swizzled or not, moves every element through its tensor map") {
  if (!hopper_or_later()) return;
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::tma_transpose_family_text()));
  std::mt19937 rng(31);
  Stream s;
  for (const auto& shape : kShapes) {
    TransposeData d(shape.first, shape.second, rng);
    const std::vector<FamilyValues> space = f->space(FamilyValues{{"rows", d.rows}, {"cols", d.cols}, {"align_in", 16}});
    CHECK(space.size() == 6);
    for (const FamilyValues& cfg : space) {
      d.poison(s.handle());
      engine.run_family(*f, d.problem(), d.buffers(), s.handle(), &cfg);
      s.synchronize();
      CHECK_MESSAGE(d.wrong() == 0, (f->problem_text(d.problem()) + " " + f->config_text(cfg)));
    }
    d.poison(s.handle());
    engine.run_family(*f, d.problem(), d.buffers(), s.handle());  // the default: TILE=32, SWZ=128
    s.synchronize();
    CHECK(d.wrong() == 0);
    d.poison(s.handle());
    engine.run_family_reference(*f, d.problem(), d.buffers(), s.handle());
    s.synchronize();
    CHECK(d.wrong() == 0);
  }
}

TEST_CASE("tma_transpose: the map's swizzle reaches the hardware; a map as a struct field") {
  if (!hopper_or_later()) return;
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  std::mt19937 rng(32);
  TransposeData d(513, 1028, rng);
  Stream s;
  // A map that does not swizzle under a kernel that reads swizzled: only its SWZ=0 configurations are right.
  std::string text = swz_test::tma_transpose_family_text("tma_transpose_flat");
  const std::string sw = "swizzle SWZ";
  REQUIRE(text.find(sw) != std::string::npos);
  text.replace(text.find(sw), sw.size(), "swizzle 0");
  const auto flat = register_family(FamilyDef::parse(text));
  int wrong_configs = 0;
  for (const FamilyValues& cfg : flat->space(FamilyValues{{"rows", d.rows}, {"cols", d.cols}, {"align_in", 16}})) {
    d.poison(s.handle());
    engine.run_family(*flat, d.problem(), d.buffers(), s.handle(), &cfg);
    s.synchronize();
    const long long bad = d.wrong();
    if (cfg.at("SWZ") == 0) CHECK_MESSAGE(bad == 0, flat->config_text(cfg));
    else CHECK_MESSAGE(bad > 0, flat->config_text(cfg));
    wrong_configs += bad > 0;
  }
  CHECK(wrong_configs == 3);
  // The arguments as one struct: the 128-byte map first, then a pointer, an int and a long long.
  std::string packed = swz_test::tma_transpose_family_text("tma_transpose_packed");
  const std::string call = "tma_transpose<TILE, SWZ>(tin, out, rows, cols)";
  REQUIRE(packed.find(call) != std::string::npos);
  packed.replace(packed.find(call), call.size(), "tma_transpose_packed<TILE, SWZ>({tin, out, int:rows, cols})");
  const auto p = register_family(FamilyDef::parse(packed));
  for (const FamilyValues& cfg : p->space(FamilyValues{{"rows", d.rows}, {"cols", d.cols}, {"align_in", 16}})) {
    d.poison(s.handle());
    engine.run_family(*p, d.problem(), d.buffers(), s.handle(), &cfg);
    s.synchronize();
    CHECK_MESSAGE(d.wrong() == 0, p->config_text(cfg));
  }
}

TEST_CASE("tma_transpose: a pointer TMA cannot take is refused before any launch") {
  if (!hopper_or_later()) return;
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::tma_transpose_family_text()));
  std::mt19937 rng(33);
  TransposeData d(64, 64, rng);
  Stream s;
  const std::uint64_t launches = engine.counters().launches;
  // 8 bytes past an aligned pointer: align_in = 8 fails the family's requirement (no configuration fits).
  CHECK_THROWS_AS(engine.run_family(*f, d.problem(), d.buffers(8), s.handle()), Error);
  const FamilyValues cfg = f->parse_config("TILE=32,SWZ=128");
  try {
    engine.run_family(*f, d.problem(), d.buffers(8), s.handle(), &cfg);
    FAIL("a misaligned pointer ran");
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("align_in >= 16") != std::string::npos, e.what());
  }
  s.synchronize();
  CHECK(engine.counters().launches == launches);
}

TEST_CASE("tma_transpose: tuned in the worker, every candidate verified; the winner runs in a new engine") {
  if (!hopper_or_later()) return;
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  const auto f = register_family(FamilyDef::parse(swz_test::tma_transpose_family_text()));
  const FamilyValues p{{"rows", 2049}, {"cols", 4100}, {"align_in", 16}};
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
    }
    CHECK(ok == 6);
  }
  Engine warm(eo);
  std::mt19937 rng(34);
  TransposeData d(2049, 4100, rng);
  CHECK(f->config_text(warm.family_config(*f, p)) == report.winner);
  Stream s;
  d.poison(s.handle());
  warm.run_family(*f, d.problem(), d.buffers(), s.handle());
  s.synchronize();
  CHECK(d.wrong() == 0);
  CHECK(warm.counters().tunes == 0);
}

TEST_CASE("tma_transpose persistent: a grid of sm_count blocks looping over tiles, every configuration") {
  if (!hopper_or_later()) return;
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  Engine engine(eo);
  const auto f = register_family(FamilyDef::parse(swz_test::tma_transpose_persistent_family_text()));
  std::mt19937 rng(35);
  Stream s;
  for (const auto& shape : kShapes) {  // 513 x 1028 on 8 x 8 tiles: 64 tiles a block
    TransposeData d(shape.first, shape.second, rng);
    for (const FamilyValues& cfg : f->space(FamilyValues{{"rows", d.rows}, {"cols", d.cols}, {"align_in", 16}})) {
      d.poison(s.handle());
      engine.run_family(*f, d.problem(), d.buffers(), s.handle(), &cfg);
      s.synchronize();
      CHECK_MESSAGE(d.wrong() == 0, (f->problem_text(d.problem()) + " " + f->config_text(cfg)));
    }
  }
}

TEST_CASE("tma_transpose persistent: tuned in the worker (which adds its SM count); a run's host time") {
  if (!hopper_or_later()) return;
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  eo.policy = TunePolicy::Default;
  const auto f = register_family(FamilyDef::parse(swz_test::tma_transpose_persistent_family_text()));
  std::mt19937 rng(36);
  Stream s;
  {
    Engine engine(eo);
    // The host's cost of a run that passes a tensor map (no assertion: reported).
    TransposeData d(2049, 4100, rng);
    engine.run_family(*f, d.problem(), d.buffers(), s.handle());
    s.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) engine.run_family(*f, d.problem(), d.buffers(), s.handle());
    const auto t1 = std::chrono::steady_clock::now();
    s.synchronize();
    MESSAGE("host time per run_family with one tensor map: "
            << std::chrono::duration<double, std::micro>(t1 - t0).count() / 1000 << " us");
    // Beside a family without one (rowsum, built in), same engine and stream.
    const auto rs = get_family("rowsum");
    const FamilyValues rp{{"batch", 1}, {"rows", 2049}, {"cols", 4100}};
    DeviceBuffer rin(2049 * 4100 * 4), rout(2049 * 4);
    const std::map<std::string, DevicePtr> rb{{"in", rin.ptr()}, {"out", rout.ptr()}};
    engine.run_family(*rs, rp, rb, s.handle());
    s.synchronize();
    const auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) engine.run_family(*rs, rp, rb, s.handle());
    const auto t3 = std::chrono::steady_clock::now();
    s.synchronize();
    MESSAGE("host time per run_family without one (rowsum): "
            << std::chrono::duration<double, std::micro>(t3 - t2).count() / 1000 << " us");
  }
  const FamilyValues p{{"rows", 2049}, {"cols", 4100}, {"align_in", 16}};
  Engine engine(eo);
  TuneOptions o;
  o.candidate_timeout_s = 20;
  const TuneReport report = autotune_family(engine, *f, p, o);
  REQUIRE(!report.winner.empty());
  for (const auto& c : report.candidates) CHECK_MESSAGE(c.status == "ok", (c.config + ": " + c.status + " " + c.reason));
}
