// tests/runtime/worker: the GPU check of declared-family candidates without a GPU -- the check kernel
// (templates/family_check.cuh) compiles through NVRTC for sm_80 and sm_90 without spills and is served
// from the cache on a second tune; the host's reading of its result (runtime/worker/worker_family_check.cpp)
// gives the messages the host-side comparison gave, in the same order.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/tune/autotune_family_check.hpp"
#include "runtime/worker/worker_family_check.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/runtime/tune/family_check_fixtures.hpp"

using namespace swz;
using detail::worker::FamilyCheckFinding;
using detail::worker::family_check_finding;
using detail::worker::family_check_message;

namespace {

tpl::FamilyCheckResult clean(double err, double norm) {
  tpl::FamilyCheckResult r{};
  r.err = err;
  r.norm = norm;
  r.first_nonfinite = r.first_written = r.first_guard = r.worst_at = tpl::kFamilyCheckNone;
  return r;
}

}  // namespace

TEST_CASE("family check kernel: NVRTC compiles it for sm_80 and sm_90 without spills") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    try {
      const CompiledKernel k = compile(detail::family_check_request(arch));
      CHECK(!k.image.empty());
      CHECK(k.lowered_name.find("family_check_kernel") != std::string::npos);
      if (!k.is_ptx) {
        const CubinResources r = cubin_resources(k);
        CHECK_MESSAGE(r.local_bytes == 0, r.local_bytes << " bytes of local memory (spills)");
        CHECK((r.registers > 0 && r.registers <= 255));
        MESSAGE(std::string(arch) << ": " << r.registers << " registers");
      }
    } catch (const Error& e) {
      FAIL_CHECK(e.what() << "\n" << e.compile_log());
    }
  }
}

TEST_CASE("family check kernel: compiled once through the cache, served from it on the next tune") {
  swz_cache_test::TempDir dir;
  Cache cache(dir.path());
  std::atomic<int> compiles{0};
  const auto count = [&compiles] { ++compiles; };
  const KernelEntry first = detail::compile_family_check_kernel(cache, "sm_90", count);
  CHECK(compiles == 1);
  const KernelEntry again = detail::compile_family_check_kernel(cache, "sm_90", count);
  CHECK(compiles == 1);
  CHECK(again.image == first.image);
  CHECK(again.lowered_name == first.lowered_name);
  detail::compile_family_check_kernel(cache, "sm_80", count);  // another architecture is another kernel
  CHECK(compiles == 2);
}

TEST_CASE("the GPU suite's gapfill family: its candidates and both references compile") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const FamilyValues p{{"n", 4099}};
  for (bool bad : {false, true}) {
    const Family f(FamilyDef::parse(swz_test::gapfill_family_text("gapfill_cpu", bad)));
    const std::vector<FamilyValues> space = f.space(p);
    CHECK(space.size() == 5);
    for (const FamilyValues& c : space) {
      INFO(f.config_text(c));
      CHECK(!engine.compile_family(f, c, "sm_80", p).image.empty());
    }
    const KernelEntry ref = detail::compile_family_kernel(engine.cache(), f, f.reference_name_expression(p), "sm_80", {});
    CHECK(ref.lowered_name.find("gapfill_reference") != std::string::npos);
    CHECK(f.buffer_elements(p) == std::vector<long long>{4099, 2 * 4099});
  }
}

TEST_CASE("family check result: the findings and messages of the host-side comparison, in its order") {
  const std::size_t head = 65536 + 4, tail = head + 400;  // 100 f32 elements at alignment class 4
  SUBCASE("within the tolerance, and an exact all-zero reference") {
    CHECK(family_check_finding(clean(1e-14, 1.0), 1e-6).kind == FamilyCheckFinding::Pass);
    CHECK(family_check_finding(clean(0, 0), 1e-6).kind == FamilyCheckFinding::Pass);
    // Any difference from an all-zero reference fails.
    CHECK(family_check_finding(clean(1e-40, 0), 1e-6).kind == FamilyCheckFinding::Tolerance);
  }
  SUBCASE("a guard byte before or after the buffer comes first") {
    tpl::FamilyCheckResult r = clean(5, 1);
    r.first_written = 3;
    r.first_guard = tail;  // the first byte after the end
    FamilyCheckFinding f = family_check_finding(r, 1e-6);
    REQUIRE(f.kind == FamilyCheckFinding::Guard);
    CHECK(family_check_message("out", f, head, tail, 0, 0, 0, 1e-6) == "wrote outside out (0 bytes after its end)");
    r.first_guard = head - 8;
    f = family_check_finding(r, 1e-6);
    CHECK(family_check_message("out", f, head, tail, 0, 0, 0, 1e-6) == "wrote outside out (8 bytes before it)");
  }
  SUBCASE("the first offending element in index order: written gap or non-finite value") {
    tpl::FamilyCheckResult r = clean(0, 1);
    r.first_written = 7;
    r.nonfinite = 2;
    r.first_nonfinite = 9;
    FamilyCheckFinding f = family_check_finding(r, 1e-6);
    REQUIRE(f.kind == FamilyCheckFinding::Written);
    CHECK(family_check_message("out", f, head, tail, 0, 0, 0, 1e-6) ==
          "out[7] was written; the reference leaves it untouched");
    r.first_written = 12;
    f = family_check_finding(r, 1e-6);
    REQUIRE(f.kind == FamilyCheckFinding::NonFinite);
    CHECK(f.at == 9);
    CHECK(family_check_message("out", f, head, tail, f.at, std::nan(""), 0.5, 1e-6) ==
          "out[9] is " + std::to_string(std::nan("")) + " (expected 0.500000; not written?)");
  }
  SUBCASE("above the tolerance: the relative error and the worst element with both values") {
    const FamilyCheckFinding f = family_check_finding(clean(1e-4, 1.0), 1e-6);
    REQUIRE(f.kind == FamilyCheckFinding::Tolerance);
    CHECK(f.relative_error == doctest::Approx(1e-2));
    const std::string m = family_check_message("out", f, head, tail, 0, 1.25, 1.0, 1e-6);
    CHECK(m == "out: relative error 0.01 above the tolerance 1e-06; largest difference at out[0] (got 1.25, expected 1)");
  }
}

TEST_CASE("family check result: reading it on the host costs microseconds per buffer") {
  // What check_output() does on the host per output buffer now: one small result struct (copied back
  // from the GPU) read into a finding, instead of copying and comparing the whole buffer.
  tpl::FamilyCheckResult r = clean(1e-15, 3.0);
  const auto start = std::chrono::steady_clock::now();
  int passes = 0;
  for (int i = 0; i < 100000; ++i) {
    r.norm = 3.0 + i;
    passes += family_check_finding(r, 1e-6).kind == FamilyCheckFinding::Pass;
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / 1e5;
  CHECK(passes == 100000);
  MESSAGE("host time per buffer to read a check result: " << us << " us; result struct " << sizeof(r) << " bytes");
  CHECK(sizeof(tpl::FamilyCheckResult) == 64);
  CHECK(us < 100);
}
