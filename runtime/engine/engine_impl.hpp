// runtime/engine (internal): the Engine's state (include/swzjit/engine.hpp), shared by its declared-family
// path (runtime/engine/engine_family.cpp) and the typed transpose API over it (runtime/engine/engine.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "runtime/engine/engine_tune_gate.hpp"
#include "swzjit/engine.hpp"

namespace swz {

namespace detail {
/// A cached kernel entry as swz::Module loads it.
inline CompiledKernel to_compiled(const KernelEntry& e, const std::string& arch, const std::string& name_expression) {
  CompiledKernel k;
  k.image = e.image;
  k.is_ptx = e.is_ptx;
  k.arch = arch;
  k.name_expression = name_expression;
  k.lowered_name = e.lowered_name;
  return k;
}

/// One kernel of a declared family's source (a candidate or the reference), through the cache; the key
/// covers the source bytes. Threads and shared memory depend on the problem through expressions, so
/// the entry records 0 and every launch evaluates them (runtime/engine/engine_family.cpp).
KernelEntry compile_family_kernel(Cache& cache, const Family& family, const std::string& name_expression,
                                  const std::string& arch, const std::function<void()>& on_compile);
/// The target a family's kernels are compiled for on `arch`: the arch itself, or its arch-specific
/// variant ("sm_90" -> "sm_90a") for a family that asks for it (FamilyDef::arch_specific).
std::string family_compile_arch(const Family& family, const std::string& arch);
/// Throws Error(Unsupported) unless `arch` lies in the family's [min_arch, max_arch]; `what` says what the
/// arch is ("this GPU is", "was asked for").
void check_family_arch(const Family& family, const std::string& arch, const std::string& what);
/// The key of a problem's remembered choice (Engine::Impl::family_choices).
inline std::string family_choice_key(const Family& f, const FamilyValues& problem) {
  return f.definition_hash() + " " + f.problem_text(problem);
}
}  // namespace detail

// A resolved transpose problem's numbers and alignment class: Engine::transpose's memo key.
using ProblemId = std::tuple<int, long long, long long, long long, long long, long long, long long, long long, int>;

struct Engine::Impl {
  EngineOptions options;
  std::unique_ptr<Cache> cache;
  std::string templates_hash;
  std::string nvrtc_version;
  // The device's arch, SM count and DRAM bandwidth, detected together on first use (arch(), sm_count(),
  // dram_gbps()); every GEMM and family call asks, so after the first they are read without a lock.
  std::once_flag device_once;
  std::string device_arch;
  int device_sms = 0;
  int device_dram_gbps = 0;
  mutable std::mutex mutex;
  // Engine::transpose's memo: per problem (its resolved numbers and alignment class, no strings built)
  // the transpose family's remembered choice, loaded, with its launch shape, so a repeated call is one
  // map lookup and a launch.
  struct TransposePrepared {
    Kernel kernel;
    Dim3 grid, block;  // no name expression: a hit copies nothing that allocates
    unsigned dynamic_smem = 0;
  };
  std::map<ProblemId, TransposePrepared> transpose_prepared;
  // Declared families: kernels by definition hash and config text; per problem (definition hash and
  // problem text) the chosen config and, once loaded, its kernel.
  struct FamilyChoice {
    FamilyValues config;
    std::optional<Kernel> kernel;
  };
  std::map<std::string, Kernel> family_kernels;
  std::map<std::string, FamilyChoice> family_choices;
  // run_family's hot path: per (definition hash, problem values in dims order) everything a launch of
  // the remembered choice needs, so a repeated call is one map lookup, the buffers' pointers and a launch.
  struct FamilyPrepared {
    Kernel kernel;
    FamilyLaunchShape shape;
    std::vector<FamilyKernelArg> args;
    std::vector<Kernel> then_kernels;  // FamilyDef::then, in order
    std::vector<FamilyLaunchShape> then_shapes;
    std::vector<std::vector<FamilyKernelArg>> then_args;
    std::size_t scratch_bytes = 0;          // Family::scratch_bytes of the config
    std::vector<long long> scratch_offsets;  // Family::scratch_offsets of the config
    // The tensor maps the kernel's / each then launch's arguments name (detail::tensor_map_shapes),
    // encoded over the run's pointers at each run.
    std::vector<FamilyTensorMapShape> maps;
    std::vector<std::vector<FamilyTensorMapShape>> then_maps;
    // A family with a program (FamilyDef::program): its plan's launches, loaded (then_* stay empty), and
    // what each run binds them with.
    std::vector<FamilyPlannedLaunch> planned;
    std::vector<Kernel> planned_kernels;
    FamilyValues config, problem;  // problem: with its aligns and the device's SM count
  };
  using FamilyProblemId = std::pair<std::string, std::vector<long long>>;
  std::map<FamilyProblemId, std::shared_ptr<const FamilyPrepared>> family_prepared;
  detail::TuneGate<std::string> family_tuning;
  // The scratch buffers' stream-ordered pool (a CUmemoryPool, created on first use and destroyed by its
  // deleter; runtime/engine/engine_family.cpp), the engine's own like the GEMM's.
  std::shared_ptr<void> family_pool;
  std::atomic<std::uint64_t> compiles{0}, loads{0}, tuned_hits{0}, tuned_misses{0}, tunes{0}, bench_runs{0},
      launches{0};

