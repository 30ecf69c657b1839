// runtime: the autotuner's pure pieces (runtime/tune/autotune_internal.hpp): the tuning space after the
// static checks, its hash, the re-time set and plan, the deterministic winner choice (near-ties to the
// default config) and time statistics.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "swzjit_space_hashes.hpp"  // generated: SWZJIT_*_SPACE_HASH
#include "runtime/tune/autotune_internal.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace swz {

namespace detail {

namespace {

// The generator's search space with each config's excess wavefronts. Enumerating it runs thousands
// of bank analyses (about a second), so each (dtype, alignment) is computed once per process.
struct AnalyzedSpace {
  std::vector<std::pair<TransposeConfig, long long>> configs;
};

const AnalyzedSpace& analyzed_space(DType dtype, int max_vec_bytes) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::shared_ptr<const AnalyzedSpace>> memo;
  const std::pair<int, int> key{static_cast<int>(dtype), max_vec_bytes};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = memo.find(key);
    if (it != memo.end()) return *it->second;
  }
  auto space = std::make_shared<AnalyzedSpace>();
  std::set<std::string> seen;
  for (const TransposeConfig& cfg : transpose_search_space(dtype, max_vec_bytes, /*include_plain=*/true))
    if (seen.insert(cfg.to_string()).second) space->configs.emplace_back(cfg, analyze_transpose(cfg).excess());
  std::lock_guard<std::mutex> lock(mutex);
  return *memo.emplace(key, std::move(space)).first->second;  // a racing thread's copy is identical
}

}  // namespace

TuningSpace select_transpose_space(DType dtype, int max_vec_bytes, bool keep_conflicted,
                                   const std::vector<std::string>& extra_configs) {
  TuningSpace space;
  std::set<std::string> seen;
  for (const auto& entry : analyzed_space(dtype, max_vec_bytes).configs) {
    const TransposeConfig& cfg = entry.first;
    seen.insert(cfg.to_string());
    if (entry.second > 0 && !keep_conflicted)
      space.rejected.emplace_back(cfg, "bank analysis: " + std::to_string(entry.second) + " excess wavefronts per tile");
    else
      space.kept.push_back(cfg);
  }
  const int eb = dtype_bytes(dtype);
  for (const std::string& text : extra_configs) {
    const TransposeConfig cfg = TransposeConfig::parse(text);
    if (cfg.dtype != dtype)
      throw_invalid("extra config '" + text + "' is for " + to_string(cfg.dtype) + ", the problem is " +
                    to_string(dtype));
    space.add_requested(cfg, &seen,
                        cfg.vec * eb > max_vec_bytes
                            ? "needs " + std::to_string(cfg.vec * eb) + "-byte aligned rows; the problem allows " +
                                  std::to_string(max_vec_bytes)
                            : std::string());
  }
  return space;
}

int choose_winner(const std::vector<RankedCandidate>& ranked, double near_tie) {
  if (ranked.empty()) return -1;
  double best = ranked[0].median_ms;
  for (const auto& r : ranked) best = std::min(best, r.median_ms);
  const double limit = best * (1.0 + near_tie);
  // Among the near-ties: the default first (a tuned config has to beat it clearly), then the lowest order.
  const auto before = [](const RankedCandidate& a, const RankedCandidate& b) {
    if (a.is_default != b.is_default) return a.is_default;
    return a.order < b.order;
  };
  int chosen = -1;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (!(ranked[i].median_ms <= limit)) continue;
    if (chosen < 0 || before(ranked[i], ranked[static_cast<std::size_t>(chosen)])) chosen = static_cast<int>(i);
  }
  return chosen;
}

std::vector<std::size_t> report_order(const std::vector<TuneCandidate>& candidates) {
  // 0: re-timed, 1: ok, first pass only, 2: compiled (compile-only), 3: the rest.
  const auto group = [](const TuneCandidate& c) {
    if (c.status == "ok") return c.retime_ms > 0 ? 0 : 1;
    return c.status == "compiled" ? 2 : 3;
  };
  const auto time = [&](const TuneCandidate& c) { return group(c) == 0 ? c.retime_ms : c.median_ms; };
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const TuneCandidate &x = candidates[a], &y = candidates[b];
    if (group(x) != group(y)) return group(x) < group(y);
    return group(x) <= 1 && time(x) < time(y);
  });
  return order;
}

