// generator/core: a declared family checked once (swz::Family, include/swzjit/family.hpp): its
// expressions parsed, its space enumerated under the constraints, its launches evaluated, its bank
// analysis; and the process-wide registry the engine, the tuner, the worker and `swz` look families up in.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

#include <xxhash.h>

#include "generator/core/config_text.hpp"
#include "generator/core/expr.hpp"
#include "generator/families/registry.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace {

using detail::Expr;
using detail::is_identifier;

constexpr long long kMaxSpace = 100000;  // configurations per family: enumerated for every tune

std::string hash128(const std::string& bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

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

// One template argument: an expression over params, or a verbatim type name.
struct TemplateArg {
  bool is_expr = false;
  Expr expr;
  std::string text;
  std::string type_dim;  // a type dim's name: expands to the problem's C++ element type
};

const char* cxx_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
  }
  return "?";
}

struct Arg {
  FamilyKernelArg::Kind kind = FamilyKernelArg::Int64;
  int buffer = -1;
  Expr expr;
  double real = 0;  // a float argument: a literal's value, or the scalar's default
  int scalar = -1;
};

struct CompiledLaunch {
  std::vector<TemplateArg> targs;
  std::vector<Arg> args;
  std::vector<Expr> grid, block;
  Expr smem;
};

}  // namespace

struct Family::Impl {
  FamilyDef def;
  std::vector<std::string> problem_names;  // dims (no ":type"), then aligns
  std::set<std::string> type_dims, aligns;
  std::vector<std::pair<std::string, Expr>> lets;
  std::vector<Expr> defaults;  // per param; empty when its default is a number
  bool templates_only = false;
  std::vector<Expr> constraints;
  std::vector<Expr> elements;
  CompiledLaunch launch, reference;
  std::vector<CompiledLaunch> then;
  bool scratch_uses_params = false;
  std::string source_hash, definition_hash;
  std::set<std::string> dims, params;

  // The problem with its lets evaluated: what every expression is evaluated over.
  FamilyValues full(const FamilyValues& problem) const {
    if (lets.empty()) return problem;
    FamilyValues v = problem;
    for (const auto& l : lets) v[l.first] = l.second.eval(v);
    return v;
  }
};

namespace {

void check_names(const std::set<std::string>& allowed, const Expr& e, const std::string& what, const std::string& may) {
  for (const std::string& id : e.identifiers())
    if (!allowed.count(id)) throw_invalid(what + ": '" + id + "' is not " + may + " (in \"" + e.text() + "\")");
}

// `params`: the names the launch may use besides dims (none for the reference); `all_params`: every
// param of the family, so that a reference naming one is refused rather than read as a type name.
// `dims`: every name of the problem (dims, aligns, lets); `type_dims`: those a template argument may use.
// "float:alpha" / "double:0.5": a scalar's name or a float literal (the expressions are integer).
void float_arg(const std::string& text, const std::string& w, const std::vector<FamilyScalar>& scalars, Arg& a) {
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

CompiledLaunch compile_launch(const FamilyLaunch& l, const std::string& what, const std::set<std::string>& params,
                              const std::set<std::string>& dims, const std::vector<FamilyBuffer>& buffers,
                              const std::set<std::string>& all_params, const std::set<std::string>& type_dims,
                              const std::vector<FamilyScalar>& scalars) {
  CompiledLaunch c;
  if (!is_qualified_name(l.kernel)) throw_invalid(what + ".kernel: \"" + l.kernel + "\" is not a C++ (qualified) name");
  std::set<std::string> both = params;
  both.insert(dims.begin(), dims.end());
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
      a.is_expr = std::all_of(ids.begin(), ids.end(),
                              [&](const std::string& id) { return params.count(id) > 0 || type_dims.count(id) > 0; });
      for (const std::string& id : ids) {
        if (dims.count(id) && !type_dims.count(id))
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
    Arg a;
    for (std::size_t b = 0; b < buffers.size(); ++b)
      if (buffers[b].name == t) {
        a.kind = FamilyKernelArg::Buffer;
        a.buffer = static_cast<int>(b);
      }
    if (a.kind == FamilyKernelArg::Buffer) {
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
      check_names(both, a.expr, w, "a buffer, a dim or a param");
    }
    c.args.push_back(std::move(a));
  }
  auto dims3 = [&](const std::vector<std::string>& v, const char* name, std::vector<Expr>& out) {
    if (v.empty() || v.size() > 3) throw_invalid(what + "." + name + ": 1 to 3 expressions, got " + std::to_string(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      out.push_back(Expr::parse(v[i], what + "." + name + "[" + std::to_string(i) + "]"));
      check_names(both, out.back(), what + "." + name, "a dim or a param");
    }
  };
  dims3(l.grid, "grid", c.grid);
  dims3(l.block, "block", c.block);
  c.smem = Expr::parse(l.dynamic_smem.empty() ? "0" : l.dynamic_smem, what + ".smem");
  check_names(both, c.smem, what + ".smem", "a dim or a param");
  return c;
}

// Nothing but blank lines and #include "NAME" of the library's own templates.
bool templates_only_source(const std::string& source) {
  std::size_t start = 0, includes = 0;
  while (start <= source.size()) {
    std::size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    std::string line = source.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty()) continue;
    const std::string head = "#include \"";
    if (line.compare(0, head.size(), head) != 0 || line.back() != '"') return false;
    const std::string name = line.substr(head.size(), line.size() - head.size() - 1);
    static const std::vector<std::string> known = template_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) return false;
    ++includes;
  }
  return includes > 0;
}

void require_text(const std::string& s, const std::string& what) {
  if (s.find_first_of("#\n\r") != std::string::npos) throw_invalid(what + ": must not contain '#' or a line break");
}

}  // namespace

