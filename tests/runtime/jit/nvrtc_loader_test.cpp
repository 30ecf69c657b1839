// tests/runtime/jit: NVRTC found and dlopened lazily (runtime/jit/nvrtc_loader.cpp): which files are
// candidates and in which order, what a failed load says, and that this machine's NVRTC loads.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "runtime/jit/nvrtc_api.hpp"
#include "swzjit/jit.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz::detail::load_nvrtc;
using swz::detail::nvrtc_candidates;
using swz::detail::nvrtc_file_version;
using swz::detail::NvrtcSettings;
using swz_cache_test::TempDir;

namespace {

void touch(const std::string& path, const std::string& content = "") {
  std::ofstream(path) << content;
}

}  // namespace

TEST_CASE("only libnvrtc.so.<numbers> files are NVRTC libraries, with their version") {
  CHECK(nvrtc_file_version("libnvrtc.so.13") == std::vector<int>{13});
  CHECK(nvrtc_file_version("libnvrtc.so.12.8.93") == std::vector<int>{12, 8, 93});
  CHECK(nvrtc_file_version("libnvrtc.so").empty());
  CHECK(nvrtc_file_version("libnvrtc.so.").empty());
  CHECK(nvrtc_file_version("libnvrtc-builtins.so.13.0").empty());
  CHECK(nvrtc_file_version("libnvrtc.alt.so.13").empty());
  CHECK(nvrtc_file_version("libnvrtc.so.13.bak").empty());
  CHECK(nvrtc_file_version("libnvrtc.so.13..1").empty());
}

TEST_CASE("NVRTC candidates: the newest version of every directory first, then the bare sonames") {
  TempDir old_dir;
  TempDir new_dir;
  touch(old_dir / "libnvrtc.so.12");
  touch(old_dir / "libnvrtc.so.12.8.93");
  touch(old_dir / "libnvrtc-builtins.so.12.8");
  touch(new_dir / "libnvrtc.so.13");
  touch(new_dir / "libnvrtc.so.13.0.48");
  touch(new_dir / "libnvrtc.alt.so.13");
  touch(new_dir / "libnvrtc.so");
  NvrtcSettings s;
  s.directories = {old_dir.path(), new_dir.path(), "/nonexistent/dir"};
  s.soname_majors = {13, 12};
  const auto c = nvrtc_candidates(s);
  const std::vector<std::string> want = {new_dir / "libnvrtc.so.13.0.48", new_dir / "libnvrtc.so.13",
                                         old_dir / "libnvrtc.so.12.8.93", old_dir / "libnvrtc.so.12",
                                         "libnvrtc.so.13", "libnvrtc.so.12"};
  CHECK(c == want);

  // An override is the only candidate: a user who names a file gets that file or an error.
  s.override_path = old_dir / "libnvrtc.so.12";
  CHECK(nvrtc_candidates(s) == std::vector<std::string>{old_dir / "libnvrtc.so.12"});
}

TEST_CASE("a failed NVRTC load names every file tried and what to install or set") {
  TempDir dir;
  touch(dir / "libnvrtc.so.99", "not an ELF file");
  NvrtcSettings s;
  s.directories = {dir.path()};
  std::string why;
  CHECK(load_nvrtc(s, &why) == nullptr);
  CHECK(why.find(dir / "libnvrtc.so.99") != std::string::npos);
  CHECK(why.find("SWZJIT_LIBNVRTC") != std::string::npos);

  NvrtcSettings named;
  named.override_path = "/nonexistent/libnvrtc.so.13";
  CHECK(load_nvrtc(named, &why) == nullptr);
  CHECK(why.find("SWZJIT_LIBNVRTC=/nonexistent/libnvrtc.so.13 could not be loaded") != std::string::npos);

  // A real library that is not NVRTC (no nvrtcVersion): skipped with the entry points it lacks.
  NvrtcSettings wrong;
  wrong.override_path = "libm.so.6";
  CHECK(load_nvrtc(wrong, &why) == nullptr);
  CHECK(why.find("lacks nvrtcVersion") != std::string::npos);
}

TEST_CASE("this machine's NVRTC loads from the default search, and is the one nvrtc_version() reports") {
  std::string why;
  const auto api = load_nvrtc(NvrtcSettings::from_environment(), &why);
  REQUIRE_MESSAGE(api != nullptr, why);
  CHECK(api->path.find("libnvrtc.so.") != std::string::npos);
  int major = 0, minor = 0;
  REQUIRE(api->nvrtcVersion(&major, &minor) == NVRTC_SUCCESS);
  CHECK(swz::nvrtc_available());
  CHECK(swz::nvrtc_version() == std::make_pair(major, minor));
  CHECK(swz::nvrtc_library_path().find("libnvrtc.so.") != std::string::npos);

  // The same file, named through the override, loads too.
  NvrtcSettings named;
  named.override_path = api->path;
  const auto again = load_nvrtc(named, &why);
  REQUIRE_MESSAGE(again != nullptr, why);
  CHECK(again->path == api->path);
}

TEST_CASE("after a compile NVRTC's builtins library stays mapped (no dynamic-TLS slot of an unmapped library)") {
  swz::CompileRequest req;
  req.source = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }";
  req.name_expression = "k";
  req.arch = "sm_80";
  const auto k = swz::compile(req);
  CHECK(!k.image.empty());
  const auto v = swz::nvrtc_version();
  const std::string name =
      "libnvrtc-builtins.so." + std::to_string(v.first) + "." + std::to_string(v.second);
  void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
  CHECK_MESSAGE(h != nullptr, name << " was unloaded after the compile");
  if (h != nullptr) ::dlclose(h);
}
