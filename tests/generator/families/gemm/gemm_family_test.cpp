// tests/generator/families/gemm (CPU suite): the mma.sync GEMM kernels as the built-in families "sgemm" and
// "hgemm" on the family contract -- programs (FamilyProgram) over the typed GEMM's host code: each takes
// the dtypes it runs (the variant is picked by what it accepts), configs round-trip to the typed
// GemmConfig, default and space are the typed ones, the plan is the typed launch sequence (65535 matrices a
// launch, split-K slices then the reduction, scratch), bind fills GemmParams as the kernels read them, the
// bank analysis is analyze_gemm's, and the family's compile is the typed compile's cache entry.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "generator/families/gemm/gemm_family.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"
#include "templates/gemm_common.cuh"
#include "templates/gemm_splitk.cuh"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A random resolved problem for either family: any orders, pitches (sometimes padded, sometimes odd),
// batches with packed or gapped strides.
GemmProblem random_problem(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> coin(0, 1), pick(0, 5);
  const long long sizes[] = {1, 7, 64, 100, 777, 2048};
  GemmProblem p;
  const DType ins[] = {DType::F32, DType::F16, DType::BF16};
  p.dtype = ins[std::uniform_int_distribution<int>(0, 2)(rng)];
  const DType outs[] = {DType::F16, DType::BF16, DType::F32};
  p.out_dtype = p.dtype == DType::F32 ? DType::F32 : outs[std::uniform_int_distribution<int>(0, 2)(rng)];
  p.m = sizes[pick(rng)], p.n = sizes[pick(rng)], p.k = sizes[pick(rng)];
  p.a_order = coin(rng) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.b_order = coin(rng) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.c_order = coin(rng) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  const auto pitch = [&](long long line) { return line + (coin(rng) ? 0 : pick(rng)); };
  p.lda = pitch(p.a_order == MatrixOrder::RowMajor ? p.k : p.m);
  p.ldb = pitch(p.b_order == MatrixOrder::RowMajor ? p.n : p.k);
  p.ldc = pitch(p.c_order == MatrixOrder::RowMajor ? p.n : p.m);
  p.batch = coin(rng) ? 1 : 3;
  if (p.batch > 1 && coin(rng)) {
    const GemmProblem packed = p.resolved();
    p.stride_a = packed.stride_a + 8 * pick(rng);
    p.stride_b = packed.stride_b + 8 * pick(rng);
    p.stride_c = packed.stride_c + pick(rng);
  }
  return p.resolved();
}

GemmProblem problem(DType in, DType out, long long m, long long n, long long k, long long batch = 1) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = m, p.n = n, p.k = k;
  p.batch = batch;
  p.a_order = MatrixOrder::RowMajor, p.b_order = MatrixOrder::ColMajor;
  return p.resolved();
}

// The first split config of the typed space (64 x 64 tiles) for the problem's dtypes and layout.
GemmConfig split_config(const GemmProblem& p, int splits) {
  for (const GemmConfig& c : gemm_search_space(p.dtype, p.out_dtype, p.kernel_layout(), 16))
    if (gemm_k_splits(c) == splits) return c;
  FAIL("no split config of " << splits << " slices");
  return {};
}

template <class T> T param_at(const FamilyLaunchParams& l, std::size_t i) {
  T v;
  REQUIRE(l.params.at(i).size() == sizeof(T));
  std::memcpy(&v, l.params[i].data(), sizeof v);
  return v;
}

}  // namespace

