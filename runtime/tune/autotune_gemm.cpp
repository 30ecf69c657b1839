// runtime: autotune_gemm (include/swzjit/autotune.hpp): a GEMM tune is autotune_family on the built-in family
// that runs the problem (generator/families/gemm/gemm_family.cpp: sgemm or hgemm, the mma.sync kernels; where
// the Hopper variant runs, gemm_sm90), with the typed configs' text in and out.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "runtime/tune/autotune_internal.hpp"
#include "runtime/tune/autotune_tuner.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"
#include "generator/families/gemm/gemm_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "runtime/engine/engine_impl.hpp"

namespace swz {

namespace detail {

std::optional<Sm90GemmConfig> gemm_hopper_variant(const Engine& engine, const GemmProblem& resolved, int max_vec_bytes,
                                                  const std::string& arch, int sm_count, int dram_gbps) {
  if (!engine.options().hopper_gemm || arch != "sm_90") return std::nullopt;
  return sm90_default_choice(resolved, max_vec_bytes, sm_count, dram_gbps);
}

}  // namespace detail

namespace {

// The Hopper variant's tune: the built-in family gemm_sm90 (its space around the problem's default, compiled
// for sm_90a), every config written "sm90:" + Sm90GemmConfig text. Extra configs must be Hopper candidates of
// the problem's dtypes and layout.
TuneReport hopper_tune(Engine& engine, const GemmProblem& problem, int max_vec_bytes, const TuneOptions& options,
                       int sm_count, int dram_gbps) {
  const std::shared_ptr<const Family> family = detail::gemm_sm90_builtin();
  const FamilyValues fp = detail::gemm_family_problem(problem, max_vec_bytes);
  TuneOptions o = options;
  o.extra_configs.clear();
  for (const std::string& text : options.extra_configs) {
    if (!is_sm90_candidate(text)) {
      const FamilyValues def = family->default_config(with_device(fp, sm_count, dram_gbps));  // this device's
      throw_invalid("extra config '" + text + "': on this sm_90 device the problem runs the Hopper GEMM variant, "
                    "so extra configs are Hopper candidates (its default is \"" +
                    sm90_candidate_text(detail::gemm_sm90_config_of(def, fp)) +
                    "\", in the family gemm_sm90's terms \"" + family->config_text(def) +
                    "\"), or turn the variant off with EngineOptions::hopper_gemm = false");
    }
    const Sm90GemmConfig cfg = parse_sm90_candidate(text);
    gemm_sm90_frame(cfg, problem, DevicePtr{1} << 20, DevicePtr{1} << 20);  // dtypes and layout must match
    o.extra_configs.push_back(family->config_text(detail::gemm_sm90_family_config(cfg)));
  }
  const detail::ConfigRetype typed = [family, fp](const std::string& t) {
    return sm90_candidate_text(detail::gemm_sm90_config_of(family->parse_config(t), fp));
  };
  o.progress = detail::retyped_progress(options.progress, typed);
  TuneReport r = autotune_family(engine, *family, fp, o);
  detail::retype_report(r, typed);
  return r;
}

// The mma.sync tune: the built-in family sgemm (f32) or hgemm (f16/bf16) on the problem in its kernels'
// frame. Extra configs are GemmConfig texts of the problem's dtypes and kernel layout.
TuneReport mma_tune(Engine& engine, const GemmProblem& problem, int max_vec_bytes, const TuneOptions& options) {
  const std::shared_ptr<const Family> family = detail::gemm_mma_builtin(problem.dtype);
  const FamilyValues fp = detail::gemm_family_problem(problem, max_vec_bytes);
  const GemmLayout layout = problem.kernel_layout();
  TuneOptions o = options;
  o.extra_configs.clear();
  for (const std::string& text : options.extra_configs) {
    const GemmConfig cfg = GemmConfig::parse(text);
    cfg.validate();
    if (cfg.in_dtype() != problem.dtype || cfg.out_dtype() != problem.out_dtype || cfg.layout() != layout)
      throw_invalid("extra config '" + text + "' is for " + to_string(cfg.in_dtype()) + ">" +
                    to_string(cfg.out_dtype()) + " " + to_string(cfg.layout()) + ", the problem is " +
                    to_string(problem.dtype) + ">" + to_string(problem.out_dtype) + " " + to_string(layout));
    const int align = detail::gemm_family_access_align(fp);
    if (cfg.vec_bytes() > align)
      throw_invalid("extra config '" + text + "' loads " + std::to_string(cfg.vec_bytes()) +
                    " bytes at a time; the problem's pointers, leading dimensions and strides allow " +
                    std::to_string(align) + " (use vec=" + std::to_string(align / dtype_bytes(problem.dtype)) + ")");
    o.extra_configs.push_back(family->config_text(detail::gemm_mma_family_config(cfg)));
  }
  const detail::ConfigRetype typed = [family, fp](const std::string& t) {
    return detail::gemm_mma_config_of(family->parse_config(t), fp).to_string();
  };
  o.progress = detail::retyped_progress(options.progress, typed);
  TuneReport r = autotune_family(engine, *family, fp, o);
  detail::retype_report(r, typed);
  return r;
}

// The arch, SM count and DRAM bandwidth a tune targets: the engine's device, or for a compile-only tune the
// asked-for arch with an H100's 132 SMs and an unknown bandwidth standing in (they only decide which
// variant's kernels are warmed).
struct TuneTarget {
  std::string arch;
  int sm_count = 0;
  int dram_gbps = 0;
};

TuneTarget tune_target(Engine& engine, const TuneOptions& options) {
  if (options.compile_only && !options.arch.empty()) return {options.arch, 132, 0};
  try {
    const DeviceInfo info = device_info(engine.options().device);
    return {info.arch(), info.sm_count, info.dram_gbps};
  } catch (const Error&) {
    if (!options.compile_only) throw;
    return {"", 0, 0};  // no GPU and no arch: the compile-only tune reports that itself
  }
}

}  // namespace

TuneReport autotune_gemm(Engine& engine, const GemmProblem& problem_in, int max_vec_bytes_in, const TuneOptions& options) {
  const GemmProblem problem = problem_in.resolved();
  if (problem.m == 0 || problem.n == 0 || problem.k == 0 || problem.batch == 0)
    throw_invalid("autotune: the problem " + problem.key(max_vec_bytes_in) + " is empty; m, n, k and batch must be >= 1");
  if (problem.batch > 65535)
    throw_invalid("autotune: batch " + std::to_string(problem.batch) + " exceeds 65535 (tune a smaller batch: the "
                  "kernels are the same)");
  check_gemm_dtypes(problem.dtype, problem.out_dtype);
  int max_vec_bytes = max_vec_bytes_in;
  const int eb = dtype_bytes(problem.dtype);
  if (max_vec_bytes < eb || max_vec_bytes > 16 || (max_vec_bytes & (max_vec_bytes - 1)) != 0)
    throw_invalid("autotune: max_vec_bytes " + std::to_string(max_vec_bytes) + " must be a power of two from " +
                  std::to_string(eb) + " to 16");
  // The class Engine::gemm finds for the call (its pitches and strides may narrow what the caller gives), so
  // the winner is stored under the problem the engine looks up.
  max_vec_bytes = std::min(max_vec_bytes, problem.max_vec_bytes(0, 0));
  detail::validate_tune_options(options);
  if (!options.inject.empty()) throw_invalid("autotune: inject is implemented for transposes only");
  const TuneTarget target = tune_target(engine, options);
  const bool hopper =
      detail::gemm_hopper_variant(engine, problem, max_vec_bytes, target.arch, target.sm_count, target.dram_gbps)
          .has_value();
  TuneReport r = hopper ? hopper_tune(engine, problem, max_vec_bytes, options, target.sm_count, target.dram_gbps)
                        : mma_tune(engine, problem, max_vec_bytes, options);
  r.problem = problem.key(max_vec_bytes);
  const double flops = 2.0 * static_cast<double>(problem.m) * static_cast<double>(problem.n) *
                       static_cast<double>(problem.k) * static_cast<double>(problem.batch);
  r.winner_tflops = r.winner_ms > 0 ? flops / (r.winner_ms * 1e9) : 0;
  return r;
}

}  // namespace swz
