// tests/tools: what a user of an installed swz sees of versions, logging and NVRTC (tools/swz.cpp,
// tools/cmd_info.cpp): --version, SWZJIT_LOG_LEVEL/_FILE, SWZJIT_DUMP_SOURCE, a machine without NVRTC.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli_support.hpp"
#include "swzjit/version.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::files_in;
using swz_cache_test::TempDir;
using swz_test::run_swz;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char kCompile[] = "compile transpose --config f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5 --arch sm_80";
// Goes through the kernel cache (swz compile does not): no GPU needed.
const char kCachedCompile[] =
    "autotune transpose --rows 256 --cols 256 --compile-only --arch sm_80 --max-candidates 1 --quiet";

}  // namespace

TEST_CASE("swz --version and swz info name the library's version") {
  const auto v = run_swz("--version");
  CHECK(v.code == 0);
  CHECK(v.out == std::string("swz ") + SWZJIT_VERSION_STRING + " (libswzjit " + SWZJIT_VERSION_STRING + ")\n");
  TempDir dir;
  const auto info = run_swz("info", "SWZJIT_CACHE_DIR=" + dir.path());
  CHECK(info.code == 0);
  CHECK(info.out.find(std::string("libswzjit: ") + SWZJIT_VERSION_STRING + " (") == 0);
  CHECK(info.out.find("worker: /") != std::string::npos);  // the build tree's: found, with its path
  const auto json = run_swz("info --json", "SWZJIT_CACHE_DIR=" + dir.path());
  CHECK(json.out.find(std::string("\"version\": \"") + SWZJIT_VERSION_STRING + "\"") != std::string::npos);
  CHECK(json.out.find("\"worker\": {\"found\": true, \"path\": \"/") != std::string::npos);
}

TEST_CASE("SWZJIT_WORKER pointing nowhere: swz info says the worker is not found and why") {
  TempDir dir;
  const auto info = run_swz("info", "SWZJIT_CACHE_DIR=" + dir.path() + " SWZJIT_WORKER=/nonexistent/swz-worker");
  CHECK(info.code == 0);
  CHECK(info.out.find("worker: not found (SWZJIT_WORKER=/nonexistent/swz-worker is not an executable file") !=
        std::string::npos);
}

TEST_CASE("at debug level every compile and cache decision is logged to SWZJIT_LOG_FILE") {
  TempDir dir;
  const std::string log = dir / "swz.log";
  const std::string env = "SWZJIT_CACHE_DIR=" + (dir / "cache") + " SWZJIT_LOG_LEVEL=debug SWZJIT_LOG_FILE=" + log;
  const auto first = run_swz(kCachedCompile, env);
  REQUIRE_MESSAGE(first.code == 0, first.err);
  const std::string after_first = read_file(log);
  CHECK(after_first.find("swzjit: debug: compiled swz::tpl::transpose_kernel<") != std::string::npos);
  CHECK(after_first.find("options: --gpu-architecture=sm_80") != std::string::npos);
  CHECK(after_first.find(" ms -> cubin") != std::string::npos);
  CHECK(after_first.find("kernel cache miss, compiled: key ") != std::string::npos);
  CHECK(first.err.find("swzjit: debug:") == std::string::npos);  // the file, not stderr

  const auto second = run_swz(kCachedCompile, env);
  REQUIRE(second.code == 0);
  const std::string after_second = read_file(log);
  CHECK(after_second.size() > after_first.size());  // appended
  CHECK(after_second.find("kernel cache hit: key ", after_first.size()) != std::string::npos);
  CHECK(after_second.find("compiled swz::tpl", after_first.size()) == std::string::npos);  // all cached

  // The default level (warn) writes none of it.
  const auto quiet = run_swz(kCompile, "SWZJIT_CACHE_DIR=" + (dir / "cache") + " SWZJIT_LOG_FILE=" + (dir / "q.log"));
  CHECK(quiet.code == 0);
  CHECK(read_file(dir / "q.log").empty());
}

TEST_CASE("SWZJIT_DUMP_SOURCE writes each generated source, headed by its name expression and options") {
  TempDir dir;
  const auto r = run_swz(kCompile, "SWZJIT_CACHE_DIR=" + (dir / "cache") + " SWZJIT_DUMP_SOURCE=" + (dir / "src"));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto names = files_in(dir / "src");
  REQUIRE(names.size() == 1);
  CHECK(names[0].size() > 3);
  CHECK(names[0].substr(names[0].size() - 3) == ".cu");
  const std::string text = read_file(dir / "src" + "/" + names[0]);
  CHECK(text.find("// swz::tpl::transpose") == 0);
  CHECK(text.find("// nvrtc --gpu-architecture=sm_80") != std::string::npos);
  CHECK(text.find("#include") != std::string::npos);
}

TEST_CASE("without NVRTC, swz info still works and a compile fails saying what to install or set") {
  TempDir dir;
  const std::string env = "SWZJIT_CACHE_DIR=" + dir.path() + " SWZJIT_LIBNVRTC=/nonexistent/libnvrtc.so.13";
  const auto info = run_swz("info", env);
  CHECK(info.code == 0);
  CHECK(info.out.find("nvrtc: not available (") != std::string::npos);
  CHECK(info.out.find("/nonexistent/libnvrtc.so.13") != std::string::npos);
  const auto json = run_swz("info --json", env);
  CHECK(json.out.find("\"nvrtc\": {\"available\": false, \"reason\": ") != std::string::npos);

  // Generating and analysing need no NVRTC; compiling does, and says so.
  const auto gen = run_swz("gen transpose --config f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5", env);
  CHECK(gen.code == 0);
  const auto compile = run_swz(kCompile, env);
  CHECK(compile.code == 1);
  CHECK(compile.err.find("NVRTC is needed to compile") != std::string::npos);
  CHECK(compile.err.find("SWZJIT_LIBNVRTC=/nonexistent/libnvrtc.so.13 could not be loaded") != std::string::npos);
}
