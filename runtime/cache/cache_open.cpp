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

#include "runtime/cache/cache_internal.hpp"
#include "swzjit/log.hpp"

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
  log(LogLevel::Warn, message);
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
  if (!aside.empty()) {
    repaired = "the cache database " + db_path + " " + why + "; moved it aside to " + aside + " and started a new one";
    warn_once("damaged", repaired);
  }
  open();
}

namespace {

/// Why the process cannot write `path` ("" when it can): read-only media, or permissions.
std::string not_writable(const std::string& path) {
  if (::access(path.c_str(), W_OK) == 0) return "";
  if (errno == ENOENT) return "";
  return errno_text();
}

/// SQLite's URI for `path` with `immutable=1`: opens a WAL database on read-only media, where the
/// -shm file can be neither created nor used. The path is percent-encoded where URIs need it.
std::string immutable_uri(const std::string& path) {
  std::string out = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "?immutable=1";
}

}  // namespace

std::unique_ptr<detail::Db> Cache::Impl::open_connection(bool read_only_open) {
  auto db = std::make_unique<detail::Db>(
      db_path, read_only_open ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE),
      settings.statement_limit_ms);
  sqlite3_busy_timeout(db->get(), settings.busy_timeout_ms);
  if (!read_only_open) return db;
  try {
    db->query_int("SELECT count(*) FROM sqlite_master");
    return db;
  } catch (const detail::SqliteError& e) {
    if (e.is_corruption() || e.is_interrupt()) throw;
  }
  // A WAL database in a directory we may not write: SQLite cannot set up its -shm file.
  db = std::make_unique<detail::Db>(immutable_uri(db_path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                                    settings.statement_limit_ms);
  sqlite3_busy_timeout(db->get(), settings.busy_timeout_ms);
  return db;
}

void Cache::Impl::open() {
  owner_pid = getpid();
  db.reset();
  read_only = settings.read_only;
  if (settings.directory.empty()) {  // asked for: memory only, so no warning
    mode = "memory";
    degraded_reason = "no cache directory was given (memory only)";
    return;
  }
  std::string why;
  Verdict v = prepare_directory(settings.directory, !read_only, why);
  db_path = settings.directory + "/swzjit-v" + std::to_string(kCacheFormatVersion) + ".db";
  // A directory or database this process may only read (read-only mount, permissions): use what
  // is stored, keep new entries in memory, and say so once.
  std::string read_only_reason;
  if (v == Verdict::Ok && !read_only) {
    if (const std::string e = not_writable(settings.directory); !e.empty())
      read_only_reason = "the cache directory " + settings.directory + " is not writable (" + e + ")";
    else if (const std::string f = not_writable(db_path); !f.empty())
      read_only_reason = "the cache database " + db_path + " is not writable (" + f + ")";
    if (!read_only_reason.empty()) read_only = true;
  }
  if (v == Verdict::Ok) v = prepare_database_file(db_path, !read_only, why);
  if (v != Verdict::Ok) {
    degrade(v == Verdict::Insecure ? "insecure" : "unusable",
            read_only_reason.empty() ? why : read_only_reason + " and " + why);
    return;
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    dev_t dev = 0;
    ino_t ino = 0;
    const std::string damage = inspect_header(db_path, dev, ino);
    std::string problem;
    if (damage.empty()) {
      try {
        db = open_connection(read_only);
        db_dev = dev;
        db_ino = ino;
        if (!read_only) {
          try {
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
          } catch (const detail::SqliteError& e) {
            const int p = e.primary();
            if (p != SQLITE_READONLY && p != SQLITE_CANTOPEN && p != SQLITE_PERM) throw;
            // The file system refused what access() allowed (e.g. a read-only mount seen late).
            read_only = true;
            read_only_reason = "the cache database " + db_path + " refused writes (" + e.what() + ")";
            db = open_connection(true);
          }
        }
        if (db->query_int("SELECT count(*) FROM sqlite_master WHERE name = 'meta'") == 0) {
          if (read_only) throw WrongFormat("has no cache tables");
          detail::Transaction t(*db);
          // NOTE: re-checked under the write lock: another process may have created the schema since
          // the check above (processes racing to create a new cache), which is no damage.
          if (db->query_int("SELECT count(*) FROM sqlite_master WHERE name = 'meta'") == 0) {
            if (db->query_int("SELECT count(*) FROM sqlite_master") != 0)
              throw WrongFormat("is not a swzjit cache (it has tables but no meta table)");
            detail::create_schema(*db);
          }
          t.commit();
        }
        // NOTE: the schema is checked before anything else is read: a "table" that is really a
        // recursive view would make the first query of it run forever.
        if (const std::string bad = detail::schema_problem(*db, true); !bad.empty())
          throw WrongFormat("has a damaged schema (" + bad + ")");
        const std::string version = db->query_text("SELECT value FROM meta WHERE name = 'format_version'");
        if (version != std::to_string(kCacheFormatVersion))
          throw WrongFormat("has cache format version '" + version + "', this library writes version " +
                            std::to_string(kCacheFormatVersion));
        if (const std::string bad = detail::schema_problem(*db); !bad.empty())
          throw WrongFormat("has a damaged schema (" + bad + ")");
        mode = read_only ? "read-only" : "disk";
        degraded_reason.clear();
        if (!read_only_reason.empty()) {
          degraded_reason = read_only_reason;
          warn_once("read-only", read_only_reason +
                                     "; using it read-only: stored kernels are used, new ones are "
                                     "kept in memory for this process");
        }
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
    if (read_only) {
      degrade("unusable", "the read-only cache database " + db_path + " " + problem);
      return;
    }
    const std::string aside = move_aside(db_path, dev, ino);
    if (!aside.empty()) {
      repaired =
          "the cache database " + db_path + " " + problem + "; moved it aside to " + aside + " and started a new one";
      warn_once("damaged", repaired);
    }
    if (prepare_database_file(db_path, true, why) != Verdict::Ok) {
      degrade("unusable", why);
      return;
    }
  }
  degrade("unusable", "the cache database " + db_path + " could not be rebuilt");
}

}  // namespace swz
