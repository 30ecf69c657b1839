// runtime: what the Engine needs from the autotuner (runtime/autotune.cpp) without a dependency cycle,
// and the autotuner's pure pieces (runtime/autotune_select.cpp) that tests check without a GPU.
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

/// Identity of a GEMM tuning space for winner lookups, computed without enumerating it: the space
/// code hash (SWZJIT_GEMM_SPACE_HASH, CMakeLists.txt), dtypes, kernel layout, alignment, whether conflicted configs were kept
/// and the extra configs.
std::string gemm_space_id(DType in, DType out, GemmLayout layout, int max_vec_bytes, bool keep_conflicted = false,
                          const std::vector<std::string>& extra_configs = {});
/// Engine::gemm_config's TuneOnMiss path: tune with default options and return the winner (the default
/// config, with a warning, when the tune fails).
GemmConfig autotune_gemm_for_engine(Engine& engine, const GemmProblem& problem, int max_vec_bytes);

struct Sm90GemmConfig;  // generator/families/gemm_sm90/gemm_sm90.hpp

namespace detail {
/// Where the Hopper GEMM variant runs (sm_90 devices, EngineOptions::hopper_gemm, problems it takes):
/// its default config for `resolved` with the alignment class `max_vec_bytes` on `arch` with `sm_count`
/// SMs, else nullopt. autotune_gemm tunes the variant's space exactly there (through the built-in family
/// gemm_sm90, whose definition hash is the space id its winners are stored under), and Engine::gemm runs it.
std::optional<Sm90GemmConfig> gemm_hopper_variant(const Engine& engine, const GemmProblem& resolved, int max_vec_bytes,
                                                  const std::string& arch, int sm_count);
}  // namespace detail

namespace detail {
/// What the engine's TuneOnMiss runs for a built-in operation: `tune`'s winner, else (no candidate
/// succeeded, or the tune failed) `fallback()` with a warning naming the operation, problem and reason.
template <class Config>
Config tuned_or_default(const std::string& operation, const std::string& problem, const std::function<TuneReport()>& tune,
                        const std::function<Config()>& fallback) {
  std::string why;
  try {
    const TuneReport report = tune();
    if (!report.winner.empty()) {
      if (log_enabled(LogLevel::Debug))
        log(LogLevel::Debug, "tuned " + operation + " " + report.problem + ": " + report.winner + ", " +
                                 std::to_string(report.winner_ms) + " ms (" + std::to_string(report.benchmarked) +
                                 " benchmarked, " + std::to_string(report.reused) + " reused from the tuning cache)");
      return Config::parse(report.winner);
    }
    why = "no candidate of " + std::to_string(report.space_size - report.static_rejected) + " succeeded";
  } catch (const Error& e) {
    why = e.what();
  }
  const Config d = fallback();
  log(LogLevel::Warn, "autotuning " + operation + " " + problem + " failed (" + why + "); using the default " +
                          d.to_string());
  return d;
}
}  // namespace detail

namespace detail {

/// A resolved GEMM problem in the kernels' frame (C row-major; runtime/engine_gemm.cpp maps every
/// public layout, column-major C included, onto it): what the autotuner's worker computes.
struct GemmFrameDesc {
  GemmLayout layout = GemmLayout::NN;
  long long m = 0, n = 0, lda = 0, ldb = 0, stride_a = 0, stride_b = 0;
};
GemmFrameDesc gemm_frame(const GemmProblem& resolved);

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

/// A GEMM space after the static checks, as select_transpose_space.
using GemmTuningSpace = TunedSpace<GemmConfig>;
/// gemm_search_space(in, out, layout, max_vec_bytes) with every config whose analyze_gemm() shows
/// excess wavefronts rejected (kept when keep_conflicted), then `extra_configs` appended (parsed,
/// validated, duplicates dropped; they skip the bank filter but not the alignment rule).
/// @throws Error(InvalidArgument) for an extra config that does not parse or is for other dtypes or
/// another layout; Error(Unsupported) for an unsupported dtype pair.
GemmTuningSpace select_gemm_space(DType in, DType out, GemmLayout layout, int max_vec_bytes, bool keep_conflicted,
                                  const std::vector<std::string>& extra_configs = {});

/// gemm_split_mismatch: generator/families/gemm/gemm_family.hpp.


/// The GEMM autotuner's helper kernels, compiled through the kernel cache like candidates.
enum class GemmSupportKernel {
  Check,      ///< swz::tpl::gemm_check_kernel<in, out> (templates/gemm_check.cuh): fill and compare
  Reference,  ///< swz::tpl::gemm_reference_kernel for the layout, f64 sums (templates/gemm_reference.cuh)
  SplitKReduce,  ///< swz::tpl::gemm_splitk_reduce_kernel<out> (templates/gemm_splitk.cuh), for split-K candidates
};
KernelEntry compile_gemm_support_kernel(Cache& cache, GemmSupportKernel which, DType in, DType out, GemmLayout layout,
                                        const std::string& arch, std::atomic<int>* compiles);

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

}  // namespace detail
}  // namespace swz