TEST_CASE("gemm families: sgemm and hgemm are registered programs, each taking the dtypes it runs") {
  const std::shared_ptr<const Family> s = get_family("sgemm"), h = get_family("hgemm");
  REQUIRE(s);
  REQUIRE(h);
  CHECK(detail::gemm_mma_builtin(DType::F32) == s);
  CHECK(detail::gemm_mma_builtin(DType::F16) == h);
  CHECK(detail::gemm_mma_builtin(DType::BF16) == h);
  for (const auto& f : {s, h}) {
    const FamilyDef& d = f->def();
    REQUIRE(d.program);
    CHECK(d.program_id == d.program->id);
    CHECK(d.min_arch == 80);
    CHECK(d.max_arch == 0);
    CHECK_FALSE(d.arch_specific);
    CHECK(f->source_is_templates_only());  // keyed like the typed API's kernels: the same cache entries
    CHECK(contains(d.to_text(), "\nprogram = " + d.program_id + "\n"));
    CHECK(FamilyDef::parse(d.to_text()).to_text() == d.to_text());
  }
  // The variant is picked by what it accepts: f32 in and out is sgemm's, f16/bf16 in hgemm's.
  const FamilyValues f32 = detail::gemm_family_problem(problem(DType::F32, DType::F32, 64, 64, 64), 16);
  const FamilyValues f16 = detail::gemm_family_problem(problem(DType::F16, DType::F32, 64, 64, 64), 16);
  CHECK(s->check_config(s->default_config(f32), f32) == "");
  CHECK(h->check_config(h->default_config(f16), f16) == "");
  CHECK(contains(s->check_config(s->default_config(f32), f16), "in == 0"));
  CHECK(contains(h->check_config(h->default_config(f16), f32), "in != 0"));
  CHECK_THROWS_AS(s->default_config(f16), Error);
}

TEST_CASE("gemm families: configs round-trip, default and space are the typed ones, on random problems") {
  // 20 problems: each asks for the typed space four times (a swizzle search per config), about 0.6 s a problem.
  std::mt19937_64 rng(0x6E33F00Du);
  for (int i = 0; i < 20; ++i) {
    const GemmProblem p = random_problem(rng);
    CAPTURE(p.key(16));
    const int align = p.max_vec_bytes(DevicePtr{1} << 20, DevicePtr{1} << 20);
    const FamilyValues v = detail::gemm_family_problem(p, align);
    const std::shared_ptr<const Family> f = detail::gemm_mma_builtin(p.dtype);
    f->validate_problem(v);
    CHECK(detail::gemm_family_access_align(v) == align);
    const GemmProblem frame = detail::gemm_family_frame(v);
    CHECK(frame.kernel_layout() == p.kernel_layout());
    // The default: the typed default for the call's alignment class.
    const GemmConfig typed = default_gemm_config(p, align);
    const FamilyValues def = f->default_config(with_sm_count(v, 132));
    CHECK(detail::gemm_mma_config_of(def, v) == typed);
    CHECK(def == detail::gemm_mma_family_config(typed));
    CHECK(f->check_config(def, with_sm_count(v, 132)) == "");
    // The space: the typed space, each a valid point; a tune skips the split configs that cannot pay off
    // here, with gemm_split_mismatch's reason.
    const std::vector<GemmConfig> want = gemm_search_space(p.dtype, p.out_dtype, p.kernel_layout(), align);
    const std::vector<FamilyValues> space = f->space(with_sm_count(v, 132));
    REQUIRE(space.size() == want.size());
    REQUIRE(f->def().program->skip);
    for (std::size_t j = 0; j < space.size(); ++j) {
      CHECK(detail::gemm_mma_config_of(space[j], v) == want[j]);
      CHECK(f->config_text(f->parse_config(f->config_text(space[j]))) == f->config_text(space[j]));
      CHECK(f->def().program->skip(space[j], v) == detail::gemm_split_mismatch(want[j], p, false));
    }
    // Every buffer reaches exactly its operand's last element (the frame's A is the caller's B where swapped).
    const std::vector<long long> e = f->buffer_elements(v);
    const bool a_mn = v.at("a_mn") != 0, b_mn = v.at("b_mn") != 0;
    const long long sa = frame.batch > 1 ? frame.stride_a : 0, sb = frame.batch > 1 ? frame.stride_b : 0;
    CHECK(e[0] == (frame.batch - 1) * sa + ((a_mn ? frame.k : frame.m) - 1) * frame.lda + (a_mn ? frame.m : frame.k));
    CHECK(e[1] == (frame.batch - 1) * sb + ((b_mn ? frame.k : frame.n) - 1) * frame.ldb + (b_mn ? frame.n : frame.k));
  }
}

