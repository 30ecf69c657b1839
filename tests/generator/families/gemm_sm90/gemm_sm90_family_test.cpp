// tests/generator/families/gemm_sm90 (CPU suite): the Hopper GEMM as the built-in family "gemm_sm90" on the
// family contract -- a definition whose launches are a program (FamilyProgram): its text names the program,
// the problem mapping of every public layout onto the kernel's frame, the default and space the typed
// variant had, the plan (launch shapes, the split-K reduction, scratch) the kernel's host code computes,
// the requirements TMA needs, the declarative f64 reference, and an NVRTC compile for sm_90a.
#include <doctest/doctest.h>

#include <algorithm>

#include <random>
#include <string>
#include <vector>

#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A random problem the Hopper variant takes: any orders, 16-byte pitches (sometimes padded), batches.
GemmProblem random_problem(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> coin(0, 1), pick(0, 5);
  const long long sizes[] = {1, 16, 100, 128, 777, 2048};
  GemmProblem p;
  p.dtype = coin(rng) ? DType::F16 : DType::BF16;
  const DType outs[] = {DType::F16, DType::BF16, DType::F32};
  p.out_dtype = outs[std::uniform_int_distribution<int>(0, 2)(rng)];
  p.m = sizes[pick(rng)], p.n = sizes[pick(rng)], p.k = sizes[pick(rng)];
  p.a_order = coin(rng) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.b_order = coin(rng) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.c_order = coin(rng) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  const auto pitch = [&](long long line) { return (line + 7) / 8 * 8 + 8 * pick(rng); };  // 16-byte multiples
  p.lda = pitch(p.a_order == MatrixOrder::RowMajor ? p.k : p.m);
  p.ldb = pitch(p.b_order == MatrixOrder::RowMajor ? p.n : p.k);
  p.ldc = (p.c_order == MatrixOrder::RowMajor ? p.n : p.m) + (coin(rng) ? 0 : 8);
  p.batch = coin(rng) ? 1 : 3;
  if (p.batch > 1 && coin(rng)) {  // explicit batch strides with gaps (16-byte multiples), else packed
    const GemmProblem packed = p.resolved();
    p.stride_a = packed.stride_a + 8 * pick(rng);
    p.stride_b = packed.stride_b + 8 * pick(rng);
    p.stride_c = packed.stride_c + pick(rng);
  }
  return p.resolved();
}

// A resolved problem: A row-major, B column-major (NT), C row-major, unless the orders say otherwise.
GemmProblem problem(DType in, DType out, long long m, long long n, long long k,
                    MatrixOrder ao = MatrixOrder::RowMajor, MatrixOrder bo = MatrixOrder::ColMajor) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = m, p.n = n, p.k = k;
  p.a_order = ao, p.b_order = bo;
  return p.resolved();
}

}  // namespace

TEST_CASE("gemm_sm90 family: registered, its text names its program, and only the library's build can build it") {
  const std::shared_ptr<const Family> f = get_family("gemm_sm90");
  REQUIRE(f);
  CHECK(f == detail::gemm_sm90_builtin());
  const FamilyDef& d = f->def();
  REQUIRE(d.program);
  CHECK(d.program_id == d.program->id);
  CHECK(d.min_arch == 90);
  CHECK(d.max_arch == 90);
  CHECK(d.arch_specific);
  CHECK(f->source_is_templates_only());  // keyed like the library's own kernels
  const std::string text = d.to_text();
  CHECK(contains(text, "\nprogram = " + d.program_id + "\n"));
  CHECK_FALSE(contains(text, "\nkernel = "));
  CHECK(contains(text, "\nmax_arch = 90\n"));
  CHECK(contains(text, "\narch_specific = 1\n"));
  // The text reads back to the same definition, less the code: building a family from it says why it cannot.
  const FamilyDef back = FamilyDef::parse(text);
  CHECK(back.program_id == d.program_id);
  CHECK(back.to_text() == text);
  try {
    Family g(back);
    FAIL("a program family was built from its text alone");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(contains(e.what(), "C++ code"));
  }
  // A program and its id must agree; a kernel line beside a program is refused.
  FamilyDef other = d;
  other.program_id = "something-else";
  CHECK_THROWS_WITH_AS(Family{other}, doctest::Contains("program"), Error);
  // Architecture-specific code runs on one architecture: min_arch and max_arch must both name one with an
  // "a" target.
  FamilyDef loose = d;
  loose.name = "loose_gemm";
  loose.max_arch = 0;
  CHECK_THROWS_WITH_AS(Family{loose}, doctest::Contains("arch_specific"), Error);
  std::string with_kernel = text;
  with_kernel.insert(with_kernel.find("program = "), "kernel = k<1>(a)\n");
  CHECK_THROWS_WITH_AS(FamilyDef::parse(with_kernel), doctest::Contains("both given"), Error);
}

