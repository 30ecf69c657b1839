// tests/runtime: helpers shared by the cache suites (cache_*_test.cpp): temporary directories,
// keys and entries with known bytes, a warning recorder, raw SQL on the database, forked children.
#pragma once

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "swzjit/cache.hpp"

namespace swz_cache_test {

/// A fresh directory from mkdtemp, removed (permissions restored first) on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/swz_cache_test_XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    ::chmod(path_.c_str(), 0700);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Collects warnings (thread-safe) so a test can count them.
struct WarningLog {
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> messages = std::make_shared<std::vector<std::string>>();
  std::function<void(const std::string&)> sink() const {
    auto m = mu;
    auto v = messages;
    return [m, v](const std::string& s) {
      std::lock_guard<std::mutex> lock(*m);
      v->push_back(s);
    };
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(*mu);
    return messages->size();
  }
  std::string all() const {
    std::lock_guard<std::mutex> lock(*mu);
    std::string out;
    for (const auto& s : *messages) out += s + "\n";
    return out;
  }
};

inline swz::CacheSettings settings_for(const std::string& dir, const WarningLog& log,
                                       std::uint64_t max_bytes = 0) {
  swz::CacheSettings s;
  s.directory = dir;
  s.max_bytes = max_bytes;
  s.warn = log.sink();
  return s;
}

inline swz::KernelKey make_key(int i, const std::string& arch = "sm_90") {
  swz::KernelKey k;
  k.templates_hash = "0123456789abcdef0123456789abcdef";
  k.name_expression = "swz::transpose_kernel<float, 32, 8, " + std::to_string(i) + ">";
  k.nvrtc_version = "12.4";
  k.options = {"--std=c++17", "-default-device", "--gpu-architecture=" + arch};
  k.arch = arch;
  return k;
}

/// An entry whose bytes (NULs and every byte value included) depend only on `i` and `size`.
inline swz::KernelEntry make_entry(int i, std::size_t size = 4096) {
  swz::KernelEntry e;
  e.image.resize(size);
  std::uint32_t x = 2654435761u * static_cast<std::uint32_t>(i + 1);
  for (std::size_t b = 0; b < size; ++b) {
    x = x * 1664525u + 1013904223u;
    e.image[b] = static_cast<char>(x >> 24);
  }
  e.lowered_name = "_ZN3swz16transpose_kernelILi" + std::to_string(i) + "EEEvPKfPf";
  e.threads = 256;
  e.dynamic_smem = 4 * i;
  e.registers = 32 + i % 7;
  e.spill_bytes = i % 3;
  return e;
}

/// Runs SQL on a database file through its own connection (as another process would).
inline void sql_exec(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open(db.c_str(), &h) != SQLITE_OK) {
    sqlite3_close(h);
    throw std::runtime_error("cannot open " + db);
  }
  sqlite3_busy_timeout(h, 5000);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(h);
  if (rc != SQLITE_OK) throw std::runtime_error("sql failed: " + msg + " in: " + sql);
}

inline long long sql_int(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  long long v = -1;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

/// Flips bit 0 of byte `offset` of a kernel row's image, through SQLite (as a bad disk block would).
inline void flip_image_bit(const std::string& db, const std::string& key, std::size_t offset) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  std::string image;
  sqlite3_prepare_v2(h, "SELECT image FROM kernels WHERE key = ?", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) == SQLITE_ROW)
    image.assign(static_cast<const char*>(sqlite3_column_blob(st, 0)), sqlite3_column_bytes(st, 0));
  sqlite3_finalize(st);
  if (image.size() <= offset) {
    sqlite3_close(h);
    throw std::runtime_error("no image to flip for key " + key);
  }
  image[offset] = static_cast<char>(image[offset] ^ 1);
  sqlite3_prepare_v2(h, "UPDATE kernels SET image = ? WHERE key = ?", -1, &st, nullptr);
  sqlite3_bind_blob(st, 1, image.data(), static_cast<int>(image.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, key.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  sqlite3_close(h);
  if (rc != SQLITE_DONE) throw std::runtime_error("flip failed");
}

/// The database path a cache in `dir` uses (opens one briefly to ask).
inline std::string database_path(const std::string& dir) {
  WarningLog log;
  swz::Cache c(settings_for(dir, log));
  return c.stats().database;
}

/// Runs `body` in a forked child; returns its exit code (or 128 + signal). The child never
/// returns into the test framework.
inline int run_in_child(const std::function<int()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
      rc = 98;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  return names;
}

inline bool any_file_contains(const std::string& dir, const std::string& part) {
  for (const auto& n : files_in(dir))
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace swz_cache_test
