// runtime: the cache's database schema and row codecs (used by cache.cpp, cache_tuning.cpp and
// cache_admin.cpp); every row carries what is needed to re-derive its key and verify its value.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cache/cache_internal.hpp"

namespace swz {
namespace detail {

const char* const kKernelColumns =
    "key, format_version, templates_hash, name_expression, nvrtc_version, options, arch, image, is_ptx, "
    "lowered_name, threads, dynamic_smem, registers, spill_bytes, bytes, checksum, created_us, last_use_us";

const char* const kProblemColumns =
    "key, operation, problem, device_name, arch, sm_count, nvrtc_version, templates_hash, updated_us";

void create_schema(Db& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS kernels("
      "  key TEXT PRIMARY KEY,"           // KernelKey::hash() of the fields below
      "  format_version INTEGER NOT NULL, templates_hash TEXT NOT NULL, name_expression TEXT NOT NULL,"
      "  nvrtc_version TEXT NOT NULL, options BLOB NOT NULL, arch TEXT NOT NULL,"
      "  image BLOB NOT NULL, is_ptx INTEGER NOT NULL, lowered_name TEXT NOT NULL,"
      "  threads INTEGER NOT NULL, dynamic_smem INTEGER NOT NULL, registers INTEGER NOT NULL,"
      "  spill_bytes INTEGER NOT NULL,"
      "  bytes INTEGER NOT NULL,"          // length(image) + length(lowered_name): what the size limit counts
      "  checksum TEXT NOT NULL,"          // kernel_checksum(key, value)
      "  created_us INTEGER NOT NULL, last_use_us INTEGER NOT NULL);"
      "CREATE INDEX IF NOT EXISTS kernels_by_last_use ON kernels(last_use_us);"
      "CREATE INDEX IF NOT EXISTS kernels_by_name ON kernels(name_expression);"
      "CREATE TABLE IF NOT EXISTS tuning_problems("
      "  key TEXT PRIMARY KEY,"            // TuningProblemKey::hash() of the fields below
      "  operation TEXT NOT NULL, problem TEXT NOT NULL, device_name TEXT NOT NULL, arch TEXT NOT NULL,"
      "  sm_count INTEGER NOT NULL, nvrtc_version TEXT NOT NULL, templates_hash TEXT NOT NULL,"
      "  updated_us INTEGER NOT NULL);"
      "CREATE INDEX IF NOT EXISTS problems_by_problem ON tuning_problems(operation, problem);"
      "CREATE TABLE IF NOT EXISTS tuning_candidates("
      "  problem_key TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL,"
      "  median_ms REAL, p20_ms REAL, p80_ms REAL, repetitions INTEGER NOT NULL,"
      "  checksum TEXT NOT NULL, updated_us INTEGER NOT NULL,"
      "  PRIMARY KEY(problem_key, config));"
      "CREATE TABLE IF NOT EXISTS tuning_winners("
      "  problem_key TEXT NOT NULL, space_hash TEXT NOT NULL, config TEXT NOT NULL, median_ms REAL,"
      "  checksum TEXT NOT NULL, updated_us INTEGER NOT NULL,"
      "  PRIMARY KEY(problem_key, space_hash));");
  Stmt s(db, "INSERT OR IGNORE INTO meta(name, value) VALUES('format_version', ?), ('created_by', ?)");
  s.bind_text(1, std::to_string(kCacheFormatVersion)).bind_text(2, "libswzjit");
  s.run();
}

namespace {

std::vector<std::string> split_columns(const char* list) {
  std::vector<std::string> out;
  std::istringstream is(list);
  for (std::string c; std::getline(is, c, ',');) {
    const auto b = c.find_first_not_of(' ');
    out.push_back(b == std::string::npos ? std::string() : c.substr(b));
  }
  return out;
}

/// Every table of the schema with its columns in order: what create_schema() makes.
const std::map<std::string, std::vector<std::string>>& expected_tables() {
  static const std::map<std::string, std::vector<std::string>> tables = {
      {"meta", {"name", "value"}},
      {"kernels", split_columns(kKernelColumns)},
      {"tuning_problems", split_columns(kProblemColumns)},
      {"tuning_candidates", split_columns(kCandidateColumns)},
      {"tuning_winners", split_columns(kWinnerColumns)},
  };
  return tables;
}

std::string table_problem(Db& db, const std::string& name, const std::vector<std::string>& columns) {
  Stmt t(db, "SELECT type, coalesce(sql, '') FROM sqlite_master WHERE name = ? COLLATE NOCASE");
  t.bind_text(1, name);
  if (!t.step()) return "the " + name + " table is missing";
  const std::string type = t.text(0), sql = t.text(1);
  if (type != "table") return name + " is a " + type + ", not a table";
  if (sql.compare(0, 14, "CREATE VIRTUAL") == 0) return name + " is a virtual table";
  // NOTE: a pragma over a real table reads only the schema: it cannot loop.
  Stmt c(db, ("PRAGMA table_xinfo(\"" + name + "\")").c_str());
  std::vector<std::string> have;
  while (c.step()) have.push_back(c.text(1));
  if (have != columns)
    return "the " + name + " table has " + std::to_string(have.size()) + " columns, not the " +
           std::to_string(columns.size()) + " this library writes";
  return "";
}

}  // namespace

const char* const kCandidateColumns =
    "problem_key, config, status, reason, median_ms, p20_ms, p80_ms, repetitions, checksum, updated_us";
const char* const kWinnerColumns = "problem_key, space_hash, config, median_ms, checksum, updated_us";

std::string schema_problem(Db& db, bool meta_only) {
  const auto& tables = expected_tables();
  if (meta_only) return table_problem(db, "meta", tables.at("meta"));
  static const std::set<std::string> kIndexes = {"kernels_by_last_use", "kernels_by_name", "problems_by_problem"};
  Stmt s(db, "SELECT type, name FROM sqlite_master");
  while (s.step()) {
    const std::string type = s.text(0), name = s.text(1);
    const bool internal = name.compare(0, 7, "sqlite_") == 0;  // autoindexes, sqlite_stat1
    if (type == "table" && (tables.count(name) || internal)) continue;
    if (type == "index" && (kIndexes.count(name) || internal)) continue;
    return "it holds a " + type + " named '" + name + "' that this library never creates";
  }
  for (const auto& t : tables) {
    const std::string p = table_problem(db, t.first, t.second);
    if (!p.empty()) return p;
  }
  return "";
}

KernelRow read_kernel_row(const Stmt& s) {
  KernelRow r;
  r.key = s.text(0);
  r.fields.format_version = static_cast<int>(s.integer(1));
  r.fields.templates_hash = s.text(2);
  r.fields.name_expression = s.text(3);
  r.fields.nvrtc_version = s.text(4);
  r.fields.options = decode_list(s.blob(5));
  r.fields.arch = s.text(6);
  r.entry.image = s.blob(7);
  r.entry.is_ptx = s.integer(8) != 0;
  r.entry.lowered_name = s.text(9);
  r.entry.threads = static_cast<int>(s.integer(10));
  r.entry.dynamic_smem = static_cast<int>(s.integer(11));
  r.entry.registers = static_cast<int>(s.integer(12));
  r.entry.spill_bytes = static_cast<int>(s.integer(13));
  r.bytes = static_cast<std::uint64_t>(s.integer(14));
  r.checksum = s.text(15);
  r.created_us = s.integer(16);
  r.last_use_us = s.integer(17);
  return r;
}

bool kernel_row_valid(const KernelRow& row) {
  // NOTE: both halves matter: the key catches a row whose fields were swapped in from another
  // entry, the checksum (which includes the key) catches a damaged or swapped-in value.
  return row.fields.hash() == row.key && kernel_checksum(row.key, row.entry) == row.checksum;
}

bool put_kernel_row(Db& db, const KernelRow& row, bool replace) {
  const std::string sql = std::string(replace ? "INSERT OR REPLACE" : "INSERT OR IGNORE") + " INTO kernels(" +
                          kKernelColumns + ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  Stmt s(db, sql.c_str());
  s.bind_text(1, row.key)
      .bind_int(2, row.fields.format_version)
      .bind_text(3, row.fields.templates_hash)
      .bind_text(4, row.fields.name_expression)
      .bind_text(5, row.fields.nvrtc_version)
      .bind_blob(6, encode_list(row.fields.options))
      .bind_text(7, row.fields.arch)
      .bind_blob(8, row.entry.image)
      .bind_int(9, row.entry.is_ptx ? 1 : 0)
      .bind_text(10, row.entry.lowered_name)
      .bind_int(11, row.entry.threads)
      .bind_int(12, row.entry.dynamic_smem)
      .bind_int(13, row.entry.registers)
      .bind_int(14, row.entry.spill_bytes)
      .bind_int(15, static_cast<std::int64_t>(row.entry.image.size() + row.entry.lowered_name.size()))
      .bind_text(16, row.checksum)
      .bind_int(17, row.created_us)
      .bind_int(18, row.last_use_us);
  s.run();
  return db.changes() > 0;
}

ProblemRow read_problem_row(const Stmt& s) {
  ProblemRow r;
  r.key = s.text(0);
  r.fields.operation = s.text(1);
  r.fields.problem = s.text(2);
  r.fields.device_name = s.text(3);
  r.fields.arch = s.text(4);
  r.fields.sm_count = static_cast<int>(s.integer(5));
  r.fields.nvrtc_version = s.text(6);
  r.fields.templates_hash = s.text(7);
  r.updated_us = s.integer(8);
  return r;
}

void put_problem_row(Db& db, const ProblemRow& row) {
  const std::string sql = std::string("INSERT INTO tuning_problems(") + kProblemColumns +
                          ") VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET "
                          "updated_us = max(updated_us, excluded.updated_us)";
  Stmt s(db, sql.c_str());
  s.bind_text(1, row.key)
      .bind_text(2, row.fields.operation)
      .bind_text(3, row.fields.problem)
      .bind_text(4, row.fields.device_name)
      .bind_text(5, row.fields.arch)
      .bind_int(6, row.fields.sm_count)
      .bind_text(7, row.fields.nvrtc_version)
      .bind_text(8, row.fields.templates_hash)
      .bind_int(9, row.updated_us);
  s.run();
}

void put_candidate_row(Db& db, const std::string& problem_hash, const CandidateResult& r, std::int64_t updated_us,
                       bool only_if_newer) {
  const std::string sql = std::string(
                              "INSERT INTO tuning_candidates(problem_key, config, status, reason, median_ms, p20_ms, "
                              "p80_ms, repetitions, checksum, updated_us) VALUES(?,?,?,?,?,?,?,?,?,?) "
                              "ON CONFLICT(problem_key, config) DO UPDATE SET status = excluded.status, "
                              "reason = excluded.reason, median_ms = excluded.median_ms, p20_ms = excluded.p20_ms, "
                              "p80_ms = excluded.p80_ms, repetitions = excluded.repetitions, "
                              "checksum = excluded.checksum, updated_us = excluded.updated_us") +
                          (only_if_newer ? " WHERE excluded.updated_us > tuning_candidates.updated_us" : "");
  Stmt s(db, sql.c_str());
  s.bind_text(1, problem_hash)
      .bind_text(2, r.config)
      .bind_text(3, r.status)
      .bind_text(4, r.reason)
      .bind_real(5, r.median_ms)
      .bind_real(6, r.p20_ms)
      .bind_real(7, r.p80_ms)
      .bind_int(8, r.repetitions)
      .bind_text(9, candidate_checksum(problem_hash, r))
      .bind_int(10, updated_us);
  s.run();
}

void put_winner_row(Db& db, const std::string& problem_hash, const std::string& space_hash, const Winner& w,
                    std::int64_t updated_us, bool only_if_newer) {
  const std::string sql = std::string(
                              "INSERT INTO tuning_winners(problem_key, space_hash, config, median_ms, checksum, "
                              "updated_us) VALUES(?,?,?,?,?,?) ON CONFLICT(problem_key, space_hash) DO UPDATE SET "
                              "config = excluded.config, median_ms = excluded.median_ms, "
                              "checksum = excluded.checksum, updated_us = excluded.updated_us") +
                          (only_if_newer ? " WHERE excluded.updated_us > tuning_winners.updated_us" : "");
  Stmt s(db, sql.c_str());
  s.bind_text(1, problem_hash)
      .bind_text(2, space_hash)
      .bind_text(3, w.config)
      .bind_real(4, w.median_ms)
      .bind_text(5, winner_checksum(problem_hash, space_hash, w))
      .bind_int(6, updated_us);
  s.run();
}

}  // namespace detail
}  // namespace swz
