// tests/fuzz: the cache's loaders (runtime/cache*.cpp) on arbitrary files: the input is imported
// into a fresh cache (Cache::import_from, which reads every row) and opened as a cache database
// (open, stats, listing, verify, lookups, gc, export). Refusals are fine; a signal, a sanitizer
// report, a hang (libFuzzer -timeout) or an exception other than swz::Error is a bug.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"

namespace fs = std::filesystem;

namespace {

std::string g_root;  // a private mkdtemp directory, removed at exit

void remove_root() {
  std::error_code ec;
  fs::remove_all(g_root, ec);
}

void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::fprintf(stderr, "fuzz_cache_import: cannot write %s\n", path.c_str());
    std::abort();
  }
}

swz::CacheSettings settings(const std::string& dir) {
  swz::CacheSettings s;
  s.directory = dir;
  s.busy_timeout_ms = 100;
  s.warn = [](const std::string&) {};
  return s;
}

swz::KernelKey some_key() {
  swz::KernelKey k;
  k.templates_hash = "0123456789abcdef0123456789abcdef";
  k.name_expression = "swz::tpl::transpose_kernel<float, 32, 32>";
  k.nvrtc_version = "13.0";
  k.options = {"--std=c++17"};
  k.arch = "sm_90";
  return k;
}

void import_into_fresh_cache(const std::uint8_t* data, std::size_t size) {
  const std::string file = g_root + "/import.db";
  write_file(file, data, size);
  fs::create_directory(g_root + "/into");
  swz::Cache cache(settings(g_root + "/into"));
  try {
    (void)cache.import_from(file);
  } catch (const swz::Error&) {
    return;
  }
  (void)cache.list_kernels();
  (void)cache.list_tuning();
  (void)cache.verify();
}

void open_as_cache(const std::uint8_t* data, std::size_t size) {
  const std::string dir = g_root + "/open";
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0700);
  write_file(dir + "/swzjit-v" + std::to_string(swz::kCacheFormatVersion) + ".db", data, size);
  swz::Cache cache(settings(dir));
  try {
    (void)cache.stats();
    (void)cache.list_kernels();
    (void)cache.list_tuning();
    (void)cache.load(some_key());
    (void)cache.explain(some_key());
    (void)cache.verify();
    (void)cache.gc(1 << 16);
    cache.export_to(g_root + "/export.db");
  } catch (const swz::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/swz_fuzz_cache_XXXXXX";
  if (!::mkdtemp(&tmpl[0])) {
    std::perror("fuzz_cache_import: mkdtemp");
    std::abort();
  }
  g_root = tmpl;
  std::atexit(remove_root);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return -1;
  import_into_fresh_cache(data, size);
  open_as_cache(data, size);
  // Each input starts from nothing: no database, WAL, moved-aside copy or export of the last one.
  for (const auto& entry : fs::directory_iterator(g_root)) fs::remove_all(entry.path());
  return 0;
}
