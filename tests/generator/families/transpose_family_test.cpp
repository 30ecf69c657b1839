// tests/generator/families: the built-in family "transpose" (generator/families/transpose/transpose_family.cpp)
// is the typed transpose API (include/swzjit/transpose.hpp) re-expressed: over random problems, alignment
// classes and dtypes it gives the same defaults, space, name expressions, launch shapes, bank analysis and
// config validation; its text form rebuilds it (as the worker does); its kernels share the typed cache entries.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "generator/families/transpose/transpose_family.hpp"
#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

struct Case {
  TransposeProblem typed;  // resolved
  DevicePtr in = 0, out = 0;
  FamilyValues values;     // the family's problem
  int align = 0;           // the typed API's max_vec_bytes
};

// A pointer whose alignment is exactly `a` bytes (a power of two <= 16; 16 means 256).
DevicePtr pointer_aligned(int a) { return 0x7f0000000000ULL + (a >= 16 ? 0 : static_cast<DevicePtr>(a)); }

Case random_case(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
  const int aligns[] = {1, 2, 4, 8, 16};
  Case c;
  TransposeProblem p;
  p.dtype = dtypes[pick(rng) % 3];
  p.rows = 1 + pick(rng) % 3000;
  p.cols = 1 + pick(rng) % 3000;
  if (pick(rng) % 2) p.ld_in = p.cols + pick(rng) % 9;
  if (pick(rng) % 2) p.ld_out = p.rows + pick(rng) % 9;
  p.batch = pick(rng) % 3 == 0 ? 1 + pick(rng) % 5 : 1;
  if (p.batch > 1 && pick(rng) % 2) {
    p.stride_in = p.rows * (p.ld_in ? p.ld_in : p.cols) + pick(rng) % 7;
    p.stride_out = p.cols * (p.ld_out ? p.ld_out : p.rows) + pick(rng) % 7;
  }
  c.typed = p.resolved();
  const int eb = dtype_bytes(p.dtype);
  int ai = aligns[pick(rng) % 5], ao = aligns[pick(rng) % 5];
  ai = std::max(ai, eb);  // an element type's pointer is at least element-aligned
  ao = std::max(ao, eb);
  c.in = pointer_aligned(ai);
  c.out = pointer_aligned(ao);
  c.align = c.typed.max_vec_bytes(c.in, c.out);
  const TransposeProblem& r = c.typed;
  c.values = detail::transpose_family_problem(r.dtype, r.rows, r.cols, r.ld_in, r.ld_out, r.batch, r.stride_in,
                                              r.stride_out, ai, ao);
  return c;
}

std::vector<std::string> texts(const std::vector<TransposeConfig>& v) {
  std::vector<std::string> out;
  for (const TransposeConfig& c : v) out.push_back(c.to_string());
  return out;
}

// A random TransposeConfig, valid or not: fields drawn around and beyond their limits, half of the time
// from the shapes the space uses. (Only what the family's values can express: a pad or swizzle given
// with another layout has no family form; the typed adapter refuses it before converting.)
TransposeConfig random_config(std::mt19937& rng, DType dtype) {
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const bool usual = pick(rng) % 2 == 0;
  TransposeConfig c;
  c.dtype = dtype;
  const int sides[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  c.tile_rows = usual ? 32 << (pick(rng) % 3) : sides[pick(rng) % 9];
  c.tile_cols = usual ? 32 << (pick(rng) % 3) : sides[pick(rng) % 9];
  c.threads = usual ? 128 << (pick(rng) % 3) : 32 * (1 + pick(rng) % 32);
  c.vec = 1 << (pick(rng) % (usual ? 3 : 5));
  c.pair = pick(rng) % 3 == 0;
  c.smem = static_cast<SmemLayout>(pick(rng) % 3);
  if (c.smem == SmemLayout::Pad) c.pad = pick(rng) % 34;
  if (c.smem == SmemLayout::Swizzle) {
    c.swizzle = SwizzleSpec{pick(rng) % 7, pick(rng) % 4, pick(rng) % 15 - 3};
    if (pick(rng) % 2) c.swizzle2 = SwizzleSpec{pick(rng) % 6, pick(rng) % 4, pick(rng) % 13};
  }
  c.raster = pick(rng) % 2;
  c.streaming = pick(rng) % 4 == 0;
  return c;
}

}  // namespace

