// runtime: the Engine (include/swzjit/engine.hpp) and its typed transpose API, a thin adapter over the
// built-in family "transpose" (generator/families/transpose/transpose_family.hpp): every choice, compile,
// tune and stored winner goes through the family path (runtime/engine/engine_family.cpp).
#include "swzjit/engine.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>

#include "generator/core/checked_arith.hpp"
#include "generator/families/transpose/transpose_family.hpp"
#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"
#include "templates/transpose.cuh"

namespace swz {

TransposeProblem TransposeProblem::resolved() const {
  TransposeProblem p = *this;
  auto bad = [](const std::string& m) { throw_invalid("transpose problem: " + m); };
  if (p.rows < 0) bad("rows " + std::to_string(p.rows) + " must be >= 0");
  if (p.cols < 0) bad("cols " + std::to_string(p.cols) + " must be >= 0");
  if (p.batch < 0) bad("batch " + std::to_string(p.batch) + " must be >= 0");
  if (p.ld_in < 0 || p.ld_out < 0 || p.stride_in < 0 || p.stride_out < 0)
    bad("pitches and batch strides must be >= 0 (0 = packed)");
  if (p.rows > (1LL << 40) || p.cols > (1LL << 40)) bad("rows/cols must be < 2^40");
  if (p.ld_in == 0) p.ld_in = p.cols;
  if (p.ld_out == 0) p.ld_out = p.rows;
  if (p.ld_in < p.cols) bad("ld_in " + std::to_string(p.ld_in) + " is smaller than cols " + std::to_string(p.cols));
  if (p.ld_out < p.rows) bad("ld_out " + std::to_string(p.ld_out) + " is smaller than rows " + std::to_string(p.rows));
  // NOTE: checked, so a huge shape is an InvalidArgument, not a wrapped (negative) stride (issue 10).
  const long long in_matrix = detail::checked_mul(p.rows, p.ld_in, "transpose input matrix (rows * ld_in)");
  const long long out_matrix = detail::checked_mul(p.cols, p.ld_out, "transpose output matrix (cols * ld_out)");
  if (p.stride_in == 0) p.stride_in = in_matrix;
  if (p.stride_out == 0) p.stride_out = out_matrix;
  if (p.batch > 1 && (p.stride_in < in_matrix || p.stride_out < out_matrix))
    bad("batch strides " + std::to_string(p.stride_in) + "," + std::to_string(p.stride_out) +
        " would make matrices overlap (need >= rows*ld_in, cols*ld_out)");
  // The 2^62 limit, on elements and on bytes, so byte offsets computed from them fit a 64-bit integer.
  const int eb = dtype_bytes(p.dtype);
  detail::checked_extent(p.batch, p.stride_in, p.rows, p.ld_in, p.cols, eb, "transpose input");
  detail::checked_extent(p.batch, p.stride_out, p.cols, p.ld_out, p.rows, eb, "transpose output");
  return p;
}

int TransposeProblem::max_vec_bytes(DevicePtr in, DevicePtr out) const {
  const TransposeProblem p = resolved();
  const int eb = dtype_bytes(p.dtype);
  return p.batch > 1 ? detail::access_alignment({in, out}, {p.ld_in, p.ld_out, p.stride_in, p.stride_out}, eb)
                     : detail::access_alignment({in, out}, {p.ld_in, p.ld_out}, eb);
}

std::string TransposeProblem::key(int max_vec_bytes) const {
  const TransposeProblem p = resolved();
  std::ostringstream os;
  os << to_string(p.dtype) << " " << p.rows << "x" << p.cols << " batch=" << p.batch << " ld=" << p.ld_in << ","
     << p.ld_out << " stride=" << (p.batch > 1 ? p.stride_in : 0) << "," << (p.batch > 1 ? p.stride_out : 0)
     << " align=" << max_vec_bytes;
  return os.str();
}

TransposeConfig default_transpose_config(DType dtype, int max_vec_bytes) {
  // The shapes that won on the H100 (BENCHMARKS.md): 4-byte types 64x64 tiles of 128 threads with
  // 8-byte vectors; 2-byte types 32x128 tiles of 256 threads, 4-byte vectors (vec=2), pair mode,
  // raster 1.
  const int eb = dtype_bytes(dtype);
  TransposeConfig c;
  c.dtype = dtype;
  c.smem = SmemLayout::Plain;
  if (eb == 4) {
    c.tile_rows = 64, c.tile_cols = 64, c.threads = 128;
  } else {
    c.tile_rows = 32, c.tile_cols = 128, c.threads = 256, c.raster = 1;
  }
  c.vec = std::max(1, std::min(eb == 4 ? 8 : 4, max_vec_bytes) / eb);
  c.pair = eb == 2 && c.vec % 2 == 0;
  TransposeConfig chosen = c;
  if (transpose_choose_swizzle(chosen) || transpose_choose_pad(chosen)) return chosen;
  c.validate();
  return c;  // plain: correct, only slower
}

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  if (options.use_cache) {
    CacheSettings s = default_cache_settings();
    if (!options.cache_dir.empty()) s.directory = options.cache_dir;
    if (options.cache_read_only) s.read_only = true;
    impl_->cache = std::make_unique<Cache>(s);
  } else {
    CacheSettings s;  // no directory: memory only
    s.directory.clear();
    impl_->cache = std::make_unique<Cache>(s);
  }
  impl_->templates_hash = templates_hash();
  impl_->nvrtc_version = detail::nvrtc_identity(*impl_->cache).version;
}

