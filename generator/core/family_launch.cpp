// generator/core: a family's launches compiled and evaluated (generator/core/family_launch.hpp), for
// swz::Family (generator/core/family.cpp): the expressions of template arguments, kernel arguments and
// launch shapes, checked once against the family's names and evaluated per configuration and problem.
#include "generator/core/family_launch.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "generator/core/config_text.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace detail {
namespace {

bool is_qualified_name(const std::string& s) {
  // ns::name or name: identifiers separated by "::"
  std::size_t start = 0;
  if (s.compare(0, 2, "::") == 0) start = 2;
  for (;;) {
    const std::size_t sep = s.find("::", start);
    if (!is_identifier(s.substr(start, sep == std::string::npos ? std::string::npos : sep - start))) return false;
    if (sep == std::string::npos) return true;
    start = sep + 2;
  }
}

const char* cxx_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
  }
  return "?";
}

// "float:alpha" / "double:0.5": a scalar's name or a float literal (the expressions are integer).
void float_arg(const std::string& text, const std::string& w, const std::vector<FamilyScalar>& scalars, LaunchArg& a) {
  for (std::size_t s = 0; s < scalars.size(); ++s)
    if (scalars[s].name == text) {
      a.scalar = static_cast<int>(s);
      a.real = scalars[s].default_value;
      return;
    }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || std::isspace(static_cast<unsigned char>(text[0])))
    throw_invalid(w + ": \"" + text + "\" is neither a scalar of the family nor a float literal (a float argument "
                  "is \"float:NAME\" or \"float:1.5\"; expressions are integer)");
  a.real = v;
}

unsigned checked_dim(long long v, const std::string& what, long long hi) {
  if (v < 1 || v > hi) throw_invalid(what + " = " + std::to_string(v) + " (1.." + std::to_string(hi) + ")");
  return static_cast<unsigned>(v);
}

}  // namespace

void check_names(const std::set<std::string>& allowed, const Expr& e, const std::string& what, const std::string& may) {
  for (const std::string& id : e.identifiers())
    if (!allowed.count(id)) throw_invalid(what + ": '" + id + "' is not " + may + " (in \"" + e.text() + "\")");
}

CompiledLaunch compile_launch(const FamilyLaunch& l, const std::string& what, const std::set<std::string>& params,
                              const std::set<std::string>& dims, const std::vector<FamilyBuffer>& buffers,
                              const std::set<std::string>& all_params, const std::set<std::string>& type_dims,
                              const std::vector<FamilyScalar>& scalars, const std::vector<FamilyTensorMap>& maps,
                              bool dims_in_targs) {
  CompiledLaunch c;
  if (!is_qualified_name(l.kernel)) throw_invalid(what + ".kernel: \"" + l.kernel + "\" is not a C++ (qualified) name");
  std::set<std::string> both = params;
  both.insert(dims.begin(), dims.end());
  // The device's SM count (kFamilySmCount) in the launch's shape and arguments: not in template arguments,
  // which name the kernel (the same compiled kernel on every device).
  std::set<std::string> launch_names = both;
  launch_names.insert(kFamilySmCount);
  for (std::size_t i = 0; i < l.template_args.size(); ++i) {
    const std::string w = what + " template argument " + std::to_string(i + 1);
    const std::string& t = l.template_args[i];
    if (t.empty()) throw_invalid(w + ": empty");
    TemplateArg a;
    a.text = t;
    if (type_dims.count(t)) {
      a.type_dim = t;
      c.targs.push_back(std::move(a));
      continue;
    }
    bool parsed = true;
    try {
      a.expr = Expr::parse(t, w);
    } catch (const Error&) {
      parsed = false;  // e.g. "unsigned int": a type name
    }
    if (parsed) {
      const std::vector<std::string> ids = a.expr.identifiers();
      a.is_expr = std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
        return params.count(id) > 0 || type_dims.count(id) > 0 || (dims_in_targs && dims.count(id) > 0);
      });
      for (const std::string& id : ids) {
        if (id == kFamilySmCount)
          throw_invalid(w + ": uses sm_count (a kernel is the same on every device: only the grid and the "
                        "arguments may follow the device's SM count)");
        if (dims.count(id) && !type_dims.count(id) && !dims_in_targs)
          throw_invalid(w + ": uses the problem dimension '" + id +
                        "' (template arguments may use params and type dims only)");
        if (all_params.count(id) && !params.count(id))
          throw_invalid(w + ": uses the param '" + id + "' (the reference's template arguments may not use params)");
      }
      // otherwise an identifier that is no param: a type name such as float or __half
    }
    if (!a.is_expr && t.find_first_of(";{}\"'#\n") != std::string::npos)
      throw_invalid(w + ": \"" + t + "\" is neither an expression over params nor a type name");
    c.targs.push_back(std::move(a));
  }
  for (std::size_t i = 0; i < l.args.size(); ++i) {
    const std::string w = what + " argument " + std::to_string(i + 1);
    std::string t = l.args[i];
    LaunchArg a;
    for (std::size_t b = 0; b < buffers.size(); ++b)
      if (buffers[b].name == t) {
        a.kind = FamilyKernelArg::Buffer;
        a.buffer = static_cast<int>(b);
      }
    for (std::size_t m = 0; m < maps.size(); ++m)
      if (maps[m].name == t) {
        a.kind = FamilyKernelArg::TensorMap;
        a.tensor_map = static_cast<int>(m);
      }
    if (a.kind == FamilyKernelArg::Buffer || a.kind == FamilyKernelArg::TensorMap) {
      // nothing to evaluate
    } else if (t.compare(0, 6, "float:") == 0 || t.compare(0, 7, "double:") == 0) {
      const bool single = t[0] == 'f';
      a.kind = single ? FamilyKernelArg::Float32 : FamilyKernelArg::Float64;
      float_arg(detail::trim(t.substr(single ? 6 : 7)), w, scalars, a);
    } else {
      if (t.compare(0, 4, "int:") == 0) {
        a.kind = FamilyKernelArg::Int32;
        t = t.substr(4);
      }
      a.expr = Expr::parse(t, w);
      check_names(launch_names, a.expr, w, maps.empty() ? "a buffer, a dim or a param" : "a buffer, a tensor map, a dim or a param");
    }
    c.args.push_back(std::move(a));
  }
  auto dims3 = [&](const std::vector<std::string>& v, const char* name, std::vector<Expr>& out, bool device) {
    if (v.empty() || v.size() > 3) throw_invalid(what + "." + name + ": 1 to 3 expressions, got " + std::to_string(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      out.push_back(Expr::parse(v[i], what + "." + name + "[" + std::to_string(i) + "]"));
      check_names(device ? launch_names : both, out.back(), what + "." + name,
                  device ? "a dim, a param or sm_count" : "a dim or a param");
    }
  };
  // Only the grid and the arguments may follow the device: the block and shared memory are the kernel's.
  dims3(l.grid, "grid", c.grid, true);
  dims3(l.block, "block", c.block, false);
  c.smem = Expr::parse(l.dynamic_smem.empty() ? "0" : l.dynamic_smem, what + ".smem");
  check_names(both, c.smem, what + ".smem", "a dim or a param");
  return c;
}


