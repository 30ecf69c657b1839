// runtime/engine: the Engine's path for declared families (include/swzjit/family.hpp): configuration
// -> name expression -> cached cubin (keyed by the family's source bytes too) -> kernel loaded once ->
// launch with arguments evaluated from the family's expressions. The choice of configuration per problem
// is remembered like the built-ins' (runtime/engine/engine.cpp).
#include <cstdio>
#include <vector>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace {

int arch_number(const std::string& arch) {
  // "sm_90a" -> 90
  int n = 0;
  for (std::size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
  return n;
}

std::string choice_key(const Family& f, const FamilyValues& problem) {
  return f.definition_hash() + " " + f.problem_text(problem);
}

struct ArgStorage {
  std::vector<unsigned long long> ptrs;
  std::vector<long long> i64;
  std::vector<int> i32;
  std::vector<void*> args;
};

void fill_args(const Family& f, const std::vector<FamilyKernelArg>& list,
               const std::map<std::string, DevicePtr>& buffers, ArgStorage& s) {
  const auto& defs = f.def().buffers;
  s.ptrs.reserve(list.size());
  s.i64.reserve(list.size());
  s.i32.reserve(list.size());
  for (const FamilyKernelArg& a : list) {
    if (a.kind == FamilyKernelArg::Buffer) {
      const std::string& name = defs[static_cast<std::size_t>(a.buffer)].name;
      const auto it = buffers.find(name);
      if (it == buffers.end() || it->second == 0)
        throw_invalid(f.name() + ": no device pointer for buffer '" + name + "'");
      s.ptrs.push_back(it->second);
      s.args.push_back(&s.ptrs.back());
    } else if (a.kind == FamilyKernelArg::Int32) {
      s.i32.push_back(static_cast<int>(a.value));
      s.args.push_back(&s.i32.back());
    } else {
      s.i64.push_back(a.value);
      s.args.push_back(&s.i64.back());
    }
  }
}

void check_buffers(const Family& f, const std::map<std::string, DevicePtr>& buffers) {
  for (const auto& kv : buffers) {
    bool known = false;
    for (const FamilyBuffer& b : f.def().buffers) known = known || b.name == kv.first;
    if (!known) throw_invalid(f.name() + ": unknown buffer '" + kv.first + "'");
  }
}

}  // namespace

namespace detail {

KernelEntry compile_family_kernel(Cache& cache, const Family& family, const std::string& name_expression,
                                  const std::string& arch, const std::function<void()>& on_compile) {
  CompileRequest req;
  req.source = family.def().source;
  req.source_name = family.def().source_name;
  req.name_expression = name_expression;
  req.arch = arch;
  return detail::compile_through_cache(cache, req, 0, 0, on_compile, family.source_hash());
}

}  // namespace detail

KernelEntry Engine::compile_family(const Family& family, const FamilyValues& config, const std::string& arch_in) {
  const std::string arch = arch_in.empty() ? impl_->arch() : arch_in;
  if (!is_known_arch(arch)) throw_invalid(family.name() + ": unknown arch \"" + arch + "\"");
  if (arch_number(arch) < family.def().min_arch)
    throw Error(ErrorKind::Unsupported, family.name() + " needs sm_" + std::to_string(family.def().min_arch) +
                                            " or newer; " + arch + " was asked for");
  for (const FamilyParam& p : family.def().params) {
    const auto it = config.find(p.name);
    if (it == config.end()) throw_invalid(family.name() + " config: parameter " + p.name + " missing");
  }
  return detail::compile_family_kernel(*impl_->cache, family, family.name_expression(config), arch,
                               [this] { ++impl_->compiles; });
}

TuningProblemKey Engine::family_tuning_key(const Family& family, const FamilyValues& problem) {
  const DeviceInfo info = device_info(impl_->options.device);
  TuningProblemKey k;
  k.operation = "family:" + family.name();
  k.problem = family.problem_text(problem);
  k.device_name = info.name;
  k.arch = info.arch();
  k.sm_count = info.sm_count;
  k.nvrtc_version = impl_->nvrtc_version;
  k.templates_hash = impl_->templates_hash;
  return k;
}

