// tests/generator/core: the family contract's inout buffers (BufferRole::InOut, include/swzjit/family.hpp)
// without a GPU: the text form round trip, the definition hash (unchanged for definitions without one),
// parse and validation errors, evaluated arguments, and NVRTC compiles of the kernel and the reference.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/engine/engine_impl.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_ext_fixtures.hpp"
#include "tests/generator/core/family_inout_fixtures.hpp"
#include "tests/generator/core/family_test_util.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

using swz_test::invalid;
using swz_test::replace;

const std::string kText = swz_test::rowsum_acc_family_text();

bool has(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE("\"" << s << "\" lacks \"" << part << "\"");
  return false;
}

std::string family_error(const std::string& from, const std::string& to) {
  return invalid([&] { Family f(FamilyDef::parse(replace(kText, from, to))); });
}

}  // namespace

TEST_CASE("family inout: the role survives parse and to_text, and is the only buffer checked") {
  const FamilyDef d = FamilyDef::parse(kText);
  REQUIRE(d.buffers.size() == 2);
  CHECK(d.buffers[0].role == BufferRole::Input);
  CHECK(d.buffers[1].role == BufferRole::InOut);
  CHECK(d.buffers[1].name == "out");
  CHECK(d.to_text().find("buffer out = f32 [rows] inout\n") != std::string::npos);
  const FamilyDef again = FamilyDef::parse(d.to_text());
  CHECK(again.buffers[1].role == BufferRole::InOut);
  CHECK(again.to_text() == d.to_text());
  // A family whose only checked buffer is inout is complete: no output buffer needed.
  const Family f(d);
  CHECK(f.definition_hash() == Family(again).definition_hash());
  // Built in C++ rather than parsed, the same definition writes the same text.
  FamilyDef built = d;
  built.buffers[1] = FamilyBuffer{"out", DType::F32, "rows", BufferRole::InOut};
  CHECK(Family(built).definition_hash() == f.definition_hash());
}

TEST_CASE("family inout: the role is in the definition hash; definitions without it keep their hash") {
  const std::string base = Family(FamilyDef::parse(kText)).definition_hash();
  // inout -> output (with an input for beta's term, so the definition stays valid) is another definition.
  std::string as_output = replace(kText, "[rows] inout", "[rows] output");
  CHECK(Family(FamilyDef::parse(as_output)).definition_hash() != base);
  // Hashes computed by the library before inout existed: stored winners of these stay valid.
  CHECK(Family(FamilyDef::parse(swz_test::rowsum2_family_text())).definition_hash() == "35ae73a5223791849e4a0d6630095a1e");
  CHECK(get_family("rowsum")->definition_hash() == "da703ecb6d4bd98be2d0e797303543c4");
  CHECK(Family(FamilyDef::parse(swz_test::rowsum2_family_text())).def().to_text().find("inout") == std::string::npos);
}

TEST_CASE("family inout: parse errors name the line, validation names the field") {
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "[rows] inout", "[rows] in-out")); }),
            "family line 9: buffer role must be input or output, or scratch or inout, got \"in-out\""));
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "buffer out = f32 [rows] inout", "buffer out = f32 rows inout")); }),
            "family line 9: expected \"buffer NAME = DTYPE [ELEMENTS] input|output|scratch|inout\""));
  // The reference must take the inout buffer: the result depends on its initial values.
  CHECK(has(family_error("rowsum_acc_reference(in, out, rows", "rowsum_acc_reference(in, in, rows"),
            "family.reference: does not pass the inout buffer 'out'"));
  // Sized by dims alone, like inputs and outputs (the caller allocates it).
  CHECK(has(family_error("[rows] inout", "[rows * THREADS] inout"), "family.buffers.out.elements: 'THREADS' is not a dim"));
  CHECK(has(family_error("[rows] inout", "[rows] input"), "no output buffer, nor an inout one"));
  // An align may measure it: the caller places it.
  const Family aligned(FamilyDef::parse(replace(kText, "dims = rows cols", "dims = rows cols\nalign align_out = out")));
  CHECK(aligned.problem_names() == std::vector<std::string>{"rows", "cols", "align_out"});
}

TEST_CASE("family inout: the kernel and the reference both get the inout buffer's pointer") {
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 1000}, {"cols", 77}};
  const FamilyValues c = f.parse_config("THREADS=256,UNROLL=1");
  const std::vector<FamilyKernelArg> k = f.kernel_args(c, p);
  REQUIRE(k.size() == 6);
  CHECK(k[1].kind == FamilyKernelArg::Buffer);
  CHECK(k[1].buffer == 1);
  const std::vector<FamilyKernelArg> r = f.with_scalars(f.reference_args(p), {{"beta", -2.0}});
  REQUIRE(r.size() == 6);
  CHECK(r[1].kind == FamilyKernelArg::Buffer);
  CHECK(r[1].buffer == 1);
  CHECK(r[5].kind == FamilyKernelArg::Float64);
  CHECK(r[5].real == -2.0);
  CHECK(f.buffer_elements(p) == std::vector<long long>{77000, 1000});
  CHECK(f.shape(c, p).grid[0] == 4);
  CHECK(f.scratch_bytes(c, p) == 0);
  CHECK(f.space(p).size() == 6);
}

TEST_CASE("family inout: NVRTC compiles the kernel and the reference; a compile-only tune compiles every candidate") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const Family f(FamilyDef::parse(kText));
  const KernelEntry k = engine.compile_family(f, f.parse_config("THREADS=64,UNROLL=4"), "sm_80");
  CHECK(k.lowered_name.find("rowsum_acc") != std::string::npos);
  int compiles = 0;
  const KernelEntry r = detail::compile_family_kernel(engine.cache(), f, f.reference_name_expression(), "sm_80",
                                                      [&compiles] { ++compiles; });
  CHECK(r.lowered_name.find("rowsum_acc_reference") != std::string::npos);
  CHECK(compiles == 1);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_80";
  o.compile_threads = 2;
  const TuneReport t = autotune_family(engine, f, FamilyValues{{"rows", 100}, {"cols", 1000}}, o);
  REQUIRE(t.candidates.size() == 6);
  for (const TuneCandidate& c : t.candidates) CHECK_MESSAGE(c.status == "compiled", (c.config + ": " + c.reason));
  CHECK(engine.counters().compiles == 6);
}