Engine::~Engine() = default;

const EngineOptions& Engine::options() const noexcept { return impl_->options; }
Cache& Engine::cache() { return *impl_->cache; }

EngineCounters Engine::counters() const {
  EngineCounters c;
  c.compiles = impl_->compiles;
  c.kernel_loads = impl_->loads;
  c.tuned_hits = impl_->tuned_hits;
  c.tuned_misses = impl_->tuned_misses;
  c.tunes = impl_->tunes;
  c.benchmark_runs = impl_->bench_runs;
  c.launches = impl_->launches;
  return c;
}

namespace {

const Family& transpose_family_ref() {
  static const std::shared_ptr<const Family> family = get_family("transpose");
  return *family;
}

// `p` must be resolved; `align` is its alignment class (max_vec_bytes): both of the family's aligns take
// it, so one typed problem is one family problem (and one tuning key) whatever the pointers' own bits.
FamilyValues family_problem(const TransposeProblem& p, int align) {
  return detail::transpose_family_problem(p.dtype, p.rows, p.cols, p.ld_in, p.ld_out, p.batch, p.stride_in,
                                          p.stride_out, align, align);
}

// `p` must be resolved.
ProblemId problem_id(const TransposeProblem& p, int align) {
  return {static_cast<int>(p.dtype), p.rows, p.cols, p.ld_in, p.ld_out, p.batch, p.batch > 1 ? p.stride_in : 0,
          p.batch > 1 ? p.stride_out : 0, align};
}

Engine::Impl::TransposePrepared prepared_of(const Kernel& k, const FamilyLaunchShape& s) {
  return {k, Dim3{s.grid[0], s.grid[1], s.grid[2]}, Dim3{s.block[0], s.block[1], s.block[2]},
          static_cast<unsigned>(s.dynamic_smem)};
}

// The kernel's one-struct argument (tpl::TransposeParams), as the family's launch packs it.
void launch_prepared(const Engine::Impl::TransposePrepared& k, const TransposeProblem& p, DevicePtr in, DevicePtr out,
                     CUstream stream) {
  tpl::TransposeParams params{reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), p.rows, p.cols,
                              p.ld_in, p.ld_out, p.batch, p.stride_in, p.stride_out};
  void* args[] = {&params};
  k.kernel.launch(k.grid, k.block, k.dynamic_smem, stream, args);
}

}  // namespace

KernelEntry Engine::compile_transpose(const TransposeConfig& cfg, const std::string& arch) {
  cfg.validate();
  return compile_family(transpose_family_ref(), detail::transpose_family_config(cfg), arch,
                        {{"dtype", static_cast<long long>(cfg.dtype)}});
}

Kernel Engine::transpose_kernel(const TransposeConfig& cfg) {
  cfg.validate();
  const Family& f = transpose_family_ref();
  return detail::family_kernel(*impl_, f, f.name_expression(detail::transpose_family_config(cfg),
                                                            {{"dtype", static_cast<long long>(cfg.dtype)}}));
}

TuningProblemKey Engine::transpose_tuning_key(const TransposeProblem& problem, int max_vec_bytes) {
  return family_tuning_key(transpose_family_ref(), family_problem(problem.resolved(), max_vec_bytes));
}

TransposeConfig Engine::transpose_config(const TransposeProblem& problem_in, DevicePtr in, DevicePtr out) {
  const TransposeProblem p = problem_in.resolved();
  return detail::transpose_config_of(family_config(transpose_family_ref(), family_problem(p, p.max_vec_bytes(in, out))),
                                     p.dtype);
}

void Engine::launch_transpose(const TransposeConfig& cfg, const TransposeProblem& problem_in, DevicePtr in,
                              DevicePtr out, CUstream stream) {
  const TransposeProblem p = problem_in.resolved();
  if (p.rows == 0 || p.cols == 0 || p.batch == 0) return;
  if (cfg.dtype != p.dtype)
    throw_invalid("transpose: config dtype " + to_string(cfg.dtype) + " does not match the problem's " + to_string(p.dtype));
  const Kernel k = transpose_kernel(cfg);
  const FamilyLaunchShape shape =
      transpose_family_ref().shape(detail::transpose_family_config(cfg), family_problem(p, p.max_vec_bytes(in, out)));
  launch_prepared(prepared_of(k, shape), p, in, out, stream);
  ++impl_->launches;
}

