// tests/generator/core: declared families (include/swzjit/family.hpp) without a GPU: the text form and
// its errors, validation naming the field, the space under constraints, launch shapes and arguments,
// hashes, the registry, and compiles through the engine's cache keyed by the family's source bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>

#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_test_util.hpp"
#include "tests/generator/core/family_fixtures.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

using swz_test::invalid;
using swz_test::replace;

}  // namespace

TEST_CASE("family text: parse, to_text and parse again give the same definition and hash") {
  const FamilyDef d = FamilyDef::parse(swz_test::scale_family_text("0 1 2"));
  CHECK(d.name == "scale2");
  CHECK(d.dims == std::vector<std::string>{"n"});
  REQUIRE(d.params.size() == 2);
  CHECK(d.params[0].values == std::vector<long long>{64, 128, 256});
  CHECK(d.params[0].default_value == 128);
  CHECK(d.params[1].default_value == 0);
  CHECK(d.launch.kernel == "scale2");
  CHECK(d.launch.template_args == std::vector<std::string>{"BLOCK", "FAULT"});
  CHECK(d.launch.args == std::vector<std::string>{"in", "out", "n"});
  CHECK(d.reference.kernel == "scale2_reference");
  CHECK(d.reference.template_args.empty());
  CHECK(d.source == swz_test::kScaleSource);
  const FamilyDef again = FamilyDef::parse(d.to_text());
  CHECK(again.to_text() == d.to_text());
  const Family a(d), b(again);
  CHECK(a.definition_hash() == b.definition_hash());
  CHECK(a.source_hash() == b.source_hash());
  CHECK(a.definition_hash().size() == 32);
}

TEST_CASE("family text: errors name the line and what is allowed") {
  const std::string good = swz_test::scale_family_text();
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "dims = n", "dimz = n")); }).find("unknown key \"dimz\"") !=
        std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "dims = n", "dims n")); }).find("family line 3") !=
        std::string::npos);
  // A default may be an expression, so an unknown name in it is found when the family is checked.
  CHECK(invalid([&] { Family f(FamilyDef::parse(replace(good, "; default 128", "; default x"))); })
            .find("BLOCK.default: 'x' is not a problem value") != std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "; default 128", "; dfault 128")); }).find("default") !=
        std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "f32 [n] output", "f32 [n] both")); }).find("input or output") !=
        std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "f32 [n] input", "f64 [n] input")); }).find("f32") !=
        std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "kernel = scale2<BLOCK, FAULT>(in, out, n)", "kernel = scale2")); })
            .find("NAME<TEMPLATE ARGS>(ARGS)") != std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(good.substr(0, good.find("--- source"))); }).find("no source") !=
        std::string::npos);
  CHECK(invalid([&] { FamilyDef::load("/nonexistent/x.family"); }).find("cannot read") != std::string::npos);
}

TEST_CASE("family: validation names the field") {
  const std::string good = swz_test::scale_family_text();
  auto family_error = [&](const std::string& from, const std::string& to) {
    return invalid([&] { Family f(FamilyDef::parse(replace(good, from, to))); });
  };
  CHECK(family_error("family = scale2", "family = Scale").find("family.name") != std::string::npos);
  CHECK(family_error("family = scale2", "family = gemm").find("reserved") != std::string::npos);
  CHECK(family_error("; default 128", "; default 100").find("family.params.BLOCK") != std::string::npos);
  CHECK(family_error("param BLOCK = 64 128 256", "param BLOCK = 64 64 128").find("given twice") != std::string::npos);
  CHECK(family_error("param BLOCK", "param n").find("also a dim") != std::string::npos);
  CHECK(family_error("require = n >= 1", "require = m >= 1").find("'m' is not a dim or a param") != std::string::npos);
  CHECK(family_error("buffer in = f32 [n]", "buffer in = f32 [BLOCK]").find("'BLOCK' is not a dim") !=
        std::string::npos);
  CHECK(family_error("f32 [n] output", "f32 [n] input").find("no output buffer") != std::string::npos);
  CHECK(family_error("grid = ceil_div(n, BLOCK)", "grid = 1, 2, 3, 4").find("1 to 3") != std::string::npos);
  CHECK(family_error("block = BLOCK", "block = BLOCK +").find("family.kernel.block") != std::string::npos);
  CHECK(family_error("scale2<BLOCK, FAULT>", "scale2<n, FAULT>").find("problem dimension 'n'") != std::string::npos);
  CHECK(family_error("(in, out, n)\ngrid", "(in, out, q)\ngrid").find("argument 3") != std::string::npos);
  CHECK(family_error("scale2_reference(in", "scale2_reference<BLOCK>(in").find("may not use params") !=
        std::string::npos);
  CHECK(family_error("tolerance = 1e-6", "tolerance = -1").find("family.tolerance") != std::string::npos);
}

