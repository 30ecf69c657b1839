// runtime: the tuning-results half of swz::Cache (include/swzjit/cache.hpp): candidates stored per
// (problem key, config), so a grown search space re-measures only its new configs, and winners
// per (problem key, search-space hash). Every row is checksummed with its problem key.
#include <string>
#include <vector>

#include "runtime/cache/cache_internal.hpp"
#include "swzjit/error.hpp"

namespace swz {

using detail::Db;
using detail::Stmt;
using detail::Transaction;

detail::MemoryProblem& Cache::Impl::memory_problem(const TuningProblemKey& key, const std::string& hash) {
  detail::MemoryProblem& p = memory_problems[hash];
  p.key = key;
  p.updated_us = next_stamp();
  return p;
}

void Cache::Impl::drop_bad_tuning_rows(const std::string& hash, bool whole_problem,
                                       const std::vector<std::string>& bad_configs,
                                       const std::vector<std::string>& bad_spaces) {
  if (!writable()) return;
  with_db("deleting corrupt tuning rows", false, [&](Db& d) {
    Transaction t(d);
    if (whole_problem) {
      for (const char* sql : {"DELETE FROM tuning_problems WHERE key = ?",
                              "DELETE FROM tuning_candidates WHERE problem_key = ?",
                              "DELETE FROM tuning_winners WHERE problem_key = ?"}) {
        Stmt s(d, sql);
        s.bind_text(1, hash);
        s.run();
      }
    }
    Stmt c(d, "DELETE FROM tuning_candidates WHERE problem_key = ? AND config = ?");
    for (const auto& config : bad_configs) {
      c.bind_text(1, hash).bind_text(2, config);
      c.run();
      c.reset();
    }
    Stmt w(d, "DELETE FROM tuning_winners WHERE problem_key = ? AND space_hash = ?");
    for (const auto& space : bad_spaces) {
      w.bind_text(1, hash).bind_text(2, space);
      w.run();
      w.reset();
    }
    t.commit();
  });
}

void Cache::Impl::warn_corrupt_tuning(const std::string& hash) {
  warn_once("corrupt-tuning", "corrupt tuning results in " + db_path + " (problem " + hash +
                                  ") failed their checksum or key check; they were deleted and will be re-measured");
}

std::map<std::string, CandidateResult> Cache::load_candidates(const TuningProblemKey& problem) {
  const std::string hash = problem.hash();
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  std::map<std::string, CandidateResult> out;
  bool bad_problem = false;
  std::vector<std::string> bad_configs;
  im.with_db("loading tuning candidates", false, [&](Db& d) {
    const std::string sql = std::string("SELECT ") + detail::kProblemColumns + " FROM tuning_problems WHERE key = ?";
    Stmt p(d, sql.c_str());
    p.bind_text(1, hash);
    if (p.step() && detail::read_problem_row(p).fields.hash() != hash) {
      bad_problem = true;
      return;
    }
    Stmt s(d,
           "SELECT config, status, reason, median_ms, p20_ms, p80_ms, repetitions, checksum "
           "FROM tuning_candidates WHERE problem_key = ?");
    s.bind_text(1, hash);
    while (s.step()) {
      CandidateResult r;
      r.config = s.text(0);
      r.status = s.text(1);
      r.reason = s.text(2);
      r.median_ms = s.real(3);
      r.p20_ms = s.real(4);
      r.p80_ms = s.real(5);
      r.repetitions = static_cast<int>(s.integer(6));
      if (detail::candidate_checksum(hash, r) == s.text(7))
        out[r.config] = r;
      else
        bad_configs.push_back(r.config);
    }
  });
  if (bad_problem || !bad_configs.empty()) {
    im.corrupt += bad_problem ? 1 : bad_configs.size();
    im.warn_corrupt_tuning(hash);
    im.drop_bad_tuning_rows(hash, bad_problem, bad_configs, {});
    if (bad_problem) out.clear();
  }
  auto mem = im.memory_problems.find(hash);
  if (mem != im.memory_problems.end())
    for (const auto& c : mem->second.candidates) out[c.first] = c.second;
  return out;
}

void Cache::store_candidate(const TuningProblemKey& problem, const CandidateResult& result) {
  if (!detail::is_known_status(result.status))
    throw_invalid("candidate status '" + result.status +
                  "' is not one of ok, compile-failed, resource-limit, launch-failed, wrong-result, timeout");
  if (result.config.empty()) throw_invalid("a candidate needs a non-empty config string");
  const std::string hash = problem.hash();
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  if (im.writable()) {
    const std::int64_t stamp = im.next_stamp();
    const bool ok = im.with_db("storing a tuning candidate", true, [&](Db& d) {
      Transaction t(d);
      detail::put_problem_row(d, detail::ProblemRow{hash, problem, stamp});
      detail::put_candidate_row(d, hash, result, stamp, false);
      t.commit();
    });
    if (ok) {
      auto mem = im.memory_problems.find(hash);
      if (mem != im.memory_problems.end()) mem->second.candidates.erase(result.config);
      return;
    }
    ++im.store_failures;
  } else if (im.mode != "memory" && !im.read_only) {
    ++im.store_failures;
  }
  im.memory_problem(problem, hash).candidates[result.config] = result;
}

void Cache::Impl::store_winner_locked(const TuningProblemKey& problem, const std::string& hash,
                                      const std::string& space_hash, const Winner& w) {
  ensure_process();
  if (writable()) {
    const std::int64_t stamp = next_stamp();
    const bool ok = with_db("storing a tuning winner", true, [&](Db& d) {
      Transaction t(d);
      detail::put_problem_row(d, detail::ProblemRow{hash, problem, stamp});
      detail::put_winner_row(d, hash, space_hash, w, stamp, false);
      t.commit();
    });
    if (ok) {
      auto mem = memory_problems.find(hash);
      if (mem != memory_problems.end()) mem->second.winners.erase(space_hash);
      return;
    }
    ++store_failures;
  } else if (mode != "memory" && !read_only) {
    ++store_failures;
  }
  memory_problem(problem, hash).winners[space_hash] = w;
}

void Cache::store_winner(const TuningProblemKey& problem, const std::string& space_hash, const std::string& config,
                         double median_ms) {
  if (config.empty()) throw_invalid("a winner needs a non-empty config string");
  const std::string hash = problem.hash();
  const Winner w{config, median_ms};
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->store_winner_locked(problem, hash, space_hash, w);
  }
  // After the local commit, outside mu: a slow or dead remote never loses or delays the local result.
  if (impl_->remote) impl_->remote->put_winner(problem, hash, space_hash, w);
}

