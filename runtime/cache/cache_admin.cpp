// runtime: maintenance of swz::Cache (include/swzjit/cache.hpp): verify, clear, listings and explain
// (why a lookup missed). Export/import live in cache_transfer.cpp.
#include <algorithm>

#include "runtime/cache/cache_internal.hpp"

namespace swz {

using detail::Db;
using detail::KernelRow;
using detail::ProblemRow;
using detail::Stmt;
using detail::Transaction;

namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::vector<FieldDifference> kernel_differences(const KernelKey& want, const KernelKey& have) {
  std::vector<FieldDifference> d;
  if (want.format_version != have.format_version)
    d.push_back({"format_version", std::to_string(want.format_version), std::to_string(have.format_version)});
  if (want.name_expression != have.name_expression)
    d.push_back({"name_expression", want.name_expression, have.name_expression});
  if (want.templates_hash != have.templates_hash) d.push_back({"templates_hash", want.templates_hash, have.templates_hash});
  if (want.nvrtc_version != have.nvrtc_version) d.push_back({"nvrtc_version", want.nvrtc_version, have.nvrtc_version});
  if (want.options != have.options) d.push_back({"options", join(want.options, " "), join(have.options, " ")});
  if (want.arch != have.arch) d.push_back({"arch", want.arch, have.arch});
  return d;
}

std::vector<FieldDifference> problem_differences(const TuningProblemKey& want, const TuningProblemKey& have) {
  std::vector<FieldDifference> d;
  auto cmp = [&](const char* field, const std::string& a, const std::string& b) {
    if (a != b) d.push_back({field, a, b});
  };
  cmp("operation", want.operation, have.operation);
  cmp("problem", want.problem, have.problem);
  cmp("device_name", want.device_name, have.device_name);
  cmp("arch", want.arch, have.arch);
  cmp("sm_count", std::to_string(want.sm_count), std::to_string(have.sm_count));
  cmp("nvrtc_version", want.nvrtc_version, have.nvrtc_version);
  cmp("templates_hash", want.templates_hash, have.templates_hash);
  return d;
}

/// The key fields of stored kernels (no images), read without trusting them.
struct StoredKey {
  std::string key;
  KernelKey fields;
  std::uint64_t bytes = 0;
};

std::vector<StoredKey> read_stored_keys(Db& d, const char* where, const std::string& arg) {
  std::vector<StoredKey> out;
  const std::string sql = std::string(
                              "SELECT key, format_version, templates_hash, name_expression, nvrtc_version, options, "
                              "arch, bytes FROM kernels ") +
                          where;
  Stmt s(d, sql.c_str());
  if (!arg.empty()) s.bind_text(1, arg);
  while (s.step()) {
    StoredKey k;
    k.key = s.text(0);
    k.fields.format_version = static_cast<int>(s.integer(1));
    k.fields.templates_hash = s.text(2);
    k.fields.name_expression = s.text(3);
    k.fields.nvrtc_version = s.text(4);
    try {
      k.fields.options = detail::decode_list(s.blob(5));
    } catch (const std::runtime_error&) {
      k.fields.options = {"<damaged>"};
    }
    k.fields.arch = s.text(6);
    k.bytes = static_cast<std::uint64_t>(s.integer(7));
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

VerifyReport Cache::verify() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  im.flush_touches_now();
  VerifyReport r;
  r.read_only = im.read_only;
  if (!im.db) {
    r.integrity = "not run: the cache is in memory (" + im.degraded_reason + ")";
    // Asked for memory only: nothing to check. A directory that was given but could not be used is
    // not a healthy cache: say so instead of "ok".
    if (!im.settings.directory.empty()) {
      r.database_ok = false;
      r.not_checked.push_back("the database: " + im.degraded_reason);
    }
    return r;
  }
  if (!im.repaired.empty()) {
    // Damage found when this Cache opened the database: report it (once) even though the new one
    // is fine, so `swz cache verify` does not say "ok" over a file it just had to move aside.
    r.database_ok = false;
    r.integrity = "damaged: " + im.repaired;
    im.repaired.clear();
    return r;
  }
  const std::uint64_t corrupt_before = im.corrupt;
  std::string schema;
  const bool finished = im.with_db("checking the database", false, [&](Db& d) {
    schema = detail::schema_problem(d);
    r.integrity = schema.empty() ? d.query_text("PRAGMA quick_check") : "damaged schema (" + schema + ")";
  });
  if (!finished && im.corrupt == corrupt_before) {
    // Not damage, but not a clean bill either (locked for too long, or past the statement limit).
    r.database_ok = false;
    r.integrity = "not run: SQLite's check did not finish";
    r.not_checked.push_back("the database and its rows: SQLite's check did not finish (see the warning)");
    return r;
  }
  if (im.corrupt != corrupt_before || r.integrity != "ok") {
    r.database_ok = false;
    if (im.read_only) {
      if (r.integrity.empty()) r.integrity = "damaged";
      r.not_checked.push_back("the rows: the read-only database is damaged and cannot be repaired here");
      return r;
    }
    if (im.corrupt == corrupt_before && !r.integrity.empty()) {
      ++im.corrupt;
      im.quarantine_and_reopen("failed its check (" + r.integrity + ")");
    }
    if (r.integrity.empty() || r.integrity == "ok") r.integrity = "damaged";
    r.integrity += "; the database was moved aside and a new one started";
    return r;
  }
  std::vector<std::string> bad_kernels, bad_problems;
  std::vector<std::pair<std::string, std::string>> bad_candidates, bad_winners;
  im.with_db("verifying rows", false, [&](Db& d) {
    const std::string sql = std::string("SELECT ") + detail::kKernelColumns + " FROM kernels";
    Stmt k(d, sql.c_str());
    while (k.step()) {
      ++r.kernels_checked;
      bool ok = false;
      try {
        ok = detail::kernel_row_valid(detail::read_kernel_row(k));
      } catch (const std::runtime_error&) {
      }
      if (!ok) bad_kernels.push_back(k.text(0));
    }
    const std::string psql = std::string("SELECT ") + detail::kProblemColumns + " FROM tuning_problems";
    Stmt p(d, psql.c_str());
    while (p.step()) {
      ++r.problems_checked;
      const ProblemRow row = detail::read_problem_row(p);
      if (row.fields.hash() != row.key) bad_problems.push_back(row.key);
    }
    Stmt c(d,
           "SELECT problem_key, config, status, reason, median_ms, p20_ms, p80_ms, repetitions, checksum "
           "FROM tuning_candidates");
    while (c.step()) {
      ++r.candidates_checked;
      CandidateResult cr{c.text(1), c.text(2), c.text(3), c.real(4), c.real(5), c.real(6),
                         static_cast<int>(c.integer(7))};
      if (detail::candidate_checksum(c.text(0), cr) != c.text(8)) bad_candidates.emplace_back(c.text(0), cr.config);
    }
    Stmt w(d, "SELECT problem_key, space_hash, config, median_ms, checksum FROM tuning_winners");
    while (w.step()) {
      ++r.winners_checked;
      if (detail::winner_checksum(w.text(0), w.text(1), Winner{w.text(2), w.real(3)}) != w.text(4))
        bad_winners.emplace_back(w.text(0), w.text(1));
    }
  });
  r.kernels_bad = bad_kernels.size();
  r.problems_bad = bad_problems.size();
  r.candidates_bad = bad_candidates.size();
  r.winners_bad = bad_winners.size();
  im.corrupt += r.bad();
  if (r.bad() > 0 && !im.writable())
    r.not_checked.push_back(std::to_string(r.bad()) + " bad rows were left in place: the cache is read-only");
  if (r.bad() > 0 && im.writable()) {
    im.with_db("deleting corrupt rows", false, [&](Db& d) {
      Transaction t(d);
      Stmt dk(d, "DELETE FROM kernels WHERE key = ?");
      for (const auto& key : bad_kernels) {
        dk.bind_text(1, key);
        dk.run();
        dk.reset();
      }
      for (const char* sql : {"DELETE FROM tuning_problems WHERE key = ?",
                              "DELETE FROM tuning_candidates WHERE problem_key = ?",
                              "DELETE FROM tuning_winners WHERE problem_key = ?"}) {
        Stmt s(d, sql);
        for (const auto& key : bad_problems) {
          s.bind_text(1, key);
          s.run();
          s.reset();
        }
      }
      Stmt dc(d, "DELETE FROM tuning_candidates WHERE problem_key = ? AND config = ?");
      for (const auto& c : bad_candidates) {
        dc.bind_text(1, c.first).bind_text(2, c.second);
        dc.run();
        dc.reset();
      }
      Stmt dw(d, "DELETE FROM tuning_winners WHERE problem_key = ? AND space_hash = ?");
      for (const auto& w : bad_winners) {
        dw.bind_text(1, w.first).bind_text(2, w.second);
        dw.run();
        dw.reset();
      }
      t.commit();
    });
  }
  return r;
}

void Cache::clear() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  im.memory_kernels.clear();
  im.memory_problems.clear();
  im.pending_touches.clear();
  if (!im.writable()) return;
  im.with_db("clearing the cache", false, [&](Db& d) {
    Transaction t(d);
    d.exec(
        "DELETE FROM kernels; DELETE FROM tuning_problems; DELETE FROM tuning_candidates; "
        "DELETE FROM tuning_winners;");
    t.commit();
    d.exec("PRAGMA incremental_vacuum");
  });
}

std::vector<KernelListing> Cache::list_kernels() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  im.flush_touches_now();
  std::vector<KernelListing> out;
  im.with_db("listing kernels", false, [&](Db& d) {
    Stmt s(d,
           "SELECT key, format_version, templates_hash, name_expression, nvrtc_version, options, arch, bytes, "
           "is_ptx, last_use_us FROM kernels");
    while (s.step()) {
      KernelListing l;
      l.key = s.text(0);
      l.fields.format_version = static_cast<int>(s.integer(1));
      l.fields.templates_hash = s.text(2);
      l.fields.name_expression = s.text(3);
      l.fields.nvrtc_version = s.text(4);
      try {
        l.fields.options = detail::decode_list(s.blob(5));
      } catch (const std::runtime_error&) {
        l.fields.options = {"<damaged>"};
      }
      l.fields.arch = s.text(6);
      l.bytes = static_cast<std::uint64_t>(s.integer(7));
      l.is_ptx = s.integer(8) != 0;
      l.last_use_us = s.integer(9);
      out.push_back(std::move(l));
    }
  });
  for (const auto& m : im.memory_kernels) {
    KernelListing l;
    l.key = m.first;
    l.fields = m.second.key;
    l.bytes = m.second.entry.image.size() + m.second.entry.lowered_name.size();
    l.is_ptx = m.second.entry.is_ptx;
    l.last_use_us = m.second.last_use_us;
    l.memory_only = true;
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const KernelListing& a, const KernelListing& b) {
    return a.last_use_us != b.last_use_us ? a.last_use_us > b.last_use_us : a.key < b.key;
  });
  return out;
}