TEST_CASE("gemm families: the plan is the typed launch sequence (65535 matrices a launch, split-K, scratch)") {
  const std::shared_ptr<const Family> h = detail::gemm_mma_builtin(DType::F16);
  // Unsplit, a batch past the grid's z limit: one launch per 65535 matrices.
  const GemmProblem big = problem(DType::F16, DType::F16, 8, 8, 32, 70000);
  const FamilyValues vb = with_sm_count(detail::gemm_family_problem(big, 16), 132);
  const FamilyValues db = h->default_config(vb);
  const GemmConfig cb = detail::gemm_mma_config_of(db, vb);
  REQUIRE(gemm_k_splits(cb) == 1);
  const FamilyPlan pb = h->plan(db, vb);
  REQUIRE(pb.launches.size() == 2);
  CHECK(pb.launches[0].shape.grid[2] == 65535);
  CHECK(pb.launches[1].shape.grid[2] == 70000 - 65535);
  CHECK(pb.launches[0].shape.name_expression == gemm_name_expression(cb));
  CHECK(pb.launches[0].shape.dynamic_smem == cb.dynamic_smem_bytes());
  CHECK(pb.launches[0].shape.threads == cb.threads());
  CHECK(pb.scratch_bytes == 0);
  CHECK(detail::gemm_mma_launch_count(cb, big) == 2);
  // Split: the K slices then the reduction, per launch of matrices; scratch for one launch's slices.
  const GemmProblem thin = problem(DType::BF16, DType::F32, 100, 60, 4096, 3);
  const GemmConfig sc = split_config(thin, 8);
  const FamilyValues vt = with_sm_count(detail::gemm_family_problem(thin, 16), 132);
  const FamilyValues st = detail::gemm_mma_family_config(sc);
  const FamilyPlan ps = h->plan(st, vt);
  REQUIRE(ps.launches.size() == 2);
  const LaunchShape s0 = gemm_launch_shape(sc, 100, 60, 3);
  CHECK(ps.launches[0].shape.grid[0] == s0.grid[0]);
  CHECK(ps.launches[0].shape.grid[2] == 3 * 8);
  CHECK(ps.launches[1].shape.name_expression == gemm_splitk_reduce_name_expression(DType::F32));
  CHECK_FALSE(ps.launches[1].dependent);
  CHECK(ps.scratch_bytes == static_cast<std::size_t>(3 * 8 * gemm_splitk_workspace_stride(100, 60) * 4));
  CHECK(detail::gemm_mma_split_need(sc, thin).per_launch == 3);
  // An enormous M x N: the workspace size is refused, never wrapped.
  GemmProblem huge = thin;
  huge.m = huge.n = 2000000000;
  CHECK_THROWS_AS(detail::gemm_mma_split_need(sc, huge), Error);
  CHECK(h->scratch_bytes(st, vt) == ps.scratch_bytes);
  // K = 0 with a split config: no products, the reduction alone writes beta * C, no scratch.
  GemmProblem empty_k = thin;
  empty_k.k = 0;
  empty_k = empty_k.resolved();
  const FamilyValues ve = with_sm_count(detail::gemm_family_problem(empty_k, 16), 132);
  const FamilyPlan pe = h->plan(st, ve);
  REQUIRE(pe.launches.size() == 1);
  CHECK(pe.launches[0].shape.name_expression == gemm_splitk_reduce_name_expression(DType::F32));
  CHECK(pe.scratch_bytes == 0);
  CHECK(detail::gemm_mma_launch_count(sc, empty_k) == 1);
  // K = 0 in a batch: an operand with no elements resolves to stride 0 (B row-major: K lines), still a problem.
  GemmProblem none = problem(DType::F32, DType::F32, 70, 50, 0, 3);
  none.b_order = MatrixOrder::RowMajor;
  none.ldb = 0;
  none.stride_b = 0;
  none = none.resolved();
  REQUIRE(none.stride_b == 0);
  const std::shared_ptr<const Family> s = detail::gemm_mma_builtin(DType::F32);
  const FamilyValues vn = with_sm_count(detail::gemm_family_problem(none, 16), 132);
  CHECK(s->check_config(s->default_config(vn), vn) == "");

  // bind: the kernel writes the slices' partials into the scratch with alpha 1, beta 0; the reduction applies
  // the caller's alpha and beta into C.
  FamilyRunBinding run;
  run.buffers = {0x100000, 0x200000, 0x300000};
  run.scratch = 0x400000;
  run.scalars = {1.5, 0.25};
  run.sm_count = 132;
  const std::vector<FamilyLaunchParams> bound = h->bind(st, vt, run);
  REQUIRE(bound.size() == 2);
  const auto g = param_at<tpl::GemmParams>(bound[0], 0);
  CHECK(reinterpret_cast<unsigned long long>(g.a) == 0x100000);
  CHECK(reinterpret_cast<unsigned long long>(g.c) == 0x400000);
  CHECK(g.alpha == 1.0f);
  CHECK(g.beta == 0.0f);
  CHECK(g.k_splits == 8);
  CHECK(g.k_slice == gemm_k_slice(sc, 4096));
  CHECK(g.batch == 3);
  const auto r = param_at<tpl::GemmSplitKParams>(bound[1], 0);
  CHECK(reinterpret_cast<unsigned long long>(r.w) == 0x400000);
  CHECK(reinterpret_cast<unsigned long long>(r.c) == 0x300000);
  CHECK(r.alpha == 1.5f);
  CHECK(r.beta == 0.25f);
  CHECK(r.splits == 8);
  // Unsplit across two launches: the second starts 65535 matrices further into A, B and C.
  FamilyRunBinding run2 = run;
  run2.scratch = 0;
  const std::vector<FamilyLaunchParams> two = h->bind(db, vb, run2);
  REQUIRE(two.size() == 2);
  const auto g1 = param_at<tpl::GemmParams>(two[1], 0);
  const GemmProblem fb = detail::gemm_family_frame(vb);
  CHECK(reinterpret_cast<unsigned long long>(g1.a) == 0x100000 + 65535ull * fb.stride_a * 2);
  CHECK(reinterpret_cast<unsigned long long>(g1.c) == 0x300000 + 65535ull * fb.stride_c * 2);
  CHECK(g1.batch == 70000 - 65535);
  CHECK(g1.alpha == 1.5f);
  CHECK(g1.beta == 0.25f);
  CHECK(g1.k_splits == 0);
}