TEST_CASE("family: problems and configs as text, the space under constraints, defaults") {
  const Family f(FamilyDef::parse(swz_test::scale_family_text("0 1 2")));
  const FamilyValues p = f.parse_problem("n=1000");
  CHECK(f.problem_text(p) == "n=1000");
  CHECK(invalid([&] { f.parse_problem("n=1,m=2"); }).find("unknown dimension 'm'") != std::string::npos);
  CHECK(invalid([&] { f.parse_problem("m=2"); }).find("unknown dimension") != std::string::npos);
  CHECK(invalid([&] { f.parse_problem("n=-1"); }).find("n") != std::string::npos);
  CHECK(invalid([&] { f.parse_problem("n=1,n=2"); }).find("given twice") != std::string::npos);
  CHECK(invalid([&] { f.parse_problem("n=1,"); }).find("empty item") != std::string::npos);
  const FamilyValues c = f.parse_config("BLOCK=64");
  CHECK(f.config_text(c) == "BLOCK=64,FAULT=0");
  CHECK(invalid([&] { f.parse_config("TILE=4"); }).find("unknown parameter 'TILE'") != std::string::npos);
  CHECK(f.check_config(f.parse_config("BLOCK=96"), p).find("not one of its values") != std::string::npos);
  CHECK(f.space(p).size() == 9);
  // The constraint n >= 1 rules out every configuration of n = 0.
  CHECK(f.space(f.parse_problem("n=0")).empty());
  CHECK(f.check_config(c, f.parse_problem("n=0")).find("requirement \"n >= 1\" fails") != std::string::npos);
  try {
    f.default_config(f.parse_problem("n=0"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
  }
  CHECK(f.config_text(f.default_config(p)) == "BLOCK=128,FAULT=0");
}

TEST_CASE("family: launch shapes, arguments and name expressions are evaluated from the expressions") {
  const Family f(FamilyDef::parse(swz_test::scale_family_text("0 1 2")));
  const FamilyValues p = f.parse_problem("n=1000"), c = f.parse_config("BLOCK=256,FAULT=2");
  const FamilyLaunchShape s = f.shape(c, p);
  CHECK(s.name_expression == "scale2<256, 2>");
  CHECK(s.grid[0] == 4);
  CHECK(s.block[0] == 256);
  CHECK(s.threads == 256);
  CHECK(s.dynamic_smem == 0);
  const std::vector<FamilyKernelArg> args = f.kernel_args(c, p);
  REQUIRE(args.size() == 3);
  CHECK(args[0].kind == FamilyKernelArg::Buffer);
  CHECK(args[0].buffer == 0);
  CHECK(args[1].buffer == 1);
  CHECK(args[2].kind == FamilyKernelArg::Int64);
  CHECK(args[2].value == 1000);
  CHECK(f.reference_name_expression() == "scale2_reference");
  CHECK(f.reference_shape(p).grid[0] == 4);
  CHECK(f.buffer_elements(p) == std::vector<long long>{1000, 1000});
  // A grid past the limit is a reason, not a launch.
  CHECK(f.check_config(c, f.parse_problem("n=1000000000000")).find("grid[0]") != std::string::npos);
  CHECK(!f.analyze(c).analysed);  // a text-only family gives no index maps
}

TEST_CASE("family: the definition hash changes with the space, the source and the launch") {
  const Family a(FamilyDef::parse(swz_test::scale_family_text("0")));
  const Family b(FamilyDef::parse(swz_test::scale_family_text("0 2")));
  const Family c(FamilyDef::parse(swz_test::scale_family_text("0") + "\n// one more line\n"));
  CHECK(a.definition_hash() != b.definition_hash());
  CHECK(a.source_hash() == b.source_hash());
  CHECK(a.definition_hash() != c.definition_hash());
  CHECK(a.source_hash() != c.source_hash());
}

TEST_CASE("family registry: built-ins listed, the same definition twice is one family, a different one is refused") {
  const std::vector<std::string> names = family_names();
  CHECK(std::find(names.begin(), names.end(), "rowsum") != names.end());
  CHECK(find_family("no_such_family") == nullptr);
  CHECK(invalid([] { get_family("no_such_family"); }).find("rowsum") != std::string::npos);
  const auto f1 = register_family(FamilyDef::parse(swz_test::scale_family_text("0", "scale2_registry")));
  const auto f2 = register_family(FamilyDef::parse(swz_test::scale_family_text("0", "scale2_registry")));
  CHECK(f1.get() == f2.get());
  CHECK(find_family("scale2_registry") == f1);
  CHECK(invalid([] { register_family(FamilyDef::parse(swz_test::scale_family_text("0 1", "scale2_registry"))); })
            .find("already registered") != std::string::npos);
}

TEST_CASE("family compile: NVRTC through the cache, keyed by the source bytes; errors carry the log") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const Family f(FamilyDef::parse(swz_test::scale_family_text("0")));
  const FamilyValues c = f.parse_config("BLOCK=64");
  const KernelEntry e = engine.compile_family(f, c, "sm_80");
  CHECK(!e.image.empty());
  CHECK(e.lowered_name.find("scale2") != std::string::npos);
  CHECK(engine.counters().compiles == 1);
  engine.compile_family(f, c, "sm_80");
  CHECK(engine.counters().compiles == 1);  // from the cache
  // Same name expression, other source bytes: another kernel.
  const Family g(FamilyDef::parse(swz_test::scale_family_text("0") + "\n// changed\n"));
  engine.compile_family(g, g.parse_config("BLOCK=64"), "sm_80");
  CHECK(engine.counters().compiles == 2);
  // A fresh engine on the same cache compiles nothing.
  Engine again(eo);
  again.compile_family(f, c, "sm_80");
  CHECK(again.counters().compiles == 0);
  // Below min_arch: Unsupported; a broken source: Compile with the log.
  FamilyDef old = FamilyDef::parse(swz_test::scale_family_text("0"));
  old.min_arch = 90;
  const Family h(old);
  try {
    engine.compile_family(h, h.parse_config(""), "sm_80");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
  }
  FamilyDef broken = FamilyDef::parse(swz_test::scale_family_text("0"));
  broken.source += "\nthis is not C++;\n";
  const Family k(broken);
  try {
    engine.compile_family(k, k.parse_config(""), "sm_80");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Compile);
    CHECK(!e.compile_log().empty());
    CHECK(e.source().find("this is not C++") != std::string::npos);
  }
}

