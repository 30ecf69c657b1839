// runtime: opening the cache database (Cache::Impl): the location and its security checks, WAL and
// schema setup, the format version, moving a damaged database aside, and degrading to memory.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "runtime/cache_internal.hpp"

namespace swz {

namespace {

/// A database that opened fine but is not (this version of) a swzjit cache.
struct WrongFormat : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string errno_text() { return std::strerror(errno); }

std::string octal_mode(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

bool make_directories(const std::string& dir, std::string& why) {
  for (std::size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      why = "cannot create the cache directory " + dir + " (mkdir " + part + ": " + errno_text() + ")";
      return false;
    }
  }
  return true;
}

/// The owner and mode rules shared by the directory and the database file.
bool secure(const struct stat& st, const std::string& what, const std::string& path, std::string& why) {
  if (st.st_uid != geteuid()) {
    why = "the cache " + what + " " + path + " is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
          std::to_string(geteuid()) + "); a cached cubin is code that will run, so the cache is off";
    return false;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    why = "the cache " + what + " " + path + " is group- or world-writable (mode " + octal_mode(st.st_mode) +
          "); a cached cubin is code that will run, so the cache is off (fix: chmod go-w " + path + ")";
    return false;
  }
  return true;
}

enum class Verdict { Ok, Unusable, Insecure };

Verdict prepare_directory(const std::string& dir, bool create, std::string& why) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT || !create) {
      why = "cannot use the cache directory " + dir + ": " + errno_text();
      return Verdict::Unusable;
    }
    if (!make_directories(dir, why)) return Verdict::Unusable;
    if (stat(dir.c_str(), &st) != 0) {
      why = "cannot use the cache directory " + dir + ": " + errno_text();
      return Verdict::Unusable;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    why = "the cache directory " + dir + " is not a directory";
    return Verdict::Unusable;
  }
  return secure(st, "directory", dir, why) ? Verdict::Ok : Verdict::Insecure;
}

Verdict prepare_database_file(const std::string& path, bool create, std::string& why) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT || !create) {
      why = "cannot use the cache database " + path + ": " + errno_text();
      return Verdict::Unusable;
    }
    // NOTE: created here with 0600 so SQLite (which would use 0644) and its -wal/-shm follow it.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      why = "cannot create the cache database " + path + ": " + errno_text();
      return Verdict::Unusable;
    }
    if (fd >= 0) ::close(fd);
    if (lstat(path.c_str(), &st) != 0) {
      why = "cannot use the cache database " + path + ": " + errno_text();
      return Verdict::Unusable;
    }
  }
  if (S_ISLNK(st.st_mode)) {
    why = "the cache database " + path + " is a symbolic link; a cached cubin is code that will run, so the cache is off";
    return Verdict::Insecure;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "the cache database " + path + " is not a regular file";
    return Verdict::Unusable;
  }
  return secure(st, "database", path, why) ? Verdict::Ok : Verdict::Insecure;
}

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

/// Cheap checks SQLite would only trip over later (a truncated file reads as zero pages):
/// returns what is wrong with the file, or "" if it looks sound (or is new and empty).
std::string inspect_header(const std::string& path, dev_t& dev, ino_t& ino) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  unsigned char h[100];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0) n = ::pread(fd, h, sizeof h, 0);
  ::close(fd);
  dev = st.st_dev;
  ino = st.st_ino;
  if (n < 0 || st.st_size == 0) return "";
  if (n < static_cast<ssize_t>(sizeof h))
    return "is truncated (" + std::to_string(st.st_size) + " bytes, less than an SQLite header)";
  if (std::memcmp(h, "SQLite format 3", 16) != 0) return "is not an SQLite database";
  std::uint64_t page_size = (std::uint32_t{h[16]} << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) return "has a damaged header";
  const std::uint64_t pages = be32(h + 28);
  struct stat wal;
  const bool wal_empty = stat((path + "-wal").c_str(), &wal) != 0 || wal.st_size == 0;
  // The in-header page count is trustworthy only when the change counter matches version-valid-for,
  // and the file may legitimately lag it while a WAL holds pages not yet checkpointed.
  if (wal_empty && pages > 0 && be32(h + 24) == be32(h + 92) &&
      static_cast<std::uint64_t>(st.st_size) < pages * page_size)
    return "is truncated (" + std::to_string(st.st_size) + " of " + std::to_string(pages * page_size) + " bytes)";
  return "";
}

std::string timestamp_suffix() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return std::string(buf) + "-" + std::to_string(getpid());
}

std::mutex& stderr_warning_mutex() {
  static std::mutex m;
  return m;
}

std::set<std::string>& stderr_warnings_given() {
  static std::set<std::string> given;
  return given;
}

}  // namespace

Cache::Impl::Impl(CacheSettings s) : settings(std::move(s)) {}

void Cache::Impl::warn_once(const std::string& kind, const std::string& message) {
  if (!warned.insert(kind).second) return;
  if (settings.warn) {
    settings.warn(message);
    return;
  }
  // NOTE: many Cache objects over one directory still warn once per process.
  std::lock_guard<std::mutex> lock(stderr_warning_mutex());
  if (!stderr_warnings_given().insert(kind + "|" + settings.directory).second) return;
  std::fprintf(stderr, "swzjit: warning: %s\n", message.c_str());
}