TEST_CASE("transpose family: registered, reserved to the library, and its text form rebuilds it") {
  const auto f = get_family("transpose");
  REQUIRE(f);
  CHECK(f->source_is_templates_only());
  const std::vector<std::string> names = family_names();
  CHECK(std::find(names.begin(), names.end(), "transpose") != names.end());
  // Another definition cannot take the name.
  FamilyDef other = FamilyDef::parse(f->def().to_text());
  other.about = "someone else's";
  CHECK_THROWS_AS(register_family(other), Error);
  // The worker's copy: rebuilt from the text, without the C++ hooks, the same definition; the winners' id
  // (definition_hash) covers the space function's version too, which the text does not carry.
  const Family text(FamilyDef::parse(f->def().to_text()));
  CHECK(text.def().to_text() == f->def().to_text());
  CHECK(f->def().space_version.find("transpose-space/") == 0);
  CHECK(text.definition_hash() != f->definition_hash());
  FamilyDef versioned = FamilyDef::parse(f->def().to_text());
  versioned.space_fn = f->def().space_fn;
  versioned.space_version = f->def().space_version;
  CHECK(Family(versioned).definition_hash() == f->definition_hash());
  versioned.space_version += "+1";
  CHECK(Family(versioned).definition_hash() != f->definition_hash());
  CHECK(!text.def().space_fn);
  CHECK(text.def().launch.packed);
  CHECK(text.problem_names() == std::vector<std::string>{"dtype", "rows", "cols", "ld_in", "ld_out", "batch",
                                                          "stride_in", "stride_out", "align_in", "align_out"});
  const FamilyValues p = text.parse_problem(
      "dtype=f16,rows=100,cols=70,ld_in=72,ld_out=100,batch=1,stride_in=7200,stride_out=7000,align_in=16,align_out=4");
  CHECK(text.problem_text(p) ==
        "dtype=f16,rows=100,cols=70,ld_in=72,ld_out=100,batch=1,stride_in=7200,stride_out=7000,align_in=16,align_out=4");
  CHECK(text.default_config(p) == f->default_config(p));
  CHECK_THROWS_AS(text.parse_problem("dtype=f64,rows=1,cols=1,ld_in=1,ld_out=1,batch=1,stride_in=1,stride_out=1,"
                                     "align_in=4,align_out=4"),
                  Error);
  CHECK_THROWS_AS(text.parse_problem("dtype=f32,rows=1,cols=1,ld_in=1,ld_out=1,batch=1,stride_in=1,stride_out=1,"
                                     "align_in=3,align_out=4"),
                  Error);
}

