// tests/runtime/jit: every target of known_archs() (Ampere to Blackwell) compiles each family's default
// kernel with this NVRTC, without a GPU.
#include <doctest/doctest.h>

#include <string>

#include "runtime/jit/jit_internal.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

TEST_CASE("archs: sm_NNN numbers; the Blackwell targets are known") {
  CHECK(detail::arch_number("sm_80") == 80);
  CHECK(detail::arch_number("sm_90a") == 90);
  CHECK(detail::arch_number("sm_100") == 100);
  CHECK(detail::arch_number("sm_121") == 121);
  for (const char* a : {"sm_87", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"}) CHECK(is_known_arch(a));
  CHECK(!is_known_arch("sm_75"));
  CHECK(!is_known_arch("sm_100x"));
}

TEST_CASE("archs: the default transpose, SGEMM, HGEMM and rowsum kernels compile for every new target") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const auto rowsum = get_family("rowsum");
  GemmProblem h;
  h.dtype = h.out_dtype = DType::F16;
  h.m = h.n = h.k = 1024;
  h.b_order = MatrixOrder::ColMajor;
  GemmProblem s = h;
  s.dtype = s.out_dtype = DType::F32;
  for (const char* arch : {"sm_87", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"}) {
    CAPTURE(arch);
    CHECK(!engine.compile_transpose(default_transpose_config(DType::F32, 16), arch).image.empty());
    CHECK(!engine.compile_transpose(default_transpose_config(DType::BF16, 16), arch).image.empty());
    CHECK(!engine.compile_gemm(default_gemm_config(s, 16, arch), arch).image.empty());
    const KernelEntry hk = engine.compile_gemm(default_gemm_config(h, 16, arch), arch);
    CHECK(!hk.image.empty());
    CHECK(hk.spill_bytes == 0);
    CHECK(!engine.compile_family(*rowsum, rowsum->parse_config(""), arch).image.empty());
  }
}
