// runtime/engine: the Engine's path for declared families (include/swzjit/family.hpp): configuration
// -> name expression -> cached cubin (keyed by the family's source bytes too) -> kernel loaded once ->
// launch with arguments evaluated from the family's expressions. The choice of configuration per problem
// is remembered like the built-ins' (runtime/engine/engine.cpp).
#include <memory>
#include <utility>
#include <vector>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "runtime/jit/jit_internal.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"
#include "swzjit/log.hpp"

namespace swz {
namespace {

// The pointer of each buffer the launch names, from the caller's map.
detail::PackedArgs pack_args(const Family& f, const std::vector<FamilyKernelArg>& list,
                             const std::map<std::string, DevicePtr>& buffers, bool packed) {
  const auto& defs = f.def().buffers;
  return detail::PackedArgs(list, [&](int index) {
    const std::string& name = defs[static_cast<std::size_t>(index)].name;
    const auto it = buffers.find(name);
    if (it == buffers.end() || it->second == 0) throw_invalid(f.name() + ": no device pointer for buffer '" + name + "'");
    return it->second;
  }, packed);
}

// An align's value: its buffer's pointer alignment, lowered to what `problem` gives for it, if anything.
long long align_value(const FamilyAlign& a, const FamilyValues& problem, const std::map<std::string, DevicePtr>& buffers) {
  const auto it = buffers.find(a.buffer);
  long long v = it == buffers.end() ? 1 : detail::pow2_alignment(it->second);
  const auto given = problem.find(a.name);
  if (given != problem.end() && given->second < v) v = given->second;
  return v;
}

// `problem` with the family's aligns measured from the buffers' pointers.
FamilyValues with_aligns(const Family& f, const FamilyValues& problem, const std::map<std::string, DevicePtr>& buffers) {
  if (f.def().aligns.empty()) return problem;
  FamilyValues p = problem;
  for (const FamilyAlign& a : f.def().aligns) p[a.name] = align_value(a, problem, buffers);
  return p;
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
  // A source of nothing but the library's templates is keyed like the built-ins' generated ones (the
  // templates hash and the name expression), so both paths share their cache entries.
  return detail::compile_through_cache(cache, req, 0, 0, on_compile,
                                       family.source_is_templates_only() ? std::string() : family.source_hash());
}

}  // namespace detail

KernelEntry Engine::compile_family(const Family& family, const FamilyValues& config, const std::string& arch_in,
                                   const FamilyValues& problem) {
  const std::string arch = arch_in.empty() ? impl_->arch() : arch_in;
  if (!is_known_arch(arch)) throw_invalid(family.name() + ": unknown arch \"" + arch + "\"");
  if (detail::arch_number(arch) < family.def().min_arch)
    throw Error(ErrorKind::Unsupported, family.name() + " needs sm_" + std::to_string(family.def().min_arch) +
                                            " or newer; " + arch + " was asked for");
  for (const FamilyParam& p : family.def().params) {
    const auto it = config.find(p.name);
    if (it == config.end()) throw_invalid(family.name() + " config: parameter " + p.name + " missing");
  }
  return detail::compile_family_kernel(*impl_->cache, family, family.name_expression(config, problem), arch,
                               [this] { ++impl_->compiles; });
}

TuningProblemKey Engine::family_tuning_key(const Family& family, const FamilyValues& problem) {
  return impl_->tuning_key("family:" + family.name(), family.problem_text(problem));
}

FamilyValues Engine::family_config(const Family& family, const FamilyValues& problem) {
  family.validate_problem(problem);
  const std::string key = detail::family_choice_key(family, problem);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->family_choices.find(key);
    if (it != impl_->family_choices.end()) return it->second.config;
  }
  const std::function<std::optional<FamilyValues>()> stored = [&]() -> std::optional<FamilyValues> {
    if (const auto winner = impl_->cache->load_winner(family_tuning_key(family, problem), family.definition_hash())) {
      try {
        FamilyValues c = family.parse_config(winner->config);
        if (family.check_config(c, problem).empty()) return c;
      } catch (const Error&) {
      }
    }
    // A cache tuned by a version that stored this operation's winners elsewhere (legacy_winner).
    const auto legacy = family.def().legacy_winner ? family.def().legacy_winner(problem) : std::nullopt;
    if (!legacy) return std::nullopt;
    const auto winner = impl_->cache->load_winner(impl_->tuning_key(legacy->operation, legacy->problem), legacy->space_id);
    if (!winner) return std::nullopt;
    std::optional<FamilyValues> c = legacy->parse(winner->config);
    if (c && family.check_config(*c, problem).empty()) return c;
    return std::nullopt;  // a stored winner that no longer parses or fits is a miss
  };
  const std::function<FamilyValues()> fallback = [&] { return family.default_config(problem); };
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
    log(LogLevel::Warn, "autotuning " + family.name() + " " + family.problem_text(problem) + " failed (" + why +
                            "); using the default " + family.config_text(d));
    return d;
  };
  bool remember = true;
  const FamilyValues chosen = detail::choose_config<FamilyValues>(
      *impl_, impl_->family_tuning, key, stored, !family.def().reference.kernel.empty(), tune, fallback, &remember);
  if (!remember) return chosen;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->family_choices.emplace(key, Impl::FamilyChoice{chosen, std::nullopt}).first->second.config;
}

