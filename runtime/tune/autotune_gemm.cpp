// runtime: the GEMM family of the autotuner (include/swzjit/autotune.hpp): the space after the bank
// filter, candidates compiled by the engine, the worker's GEMM problem (templates/gemm_check.cuh fills and
// compares, templates/gemm_reference.cuh is the trusted reference), and the engine's TuneOnMiss path.
// Where the Hopper variant runs, the tune is the built-in family gemm_sm90's (autotune_family).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "swzjit_space_hashes.hpp"  // generated: SWZJIT_*_SPACE_HASH
#include "runtime/tune/autotune_internal.hpp"
#include "runtime/tune/autotune_tuner.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"
#include "swzjit/log.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "runtime/engine/engine_impl.hpp"
#include "templates/gemm_common.cuh"
#include "templates/gemm_splitk.cuh"

namespace swz {
namespace {

constexpr std::uint32_t kGemmSeed = 0x6E33u;  // fixed: every tune checks against the same data

int elem_kind(DType t) { return t == DType::F16 ? tpl::kGemmF16 : t == DType::BF16 ? tpl::kGemmBF16 : tpl::kGemmF32; }

// The generator's space with each config's excess wavefronts, computed once per process per key
// (the swizzle choice and the analyses take a while).
using SpaceKey = std::tuple<int, int, int, int>;
const std::vector<std::pair<GemmConfig, long long>>& analyzed_gemm_space(DType in, DType out, GemmLayout layout,
                                                                          int align) {
  static std::mutex mutex;
  static std::map<SpaceKey, std::shared_ptr<const std::vector<std::pair<GemmConfig, long long>>>> memo;
  const SpaceKey key{static_cast<int>(in), static_cast<int>(out), static_cast<int>(layout), align};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = memo.find(key);
    if (it != memo.end()) return *it->second;
  }
  auto space = std::make_shared<std::vector<std::pair<GemmConfig, long long>>>();
  std::set<std::string> seen;
  for (const GemmConfig& cfg : gemm_search_space(in, out, layout, align))
    if (seen.insert(cfg.to_string()).second) space->emplace_back(cfg, analyze_gemm(cfg).excess());
  std::lock_guard<std::mutex> lock(mutex);
  return *memo.emplace(key, std::move(space)).first->second;  // a racing thread's copy is identical
}

}  // namespace

