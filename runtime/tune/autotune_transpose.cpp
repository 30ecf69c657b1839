// runtime: the transpose family of the autotuner (include/swzjit/autotune.hpp): the space after the bank
// filter (runtime/autotune_select.cpp), candidates compiled by the engine, the check kernel of
// templates/transpose_check.cuh, and the test-only misbehaving stand-ins; the loop is runtime/autotune.cpp.
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tune/autotune_internal.hpp"
#include "runtime/tune/autotune_tuner.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"
#include "swzjit/log.hpp"

namespace swz {
namespace {

constexpr std::uint32_t kInputSeed = 0x5EEDu;  // fixed: every tune checks against the same data

}  // namespace

TuneReport autotune_transpose(Engine& engine, const TransposeProblem& problem_in, int max_vec_bytes,
                              const TuneOptions& options) {
  const TransposeProblem problem = problem_in.resolved();
  if (problem.rows == 0 || problem.cols == 0 || problem.batch == 0)
    throw_invalid("autotune: the problem " + problem.key(max_vec_bytes) + " is empty; rows, cols and batch must be >= 1");
  const int eb = dtype_bytes(problem.dtype);
  if (max_vec_bytes < eb || max_vec_bytes > 16 || (max_vec_bytes & (max_vec_bytes - 1)) != 0)
    throw_invalid("autotune: max_vec_bytes " + std::to_string(max_vec_bytes) + " must be a power of two from " +
                  std::to_string(eb) + " to 16");
  detail::validate_tune_options(options);

  detail::worker::HelloRequest hello;
  hello.kind = detail::worker::ProblemKind::Transpose;
  hello.problem.elem_bytes = eb;
  hello.problem.rows = problem.rows;
  hello.problem.cols = problem.cols;
  hello.problem.ld_in = problem.ld_in;
  hello.problem.ld_out = problem.ld_out;
  hello.problem.batch = problem.batch;
  hello.problem.stride_in = problem.stride_in;
  hello.problem.stride_out = problem.stride_out;
  hello.problem.seed = kInputSeed;

  const auto prepare = [&] {
    detail::TuningSpace space =
        detail::select_transpose_space(problem.dtype, max_vec_bytes, options.keep_conflicted, options.extra_configs);
    // What the Engine runs when nothing is tuned is always a candidate (and re-timed with the best).
    const int default_index =
        detail::keep_config(space.kept, space.rejected, default_transpose_config(problem.dtype, max_vec_bytes));
    detail::TuneSetup setup;
    setup.problem = problem.key(max_vec_bytes);
    setup.space_hash =
        transpose_space_id(problem.dtype, max_vec_bytes, options.keep_conflicted, options.extra_configs);
    for (const auto& r : space.rejected) setup.rejected.emplace_back(r.first.to_string(), r.second);
    auto configs = std::make_shared<const std::vector<TransposeConfig>>(std::move(space.kept));
    detail::TuneFamily& f = setup.family;
    for (const auto& c : *configs) f.configs.push_back(c.to_string());
    f.default_index = default_index;
    f.compile = [&engine, configs](int i, const std::string& arch) {
      return engine.compile_transpose((*configs)[static_cast<std::size_t>(i)], arch);
    };
    f.threads = [configs](int i) { return (*configs)[static_cast<std::size_t>(i)].threads; };
    f.shape = [configs, problem](int i, detail::worker::BenchJob& job) {
      const LaunchShape s = transpose_launch_shape((*configs)[static_cast<std::size_t>(i)], problem.rows, problem.cols,
                                                   problem.batch);
      for (int d = 0; d < 3; ++d) {
        job.grid[d] = s.grid[d];
        job.block[d] = s.block[d];
      }
    };
    Cache& cache = engine.cache();
    f.support.push_back([&cache, eb](const std::string& arch, std::atomic<int>* compiles) {
      return detail::compile_support_kernel(cache, detail::SupportKernel::Check, eb, arch, compiles);
    });
    f.make_support = [](const std::vector<KernelEntry>& e, const std::string& arch) {
      detail::worker::SupportRequest req;
      req.check = detail::worker::KernelImage{e[0].image, e[0].is_ptx, arch, e[0].lowered_name};
      return req;
    };
    f.inject = [&cache, eb](int, const std::string& mode, const std::string& arch, std::atomic<int>* compiles) {
      const detail::SupportKernel which = mode == "fault"  ? detail::SupportKernel::InjectFault
                                          : mode == "hang" ? detail::SupportKernel::InjectHang
                                                           : detail::SupportKernel::InjectWrong;
      return detail::compile_support_kernel(cache, which, eb, arch, compiles);
    };
    f.tuning_key = [&engine, problem, max_vec_bytes] { return engine.transpose_tuning_key(problem, max_vec_bytes); };
    return setup;
  };
  TuneReport report = detail::run_tune(engine, options, hello, prepare);
  const double bytes = 2.0 * static_cast<double>(problem.rows) * static_cast<double>(problem.cols) *
                       static_cast<double>(problem.batch) * eb;
  report.winner_gbps = report.winner_ms > 0 ? bytes / (report.winner_ms * 1e6) : 0;
  return report;
}

TransposeConfig autotune_transpose_for_engine(Engine& engine, const TransposeProblem& problem, int max_vec_bytes) {
  return detail::tuned_or_default<TransposeConfig>(
      "transpose", problem.key(max_vec_bytes), [&] { return autotune_transpose(engine, problem, max_vec_bytes); },
      [&] { return default_transpose_config(problem.dtype, max_vec_bytes); });
}

}  // namespace swz
