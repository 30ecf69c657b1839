// tests/generator/core: the family contract's GEMM-facing parts without a GPU (include/swzjit/family.hpp):
// float scalars and float kernel arguments, scratch buffers, `then` launches and per-dtype tolerances --
// their text form round trip, the definition hash, validation errors, evaluated shapes and arguments,
// the packed argument bytes, the worker protocol's then images, and NVRTC compiles of every kernel.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "runtime/worker/worker_protocol.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_ext_fixtures.hpp"
#include "tests/generator/core/family_test_util.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

using swz_test::invalid;
using swz_test::replace;

const std::string kText = swz_test::rowsum2_family_text();

std::string family_error(const std::string& from, const std::string& to) {
  return invalid([&] { Family f(FamilyDef::parse(replace(kText, from, to))); });
}

std::string parse_error(const std::string& from, const std::string& to) {
  return invalid([&] { FamilyDef::parse(replace(kText, from, to)); });
}

bool has(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE("\"" << s << "\" lacks \"" << part << "\"");
  return false;
}

}  // namespace

TEST_CASE("family ext text: scalars, scratch, then launches and dtype tolerances survive parse and to_text") {
  const FamilyDef d = FamilyDef::parse(kText);
  REQUIRE(d.scalars.size() == 2);
  CHECK(d.scalars[0].name == "alpha");
  CHECK(d.scalars[0].default_value == 1.5);
  CHECK(d.scalars[1].name == "beta");
  CHECK(d.scalars[1].default_value == -0.5);
  REQUIRE(d.buffers.size() == 4);
  CHECK(d.buffers[3].role == BufferRole::Scratch);
  CHECK(d.buffers[3].elements == "rows * max(1, ceil_div(cols, CHUNK))");
  REQUIRE(d.then.size() == 1);
  CHECK(d.then[0].kernel == "rowsum2_finish");
  CHECK(d.then[0].template_args == std::vector<std::string>{"THREADS"});
  CHECK(d.then[0].args.size() == 7);
  CHECK(d.then[0].args[5] == "float:alpha");
  CHECK(d.then[0].grid == std::vector<std::string>{"max(1, ceil_div(rows, THREADS))"});
  CHECK(d.then[0].block == std::vector<std::string>{"THREADS"});
  CHECK(d.then[0].dynamic_smem == "0");
  CHECK(d.tolerance == 1e-5);
  REQUIRE(d.dtype_tolerance.size() == 1);
  CHECK(d.dtype_tolerance.at(DType::F16) == 2e-3);

  const FamilyDef again = FamilyDef::parse(d.to_text());
  CHECK(again.to_text() == d.to_text());
  CHECK(Family(d).definition_hash() == Family(again).definition_hash());
  // Two then launches keep their order and their own shapes.
  FamilyDef two = d;
  two.then.push_back(d.then[0]);
  two.then[1].grid = {"7"};
  const FamilyDef back = FamilyDef::parse(two.to_text());
  REQUIRE(back.then.size() == 2);
  CHECK(back.then[0].grid == d.then[0].grid);
  CHECK(back.then[1].grid == std::vector<std::string>{"7"});
}

TEST_CASE("family ext: every new part is in the definition hash") {
  const std::string base = Family(FamilyDef::parse(kText)).definition_hash();
  const auto hash_of = [](const std::string& text) { return Family(FamilyDef::parse(text)).definition_hash(); };
  CHECK(hash_of(replace(kText, "scalar alpha = 1.5", "scalar alpha = 2")) != base);
  CHECK(hash_of(replace(kText, "then.grid = max(1, ceil_div(rows, THREADS))", "then.grid = max(2, ceil_div(rows, THREADS))")) != base);
  CHECK(hash_of(replace(kText, "tolerance f16 = 2e-3", "tolerance f16 = 3e-3")) != base);
  CHECK(hash_of(replace(kText, "tolerance f16 = 2e-3", "tolerance bf16 = 2e-3")) != base);
  CHECK(hash_of(replace(kText, "float:alpha, double:beta)\nthen.grid", "float:alpha, float:beta)\nthen.grid")) != base);
  CHECK(hash_of(replace(kText, "[rows * max(1, ceil_div(cols, CHUNK))] scratch", "[rows * max(1, ceil_div(cols, CHUNK)) + 1] scratch")) != base);
}