namespace detail {

// Split-K configs pay off only where the unsplit grid leaves most of the GPU idle and K is long; the
// space does not know the problem, so the tuner drops them elsewhere (tuning big shapes stays as fast as
// before). One wave of a large GPU (H100: 132 SMs) is the bar; slices must keep 4 k-tiles of 32.
constexpr long long kSplitMaxTiles = 132;
constexpr long long kSplitMinSlice = 128;

std::string gemm_split_mismatch(const GemmConfig& cfg, const GemmProblem& resolved, bool requested) {
  const long long splits = gemm_k_splits(cfg);
  if (splits <= 1) return "";
  const GemmProblem& p = resolved;
  if (p.batch * splits > 65535)
    return "split-K: batch x splits = " + std::to_string(p.batch * splits) +
           " exceeds the grid's 65535 (tune a smaller batch)";
  if (requested) return "";
  const GemmFrameDesc f = gemm_frame(p);
  const GemmTileShape t = cfg.tile();
  const long long tiles = ((f.m + t.bm - 1) / t.bm) * ((f.n + t.bn - 1) / t.bn) * p.batch;
  if (tiles >= kSplitMaxTiles)
    return "split-K: " + std::to_string(tiles) + " block tiles already fill the GPU without splitting K";
  if (p.k < splits * kSplitMinSlice)
    return "split-K: K = " + std::to_string(p.k) + " in " + std::to_string(splits) + " slices is under " +
           std::to_string(kSplitMinSlice) + " per slice";
  return "";
}

GemmTuningSpace select_gemm_space(DType in, DType out, GemmLayout layout, int max_vec_bytes, bool keep_conflicted,
                                  const std::vector<std::string>& extra_configs) {
  check_gemm_dtypes(in, out);
  GemmTuningSpace space;
  std::set<std::string> seen;
  for (const auto& entry : analyzed_gemm_space(in, out, layout, max_vec_bytes)) {
    seen.insert(entry.first.to_string());
    if (entry.second > 0 && !keep_conflicted)
      space.rejected.emplace_back(entry.first,
                                  "bank analysis: " + std::to_string(entry.second) + " excess wavefronts per k-tile");
    else
      space.kept.push_back(entry.first);
  }
  for (const std::string& text : extra_configs) {
    const GemmConfig cfg = GemmConfig::parse(text);
    cfg.validate();
    if (cfg.in_dtype() != in || cfg.out_dtype() != out || cfg.layout() != layout)
      throw_invalid("extra config '" + text + "' is for " + to_string(cfg.in_dtype()) + ">" +
                    to_string(cfg.out_dtype()) + " " + to_string(cfg.layout()) + ", the problem is " + to_string(in) +
                    ">" + to_string(out) + " " + to_string(layout));
    space.add_requested(cfg, &seen,
                        cfg.vec_bytes() > max_vec_bytes
                            ? "loads " + std::to_string(cfg.vec_bytes()) + " bytes at a time; the problem allows " +
                                  std::to_string(max_vec_bytes)
                            : std::string());
  }
  return space;
}

KernelEntry compile_gemm_support_kernel(Cache& cache, GemmSupportKernel which, DType in, DType out, GemmLayout layout,
                                        const std::string& arch, std::atomic<int>* compiles) {
  check_gemm_dtypes(in, out);
  CompileRequest req;
  req.arch = arch;
  int threads = 256;
  if (which == GemmSupportKernel::Check) {
    const std::string expression = "swz::tpl::gemm_check_kernel<" + std::to_string(elem_kind(in)) + ", " +
                                   std::to_string(elem_kind(out)) + ">";
    req.source = "// generated by libswzjit: autotuner support kernel\n#include \"gemm_check.cuh\"\n"
                 "template __global__ void " + expression + "(const __grid_constant__ swz::tpl::GemmCheckParams);\n";
    req.source_name = "swz_support_gemm_check_" + to_string(in) + "_" + to_string(out) + ".cu";
    req.name_expression = expression;
  } else if (which == GemmSupportKernel::Reference) {
    GemmReferenceSpec spec;
    spec.in = in;
    spec.out = out;
    spec.layout = layout;
    spec.f64_accumulate = true;
    req.source = gemm_reference_source(spec);
    req.source_name = gemm_reference_source_name(spec);
    req.name_expression = gemm_reference_name_expression(spec);
  } else {
    req.source = gemm_splitk_reduce_source(out);
    req.source_name = gemm_splitk_reduce_source_name(out);
    req.name_expression = gemm_splitk_reduce_name_expression(out);
    threads = tpl::kGemmSplitKBlock;
  }
  return compile_through_cache(cache, req, threads, 0, [compiles] {
    if (compiles) ++*compiles;
  });
}

}  // namespace detail

std::string gemm_space_id(DType in, DType out, GemmLayout layout, int max_vec_bytes, bool keep_conflicted,
                          const std::vector<std::string>& extra_configs) {
  std::vector<std::string> fields = {std::string("gemm-space/") + SWZJIT_GEMM_SPACE_HASH,
                                     to_string(in) + ">" + to_string(out), to_string(layout),
                                     "align=" + std::to_string(max_vec_bytes),
                                     keep_conflicted ? "keep-conflicted" : "conflict-free"};
  for (const auto& e : extra_configs) fields.push_back("extra=" + e);
  return search_space_hash(std::move(fields));
}

namespace detail {

std::optional<Sm90GemmConfig> gemm_hopper_variant(const Engine& engine, const GemmProblem& resolved, int max_vec_bytes,
                                                  const std::string& arch, int sm_count) {
  if (!engine.options().hopper_gemm || arch != "sm_90") return std::nullopt;
  return sm90_default_choice(resolved, max_vec_bytes, sm_count);
}

}  // namespace detail