TEST_CASE("gemm families: loads wider than the alignment class and invalid configs are out, by name") {
  const std::shared_ptr<const Family> h = detail::gemm_mma_builtin(DType::F16);
  const GemmProblem p = problem(DType::F16, DType::F16, 256, 256, 256);
  const FamilyValues v16 = with_sm_count(detail::gemm_family_problem(p, 16), 132);
  const FamilyValues def = h->default_config(v16);
  CHECK(def.at("VEC") == 8);
  FamilyValues v4 = v16;
  v4["align_a"] = 4;
  CHECK(contains(h->check_config(def, v4), "loads 16 bytes at a time"));
  CHECK(contains(h->check_config(def, v4), "VEC=2"));
  // The default for that class loads what it allows.
  CHECK(h->check_config(h->default_config(v4), v4) == "");
  CHECK(h->default_config(v4).at("VEC") * 2 <= 4);
  // An odd pitch lowers the class too.
  FamilyValues odd = v16;
  odd["lda"] = 257;
  CHECK(contains(h->check_config(def, odd), "allow 2"));
  // The typed validation names the field.
  FamilyValues bad = def;
  bad["WM"] = 48;
  CHECK_FALSE(h->check_config(bad, v16).empty());
  // A batch of one matrix at one place (stride 0) is refused, as for gemm_sm90.
  FamilyValues zero = v16;
  zero["batch"] = 2;
  zero["stride_a"] = 0;
  zero["stride_b"] = 256 * 256;
  zero["stride_c"] = 256 * 256;
  CHECK(contains(h->check_config(def, zero), "stride_a > 0"));
}

