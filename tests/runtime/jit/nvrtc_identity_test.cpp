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
