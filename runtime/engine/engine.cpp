// runtime: the Engine (include/swzjit/engine.hpp): generator config -> cache key -> cached cubin or
// NVRTC compile -> module loaded once per device -> launch on the caller's stream.
#include "swzjit/engine.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <sstream>

#include "generator/core/checked_arith.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "runtime/engine/engine_impl.hpp"
#include "runtime/engine/engine_tune_gate.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "swzjit/error.hpp"
#include "templates/transpose.cuh"

namespace swz {

namespace {




}  // namespace

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

namespace {

// `p` must be resolved.
ProblemId problem_id(const TransposeProblem& p, int align) {
  return {static_cast<int>(p.dtype), p.rows, p.cols, p.ld_in, p.ld_out, p.batch, p.batch > 1 ? p.stride_in : 0,
          p.batch > 1 ? p.stride_out : 0, align};
}

}  // namespace

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


KernelEntry Engine::compile_transpose(const TransposeConfig& cfg, const std::string& arch_in) {
  cfg.validate();
  std::string arch = arch_in;
  if (arch.empty()) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->device_arch.empty()) impl_->device_arch = device_info(impl_->options.device).arch();
    arch = impl_->device_arch;
  }
  CompileRequest req;
  req.source = transpose_source(cfg);
  req.source_name = transpose_source_name(cfg);
  req.name_expression = transpose_name_expression(cfg);
  req.arch = arch;
  return detail::compile_through_cache(*impl_->cache, req, cfg.threads, 0, [this] { ++impl_->compiles; });
}

Kernel Engine::transpose_kernel(const TransposeConfig& cfg) {
  const std::string id = cfg.to_string();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->kernels.find(id);
    if (it != impl_->kernels.end()) return it->second;
  }
  const KernelEntry e = compile_transpose(cfg);
  std::string arch;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    arch = impl_->device_arch;
  }
  Module m(detail::to_compiled(e, arch, transpose_name_expression(cfg)), impl_->options.device);
  Kernel k = m.kernel();
  ++impl_->loads;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->kernels.emplace(id, k).first->second;
}

TuningProblemKey Engine::transpose_tuning_key(const TransposeProblem& problem, int max_vec_bytes) {
  return impl_->tuning_key("transpose", problem.key(max_vec_bytes));
}


TransposeConfig Engine::transpose_config(const TransposeProblem& problem_in, DevicePtr in, DevicePtr out) {
  const TransposeProblem problem = problem_in.resolved();
  const int align = problem.max_vec_bytes(in, out);
  const ProblemId id = problem_id(problem, align);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->choices.find(id);
    if (it != impl_->choices.end()) return it->second.config;
  }
  const TuningProblemKey tkey = transpose_tuning_key(problem, align);
  const std::function<std::optional<TransposeConfig>()> stored = [&]() -> std::optional<TransposeConfig> {
    const auto winner = impl_->cache->load_winner(tkey, transpose_space_id(problem.dtype, align));
    if (!winner) return std::nullopt;
    try {
      const TransposeConfig c = TransposeConfig::parse(winner->config);
      if (c.vec * dtype_bytes(c.dtype) <= align && c.dtype == problem.dtype) return c;
    } catch (const Error&) {
    }
    return std::nullopt;  // a stored winner this build cannot parse or use is a miss
  };
  bool remember = true;
  const TransposeConfig chosen = detail::choose_config<TransposeConfig>(
      *impl_, impl_->tuning, id, stored, true, [&] { return autotune_transpose_for_engine(*this, problem, align); },
      [&] { return default_transpose_config(problem.dtype, align); }, &remember);
  if (!remember) return chosen;  // another thread is tuning this problem: its winner is remembered
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->choices.emplace(id, Impl::Choice{chosen, std::nullopt}).first->second.config;
}

namespace {

// Launch `k` (compiled from `cfg`) on a resolved, non-empty problem.
void launch_resolved(const Kernel& k, const TransposeConfig& cfg, const TransposeProblem& p, DevicePtr in,
                     DevicePtr out, CUstream stream) {
  tpl::TransposeParams params{reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), p.rows, p.cols,
                              p.ld_in, p.ld_out, p.batch, p.stride_in, p.stride_out};
  void* args[] = {&params};
  const LaunchShape s = transpose_launch_shape(cfg, p.rows, p.cols, p.batch);
  k.launch(Dim3{s.grid[0], s.grid[1], s.grid[2]}, Dim3{s.block[0], 1, 1}, 0, stream, args);
}

}  // namespace

void Engine::launch_transpose(const TransposeConfig& cfg, const TransposeProblem& problem_in, DevicePtr in,
                              DevicePtr out, CUstream stream) {
  const TransposeProblem p = problem_in.resolved();
  if (p.rows == 0 || p.cols == 0 || p.batch == 0) return;
  if (cfg.dtype != p.dtype)
    throw_invalid("transpose: config dtype " + to_string(cfg.dtype) + " does not match the problem's " + to_string(p.dtype));
  launch_resolved(transpose_kernel(cfg), cfg, p, in, out, stream);
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
  // Hot path: a problem seen before is one lookup for its config and loaded kernel.
  const ProblemId id = problem_id(p, align);
  std::optional<Kernel> kernel;
  TransposeConfig cfg;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->choices.find(id);
    if (it != impl_->choices.end()) {
      cfg = it->second.config;
      kernel = it->second.kernel;
    }
  }
  if (!kernel) {
    cfg = transpose_config(p, in, out);
    kernel = transpose_kernel(cfg);
    // NOTE: the memo may hold another config than `cfg` (a tune by another thread finished meanwhile) or
    // none (this call ran the default while that tune ran): the kernel goes only to its own config.
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->choices.find(id);
    if (it != impl_->choices.end() && it->second.config == cfg) it->second.kernel = kernel;
  }
  launch_resolved(*kernel, cfg, p, in, out, stream);
  ++impl_->launches;
}

}  // namespace swz
