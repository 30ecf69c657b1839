// tests/runtime: which GEMM operands Engine::gemm stages (GemmProblem::staged), the staging kernel's
// generated source, and the arguments Engine::gemm refuses before any device work (CPU only; the copies
// themselves run in gemm_gpu_test.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "generator/families/gemm/gemm_pack.hpp"
#include "swzjit/jit.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

GemmProblem problem(DType t, long long m, long long n, long long k) {
  GemmProblem p;
  p.dtype = t, p.out_dtype = t, p.m = m, p.n = n, p.k = k;
  return p;
}

}  // namespace

TEST_CASE("staging: operands narrower than 8 bytes get 16-byte pitches; the others are left alone") {
  bool sa = true, sb = true;
  // 16-bit: K = 4100 keeps A at 8 bytes (left alone); N = 129 makes B 2-byte: staged at pitch 136.
  GemmProblem s = problem(DType::F16, 127, 129, 4100).staged(0, 0, &sa, &sb);
  CHECK(!sa);
  CHECK(sb);
  CHECK(s.lda == 4100);
  CHECK(s.ldb == 136);
  CHECK(s.stride_b == 4100 * 136);
  CHECK(s.max_vec_bytes(0, 0) == 8);
  // Both odd (A column-major with M = 127, B row-major with N = 129).
  GemmProblem tn = problem(DType::BF16, 127, 129, 4100);
  tn.a_order = MatrixOrder::ColMajor;
  s = tn.staged(0, 0, &sa, &sb);
  CHECK(sa);
  CHECK(sb);
  CHECK(s.lda == 128);
  CHECK(s.stride_a == 4100 * 128);
  CHECK(s.max_vec_bytes(0, 0) == 16);
  // A misaligned pointer stages its operand even with aligned pitches.
  s = problem(DType::F16, 64, 64, 64).staged(2, 0, &sa, &sb);
  CHECK(sa);
  CHECK(!sb);
  CHECK(s.lda == 64);
  // f32: 4-byte pitches are narrow, 8-byte ones are not.
  s = problem(DType::F32, 127, 129, 4100).staged(0, 0, &sa, &sb);
  CHECK(!sa);
  CHECK(sb);
  CHECK(s.ldb == 132);
  GemmProblem f = problem(DType::F32, 64, 66, 64);
  s = f.staged(0, 0, &sa, &sb);
  CHECK(!sb);  // 66 floats = 264 bytes: 8-byte aligned
  // Batches: an odd stride makes an operand narrow; its staged stride is rows x staged pitch.
  GemmProblem bt = problem(DType::F16, 64, 64, 64);
  bt.batch = 3, bt.stride_a = 64 * 64 + 1;
  s = bt.staged(0, 0, &sa, &sb);
  CHECK(sa);
  CHECK(!sb);
  CHECK(s.stride_a == 64 * 64);
  // Nothing to stage for empty problems; huge copies (> 1 GiB) are not staged.
  s = problem(DType::F16, 127, 129, 0).staged(0, 0, &sa, &sb);
  CHECK(!sa);
  CHECK(!sb);
  GemmProblem huge = problem(DType::F16, 100000, 8, 10001);
  s = huge.staged(0, 0, &sa, &sb);
  CHECK(!sa);  // 100000 x 10008 x 2 bytes = 2 GB
  CHECK(s.lda == 10001);
  // Staging is idempotent: a staged problem stages nothing more.
  s = problem(DType::F16, 127, 129, 4100).staged(0, 0, nullptr, nullptr).staged(0, 0, &sa, &sb);
  CHECK(!sa);
  CHECK(!sb);
}