TEST_CASE("gemm_sm90 family: every layout maps onto the kernel's frame, and default and space are the typed variant's") {
  const std::shared_ptr<const Family> f = detail::gemm_sm90_builtin();
  std::mt19937_64 rng(0x5EED90u);
  int taken = 0;
  for (int i = 0; i < 300; ++i) {
    const GemmProblem p = random_problem(rng);
    CAPTURE(p.key(16));
    const FamilyValues v = detail::gemm_family_problem(p, 16);
    f->validate_problem(v);
    const GemmProblem frame = detail::gemm_family_frame(v);
    CHECK(frame.c_order == MatrixOrder::RowMajor);
    // The frame is the problem's own for a row-major C; a column-major C swaps A and B (C^T = B^T A^T).
    CHECK(detail::gemm_family_swaps(p) == (p.c_order == MatrixOrder::ColMajor));
    CHECK(gemm_sm90_layout(frame) == gemm_sm90_layout(p));
    // The kernel's host code frames the caller's problem and the family's alike, field by field.
    const DevicePtr aligned = DevicePtr{1} << 20;
    const Sm90GemmConfig base = choose_sm90_gemm_config(p, 132);
    const Sm90Frame want = gemm_sm90_frame(base, p, aligned, aligned), got = gemm_sm90_frame(base, frame, aligned, aligned);
    CHECK(got.m == want.m);
    CHECK(got.n == want.n);
    CHECK(got.k == want.k);
    CHECK(got.lda == want.lda);
    CHECK(got.ldb == want.ldb);
    CHECK(got.ldc == want.ldc);
    CHECK(got.a_mn == want.a_mn);
    CHECK(got.b_mn == want.b_mn);
    CHECK(got.batch == want.batch);
    if (p.batch > 1) {
      CHECK(got.stride_a == want.stride_a);
      CHECK(got.stride_b == want.stride_b);
      CHECK(got.stride_c == want.stride_c);
    }
    // Each buffer reaches exactly its operand's last element (the frame's A is the caller's B where swapped).
    const std::vector<long long> e = f->buffer_elements(v);
    const auto last = [&](long long lines, long long line, long long ld, long long stride) {
      return (p.batch - 1) * stride + (lines - 1) * ld + line;
    };
    CHECK(e[0] == last(want.a_mn ? want.k : want.m, want.a_mn ? want.m : want.k, want.lda, want.stride_a));
    CHECK(e[1] == last(want.b_mn ? want.k : want.n, want.b_mn ? want.n : want.k, want.ldb, want.stride_b));
    CHECK(e[2] == last(want.m, want.n, want.ldc, want.stride_c));
    for (const int sms : {132, 114, 8}) {
      const Sm90GemmConfig typed = choose_sm90_gemm_config(p, sms);
      const FamilyValues def = f->default_config(with_sm_count(v, sms));
      CHECK(detail::gemm_sm90_config_of(def, v) == typed);
      CHECK(def == detail::gemm_sm90_family_config(typed));
      CHECK(f->check_config(def, with_sm_count(v, sms)) == "");
      // The device's DRAM bandwidth reaches the choice (kFamilyDramGBps): the H200's, the H100's, unknown.
      for (const int dram : {4814, 3352, 0}) {
        const Sm90GemmConfig typed_dram = choose_sm90_gemm_config(p, sms, dram);
        CHECK(detail::gemm_sm90_config_of(f->default_config(with_device(v, sms, dram)), v) == typed_dram);
        if (sms == 132 && dram == 4814) {
          std::vector<Sm90GemmConfig> want;
          for (const Sm90GemmConfig& c : sm90_device_space(p, sms, dram))
            if (f->check_config(detail::gemm_sm90_family_config(c), with_sm_count(v, sms)).empty()) want.push_back(c);
          const std::vector<FamilyValues> space = f->space(with_device(v, sms, dram));
          REQUIRE(space.size() == want.size());
          for (std::size_t j = 0; j < space.size(); ++j) CHECK(detail::gemm_sm90_config_of(space[j], v) == want[j]);
        }
      }
      if (sms != 132) continue;
      // The space: the typed device space around that default (with swapped configs for small M), each
      // config valid for the problem.
      std::vector<Sm90GemmConfig> want;
      for (const Sm90GemmConfig& c : sm90_device_space(p, sms, 0))
        if (f->check_config(detail::gemm_sm90_family_config(c), with_sm_count(v, sms)).empty()) want.push_back(c);
      const std::vector<FamilyValues> space = f->space(with_sm_count(v, sms));
      REQUIRE(space.size() == want.size());
      for (std::size_t j = 0; j < space.size(); ++j) CHECK(detail::gemm_sm90_config_of(space[j], v) == want[j]);
    }
    taken += sm90_default_choice(p, 16, 132).has_value();
  }
  CHECK(taken > 50);  // the random set reaches the variant's usual problems
  // A problem whose default follows the bandwidth (the random sizes, K <= 2048, have none). The bandwidth is
  // the device's, not the problem's: not in the problem text (the tuning key).
  const FamilyValues v = detail::gemm_family_problem(problem(DType::F16, DType::F16, 16, 4096, 4096), 16);
  CHECK(f->problem_text(with_device(v, 132, 4814)) == f->problem_text(v));
  CHECK_NOTHROW(f->validate_problem(with_device(v, 132, 4814)));
  CHECK(f->config_text(f->default_config(with_device(v, 132, 4814))) != f->config_text(f->default_config(v)));
  // Its space is the H200 default's, with the H100's default beside it (a tune can come back to it).
  const GemmProblem skinny = problem(DType::F16, DType::F16, 16, 4096, 4096);
  const std::vector<FamilyValues> rich_space = f->space(with_device(v, 132, 4814));
  const std::vector<Sm90GemmConfig> want = sm90_device_space(skinny, 132, 4814);
  REQUIRE(rich_space.size() == want.size());
  for (std::size_t j = 0; j < want.size(); ++j) CHECK(detail::gemm_sm90_config_of(rich_space[j], v) == want[j]);
  const auto in_rich = [&](const Sm90GemmConfig& c) {
    return std::find(rich_space.begin(), rich_space.end(), detail::gemm_sm90_family_config(c)) != rich_space.end();
  };
  CHECK(in_rich(choose_sm90_gemm_config(skinny, 132, 4814)));
  CHECK(in_rich(choose_sm90_gemm_config(skinny, 132)));
  CHECK(rich_space != f->space(with_device(v, 132, 0)));
}