Family::Family(FamilyDef def) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const std::string& n = def.name;
  if (n.empty() || !is_identifier(n) || std::any_of(n.begin(), n.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }))
    throw_invalid("family.name: \"" + n + "\" must be a lowercase identifier (letters, digits, _)");
  // "transpose" is the library's own family (generator/families/transpose): registering another one
  // under that name fails in register_family like any name taken.
  if (n == "gemm" || n == "family" || n == "cache")
    throw_invalid("family.name: \"" + n + "\" is reserved for a built-in command or family");
  require_text(def.about, "family.about");
  require_text(def.source_name, "family.source_name");
  if (def.source_name.empty() || def.source_name.find('/') != std::string::npos)
    throw_invalid("family.source_name: a plain file name, got \"" + def.source_name + "\"");
  if (def.source.empty()) throw_invalid("family.source: empty");
  if (!(def.tolerance > 0) || !std::isfinite(def.tolerance))
    throw_invalid("family.tolerance: must be a positive number");
  if (def.min_arch < 50 || def.min_arch > 200) throw_invalid("family.min_arch: 50..200 (80 = sm_80)");
  if (def.space_fn && def.space_version.empty())
    throw_invalid("family.space_version: a family with a space_fn must name the version of the code behind it "
                  "(e.g. a hash of its sources): stored winners are valid only for the space that chose them");
  std::set<std::string> taken;
  if (def.dims.empty()) throw_invalid("family.dims: at least one problem dimension");
  for (const std::string& entry : def.dims) {
    const std::size_t colon = entry.find(':');
    const std::string d = entry.substr(0, colon);
    if (colon != std::string::npos && entry.substr(colon + 1) != "type")
      throw_invalid("family.dims: \"" + entry + "\": the only kind a dim may declare is \"NAME:type\" (an element type)");
    if (!is_identifier(d)) throw_invalid("family.dims: \"" + d + "\" is not an identifier");
    if (!taken.insert(d).second) throw_invalid("family.dims: \"" + d + "\" given twice");
    m.dims.insert(d);
    m.problem_names.push_back(d);
    if (colon != std::string::npos) m.type_dims.insert(d);
  }
  for (const FamilyAlign& a : def.aligns) {
    if (!is_identifier(a.name)) throw_invalid("family.aligns: \"" + a.name + "\" is not an identifier");
    if (!taken.insert(a.name).second) throw_invalid("family.aligns: \"" + a.name + "\" is also a dim or another align");
    if (std::none_of(def.buffers.begin(), def.buffers.end(), [&](const FamilyBuffer& b) { return b.name == a.buffer; }))
      throw_invalid("family.aligns." + a.name + ": \"" + a.buffer + "\" is not a buffer");
    m.dims.insert(a.name);
    m.aligns.insert(a.name);
    m.problem_names.push_back(a.name);
  }
  for (const FamilyLet& l : def.lets) {
    const std::string w = "family.lets." + l.name;
    if (!is_identifier(l.name)) throw_invalid("family.lets: \"" + l.name + "\" is not an identifier");
    require_text(l.expr, w);
    Expr e = Expr::parse(l.expr, w);
    check_names(m.dims, e, w, "a dim, an align or an earlier let");
    if (!taken.insert(l.name).second) throw_invalid(w + ": the name is also a dim, an align or another let");
    m.dims.insert(l.name);
    m.lets.emplace_back(l.name, std::move(e));
  }
  for (const FamilyScalar& sc : def.scalars) {
    const std::string w = "family.scalars." + sc.name;
    if (!is_identifier(sc.name)) throw_invalid("family.scalars: \"" + sc.name + "\" is not an identifier");
    if (!taken.insert(sc.name).second) throw_invalid(w + ": the name is also a dim, an align, a let or another scalar");
    if (!std::isfinite(sc.default_value)) throw_invalid(w + ": the default must be a finite number");
  }
  for (const auto& kv : def.dtype_tolerance)
    if (!(kv.second > 0) || !std::isfinite(kv.second))
      throw_invalid("family.tolerance." + swz::to_string(kv.first) + ": must be a positive number");
  std::set<std::string> earlier = m.dims;  // a default expression may use the params declared before it
  for (const FamilyParam& p : def.params) {
    if (!is_identifier(p.name)) throw_invalid("family.params: \"" + p.name + "\" is not an identifier");
    if (!taken.insert(p.name).second) throw_invalid("family.params: \"" + p.name + "\" is also a dim or another param");
    if (p.values.empty()) throw_invalid("family.params." + p.name + ": no values");
    std::set<long long> vals(p.values.begin(), p.values.end());
    if (vals.size() != p.values.size()) throw_invalid("family.params." + p.name + ": a value given twice");
    if (p.default_expr.empty()) {
      if (!vals.count(p.default_value))
        throw_invalid("family.params." + p.name + ": the default " + std::to_string(p.default_value) + " is not one of its values");
      m.defaults.emplace_back();
    } else {
      const std::string w = "family.params." + p.name + ".default";
      require_text(p.default_expr, w);
      m.defaults.push_back(Expr::parse(p.default_expr, w));
      check_names(earlier, m.defaults.back(), w, "a problem value or a param declared before it");
    }
    earlier.insert(p.name);
    m.params.insert(p.name);
  }
  std::set<std::string> both = m.dims;
  both.insert(m.params.begin(), m.params.end());
  for (std::size_t i = 0; i < def.constraints.size(); ++i) {
    const std::string w = "family.require[" + std::to_string(i) + "]";
    require_text(def.constraints[i], w);
    m.constraints.push_back(Expr::parse(def.constraints[i], w));
    check_names(both, m.constraints.back(), w, "a dim or a param");
  }
  bool output = false;
  for (const FamilyBuffer& b : def.buffers) {
    const std::string w = "family.buffers." + b.name;
    if (!is_identifier(b.name)) throw_invalid("family.buffers: \"" + b.name + "\" is not an identifier");
    if (!taken.insert(b.name).second) throw_invalid(w + ": the name is also a dim, a param or another buffer");
    m.elements.push_back(Expr::parse(b.elements, w + ".elements"));
    if (b.role == BufferRole::Scratch) {
      // A scratch buffer's size may follow the configuration (split-K partials: SPLITS * m * n).
      check_names(both, m.elements.back(), w + ".elements", "a dim or a param");
      for (const std::string& id : m.elements.back().identifiers())
        m.scratch_uses_params = m.scratch_uses_params || m.params.count(id) > 0;
      for (const FamilyAlign& a : def.aligns)
        if (a.buffer == b.name)
          throw_invalid("family.aligns." + a.name + ": \"" + b.name + "\" is a scratch buffer (the engine places it, "
                        "always " + std::to_string(kFamilyScratchAlign) + "-byte aligned)");
    } else {
      check_names(m.dims, m.elements.back(), w + ".elements", "a dim");
    }
    if (!b.dtype_dim.empty() && !m.type_dims.count(b.dtype_dim))
      throw_invalid(w + ": \"" + b.dtype_dim + "\" is neither an element type (f32, f16, bf16) nor a type dim");
    output = output || b.role == BufferRole::Output || b.role == BufferRole::InOut;
  }
  if (!output) throw_invalid("family.buffers: no output buffer, nor an inout one (what would a candidate be checked on?)");
  m.launch = compile_launch(def.launch, "family.kernel", m.params, m.dims, def.buffers, m.params, m.type_dims, def.scalars);
  for (std::size_t i = 0; i < def.then.size(); ++i)
    m.then.push_back(compile_launch(def.then[i], "family.then[" + std::to_string(i) + "]", m.params, m.dims, def.buffers,
                                    m.params, m.type_dims, def.scalars));
  if (!def.reference.kernel.empty()) {
    m.reference = compile_launch(def.reference, "family.reference", {}, m.dims, def.buffers, m.params, m.type_dims,
                                 def.scalars);
    // The reference runs on the caller's buffers with nothing lent: it cannot use the engine's scratch.
    for (const Arg& a : m.reference.args)
      if (a.kind == FamilyKernelArg::Buffer && def.buffers[static_cast<std::size_t>(a.buffer)].role == BufferRole::Scratch)
        throw_invalid("family.reference: passes the scratch buffer '" + def.buffers[static_cast<std::size_t>(a.buffer)].name +
                      "' (a reference writes the outputs from the inputs alone)");
    // An inout buffer's result depends on its initial values: a reference that does not take it cannot
    // compute what a candidate is compared with.
    for (std::size_t b = 0; b < def.buffers.size(); ++b)
      if (def.buffers[b].role == BufferRole::InOut &&
          std::none_of(m.reference.args.begin(), m.reference.args.end(), [&](const Arg& a) {
            return a.kind == FamilyKernelArg::Buffer && a.buffer == static_cast<int>(b);
          }))
        throw_invalid("family.reference: does not pass the inout buffer '" + def.buffers[b].name +
                      "' (the reference reads its initial values and writes the result the candidates are checked on)");
  }
  m.templates_only = templates_only_source(def.source);
  m.def = std::move(def);
  m.source_hash = hash128(m.def.source);
  // The space function is code, not text: its version stands for it in the id winners are stored under.
  m.definition_hash =
      hash128(m.def.space_version.empty() ? m.def.to_text() : m.def.to_text() + "\n# space_version " + m.def.space_version);
}

