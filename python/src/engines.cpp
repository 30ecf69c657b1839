// python/src: one swz::Engine per (device, settings), the GEMM and transpose entry points on raw
// device addresses and CUDA streams, and DLPack tensor description (the Python layer reads tensors).
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "bindings.hpp"
#include "swzjit/error.hpp"

namespace swzpy {

namespace {

struct Settings {
  swz::TunePolicy policy = swz::TunePolicy::Default;
  std::string cache_dir;
  bool use_cache = true;
  bool cache_read_only = false;
  bool stage_narrow_operands = true;
};

using EngineKey = std::tuple<int, int, std::string, bool, bool, bool>;

std::mutex g_mutex;
Settings g_settings;
// Deliberately never freed: destroying engines at interpreter exit would unload modules after the
// frameworks may have torn the CUDA context down.
std::map<EngineKey, swz::Engine*>* g_engines = new std::map<EngineKey, swz::Engine*>();

long long get_int(const nb::dict& d, const char* key, long long fallback) {
  return d.contains(key) ? nb::cast<long long>(d[key]) : fallback;
}
std::string get_str(const nb::dict& d, const char* key, const std::string& fallback) {
  return d.contains(key) ? nb::cast<std::string>(d[key]) : fallback;
}
swz::MatrixOrder get_order(const nb::dict& d, const char* key) {
  const std::string s = get_str(d, key, "row");
  if (s == "row") return swz::MatrixOrder::RowMajor;
  if (s == "col") return swz::MatrixOrder::ColMajor;
  throw swz::Error(swz::ErrorKind::InvalidArgument,
                   std::string(key) + ": '" + s + "' is not a storage order; use \"row\" or \"col\"");
}

CUstream as_stream(std::uint64_t handle) { return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(handle)); }

nb::dict counters_of(swz::Engine& e) {
  const swz::EngineCounters c = e.counters();
  const swz::CacheCounters cc = e.cache().counters();
  nb::dict r;
  r["compiles"] = c.compiles;
  r["kernel_loads"] = c.kernel_loads;
  r["tuned_hits"] = c.tuned_hits;
  r["tuned_misses"] = c.tuned_misses;
  r["tunes"] = c.tunes;
  r["benchmark_runs"] = c.benchmark_runs;
  r["launches"] = c.launches;
  r["cache_hits"] = cc.hits;
  r["cache_misses"] = cc.misses;
  r["cache_builds"] = cc.builds;
  r["cache_tuning_hits"] = cc.tuning_hits;
  r["cache_tuning_misses"] = cc.tuning_misses;
  return r;
}

}  // namespace

swz::Engine& engine_for(int device) {
  if (device < 0)
    throw swz::Error(swz::ErrorKind::InvalidArgument, "device: " + std::to_string(device) + " is not a device ordinal");
  std::lock_guard<std::mutex> lock(g_mutex);
  const Settings& s = g_settings;
  const EngineKey key{device, static_cast<int>(s.policy), s.cache_dir, s.use_cache, s.cache_read_only,
                      s.stage_narrow_operands};
  auto it = g_engines->find(key);
  if (it != g_engines->end()) return *it->second;
  swz::EngineOptions o;
  o.device = device;
  o.policy = s.policy;
  o.cache_dir = s.cache_dir;
  o.use_cache = s.use_cache;
  o.cache_read_only = s.cache_read_only;
  o.stage_narrow_operands = s.stage_narrow_operands;
  auto* engine = new swz::Engine(o);
  g_engines->emplace(key, engine);
  return *engine;
}

std::string configured_cache_dir() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_settings.cache_dir;
}

swz::GemmProblem gemm_problem_from(const nb::dict& d) {
  swz::GemmProblem p;
  p.dtype = swz::parse_dtype(get_str(d, "dtype", "f32"));
  p.out_dtype = swz::parse_dtype(get_str(d, "out_dtype", swz::to_string(p.dtype)));
  p.m = get_int(d, "m", 0);
  p.n = get_int(d, "n", 0);
  p.k = get_int(d, "k", 0);
  p.a_order = get_order(d, "a_order");
  p.b_order = get_order(d, "b_order");
  p.c_order = get_order(d, "c_order");
  p.lda = get_int(d, "lda", 0);
  p.ldb = get_int(d, "ldb", 0);
  p.ldc = get_int(d, "ldc", 0);
  p.batch = get_int(d, "batch", 1);
  p.stride_a = get_int(d, "stride_a", 0);
  p.stride_b = get_int(d, "stride_b", 0);
  p.stride_c = get_int(d, "stride_c", 0);
  return p;
}

