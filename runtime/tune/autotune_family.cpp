// runtime/tune: declared families in the autotuner (autotune_family, include/swzjit/autotune.hpp): the
// space under the family's constraints and static bank analysis, candidates compiled by the engine, the
// family's reference kernel as the one support kernel, and a Hello that carries the definition's text so
// the worker rebuilds the same family (runtime/worker/worker_family.cpp). The loop is runtime/tune/autotune.cpp.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "runtime/tune/autotune_tuner.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace {

constexpr std::uint32_t kInputSeed = 0x5EEDu;  // every tune checks against the same data

}  // namespace

TuneReport autotune_family(Engine& engine, const Family& family, const FamilyValues& problem,
                           const TuneOptions& options) {
  family.validate_problem(problem);
  detail::validate_tune_options(options);
  if (!options.inject.empty() && !family.def().stand_in)
    throw_invalid("autotune " + family.name() + ": inject needs the family's stand_in kernels (FamilyDef::stand_in)");
  if (family.def().reference.kernel.empty())
    throw_invalid("autotune " + family.name() +
                  ": the family has no reference kernel, so no candidate could be verified (add \"reference = ...\")");
  // Fails early, with the dimension named, when a buffer or the reference launch cannot be evaluated.
  family.buffer_elements(problem);
  family.reference_shape(problem);

  detail::worker::HelloRequest hello;
  hello.kind = detail::worker::ProblemKind::Family;
  hello.family.definition = family.def().to_text();
  hello.family.problem = family.problem_text(problem);
  hello.family.seed = kInputSeed;

  const auto prepare = [&] {
    detail::TuneSetup setup;
    setup.problem = family.problem_text(problem);
    // Winners are valid for this exact definition; extra configs and kept conflicts widen the space.
    std::string space_id = family.definition_hash();
    if (options.keep_conflicted) space_id += "+conflicted";
    for (const std::string& e : options.extra_configs) space_id += "+" + e;
    setup.space_hash = options.keep_conflicted || !options.extra_configs.empty() ? content_hash(space_id) : space_id;

    std::vector<FamilyValues> kept;
    std::set<std::string> names;
    for (const FamilyValues& c : family.space(problem)) {
      const FamilyBankReport bank = family.analyze(c, problem);
      if (bank.analysed && bank.excess_wavefronts > 0 && !options.keep_conflicted) {
        setup.rejected.emplace_back(family.config_text(c), "bank analysis: " + std::to_string(bank.excess_wavefronts) +
                                                               " excess wavefronts");
        continue;
      }
      names.insert(family.config_text(c));
      kept.push_back(c);
    }
    for (const std::string& text : options.extra_configs) {
      const FamilyValues c = family.parse_config(text);
      const std::string why = family.check_config(c, problem);
      if (!why.empty()) throw_invalid("autotune " + family.name() + ": extra config " + text + ": " + why);
      if (names.insert(family.config_text(c)).second) kept.push_back(c);
    }
    // What the Engine runs when nothing is tuned is always a candidate.
    const FamilyValues def = family.default_config(problem);
    int default_index = -1;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (kept[i] == def) default_index = static_cast<int>(i);
    if (default_index < 0) {
      const std::string text = family.config_text(def);
      for (auto it = setup.rejected.begin(); it != setup.rejected.end(); ++it)
        if (it->first == text) {
          setup.rejected.erase(it);
          break;
        }
      kept.push_back(def);
      default_index = static_cast<int>(kept.size()) - 1;
    }

    auto configs = std::make_shared<const std::vector<FamilyValues>>(std::move(kept));
    detail::TuneFamily& f = setup.family;
    for (const FamilyValues& c : *configs) f.configs.push_back(family.config_text(c));
    f.default_index = default_index;
    f.compile = [&engine, &family, configs, problem](int i, const std::string& arch) {
      return engine.compile_family(family, (*configs)[static_cast<std::size_t>(i)], arch, problem);
    };
    f.threads = [&family, configs, problem](int i) {
      return family.shape((*configs)[static_cast<std::size_t>(i)], problem).threads;
    };
    f.shape = [&family, configs, problem](int i, detail::worker::BenchJob& job) {
      const FamilyLaunchShape s = family.shape((*configs)[static_cast<std::size_t>(i)], problem);
      for (int d = 0; d < 3; ++d) {
        job.grid[d] = s.grid[d];
        job.block[d] = s.block[d];
      }
      job.dynamic_smem = static_cast<std::uint32_t>(s.dynamic_smem);
    };
    Cache& cache = engine.cache();
    f.support.push_back([&cache, &family, problem](const std::string& arch, std::atomic<int>* compiles) {
      return detail::compile_family_kernel(cache, family, family.reference_name_expression(problem), arch,
                                           [compiles] { if (compiles) ++*compiles; });
    });
    f.make_support = [](const std::vector<KernelEntry>& e, const std::string& arch) {
      detail::worker::SupportRequest req;
      req.reference = detail::worker::KernelImage{e[0].image, e[0].is_ptx, arch, e[0].lowered_name};
      return req;
    };
    if (family.def().stand_in)
      f.inject = [&cache, &family, problem](int, const std::string& mode, const std::string& arch,
                                            std::atomic<int>* compiles) {
        const FamilyStandIn s = family.def().stand_in(mode, problem);
        CompileRequest req;
        req.source = s.source;
        req.source_name = "swz_stand_in.cu";
        req.name_expression = s.name_expression;
        req.arch = arch;
        return detail::compile_through_cache(cache, req, 0, 0, [compiles] { if (compiles) ++*compiles; });
      };
    f.tuning_key = [&engine, &family, problem] { return engine.family_tuning_key(family, problem); };
    return setup;
  };
  return detail::run_tune(engine, options, hello, prepare);
}

}  // namespace swz