FamilyValues Engine::family_config(const Family& family, const FamilyValues& problem) {
  family.validate_problem(problem);
  const std::string key = choice_key(family, problem);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->family_choices.find(key);
    if (it != impl_->family_choices.end()) return it->second.config;
  }
  FamilyValues chosen;
  bool have = false;
  const auto winner = impl_->cache->load_winner(family_tuning_key(family, problem), family.definition_hash());
  if (winner) {
    try {
      chosen = family.parse_config(winner->config);
      have = family.check_config(chosen, problem).empty();
    } catch (const Error&) {
      have = false;  // a stored winner that no longer parses is a miss
    }
  }
  bool remember = true;
  if (have) {
    ++impl_->tuned_hits;
  } else {
    ++impl_->tuned_misses;
    const std::function<FamilyValues()> fallback = [&] { return family.default_config(problem); };
    if (impl_->options.policy == TunePolicy::TuneOnMiss && !family.def().reference.kernel.empty()) {
      const std::function<FamilyValues()> tune = [&] {
        std::string why;
        try {
          const TuneReport r = autotune_family(*this, family, problem);
          if (!r.winner.empty()) return family.parse_config(r.winner);
          why = "no candidate succeeded";
        } catch (const Error& e) {
          why = e.what();
        }
        const FamilyValues d = fallback();
        std::fprintf(stderr, "swzjit: warning: autotuning %s %s failed (%s); using the default %s\n",
                     family.name().c_str(), family.problem_text(problem).c_str(), why.c_str(),
                     family.config_text(d).c_str());
        return d;
      };
      chosen = impl_->family_tuning.choose<FamilyValues>(key, tune, fallback, &remember);
    } else {
      chosen = fallback();
    }
  }
  if (!remember) return chosen;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->family_choices.emplace(key, Impl::FamilyChoice{chosen, std::nullopt}).first->second.config;
}

namespace {

void launch_shape(const Kernel& k, const FamilyLaunchShape& s, CUstream stream, ArgStorage& args) {
  k.launch(Dim3{s.grid[0], s.grid[1], s.grid[2]}, Dim3{s.block[0], s.block[1], s.block[2]},
           static_cast<unsigned>(s.dynamic_smem), stream, args.args.data());
}

}  // namespace

void Engine::run_family(const Family& family, const FamilyValues& problem,
                        const std::map<std::string, DevicePtr>& buffers, CUstream stream, const FamilyValues* config) {
  family.validate_problem(problem);
  check_buffers(family, buffers);
  FamilyValues cfg;
  if (config) {
    cfg = *config;
    const std::string why = family.check_config(cfg, problem);
    if (!why.empty()) throw_invalid(family.name() + " config " + family.config_text(cfg) + ": " + why);
  } else {
    cfg = family_config(family, problem);
  }
  const std::string id = family.definition_hash() + " " + family.config_text(cfg);
  std::optional<Kernel> kernel;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->family_kernels.find(id);
    if (it != impl_->family_kernels.end()) kernel = it->second;
  }
  const FamilyLaunchShape shape = family.shape(cfg, problem);
  if (!kernel) {
    const std::string arch = impl_->arch();
    const KernelEntry e = compile_family(family, cfg, arch);
    Module m(detail::to_compiled(e, arch, shape.name_expression), impl_->options.device);
    kernel = m.kernel();
    ++impl_->loads;
    std::lock_guard<std::mutex> lock(impl_->mutex);
    kernel = impl_->family_kernels.emplace(id, *kernel).first->second;
  }
  if (shape.dynamic_smem > 48 * 1024) kernel->set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
  ArgStorage args;
  fill_args(family, family.kernel_args(cfg, problem), buffers, args);
  launch_shape(*kernel, shape, stream, args);
  ++impl_->launches;
}

void Engine::run_family_reference(const Family& family, const FamilyValues& problem,
                                  const std::map<std::string, DevicePtr>& buffers, CUstream stream) {
  family.validate_problem(problem);
  check_buffers(family, buffers);
  const FamilyLaunchShape shape = family.reference_shape(problem);
  const std::string id = family.definition_hash() + " reference";
  std::optional<Kernel> kernel;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->family_kernels.find(id);
    if (it != impl_->family_kernels.end()) kernel = it->second;
  }
  if (!kernel) {
    const std::string arch = impl_->arch();
    const KernelEntry e =
        detail::compile_family_kernel(*impl_->cache, family, shape.name_expression, arch, [this] { ++impl_->compiles; });
    Module m(detail::to_compiled(e, arch, shape.name_expression), impl_->options.device);
    kernel = m.kernel();
    ++impl_->loads;
    std::lock_guard<std::mutex> lock(impl_->mutex);
    kernel = impl_->family_kernels.emplace(id, *kernel).first->second;
  }
  if (shape.dynamic_smem > 48 * 1024) kernel->set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
  ArgStorage args;
  fill_args(family, family.reference_args(problem), buffers, args);
  launch_shape(*kernel, shape, stream, args);
  ++impl_->launches;
}

}  // namespace swz
