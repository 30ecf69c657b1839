// runtime: export/import of swz::Cache (include/swzjit/cache.hpp): one standalone SQLite file with
// every kernel entry and tuning result, so tuned cubins can move between machines or ship with an app.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/cache_internal.hpp"
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

ExportContent read_export(Db& src, const std::string& path) {
  const std::string version =
      src.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'") == 0
          ? std::string()
          : src.query_text("SELECT value FROM meta WHERE name = 'format_version'");
  if (version.empty()) throw Error(ErrorKind::Cache, path + " is not a swzjit cache export (it has no meta table)");
  if (version != std::to_string(kCacheFormatVersion))
    throw Error(ErrorKind::Cache, path + " is a cache export of format version " + version +
                                      "; this library reads version " + std::to_string(kCacheFormatVersion));
  ExportContent c;
  const std::string ksql = std::string("SELECT ") + detail::kKernelColumns + " FROM kernels";
  Stmt k(src, ksql.c_str());
  while (k.step()) {
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
  const std::string psql = std::string("SELECT ") + detail::kProblemColumns + " FROM tuning_problems";
  Stmt p(src, psql.c_str());
  while (p.step()) {
    ProblemRow row = detail::read_problem_row(p);
    if (row.fields.hash() == row.key)
      c.problems[row.key] = row;
    else
      ++c.skipped;
  }
  // NOTE: a result whose problem row is missing or bad is skipped too: it could not be explained.
  Stmt cs(src,
          "SELECT problem_key, config, status, reason, median_ms, p20_ms, p80_ms, repetitions, checksum, updated_us "
          "FROM tuning_candidates");
  while (cs.step()) {
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
  Stmt ws(src, "SELECT problem_key, space_hash, config, median_ms, checksum, updated_us FROM tuning_winners");
  while (ws.step()) {
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

void Cache::export_to(const std::string& path) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  im.flush_touches_now();
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  ::unlink(tmp.c_str());
  try {
    if (im.db) {
      // VACUUM INTO writes a compact, consistent snapshot even while other processes write.
      Stmt v(*im.db, "VACUUM INTO ?");
      v.bind_text(1, tmp);
      v.run();
    }
    Db out(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
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
    t.commit();
  } catch (const detail::SqliteError& e) {
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::Io, "cannot write the cache export " + path + ": " + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::Io, "cannot write the cache export " + path + ": " + why);
  }
}

ImportReport Cache::import_from(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::Io, "cannot read the cache export " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::Io, "the cache export " + path + " is not a regular file");
  ExportContent content;
  try {
    Db src(path, SQLITE_OPEN_READONLY);
    content = read_export(src, path);
  } catch (const detail::SqliteError& e) {
    throw Error(ErrorKind::Cache, path + " is not a readable swzjit cache export: " + e.what());
  }

  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  ImportReport r;
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