std::vector<TuningListing> Cache::list_tuning() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  std::map<std::string, TuningListing> by_key;
  im.with_db("listing tuning results", false, [&](Db& d) {
    const std::string sql = std::string("SELECT ") + detail::kProblemColumns + " FROM tuning_problems";
    Stmt p(d, sql.c_str());
    while (p.step()) {
      ProblemRow row = detail::read_problem_row(p);
      TuningListing& l = by_key[row.key];
      l.key = row.key;
      l.problem = row.fields;
      l.updated_us = row.updated_us;
    }
    Stmt c(d, "SELECT problem_key, count(*) FROM tuning_candidates GROUP BY problem_key");
    while (c.step()) {
      auto it = by_key.find(c.text(0));
      if (it != by_key.end()) it->second.candidates = static_cast<std::uint64_t>(c.integer(1));
    }
    Stmt w(d, "SELECT problem_key, space_hash, config, median_ms FROM tuning_winners");
    while (w.step()) {
      auto it = by_key.find(w.text(0));
      if (it != by_key.end()) it->second.winners[w.text(1)] = Winner{w.text(2), w.real(3)};
    }
  });
  for (const auto& m : im.memory_problems) {
    TuningListing& l = by_key[m.first];
    l.key = m.first;
    l.problem = m.second.key;
    l.updated_us = std::max(l.updated_us, m.second.updated_us);
    l.candidates += m.second.candidates.size();
    for (const auto& w : m.second.winners) l.winners[w.first] = w.second;
  }
  std::vector<TuningListing> out;
  for (auto& kv : by_key) out.push_back(std::move(kv.second));
  std::sort(out.begin(), out.end(),
            [](const TuningListing& a, const TuningListing& b) { return a.updated_us > b.updated_us; });
  return out;
}