TEST_CASE("gemm families: the bank analysis is analyze_gemm's; a tune drops conflicted configs") {
  const std::shared_ptr<const Family> s = detail::gemm_mma_builtin(DType::F32), h = detail::gemm_mma_builtin(DType::F16);
  for (const DType in : {DType::F32, DType::F16}) {
    const GemmProblem p = problem(in, in, 512, 512, 512);
    const FamilyValues v = detail::gemm_family_problem(p, 16);
    const std::shared_ptr<const Family> f = in == DType::F32 ? s : h;
    const FamilyValues def = f->default_config(v);
    const GemmConfig cfg = detail::gemm_mma_config_of(def, v);
    const GemmAnalysis a = analyze_gemm(cfg);
    const FamilyBankReport r = f->analyze(def, v);
    CHECK(r.analysed);
    CHECK(r.instructions == static_cast<int>(a.instrs.size()));
    CHECK(r.excess_wavefronts == a.excess());
    CHECK(r.excess_wavefronts == 0);  // the space's swizzles are conflict-free
    CHECK(r.wavefronts == a.store_wavefronts + a.load_wavefronts);
    // Without its swizzles the tile conflicts (HGEMM's ldmatrix reads, SGEMM's transposing stores).
    FamilyValues plain = def;
    for (const char* k : {"SWA_B", "SWA_M", "SWA_S", "SWB_B", "SWB_M", "SWB_S"}) plain[k] = 0;
    GemmConfig pc = detail::gemm_mma_config_of(plain, v);
    CHECK(f->analyze(plain, v).excess_wavefronts == analyze_gemm(pc).excess());
    CHECK(f->analyze(plain, v).excess_wavefronts > 0);
  }
}

TEST_CASE("gemm families: NVRTC compiles the family's kernel into the typed compile's cache entry; compile-only tune") {
  std::string why;
  if (!nvrtc_available(&why)) {
    MESSAGE("skipped: NVRTC not available: " << why);
    return;
  }
  const swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const GemmProblem p = problem(DType::BF16, DType::F32, 300, 200, 1000);
  const FamilyValues v = detail::gemm_family_problem(p, 16);
  const std::shared_ptr<const Family> h = detail::gemm_mma_builtin(DType::BF16);
  const FamilyValues def = h->default_config(v);
  const KernelEntry e = engine.compile_family(*h, def, "sm_80", v);
  CHECK(e.spill_bytes == 0);
  CHECK(contains(e.lowered_name, "hgemm_kernel"));
  const std::uint64_t compiles = engine.counters().compiles;
  const KernelEntry typed = engine.compile_gemm(detail::gemm_mma_config_of(def, v), "sm_80");
  CHECK(typed.image == e.image);
  CHECK(engine.counters().compiles == compiles);  // a cache hit
  // A compile-only tune for sm_80: every candidate and the split reduction compile, nothing is rejected
  // statically (the space is conflict-free), the default is among them.
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_80";
  const GemmProblem thin = problem(DType::F32, DType::F32, 64, 64, 4096);
  const FamilyValues vt = detail::gemm_family_problem(thin, 16);
  const std::shared_ptr<const Family> s = detail::gemm_mma_builtin(DType::F32);
  const TuneReport r = autotune_family(engine, *s, vt, o);
  CHECK(r.static_rejected == 0);
  CHECK(r.candidates.size() == s->space(with_sm_count(vt, 132)).size());
  bool split = false;
  for (const TuneCandidate& c : r.candidates) {
    CHECK_MESSAGE(c.status == "compiled", c.config << ": " << c.status << " " << c.reason);
    split = split || s->parse_config(c.config).at("SPLIT") > 1;
  }
  CHECK(split);  // K = 4096 over 1 tile: the split configs stay
  CHECK(r.default_config == s->config_text(s->default_config(with_sm_count(vt, 132))));
}
