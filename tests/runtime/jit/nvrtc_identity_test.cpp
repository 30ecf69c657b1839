// tests/runtime/jit: a warm process finds its kernels without loading NVRTC (runtime/jit/nvrtc_identity.cpp):
// the memo beside the database names the library file; a damaged or foreign memo means loading it again.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/tools/cli_support.hpp"

namespace {

swz_test::RunResult warm_run(const std::string& dir) {
  return swz_test::run_swz("autotune rowsum --problem batch=1,rows=100,cols=100 --compile-only --arch sm_90 --cache-dir " + dir,
                           "SWZJIT_LOG_LEVEL=info");
}

std::string memo_file(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("nvrtc-", 0) == 0) return e.path().string();
  return "";
}

}  // namespace

TEST_CASE("nvrtc identity: the second process compiles nothing and never loads NVRTC; a bad memo is rebuilt") {
  swz_cache_test::TempDir dir;
  auto r = warm_run(dir.path());
  REQUIRE(r.code == 0);
  CHECK(r.err.find("NVRTC loaded from") != std::string::npos);
  const std::string memo = memo_file(dir.path());
  REQUIRE(!memo.empty());
  r = warm_run(dir.path());
  CHECK(r.code == 0);
  CHECK(r.out.find("compiles 0") != std::string::npos);
  CHECK(r.err.find("NVRTC loaded from") == std::string::npos);
  // A memo of another library file (or garbage) is not trusted: NVRTC is loaded and the memo rewritten.
  for (const char* bad : {"/other/libnvrtc.so.12|1|2.0\n12.8\n80 90 \n", "garbage"}) {
    { std::ofstream(memo, std::ios::trunc) << bad; }
    r = warm_run(dir.path());
    CHECK(r.code == 0);
    CHECK(r.err.find("NVRTC loaded from") != std::string::npos);
    std::ifstream in(memo);
    std::string first;
    std::getline(in, first);
    CHECK(first.find("libnvrtc") != std::string::npos);
    CHECK(first.find("/other/") == std::string::npos);
  }
}

TEST_CASE("without NVRTC a cache's kernels are still found (keyed as the NVRTC that built them); others fail clearly") {
  swz_cache_test::TempDir dir;
  const std::string problems = dir.path() + "/problems.txt";
  {
    std::ofstream f(problems);
    f << "transpose --rows 1000 --cols 777\ngemm --dtype f16 --m 512 --n 384 --k 256\n";
  }
  const std::string cache = "SWZJIT_CACHE_DIR=" + dir.path() + "/shipped";
  auto r = swz_test::run_swz("cache warm --problems " + problems + " --arch sm_90", cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("2 kernels compiled") != std::string::npos);
  // The memo of the NVRTC that built them goes too (a cache imported elsewhere has none): only the
  // kernels' own NVRTC version names them.
  std::filesystem::remove(memo_file(dir.path() + "/shipped"));
  const std::string no_nvrtc = "SWZJIT_LIBNVRTC=" + dir.path() + "/none/libnvrtc.so.13 SWZJIT_LOG_LEVEL=info " + cache;
  r = swz_test::run_swz("cache warm --problems " + problems + " --arch sm_90", no_nvrtc);
  CHECK_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("2 from the local cache") != std::string::npos);
  CHECK(r.err.find("looking kernels up as built by NVRTC") != std::string::npos);
  // A kernel the cache lacks: refused, saying NVRTC is needed.
  {
    std::ofstream f(problems);
    f << "transpose --dtype f16 --rows 1000 --cols 777\n";
  }
  r = swz_test::run_swz("cache warm --problems " + problems + " --arch sm_90", no_nvrtc);
  CHECK(r.code != 0);
  CHECK((r.out + r.err).find("NVRTC is needed to compile a kernel that is not cached") != std::string::npos);
  CHECK((r.out + r.err).find("0 kernels compiled") != std::string::npos);  // the failed build is no kernel
  // An empty cache without NVRTC: the error says what to ship.
  r = swz_test::run_swz("cache warm --problems " + problems + " --arch sm_90",
                        "SWZJIT_LIBNVRTC=" + dir.path() + "/none/libnvrtc.so.13 SWZJIT_CACHE_DIR=" + dir.path() + "/empty");
  CHECK(r.code != 0);
  CHECK(r.err.find("this cache has none") != std::string::npos);
}
