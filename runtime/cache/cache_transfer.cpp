// runtime: export/import of swz::Cache (include/swzjit/cache.hpp): one standalone SQLite file with
// every kernel entry and tuning result, so tuned cubins can move between machines or ship with an app.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/cache/cache_internal.hpp"
#include "runtime/cache/cache_sign.hpp"
#include "runtime/cache/cache_target.hpp"
#include "swzjit/error.hpp"

namespace swz {

using detail::Db;
using detail::KernelRow;
using detail::ProblemRow;
using detail::Stmt;
using detail::Transaction;

namespace {

struct CandidateRow {
  std::string problem_key;
  CandidateResult result;
  std::int64_t updated_us = 0;
};

struct WinnerRow {
  std::string problem_key, space_hash;
  Winner winner;
  std::int64_t updated_us = 0;
};

/// The verified content of an export file.
struct ExportContent {
  std::vector<KernelRow> kernels;
  std::map<std::string, ProblemRow> problems;
  std::vector<CandidateRow> candidates;
  std::vector<WinnerRow> winners;
  std::uint64_t skipped = 0;
};

/// Reads and checks an export. With `mac`, every row that is read is fed into it, in the canonical
/// order (meta rows but the signature, then each table by primary key), so the rows signed or
/// verified are exactly the rows imported.
ExportContent read_export(Db& src, const std::string& path, detail::ExportMac* mac) {
  // NOTE: the schema first: a "kernels" that is a recursive view would make the first query of it
  // run forever (and every query is also bounded by the connection's statement time limit).
  if (const std::string bad = detail::schema_problem(src, true); !bad.empty())
    throw Error(ErrorKind::Cache, path + " is not a swzjit cache export (" + bad + ")");
  const std::string version = src.query_text("SELECT value FROM meta WHERE name = 'format_version'");
  if (version.empty()) throw Error(ErrorKind::Cache, path + " is not a swzjit cache export (it has no format version)");
  if (version != std::to_string(kCacheFormatVersion))
    throw Error(ErrorKind::Cache, path + " is a cache export of format version " + version +
                                      "; this library reads version " + std::to_string(kCacheFormatVersion));
  if (const std::string bad = detail::schema_problem(src); !bad.empty())
    throw Error(ErrorKind::Cache, path + " is not a swzjit cache export: " + bad);
  if (mac) {
    mac->add_marker("meta");
    Stmt m(src, "SELECT name, value FROM meta WHERE name <> ? ORDER BY name");
    m.bind_text(1, detail::kSignatureRow);
    while (m.step()) mac->add_row(m);
  }
  auto feed = [&](const char* table, const Stmt* row) {
    if (!mac) return;
    if (row)
      mac->add_row(*row);
    else
      mac->add_marker(table);
  };
  ExportContent c;
  const std::string ksql = std::string("SELECT ") + detail::kKernelColumns + " FROM kernels ORDER BY key";
  Stmt k(src, ksql.c_str());
  feed("kernels", nullptr);
  while (k.step()) {
    feed("kernels", &k);
    try {
      KernelRow row = detail::read_kernel_row(k);
      if (detail::kernel_row_valid(row)) {
        c.kernels.push_back(std::move(row));
        continue;
      }
    } catch (const std::runtime_error&) {
    }
    ++c.skipped;
  }
  const std::string psql = std::string("SELECT ") + detail::kProblemColumns + " FROM tuning_problems ORDER BY key";
  Stmt p(src, psql.c_str());
  feed("tuning_problems", nullptr);
  while (p.step()) {
    feed("tuning_problems", &p);
    ProblemRow row = detail::read_problem_row(p);
    if (row.fields.hash() == row.key)
      c.problems[row.key] = row;
    else
      ++c.skipped;
  }
  // NOTE: a result whose problem row is missing or bad is skipped too: it could not be explained.
  const std::string csql =
      std::string("SELECT ") + detail::kCandidateColumns + " FROM tuning_candidates ORDER BY problem_key, config";
  Stmt cs(src, csql.c_str());
  feed("tuning_candidates", nullptr);
  while (cs.step()) {
    feed("tuning_candidates", &cs);
    CandidateRow row{cs.text(0),
                     CandidateResult{cs.text(1), cs.text(2), cs.text(3), cs.real(4), cs.real(5), cs.real(6),
                                     static_cast<int>(cs.integer(7))},
                     cs.integer(9)};
    if (c.problems.count(row.problem_key) && detail::is_known_status(row.result.status) &&
        detail::candidate_checksum(row.problem_key, row.result) == cs.text(8))
      c.candidates.push_back(std::move(row));
    else
      ++c.skipped;
  }
  const std::string wsql =
      std::string("SELECT ") + detail::kWinnerColumns + " FROM tuning_winners ORDER BY problem_key, space_hash";
  Stmt ws(src, wsql.c_str());
  feed("tuning_winners", nullptr);
  while (ws.step()) {
    feed("tuning_winners", &ws);
    WinnerRow row{ws.text(0), ws.text(1), Winner{ws.text(2), ws.real(3)}, ws.integer(5)};
    if (c.problems.count(row.problem_key) &&
        detail::winner_checksum(row.problem_key, row.space_hash, row.winner) == ws.text(4))
      c.winners.push_back(std::move(row));
    else
      ++c.skipped;
  }
  return c;
}

}  // namespace

void Cache::export_to(const std::string& path, const TransferOptions& options) {
  if (path.empty()) throw Error(ErrorKind::InvalidArgument, "the cache export path is empty; give a file name");
  // Read the key before anything is written: a bad key file changes nothing.
  const std::string key = options.key_file.empty() ? std::string() : detail::read_key_file(options.key_file);
  const detail::ExportTarget target = detail::export_target(path, options.allow_special_target);
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  im.flush_touches_now();
  detail::TempFile tmp(target.temp_directory, target.temp_stem);
  try {
    if (im.db) {
      // VACUUM INTO writes a compact, consistent snapshot even while other processes write.
      Stmt v(*im.db, "VACUUM INTO ?");
      v.bind_text(1, tmp.path());
      v.run();
    }
    Db out(tmp.path(), SQLITE_OPEN_READWRITE, im.settings.statement_limit_ms);
    // NOTE: a rollback-journal file opens anywhere, read-only media included (WAL needs a -shm).
    out.query_text("PRAGMA journal_mode = DELETE");
    Transaction t(out);
    detail::create_schema(out);
    // Entries the disk refused (or all of them, in memory mode) travel too.
    for (const auto& m : im.memory_kernels) {
      KernelRow row;
      row.key = m.first;
      row.fields = m.second.key;
      row.entry = m.second.entry;
      row.checksum = detail::kernel_checksum(m.first, m.second.entry);
      row.created_us = row.last_use_us = m.second.last_use_us;
      detail::put_kernel_row(out, row, true);
    }
    for (const auto& m : im.memory_problems) {
      detail::put_problem_row(out, ProblemRow{m.first, m.second.key, m.second.updated_us});
      for (const auto& c : m.second.candidates)
        detail::put_candidate_row(out, m.first, c.second, m.second.updated_us, false);
      for (const auto& w : m.second.winners)
        detail::put_winner_row(out, m.first, w.first, w.second, m.second.updated_us, false);
    }
    Stmt unsign(out, "DELETE FROM meta WHERE name = ?");
    unsign.bind_text(1, detail::kSignatureRow);
    unsign.run();
    if (!key.empty()) {
      // The signature covers the file as written: the same reader import uses computes it.
      detail::ExportMac mac(key);
      read_export(out, path, &mac);
      Stmt sign(out, "INSERT INTO meta(name, value) VALUES(?, ?)");
      sign.bind_text(1, detail::kSignatureRow).bind_text(2, std::string(detail::kSignaturePrefix) + mac.hex());
      sign.run();
    }
    t.commit();
  } catch (const detail::SqliteError& e) {
    throw Error(ErrorKind::Io, "cannot write the cache export " + path + ": " + e.what());
  }
  tmp.publish(target.final_path, target.stream);
}

ImportReport Cache::import_from(const std::string& path, const TransferOptions& options) {
  struct stat st;
  if (path.empty()) throw Error(ErrorKind::InvalidArgument, "the cache export path is empty; give a file name");
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::Io, "cannot read the cache export " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::Io, "the cache export " + path + " is not a regular file");
  const std::string key = options.key_file.empty() ? std::string() : detail::read_key_file(options.key_file);
  ExportContent content;
  try {
    Db src(path, SQLITE_OPEN_READONLY, impl_->settings.statement_limit_ms);
    // One read transaction: the rows checked against the signature are the rows imported.
    src.exec("BEGIN");
    if (key.empty()) {
      content = read_export(src, path, nullptr);
    } else {
      detail::ExportMac mac(key);
      content = read_export(src, path, &mac);
      const std::string signature =
          src.query_text(std::string("SELECT value FROM meta WHERE name = '") + detail::kSignatureRow + "'");
      if (signature.empty())
        throw Error(ErrorKind::Cache, path +
                                          " is not signed; a key was given, so only a file exported with "
                                          "`swz cache export --sign KEYFILE` (that key) is accepted");
      if (!detail::same_signature(signature, std::string(detail::kSignaturePrefix) + mac.hex()))
        throw Error(ErrorKind::Cache, path +
                                          " does not match its signature under the given key: it was changed "
                                          "after it was signed, or signed with another key; nothing was imported");
    }
    src.exec("COMMIT");
  } catch (const detail::SqliteError& e) {
    throw Error(ErrorKind::Cache, path + " is not a readable swzjit cache export: " + e.what());
  }

  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  ImportReport r;
  r.authenticated = !key.empty();
  r.skipped_corrupt = content.skipped;
  im.corrupt += content.skipped;
  const std::int64_t stamp = im.next_stamp();
  bool written = false;
  if (im.writable()) {
    written = im.with_db("importing a cache export", true, [&](Db& d) {
      r.kernels_added = r.kernels_present = 0;
      Transaction t(d);
      im.flush_touches_locked();
      for (KernelRow row : content.kernels) {
        row.created_us = row.last_use_us = stamp;  // imported to be used: newest, not first to go
        if (detail::put_kernel_row(d, row, false))
          ++r.kernels_added;
        else
          ++r.kernels_present;
      }
      for (const auto& p : content.problems) detail::put_problem_row(d, p.second);
      for (const auto& c : content.candidates)
        detail::put_candidate_row(d, c.problem_key, c.result, c.updated_us, true);
      for (const auto& w : content.winners)
        detail::put_winner_row(d, w.problem_key, w.space_hash, w.winner, w.updated_us, true);
      if (im.settings.max_bytes > 0 &&
          static_cast<std::uint64_t>(d.query_int("SELECT coalesce(sum(bytes), 0) FROM kernels")) > im.settings.max_bytes)
        im.evict_locked(im.settings.max_bytes);
      t.commit();
    });
    if (!written) ++im.store_failures;
  }
  if (!written) {
    r.kernels_added = r.kernels_present = 0;
    for (const auto& row : content.kernels) {
      if (im.memory_kernels.count(row.key)) {
        ++r.kernels_present;
        continue;
      }
      im.remember_in_memory(row.fields, row.key, row.entry);
      ++r.kernels_added;
    }
    for (const auto& c : content.candidates)
      im.memory_problem(content.problems[c.problem_key].fields, c.problem_key).candidates[c.result.config] = c.result;
    for (const auto& w : content.winners)
      im.memory_problem(content.problems[w.problem_key].fields, w.problem_key).winners[w.space_hash] = w.winner;
  }
  r.candidates = content.candidates.size();
  r.winners = content.winners.size();
  return r;
}

}  // namespace swz