TEST_CASE("gemm_sm90 family: the plan is the kernel's launch shape, a split config adds the reduction, scratch sized") {
  const std::shared_ptr<const Family> f = detail::gemm_sm90_builtin();
  const GemmProblem p = problem(DType::BF16, DType::BF16, 2048, 11008, 4096);
  const FamilyValues v = with_sm_count(detail::gemm_family_problem(p, 16), 132);
  // The default there: 128 x 256 tiles with the last wave in K slices (a workspace that follows the SMs).
  const FamilyValues def = f->default_config(v);
  const Sm90GemmConfig cfg = detail::gemm_sm90_config_of(def, v);
  CHECK(cfg.tail == 4);
  const FamilyPlan plan = f->plan(def, v);
  REQUIRE(plan.launches.size() == 1);
  const LaunchShape s = gemm_sm90_launch_shape(cfg, p.m, p.n, p.k, 132, 1);
  CHECK(plan.launches[0].shape.grid[0] == s.grid[0]);
  CHECK(plan.launches[0].shape.block[0] == 384);
  CHECK(plan.launches[0].shape.threads == 384);
  CHECK(plan.launches[0].shape.dynamic_smem == gemm_sm90_smem_bytes(cfg));
  CHECK(plan.launches[0].shape.name_expression == gemm_sm90_name_expression(cfg));
  CHECK(plan.scratch_bytes == gemm_sm90_workspace_bytes(cfg, p, 132));
  CHECK(plan.scratch_bytes > 0);
  CHECK(f->shape(def, v).name_expression == gemm_sm90_name_expression(cfg));
  CHECK(f->scratch_bytes(def, v) == plan.scratch_bytes);
  // The names do not follow the SM count (a tune compiles once for every device); grids and scratch may.
  CHECK(f->plan(def, with_sm_count(v, 114)).launches[0].shape.name_expression == plan.launches[0].shape.name_expression);
  // A config summed by the split-K reduction kernel: a second, dependent launch.
  Sm90GemmConfig split = cfg;
  split.tail = 1;
  split.bn = 128;
  split.stages = 6;
  split.splits = 4;
  const FamilyPlan sp = f->plan(detail::gemm_sm90_family_config(split), v);
  REQUIRE(sp.launches.size() == 2);
  CHECK(sp.launches[1].dependent);
  CHECK(sp.launches[1].shape.name_expression == gemm_splitk_reduce_name_expression(DType::BF16));
  CHECK(sp.scratch_bytes == gemm_sm90_workspace_bytes(split, p, 132));
  CHECK_THROWS_AS(f->kernel_args(def, v), Error);  // the program binds the arguments itself
}