TEST_CASE("family ext: parse errors name the line") {
  CHECK(has(parse_error("scalar alpha = 1.5", "scalar alpha = fast"), "family line 4: scalar alpha must be a number"));
  CHECK(has(parse_error("scalar alpha = 1.5", "scalar = 1.5"), "expected scalar NAME"));
  CHECK(has(parse_error("then = rowsum2_finish", "thenn = rowsum2_finish"), "unknown key \"thenn\""));
  CHECK(has(parse_error("then = rowsum2_finish<THREADS>(part, c, out, rows, int:max(1, ceil_div(cols, CHUNK)), float:alpha, "
                        "double:beta)\n",
                        ""),
            "then.grid before any \"then = NAME<...>(...)\" line"));
  CHECK(has(parse_error("tolerance f16 = 2e-3", "tolerance f64 = 2e-3"), "family line 22: tolerance f64"));
  CHECK(has(parse_error("tolerance f16 = 2e-3", "tolerance f16 = much"), "tolerance f16 must be a number"));
  CHECK(has(parse_error("tolerance f16 = 2e-3", "tolerance f16 = 2e-3\ntolerance f16 = 1e-3"), "given twice"));
  CHECK(has(parse_error("tolerance f16 = 2e-3", "tolerance f16 x = 2e-3"), "tolerance DTYPE = V"));
  CHECK(has(parse_error("] scratch", "] scrap"), "input or output, or scratch"));
}

TEST_CASE("family ext: validation names the field") {
  CHECK(has(family_error("float:alpha, double:beta)\nthen.grid", "float:gamma, double:beta)\nthen.grid"),
            "family.then[0] argument 6: \"gamma\" is neither a scalar of the family nor a float literal"));
  CHECK(has(family_error("float:alpha, double:beta)\nthen.grid", "float:1.5x, double:beta)\nthen.grid"), "float literal"));
  // A scalar is no integer: integer expressions may not use it.
  CHECK(has(family_error("then.block = THREADS", "then.block = alpha"), "family.then[0].block: 'alpha' is not a dim or a param"));
  CHECK(has(family_error("scalar beta = -0.5", "scalar rows = -0.5"), "family.scalars.rows: the name is also a dim"));
  CHECK(has(family_error("scalar beta = -0.5", "scalar alpha = -0.5"), "family.scalars.alpha"));
  CHECK(has(family_error("tolerance f16 = 2e-3", "tolerance f16 = -1"), "family.tolerance.f16: must be a positive number"));
  CHECK(has(family_error("then.grid = max(1, ceil_div(rows, THREADS))\n", ""), "family.then[0].grid: 1 to 3 expressions"));
  CHECK(has(family_error("rowsum2_finish<THREADS>", "rowsum2_finish<rows>"),
            "family.then[0] template argument 1: uses the problem dimension 'rows'"));
  // Scratch is sized by dims and params; inputs and outputs by dims alone.
  CHECK(has(family_error("buffer out = f32 [rows]", "buffer out = f32 [rows * CHUNK]"), "family.buffers.out.elements: 'CHUNK' is not a dim"));
  CHECK(has(family_error("(in, c, out, rows, cols, float:alpha", "(in, part, out, rows, cols, float:alpha"),
            "family.reference: passes the scratch buffer 'part'"));
  CHECK(has(family_error("dims = rows cols", "dims = rows cols\nalign align_part = part"), "\"part\" is a scratch buffer"));
  // A scratch buffer is not what a candidate is checked on.
  CHECK(has(family_error("buffer out = f32 [rows] output", "buffer out = f32 [rows] scratch"), "no output buffer"));
}