Explanation Cache::explain(const KernelKey& key) {
  const std::string hash = key.hash();
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  Explanation e;
  e.key = hash;
  std::vector<StoredKey> same_name;
  std::uint64_t total = im.memory_kernels.size();
  im.with_db("explaining a kernel lookup", false, [&](Db& d) {
    same_name = read_stored_keys(d, "WHERE name_expression = ?", key.name_expression);
    total += static_cast<std::uint64_t>(d.query_int("SELECT count(*) FROM kernels"));
  });
  for (const auto& m : im.memory_kernels)
    if (m.second.key.name_expression == key.name_expression)
      same_name.push_back(
          StoredKey{m.first, m.second.key, m.second.entry.image.size() + m.second.entry.lowered_name.size()});
  for (const auto& s : same_name) {
    if (s.key == hash && s.fields == key) {
      e.found = true;
      e.summary = "hit: kernel " + hash + " is stored (" + std::to_string(s.bytes) +
                  " bytes; its checksum is verified when it is loaded)";
      continue;
    }
    e.near_misses.push_back(NearMiss{s.key, kernel_differences(key, s.fields)});
  }
  if (!e.found) {
    if (same_name.empty())
      e.summary = "miss: no stored kernel has the name expression '" + key.name_expression + "' (" +
                  std::to_string(total) + " kernel entries stored)";
    else
      e.summary = "miss: kernel " + hash + " is not stored; " + std::to_string(e.near_misses.size()) +
                  " stored entries share its name expression but differ in the fields below";
  }
  return e;
}

