// python/src: declared kernel families (include/swzjit/family.hpp) for swzjit.Family — registration from
// .family text or files, the CPU-side queries (space, defaults, analysis, source, NVRTC compile) and the
// engine's run / tune of a family. Families are named by their registered name; problems and configs
// arrive as "D=V,..." text (python/swzjit/_family.py turns dicts into it) and leave as dicts.
#include <Python.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"

namespace swzpy {

namespace {

using Instruction = std::tuple<std::string, int, std::vector<long long>>;

std::shared_ptr<const swz::Family> family(const std::string& name) { return swz::get_family(name); }

CUstream as_stream(std::uint64_t handle) { return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(handle)); }

// A config from its text: params not named take their default; "" is the defaults.
swz::FamilyValues config_of(const swz::Family& f, const std::string& text) { return f.parse_config(text); }

// The config a CPU-side query uses: the given one (checked against the problem when there is one),
// else the problem's default config, else (no problem) the params' defaults.
swz::FamilyValues chosen_config(const swz::Family& f, const std::string& config, const std::string& problem) {
  if (config.empty() && !problem.empty()) return f.default_config(f.parse_problem(problem));
  const swz::FamilyValues c = config_of(f, config);
  if (!problem.empty()) {
    const std::string why = f.check_config(c, f.parse_problem(problem));
    if (!why.empty())
      throw swz::Error(swz::ErrorKind::InvalidArgument,
                       f.name() + " config " + f.config_text(c) + " does not fit problem " + problem + ": " + why);
  }
  return c;
}

nb::dict shape_dict(const swz::FamilyLaunchShape& s) {
  nb::dict d;
  d["name_expression"] = s.name_expression;
  d["grid"] = nb::make_tuple(s.grid[0], s.grid[1], s.grid[2]);
  d["block"] = nb::make_tuple(s.block[0], s.block[1], s.block[2]);
  d["threads"] = s.threads;
  d["dynamic_smem"] = s.dynamic_smem;
  return d;
}

nb::dict info_dict(const swz::Family& f) {
  const swz::FamilyDef& def = f.def();
  nb::dict d;
  d["name"] = def.name;
  d["about"] = def.about;
  d["dims"] = def.dims;
  nb::list params;
  for (const swz::FamilyParam& p : def.params) {
    nb::dict x;
    x["name"] = p.name;
    x["values"] = p.values;
    x["default"] = p.default_value;
    params.append(x);
  }
  d["params"] = params;
  d["constraints"] = def.constraints;
  nb::list scalars;
  for (const swz::FamilyScalar& sc : def.scalars) {
    nb::dict x;
    x["name"] = sc.name;
    x["default"] = sc.default_value;
    scalars.append(x);
  }
  d["scalars"] = scalars;
  nb::list buffers;
  for (const swz::FamilyBuffer& b : def.buffers) {
    nb::dict x;
    x["name"] = b.name;
    x["dtype"] = swz::to_string(b.dtype);
    x["elements"] = b.elements;
    x["role"] = swz::to_string(b.role);
    buffers.append(x);
  }
  d["buffers"] = buffers;
  nb::list maps;
  for (const swz::FamilyTensorMap& t : def.tensor_maps) {
    nb::dict x;
    x["name"] = t.name;
    x["buffer"] = t.buffer;
    x["dims"] = t.dims;
    x["strides"] = t.strides;
    x["box"] = t.box;
    x["swizzle"] = t.swizzle;
    maps.append(x);
  }
  d["tensor_maps"] = maps;
  d["has_reference"] = !def.reference.kernel.empty();
  d["tolerance"] = def.tolerance;
  d["min_arch"] = def.min_arch;
  d["source_name"] = def.source_name;
  d["source"] = def.source;
  d["has_smem_accesses"] = static_cast<bool>(def.smem_accesses);
  d["text"] = def.to_text();
  d["source_hash"] = f.source_hash();
  d["definition_hash"] = f.definition_hash();
  return d;
}

nb::dict bank_dict(const swz::Family& f, const swz::FamilyValues& c, const swz::FamilyBankReport& r) {
  nb::dict d;
  d["family"] = f.name();
  d["config"] = f.config_text(c);
  d["analysed"] = r.analysed;
  d["instructions"] = r.instructions;
  d["wavefronts"] = r.wavefronts;
  d["ideal_wavefronts"] = r.ideal_wavefronts;
  d["excess_wavefronts"] = r.excess_wavefronts;
  d["conflict_free"] = r.analysed && r.excess_wavefronts == 0;
  nb::list per;
  for (const swz::BankReport& b : r.per_instruction) {
    nb::dict x;
    x["wavefronts"] = b.wavefronts;
    x["ideal_wavefronts"] = b.ideal_wavefronts;
    x["excess_wavefronts"] = b.excess_wavefronts;
    x["max_way"] = b.max_way;
    per.append(x);
  }
  d["per_instruction"] = per;
  return d;
}

// A Python callable as the family's SmemAccessMap. The tuner may call it from its own threads with the
// GIL released, so each call takes the GIL. The reference is never released: registered families live
// for the process, and a decref after the interpreter has finalized would crash at exit.
swz::SmemAccessMap python_access_map(nb::handle callable, const std::string& family_name) {
  PyObject* fn = callable.ptr();
  Py_INCREF(fn);
  return [fn, family_name](const swz::FamilyValues& config) {
    std::vector<Instruction> raw;
    std::string error;
    {
      nb::gil_scoped_acquire gil;
      try {
        nb::object result = nb::borrow<nb::object>(fn)(nb::cast(config));
        raw = nb::cast<std::vector<Instruction>>(result);
      } catch (const nb::python_error& e) {
        // The exception's type and message (what() would carry the whole traceback).
        error = nb::cast<std::string>(nb::str(e.type().attr("__name__"))) + ": " +
                nb::cast<std::string>(nb::str(e.value()));
      } catch (const nb::cast_error&) {
        error = "it must return a list of (op, width, addresses) instructions";
      }
    }
    if (!error.empty())
      throw swz::Error(swz::ErrorKind::InvalidArgument, family_name + ": smem_accesses failed: " + error);
    std::vector<swz::SmemInstruction> out;
    out.reserve(raw.size());
    for (auto& [op, width, addresses] : raw) {
      swz::SmemInstruction in;
      in.op = swz::parse_smem_op(op);
      in.width = width > 0 ? width : swz::default_width(in.op);
      in.addresses = std::move(addresses);
      out.push_back(std::move(in));
    }
    return out;
  };
}

std::string register_def(swz::FamilyDef def, nb::handle smem_accesses) {
  if (!smem_accesses.is_none()) def.smem_accesses = python_access_map(smem_accesses, def.name);
  return swz::register_family(std::move(def))->name();
}

// The digits after "sm_" ("sm_90a" -> 90), for the min_arch check Engine::compile_family also makes.
int arch_number(const std::string& arch) {
  int n = 0;
  for (std::size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
  return n;
}

nb::dict compile_dict(const swz::Family& f, const swz::FamilyValues& c, const std::string& arch_in,
                      const swz::FamilyValues& problem) {
  const std::string arch = f.target_arch(arch_in);  // sm_90 -> sm_90a for an arch-specific family
  if (!arch.empty()) {
    if (!swz::is_known_arch(arch)) {
      std::string allowed;
      for (const auto& a : swz::known_archs()) allowed += (allowed.empty() ? "" : ", ") + a;
      throw swz::Error(swz::ErrorKind::InvalidArgument, "arch: '" + arch + "' is not supported; use one of " + allowed);
    }
    if (arch_number(arch) < f.def().min_arch)
      throw swz::Error(swz::ErrorKind::Unsupported, f.name() + " needs sm_" + std::to_string(f.def().min_arch) +
                                                        " or newer; " + arch + " was asked for");
    if (f.def().max_arch != 0 && arch_number(arch) > f.def().max_arch)
      throw swz::Error(swz::ErrorKind::Unsupported, f.name() + " runs on sm_" + std::to_string(f.def().max_arch) +
                                                        " at most; " + arch + " was asked for");
  }
  swz::CompileRequest req;
  req.source = f.def().source;
  req.source_name = f.def().source_name;
  req.name_expression = f.name_expression(c, problem);  // a program's kernel name follows the problem
  req.arch = arch;
  swz::CompiledKernel k;
  swz::CubinResources r;
  double ms = 0;
  {
    nb::gil_scoped_release release;
    const auto t0 = std::chrono::steady_clock::now();
    k = swz::compile(req);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!k.is_ptx) r = swz::cubin_resources(k);
  }
  // The fields of `swz compile FAMILY --json`, plus the log.
  nb::dict d;
  d["config"] = f.config_text(c);
  d["arch"] = k.arch;
  d["format"] = k.is_ptx ? "ptx" : "cubin";
  d["image_bytes"] = k.image.size();
  d["registers"] = r.registers;
  d["static_smem_bytes"] = r.static_smem_bytes;
  d["local_bytes"] = r.local_bytes;
  d["code_bytes"] = r.code_bytes;
  d["lowered_name"] = k.lowered_name;
  d["name_expression"] = k.name_expression;
  d["compile_ms"] = ms;
  d["options"] = k.options;
  d["log"] = k.log;
  return d;
}

}  // namespace