std::optional<Winner> Cache::load_winner(const TuningProblemKey& problem, const std::string& space_hash) {
  const std::string hash = problem.hash();
  std::unique_lock<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  auto mem = im.memory_problems.find(hash);
  if (mem != im.memory_problems.end()) {
    auto w = mem->second.winners.find(space_hash);
    if (w != mem->second.winners.end()) {
      ++im.tuning_hits;
      return w->second;
    }
  }
  std::optional<Winner> found;
  bool bad = false;
  im.with_db("loading a tuning winner", false, [&](Db& d) {
    Stmt s(d, "SELECT config, median_ms, checksum FROM tuning_winners WHERE problem_key = ? AND space_hash = ?");
    s.bind_text(1, hash).bind_text(2, space_hash);
    if (!s.step()) return;
    Winner w{s.text(0), s.real(1)};
    if (detail::winner_checksum(hash, space_hash, w) == s.text(2))
      found = w;
    else
      bad = true;
  });
  if (bad) {
    ++im.corrupt;
    im.warn_corrupt_tuning(hash);
    im.drop_bad_tuning_rows(hash, false, {}, {space_hash});
  }
  if (!found && im.remote) {
    lock.unlock();  // a remote call may take up to its timeout
    found = im.remote->get_winner(problem, hash, space_hash);
    lock.lock();
    if (found) im.store_winner_locked(problem, hash, space_hash, *found);
  }
  if (found)
    ++im.tuning_hits;
  else
    ++im.tuning_misses;
  return found;
}

}  // namespace swz