TEST_CASE("family ext: float arguments, scalars, then launches and scratch evaluate for a problem and a config") {
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 100}, {"cols", 1000}};
  const FamilyValues c = f.parse_config("CHUNK=64,THREADS=128");

  const std::vector<FamilyKernelArg> a = f.then_args(0, c, p);
  REQUIRE(a.size() == 7);
  CHECK(a[0].kind == FamilyKernelArg::Buffer);
  CHECK(a[0].buffer == 3);
  CHECK(a[4].kind == FamilyKernelArg::Int32);
  CHECK(a[4].value == 16);  // ceil_div(1000, 64)
  CHECK(a[5].kind == FamilyKernelArg::Float32);
  CHECK(a[5].scalar == 0);
  CHECK(a[5].real == 1.5);
  CHECK(a[6].kind == FamilyKernelArg::Float64);
  CHECK(a[6].scalar == 1);
  CHECK(a[6].real == -0.5);
  // The caller's values replace the defaults; one not given keeps its default.
  const std::vector<FamilyKernelArg> s = f.with_scalars(a, {{"beta", 0.25}});
  CHECK(s[5].real == 1.5);
  CHECK(s[6].real == 0.25);
  CHECK(s[4].value == 16);
  CHECK(has(invalid([&] { f.with_scalars(a, {{"gamma", 1.0}}); }), "unknown scalar 'gamma' (scalars: alpha, beta)"));
  CHECK(has(invalid([&] { f.with_scalars(a, {{"alpha", 1.0 / 0.0}}); }), "not a finite number"));
  // The reference gets them too.
  const std::vector<FamilyKernelArg> r = f.with_scalars(f.reference_args(p), {{"alpha", -2.0}});
  CHECK(r[5].real == -2.0);
  CHECK(r[6].real == -0.5);
  // A float literal is no scalar.
  const Family lit(FamilyDef::parse(replace(kText, "float:alpha, double:beta)\nthen.grid", "float:0.25, double:-3e2)\nthen.grid")));
  const std::vector<FamilyKernelArg> l = lit.with_scalars(lit.then_args(0, c, p), {{"alpha", 9.0}});
  CHECK(l[5].scalar == -1);
  CHECK(l[5].real == 0.25);
  CHECK(l[6].real == -300.0);

  // The then launch's shape and name follow the config.
  CHECK(f.then_count() == 1);
  const FamilyLaunchShape t = f.then_shape(0, c, p);
  CHECK(t.name_expression == "rowsum2_finish<128>");
  CHECK(t.grid[0] == 1);
  CHECK(t.block[0] == 128);
  CHECK(t.dynamic_smem == 0);
  CHECK(f.then_name_expression(0, f.parse_config("THREADS=64")) == "rowsum2_finish<64>");
  CHECK(f.then_shape(0, f.parse_config("THREADS=64"), FamilyValues{{"rows", 1000}, {"cols", 3}}).grid[0] == 16);
  CHECK(f.shape(c, p).grid[0] == 13);  // ceil_div(100 * 16, 128)
  CHECK(has(invalid([&] { f.then_shape(1, c, p); }), "no then launch 1"));

  // Scratch: sized by the config, 256-byte aligned slots; not part of the caller's buffers.
  const std::vector<long long> e = f.buffer_elements(p, c);
  CHECK(e == std::vector<long long>{100000, 100, 100, 1600});
  CHECK(f.buffer_elements(p)[3] == 1600);  // the default config: CHUNK=64
  CHECK(f.buffer_elements(p, f.parse_config("CHUNK=16"))[3] == 6300);
  CHECK(f.scratch_bytes(c, p) == 6400);
  CHECK(f.scratch_bytes(f.parse_config("CHUNK=256"), p) == 1792);  // 400 floats, rounded up to 7 * 256
  CHECK(f.scratch_offsets(c, p) == std::vector<long long>{-1, -1, -1, 0});
  FamilyDef two = FamilyDef::parse(kText);
  two.buffers.push_back(FamilyBuffer{"more", DType::F16, "rows", BufferRole::Scratch});
  const Family g(two);
  CHECK(g.scratch_offsets(c, p) == std::vector<long long>{-1, -1, -1, 0, 6400});
  CHECK(g.scratch_bytes(c, p) == 6400 + 256);
  CHECK(Family(FamilyDef::parse(swz_test::rowsum2_family_text())).scratch_bytes(c, FamilyValues{{"rows", 0}, {"cols", 0}}) == 256);

  // The tolerance of an output buffer follows its element type.
  CHECK(f.tolerance_for(DType::F32) == 1e-5);
  CHECK(f.tolerance_for(DType::F16) == 2e-3);
  CHECK(f.tolerance_for(DType::BF16) == 1e-5);
}