swz::TransposeProblem transpose_problem_from(const nb::dict& d) {
  swz::TransposeProblem p;
  p.dtype = swz::parse_dtype(get_str(d, "dtype", "f32"));
  p.rows = get_int(d, "rows", 0);
  p.cols = get_int(d, "cols", 0);
  p.ld_in = get_int(d, "ld_in", 0);
  p.ld_out = get_int(d, "ld_out", 0);
  p.batch = get_int(d, "batch", 1);
  p.stride_in = get_int(d, "stride_in", 0);
  p.stride_out = get_int(d, "stride_out", 0);
  return p;
}

void bind_engines(nb::module_& m) {
  m.def("configure", [](const std::string& policy, const std::string& cache_dir, bool use_cache,
                        bool cache_read_only, bool stage_narrow_operands) {
    Settings s;
    if (policy == "default") s.policy = swz::TunePolicy::Default;
    else if (policy == "tune_on_miss") s.policy = swz::TunePolicy::TuneOnMiss;
    else throw swz::Error(swz::ErrorKind::InvalidArgument,
                          "policy: '" + policy + "' is not a tune policy; use \"default\" or \"tune_on_miss\"");
    s.cache_dir = cache_dir;
    s.use_cache = use_cache;
    s.cache_read_only = cache_read_only;
    s.stage_narrow_operands = stage_narrow_operands;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_settings = s;
  });

  m.def("gemm", [](int device, const nb::dict& problem, std::uint64_t a, std::uint64_t b, std::uint64_t c,
                   float alpha, float beta, std::uint64_t stream, const std::string& config) {
    const swz::GemmProblem p = gemm_problem_from(problem);
    const swz::GemmConfig cfg = config.empty() ? swz::GemmConfig{} : swz::GemmConfig::parse(config);
    nb::gil_scoped_release release;
    swz::Engine& e = engine_for(device);
    e.gemm(p, a, b, c, alpha, beta, as_stream(stream), config.empty() ? nullptr : &cfg);
  });
  m.def("gemm_config", [](int device, const nb::dict& problem, std::uint64_t a, std::uint64_t b) {
    const swz::GemmProblem p = gemm_problem_from(problem);
    nb::gil_scoped_release release;
    return engine_for(device).gemm_config(p, a, b).to_string();
  });
  m.def("transpose", [](int device, const nb::dict& problem, std::uint64_t in, std::uint64_t out,
                        std::uint64_t stream, const std::string& config) {
    const swz::TransposeProblem p = transpose_problem_from(problem);
    const swz::TransposeConfig cfg = config.empty() ? swz::TransposeConfig{} : swz::TransposeConfig::parse(config);
    nb::gil_scoped_release release;
    engine_for(device).transpose(p, in, out, as_stream(stream), config.empty() ? nullptr : &cfg);
  });
  m.def("transpose_config", [](int device, const nb::dict& problem, std::uint64_t in, std::uint64_t out) {
    const swz::TransposeProblem p = transpose_problem_from(problem);
    nb::gil_scoped_release release;
    return engine_for(device).transpose_config(p, in, out).to_string();
  });
  m.def("counters", [](int device) { return counters_of(engine_for(device)); });
  m.def("engine_cache_directory", [](int device) { return engine_for(device).cache().stats().directory; });
  m.def("gemm_problem_key", [](const nb::dict& problem) {
    // Validation without a device: resolved() throws InvalidArgument / Unsupported as gemm() would.
    const swz::GemmProblem p = gemm_problem_from(problem).resolved();
    return p.key(p.max_vec_bytes(0, 0));
  });
  m.def("transpose_problem_key", [](const nb::dict& problem) {
    const swz::TransposeProblem p = transpose_problem_from(problem).resolved();
    return p.key(p.max_vec_bytes(0, 0));
  });

  // DLPack: the data address (byte offset included), shape, strides in elements, dtype and device.
  // Read-only access is asked for: JAX and other immutable producers export only that.
  m.def("dlpack_describe", [](nb::ndarray<nb::ro> t) {
    nb::dict r;
    nb::list shape, strides;
    for (size_t i = 0; i < t.ndim(); ++i) {
      shape.append(static_cast<long long>(t.shape(i)));
      strides.append(static_cast<long long>(t.stride(i)));
    }
    r["ptr"] = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t.data()));
    r["shape"] = nb::tuple(shape);
    r["strides"] = nb::tuple(strides);
    r["dtype_code"] = static_cast<int>(t.dtype().code);
    r["dtype_bits"] = static_cast<int>(t.dtype().bits);
    r["dtype_lanes"] = static_cast<int>(t.dtype().lanes);
    r["device_type"] = t.device_type();
    r["device_id"] = t.device_id();
    return r;
  });
}

}  // namespace swzpy