TEST_CASE("transpose family: the typed API's defaults, space, names, shapes and analysis over random problems") {
  const auto f = get_family("transpose");
  REQUIRE(f);
  std::mt19937 rng(20261124);
  int spaces_checked = 0, configs_checked = 0;
  for (int n = 0; n < 60; ++n) {
    const Case c = random_case(rng);
    CAPTURE(c.typed.key(c.align));
    const TransposeConfig def = default_transpose_config(c.typed.dtype, c.align);
    const FamilyValues fdef = f->default_config(c.values);
    CHECK(fdef == detail::transpose_family_config(def));
    CHECK(detail::transpose_config_of(fdef, c.typed.dtype).to_string() == def.to_string());

    std::vector<TransposeConfig> check = {def};
    if (n < 12) {  // the space (the static analysis of every shape) for a dozen problems
      const std::vector<TransposeConfig> typed = transpose_search_space(c.typed.dtype, c.align);
      std::vector<TransposeConfig> family;
      for (const FamilyValues& v : f->space(c.values)) family.push_back(detail::transpose_config_of(v, c.typed.dtype));
      CHECK(texts(family) == texts(typed));
      for (std::size_t i = 0; i < typed.size(); i += 7) check.push_back(typed[i]);
      ++spaces_checked;
    }
    for (const TransposeConfig& t : check) {
      CAPTURE(t.to_string());
      const FamilyValues v = detail::transpose_family_config(t);
      CHECK(f->check_config(v, c.values) == "");
      const FamilyLaunchShape s = f->shape(v, c.values);
      CHECK(s.name_expression == transpose_name_expression(t));
      CHECK(f->name_expression(v, c.values) == transpose_name_expression(t));
      const LaunchShape ts = transpose_launch_shape(t, c.typed.rows, c.typed.cols, c.typed.batch);
      for (int d = 0; d < 3; ++d) {
        CHECK(s.grid[d] == ts.grid[d]);
        CHECK(s.block[d] == ts.block[d]);
      }
      CHECK(s.dynamic_smem == 0);
      const FamilyBankReport bank = f->analyze(v, c.values);
      const TransposeAnalysis ta = analyze_transpose(t);
      CHECK(bank.analysed);
      CHECK(bank.wavefronts == ta.store_wavefronts + ta.load_wavefronts);
      CHECK(bank.ideal_wavefronts == ta.store_ideal + ta.load_ideal);
      CHECK(bank.excess_wavefronts == ta.excess());
      CHECK(bank.instructions == ta.store_instructions + ta.load_instructions);
      // The arguments: one struct of the kernel's TransposeParams fields, in order.
      const std::vector<FamilyKernelArg> args = f->kernel_args(v, c.values);
      REQUIRE(args.size() == 9);
      CHECK(args[0].kind == FamilyKernelArg::Buffer);
      CHECK(args[1].kind == FamilyKernelArg::Buffer);
      const long long want[] = {c.typed.rows,  c.typed.cols,      c.typed.ld_in,     c.typed.ld_out,
                                c.typed.batch, c.typed.stride_in, c.typed.stride_out};
      for (int i = 0; i < 7; ++i) CHECK(args[static_cast<std::size_t>(2 + i)].value == want[i]);
      ++configs_checked;
    }
  }
  CHECK(spaces_checked == 12);
  CHECK(configs_checked > 100);
}

TEST_CASE("transpose family: a config is accepted exactly when the typed API accepts it for the problem") {
  const auto f = get_family("transpose");
  REQUIRE(f);
  std::mt19937 rng(7);
  int valid = 0, invalid = 0;
  for (int n = 0; n < 3000; ++n) {
    const Case c = random_case(rng);
    const TransposeConfig t = random_config(rng, c.typed.dtype);
    bool typed_ok = true;
    try {
      t.validate();
    } catch (const Error&) {
      typed_ok = false;
    }
    typed_ok = typed_ok && t.vec * dtype_bytes(t.dtype) <= c.align;  // the Engine's alignment rule
    CAPTURE(t.to_string());
    CAPTURE(c.typed.key(c.align));
    const std::string why = f->check_config(detail::transpose_family_config(t), c.values);
    CAPTURE(why);
    CHECK(why.empty() == typed_ok);
    (typed_ok ? valid : invalid) += 1;
  }
  CHECK(valid > 100);  // both sides of the rule were exercised
  CHECK(invalid > 100);
}

TEST_CASE("transpose family: the packed argument struct is TransposeParams' layout") {
  const auto f = get_family("transpose");
  const FamilyValues p = detail::transpose_family_problem(DType::F32, 3, 5, 5, 3, 2, 15, 15, 16, 16);
  const FamilyValues cfg = f->default_config(p);
  const std::vector<FamilyKernelArg> args = f->kernel_args(cfg, p);
  detail::PackedArgs packed(args, [](int i) { return DevicePtr(0x1000 + i); }, true);
  const long long* fields = static_cast<const long long*>(packed.data()[0]);
  CHECK(fields[0] == 0x1000);
  CHECK(fields[1] == 0x1001);
  const long long want[] = {3, 5, 5, 3, 2, 15, 15};
  for (int i = 0; i < 7; ++i) CHECK(fields[2 + i] == want[i]);
  // The reference has the same arguments and a problem-only name.
  CHECK(f->reference_name_expression(p) == "swz::tpl::transpose_reference_kernel<4>");
  CHECK(f->reference_shape(p).grid[0] == 1);
  CHECK(f->buffer_elements(p) == std::vector<long long>{2 * 15, 2 * 15});
  CHECK(f->buffer_dtype(0, p) == DType::F32);
}

