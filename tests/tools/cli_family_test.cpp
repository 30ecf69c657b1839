// tests/tools: declared families through `swz` (tools/cmd_family.cpp): listing, showing, generating,
// compiling, analysing and compile-only tuning, for the built-in rowsum and for a .family file.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "swzjit/jit.hpp"
#include "tests/generator/core/family_fixtures.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/tools/cli_support.hpp"

using swz_test::run_swz;

TEST_CASE("swz family ls / show / analyze / gen / compile for the built-in rowsum") {
  swz_cache_test::TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + dir.path();
  auto r = run_swz("family ls", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("rowsum") != std::string::npos);
  r = run_swz("family ls --json", env);
  CHECK(r.out.find("\"family\": \"rowsum\"") != std::string::npos);
  r = run_swz("family show rowsum", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("definition hash") != std::string::npos);
  CHECK(r.out.find("--- source") != std::string::npos);
  r = run_swz("analyze rowsum --config BLOCK_ROWS=64,LAYOUT=0", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("BANK CONFLICTS") != std::string::npos);
  r = run_swz("analyze rowsum --config LAYOUT=1 --json", env);
  CHECK(r.out.find("\"excess_wavefronts\": 0") != std::string::npos);
  r = run_swz("gen rowsum --config BLOCK_ROWS=32", env);
  CHECK(r.out.find("swz::tpl::rowsum_kernel<32, 2>") != std::string::npos);
  r = run_swz("compile rowsum --arch sm_90 --json", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("\"arch\": \"sm_90\"") != std::string::npos);
  r = run_swz("analyze rowsum --config TILE=3", env);
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown parameter 'TILE'") != std::string::npos);
  r = run_swz("family show nosuch", env);
  CHECK(r.code == 2);
  CHECK(r.err.find("registered: ") != std::string::npos);
  r = run_swz("family --help", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("swz family ls") != std::string::npos);
}

TEST_CASE("swz autotune FAMILY --compile-only fills the cache once; a .family file works like a name") {
  swz_cache_test::TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  {
    std::ofstream f(dir / "scale2.family");
    f << swz_test::scale_family_text("0 2");
  }
  auto r = run_swz("autotune " + (dir / "scale2.family") + " --problem n=5000 --compile-only --arch sm_80", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("compiles 8") != std::string::npos);  // 6 candidates + the reference + the check kernel
  r = run_swz("autotune " + (dir / "scale2.family") + " --problem n=5000 --compile-only --arch sm_80", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("compiles 0, kernel cache hits 8") != std::string::npos);
  r = run_swz("cache ls", env);
  CHECK(r.out.find("scale2<64, 2>") != std::string::npos);
  r = run_swz("autotune rowsum --problem batch=2,rows=300,cols=100 --compile-only --arch sm_90", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("skipped-static: bank analysis") != std::string::npos);
  r = run_swz("autotune rowsum --problem rows=300 --compile-only --arch sm_90", env);
  CHECK(r.code == 2);
  CHECK(r.err.find("dimension 'batch' missing") != std::string::npos);
  r = run_swz("autotune rowsum --compile-only --arch sm_90", env);
  CHECK(r.code == 2);
  CHECK(r.err.find("--problem") != std::string::npos);
  r = run_swz("gen " + (dir / "missing.family"), env);
  CHECK(r.code == 2);
  CHECK(r.err.find("cannot read") != std::string::npos);
}

TEST_CASE("swz family ls lists gemm_sm90 (a program); swz autotune gemm_sm90 --compile-only warms its sm_90a kernels") {
  swz_cache_test::TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache");
  auto r = run_swz("family ls", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("gemm_sm90") != std::string::npos);
  r = run_swz("family show gemm_sm90", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("program = gemm_sm90/") != std::string::npos);
  // A .family file naming a program cannot be built outside the library (the code is not in the text).
  {
    std::ofstream f(dir / "copy.family");
    f << "family = my_copy\ndims = n\nparam P = 1\nbuffer out = f32 [n] output\nprogram = gemm_sm90/x\n"
         "--- source\n#include \"common.cuh\"\n";
  }
  r = run_swz("family show " + (dir / "copy.family"), env);
  CHECK(r.code != 0);
  CHECK(r.err.find("C++ code") != std::string::npos);
  std::string why;
  if (!swz::nvrtc_available(&why)) {
    MESSAGE("skipped the compile-only tune: NVRTC not available: " << why);
    return;
  }
  const std::string problem =
      " --problem in=f16,out=f16,a_mn=0,b_mn=0,m=128,n=4096,k=4096,lda=4096,ldb=4096,ldc=4096,batch=1,"
      "stride_a=0,stride_b=0,stride_c=0,align_a=16,align_b=16";
  r = run_swz("autotune gemm_sm90" + problem + " --compile-only --arch sm_90 --max-candidates 1", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("(sm_90)") != std::string::npos);
  CHECK(r.out.find("compiles 3") != std::string::npos);  // the default, the reference and the check kernel
  r = run_swz("autotune gemm_sm90" + problem + " --compile-only --arch sm_90 --max-candidates 1", env);
  CHECK(r.code == 0);
  CHECK(r.out.find("compiles 0, kernel cache hits 3") != std::string::npos);
  // Misaligned: the requirement says why no configuration fits.
  r = run_swz("autotune gemm_sm90 --problem in=f16,out=f16,a_mn=0,b_mn=0,m=128,n=4096,k=4096,lda=4096,ldb=4096,"
              "ldc=4096,batch=1,stride_a=0,stride_b=0,stride_c=0,align_a=8,align_b=16 --compile-only --arch sm_90",
              env);
  CHECK(r.code != 0);
  CHECK(r.err.find("align_a >= 16") != std::string::npos);
}
