// tests/generator/families/gemm_sm90 (CPU suite): the Hopper GEMM as a tuning variant -- its candidate
// text, where it applies by default, its search space (every config compiles for sm_90a with no spill, no
// ignored setmaxnreg, no serialized wgmma), and a compile-only tune on sm_90 that warms exactly that space.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

GemmProblem nt(DType in, DType out, long long m, long long n, long long k) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = m, p.n = n, p.k = k;
  p.a_order = MatrixOrder::RowMajor;
  p.b_order = MatrixOrder::ColMajor;
  p.c_order = MatrixOrder::RowMajor;
  return p.resolved();
}

}  // namespace

TEST_CASE("gemm_sm90 variant: candidate text round trip, and mma.sync configs are not candidates") {
  Sm90GemmConfig c = default_sm90_gemm_config(DType::BF16, DType::F32);
  c.bn = 128;
  c.stages = 6;
  c.cluster = 2;
  const std::string text = sm90_candidate_text(c);
  CHECK(text.rfind("sm90:", 0) == 0);
  CHECK(is_sm90_candidate(text));
  CHECK(parse_sm90_candidate(text) == c);
  CHECK_FALSE(is_sm90_candidate("hgemm,f16>f16,NT,tile=128x256x32,warp=64x64,stages=4,vec=8,raster=8,swa=2:3:3,swb=2:3:3"));
  CHECK_FALSE(is_sm90_candidate(c.to_string()));  // the bare config text is not a candidate
  CHECK_THROWS_AS(parse_sm90_candidate(c.to_string()), Error);
  CHECK_THROWS_AS(parse_sm90_candidate("sm90:in=f16,bn=100"), Error);
}

TEST_CASE("gemm_sm90 variant: where it runs by default") {
  const DevicePtr aligned = DevicePtr{1} << 20;
  const GemmProblem big = nt(DType::F16, DType::F16, 4096, 4096, 4096);
  REQUIRE(sm90_default_choice(big, aligned, aligned, 132).has_value());
  CHECK(*sm90_default_choice(big, aligned, aligned, 132) == choose_sm90_gemm_config(big, 132));
  CHECK(sm90_default_choice(big, 16, 132).has_value());       // the tuner's view: alignment class 16
  // The config follows the device's DRAM bandwidth (the H200's 4814 GB/s: a skinny problem's K in 2 slices).
  const GemmProblem skinny_llm = nt(DType::BF16, DType::BF16, 16, 4096, 4096);
  REQUIRE(sm90_default_choice(skinny_llm, 16, 132, 4814).has_value());
  CHECK(*sm90_default_choice(skinny_llm, 16, 132, 4814) == choose_sm90_gemm_config(skinny_llm, 132, 4814));
  CHECK(sm90_default_choice(skinny_llm, 16, 132, 4814)->splits == 2);
  CHECK(sm90_default_choice(skinny_llm, 16, 132)->splits == 1);
  CHECK_FALSE(sm90_default_choice(big, 8, 132).has_value());  // TMA needs 16-byte aligned bases and pitches
  CHECK_FALSE(sm90_default_choice(big, aligned + 8, aligned, 132).has_value());
  CHECK_FALSE(sm90_default_choice(nt(DType::F32, DType::F32, 4096, 4096, 4096), 16, 132).has_value());
  CHECK_FALSE(sm90_default_choice(nt(DType::F16, DType::F16, 4096, 4096, 0), 16, 132).has_value());
  GemmProblem batched = big;
  batched.batch = 2;
  CHECK(sm90_default_choice(batched.resolved(), 16, 132).has_value());  // batches run it too
  GemmProblem small = nt(DType::F16, DType::F16, 64, 512, 512);  // 4 tiles of 128 x 128: the mma.sync family
  CHECK_FALSE(sm90_default_choice(small, 16, 132).has_value());
  small.batch = 64;  // ... but 256 of them over 64 matrices fill the GPU
  CHECK(sm90_default_choice(small.resolved(), 16, 132).has_value());
  // 16 x 4096: one row of 128 tiles of 128 x 32 (H100: 23.6 TFLOP/s against the mma.sync family's 18.3);
  // at K = 14336 64 tiles of 128 x 64 in 2 K slices.
  const auto skinny = sm90_default_choice(nt(DType::F16, DType::F16, 16, 4096, 4096), 16, 132);
  REQUIRE(skinny.has_value());
  CHECK(skinny->bn == 32);
  const auto deep = sm90_default_choice(nt(DType::F16, DType::F16, 16, 4096, 14336), 16, 132);
  REQUIRE(deep.has_value());
  CHECK(deep->splits == 1);
  CHECK(deep->bn == 32);
  CHECK(deep->arows == 16);
  // 64-row tiles count as such: 96 x 4096 (and 80 x 4096 with an M-contiguous A) run 128 of 64 x 64, not
  // 64 tiles of 128 rows, which would leave it to the mma.sync family (0.47x of cuBLAS on the H100 there).
  for (const long long m : {80LL, 96LL, 112LL, 128LL}) {
    CAPTURE(m);
    GemmProblem tn = nt(DType::BF16, DType::BF16, m, 4096, 4096);
    tn.a_order = MatrixOrder::ColMajor;
    for (const GemmProblem& q : {nt(DType::F16, DType::F16, m, 4096, 4096), tn.resolved()}) {
      const auto c = sm90_default_choice(q, 16, 132);
      REQUIRE(c.has_value());
      CHECK(c->arows == (m < 96 && q.a_order == MatrixOrder::RowMajor ? 128 : 64));
    }
  }
  // 128 x 128 x 4096: one tile in 16 slices is still too few units; 128 x 128 x 128 has two k-blocks.
  CHECK_FALSE(sm90_default_choice(nt(DType::F16, DType::F16, 128, 128, 4096), 16, 132).has_value());
  CHECK_FALSE(sm90_default_choice(nt(DType::F16, DType::F16, 128, 128, 128), 16, 132).has_value());
  CHECK(sm90_default_choice(nt(DType::BF16, DType::F32, 2048, 4096, 4096), 16, 132).has_value());
}