TEST_CASE("gemm_sm90 family: requirements refuse what TMA cannot load, configs the kernel cannot run are out") {
  const std::shared_ptr<const Family> f = detail::gemm_sm90_builtin();
  const GemmProblem p = problem(DType::F16, DType::F16, 16, 4096, 4096);
  FamilyValues v = with_sm_count(detail::gemm_family_problem(p, 16), 132);
  const FamilyValues def = f->default_config(v);
  CHECK(detail::gemm_sm90_config_of(def, v).arows == 16);  // one short tile row: short A stages
  // Eight-byte pointers: out of the family (the typed API runs the mma.sync family there).
  FamilyValues v8 = v;
  v8["align_a"] = 8;
  CHECK(contains(f->check_config(def, v8), "align_a >= 16"));
  // An odd pitch (not 16 bytes): refused by name.
  FamilyValues odd = v;
  odd["lda"] = 4100;
  CHECK(contains(f->check_config(def, odd), "lda * elem_bytes(in) % 16 == 0"));
  // f32 inputs are the mma.sync family's.
  FamilyValues f32 = v;
  f32["in"] = static_cast<long long>(DType::F32);
  CHECK(contains(f->check_config(def, f32), "in != 0"));
  // Short A stages of 16 rows cannot hold M = 128: the plan says which arows would.
  GemmProblem big = p;
  big.m = 128;
  const FamilyValues vb = with_sm_count(detail::gemm_family_problem(big.resolved(), 16), 132);
  CHECK(contains(f->check_config(def, vb), "arows="));
  // A batch whose operands all sit at one place (stride 0) is not the kernel's (Engine::gemm passes resolved,
  // packed strides): refused by name rather than read past the buffers the family sizes.
  FamilyValues zero = v;
  zero["batch"] = 3;
  zero["stride_a"] = 0;
  zero["stride_b"] = p.n * p.k;
  zero["stride_c"] = p.m * p.n;
  CHECK(contains(f->check_config(def, zero), "stride_a > 0"));
  // A param value outside its list.
  FamilyValues bad = def;
  bad["BN"] = 100;
  CHECK(contains(f->check_config(bad, v), "BN=100"));
}

