// tests/runtime (GPU suite): the family check on the GPU (templates/family_check.cuh, run by
// runtime/worker/worker_family.cpp) inside a real tune: a correct candidate and one within the tolerance
// pass; a NaN, a written gap element and a slightly-off value fail with the messages of the host-side
// comparison; a reference that writes a non-finite value is refused.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/runtime/tune/family_check_fixtures.hpp"

using namespace swz;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_family_check_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

}  // namespace

TEST_CASE("family check on the GPU: a NaN, a written gap and a slightly-off value are caught with their messages") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const Family f(FamilyDef::parse(swz_test::gapfill_family_text("gapfill_gpu")));
  const long long n = 4099;
  const FamilyValues p{{"n", n}};
  TuneOptions o;
  o.candidate_timeout_s = 20;
  const TuneReport r = autotune_family(engine, f, p, o);
  REQUIRE(r.candidates.size() == 5);
  for (const auto& c : r.candidates) {
    INFO(c.config << ": " << c.status << " " << c.reason);
    const int mode = f.parse_config(c.config).at("MODE");
    if (mode == 0 || mode == 4) {  // exact, and 1e-6 off at one element: within the tolerance
      CHECK(c.status == "ok");
    } else if (mode == 1) {
      CHECK(c.status == "wrong-result");
      CHECK(c.reason.find("out[" + std::to_string(2 * (n / 2)) + "] is ") == 0);
      CHECK(c.reason.find("nan") != std::string::npos);
      CHECK(c.reason.find("; not written?)") != std::string::npos);
    } else if (mode == 2) {
      CHECK(c.status == "wrong-result");
      CHECK(c.reason == "out[7] was written; the reference leaves it untouched");
    } else {
      CHECK(c.status == "wrong-result");
      CHECK(c.reason.find("out: relative error ") == 0);
      CHECK(c.reason.find("above the tolerance 1e-06; largest difference at out[" + std::to_string(2 * (n / 3)) +
                          "] (got ") != std::string::npos);
    }
  }
  REQUIRE(!r.winner.empty());
  const int winner = f.parse_config(r.winner).at("MODE");
  CHECK((winner == 0 || winner == 4));
}

TEST_CASE("family check on the GPU: a reference that writes a non-finite value is refused") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const Family f(FamilyDef::parse(swz_test::gapfill_family_text("gapfill_badref_gpu", /*bad_reference=*/true)));
  TuneOptions o;
  o.candidate_timeout_s = 20;
  try {
    autotune_family(engine, f, FamilyValues{{"n", 4099}}, o);
    FAIL("the tune went on with a reference that writes inf");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("the reference kernel wrote a non-finite value at element 10") != std::string::npos);
  }
}