std::string name_expression_of(const std::string& kernel, const std::vector<TemplateArg>& targs,
                               const FamilyValues& config, const FamilyValues& problem) {
  std::string s = kernel;
  if (targs.empty()) return s;
  s += "<";
  for (std::size_t i = 0; i < targs.size(); ++i) {
    std::string a = targs[i].text;
    if (!targs[i].type_dim.empty()) {
      const auto it = problem.find(targs[i].type_dim);
      if (it == problem.end() || it->second < 0 || it->second > static_cast<long long>(DType::BF16))
        throw_invalid(kernel + ": template argument " + targs[i].type_dim + " needs the problem's element type");
      a = cxx_type(static_cast<DType>(it->second));
    } else if (targs[i].is_expr) {
      a = std::to_string(targs[i].expr.eval(config, problem));
    }
    s += (i ? ", " : "") + a;
  }
  return s + ">";
}

FamilyLaunchShape shape_of(const CompiledLaunch& l, const std::string& kernel, const FamilyValues& config,
                           const FamilyValues& problem, const std::string& what) {
  FamilyLaunchShape s;
  s.name_expression = name_expression_of(kernel, l.targs, config, problem);
  static const long long kGridMax[3] = {2147483647LL, 65535, 65535};
  static const long long kBlockMax[3] = {1024, 1024, 64};
  for (std::size_t i = 0; i < l.grid.size(); ++i)
    s.grid[i] = checked_dim(l.grid[i].eval(problem, config), what + " grid[" + std::to_string(i) + "]", kGridMax[i]);
  for (std::size_t i = 0; i < l.block.size(); ++i)
    s.block[i] = checked_dim(l.block[i].eval(problem, config), what + " block[" + std::to_string(i) + "]", kBlockMax[i]);
  const long long threads = static_cast<long long>(s.block[0]) * s.block[1] * s.block[2];
  if (threads > 1024) throw_invalid(what + ": " + std::to_string(threads) + " threads per block (at most 1024)");
  s.threads = static_cast<int>(threads);
  s.dynamic_smem = l.smem.eval(problem, config);
  if (s.dynamic_smem < 0 || s.dynamic_smem > (1 << 20))
    throw_invalid(what + ": dynamic shared memory " + std::to_string(s.dynamic_smem) + " bytes (0..1 MiB)");
  return s;
}

std::vector<FamilyKernelArg> args_of(const CompiledLaunch& l, const FamilyValues& config, const FamilyValues& problem) {
  std::vector<FamilyKernelArg> out;
  for (const LaunchArg& a : l.args) {
    FamilyKernelArg k;
    k.kind = a.kind;
    k.buffer = a.buffer;
    k.tensor_map = a.tensor_map;
    k.real = a.real;
    k.scalar = a.scalar;
    if (a.kind == FamilyKernelArg::Int64 || a.kind == FamilyKernelArg::Int32) {
      k.value = a.expr.eval(problem, config);
      if (a.kind == FamilyKernelArg::Int32 && (k.value < -2147483648LL || k.value > 2147483647LL))
        throw_invalid("argument \"" + a.expr.text() + "\" = " + std::to_string(k.value) + " does not fit an int");
    }
    out.push_back(k);
  }
  return out;
}

}  // namespace detail
}  // namespace swz
