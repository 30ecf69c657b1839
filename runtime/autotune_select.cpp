// runtime: the autotuner's pure pieces (runtime/autotune_internal.hpp): the tuning space after the
// static checks, its hash, the deterministic winner choice, time statistics, and the support kernels
// (input fill / output check, test-only misbehaving stand-ins) compiled through the kernel cache.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/autotune_internal.hpp"
#include "runtime/jit_cache.hpp"
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
    const std::string name = cfg.to_string();
    if (!seen.insert(name).second) {
      // Already kept, or rejected by the bank filter: asked for explicitly, so it moves to the end.
      const auto it = std::find_if(space.rejected.begin(), space.rejected.end(),
                                   [&](const auto& r) { return r.first.to_string() == name; });
      if (it == space.rejected.end()) continue;
      space.rejected.erase(it);
    }
    if (cfg.vec * eb > max_vec_bytes)
      space.rejected.emplace_back(cfg, "needs " + std::to_string(cfg.vec * eb) +
                                           "-byte aligned rows; the problem allows " + std::to_string(max_vec_bytes));
    else
      space.kept.push_back(cfg);
  }
  return space;
}

int choose_winner(const std::vector<RankedCandidate>& ranked, double near_tie) {
  if (ranked.empty()) return -1;
  double best = ranked[0].median_ms;
  for (const auto& r : ranked) best = std::min(best, r.median_ms);
  const double limit = best * (1.0 + near_tie);
  int chosen = -1;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (!(ranked[i].median_ms <= limit)) continue;
    if (chosen < 0 || ranked[i].order < ranked[static_cast<std::size_t>(chosen)].order) chosen = static_cast<int>(i);
  }
  return chosen;
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

KernelEntry compile_support_kernel(Cache& cache, SupportKernel which, int elem_bytes, const std::string& arch,
                                   std::atomic<int>* compiles) {
  if (elem_bytes != 2 && elem_bytes != 4)
    throw_invalid("support kernels exist for 2- and 4-byte elements, not " + std::to_string(elem_bytes));
  const std::string eb = std::to_string(elem_bytes);
  std::string header, expression, params, tag;
  switch (which) {
    case SupportKernel::Check:
      header = "transpose_check.cuh";
      expression = "swz::tpl::transpose_check_kernel<" + eb + ">";
      params = "swz::tpl::TransposeCheckParams";
      tag = "check";
      break;
    case SupportKernel::InjectFault:
    case SupportKernel::InjectHang:
    case SupportKernel::InjectWrong: {
      const int mode = which == SupportKernel::InjectFault ? 0 : which == SupportKernel::InjectHang ? 1 : 2;
      header = "testing.cuh";
      expression = "swz::tpl::misbehaving_transpose_kernel<" + eb + ", " + std::to_string(mode) + ">";
      params = "swz::tpl::TransposeParams";
      tag = "testing" + std::to_string(mode);
      break;
    }
  }
  CompileRequest req;
  req.source = "// generated by libswzjit: autotuner support kernel\n#include \"" + header +
               "\"\ntemplate __global__ void " + expression + "(const __grid_constant__ " + params + ");\n";
  req.source_name = "swz_support_" + tag + "_" + eb + ".cu";
  req.name_expression = expression;
  req.arch = arch;
  return compile_through_cache(cache, req, 256, 0, [compiles] {
    if (compiles) ++*compiles;
  });
}

}  // namespace detail

std::vector<TransposeConfig> transpose_tuning_space(DType dtype, int max_vec_bytes) {
  return detail::select_transpose_space(dtype, max_vec_bytes, /*keep_conflicted=*/false).kept;
}

std::string transpose_space_id(DType dtype, int max_vec_bytes, bool keep_conflicted,
                               const std::vector<std::string>& extra_configs) {
  std::vector<std::string> fields = {"transpose-space/v" + std::to_string(kTransposeSpaceVersion), to_string(dtype),
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