TEST_CASE("family: a source may include the library's swizzle header; a .family file reads its source file") {
  swz_cache_test::TempDir dir;
  {
    std::ofstream cu(dir / "swz_copy.cuh");
    cu << "#include \"swizzle.cuh\"\n"
          "template <int B>\n"
          "__global__ void swz_copy(const float* in, float* out, long long n) {\n"
          "  __shared__ float tile[32 * 32];\n"
          "  const int t = threadIdx.x;\n"
          "  const long long i = static_cast<long long>(blockIdx.x) * 1024 + t;\n"
          "  for (int k = 0; k < 32; ++k) {\n"
          "    const long long j = i + 32LL * k;\n"
          "    tile[swz::tpl::swizzle_apply(t + 32 * k, B, 0, 5)] = j < n ? in[j] : 0.f;\n"
          "  }\n"
          "  __syncthreads();\n"
          "  for (int k = 0; k < 32; ++k) {\n"
          "    const long long j = i + 32LL * k;\n"
          "    if (j < n) out[j] = tile[swz::tpl::swizzle_apply(t + 32 * k, B, 0, 5)];\n"
          "  }\n"
          "}\n";
    std::ofstream fam(dir / "swz_copy.family");
    fam << "family = swz_copy\n"
           "dims = n\n"
           "param B = 0 5 ; default 5\n"
           "buffer in = f32 [n] input\n"
           "buffer out = f32 [n] output\n"
           "kernel = swz_copy<B>(in, out, n)\n"
           "grid = ceil_div(n, 1024)\n"
           "block = 32\n"
           "source = swz_copy.cuh\n";
  }
  const FamilyDef d = FamilyDef::load(dir / "swz_copy.family");
  CHECK(d.source_name == "swz_copy.cuh");
  const Family f(d);
  CHECK(f.def().reference.kernel.empty());
  EngineOptions eo;
  eo.cache_dir = dir / "cache";
  Engine engine(eo);
  CHECK(!engine.compile_family(f, f.parse_config("B=5"), "sm_90").image.empty());
  // Without a reference nothing can be verified, so there is nothing to tune.
  CHECK(invalid([&] { autotune_family(engine, f, f.parse_problem("n=4096")); }).find("no reference kernel") !=
        std::string::npos);
}

TEST_CASE("family without params: one configuration, written and read back as \"default\"") {
  std::string text = swz_test::scale_family_text("0", "scale2_fixed");
  text = replace(text, "param BLOCK = 64 128 256 ; default 128\n", "");
  text = replace(text, "param FAULT = 0 ; default 0\n", "");
  text = replace(text, "scale2<BLOCK, FAULT>", "scale2<128, 0>");
  text = replace(text, "grid = ceil_div(n, BLOCK)\nblock = BLOCK", "grid = ceil_div(n, 128)\nblock = 128");
  const Family f(FamilyDef::parse(text));
  const FamilyValues p = f.parse_problem("n=10");
  REQUIRE(f.space(p).size() == 1);
  CHECK(f.config_text(f.space(p)[0]) == "default");
  CHECK(f.parse_config("default").empty());
  CHECK(f.check_config(f.parse_config("default"), p).empty());
  CHECK(f.name_expression(f.parse_config("default")) == "scale2<128, 0>");
}
