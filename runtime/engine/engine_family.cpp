// runtime/engine: the Engine's path for declared families (include/swzjit/family.hpp): configuration
// -> name expression -> cached cubin (keyed by the family's source bytes too) -> kernel loaded once ->
// launch with arguments evaluated from the family's expressions. The choice of configuration per problem
// is remembered like the built-ins' (runtime/engine/engine.cpp).
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/driver/driver_api.hpp"
#include "runtime/engine/engine_impl.hpp"
#include "runtime/engine/stream_scratch.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "runtime/jit/jit_internal.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"
#include "swzjit/log.hpp"

namespace swz {

namespace {
thread_local const char* t_scratch_lend = nullptr;  // detail::ScratchAdvice's, per thread
}  // namespace

detail::ScratchAdvice::ScratchAdvice(const char* lend) noexcept : previous_(t_scratch_lend) { t_scratch_lend = lend; }
detail::ScratchAdvice::~ScratchAdvice() { t_scratch_lend = previous_; }
const char* detail::ScratchAdvice::lend() noexcept {
  return t_scratch_lend ? t_scratch_lend : "a FamilyWorkspace (Engine::family_workspace_size)";
}

namespace {

// The pointer of each buffer the launch names: from the caller's map, a scratch buffer's from the
// run's scratch allocation (`scratch` + its offset).
detail::PackedArgs pack_args(const Family& f, const std::vector<FamilyKernelArg>& list,
                             const std::map<std::string, DevicePtr>& buffers, bool packed,
                             const std::vector<FamilyTensorMapShape>& maps, int device, DevicePtr scratch = 0,
                             const std::vector<long long>* offsets = nullptr) {
  const auto& defs = f.def().buffers;
  return detail::PackedArgs(list, [&](int index) {
    const std::size_t i = static_cast<std::size_t>(index);
    if (defs[i].role == BufferRole::Scratch) {
      if (scratch == 0 || offsets == nullptr || (*offsets)[i] < 0)
        throw Error(ErrorKind::Internal, f.name() + ": no scratch placed for buffer '" + defs[i].name + "' (please report)");
      return scratch + static_cast<DevicePtr>((*offsets)[i]);
    }
    const std::string& name = defs[i].name;
    const auto it = buffers.find(name);
    if (it == buffers.end() || it->second == 0) throw_invalid(f.name() + ": no device pointer for buffer '" + name + "'");
    return it->second;
  }, packed, &maps, &f, device);
}

// The engine's scratch pool, created on first use; it keeps what it has (release threshold: never) so a
// repeated run allocates without a driver call into the OS.
CUmemoryPool family_pool(Engine::Impl& impl) {
  std::lock_guard<std::mutex> lock(impl.mutex);
  if (impl.family_pool) return static_cast<CUmemoryPool>(impl.family_pool.get());
  const int device = impl.options.device;
  CUmemoryPool pool =
      detail::create_keeping_pool(device, "family scratch", std::string("; or lend ") + detail::ScratchAdvice::lend());
  impl.family_pool = std::shared_ptr<void>(pool, [device](void* p) {
    detail::ContextGuard g(device, std::nothrow);
    if (g.ok()) detail::loaded_driver_api()->cuMemPoolDestroy(static_cast<CUmemoryPool>(p));
  });
  return pool;
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
    const FamilyBuffer* known = nullptr;
    for (const FamilyBuffer& b : f.def().buffers)
      if (b.name == kv.first) known = &b;
    if (!known) throw_invalid(f.name() + ": unknown buffer '" + kv.first + "'");
    if (known->role == BufferRole::Scratch)
      throw_invalid(f.name() + ": buffer '" + kv.first + "' is scratch: the engine places it (lend memory for it "
                    "with a FamilyWorkspace, sized by Engine::family_workspace_size)");
  }
}

}  // namespace