Family::~Family() = default;

const FamilyDef& Family::def() const noexcept { return impl_->def; }
const std::string& Family::name() const noexcept { return impl_->def.name; }
const std::string& Family::source_hash() const noexcept { return impl_->source_hash; }
const std::string& Family::definition_hash() const noexcept { return impl_->definition_hash; }

const std::vector<std::string>& Family::problem_names() const noexcept { return impl_->problem_names; }
bool Family::is_type_dim(const std::string& n) const { return impl_->type_dims.count(n) > 0; }
bool Family::source_is_templates_only() const noexcept { return impl_->templates_only; }

DType Family::buffer_dtype(std::size_t index, const FamilyValues& problem) const {
  const FamilyBuffer& b = impl_->def.buffers.at(index);
  if (b.dtype_dim.empty()) return b.dtype;
  const auto it = problem.find(b.dtype_dim);
  if (it == problem.end() || it->second < 0 || it->second > static_cast<long long>(DType::BF16))
    throw_invalid(name() + " buffer " + b.name + ": the problem gives no element type " + b.dtype_dim);
  return static_cast<DType>(it->second);
}

void Family::validate_problem(const FamilyValues& problem) const {
  for (const auto& kv : problem)
    if (std::find(impl_->problem_names.begin(), impl_->problem_names.end(), kv.first) == impl_->problem_names.end())
      throw_invalid(name() + " problem: unknown dimension '" + kv.first + "' (dims: " + problem_text({}) + ")");
  for (const std::string& d : impl_->problem_names) {
    const auto it = problem.find(d);
    const std::string what = impl_->aligns.count(d) ? "alignment" : "dimension";
    if (it == problem.end())
      throw_invalid(name() + " problem: " + what + " '" + d + "' missing" +
                    (impl_->aligns.count(d) ? " (the pointer alignment in bytes: 1, 2, 4, 8 or 16)" : ""));
    if (it->second < 0) throw_invalid(name() + " problem: " + what + " '" + d + "' is negative");
    if (it->second > (1LL << 40)) throw_invalid(name() + " problem: dimension '" + d + "' past 2^40");
    if (impl_->type_dims.count(d) && it->second > static_cast<long long>(DType::BF16))
      throw_invalid(name() + " problem: '" + d + "' is not an element type code");
    if (impl_->aligns.count(d) && (it->second < 1 || it->second > kFamilyMaxAlign || (it->second & (it->second - 1)) != 0))
      throw_invalid(name() + " problem: alignment '" + d + "' = " + std::to_string(it->second) +
                    " (a power of two from 1 to 16 bytes)");
  }
}