TEST_CASE("family ext: a then launch that cannot run rules its config out of the space") {
  const Family f(FamilyDef::parse(replace(kText, "then.block = THREADS", "then.block = THREADS * 16")));
  const FamilyValues p{{"rows", 100}, {"cols", 1000}};
  CHECK(has(f.check_config(f.parse_config("THREADS=128"), p), "then[0] block[0] = 2048"));
  CHECK(f.check_config(f.parse_config("THREADS=64"), p).empty());
  const std::vector<FamilyValues> space = f.space(p);
  CHECK(space.size() == 3);  // CHUNK 16, 64, 256 with THREADS=64
  for (const FamilyValues& c : space) CHECK(c.at("THREADS") == 64);
  // The defaults (THREADS=128) do not fit: the first configuration of the space is the default.
  CHECK(f.config_text(f.default_config(p)) == "CHUNK=16,THREADS=64");
}

TEST_CASE("family ext: float arguments are packed as float and double, alone and in one struct") {
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 100}, {"cols", 1000}};
  const std::vector<FamilyKernelArg> list = f.with_scalars(f.then_args(0, f.parse_config(""), p), {{"alpha", 0.75}});
  const auto pointer_of = [](int index) { return static_cast<DevicePtr>(0x1000 * (index + 1)); };
  detail::PackedArgs args(list, pointer_of);
  void** v = args.data();
  CHECK(*static_cast<DevicePtr*>(v[0]) == 0x4000);
  CHECK(*static_cast<int*>(v[4]) == 16);
  CHECK(*static_cast<float*>(v[5]) == 0.75f);
  CHECK(*static_cast<double*>(v[6]) == -0.5);
  // As one struct: 4 pointers and a long long (8 each), an int and a float (4 each), a double (8).
  detail::PackedArgs packed(list, pointer_of, true);
  const unsigned char* base = static_cast<const unsigned char*>(packed.data()[0]);
  int chunks = 0;
  float alpha = 0;
  double beta = 0;
  std::memcpy(&chunks, base + 32, 4);
  std::memcpy(&alpha, base + 36, 4);
  std::memcpy(&beta, base + 40, 8);
  CHECK(chunks == 16);
  CHECK(alpha == 0.75f);
  CHECK(beta == -0.5);
}

TEST_CASE("family ext: a bench job carries the then launches' kernel images") {
  using namespace swz::detail::worker;
  BenchRequest br;
  br.job.config = "CHUNK=64,THREADS=128";
  br.job.kernel = KernelImage{"main", false, "sm_90", "_Z4main"};
  br.job.then = {KernelImage{"first", true, "sm_90", "_Z5first"}, KernelImage{"second", false, "sm_90", "_Z6second"}};
  const std::string bytes = encode(br);
  Frame frame;
  std::uint64_t n = 0;
  decode_header(reinterpret_cast<const unsigned char*>(bytes.data()), &frame.type, &n);
  frame.payload = bytes.substr(kHeaderBytes);
  const BenchRequest back = decode<BenchRequest>(frame);
  REQUIRE(back.job.then.size() == 2);
  CHECK(back.job.then[0].image == "first");
  CHECK(back.job.then[0].is_ptx);
  CHECK(back.job.then[1].lowered_name == "_Z6second");
  CHECK(back.job.kernel.image == "main");
}