TEST_CASE("gemm_sm90 family: the reference is declarative (f64 sums, the frame's layout), named per problem") {
  const std::shared_ptr<const Family> f = detail::gemm_sm90_builtin();
  // frame TN: A M-, B N-contiguous
  const GemmProblem p = problem(DType::BF16, DType::F32, 100, 200, 64, MatrixOrder::ColMajor, MatrixOrder::RowMajor);
  const FamilyValues v = detail::gemm_family_problem(p, 16);
  CHECK(v.at("a_mn") == 1);
  CHECK(v.at("b_mn") == 1);
  CHECK(f->reference_name_expression(v) == "swz::tpl::gemm_reference_kernel<1, 2, 0, 0, 1>");
  const FamilyLaunchShape r = f->reference_shape(v);
  CHECK(r.grid[0] == 13);  // ceil(200 / 16)
  CHECK(r.grid[1] == 7);   // ceil(100 / 16)
  CHECK(r.block[0] == 16);
  CHECK(r.block[1] == 16);
  // Buffers: each operand exactly as far as its last element (pitched lines, batches).
  const std::vector<long long> e = f->buffer_elements(v);
  CHECK(e[0] == (p.k - 1) * p.lda + p.m);  // A: K lines of M
  CHECK(e[1] == (p.k - 1) * p.ldb + p.n);  // B: K lines of N
  CHECK(e[2] == (p.m - 1) * p.ldc + p.n);
}

TEST_CASE("gemm_sm90 family: compiled for sm_90a through the engine (its layout proof first), refused elsewhere") {
  std::string why;
  if (!nvrtc_available(&why)) {
    MESSAGE("skipped: NVRTC not available: " << why);
    return;
  }
  const std::shared_ptr<const Family> f = detail::gemm_sm90_builtin();
  const GemmProblem p = problem(DType::F16, DType::F16, 128, 4096, 4096);
  const FamilyValues v = with_sm_count(detail::gemm_family_problem(p, 16), 132);
  const swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const FamilyValues def = f->default_config(v);
  const KernelEntry e = engine.compile_family(*f, def, "sm_90", v);
  CHECK(e.spill_bytes == 0);
  CHECK(e.registers > 0);
  CHECK(contains(e.lowered_name, "gemm_sm90"));
  // Asked for sm_90 or sm_90a: one target, so one cache entry.
  CHECK(engine.compile_family(*f, def, "sm_90a", v).image == e.image);
  // sm_80 has no wgmma, nor has sm_100 (max_arch): refused before any compile.
  CHECK_THROWS_WITH_AS(engine.compile_family(*f, def, "sm_80", v), doctest::Contains("sm_90"), Error);
  CHECK_THROWS_WITH_AS(engine.compile_family(*f, def, "sm_100", v), doctest::Contains("sm_90 only"), Error);
  // An application's family with a program compiles and runs in its process, but is not tuned in the worker.
  FamilyDef mine = f->def();
  mine.name = "my_gemm";
  const std::shared_ptr<const Family> m = register_family(mine);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  CHECK_THROWS_WITH_AS(autotune_family(engine, *m, v, o), doctest::Contains("isolated worker"), Error);
}