TEST_CASE("staging kernel: one instantiation per element size, compiles for sm_80 and sm_90") {
  CHECK(gemm_pack_name_expression(DType::F16) == "swz::tpl::gemm_pack_kernel<2>");
  CHECK(gemm_pack_name_expression(DType::BF16) == gemm_pack_name_expression(DType::F16));
  CHECK(gemm_pack_name_expression(DType::F32) == "swz::tpl::gemm_pack_kernel<4>");
  CHECK(gemm_pack_ld(129, DType::F16) == 136);
  CHECK(gemm_pack_ld(128, DType::F16) == 128);
  CHECK(gemm_pack_ld(129, DType::F32) == 132);
  const LaunchShape s = gemm_pack_launch_shape(4100, 136, 1, DType::F16);
  CHECK(s.block[0] == 256);
  CHECK(s.grid[0] == (4100 * 17 + 255) / 256);
  for (const char* arch : {"sm_80", "sm_90"})
    for (DType t : {DType::F16, DType::F32}) {
      CompileRequest req;
      req.source = gemm_pack_source(t);
      req.source_name = gemm_pack_source_name(t);
      req.name_expression = gemm_pack_name_expression(t);
      req.arch = arch;
      try {
        const CompiledKernel k = compile(req);
        CHECK(!k.image.empty());
      } catch (const Error& e) {
        FAIL_CHECK(arch << " " << to_string(t) << ": " << e.what() << "\n" << e.compile_log());
      }
    }
}

TEST_CASE("gemm workspace size: 0 unsplit and aligned, split-K partials for a split config, staged copies on top") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);  // no GPU needed: explicit configs, pitches and pointers only
  GemmProblem p = problem(DType::F16, 77, 93, 4096);
  p.b_order = MatrixOrder::ColMajor;
  const std::string base = "hgemm,f16>f16,NT,tile=64x64x32,warp=32x32,stages=4,vec=8,raster=4,swa=2:3:3,swb=2:3:3";
  const GemmConfig unsplit = GemmConfig::parse(base);
  const GemmConfig split8 = GemmConfig::parse(base + ",split=8");
  const DevicePtr a = 1 << 20, b = 1 << 24;  // 256-byte aligned addresses (never dereferenced)
  CHECK(engine.gemm_workspace_size(p, a, b, &unsplit) == 0);
  const std::size_t split_bytes = engine.gemm_workspace_size(p, a, b, &split8);
  CHECK(split_bytes >= std::size_t(8) * 77 * 93 * sizeof(float));
  CHECK(split_bytes < std::size_t(8) * 80 * 128 * sizeof(float) + 4096);
  p.batch = 3;  // three matrices of partials in one launch
  CHECK(engine.gemm_workspace_size(p, a, b, &split8) == 3 * split_bytes);
  p.batch = 1;
  // A 2-byte-aligned A is staged: its packed copy (77 x 4096 f16, 256-rounded) comes first.
  CHECK(engine.gemm_workspace_size(p, a + 2, b, &unsplit) == 77 * 4096 * 2);
  CHECK(engine.gemm_workspace_size(p, a + 2, b, &split8) == 77 * 4096 * 2 + split_bytes);
  // Empty problems and K = 0 need nothing.
  p.k = 0, p.lda = 4096, p.ldb = 4096;  // pitches kept 16-byte so the config fits
  CHECK(engine.gemm_workspace_size(p, a, b, &split8) == 0);
  p.m = 0;
  CHECK(engine.gemm_workspace_size(p, a, b, &split8) == 0);
}

TEST_CASE("gemm: alpha and beta must be finite, refused before any device work, on every path") {
  Engine engine(EngineOptions{0, TunePolicy::Default, "", false});
  GemmProblem p;
  p.dtype = p.out_dtype = DType::F16;
  p.m = p.n = p.k = 64;
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    CHECK_THROWS_WITH_AS(engine.gemm(p, 256, 512, 768, bad, 0.0f, nullptr), doctest::Contains("finite"), Error);
    CHECK_THROWS_WITH_AS(engine.gemm(p, 256, 512, 768, 1.0f, bad, nullptr), doctest::Contains("finite"), Error);
  }
}