void Cache::Impl::degrade(const std::string& kind, const std::string& reason) {
  if (db) db.reset();
  mode = "memory";
  degraded_reason = reason;
  warn_once(kind, reason + "; running uncached (in memory)");
}

void Cache::Impl::ensure_process() {
  if (getpid() == owner_pid) return;
  // NOTE: a connection inherited over fork() must be neither used nor closed by the child.
  if (db) db->leak();
  db.reset();
  pending_touches.clear();
  open();
}

namespace {

/// Renames `path` (and its -wal) aside if it is still the file (dev, ino); returns the new name,
/// or "" if the file was already replaced (by another process) or could not be moved.
std::string move_aside(const std::string& path, dev_t dev, ino_t ino) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || st.st_dev != dev || st.st_ino != ino) return "";
  const std::string aside = path + ".bad-" + timestamp_suffix();
  if (std::rename(path.c_str(), aside.c_str()) != 0) return "";
  std::rename((path + "-wal").c_str(), (aside + "-wal").c_str());
  ::unlink((path + "-shm").c_str());
  return aside;
}

}  // namespace

void Cache::Impl::quarantine_and_reopen(const std::string& why) {
  db.reset();
  const std::string aside = move_aside(db_path, db_dev, db_ino);
  if (!aside.empty())
    warn_once("damaged", "the cache database " + db_path + " " + why + "; moved it aside to " + aside +
                             " and started a new one");
  open();
}

void Cache::Impl::open() {
  owner_pid = getpid();
  db.reset();
  if (settings.directory.empty()) {  // asked for: memory only, so no warning
    mode = "memory";
    degraded_reason = "no cache directory was given (memory only)";
    return;
  }
  const bool create = !settings.read_only;
  std::string why;
  Verdict v = prepare_directory(settings.directory, create, why);
  db_path = settings.directory + "/swzjit-v" + std::to_string(kCacheFormatVersion) + ".db";
  if (v == Verdict::Ok) v = prepare_database_file(db_path, create, why);
  if (v != Verdict::Ok) {
    degrade(v == Verdict::Insecure ? "insecure" : "unusable", why);
    return;
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    dev_t dev = 0;
    ino_t ino = 0;
    const std::string damage = inspect_header(db_path, dev, ino);
    std::string problem;
    if (damage.empty()) {
      try {
        const int flags = settings.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        db = std::make_unique<detail::Db>(db_path, flags);
        sqlite3_busy_timeout(db->get(), settings.busy_timeout_ms);
        db_dev = dev;
        db_ino = ino;
        if (!settings.read_only) {
          db->exec("PRAGMA auto_vacuum = INCREMENTAL");  // takes effect only on a new, empty file
          // NOTE: switching to WAL needs a moment of exclusive access; other openers may hold it.
          for (int tries = 0;; ++tries) {
            try {
              db->query_text("PRAGMA journal_mode = WAL");
              break;
            } catch (const detail::SqliteError& e) {
              const int p = e.primary();
              if ((p != SQLITE_BUSY && p != SQLITE_LOCKED) || tries >= 200) throw;
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
          }
          db->exec("PRAGMA synchronous = NORMAL");
        }
        if (db->query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'") == 0) {
          if (settings.read_only) throw WrongFormat("has no cache tables");
          detail::Transaction t(*db);
          const bool has_meta =
              db->query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'") != 0;
          if (!has_meta && db->query_int("SELECT count(*) FROM sqlite_master") != 0)
            throw WrongFormat("is not a swzjit cache (it has tables but no meta table)");
          detail::create_schema(*db);
          t.commit();
        }
        const std::string version = db->query_text("SELECT value FROM meta WHERE name = 'format_version'");
        if (version != std::to_string(kCacheFormatVersion))
          throw WrongFormat("has cache format version '" + version + "', this library writes version " +
                            std::to_string(kCacheFormatVersion));
        mode = settings.read_only ? "read-only" : "disk";
        degraded_reason.clear();
        return;
      } catch (const WrongFormat& e) {
        problem = e.what();
      } catch (const detail::SqliteError& e) {
        if (!e.is_corruption()) {
          degrade("unusable", std::string("cannot use the cache database ") + db_path + ": " + e.what());
          return;
        }
        ++corrupt;
        problem = std::string("is damaged (") + e.what() + ")";
      }
    } else {
      ++corrupt;
      problem = damage;
    }
    db.reset();
    if (settings.read_only) {
      degrade("unusable", "the read-only cache database " + db_path + " " + problem);
      return;
    }
    const std::string aside = move_aside(db_path, dev, ino);
    if (!aside.empty())
      warn_once("damaged", "the cache database " + db_path + " " + problem + "; moved it aside to " + aside +
                               " and started a new one");
    if (prepare_database_file(db_path, true, why) != Verdict::Ok) {
      degrade("unusable", why);
      return;
    }
  }
  degrade("unusable", "the cache database " + db_path + " could not be rebuilt");
}

}  // namespace swz
