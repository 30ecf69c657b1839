// runtime: the RAII SQLite layer of the cache (see cache_sqlite.hpp).
#include "runtime/cache/cache_sqlite.hpp"

#include <sqlite3.h>

#include <cmath>
#include <limits>

namespace swz {
namespace detail {

namespace {

[[noreturn]] void fail(sqlite3* db, int rc, const std::string& what) {
  const int code = db ? sqlite3_extended_errcode(db) : rc;
  std::string msg = what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  throw SqliteError(code != 0 ? code : rc, msg);
}

}  // namespace

SqliteError::SqliteError(int c, const std::string& message) : std::runtime_error(message), code(c) {}

bool SqliteError::is_corruption() const { return primary() == SQLITE_CORRUPT || primary() == SQLITE_NOTADB; }

bool SqliteError::is_interrupt() const { return primary() == SQLITE_INTERRUPT; }

bool SqliteError::is_write_refusal() const {
  switch (primary()) {
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

Db::Db(const std::string& path, int flags, int statement_limit_ms) : limit_ms_(statement_limit_ms) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const int code = db_ ? sqlite3_extended_errcode(db_) : rc;
    const std::string msg = "cannot open " + path + ": " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(code, msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  // NOTE: the handler runs every few thousand VM steps, so checking the clock there costs nothing.
  if (limit_ms_ > 0) sqlite3_progress_handler(db_, 10000, &Db::on_progress, this);
  arm();
}

void Db::arm() { deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms_); }

int Db::on_progress(void* self) {
  const Db* d = static_cast<const Db*>(self);
  return std::chrono::steady_clock::now() > d->deadline_ ? 1 : 0;
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

void Db::exec(const std::string& sql) {
  arm();
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError(sqlite3_extended_errcode(db_), "'" + sql.substr(0, 60) + "': " + msg);
  }
}

std::string Db::query_text(const std::string& sql) {
  Stmt s(*this, sql.c_str());
  return s.step() ? s.text(0) : std::string();
}

int Db::changes() const { return sqlite3_changes(db_); }

std::int64_t Db::query_int(const std::string& sql) {
  Stmt s(*this, sql.c_str());
  return s.step() ? s.integer(0) : 0;
}

Stmt::Stmt(Db& db, const char* sql) : db_(db.get()) {
  db.arm();
  const int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, std::string("prepare '") + sql + "'");
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind_text(int i, const std::string& v) {
  const int rc = sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind_blob(int i, const std::string& v) {
  // NOTE: a zero-length blob must still be a blob, not NULL: pass a non-null pointer.
  const int rc = sqlite3_bind_blob64(stmt_, i, v.empty() ? "" : v.data(), v.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind_int(int i, std::int64_t v) {
  const int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind_real(int i, double v) {
  const int rc = std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  if ((rc & 0xff) == SQLITE_INTERRUPT)
    throw SqliteError(SQLITE_INTERRUPT,
                      "a statement ran past its time limit and was stopped (is the database "
                      "hostile or damaged?)");
  fail(db_, rc, "step");
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  const int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

std::string Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  const int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

int Stmt::type(int col) const { return sqlite3_column_type(stmt_, col); }

int Stmt::columns() const { return sqlite3_column_count(stmt_); }

std::int64_t Stmt::integer(int col) const { return sqlite3_column_int64(stmt_, col); }

double Stmt::real(int col) const {
  if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, col);
}

Transaction::Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace detail
}  // namespace swz
