// runtime: what the Engine needs from the autotuner (runtime/tune/autotune.cpp) without a dependency cycle,
// and the autotuner's pure pieces (runtime/tune/autotune_select.cpp) that tests check without a GPU.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "generator/families/gemm/gemm_family.hpp"  // gemm_split_mismatch
#include "swzjit/autotune.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/log.hpp"

namespace swz {

/// The default tuning space of a transpose: transpose_search_space() without conflicted configs.
std::vector<TransposeConfig> transpose_tuning_space(DType dtype, int max_vec_bytes);
/// Identity of a tuning space for winner lookups, computed without enumerating it: the space
/// code hash (SWZJIT_TRANSPOSE_SPACE_HASH: the enumerating and filtering sources, CMakeLists.txt), dtype, alignment, whether conflicted configs were kept and the
/// extra configs. Cheap, so a warm process finds its winner in microseconds.
std::string transpose_space_id(DType dtype, int max_vec_bytes, bool keep_conflicted = false,
                               const std::vector<std::string>& extra_configs = {});
/// search_space_hash() of the configs' canonical strings.
std::string space_hash_of(const std::vector<TransposeConfig>& space);

struct Sm90GemmConfig;  // generator/families/gemm_sm90/gemm_sm90.hpp

namespace detail {
/// Where the Hopper GEMM variant runs (sm_90 devices, EngineOptions::hopper_gemm, problems it takes):
/// its default config for `resolved` with the alignment class `max_vec_bytes` on `arch` with `sm_count`
/// SMs and `dram_gbps` of DRAM bandwidth (0: not known), else nullopt. autotune_gemm tunes the variant's
/// space exactly there (through the built-in family gemm_sm90, whose definition hash is the space id its
/// winners are stored under), and Engine::gemm runs it.
std::optional<Sm90GemmConfig> gemm_hopper_variant(const Engine& engine, const GemmProblem& resolved, int max_vec_bytes,
                                                  const std::string& arch, int sm_count, int dram_gbps);
}  // namespace detail

namespace detail {

/// The space a tune works on, after the static checks, in its fixed order (the order breaks near-ties).
template <class Config>
struct TunedSpace {
  std::vector<Config> kept;
  /// Dropped by the static checks, with the reason (e.g. "bank analysis: 96 excess wavefronts per tile").
  std::vector<std::pair<Config, std::string>> rejected;

  /// Appends a config the caller asked for (an extra config): it skips the bank filter (one the filter
  /// rejected moves to the end of `kept`; one already kept is dropped) but not the alignment rule
  /// (`misfit`: why the problem's alignment refuses it, "" when it fits). `seen` holds kept/rejected names.
  void add_requested(const Config& cfg, std::set<std::string>* seen, const std::string& misfit) {
    const std::string name = cfg.to_string();
    if (!seen->insert(name).second) {
      const auto it = std::find_if(rejected.begin(), rejected.end(),
                                   [&](const std::pair<Config, std::string>& r) { return r.first.to_string() == name; });
      if (it == rejected.end()) return;
      rejected.erase(it);
    }
    if (!misfit.empty())
      rejected.emplace_back(cfg, misfit);
    else
      kept.push_back(cfg);
  }
};

/// A transpose space after the static checks.
using TuningSpace = TunedSpace<TransposeConfig>;

/// transpose_search_space(dtype, max_vec_bytes) with every config the bank analysis shows conflicted
/// rejected (kept when keep_conflicted), then `extra_configs` appended (parsed; duplicates dropped).
/// Extra configs skip the bank filter (they were asked for: one the filter rejected moves to the end
/// of `kept`) but not the alignment rule.
/// @throws Error(InvalidArgument) for an extra config that does not parse or has another dtype.
TuningSpace select_transpose_space(DType dtype, int max_vec_bytes, bool keep_conflicted,
                                   const std::vector<std::string>& extra_configs = {});

/// One ok candidate as the final choice sees it; `order` is its position in the space; `is_default`: the
/// family's default config (what the Engine runs when nothing is tuned).
struct RankedCandidate {
  std::string config;
  double median_ms = 0;
  int order = 0;
  bool is_default = false;
};

/// The winner, deterministically: the lowest median, except that every candidate within
/// `near_tie` (a fraction: 0.01 = 1%) of it counts as a tie, and among ties the default wins, else the
/// lowest `order`. So the winner is never slower than the default among `ranked`: a tuned config must beat
/// it by more than the near-tie margin. Returns the index into `ranked`, or -1 when it is empty.
int choose_winner(const std::vector<RankedCandidate>& ranked, double near_tie = 0.01);

/// The order a report lists `candidates` in, as indices into it: the re-timed ok ones (retime_ms > 0) by their
/// re-time, then the other ok ones by their first pass, then "compiled" (a compile-only tune), then the rest;
/// ties and the rest in the given (space) order. The two measurements never mix in one ranking: the re-time
/// runs on a busy GPU, often at lower clocks, so a first-pass time is not comparable with it.
std::vector<std::size_t> report_order(const std::vector<TuneCandidate>& candidates);

/// The candidates the final interleaved re-time measures together, as `order`s: the `top` fastest of
/// `ok` (by first-pass median, ties by order), then the default when it is in `ok` and not among them.
/// Empty when `top` <= 0 (no re-time: the choice uses the first measurements).
std::vector<int> retime_set(const std::vector<RankedCandidate>& ok, int top);

/// How long the final re-time runs, from the candidates' first-pass medians: `rounds` timed rounds (each
/// candidate once per round, after an L2 flush) so that the fastest gets about `target_ms` of timed runs,
/// within [max(10, min_reps), max(10, max_reps)]; `warmup_rounds` untimed rounds first (about 100 ms of
/// kernel time, 1..200), so every candidate is timed on a GPU that has been busy, as in an application;
/// and a deadline for the worker's reply that covers both with room to spare.
struct RetimePlan {
  int rounds = 10;
  int warmup_rounds = 1;
  double timeout_s = 0;
};
RetimePlan plan_retime(const std::vector<double>& first_medians_ms, int min_reps, int max_reps, double target_ms,
                       double candidate_timeout_s);

/// Median and 20th/80th percentiles (linear interpolation between order statistics) of samples.
struct TimeStats {
  double median_ms = 0, p20_ms = 0, p80_ms = 0;
  int count = 0;
};
TimeStats summarize_times(std::vector<double> samples_ms);

/// A family's config text as a typed API writes it (TransposeConfig, GemmConfig, a Hopper candidate): the
/// typed tunes (autotune_transpose, autotune_gemm) run autotune_family and hand back typed text.
using ConfigRetype = std::function<std::string(const std::string&)>;
/// autotune_family's report with every config in typed text (an empty text stays empty).
void retype_report(TuneReport& report, const ConfigRetype& typed);
/// The caller's progress callback, given the configs in typed text too: the best so far, and the latest
/// event's line ("CONFIG: outcome"); a line that names no config (a phase's) passes as it is. Empty stays
/// empty.
std::function<void(const TuneProgress&)> retyped_progress(const std::function<void(const TuneProgress&)>& progress,
                                                          const ConfigRetype& typed);

}  // namespace detail
}  // namespace swz