void Engine::transpose(const TransposeProblem& problem_in, DevicePtr in, DevicePtr out, CUstream stream,
                       const TransposeConfig* config) {
  const TransposeProblem p = problem_in.resolved();
  if (p.rows == 0 || p.cols == 0 || p.batch == 0) return;
  if (!in || !out) throw_invalid("transpose: null device pointer");
  const int align = p.max_vec_bytes(in, out);
  if (config) {
    config->validate();
    if (config->vec * dtype_bytes(config->dtype) > align)
      throw_invalid("transpose: config " + config->to_string() + " needs " +
                    std::to_string(config->vec * dtype_bytes(config->dtype)) +
                    "-byte aligned pointers, pitches and strides; this call allows " + std::to_string(align) +
                    " bytes (use vec=" + std::to_string(align / dtype_bytes(config->dtype)) + ")");
    launch_transpose(*config, p, in, out, stream);
    return;
  }
  // Hot path: a problem seen before is one lookup (no strings, no allocation) for its loaded kernel and shape.
  const ProblemId id = problem_id(p, align);
  {
    std::unique_lock<std::mutex> lock(impl_->mutex);
    const auto it = impl_->transpose_prepared.find(id);
    if (it != impl_->transpose_prepared.end()) {
      const Impl::TransposePrepared prepared = it->second;
      lock.unlock();
      launch_prepared(prepared, p, in, out, stream);
      ++impl_->launches;
      return;
    }
  }
  const Family& f = transpose_family_ref();
  const FamilyValues problem = family_problem(p, align);
  const FamilyValues values = family_config(f, problem);
  const FamilyLaunchShape shape = f.shape(values, problem);
  const Impl::TransposePrepared prepared = prepared_of(detail::family_kernel(*impl_, f, shape.name_expression), shape);
  {
    // NOTE: only the remembered choice is prepared: not the default a call runs while another thread
    // tunes the problem (its winner is remembered when the tune ends).
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->family_choices.find(detail::family_choice_key(f, problem));
    if (it != impl_->family_choices.end() && it->second.config == values)
      impl_->transpose_prepared.emplace(id, prepared);
  }
  launch_prepared(prepared, p, in, out, stream);
  ++impl_->launches;
}

TuneReport autotune_transpose(Engine& engine, const TransposeProblem& problem_in, int max_vec_bytes,
                              const TuneOptions& options) {
  const TransposeProblem problem = problem_in.resolved();
  if (problem.rows == 0 || problem.cols == 0 || problem.batch == 0)
    throw_invalid("autotune: the problem " + problem.key(max_vec_bytes) + " is empty; rows, cols and batch must be >= 1");
  const int eb = dtype_bytes(problem.dtype);
  if (max_vec_bytes < eb || max_vec_bytes > 16 || (max_vec_bytes & (max_vec_bytes - 1)) != 0)
    throw_invalid("autotune: max_vec_bytes " + std::to_string(max_vec_bytes) + " must be a power of two from " +
                  std::to_string(eb) + " to 16");
  const Family& f = transpose_family_ref();
  // Typed config strings in, typed config strings out: the family's own text never reaches the caller.
  const auto to_family = [&](const std::string& text) {
    const TransposeConfig c = TransposeConfig::parse(text);
    if (c.dtype != problem.dtype)
      throw_invalid("autotune: extra config " + text + " is for " + to_string(c.dtype) + ", the problem is " +
                    to_string(problem.dtype));
    return f.config_text(detail::transpose_family_config(c));
  };
  const DType dtype = problem.dtype;
  const detail::ConfigRetype typed = [&f, dtype](const std::string& text) {
    return detail::transpose_config_of(f.parse_config(text), dtype).to_string();
  };
  TuneOptions o = options;
  o.progress = detail::retyped_progress(options.progress, typed);
  o.extra_configs.clear();
  for (const std::string& e : options.extra_configs) o.extra_configs.push_back(to_family(e));
  o.inject.clear();
  for (const auto& kv : options.inject) {
    std::string key = kv.first;
    try {
      key = to_family(kv.first);
    } catch (const Error&) {
    }  // a name no candidate has: nothing is injected, as before
    o.inject[key] = kv.second;
  }
  TuneReport report = autotune_family(engine, f, family_problem(problem, max_vec_bytes), o);
  report.problem = problem.key(max_vec_bytes);
  detail::retype_report(report, typed);
  const double bytes = 2.0 * static_cast<double>(problem.rows) * static_cast<double>(problem.cols) *
                       static_cast<double>(problem.batch) * eb;
  report.winner_gbps = report.winner_ms > 0 ? bytes / (report.winner_ms * 1e6) : 0;
  return report;
}

}  // namespace swz