TEST_CASE("gemm_sm90 variant: the space keeps the base's dtypes, is distinct and holds the defaults") {
  for (const GemmProblem& p : {nt(DType::F16, DType::F16, 4096, 4096, 4096), nt(DType::BF16, DType::F32, 8192, 8192, 8192),
                               nt(DType::F16, DType::BF16, 128, 14336, 4096), nt(DType::F16, DType::F16, 128, 4096, 4096),
                               nt(DType::BF16, DType::BF16, 16, 4096, 4096)}) {
    const Sm90GemmConfig base = choose_sm90_gemm_config(p, 132);
    const std::vector<Sm90GemmConfig> space = sm90_gemm_space(base);
    CHECK(space.size() >= 12);
    CHECK(space.size() <= 28);
    std::set<std::string> seen;
    bool has_default = false;
    for (const Sm90GemmConfig& c : space) {
      CHECK(c.in == base.in);
      CHECK(c.out == base.out);
      CHECK_NOTHROW(c.validate());
      CHECK(seen.insert(c.to_string()).second);
      has_default = has_default || c == base;
    }
    CHECK_MESSAGE(has_default, base.to_string());
  }
}

TEST_CASE("gemm_sm90 variant: the device space holds only configs the problem's frame takes") {
  // 128 x 4096 x 4096: the default runs 64-row tiles (arows=64) over 128 rows, whose space around it has K in
  // 2 slices summed in the kernel, which 64-row tiles take only within one short tile row: left out here,
  // kept at M = 64. Beside it 64 x 128 tiles and the 128-row tiles it replaced (128 x 32, K whole).
  const GemmProblem p = nt(DType::F16, DType::F16, 128, 4096, 4096);
  const Sm90GemmConfig def = choose_sm90_gemm_config(p, 132);
  REQUIRE(def.arows == 64);
  const DevicePtr aligned = DevicePtr{1} << 20;
  const std::vector<Sm90GemmConfig> space = sm90_device_space(p, 132, 0);
  REQUIRE_FALSE(space.empty());
  CHECK(space.front() == def);
  bool wide64 = false, thin128 = false;
  for (const Sm90GemmConfig& c : space) {
    CAPTURE(c.to_string());
    CHECK_NOTHROW(gemm_sm90_frame(c, p, aligned, aligned));
    CHECK_FALSE((c.arows == 64 && c.reduce_fixup));
    wide64 = wide64 || (c.arows == 64 && c.bn == 128 && c.splits == 1);
    thin128 = thin128 || (c.arows == 128 && c.bn == 32 && c.splits == 1);
  }
  CHECK(wide64);
  CHECK(thin128);
  // Every config of the space around it, unfiltered, is valid on its own; the fixup one is there.
  bool fixup64 = false;
  for (const Sm90GemmConfig& c : sm90_gemm_space(def)) fixup64 = fixup64 || (c.arows == 64 && c.reduce_fixup);
  CHECK(fixup64);
  // M = 64 (one short tile row): 64-row stages summed in the kernel run, and stay.
  const GemmProblem short_row = nt(DType::F16, DType::F16, 64, 4096, 4096);
  bool kept = false;
  for (const Sm90GemmConfig& c : sm90_device_space(short_row, 132, 0)) {
    CHECK_NOTHROW(gemm_sm90_frame(c, short_row, aligned, aligned));
    kept = kept || (c.arows == 64 && c.reduce_fixup && !c.swap_ab);
  }
  CHECK(kept);
}