std::vector<int> retime_set(const std::vector<RankedCandidate>& ok, int top) {
  std::vector<int> set;
  if (top <= 0 || ok.empty()) return set;
  std::vector<const RankedCandidate*> sorted;
  for (const auto& r : ok) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const RankedCandidate* a, const RankedCandidate* b) {
    return a->median_ms != b->median_ms ? a->median_ms < b->median_ms : a->order < b->order;
  });
  bool have_default = false;
  for (std::size_t i = 0; i < sorted.size() && static_cast<int>(i) < top; ++i) {
    set.push_back(sorted[i]->order);
    have_default = have_default || sorted[i]->is_default;
  }
  if (!have_default)
    for (const auto& r : ok)
      if (r.is_default) {
        set.push_back(r.order);
        break;
      }
  return set;
}

RetimePlan plan_retime(const std::vector<double>& first_medians_ms, int min_reps, int max_reps, double target_ms,
                       double candidate_timeout_s) {
  constexpr double kWarmupMs = 100;
  constexpr int kMaxWarmupRounds = 200;
  constexpr double kFlushMs = 0.1;  // the L2 flush before every timed run, generously
  RetimePlan plan;
  const int lo = std::max(10, min_reps), hi = std::max(lo, max_reps);
  double fastest = 0, round_ms = 0;
  for (double m : first_medians_ms) {
    const double t = std::max(m, 1e-4);
    fastest = fastest == 0 ? t : std::min(fastest, t);
    round_ms += t + kFlushMs;
  }
  plan.rounds = lo;
  if (fastest > 0 && target_ms > 0)
    plan.rounds = static_cast<int>(std::min<double>(hi, std::max<double>(lo, std::ceil(target_ms / fastest))));
  plan.warmup_rounds = round_ms > 0 ? static_cast<int>(std::min<double>(kMaxWarmupRounds,
                                                                        std::max(1.0, std::ceil(kWarmupMs / round_ms))))
                                    : 1;
  // Loading and verifying each candidate, plus every round at four times the first pass's pace.
  plan.timeout_s = candidate_timeout_s * static_cast<double>(first_medians_ms.size() + 1) +
                   4.0 * static_cast<double>(plan.rounds + plan.warmup_rounds) * round_ms / 1000.0;
  return plan;
}

TimeStats summarize_times(std::vector<double> samples) {
  TimeStats s;
  s.count = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(samples.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (samples[hi] - samples[lo]) * (pos - static_cast<double>(lo));
  };
  s.median_ms = at(0.5);
  s.p20_ms = at(0.2);
  s.p80_ms = at(0.8);
  return s;
}

}  // namespace detail

std::vector<TransposeConfig> transpose_tuning_space(DType dtype, int max_vec_bytes) {
  return detail::select_transpose_space(dtype, max_vec_bytes, /*keep_conflicted=*/false).kept;
}

std::string transpose_space_id(DType dtype, int max_vec_bytes, bool keep_conflicted,
                               const std::vector<std::string>& extra_configs) {
  std::vector<std::string> fields = {std::string("transpose-space/") + SWZJIT_TRANSPOSE_SPACE_HASH, to_string(dtype),
                                     "align=" + std::to_string(max_vec_bytes),
                                     keep_conflicted ? "keep-conflicted" : "conflict-free"};
  for (const auto& e : extra_configs) fields.push_back("extra=" + e);
  return search_space_hash(std::move(fields));
}

std::string space_hash_of(const std::vector<TransposeConfig>& space) {
  std::vector<std::string> configs;
  configs.reserve(space.size());
  for (const auto& c : space) configs.push_back(c.to_string());
  return search_space_hash(std::move(configs));
}

}  // namespace swz