namespace {

// The worker's support kernels of a GEMM tune (the input fill and output check, the f64 reference, and the
// split-K reduction when a candidate splits K), and the tuning key.
void add_support(detail::TuneFamily& f, Engine& engine, const GemmProblem& problem, GemmLayout layout,
                 int max_vec_bytes, bool split_reduce) {
  Cache& cache = engine.cache();
  const DType in = problem.dtype, out = problem.out_dtype;
  std::vector<detail::GemmSupportKernel> support = {detail::GemmSupportKernel::Check,
                                                    detail::GemmSupportKernel::Reference};
  if (split_reduce) support.push_back(detail::GemmSupportKernel::SplitKReduce);
  for (detail::GemmSupportKernel which : support)
    f.support.push_back([&cache, which, in, out, layout](const std::string& arch, std::atomic<int>* compiles) {
      return detail::compile_gemm_support_kernel(cache, which, in, out, layout, arch, compiles);
    });
  f.make_support = [](const std::vector<KernelEntry>& e, const std::string& arch) {
    detail::worker::SupportRequest req;
    req.check = detail::worker::KernelImage{e[0].image, e[0].is_ptx, arch, e[0].lowered_name};
    req.reference = detail::worker::KernelImage{e[1].image, e[1].is_ptx, arch, e[1].lowered_name};
    if (e.size() > 2) req.splitk_reduce = detail::worker::KernelImage{e[2].image, e[2].is_ptx, arch, e[2].lowered_name};
    return req;
  };
  f.tuning_key = [&engine, problem, max_vec_bytes] { return engine.gemm_tuning_key(problem, max_vec_bytes); };
}

// The Hopper variant's tune: the built-in family gemm_sm90 (its space around the problem's default, compiled
// for sm_90a, run in the worker's family target with the family's f64 reference), autotune_family's
// report with every config written as the typed API reads them ("sm90:" + Sm90GemmConfig text). Extra
// configs must be Hopper candidates of the problem's dtypes and layout.
TuneReport hopper_tune(Engine& engine, const GemmProblem& problem, int max_vec_bytes, const TuneOptions& options) {
  const std::shared_ptr<const Family> family = detail::gemm_sm90_builtin();
  const FamilyValues fp = detail::gemm_sm90_family_problem(problem, max_vec_bytes);
  TuneOptions o = options;
  o.extra_configs.clear();
  for (const std::string& text : options.extra_configs) {
    if (!is_sm90_candidate(text))
      throw_invalid("extra config '" + text + "': on this sm_90 device the problem runs the Hopper GEMM variant, "
                    "so extra configs are Hopper candidates (its default is \"" +
                    sm90_candidate_text(detail::gemm_sm90_config_of(family->default_config(fp), fp)) +
                    "\", in the family gemm_sm90's terms \"" + family->config_text(family->default_config(fp)) +
                    "\"), or turn the variant off with EngineOptions::hopper_gemm = false");
    const Sm90GemmConfig cfg = parse_sm90_candidate(text);
    gemm_sm90_frame(cfg, problem, DevicePtr{1} << 20, DevicePtr{1} << 20);  // dtypes and layout must match
    o.extra_configs.push_back(family->config_text(detail::gemm_sm90_family_config(cfg)));
  }
  TuneReport r = autotune_family(engine, *family, fp, o);
  const auto typed = [&](const std::string& text) {
    return text.empty() ? text : sm90_candidate_text(detail::gemm_sm90_config_of(family->parse_config(text), fp));
  };
  r.winner = typed(r.winner);
  r.default_config = typed(r.default_config);
  for (TuneCandidate& c : r.candidates) c.config = typed(c.config);
  return r;
}

// The arch and SM count a tune targets: the engine's device, or for a compile-only tune the asked-for
// arch with an H100's 132 SMs standing in (they only decide which variant's kernels are warmed).
std::pair<std::string, int> tune_target(Engine& engine, const TuneOptions& options) {
  if (options.compile_only && !options.arch.empty()) return {options.arch, 132};
  try {
    const DeviceInfo info = device_info(engine.options().device);
    return {info.arch(), info.sm_count};
  } catch (const Error&) {
    if (!options.compile_only) throw;
    return {"", 0};  // no GPU and no arch: the compile-only tune reports that itself
  }
}

}  // namespace