FamilyValues Family::parse_problem(const std::string& text) const {
  FamilyValues v;
  for (const auto& kv : detail::parse_key_values(text, name() + " problem")) {
    if (impl_->type_dims.count(kv.first)) {
      try {
        v[kv.first] = static_cast<long long>(parse_dtype(kv.second));
      } catch (const Error& e) {
        throw_invalid(name() + " problem " + kv.first + ": " + e.what());
      }
      continue;
    }
    v[kv.first] = parse_integer(name() + " problem " + kv.first, kv.second, 0, 1LL << 40);
  }
  validate_problem(v);
  return v;
}

FamilyValues Family::parse_config(const std::string& text) const {
  FamilyValues v;
  for (const FamilyParam& p : impl_->def.params) v[p.name] = p.default_value;
  // "default" is how config_text() writes the one configuration of a family without params.
  if (detail::trim(text).empty() || (impl_->def.params.empty() && detail::trim(text) == "default")) return v;
  for (const auto& kv : detail::parse_key_values(text, name() + " config")) {
    if (!impl_->params.count(kv.first))
      throw_invalid(name() + " config: unknown parameter '" + kv.first + "' (params: " + config_text(v) + ")");
    v[kv.first] = parse_integer(name() + " config " + kv.first, kv.second, -(1LL << 40), 1LL << 40);
  }
  return v;
}

