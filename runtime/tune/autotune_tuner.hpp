// runtime (internal): the family-independent tuning loop (runtime/tune/autotune.cpp) and what a kernel family
// gives it (runtime/tune/autotune_family.cpp for declared families, the transpose among them;
// runtime/tune/autotune_gemm.cpp for GEMMs): the space as
// config strings, how to compile and launch a candidate, the support kernels and the worker's Hello.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/worker/worker_protocol.hpp"
#include "swzjit/autotune.hpp"

namespace swz {
namespace detail {

/// One kernel family's side of a tune. Indexes are positions in `configs` (the space after the static
/// checks, in its fixed order).
struct TuneFamily {
  std::vector<std::string> configs;  ///< canonical config strings
  /// Position in `configs` of the family's default config (what the Engine runs when nothing is tuned);
  /// -1: none. It is always compiled, measured and re-timed, and wins near-ties (runtime/tune/autotune.cpp).
  int default_index = -1;
  /// The candidate's kernel for `arch`, through the engine (and its kernel cache). Throws swz::Error.
  std::function<KernelEntry(int index, const std::string& arch)> compile;
  /// Threads per block (for the register limit check).
  std::function<int(int index)> threads;
  /// Grid, block and dynamic shared memory of a candidate on the problem.
  std::function<void(int index, worker::BenchJob& job)> shape;
  /// The support kernels the worker needs (compiled through the cache; `compiles` counts NVRTC runs),
  /// and the Support request made of their entries, in the same order.
  std::vector<std::function<KernelEntry(const std::string& arch, std::atomic<int>* compiles)>> support;
  std::function<worker::SupportRequest(const std::vector<KernelEntry>& entries, const std::string& arch)> make_support;
  /// TEST-ONLY (TuneOptions::inject): the misbehaving stand-in for `mode`; empty when the family has none.
  std::function<KernelEntry(int index, const std::string& mode, const std::string& arch, std::atomic<int>* compiles)>
      inject;
  /// The tuning key of the problem on the engine's device (needs the GPU).
  std::function<TuningProblemKey()> tuning_key;
};

/// What a family prepares while the worker starts: the family, the statically rejected configs with
/// their reasons, and the report's identity fields.
struct TuneSetup {
  TuneFamily family;
  std::vector<std::pair<std::string, std::string>> rejected;
  std::string problem;     ///< the problem key (TuneReport::problem)
  std::string space_hash;  ///< the space id the winner is stored under
};

/// Makes `cfg` a candidate of a space after the static checks: its position in `kept` when there, else it
/// moves from `rejected` (or is appended) to the end of `kept`. The default config is always tuned: the
/// Engine runs it when nothing is tuned, so the tune must show whether anything beats it.
template <class Config>
int keep_config(std::vector<Config>& kept, std::vector<std::pair<Config, std::string>>& rejected, const Config& cfg) {
  const std::string name = cfg.to_string();
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (kept[i].to_string() == name) return static_cast<int>(i);
  for (auto it = rejected.begin(); it != rejected.end(); ++it)
    if (it->first.to_string() == name) {
      rejected.erase(it);
      break;
    }
  kept.push_back(cfg);
  return static_cast<int>(kept.size()) - 1;
}

/// Runs one tune: starts the worker with `hello` (unless compile-only) so that CUDA initialization
/// overlaps `prepare` (the space enumeration), then compiles, verifies, times, re-times, chooses and
/// stores. `options` must have been validated.
TuneReport run_tune(Engine& engine, const TuneOptions& options, const worker::HelloRequest& hello,
                    const std::function<TuneSetup()>& prepare);

/// Throws InvalidArgument for options out of range (shared by the families' entry points).
void validate_tune_options(const TuneOptions& options);

/// The first few non-empty lines of an NVRTC log, as one reason line.
std::string first_log_lines(const std::string& text, int lines);

}  // namespace detail
}  // namespace swz