namespace {

// `allow_hopper` false: the mma.sync space even where the Hopper variant would run (the engine's call on
// operands it stages, which the Hopper kernel did not take as they are).
TuneReport autotune_gemm_variant(Engine& engine, const GemmProblem& problem_in, int max_vec_bytes,
                                 const TuneOptions& options, bool allow_hopper) {
  const GemmProblem problem = problem_in.resolved();
  if (problem.m == 0 || problem.n == 0 || problem.k == 0 || problem.batch == 0)
    throw_invalid("autotune: the problem " + problem.key(max_vec_bytes) + " is empty; m, n, k and batch must be >= 1");
  if (problem.batch > 65535)
    throw_invalid("autotune: batch " + std::to_string(problem.batch) + " exceeds 65535 (tune a smaller batch: the "
                  "kernels are the same)");
  const int eb = dtype_bytes(problem.dtype);
  if (max_vec_bytes < eb || max_vec_bytes > 16 || (max_vec_bytes & (max_vec_bytes - 1)) != 0)
    throw_invalid("autotune: max_vec_bytes " + std::to_string(max_vec_bytes) + " must be a power of two from " +
                  std::to_string(eb) + " to 16");
  detail::validate_tune_options(options);
  if (!options.inject.empty()) throw_invalid("autotune: inject is implemented for transposes only");
  const detail::GemmFrameDesc frame = detail::gemm_frame(problem);

  detail::worker::HelloRequest hello;
  hello.kind = detail::worker::ProblemKind::Gemm;
  detail::worker::GemmDesc& g = hello.gemm;
  g.in_kind = elem_kind(problem.dtype);
  g.out_kind = elem_kind(problem.out_dtype);
  g.a_kmajor = gemm_a_kmajor(frame.layout);
  g.b_kmajor = gemm_b_kmajor(frame.layout);
  g.m = frame.m;
  g.n = frame.n;
  g.k = problem.k;
  g.lda = frame.lda;
  g.ldb = frame.ldb;
  g.ldc = problem.ldc;
  g.batch = problem.batch;
  g.stride_a = frame.stride_a;
  g.stride_b = frame.stride_b;
  g.stride_c = problem.stride_c;
  g.alpha = 1;
  g.beta = 0;
  g.tolerance = problem.dtype == DType::F32 ? 1e-5 : 1e-2;
  g.seed = kGemmSeed;

  const std::pair<std::string, int> target = tune_target(engine, options);
  const std::optional<Sm90GemmConfig> hopper =
      allow_hopper ? detail::gemm_hopper_variant(engine, problem, max_vec_bytes, target.first, target.second)
                   : std::nullopt;
  if (hopper) {
    TuneReport r = hopper_tune(engine, problem, max_vec_bytes, options);
    r.problem = problem.key(max_vec_bytes);
    const double flops = 2.0 * static_cast<double>(problem.m) * static_cast<double>(problem.n) *
                         static_cast<double>(problem.k) * static_cast<double>(problem.batch);
    r.winner_tflops = r.winner_ms > 0 ? flops / (r.winner_ms * 1e9) : 0;
    return r;
  }
  const auto prepare = [&] {
    detail::GemmTuningSpace space = detail::select_gemm_space(problem.dtype, problem.out_dtype, frame.layout,
                                                              max_vec_bytes, options.keep_conflicted,
                                                              options.extra_configs);
    // Split-K configs only where they can pay off on this problem (gemm_split_mismatch).
    std::set<std::string> requested;
    for (const std::string& text : options.extra_configs) requested.insert(GemmConfig::parse(text).to_string());
    // Configs whose shared memory exceeds this device's opt-in limit (the space goes up to sm_90's 227 KiB).
    const int smem_limit = options.compile_only ? 0 : device_info(engine.options().device).max_smem_per_block_optin;
    std::vector<GemmConfig> kept;
    bool any_split = false;
    for (GemmConfig& cfg : space.kept) {
      std::string why = detail::gemm_split_mismatch(cfg, problem, requested.count(cfg.to_string()) > 0);
      if (why.empty() && smem_limit > 0 && cfg.smem_bytes() > smem_limit)
        why = "shared memory " + std::to_string(cfg.smem_bytes()) + " bytes exceeds this device's opt-in limit (" +
              std::to_string(smem_limit) + " bytes)";
      if (!why.empty()) {
        space.rejected.emplace_back(cfg, why);
        continue;
      }
      kept.push_back(std::move(cfg));
    }
    space.kept = std::move(kept);
    // What the Engine runs when nothing is tuned is always a candidate (and re-timed with the best).
    const int default_index =
        detail::keep_config(space.kept, space.rejected, default_gemm_config(problem, max_vec_bytes));
    for (const GemmConfig& cfg : space.kept) any_split = any_split || gemm_k_splits(cfg) > 1;
    detail::TuneSetup setup;
    setup.problem = problem.key(max_vec_bytes);
    setup.space_hash = gemm_space_id(problem.dtype, problem.out_dtype, frame.layout, max_vec_bytes,
                                     options.keep_conflicted, options.extra_configs);
    for (const auto& r : space.rejected) setup.rejected.emplace_back(r.first.to_string(), r.second);
    auto configs = std::make_shared<const std::vector<GemmConfig>>(std::move(space.kept));
    detail::TuneFamily& f = setup.family;
    for (const auto& c : *configs) f.configs.push_back(c.to_string());
    f.default_index = default_index;
    f.compile = [&engine, configs](int i, const std::string& arch) {
      return engine.compile_gemm((*configs)[static_cast<std::size_t>(i)], arch);
    };
    f.threads = [configs](int i) { return (*configs)[static_cast<std::size_t>(i)].threads(); };
    f.shape = [configs, frame, batch = problem.batch, k = problem.k](int i, detail::worker::BenchJob& job) {
      const GemmConfig& cfg = (*configs)[static_cast<std::size_t>(i)];
      const LaunchShape s = gemm_launch_shape(cfg, frame.m, frame.n, batch);
      for (int d = 0; d < 3; ++d) {
        job.grid[d] = s.grid[d];
        job.block[d] = s.block[d];
      }
      job.dynamic_smem = static_cast<std::uint32_t>(cfg.dynamic_smem_bytes());
      job.k_splits = static_cast<std::uint32_t>(gemm_k_splits(cfg));
      job.k_slice = static_cast<std::uint32_t>(gemm_k_slice(cfg, k));
    };
    add_support(f, engine, problem, frame.layout, max_vec_bytes, any_split);  // the reduction only when needed
    return setup;
  };
  TuneReport report = detail::run_tune(engine, options, hello, prepare);
  const double flops = 2.0 * static_cast<double>(problem.m) * static_cast<double>(problem.n) *
                       static_cast<double>(problem.k) * static_cast<double>(problem.batch);
  report.winner_tflops = report.winner_ms > 0 ? flops / (report.winner_ms * 1e9) : 0;
  return report;
}

}  // namespace

TuneReport autotune_gemm(Engine& engine, const GemmProblem& problem, int max_vec_bytes, const TuneOptions& options) {
  return autotune_gemm_variant(engine, problem, max_vec_bytes, options, /*allow_hopper=*/true);
}

GemmConfig autotune_gemm_for_engine(Engine& engine, const GemmProblem& problem, int max_vec_bytes) {
  // The engine asks only where it runs the mma.sync family (a problem the Hopper kernel does not take as
  // called, e.g. misaligned operands staged into aligned copies, whose alignment class it shares with
  // aligned calls): tune that family, whose winners live under their own space id.
  return detail::tuned_or_default<GemmConfig>(
      "gemm", problem.key(max_vec_bytes),
      [&] { return autotune_gemm_variant(engine, problem, max_vec_bytes, TuneOptions{}, /*allow_hopper=*/false); },
      [&] { return default_gemm_config(problem, max_vec_bytes); });
}

}  // namespace swz