Explanation Cache::explain(const TuningProblemKey& problem, const std::string& space_hash) {
  const std::string hash = problem.hash();
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  Explanation e;
  e.key = hash;
  std::vector<ProblemRow> related;
  std::uint64_t candidates = 0;
  std::map<std::string, Winner> winners;
  im.with_db("explaining a tuning lookup", false, [&](Db& d) {
    const std::string sql = std::string("SELECT ") + detail::kProblemColumns +
                            " FROM tuning_problems WHERE operation = ?1 AND (problem = ?2 OR NOT EXISTS "
                            "(SELECT 1 FROM tuning_problems WHERE operation = ?1 AND problem = ?2)) LIMIT 50";
    Stmt p(d, sql.c_str());
    p.bind_text(1, problem.operation).bind_text(2, problem.problem);
    while (p.step()) related.push_back(detail::read_problem_row(p));
    Stmt c(d, "SELECT count(*) FROM tuning_candidates WHERE problem_key = ?");
    c.bind_text(1, hash);
    if (c.step()) candidates = static_cast<std::uint64_t>(c.integer(0));
    Stmt w(d, "SELECT space_hash, config, median_ms FROM tuning_winners WHERE problem_key = ?");
    w.bind_text(1, hash);
    while (w.step()) winners[w.text(0)] = Winner{w.text(1), w.real(2)};
  });
  bool stored = false;
  for (const auto& m : im.memory_problems) {
    if (m.first == hash) {
      stored = true;
      candidates += m.second.candidates.size();
      for (const auto& w : m.second.winners) winners[w.first] = w.second;
    } else if (m.second.key.operation == problem.operation) {
      related.push_back(ProblemRow{m.first, m.second.key, m.second.updated_us});
    }
  }
  for (const auto& r : related) {
    if (r.key == hash) {
      stored = true;
      continue;
    }
    e.near_misses.push_back(NearMiss{r.key, problem_differences(problem, r.fields)});
  }
  std::vector<std::string> spaces;
  for (const auto& w : winners) spaces.push_back(w.first);
  const std::string state = "problem " + hash + " is stored with " + std::to_string(candidates) +
                            " measured candidates and winners for " + std::to_string(winners.size()) +
                            " search space(s)" + (spaces.empty() ? "" : " [" + join(spaces, ", ") + "]");
  if (!stored && candidates == 0 && winners.empty()) {
    e.summary = "miss: problem " + hash + " has no stored results" +
                (e.near_misses.empty() ? std::string(" and no stored problem shares its operation")
                                       : "; " + std::to_string(e.near_misses.size()) +
                                             " stored problems are close (differences below)");
  } else if (space_hash.empty()) {
    e.found = true;
    e.summary = "hit: " + state;
  } else if (winners.count(space_hash)) {
    e.found = true;
    const Winner& w = winners[space_hash];
    e.summary = "hit: winner '" + w.config + "' (" + std::to_string(w.median_ms) + " ms) for search space " +
                space_hash + "; " + state;
  } else {
    e.summary = "miss: no winner for search space " + space_hash + " (the search space changed: only configs " +
                "without a stored candidate need measuring); " + state;
  }
  return e;
}

}  // namespace swz