std::string Family::problem_text(const FamilyValues& problem) const {
  std::vector<std::pair<std::string, std::string>> items;
  for (const std::string& d : impl_->problem_names) {
    const auto it = problem.find(d);
    const bool type = impl_->type_dims.count(d) && it != problem.end() && it->second >= 0 &&
                      it->second <= static_cast<long long>(DType::BF16);
    items.emplace_back(d, it == problem.end() ? "?" : type ? swz::to_string(static_cast<DType>(it->second))
                                                           : std::to_string(it->second));
  }
  return detail::join_key_values(items);
}

std::string Family::config_text(const FamilyValues& config) const {
  std::vector<std::pair<std::string, std::string>> items;
  for (const FamilyParam& p : impl_->def.params) {
    const auto it = config.find(p.name);
    items.emplace_back(p.name, std::to_string(it == config.end() ? p.default_value : it->second));
  }
  return items.empty() ? std::string("default") : detail::join_key_values(items);
}

namespace {

unsigned checked_dim(long long v, const std::string& what, long long hi) {
  if (v < 1 || v > hi) throw_invalid(what + " = " + std::to_string(v) + " (1.." + std::to_string(hi) + ")");
  return static_cast<unsigned>(v);
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
  for (const Arg& a : l.args) {
    FamilyKernelArg k;
    k.kind = a.kind;
    k.buffer = a.buffer;
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

}  // namespace

std::string Family::check_config(const FamilyValues& config, const FamilyValues& problem) const {
  try {
    return check_full(config, impl_->full(problem));
  } catch (const Error& e) {
    return e.what();
  }
}

std::string Family::check_full(const FamilyValues& config, const FamilyValues& problem) const {
  for (const FamilyParam& p : impl_->def.params) {
    const auto it = config.find(p.name);
    if (it == config.end()) return "parameter " + p.name + " missing";
    if (std::find(p.values.begin(), p.values.end(), it->second) == p.values.end())
      return p.name + "=" + std::to_string(it->second) + " is not one of its values";
  }
  if (config.size() != impl_->def.params.size()) return "unknown parameters";
  try {
    for (const Expr& c : impl_->constraints)
      if (c.eval(problem, config) == 0) return "requirement \"" + c.text() + "\" fails";
    shape_of(impl_->launch, impl_->def.launch.kernel, config, problem, name() + " kernel");
    for (std::size_t i = 0; i < impl_->then.size(); ++i)
      shape_of(impl_->then[i], impl_->def.then[i].kernel, config, problem, name() + " then[" + std::to_string(i) + "]");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<FamilyValues> Family::space(const FamilyValues& problem) const {
  validate_problem(problem);
  const auto& params = impl_->def.params;
  std::vector<FamilyValues> out;
  const FamilyValues full = impl_->full(problem);
  if (impl_->def.space_fn) {
    for (FamilyValues& c : impl_->def.space_fn(problem))
      if (check_full(c, full).empty()) out.push_back(std::move(c));
    return out;
  }
  // The product of the values, enumerated for every tune. (With a space function the values only bound
  // what a configuration may name; the worker rebuilds a family from its text and never enumerates.)
  long long product = 1;
  for (const FamilyParam& p : params) {
    product *= static_cast<long long>(p.values.size());
    if (product > kMaxSpace)
      throw_invalid(name() + ": more than " + std::to_string(kMaxSpace) +
                    " configurations to enumerate (declare fewer values, or give FamilyDef::space_fn)");
  }
  std::vector<std::size_t> pos(params.size(), 0);
  for (;;) {
    FamilyValues c;
    for (std::size_t i = 0; i < params.size(); ++i) c[params[i].name] = params[i].values[pos[i]];
    if (check_full(c, full).empty()) out.push_back(std::move(c));
    std::size_t i = params.size();
    while (i > 0 && ++pos[i - 1] == params[i - 1].values.size()) pos[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

FamilyValues Family::default_config(const FamilyValues& problem) const {
  validate_problem(problem);
  const FamilyValues full = impl_->full(problem);
  FamilyValues d;
  std::string why;
  try {
    for (std::size_t i = 0; i < impl_->def.params.size(); ++i) {
      const FamilyParam& p = impl_->def.params[i];
      d[p.name] = impl_->defaults[i].empty() ? p.default_value : impl_->defaults[i].eval(full, d);
    }
    why = check_full(d, full);
    if (why.empty()) return d;
  } catch (const Error& e) {
    why = e.what();  // a default expression failed for this problem (a division by zero, ...)
  }
  const std::vector<FamilyValues> s = space(problem);
  if (s.empty())
    throw Error(ErrorKind::Unsupported, name() + ": no configuration satisfies the requirements for " + problem_text(problem) +
                                            " (defaults: " + why + ")");
  return s.front();
}

FamilyLaunchShape Family::shape(const FamilyValues& config, const FamilyValues& problem) const {
  return shape_of(impl_->launch, impl_->def.launch.kernel, config, impl_->full(problem), name() + " kernel");
}

FamilyLaunchShape Family::reference_shape(const FamilyValues& problem) const {
  if (impl_->def.reference.kernel.empty())
    throw_invalid(name() + ": the family has no reference kernel (add \"reference = ...\")");
  return shape_of(impl_->reference, impl_->def.reference.kernel, {}, impl_->full(problem), name() + " reference");
}

std::string Family::name_expression(const FamilyValues& config, const FamilyValues& problem) const {
  return name_expression_of(impl_->def.launch.kernel, impl_->launch.targs, config, problem);
}

std::string Family::reference_name_expression(const FamilyValues& problem) const {
  if (impl_->def.reference.kernel.empty()) return "";
  return name_expression_of(impl_->def.reference.kernel, impl_->reference.targs, {}, problem);
}

std::vector<FamilyKernelArg> Family::kernel_args(const FamilyValues& config, const FamilyValues& problem) const {
  return args_of(impl_->launch, config, impl_->full(problem));
}

std::vector<FamilyKernelArg> Family::reference_args(const FamilyValues& problem) const {
  if (impl_->def.reference.kernel.empty()) throw_invalid(name() + ": the family has no reference kernel");
  return args_of(impl_->reference, {}, impl_->full(problem));
}

std::vector<long long> Family::buffer_elements(const FamilyValues& problem, const FamilyValues& config_in) const {
  std::vector<long long> out;
  const FamilyValues full = impl_->full(problem);
  const FamilyValues config = config_in.empty() && impl_->scratch_uses_params ? default_config(problem) : config_in;
  for (std::size_t i = 0; i < impl_->elements.size(); ++i) {
    const long long n = impl_->def.buffers[i].role == BufferRole::Scratch ? impl_->elements[i].eval(full, config)
                                                                          : impl_->elements[i].eval(full);
    if (n < 0 || n > (1LL << 40))
      throw_invalid(name() + " buffer " + impl_->def.buffers[i].name + ": " + std::to_string(n) + " elements");
    out.push_back(n);
  }
  return out;
}

std::vector<long long> Family::scratch_offsets(const FamilyValues& config, const FamilyValues& problem) const {
  const std::vector<long long> elems = buffer_elements(problem, config);
  std::vector<long long> out(elems.size(), -1);
  long long at = 0;
  for (std::size_t i = 0; i < elems.size(); ++i) {
    if (impl_->def.buffers[i].role != BufferRole::Scratch) continue;
    out[i] = at;
    const long long bytes = std::max(1LL, elems[i]) * dtype_bytes(buffer_dtype(i, problem));
    at += (bytes + kFamilyScratchAlign - 1) / kFamilyScratchAlign * kFamilyScratchAlign;
  }
  return out;
}

std::size_t Family::scratch_bytes(const FamilyValues& config, const FamilyValues& problem) const {
  const std::vector<long long> elems = buffer_elements(problem, config);
  std::size_t at = 0;
  for (std::size_t i = 0; i < elems.size(); ++i) {
    if (impl_->def.buffers[i].role != BufferRole::Scratch) continue;
    const long long bytes = std::max(1LL, elems[i]) * dtype_bytes(buffer_dtype(i, problem));
    at += static_cast<std::size_t>((bytes + kFamilyScratchAlign - 1) / kFamilyScratchAlign * kFamilyScratchAlign);
  }
  return at;
}

std::size_t Family::then_count() const noexcept { return impl_->then.size(); }

FamilyLaunchShape Family::then_shape(std::size_t index, const FamilyValues& config, const FamilyValues& problem) const {
  if (index >= impl_->then.size()) throw_invalid(name() + ": no then launch " + std::to_string(index));
  return shape_of(impl_->then[index], impl_->def.then[index].kernel, config, impl_->full(problem),
                  name() + " then[" + std::to_string(index) + "]");
}

std::vector<FamilyKernelArg> Family::then_args(std::size_t index, const FamilyValues& config,
                                               const FamilyValues& problem) const {
  if (index >= impl_->then.size()) throw_invalid(name() + ": no then launch " + std::to_string(index));
  return args_of(impl_->then[index], config, impl_->full(problem));
}

std::string Family::then_name_expression(std::size_t index, const FamilyValues& config, const FamilyValues& problem) const {
  if (index >= impl_->then.size()) throw_invalid(name() + ": no then launch " + std::to_string(index));
  return name_expression_of(impl_->def.then[index].kernel, impl_->then[index].targs, config, problem);
}

std::vector<FamilyKernelArg> Family::with_scalars(std::vector<FamilyKernelArg> args, const FamilyScalars& scalars) const {
  const std::vector<FamilyScalar>& decl = impl_->def.scalars;
  for (const auto& kv : scalars) {
    if (std::none_of(decl.begin(), decl.end(), [&](const FamilyScalar& s) { return s.name == kv.first; })) {
      std::string known;
      for (const FamilyScalar& s : decl) known += (known.empty() ? "" : ", ") + s.name;
      throw_invalid(name() + ": unknown scalar '" + kv.first + "' (scalars: " + (known.empty() ? "none" : known) + ")");
    }
    if (!std::isfinite(kv.second)) throw_invalid(name() + ": scalar '" + kv.first + "' is not a finite number");
  }
  for (FamilyKernelArg& a : args) {
    if (a.scalar < 0) continue;
    const auto it = scalars.find(decl[static_cast<std::size_t>(a.scalar)].name);
    a.real = it == scalars.end() ? decl[static_cast<std::size_t>(a.scalar)].default_value : it->second;
  }
  return args;
}

double Family::tolerance_for(DType t) const {
  const auto it = impl_->def.dtype_tolerance.find(t);
  return it == impl_->def.dtype_tolerance.end() ? impl_->def.tolerance : it->second;
}

FamilyBankReport Family::analyze(const FamilyValues& config, const FamilyValues& problem) const {
  FamilyBankReport r;
  if (!impl_->def.smem_accesses) return r;
  r.analysed = true;
  FamilyValues values = config;
  if (!problem.empty()) {
    const FamilyValues full = impl_->full(problem);
    values.insert(full.begin(), full.end());
  }
  for (const SmemInstruction& ins : impl_->def.smem_accesses(values)) {
    BankReport b = analyze_bank(ins);
    r.wavefronts += b.wavefronts;
    r.ideal_wavefronts += b.ideal_wavefronts;
    r.excess_wavefronts += b.excess_wavefronts;
    r.per_instruction.push_back(std::move(b));
    ++r.instructions;
  }
  return r;
}

// --- the registry -------------------------------------------------------------------------------

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Family>> families;
  bool builtins_loaded = false;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: families may be used from static destructors
  return *r;
}

// Caller holds the mutex.
void load_builtins(Registry& r) {
  if (r.builtins_loaded) return;
  r.builtins_loaded = true;
  for (auto make : detail::builtin_family_definitions()) {
    auto f = std::make_shared<const Family>(make());
    r.families[f->name()] = f;
  }
}

}  // namespace

std::shared_ptr<const Family> register_family(FamilyDef def) {
  auto f = std::make_shared<const Family>(std::move(def));  // validates outside the lock
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  const auto it = r.families.find(f->name());
  if (it != r.families.end()) {
    if (it->second->definition_hash() == f->definition_hash()) return it->second;
    throw_invalid("register_family: a different family named \"" + f->name() + "\" is already registered");
  }
  r.families[f->name()] = f;
  return f;
}

std::shared_ptr<const Family> find_family(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  const auto it = r.families.find(name);
  return it == r.families.end() ? nullptr : it->second;
}

std::vector<std::string> family_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  std::vector<std::string> out;
  for (const auto& kv : r.families) out.push_back(kv.first);
  return out;
}

std::shared_ptr<const Family> get_family(const std::string& name) {
  if (auto f = find_family(name)) return f;
  std::string known;
  for (const std::string& n : family_names()) known += (known.empty() ? "" : ", ") + n;
  throw_invalid("no family named \"" + name + "\" (registered: " + (known.empty() ? "none" : known) +
                "; a .family file can be given by its path)");
}

}  // namespace swz
