// python/src: the autotuner (a problem description in, the report as a dict out) and cache
// inspection (stats and listing) for swzjit.autotune, swzjit.cache_stats and swzjit.cache_ls.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"

namespace swzpy {

namespace {

template <typename T>
T opt(const nb::dict& d, const char* key, T fallback) {
  return d.contains(key) && !d[key].is_none() ? nb::cast<T>(d[key]) : fallback;
}

}  // namespace

nb::dict report_dict(const swz::TuneReport& r) {
  nb::dict d;
  d["problem"] = r.problem;
  d["winner"] = r.winner;
  d["winner_ms"] = r.winner_ms;
  d["winner_gbps"] = r.winner_gbps;
  d["winner_tflops"] = r.winner_tflops;
  d["default_config"] = r.default_config;
  d["default_ms"] = r.default_ms;
  d["space_size"] = r.space_size;
  d["static_rejected"] = r.static_rejected;
  d["compiled"] = r.compiled;
  d["kernel_cache_hits"] = r.kernel_cache_hits;
  d["benchmarked"] = r.benchmarked;
  d["reused"] = r.reused;
  d["retimed"] = r.retimed;
  d["budget_exhausted"] = r.budget_exhausted;
  d["seconds"] = r.seconds;
  d["space_hash"] = r.space_hash;
  d["arch"] = r.arch;
  d["device"] = r.device;
  d["worker_restarts"] = r.worker_restarts;
  nb::dict failures;
  for (const auto& [status, n] : r.failures) failures[status.c_str()] = n;
  d["failures"] = failures;
  nb::list cands;
  for (const auto& c : r.candidates) {
    nb::dict x;
    x["config"] = c.config;
    x["status"] = c.status;
    x["reason"] = c.reason;
    x["median_ms"] = c.median_ms;
    x["p20_ms"] = c.p20_ms;
    x["p80_ms"] = c.p80_ms;
    x["repetitions"] = c.repetitions;
    x["from_cache"] = c.from_cache;
    x["retime_ms"] = c.retime_ms;  // 0: not re-timed (TuneCandidate)
    x["retime_p20_ms"] = c.retime_p20_ms;
    x["retime_p80_ms"] = c.retime_p80_ms;
    cands.append(x);
  }
  d["candidates"] = cands;
  return d;
}

swz::TuneOptions tune_options_from(const nb::dict& options) {
  swz::TuneOptions o;
  o.max_candidates = opt<int>(options, "max_candidates", 0);
  o.max_seconds = opt<double>(options, "max_seconds", 0);
  o.keep_conflicted = opt<bool>(options, "keep_conflicted", false);
  o.compile_only = opt<bool>(options, "compile_only", false);
  o.arch = opt<std::string>(options, "arch", "");
  o.compile_threads = opt<int>(options, "compile_threads", 0);
  o.candidate_timeout_s = opt<double>(options, "candidate_timeout_s", 10);
  o.retime_top = opt<int>(options, "retime_top", 3);
  o.extra_configs = opt<std::vector<std::string>>(options, "extra_configs", {});
  if (o.compile_only && o.arch.empty())
    throw swz::Error(swz::ErrorKind::InvalidArgument,
                     "arch: compile_only needs a target, e.g. arch=\"sm_90\" (there may be no GPU to ask)");
  if (!o.compile_only && !o.arch.empty())
    throw swz::Error(swz::ErrorKind::InvalidArgument,
                     "arch: applies only with compile_only=True (a tune targets the GPU it runs on)");
  return o;
}

namespace {

// The cache a settings-less inspection looks at: the given directory, else the configured one,
// else the library's default ($SWZJIT_CACHE_DIR, XDG, ~/.cache/swzjit).
std::unique_ptr<swz::Cache> open_cache(const std::string& directory) {
  const std::string dir = !directory.empty() ? directory : configured_cache_dir();
  return dir.empty() ? std::make_unique<swz::Cache>() : std::make_unique<swz::Cache>(dir);
}

nb::dict stats_dict(const swz::CacheStats& s) {
  nb::dict d;
  d["directory"] = s.directory;
  d["database"] = s.database;
  d["mode"] = s.mode;
  d["degraded_reason"] = s.degraded_reason;
  d["kernel_entries"] = s.kernel_entries;
  d["kernel_bytes"] = s.kernel_bytes;
  d["memory_kernel_entries"] = s.memory_kernel_entries;
  d["tuning_problems"] = s.tuning_problems;
  d["candidates"] = s.candidates;
  d["winners"] = s.winners;
  d["file_bytes"] = s.file_bytes;
  d["max_bytes"] = s.max_bytes;
  return d;
}

}  // namespace

void bind_tune_cache(nb::module_& m) {
  m.def("autotune", [](const std::string& op, int device, const nb::dict& problem, const nb::dict& options) {
    const swz::TuneOptions o = tune_options_from(options);
    swz::TuneReport report;
    if (op == "gemm") {
      // Tune what Engine::gemm runs (as `swz autotune gemm` does): narrow operands staged into
      // 16-byte pitches, the alignment that of the pitches (device allocations are 256-byte aligned).
      const swz::GemmProblem p = gemm_problem_from(problem).resolved().staged(0, 0, nullptr, nullptr);
      nb::gil_scoped_release release;
      report = swz::autotune_gemm(engine_for(device), p, p.max_vec_bytes(0, 0), o);
    } else if (op == "transpose") {
      const swz::TransposeProblem p = transpose_problem_from(problem).resolved();
      nb::gil_scoped_release release;
      report = swz::autotune_transpose(engine_for(device), p, p.max_vec_bytes(0, 0), o);
    } else {
      throw swz::Error(swz::ErrorKind::InvalidArgument,
                       "op: '" + op + "' is not a kernel family; use \"gemm\" or \"transpose\"");
    }
    return report_dict(report);
  });

  m.def("cache_stats", [](const std::string& directory) {
    auto cache = open_cache(directory);
    return stats_dict(cache->stats());
  });
  m.def("cache_ls", [](const std::string& directory) {
    auto cache = open_cache(directory);
    nb::list kernels, tuning;
    for (const auto& k : cache->list_kernels()) {
      nb::dict d;
      d["key"] = k.key;
      d["name_expression"] = k.fields.name_expression;
      d["arch"] = k.fields.arch;
      d["nvrtc_version"] = k.fields.nvrtc_version;
      d["bytes"] = k.bytes;
      d["is_ptx"] = k.is_ptx;
      d["last_use_us"] = k.last_use_us;
      d["memory_only"] = k.memory_only;
      kernels.append(d);
    }
    for (const auto& t : cache->list_tuning()) {
      nb::dict d;
      d["key"] = t.key;
      d["operation"] = t.problem.operation;
      d["problem"] = t.problem.problem;
      d["device_name"] = t.problem.device_name;
      d["arch"] = t.problem.arch;
      d["candidates"] = t.candidates;
      nb::dict winners;
      for (const auto& [space, w] : t.winners) {
        nb::dict x;
        x["config"] = w.config;
        x["median_ms"] = w.median_ms;
        winners[space.c_str()] = x;
      }
      d["winners"] = winners;
      d["updated_us"] = t.updated_us;
      tuning.append(d);
    }
    nb::dict r;
    r["kernels"] = kernels;
    r["tuning"] = tuning;
    return r;
  });
}

}  // namespace swzpy