void bind_families(nb::module_& m) {
  m.def("family_register_text", [](const std::string& text, const std::string& base_dir, nb::handle smem_accesses) {
    return register_def(swz::FamilyDef::parse(text, base_dir), smem_accesses);
  }, nb::arg("text"), nb::arg("base_dir"), nb::arg("smem_accesses").none());
  m.def("family_register_file", [](const std::string& path, nb::handle smem_accesses) {
    return register_def(swz::FamilyDef::load(path), smem_accesses);
  }, nb::arg("path"), nb::arg("smem_accesses").none());
  m.def("family_names", [] { return swz::family_names(); });
  m.def("family_exists", [](const std::string& name) { return swz::find_family(name) != nullptr; });
  m.def("family_info", [](const std::string& name) { return info_dict(*family(name)); });

  m.def("family_problem", [](const std::string& name, const std::string& problem) {
    return family(name)->parse_problem(problem);
  });
  m.def("family_problem_text", [](const std::string& name, const std::string& problem) {
    const auto f = family(name);
    return f->problem_text(f->parse_problem(problem));
  });
  m.def("family_config", [](const std::string& name, const std::string& config) {
    return config_of(*family(name), config);
  });
  m.def("family_config_text", [](const std::string& name, const std::string& config) {
    const auto f = family(name);
    return f->config_text(config_of(*f, config));
  });
  m.def("family_check_config", [](const std::string& name, const std::string& config, const std::string& problem) {
    const auto f = family(name);
    return f->check_config(config_of(*f, config), f->parse_problem(problem));
  });
  m.def("family_space", [](const std::string& name, const std::string& problem) {
    const auto f = family(name);
    return f->space(f->parse_problem(problem));
  });
  m.def("family_default_config", [](const std::string& name, const std::string& problem) {
    const auto f = family(name);
    return f->default_config(f->parse_problem(problem));
  });
  m.def("family_launch", [](const std::string& name, const std::string& problem, const std::string& config, int sm_count) {
    const auto f = family(name);
    const swz::FamilyValues p = f->parse_problem(problem);
    const swz::FamilyValues c = chosen_config(*f, config, problem);
    if (sm_count < 1) throw swz::Error(swz::ErrorKind::InvalidArgument, "sm_count must be >= 1");
    const swz::FamilyValues launch = swz::with_sm_count(p, sm_count);  // what a grid may read (swz::kFamilySmCount)
    nb::dict d = shape_dict(f->shape(c, launch));
    d["config"] = f->config_text(c);
    d["buffer_elements"] = f->buffer_elements(p);
    if (!f->def().reference.kernel.empty()) d["reference"] = shape_dict(f->reference_shape(launch));
    return d;
  });
  m.def("family_buffer_elements", [](const std::string& name, const std::string& problem) {
    const auto f = family(name);
    return f->buffer_elements(f->parse_problem(problem));
  });
  m.def("family_analyze", [](const std::string& name, const std::string& config, const std::string& problem) {
    const auto f = family(name);
    const swz::FamilyValues c = chosen_config(*f, config, problem);
    return bank_dict(*f, c, f->analyze(c));
  });
  m.def("family_source", [](const std::string& name, const std::string& config, const std::string& problem) {
    const auto f = family(name);
    const swz::FamilyValues c = chosen_config(*f, config, problem);
    // What `swz gen FAMILY` prints: a line naming the instantiation, then the translation unit.
    return "// " + f->def().source_name + "  (family " + f->name() + ", config " + f->config_text(c) +
           ", name expression: " + f->name_expression(c, problem.empty() ? swz::FamilyValues{} : f->parse_problem(problem)) +
           ")\n" + f->def().source;
  });
  m.def("family_compile", [](const std::string& name, const std::string& config, const std::string& problem,
                             const std::string& arch) {
    const auto f = family(name);
    return compile_dict(*f, chosen_config(*f, config, problem), arch,
                        problem.empty() ? swz::FamilyValues{} : f->parse_problem(problem));
  });

  m.def("family_autotune", [](const std::string& name, int device, const std::string& problem, const nb::dict& options) {
    const auto f = family(name);
    const swz::FamilyValues p = f->parse_problem(problem);
    const swz::TuneOptions o = tune_options_from(options);
    swz::TuneReport report;
    {
      nb::gil_scoped_release release;
      report = swz::autotune_family(engine_for(device), *f, p, o);
    }
    return report_dict(report);
  });
  m.def("family_engine_config", [](const std::string& name, int device, const std::string& problem) {
    const auto f = family(name);
    const swz::FamilyValues p = f->parse_problem(problem);
    nb::gil_scoped_release release;
    return engine_for(device).family_config(*f, p);
  });
  m.def("family_run", [](const std::string& name, int device, const std::string& problem,
                         const std::map<std::string, std::uint64_t>& buffers, std::uint64_t stream,
                         const std::string& config, bool reference, const std::map<std::string, double>& scalars) {
    const auto f = family(name);
    const swz::FamilyValues p = f->parse_problem(problem);
    std::map<std::string, swz::DevicePtr> ptrs;
    for (const auto& [buffer, address] : buffers) ptrs[buffer] = static_cast<swz::DevicePtr>(address);
    const bool have_config = !config.empty() && !reference;
    const swz::FamilyValues c = have_config ? chosen_config(*f, config, problem) : swz::FamilyValues{};
    f->with_scalars({}, scalars);  // an unknown name or a non-finite value: refused before any device work
    nb::gil_scoped_release release;
    swz::Engine& e = engine_for(device);
    if (reference)
      e.run_family_reference(*f, p, ptrs, scalars, as_stream(stream));
    else
      e.run_family(*f, p, ptrs, scalars, as_stream(stream), have_config ? &c : nullptr);
  });
}

}  // namespace swzpy