  /// The tuning key of `problem` (canonical text) for `operation` on this engine's device.
  TuningProblemKey tuning_key(std::string operation, std::string problem) const {
    const DeviceInfo info = device_info(options.device);
    TuningProblemKey k;
    k.operation = std::move(operation);
    k.problem = std::move(problem);
    k.device_name = info.name;
    k.arch = info.arch();
    k.sm_count = info.sm_count;
    k.nvrtc_version = nvrtc_version;
    k.templates_hash = templates_hash;
    return k;
  }

  /// The device's arch ("sm_90"), detected on first use (a failed detection is tried again next time).
  const std::string& arch() {
    detect_device();
    return device_arch;
  }
  /// The device's SM count (what family launches read as sm_count), detected on first use.
  int sm_count() {
    detect_device();
    return device_sms;
  }
  /// The device's peak DRAM bandwidth in GB/s (DeviceInfo::dram_gbps), detected on first use.
  int dram_gbps() {
    detect_device();
    return device_dram_gbps;
  }
  /// `problem` as a program family's default and space see it (kFamilySmCount, kFamilyDramGBps).
  FamilyValues with_this_device(const FamilyValues& problem) { return with_device(problem, sm_count(), dram_gbps()); }
  void detect_device() {
    std::call_once(device_once, [this] {
      const DeviceInfo info = device_info(options.device);
      device_arch = info.arch();
      device_sms = std::max(1, info.sm_count);
      device_dram_gbps = info.dram_gbps;  // >= 0 (device_info)
    });
  }
};

namespace detail {

/// The configuration for a problem the memo does not know yet, the same way for every family: the
/// stored winner (`stored` returns nullopt when none is cached or it no longer fits), else under
/// TunePolicy::TuneOnMiss (and `can_tune`) one tune per problem through the gate, else the default.
/// `*remember` is false when another thread is tuning the problem (its winner is remembered).
template <class Config, class Key>
Config choose_config(Engine::Impl& impl, TuneGate<Key>& gate, const Key& key,
                     const std::function<std::optional<Config>()>& stored, bool can_tune,
                     const std::function<Config()>& tune, const std::function<Config()>& fallback, bool* remember) {
  *remember = true;
  if (std::optional<Config> c = stored()) {
    ++impl.tuned_hits;
    return *c;
  }
  ++impl.tuned_misses;
  if (impl.options.policy == TunePolicy::TuneOnMiss && can_tune) return gate.template choose<Config>(key, tune, fallback, remember);
  return fallback();
}

/// What a caller of run_family can lend instead of the engine's scratch pool, as the errors of that pool
/// say it: "a FamilyWorkspace (Engine::family_workspace_size)", unless the thread's caller speaks in other
/// terms while a guard lives (Engine::gemm: its GemmWorkspace). Guards nest; each restores the one before.
class ScratchAdvice {
 public:
  explicit ScratchAdvice(const char* lend) noexcept;
  ~ScratchAdvice();
  ScratchAdvice(const ScratchAdvice&) = delete;
  ScratchAdvice& operator=(const ScratchAdvice&) = delete;
  /// The calling thread's advice now.
  static const char* lend() noexcept;

 private:
  const char* previous_;
};

/// The kernel of `name_expression` in `family`'s source, compiled (through the cache) and loaded once.
Kernel family_kernel(Engine::Impl& impl, const Family& family, const std::string& name_expression);

/// The tuner and the GEMM half count their work on the engine they serve (EngineCounters).
struct EngineAccess {
  static Engine::Impl& impl(Engine& engine) { return *engine.impl_; }
  static GemmState& gemm_state(Engine& engine) { return engine.gemm_state(); }
};
}  // namespace detail

}  // namespace swz