TEST_CASE("gemm_sm90 variant: every config of the space compiles for sm_90a without spills, C7508 or C7510") {
  std::string why;
  if (!nvrtc_available(&why)) {
    MESSAGE("skipped: NVRTC not available: " << why);
    return;
  }
  // The space around the default, and the kernels of a split space (split configs run the f32-out
  // instantiation: one compile per distinct kernel).
  std::vector<Sm90GemmConfig> configs = sm90_gemm_space(default_sm90_gemm_config(DType::F16, DType::F16));
  std::set<std::string> kernels;
  for (const Sm90GemmConfig& c : configs) kernels.insert(gemm_sm90_name_expression(c));
  // (and of a skinny space: 32- and 64-wide tiles, K slices, cluster sums)
  const Sm90GemmConfig skinny = choose_sm90_gemm_config(nt(DType::BF16, DType::BF16, 80, 4096, 4096), 132);
  REQUIRE(skinny.bn == 32);
  REQUIRE(skinny.arows == 128);
  for (const Sm90GemmConfig& c : sm90_gemm_space(skinny))
    if (kernels.insert(gemm_sm90_name_expression(c)).second) configs.push_back(c);
  // (and the swapped configs of a small M: 64-row tiles summed in clusters among them; NN for 64-wide
  // N-contiguous ones)
  GemmProblem nn = nt(DType::F16, DType::F16, 16, 4096, 4096);
  nn.b_order = MatrixOrder::RowMajor;
  for (const GemmProblem& p : {nt(DType::F16, DType::F16, 16, 4096, 4096), nn.resolved()})
    for (const Sm90GemmConfig& c : sm90_swap_space(p))
      if (kernels.insert(gemm_sm90_name_expression(c)).second) configs.push_back(c);
  // (and the widths of one wave through TMA: f32 C in chunks of 32 columns (192, 224, 256), 16-bit C in chunks
  // of 16 (176, 208) and 64 (192, 256); 128 x 80 / 96 tiles of one tile row, C in chunks of 16 / 32)
  for (const GemmProblem& p : {nt(DType::BF16, DType::F32, 256, 11008, 4096), nt(DType::F16, DType::F16, 256, 11008, 4096),
                               nt(DType::BF16, DType::BF16, 128, 9216, 4096)})
    for (const Sm90GemmConfig& c : sm90_wave_space(p, 132))
      if (kernels.insert(gemm_sm90_name_expression(c)).second) configs.push_back(c);
  for (const Sm90GemmConfig& c : configs) {
    CAPTURE(c.to_string());
    CompileRequest req = gemm_sm90_compile_request(c);
    req.extra_options.push_back("--ptxas-options=-v");
    const CompiledKernel k = compile(req);
    CAPTURE(k.log);
    CHECK_FALSE(contains(k.log, "C7508"));  // setmaxnreg ignored
    CHECK_FALSE(contains(k.log, "C7510"));  // wgmma serialized
    CHECK_FALSE(contains(k.log, "instructions are serialized"));  // any cause (C7510, C7520: a branch around wgmma)
    CHECK(contains(k.log, " 0 bytes spill stores, 0 bytes spill loads"));
  }
}

TEST_CASE("gemm_sm90 variant: a compile-only tune for sm_90 warms the Hopper space; off, or on sm_80, the mma.sync one") {
  std::string why;
  if (!nvrtc_available(&why)) {
    MESSAGE("skipped: NVRTC not available: " << why);
    return;
  }
  const GemmProblem p = nt(DType::F16, DType::F16, 4096, 4096, 4096);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  o.max_candidates = 2;
  {
    const swz_cache_test::TempDir dir;
    EngineOptions eo;
    eo.cache_dir = dir.path();
    Engine engine(eo);
    const TuneReport r = autotune_gemm(engine, p, 16, o);
    CHECK(r.default_config == sm90_candidate_text(choose_sm90_gemm_config(p, 132)));
    CHECK(r.space_size == static_cast<int>(sm90_gemm_space(choose_sm90_gemm_config(p, 132)).size()));
    int compiled = 0;
    for (const TuneCandidate& c : r.candidates) {
      CHECK_MESSAGE(is_sm90_candidate(c.config), c.config);
      compiled += c.status == "compiled";
    }
    CHECK(compiled >= 2);
    CHECK(r.space_hash == detail::gemm_sm90_builtin()->definition_hash());  // the family's winners
    // An mma.sync extra config is refused with what to do instead.
    TuneOptions bad = o;
    bad.extra_configs = {default_gemm_config(p, 16).to_string()};
    try {
      autotune_gemm(engine, p, 16, bad);
      FAIL("an mma.sync extra config was accepted for a Hopper problem");
    } catch (const Error& e) {
      CHECK(contains(e.what(), "hopper_gemm = false"));
      CHECK(contains(e.what(), r.default_config));  // the default the tune starts from, named
    }
    // At 8-byte alignment TMA cannot load: the mma.sync space.
    const TuneReport r8 = autotune_gemm(engine, p, 8, o);
    for (const TuneCandidate& c : r8.candidates) CHECK_FALSE(is_sm90_candidate(c.config));
  }
  for (const bool off : {true, false}) {
    const swz_cache_test::TempDir dir;
    EngineOptions eo;
    eo.cache_dir = dir.path();
    eo.hopper_gemm = !off;
    Engine engine(eo);
    TuneOptions o2 = o;
    if (!off) o2.arch = "sm_80";
    const TuneReport r = autotune_gemm(engine, p, 16, o2);
    CHECK(r.default_config == default_gemm_config(p, 16).to_string());
    for (const TuneCandidate& c : r.candidates) CHECK_FALSE(is_sm90_candidate(c.config));
  }
}