namespace {

void launch_shape(const Kernel& k, const FamilyLaunchShape& s, CUstream stream, detail::PackedArgs& args) {
  k.launch(Dim3{s.grid[0], s.grid[1], s.grid[2]}, Dim3{s.block[0], s.block[1], s.block[2]},
           static_cast<unsigned>(s.dynamic_smem), stream, args.data());
}

}  // namespace

Kernel detail::family_kernel(Engine::Impl& impl, const Family& family, const std::string& name_expression) {
  const std::string id = family.definition_hash() + " " + name_expression;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    const auto it = impl.family_kernels.find(id);
    if (it != impl.family_kernels.end()) return it->second;
  }
  const std::string arch = impl.arch();
  const KernelEntry e =
      detail::compile_family_kernel(*impl.cache, family, name_expression, arch, [&impl] { ++impl.compiles; });
  Module m(detail::to_compiled(e, arch, name_expression), impl.options.device);
  Kernel k = m.kernel();
  ++impl.loads;
  std::lock_guard<std::mutex> lock(impl.mutex);
  return impl.family_kernels.emplace(id, k).first->second;
}

namespace {

void launch_family(Engine::Impl& impl, Kernel kernel, const Family& family, const FamilyLaunchShape& shape,
                   const std::vector<FamilyKernelArg>& list, const std::map<std::string, DevicePtr>& buffers,
                   CUstream stream, bool packed) {
  if (shape.dynamic_smem > 48 * 1024) kernel.set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
  detail::PackedArgs args = pack_args(family, list, buffers, packed);
  launch_shape(kernel, shape, stream, args);
  ++impl.launches;
}

}  // namespace

namespace {

// The hot path's key: the definition and the problem's values in canonical order, the aligns measured
// from the pointers (the alignment class); false when `problem` does not name exactly the family's dims
// (and perhaps aligns): the slow path then says what is wrong.
bool problem_id(const Family& family, const FamilyValues& problem, const std::map<std::string, DevicePtr>& buffers,
                Engine::Impl::FamilyProblemId* id) {
  const std::vector<std::string>& names = family.problem_names();
  const std::vector<FamilyAlign>& aligns = family.def().aligns;
  id->first = family.definition_hash();
  id->second.clear();
  id->second.reserve(names.size());
  std::size_t found = 0;
  const std::size_t dims = names.size() - aligns.size();  // problem_names(): the dims, then the aligns
  for (std::size_t i = 0; i < dims; ++i) {
    const auto it = problem.find(names[i]);
    if (it == problem.end()) return false;
    id->second.push_back(it->second);
    ++found;
  }
  for (const FamilyAlign& a : aligns) {
    found += problem.count(a.name);
    id->second.push_back(align_value(a, problem, buffers));
  }
  return found == problem.size();
}

}  // namespace

void Engine::run_family(const Family& family, const FamilyValues& problem_in,
                        const std::map<std::string, DevicePtr>& buffers, CUstream stream, const FamilyValues* config) {
  Impl::FamilyProblemId id;
  const bool memo = config == nullptr && problem_id(family, problem_in, buffers, &id);
  if (memo) {
    std::shared_ptr<const Impl::FamilyPrepared> prepared;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      const auto it = impl_->family_prepared.find(id);
      if (it != impl_->family_prepared.end()) prepared = it->second;
    }
    if (prepared) {  // validated, chosen, compiled and loaded before: only the buffers are new
      check_buffers(family, buffers);
      detail::PackedArgs args = pack_args(family, prepared->args, buffers, family.def().launch.packed);
      launch_shape(prepared->kernel, prepared->shape, stream, args);
      ++impl_->launches;
      return;
    }
  }
  const FamilyValues problem = with_aligns(family, problem_in, buffers);
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
  if (detail::arch_number(impl_->arch()) < family.def().min_arch)
    throw Error(ErrorKind::Unsupported, family.name() + " needs sm_" + std::to_string(family.def().min_arch) +
                                            " or newer; this GPU is " + impl_->arch());
  const FamilyLaunchShape shape = family.shape(cfg, problem);
  Kernel k = detail::family_kernel(*impl_, family, shape.name_expression);
  if (memo) {
    // Only a remembered choice is prepared (not the default a call runs while another thread tunes).
    bool remembered;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      remembered = impl_->family_choices.count(detail::family_choice_key(family, problem)) > 0;
    }
    if (remembered) {
      if (shape.dynamic_smem > 48 * 1024) k.set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
      auto prepared = std::make_shared<const Impl::FamilyPrepared>(
          Impl::FamilyPrepared{k, shape, family.kernel_args(cfg, problem)});
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->family_prepared.emplace(id, prepared);
    }
  }
  launch_family(*impl_, k, family, shape, family.kernel_args(cfg, problem), buffers, stream, family.def().launch.packed);
}

void Engine::run_family_reference(const Family& family, const FamilyValues& problem_in,
                                  const std::map<std::string, DevicePtr>& buffers, CUstream stream) {
  const FamilyValues problem = with_aligns(family, problem_in, buffers);
  family.validate_problem(problem);
  check_buffers(family, buffers);
  const FamilyLaunchShape shape = family.reference_shape(problem);
  const Kernel k = detail::family_kernel(*impl_, family, shape.name_expression);
  launch_family(*impl_, k, family, shape, family.reference_args(problem), buffers, stream, family.def().reference.packed);
}

}  // namespace swz
