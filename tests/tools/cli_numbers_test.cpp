// tests/tools: one number parser for every `swz` option and list, sizes that overflowed, options that
// silently overrode others, and the same exit code (2 = bad usage) for the same mistake everywhere
// (issue 10 items 5, 7 and 13).
#include <doctest/doctest.h>

#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_support.hpp"

using swz_test::run_swz;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A cache directory that must never be created: each command below fails before opening a cache.
struct UnusedCacheDir {
  std::string path;
  UnusedCacheDir() {
    char tmpl[] = "/tmp/swz_cli_numbers_XXXXXX";
    if (mkdtemp(tmpl)) path = tmpl;
  }
  ~UnusedCacheDir() {
    unlink((path + "/cache/.keep").c_str());
    rmdir((path + "/cache").c_str());
    rmdir(path.c_str());
  }
  std::string env() const { return "SWZJIT_CACHE_DIR=" + path + "/cache"; }
  bool cache_created() const {
    struct stat st;
    return stat((path + "/cache").c_str(), &st) == 0;
  }
};

}  // namespace

TEST_CASE("every numeric option and list reads numbers alike: decimal, no space, sign or hex") {
  // " 3,3,3" was accepted by --swizzle while " 8,8" was refused by --shape
  for (const char* sw : {"' 3,3,3'", "'3, 3,3'", "+3,3,3", "0x3,3,3"}) {
    const auto r = run_swz(std::string("layout --swizzle ") + sw + " --shape 8,8");
    CHECK_MESSAGE(r.code == 2, sw);
    CHECK_MESSAGE(has(r.err, "--swizzle"), sw, ": ", r.err);
  }
  for (const char* shape : {"' 8,8'", "+8,8", "0x8,8", "8,8,"}) {
    const auto r = run_swz(std::string("layout --swizzle 3,3,3 --shape ") + shape);
    CHECK_MESSAGE(r.code == 2, shape);
    CHECK_MESSAGE(has(r.err, "--shape"), shape, ": ", r.err);
  }
  CHECK(run_swz("layout --swizzle 3,3,3 --shape 8,8").code == 0);
  CHECK(run_swz("layout --swizzle 1,0,-1 --shape 4,4 --stride 1,-4 --format csv").code == 0);

  const auto hex = run_swz("bank --op lds --addresses 0x10,0");
  CHECK(hex.code == 2);
  CHECK(has(hex.err, "--addresses"));
  CHECK(has(hex.err, "decimal integer"));
  const auto plus = run_swz("bank --op lds --width +4 --addresses 0,4");
  CHECK(plus.code == 2);
  CHECK(has(plus.err, "--width"));
  CHECK(run_swz("bank --op lds --addresses ' 8,8'").code == 2);
  CHECK(run_swz("bank --op lds --addresses 0,4").code == 0);

  // config options and --config fields use the same parser
  CHECK(run_swz("gen transpose --tile ' 32x32' --smem plain").code == 2);
  CHECK(run_swz("gen transpose --threads 0x100 --smem plain").code == 2);
  CHECK(run_swz("gen transpose --config f32,tile=32x32,threads=+256,vec=4,smem=plain").code == 2);
  CHECK(run_swz("gen transpose --tile 32x32 --threads 256 --smem plain").code == 0);
}

TEST_CASE("--smem cannot smuggle in other fields; duplicate config fields are refused") {
  const auto r = run_swz("gen transpose --tile 64x64 --smem 'swizzle:2:0:5,tile=32x32'");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--smem"));
  CHECK(r.out.empty());
  CHECK(run_swz("gen transpose --smem 'pad:1,vec=1'").code == 2);
  CHECK(run_swz("gen transpose --config f32,tile=32x32,threads=256,vec=4,smem=plain,tile=64x64").code == 2);
  CHECK(run_swz("gen transpose --config f32,tile=32x32,threads=256,vec=4,smem=plain+3:3:3").code == 2);
  CHECK(run_swz("gen transpose --config f32,tile=32x32,threads=256,vec=4,smem=swizzle:2:0:5+").code == 2);
  const auto ok = run_swz("gen transpose --tile 64x64 --smem swizzle:2:0:6");
  CHECK(ok.code == 0);
  CHECK(has(ok.out, "tile=64x64"));
}

TEST_CASE("swz layout --format svg refuses a huge picture and says how to get a smaller one") {
  const auto r = run_swz("layout --swizzle 3,3,3 --shape 1024,1024 --format svg");
  CHECK(r.code == 2);
  CHECK(r.out.empty());  // was 316 MB
  CHECK(has(r.err, "at most 16384 cells"));
  CHECK(has(r.err, "--shape"));
  const auto ok = run_swz("layout --swizzle 3,3,3 --shape 128,128 --format svg");
  CHECK(ok.code == 0);
  CHECK(ok.out.size() < 8000000);
  CHECK(run_swz("layout --swizzle 3,3,3 --shape 1024,1024 --format csv").code == 0);
}

TEST_CASE("--out that does not fit --dtype is exit 2 in gen, analyze, compile, autotune and run") {
  UnusedCacheDir dir;
  for (const char* cmd : {"gen gemm", "analyze gemm", "compile gemm --arch sm_90",
                          "autotune gemm --m 64 --n 64 --k 64 --compile-only --arch sm_90",
                          "run gemm --m 64 --n 64 --k 64"}) {
    const auto r = run_swz(std::string(cmd) + " --dtype f32 --out f16", dir.env());
    CHECK_MESSAGE(r.code == 2, cmd, ": ", r.err);
    CHECK_MESSAGE(has(r.err, "--dtype/--out"), cmd, ": ", r.err);
  }
  CHECK_FALSE(dir.cache_created());
}

TEST_CASE("sizes that overflowed are bad usage (exit 2), found before any cache or GPU work") {
  UnusedCacheDir dir;
  const auto g = run_swz("autotune gemm --m 2147483647 --n 2147483647 --k 2147483647 --batch 65535 --compile-only "
                         "--arch sm_90 --quiet", dir.env());
  CHECK(g.code == 2);
  CHECK(has(g.err, "gemm A"));
  const auto t = run_swz("run transpose --rows 2147483648 --cols 2147483648 --batch 1048576 --pad-ld 1048576",
                         dir.env());
  CHECK(t.code == 2);
  CHECK(has(t.err, "transpose"));
  const auto a = run_swz("autotune transpose --rows 2147483648 --cols 2147483648 --batch 1048576 --compile-only "
                         "--arch sm_90 --quiet", dir.env());
  CHECK(a.code == 2);
  CHECK_FALSE(dir.cache_created());
  // real numbers are strict too
  CHECK(run_swz("run gemm --m 64 --n 64 --k 64 --alpha 0x10", dir.env()).code == 2);
  CHECK(run_swz("run gemm --m 64 --n 64 --k 64 --beta ' 1'", dir.env()).code == 2);
  CHECK(run_swz("autotune transpose --rows 64 --cols 64 --budget-s 1e3 --compile-only --arch sm_90", dir.env()).code == 2);
  CHECK(run_swz("autotune transpose --rows 64 --cols 64 --budget-s inf --compile-only --arch sm_90", dir.env()).code == 2);
}