namespace detail {

std::string family_compile_arch(const Family& family, const std::string& arch) { return family.target_arch(arch); }

void check_family_arch(const Family& family, const std::string& arch, const std::string& what) {
  const int n = detail::arch_number(arch);
  const FamilyDef& d = family.def();
  if (n < d.min_arch)
    throw Error(ErrorKind::Unsupported, family.name() + " needs sm_" + std::to_string(d.min_arch) + " or newer; " +
                                            what + " " + arch);
  if (d.max_arch != 0 && n > d.max_arch)
    throw Error(ErrorKind::Unsupported, family.name() + " runs on sm_" + std::to_string(d.min_arch) +
                                            (d.max_arch != d.min_arch ? " to sm_" + std::to_string(d.max_arch) : std::string()) +
                                            " only; " + what + " " + arch);
}

KernelEntry compile_family_kernel(Cache& cache, const Family& family, const std::string& name_expression,
                                  const std::string& arch, const std::function<void()>& on_compile) {
  CompileRequest req;
  req.source = family.def().source;
  req.source_name = family.def().source_name;
  req.name_expression = name_expression;
  req.arch = family_compile_arch(family, arch);
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
  detail::check_family_arch(family, arch, "was asked for:");
  for (const FamilyParam& p : family.def().params) {
    const auto it = config.find(p.name);
    if (it == config.end()) throw_invalid(family.name() + " config: parameter " + p.name + " missing");
  }
  if (family.def().program && family.def().program->before_compile) family.def().program->before_compile(config, problem);
  return detail::compile_family_kernel(*impl_->cache, family, family.name_expression(config, problem), arch,
                               [this] { ++impl_->compiles; });
}

TuningProblemKey Engine::family_tuning_key(const Family& family, const FamilyValues& problem) {
  return impl_->tuning_key("family:" + family.name(), family.problem_text(problem));
}

FamilyValues Engine::family_config(const Family& family, const FamilyValues& problem_in) {
  family.validate_problem(problem_in);
  // A program's default, space and plans follow the device (FamilyProgram): they see its SM count and
  // DRAM bandwidth.
  const FamilyValues problem = family.def().program ? impl_->with_this_device(problem_in) : problem_in;
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
  Module m(detail::to_compiled(e, detail::family_compile_arch(family, arch), name_expression), impl.options.device);
  Kernel k = m.kernel();
  std::lock_guard<std::mutex> lock(impl.mutex);
  const auto placed = impl.family_kernels.emplace(id, k);
  if (placed.second) ++impl.loads;  // counted when kept (two threads that loaded it at once keep one)
  return placed.first->second;
}

namespace {

// Everything a run of `cfg` on `problem` launches: the kernel, the then launches, the scratch layout.
Engine::Impl::FamilyPrepared prepare_run(Engine::Impl& impl, const Family& family, const FamilyValues& cfg,
                                         const FamilyValues& problem_in) {
  const FamilyValues problem = with_sm_count(problem_in, impl.sm_count());  // launches may read sm_count
  if (family.def().program) {
    // The program's launches, loaded; each run binds them (FamilyProgram::bind) over its pointers.
    const FamilyPlan plan = family.plan(cfg, problem);
    if (family.def().program->before_compile) family.def().program->before_compile(cfg, problem);
    std::vector<Kernel> kernels;
    for (const FamilyPlannedLaunch& l : plan.launches) {
      Kernel k = detail::family_kernel(impl, family, l.shape.name_expression);
      if (l.shape.dynamic_smem > 48 * 1024) k.set_max_dynamic_smem(static_cast<int>(l.shape.dynamic_smem));
      kernels.push_back(k);
    }
    Engine::Impl::FamilyPrepared p{kernels.front(), plan.launches.front().shape, {}, {}, {}, {}, 0, {}, {}, {}, {}, {}, {}, {}};
    p.planned_kernels = std::move(kernels);
    p.planned = plan.launches;
    p.scratch_bytes = plan.scratch_bytes;
    p.config = cfg;
    p.problem = problem;
    return p;
  }
  const FamilyLaunchShape shape = family.shape(cfg, problem);
  Kernel kernel = detail::family_kernel(impl, family, shape.name_expression);
  if (shape.dynamic_smem > 48 * 1024) kernel.set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
  Engine::Impl::FamilyPrepared p{kernel, shape, family.kernel_args(cfg, problem), {}, {}, {}, 0, {}, {}, {}, {}, {}, {}, {}};
  p.maps = detail::tensor_map_shapes(family, p.args, cfg, problem);
  for (std::size_t i = 0; i < family.then_count(); ++i) {
    p.then_shapes.push_back(family.then_shape(i, cfg, problem));
    Kernel k = detail::family_kernel(impl, family, p.then_shapes.back().name_expression);
    if (p.then_shapes.back().dynamic_smem > 48 * 1024)
      k.set_max_dynamic_smem(static_cast<int>(p.then_shapes.back().dynamic_smem));
    p.then_kernels.push_back(k);
    p.then_args.push_back(family.then_args(i, cfg, problem));
    p.then_maps.push_back(detail::tensor_map_shapes(family, p.then_args.back(), cfg, problem));
  }
  p.scratch_bytes = family.scratch_bytes(cfg, problem);
  if (p.scratch_bytes > 0) p.scratch_offsets = family.scratch_offsets(cfg, problem);
  return p;
}

// One run: the scratch placed (the caller's workspace or the pool's), then every launch in stream order.
void execute(Engine::Impl& impl, const Family& family, const Engine::Impl::FamilyPrepared& p,
             const std::map<std::string, DevicePtr>& buffers, const FamilyScalars& scalars, CUstream stream,
             const FamilyWorkspace& workspace) {
  std::optional<detail::StreamScratch> own;
  DevicePtr scratch = 0;
  if (p.scratch_bytes > 0) {
    if (workspace.ptr != 0) {
      if (workspace.bytes < p.scratch_bytes)
        throw_invalid(family.name() + ": the workspace of " + std::to_string(workspace.bytes) + " bytes is too small; " +
                      "this run needs " + std::to_string(p.scratch_bytes) + " bytes (Engine::family_workspace_size)");
      if (workspace.ptr % static_cast<DevicePtr>(kFamilyScratchAlign) != 0)
        throw_invalid(family.name() + ": the workspace must be " + std::to_string(kFamilyScratchAlign) + "-byte aligned");
      scratch = workspace.ptr;
    } else {
      own.emplace(p.scratch_bytes, impl.options.device, stream, family_pool(impl),
                  "the scratch of family " + family.name() + " (free device memory, or lend " +
                      detail::ScratchAdvice::lend() + ")");
      scratch = own->ptr();
    }
  }
  if (family.def().program) {
    FamilyRunBinding binding;
    binding.buffers.assign(family.def().buffers.size(), 0);
    for (std::size_t i = 0; i < binding.buffers.size(); ++i) {
      const FamilyBuffer& b = family.def().buffers[i];
      if (b.role == BufferRole::Scratch) continue;  // a program's scratch is the run's one allocation
      const auto it = buffers.find(b.name);
      if (it == buffers.end() || it->second == 0) throw_invalid(family.name() + ": no device pointer for buffer '" + b.name + "'");
      binding.buffers[i] = it->second;
    }
    binding.scratch = scratch;
    family.with_scalars({}, scalars);  // names an unknown scalar, refuses a value that is not finite
    for (const FamilyScalar& sc : family.def().scalars) {
      const auto it = scalars.find(sc.name);
      binding.scalars.push_back(it == scalars.end() ? sc.default_value : it->second);
    }
    binding.device = impl.options.device;
    binding.sm_count = static_cast<int>(p.problem.at(kFamilySmCount));
    std::vector<FamilyLaunchParams> bound = family.bind(p.config, p.problem, binding);
    if (bound.size() != p.planned.size())
      throw Error(ErrorKind::Internal, family.name() + ": the program bound " + std::to_string(bound.size()) +
                                           " launches of the " + std::to_string(p.planned.size()) + " it planned (please report)");
    for (std::size_t i = 0; i < bound.size(); ++i) {
      std::vector<void*> args;
      for (auto& param : bound[i].params) args.push_back(param.data());
      const FamilyLaunchShape& s = p.planned[i].shape;
      const Dim3 grid{s.grid[0], s.grid[1], s.grid[2]}, block{s.block[0], s.block[1], s.block[2]};
      if (p.planned[i].dependent && i > 0) {
        p.planned_kernels[i].launch_dependent(grid, block, static_cast<unsigned>(s.dynamic_smem), stream, args.data());
      } else {
        p.planned_kernels[i].launch(grid, block, static_cast<unsigned>(s.dynamic_smem), stream, args.data());
      }
      ++impl.launches;
    }
    return;
  }
  const bool scaled = !family.def().scalars.empty();
  const auto run = [&](const Kernel& k, const FamilyLaunchShape& s, const std::vector<FamilyKernelArg>& list, bool packed,
                       const std::vector<FamilyTensorMapShape>& maps) {
    // Only a family with scalars copies its argument list (to set them).
    const int device = impl.options.device;
    detail::PackedArgs args = scaled ? pack_args(family, family.with_scalars(list, scalars), buffers, packed, maps, device,
                                                 scratch, &p.scratch_offsets)
                                     : pack_args(family, list, buffers, packed, maps, device, scratch, &p.scratch_offsets);
    launch_shape(k, s, stream, args);
    ++impl.launches;
  };
  if (!scaled && !scalars.empty()) family.with_scalars({}, scalars);  // names the unknown scalar
  run(p.kernel, p.shape, p.args, family.def().launch.packed, p.maps);
  for (std::size_t i = 0; i < p.then_kernels.size(); ++i)
    run(p.then_kernels[i], p.then_shapes[i], p.then_args[i], family.def().then[i].packed, p.then_maps[i]);
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

void Engine::run_family(const Family& family, const FamilyValues& problem, const std::map<std::string, DevicePtr>& buffers,
                        CUstream stream, const FamilyValues* config) {
  run_family(family, problem, buffers, FamilyScalars{}, stream, config, FamilyWorkspace{});
}

void Engine::run_family(const Family& family, const FamilyValues& problem_in,
                        const std::map<std::string, DevicePtr>& buffers, const FamilyScalars& scalars, CUstream stream,
                        const FamilyValues* config, const FamilyWorkspace& workspace) {
  Impl::FamilyProblemId id;
  bool memo = problem_id(family, problem_in, buffers, &id);
  if (memo && config) {
    // A configuration the caller names (the typed Engine::gemm's choice on every call): remembered under
    // the problem and its values, after a marker no problem value takes.
    memo = config->size() == family.def().params.size();
    id.second.push_back(-1);
    for (const FamilyParam& fp : family.def().params) {
      const auto it = config->find(fp.name);
      if (it == config->end()) {
        memo = false;
        break;
      }
      id.second.push_back(it->second);
    }
  }
  if (memo) {
    std::shared_ptr<const Impl::FamilyPrepared> prepared;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      const auto it = impl_->family_prepared.find(id);
      if (it != impl_->family_prepared.end()) prepared = it->second;
    }
    if (prepared) {  // validated, chosen, compiled and loaded before: only the buffers are new
      check_buffers(family, buffers);
      execute(*impl_, family, *prepared, buffers, scalars, stream, workspace);
      return;
    }
  }
  const FamilyValues problem = with_aligns(family, problem_in, buffers);
  family.validate_problem(problem);
  check_buffers(family, buffers);
  FamilyValues cfg;
  if (config) {
    cfg = *config;
    const std::string why =
        family.check_config(cfg, family.def().program ? with_sm_count(problem, impl_->sm_count()) : problem);
    if (!why.empty()) throw_invalid(family.name() + " config " + family.config_text(cfg) + ": " + why);
  } else {
    cfg = family_config(family, problem);
  }
  detail::check_family_arch(family, impl_->arch(), "this GPU is");
  auto prepared = std::make_shared<const Impl::FamilyPrepared>(prepare_run(*impl_, family, cfg, problem));
  if (memo) {
    // Only a named or remembered choice is prepared (not the default a call runs while another thread tunes).
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (config || impl_->family_choices.count(detail::family_choice_key(family, problem)) > 0)
      impl_->family_prepared.emplace(id, prepared);
  }
  execute(*impl_, family, *prepared, buffers, scalars, stream, workspace);
}

std::size_t Engine::family_workspace_size(const Family& family, const FamilyValues& problem_in,
                                          const std::map<std::string, DevicePtr>& buffers, const FamilyValues* config) {
  FamilyValues problem = problem_in;
  for (const FamilyAlign& a : family.def().aligns) {
    const auto it = buffers.find(a.buffer);
    if (it != buffers.end()) problem[a.name] = align_value(a, problem_in, buffers);
    else if (!problem.count(a.name)) problem[a.name] = kFamilyMaxAlign;
  }
  family.validate_problem(problem);
  if (!family.def().program && std::none_of(family.def().buffers.begin(), family.def().buffers.end(),
                                             [](const FamilyBuffer& b) { return b.role == BufferRole::Scratch; }))
    return 0;
  // A program's scratch may follow the device (FamilyProgram::plan): sized for this one.
  const FamilyValues sized = family.def().program ? with_sm_count(problem, impl_->sm_count()) : problem;
  if (config) {
    const std::string why = family.check_config(*config, sized);
    if (!why.empty()) throw_invalid(family.name() + " config " + family.config_text(*config) + ": " + why);
    return family.scratch_bytes(*config, sized);
  }
  return family.scratch_bytes(family_config(family, problem), sized);
}

void Engine::run_family_reference(const Family& family, const FamilyValues& problem,
                                  const std::map<std::string, DevicePtr>& buffers, CUstream stream) {
  run_family_reference(family, problem, buffers, FamilyScalars{}, stream);
}

void Engine::run_family_reference(const Family& family, const FamilyValues& problem_in,
                                  const std::map<std::string, DevicePtr>& buffers, const FamilyScalars& scalars,
                                  CUstream stream) {
  const FamilyValues problem = with_aligns(family, problem_in, buffers);
  family.validate_problem(problem);
  check_buffers(family, buffers);
  const FamilyValues launch_problem = with_sm_count(problem, impl_->sm_count());
  const FamilyLaunchShape shape = family.reference_shape(launch_problem);
  Kernel k = detail::family_kernel(*impl_, family, shape.name_expression);
  if (shape.dynamic_smem > 48 * 1024) k.set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
  const std::vector<FamilyKernelArg> list = family.with_scalars(family.reference_args(launch_problem), scalars);
  detail::PackedArgs args =
      pack_args(family, list, buffers, family.def().reference.packed, detail::tensor_map_shapes(family, list, {}, problem),
                impl_->options.device);
  launch_shape(k, shape, stream, args);
  ++impl_->launches;
}

}  // namespace swz