TEST_CASE("transpose family: its kernels are the typed API's cache entries") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const auto f = get_family("transpose");
  const FamilyValues p = detail::transpose_family_problem(DType::F16, 256, 256, 256, 256, 1, 65536, 65536, 16, 16);
  const FamilyValues cfg = f->default_config(p);
  const TransposeConfig typed = detail::transpose_config_of(cfg, DType::F16);
  const KernelEntry a = engine.compile_transpose(typed, "sm_80");
  CHECK(engine.counters().compiles == 1);
  const KernelEntry b = engine.compile_family(*f, cfg, "sm_80", p);
  CHECK(engine.counters().compiles == 1);  // the same key: served by the typed API's entry
  CHECK(a.lowered_name == b.lowered_name);
  // The reference compiles too (NVRTC instantiates it from the family's source).
  const KernelEntry r = detail::compile_family_kernel(engine.cache(), *f, f->reference_name_expression(p), "sm_80", {});
  CHECK(!r.image.empty());
  CHECK(r.lowered_name.find("transpose_reference_kernel") != std::string::npos);
}

TEST_CASE("transpose family: winners the typed API stored are found under its key and read back") {
  const auto f = get_family("transpose");
  REQUIRE(f->def().legacy_winner);
  // A batched f16 problem whose output pitch allows 4-byte accesses only, whatever the pointers (16 bytes).
  const TransposeProblem typed = TransposeProblem{DType::F16, 100, 70, 72, 102, 3, 0, 0}.resolved();
  const int align = typed.max_vec_bytes(0, 0);
  REQUIRE(align == 4);
  const FamilyValues p = detail::transpose_family_problem(typed.dtype, typed.rows, typed.cols, typed.ld_in, typed.ld_out,
                                                          typed.batch, typed.stride_in, typed.stride_out, 16, 16);
  const auto w = f->def().legacy_winner(p);
  REQUIRE(w);
  // Exactly the key and space id the typed stack stored its winners under (its space code hash then).
  CHECK(w->operation == "transpose");
  CHECK(w->problem == typed.key(align));
  CHECK(w->space_id == search_space_hash({"transpose-space/4b669fbe58c5cac68ada8d1e0d25add2", "f16", "align=4",
                                          "conflict-free"}));
  CHECK(w->space_id != f->definition_hash());
  // Its config text is the typed string; another dtype's config or garbage is unusable.
  TransposeConfig c = default_transpose_config(DType::F16, align);
  const auto read = w->parse(c.to_string());
  REQUIRE(read);
  CHECK(*read == detail::transpose_family_config(c));
  CHECK(f->check_config(*read, p).empty());
  CHECK(!w->parse(default_transpose_config(DType::F32, align).to_string()));
  CHECK(!w->parse("TILE_R=32"));
  // A cache holding such a winner answers the legacy key (what Engine::family_config asks on a miss).
  swz_cache_test::TempDir dir;
  CacheSettings s;
  s.directory = dir.path();
  Cache cache(s);
  TuningProblemKey key;
  key.operation = w->operation;
  key.problem = w->problem;
  key.device_name = "NVIDIA H100 80GB HBM3";
  key.arch = "sm_90";
  key.sm_count = 132;
  cache.store_winner(key, w->space_id, c.to_string(), 0.5);
  const auto stored = cache.load_winner(key, w->space_id);
  REQUIRE(stored);
  CHECK(w->parse(stored->config) == read);
}

TEST_CASE("transpose family: TEST-ONLY stand-ins have the kernel's signature and compile") {
  const auto f = get_family("transpose");
  REQUIRE(f->def().stand_in);
  const FamilyValues p = detail::transpose_family_problem(DType::BF16, 64, 64, 64, 64, 1, 4096, 4096, 16, 16);
  int mode_number = 0;
  for (const char* mode : {"fault", "hang", "wrong", "oob"}) {
    const FamilyStandIn s = f->def().stand_in(mode, p);
    CHECK(s.name_expression == "swz::tpl::misbehaving_transpose_kernel<2, " + std::to_string(mode_number++) + ">");
    CompileRequest req;
    req.source = s.source;
    req.name_expression = s.name_expression;
    req.arch = "sm_80";
    CHECK(!compile(req).image.empty());
  }
  CHECK_THROWS_AS(f->def().stand_in("explode", p), Error);
}
