// runtime: a thin RAII layer over SQLite for the cache (runtime/cache*.cpp); internal, not public API.
// Every failing call throws SqliteError carrying SQLite's extended result code, which the cache sorts.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace swz {
namespace detail {

/// A failed SQLite call; `code` is the extended result code (primary code = code & 0xff).
struct SqliteError : std::runtime_error {
  SqliteError(int code, const std::string& message);
  int code;
  int primary() const { return code & 0xff; }
  /// The file is not a database or a page is damaged: move it aside and start again.
  bool is_corruption() const;
  /// The disk refused a write (read-only, full, I/O error, locked for too long, ...).
  bool is_write_refusal() const;
  /// A statement ran past the connection's time limit (Db::set_statement_limit_ms) and was stopped.
  bool is_interrupt() const;
};

/// One connection. Closed on destruction unless leak()ed (a connection inherited over fork()
/// must never be used or closed by the child: closing could disturb the parent's WAL).
class Db {
 public:
  /// flags: SQLITE_OPEN_* (NOMUTEX is added: the cache serializes access itself).
  /// `statement_limit_ms` bounds every statement's running time (0 = unbounded; see arm()).
  Db(const std::string& path, int flags, int statement_limit_ms = kDefaultStatementLimitMs);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  /// Runs one or more statements that return no rows of interest.
  void exec(const std::string& sql);
  /// The first column of the first row of `sql` as text ("" when there is no row).
  std::string query_text(const std::string& sql);
  std::int64_t query_int(const std::string& sql);
  /// Rows changed by the last INSERT/UPDATE/DELETE.
  int changes() const;
  void leak() { db_ = nullptr; }
  /// Starts a statement's time budget; Stmt's constructor and exec() call it. A progress handler
  /// interrupts (SQLITE_INTERRUPT) whatever runs past it: a hostile or damaged database (a recursive
  /// view, a cyclic page chain) must end in an error, never in an endless loop.
  void arm();
  int statement_limit_ms() const { return limit_ms_; }

  static constexpr int kDefaultStatementLimitMs = 120000;

 private:
  static int on_progress(void* self);
  sqlite3* db_ = nullptr;
  int limit_ms_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
};

/// A prepared statement; bind() with 1-based indexes, step() until it returns false.
class Stmt {
 public:
  Stmt(Db& db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind_text(int i, const std::string& v);
  Stmt& bind_blob(int i, const std::string& v);
  Stmt& bind_int(int i, std::int64_t v);
  /// NaN is stored as NULL by SQLite; real() reads NULL back as NaN.
  Stmt& bind_real(int i, double v);
  /// True while a row is available.
  bool step();
  /// Runs a statement that returns no rows.
  void run();
  void reset();

  std::string text(int col) const;
  std::string blob(int col) const;
  std::int64_t integer(int col) const;
  double real(int col) const;
  /// SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
  int type(int col) const;
  int columns() const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// BEGIN IMMEDIATE (the write lock up front, so a busy writer waits instead of deadlocking);
/// rolled back on destruction unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Db& db_;
  bool open_ = true;
};

}  // namespace detail
}  // namespace swz