TEST_CASE("family ext: NVRTC compiles the kernel, the then launch and the reference of a family using all four parts") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const Family f(FamilyDef::parse(kText));
  const FamilyValues c = f.parse_config("CHUNK=256,THREADS=64");
  const KernelEntry k = engine.compile_family(f, c, "sm_80");
  CHECK(k.lowered_name.find("rowsum2_partial") != std::string::npos);
  int compiles = 0;
  const auto count = [&compiles] { ++compiles; };
  const KernelEntry t = detail::compile_family_kernel(engine.cache(), f, f.then_name_expression(0, c), "sm_80", count);
  CHECK(!t.image.empty());
  CHECK(t.lowered_name.find("rowsum2_finish") != std::string::npos);
  const KernelEntry r = detail::compile_family_kernel(engine.cache(), f, f.reference_name_expression(), "sm_80", count);
  CHECK(r.lowered_name.find("rowsum2_reference") != std::string::npos);
  CHECK(compiles == 2);
  CHECK(engine.counters().compiles == 1);
  detail::compile_family_kernel(engine.cache(), f, f.then_name_expression(0, c), "sm_80", count);
  CHECK(compiles == 2);  // from the cache
}

TEST_CASE("family ext: a compile-only tune compiles every candidate's then launch with it, into the cache") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 100}, {"cols", 1000}};
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_80";
  o.compile_threads = 2;
  const TuneReport r = autotune_family(engine, f, p, o);
  REQUIRE(r.candidates.size() == 6);
  for (const TuneCandidate& c : r.candidates) CHECK_MESSAGE(c.status == "compiled", (c.config + ": " + c.reason));
  // Three partial kernels (CHUNK) and two finish kernels (THREADS): five distinct name expressions.
  CHECK(engine.counters().compiles == 5);
  int compiles = 0;
  for (const FamilyValues& c : f.space(p))
    detail::compile_family_kernel(engine.cache(), f, f.then_name_expression(0, c), "sm_80", [&compiles] { ++compiles; });
  CHECK(compiles == 0);  // every then kernel is already in the cache
}

TEST_CASE("family ext: the engine sizes a config's workspace and refuses a scratch buffer from the caller, without a GPU") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 300}, {"cols", 777}};
  const FamilyValues c = f.parse_config("CHUNK=16,THREADS=64");
  CHECK(engine.family_workspace_size(f, p, {}, &c) == 58880);  // 300 * 49 floats, rounded up to 256 bytes
  const FamilyValues bad{{"CHUNK", 17}, {"THREADS", 64}};
  CHECK(has(invalid([&] { engine.family_workspace_size(f, p, {}, &bad); }), "CHUNK=17 is not one of its values"));
  // A family without scratch needs none (and no config is chosen for it).
  std::string text = kText;
  text = replace(text, "buffer part = f32 [rows * max(1, ceil_div(cols, CHUNK))] scratch\n", "");
  text = replace(text, "then = rowsum2_finish<THREADS>(part,", "then = rowsum2_finish<THREADS>(in,");
  text = replace(text, "kernel = rowsum2_partial<CHUNK>(in, part,", "kernel = rowsum2_partial<CHUNK>(in, out,");
  CHECK(engine.family_workspace_size(Family(FamilyDef::parse(text)), p) == 0);
  // Scratch is the engine's: naming it is an error before anything reaches the device.
  const DevicePtr fake = 0x10000;
  CHECK(has(invalid([&] {
              engine.run_family(f, p, {{"in", fake}, {"c", fake}, {"out", fake}, {"part", fake}}, nullptr, &c);
            }),
            "buffer 'part' is scratch"));
}
