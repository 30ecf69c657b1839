// swzjit public API: the autotuner (runtime/tune/autotune.cpp). Static checks, parallel NVRTC compiles,
// candidate benchmarks in an isolated worker process, verification, re-timing, cached results.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "swzjit/cache.hpp"
#include "swzjit/engine.hpp"

namespace swz {

/// Progress of a tune, reported as it goes (for progress bars).
struct TuneProgress {
  int total = 0;          ///< candidates after the static checks
  int compiled = 0;       ///< compiled (or found in the kernel cache)
  int benchmarked = 0;    ///< benchmarked (or found in the tuning cache)
  int failed = 0;         ///< any status other than ok
  std::string best_config;
  double best_ms = 0;     ///< 0 until something succeeded
  double elapsed_s = 0;
  std::string phase;      ///< "compile", "benchmark", "retime" or "done": what the latest event was
  std::string last;       ///< one line about the latest event (config and outcome), for plain logs
};

struct TuneOptions {
  int max_candidates = 0;        ///< 0 = the whole space
  double max_seconds = 0;        ///< 0 = no time budget; otherwise stop starting new work after it
  bool keep_conflicted = false;  ///< keep configs whose static bank analysis shows excess wavefronts
  bool compile_only = false;     ///< fill the kernel cache only (works without a GPU)
  std::string arch;              ///< target for compile_only ("" = the engine's device)
  /// Compiles at once: 0 = as many as the process's compile threads, which every tune shares (the
  /// hardware's threads up to 8, or SWZJIT_COMPILE_THREADS); more than those is capped to them.
  int compile_threads = 0;
  double candidate_timeout_s = 10;  ///< a benchmark taking longer is recorded as "timeout"
  /// No compile finishing within this long fails the tune with an Error naming the wait (a stuck compile).
  double compile_timeout_s = 600;
  /// Re-time this many best candidates, interleaved, before choosing; the default config (what the Engine
  /// runs with nothing tuned) is re-timed with them whenever it ran ok. 0: choose on the first measurements.
  int retime_top = 3;
  std::vector<std::string> extra_configs;  ///< appended to the default space (canonical strings)
  std::function<void(const TuneProgress&)> progress;  ///< called from the tuning thread
  int min_repetitions = 10;         ///< timed runs per candidate, at least
  int max_repetitions = 100;        ///< and at most
  double repetition_target_ms = 20; ///< between those, enough runs for about this much kernel time
  /// TEST-ONLY: config string -> "fault", "hang", "wrong" or "oob". The named candidate is replaced by a
  /// misbehaving kernel (the family's FamilyDef::stand_in; transposes: templates/testing.cuh) that faults
  /// on an illegal address, spins forever, writes one wrong value, or writes one element past its output;
  /// its result is recorded (and stored) like any other, so use a scratch cache.
  std::map<std::string, std::string> inject;
  /// Seed of the random data candidates are verified on (0..2^32-1); < 0: the operation's fixed seed
  /// (TuneReport::seed says which was used).
  long long seed = -1;
};

/// One candidate's outcome (status: ok, compile-failed, resource-limit, launch-failed,
/// wrong-result, timeout, skipped-static; "compiled" for a compile-only tune).
struct TuneCandidate {
  std::string config;
  std::string status;
  std::string reason;
  /// The first pass: every candidate timed alone the same way, so these compare across the whole space (and
  /// they are what the tuning cache keeps for a later tune).
  double median_ms = 0, p20_ms = 0, p80_ms = 0;
  int repetitions = 0;
  /// The final re-time (the best few and the default, interleaved on a GPU kept busy), which the winner is
  /// chosen on; 0 for a candidate not re-timed. Compare these only with each other: a busy GPU runs at
  /// lower clocks than the first pass saw (an H200 at 2048x11008x4096: 0.29 ms re-timed, 0.25 ms first).
  double retime_ms = 0, retime_p20_ms = 0, retime_p80_ms = 0;
  bool from_cache = false;  ///< its first pass (or failure) was measured by an earlier tune and reused
  bool kernel_cached = false;  ///< its kernel came from the kernel cache this tune (no NVRTC compile)
};

struct TuneReport {
  std::string problem;       ///< the problem key
  std::string winner;        ///< canonical config ("" if compile_only or nothing succeeded)
  double winner_ms = 0;
  double winner_gbps = 0;    ///< bytes read + written per second (transpose)
  double winner_tflops = 0;  ///< 2 * M * N * K * batch per second, in TFLOP/s (GEMM)
  /// Sorted: the re-timed ones by their re-time (the winner's measurement), then the other ok ones by their
  /// first pass, then "compiled" (a compile-only tune), then the failures in space order, then the configs the
  /// static checks skipped.
  std::vector<TuneCandidate> candidates;
  int space_size = 0;        ///< configs in the search space before static checks
  int static_rejected = 0;   ///< dropped by the static checks
  int compiled = 0;          ///< NVRTC compiles this tune ran (kernel-cache misses), check kernel included
  int kernel_cache_hits = 0; ///< kernel lookups the cache served, check kernel included
  int benchmarked = 0;       ///< candidates benchmarked this tune
  int reused = 0;            ///< candidates whose results came from the tuning cache
  std::map<std::string, int> failures;  ///< by status
  /// Not every config of the space ran: max_candidates cut it, or the time budget ran out, or both.
  bool budget_exhausted = false;
  /// The time budget (TuneOptions::max_seconds) ran out: no new candidate was started after it.
  bool time_budget_exhausted = false;
  double seconds = 0;
  std::string space_hash;    ///< the search-space hash the winner is stored under
  std::string arch;          ///< the target compiled for
  std::string device;        ///< the GPU benchmarked on ("" for compile_only)
  int retimed = 0;           ///< candidates re-timed interleaved before the choice (the default included)
  /// The family's default config (default_transpose_config / default_gemm_config: what the Engine runs
  /// when nothing is tuned). Always a candidate, whatever max_candidates and the static checks say.
  std::string default_config;
  /// The default's median in the measurement the winner was chosen on (the final re-time when there was
  /// one); 0 when it did not run ok. The winner is never slower than this: near-ties go to the default.
  double default_ms = 0;
  int worker_restarts = 0;   ///< benchmark workers restarted after faults, hangs or crashes
  unsigned seed = 0;         ///< the seed of the verification data (TuneOptions::seed or the fixed one)
};

/// Tune the transpose of `problem` (with the alignment of `max_vec_bytes`) on the engine's device,
/// store the candidates and the winner in the engine's cache, and return what happened.
TuneReport autotune_transpose(Engine& engine, const TransposeProblem& problem, int max_vec_bytes,
                              const TuneOptions& options = {});

/// Tune the GEMM `problem` (with the A/B alignment of `max_vec_bytes`: 2..16 bytes, at least one
/// element; the problem's pitches and strides may narrow it) on the engine's device: autotune_family on
/// the built-in family sgemm (f32) or hgemm (f16/bf16), the mma.sync kernels, on the problem in the
/// kernels' frame. The space is gemm_search_space() for the problem's dtypes, kernel layout and alignment,
/// less the configs the bank analysis shows conflicted (unless keep_conflicted) and the split-K configs
/// that cannot pay off on the problem (both listed as skipped-static with the reason); each candidate's C
/// (alpha = 1, beta = 0, C NaN-poisoned, guards around it) is checked against the reference kernel's (f64
/// sums) on random A and B: relative Frobenius error at most 1e-5 for f32 inputs, 1e-2 for f16/bf16. The
/// report's configs are GemmConfig text; extra configs too. The winner is stored under the family's
/// tuning key (Engine::gemm_tuning_key) and definition hash; Engine::gemm_config uses it.
/// On an sm_90 GPU (or a compile-only tune for arch "sm_90"), for the problems the Hopper variant takes
/// (EngineOptions::hopper_gemm), the space is that variant's instead, 15 to 28 configs around its default
/// (few-tile problems: tile widths, K slices, the ways of summing them, short A stages and 64-row tiles; others: tile
/// width, stage count, rasterization, clusters and the last wave in K slices): the tune is autotune_family
/// on the built-in family gemm_sm90 (verified against its f64 reference in the worker, the winner stored
/// under its definition hash, operation "family:gemm_sm90"), reported with every config written
/// "sm90:<config>"; Engine::gemm runs its winner. Extra configs must then be "sm90:" ones.
/// `options.inject` is for transposes only. @throws Error(InvalidArgument) for an empty problem,
/// a batch above 65535 or a bad alignment; Error(Unsupported) for an unsupported dtype pair.
TuneReport autotune_gemm(Engine& engine, const GemmProblem& problem, int max_vec_bytes,
                         const TuneOptions& options = {});

/// Tune a declared family on `problem` (include/swzjit/family.hpp): its space filtered by the
/// constraints and the static bank analysis, every candidate compiled, checked against the family's
/// reference kernel in the isolated worker (inputs random, outputs poisoned and guarded), timed, and
/// the winner stored under the family's definition hash. Needs the family's reference launch.
TuneReport autotune_family(Engine& engine, const Family& family, const FamilyValues& problem,
                           const TuneOptions& options = {});

}  // namespace swz
