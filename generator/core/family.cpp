// generator/core: a declared family checked once (swz::Family, include/swzjit/family.hpp): its
// definition validated, its problems and configurations read and written, its space enumerated under
// the constraints, its launches evaluated (through generator/core/family_launch.hpp), its bank analysis.
// The text form is generator/core/family_text.cpp, the registry generator/core/family_registry.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include <xxhash.h>

#include "generator/core/checked_arith.hpp"
#include "generator/core/config_text.hpp"
#include "generator/core/expr.hpp"
#include "generator/core/family_launch.hpp"
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

// The device's SM count a problem carries (kFamilySmCount), else `fallback` (1: a launch is planned for
// some device; 0: a program's default or space for a device not known).
int sm_count_of(const FamilyValues& problem, int fallback = 1) {
  const auto it = problem.find(kFamilySmCount);
  return it == problem.end() || it->second < 1 ? fallback : static_cast<int>(std::min<long long>(it->second, 1 << 20));
}

using detail::CompiledLaunch;
using detail::LaunchArg;
using detail::check_names;
using detail::compile_launch;
using detail::name_expression_of;
using detail::shape_of;
using detail::args_of;

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
  struct Map {  // a FamilyTensorMap's expressions
    int buffer = -1;
    std::vector<Expr> dims, strides, box;
    Expr swizzle;
  };
  std::vector<Map> maps;
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
  if (def.max_arch != 0 && (def.max_arch < def.min_arch || def.max_arch > 200))
    throw_invalid("family.max_arch: 0 (no bound) or min_arch.." + std::to_string(200) + " (90 = sm_90)");
  // Architecture-specific code (sm_90a) runs on that one architecture: say which.
  if (def.arch_specific && (def.max_arch == 0 || def.max_arch != def.min_arch || !is_known_arch(
                                "sm_" + std::to_string(def.min_arch) + "a")))
    throw_invalid("family.arch_specific: code for an architecture-specific target runs on that architecture alone: set "
                  "min_arch = max_arch to one that has such a target (90: sm_90a)");
  if (def.program && def.program_id.empty()) def.program_id = def.program->id;
  if (!def.program_id.empty()) {
    // The launches are C++: a definition read from text names them, and only the process that has the code
    // (the library's own families, in every process) can build the family.
    if (!def.program)
      throw_invalid("family \"" + n + "\": its launches are C++ code (program " + def.program_id + ") that this "
                    "process does not have; only the library's built-in family \"" + n + "\" of the same build has it");
    if (def.program_id != def.program->id || def.program->id.empty() || def.program->id.find_first_of(" \t\n#") != std::string::npos)
      throw_invalid("family.program: its id must be one word and equal program_id (\"" + def.program->id + "\" vs \"" +
                    def.program_id + "\")");
    if (!def.program->plan || !def.program->bind) throw_invalid("family.program: plan and bind are required");
    if (!def.launch.kernel.empty() || !def.then.empty())
      throw_invalid("family.program: a family with a program has no kernel or then lines (the program launches)");
    if (!def.tensor_maps.empty())
      throw_invalid("family.program: a program encodes its own tensor maps (declare none)");
  }
  if (def.space_fn && def.space_version.empty())
    throw_invalid("family.space_version: a family with a space_fn must name the version of the code behind it "
                  "(e.g. a hash of its sources): stored winners are valid only for the space that chose them");
  std::set<std::string> taken;
  // sm_count is the device's (kFamilySmCount), for launch expressions, and dram_gbps its bandwidth
  // (kFamilyDramGBps), for programs: no name of the family may hide them.
  const auto not_reserved = [](const std::string& name, const std::string& what) {
    if (name == kFamilySmCount)
      throw_invalid(what + ": \"" + name + "\" is reserved (launch expressions read the device's SM count under it)");
    if (name == kFamilyDramGBps)
      throw_invalid(what + ": \"" + name + "\" is reserved (programs read the device's DRAM bandwidth under it)");
  };
  for (const std::string& entry : def.dims) not_reserved(entry.substr(0, entry.find(':')), "family.dims");
  for (const FamilyAlign& a : def.aligns) not_reserved(a.name, "family.aligns");
  for (const FamilyLet& l : def.lets) not_reserved(l.name, "family.lets");
  for (const FamilyScalar& sc : def.scalars) not_reserved(sc.name, "family.scalars");
  for (const FamilyParam& p : def.params) not_reserved(p.name, "family.params");
  for (const FamilyBuffer& b : def.buffers) not_reserved(b.name, "family.buffers");
  for (const FamilyTensorMap& t : def.tensor_maps) not_reserved(t.name, "family.tensor_maps");
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
  for (const FamilyTensorMap& t : def.tensor_maps) {
    const std::string w = "family.tensor_maps." + t.name;
    if (!is_identifier(t.name)) throw_invalid("family.tensor_maps: \"" + t.name + "\" is not an identifier");
    if (!taken.insert(t.name).second) throw_invalid(w + ": the name is also a dim, a param, a buffer or another tensor map");
    Impl::Map c;
    for (std::size_t b = 0; b < def.buffers.size(); ++b)
      if (def.buffers[b].name == t.buffer) c.buffer = static_cast<int>(b);
    if (c.buffer < 0) throw_invalid(w + ": \"" + t.buffer + "\" is not a buffer");
    const std::size_t rank = t.dims.size();
    if (rank < 1 || rank > 5) throw_invalid(w + ".dims: 1 to 5 extents, got " + std::to_string(rank));
    if (t.strides.size() != rank - 1)
      throw_invalid(w + ".strides: one per dim after the first (" + std::to_string(rank - 1) + "), got " +
                    std::to_string(t.strides.size()));
    if (t.box.size() != rank)
      throw_invalid(w + ".box: one extent per dim (" + std::to_string(rank) + "), got " + std::to_string(t.box.size()));
    const auto compile = [&](const std::vector<std::string>& list, const char* part, std::vector<Expr>& out) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string wi = w + "." + part + "[" + std::to_string(i) + "]";
        require_text(list[i], wi);
        out.push_back(Expr::parse(list[i], wi));
        check_names(both, out.back(), wi, "a dim or a param");
      }
    };
    compile(t.dims, "dims", c.dims);
    compile(t.strides, "strides", c.strides);
    compile(t.box, "box", c.box);
    require_text(t.swizzle, w + ".swizzle");
    c.swizzle = Expr::parse(t.swizzle.empty() ? "0" : t.swizzle, w + ".swizzle");
    check_names(both, c.swizzle, w + ".swizzle", "a dim or a param");
    m.maps.push_back(std::move(c));
  }
  if (!def.tensor_maps.empty() && def.min_arch < 90)
    throw_invalid("family.min_arch: a family with tensor maps runs on sm_90 or later (TMA): set min_arch = 90");
  if (!def.program)
    m.launch = compile_launch(def.launch, "family.kernel", m.params, m.dims, def.buffers, m.params, m.type_dims, def.scalars,
                              def.tensor_maps);
  for (std::size_t i = 0; i < def.then.size(); ++i)
    m.then.push_back(compile_launch(def.then[i], "family.then[" + std::to_string(i) + "]", m.params, m.dims, def.buffers,
                                    m.params, m.type_dims, def.scalars, def.tensor_maps));
  if (!def.reference.kernel.empty()) {
    m.reference = compile_launch(def.reference, "family.reference", {}, m.dims, def.buffers, m.params, m.type_dims,
                                 def.scalars, def.tensor_maps, /*dims_in_targs=*/true);
    // The reference runs on the caller's buffers with nothing lent: it cannot use the engine's scratch.
    for (const LaunchArg& a : m.reference.args)
      if (a.kind == FamilyKernelArg::Buffer && def.buffers[static_cast<std::size_t>(a.buffer)].role == BufferRole::Scratch)
        throw_invalid("family.reference: passes the scratch buffer '" + def.buffers[static_cast<std::size_t>(a.buffer)].name +
                      "' (a reference writes the outputs from the inputs alone)");
    // The reference has no configuration: the maps it passes are evaluated over the problem alone.
    for (const LaunchArg& a : m.reference.args) {
      if (a.kind != FamilyKernelArg::TensorMap) continue;
      const Impl::Map& map = m.maps[static_cast<std::size_t>(a.tensor_map)];
      std::vector<const Expr*> all;
      for (const auto* list : {&map.dims, &map.strides, &map.box})
        for (const Expr& e : *list) all.push_back(&e);
      all.push_back(&map.swizzle);
      for (const Expr* e : all)
        for (const std::string& id : e->identifiers())
          if (m.params.count(id))
            throw_invalid("family.reference: passes the tensor map '" + def.tensor_maps[static_cast<std::size_t>(a.tensor_map)].name +
                          "', which uses the param '" + id + "' (the reference has no configuration)");
    }
    // An inout buffer's result depends on its initial values: a reference that does not take it cannot
    // compute what a candidate is compared with.
    for (std::size_t b = 0; b < def.buffers.size(); ++b)
      if (def.buffers[b].role == BufferRole::InOut &&
          std::none_of(m.reference.args.begin(), m.reference.args.end(), [&](const LaunchArg& a) {
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
    if (kv.first != kFamilySmCount && kv.first != kFamilyDramGBps &&
        std::find(impl_->problem_names.begin(), impl_->problem_names.end(), kv.first) == impl_->problem_names.end())
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
    // A launch shape whatever the device: on one SM where the caller names no device.
    FamilyValues with_sms;
    const FamilyValues* launch_problem = &problem;
    if (!problem.count(kFamilySmCount)) {
      with_sms = problem;
      with_sms[kFamilySmCount] = 1;
      launch_problem = &with_sms;
    }
    if (impl_->def.program) {
      impl_->def.program->plan(config, problem, sm_count_of(problem));
      return "";
    }
    shape_of(impl_->launch, impl_->def.launch.kernel, config, *launch_problem, name() + " kernel");
    for (std::size_t i = 0; i < impl_->then.size(); ++i)
      shape_of(impl_->then[i], impl_->def.then[i].kernel, config, *launch_problem, name() + " then[" + std::to_string(i) + "]");
    for (std::size_t i = 0; i < impl_->maps.size(); ++i) map_full(i, config, problem);
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
  if (impl_->def.program && impl_->def.program->space) {
    for (FamilyValues& c : impl_->def.program->space(full, sm_count_of(problem, 0)))
      if (check_full(c, full).empty()) out.push_back(std::move(c));
    return out;
  }
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
  if (impl_->def.program && impl_->def.program->default_config) {
    FamilyValues c = impl_->def.program->default_config(full, sm_count_of(problem, 0));
    const std::string why = check_full(c, full);
    if (!why.empty())  // a requirement the problem breaks (TMA's alignment, ...): no configuration fits it
      throw Error(ErrorKind::Unsupported, name() + ": no configuration fits " + problem_text(problem) + " (default " +
                                              config_text(c) + ": " + why + ")");
    return c;
  }
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
  if (impl_->def.program) return plan(config, problem).launches.front().shape;
  return shape_of(impl_->launch, impl_->def.launch.kernel, config, impl_->full(problem), name() + " kernel");
}

FamilyPlan Family::plan(const FamilyValues& config, const FamilyValues& problem) const {
  const FamilyValues full = impl_->full(problem);
  if (impl_->def.program) {
    FamilyPlan p = impl_->def.program->plan(config, full, sm_count_of(problem));
    if (p.launches.empty()) throw Error(ErrorKind::Internal, name() + ": the program planned no launch (please report)");
    return p;
  }
  FamilyValues launch_problem = full;
  if (!launch_problem.count(kFamilySmCount)) launch_problem[kFamilySmCount] = 1;
  FamilyPlan p;
  p.launches.push_back({shape_of(impl_->launch, impl_->def.launch.kernel, config, launch_problem, name() + " kernel"), false});
  for (std::size_t i = 0; i < impl_->then.size(); ++i)
    p.launches.push_back({shape_of(impl_->then[i], impl_->def.then[i].kernel, config, launch_problem,
                                   name() + " then[" + std::to_string(i) + "]"),
                          false});
  p.scratch_bytes = scratch_bytes(config, problem);
  return p;
}

FamilyLaunchShape Family::reference_shape(const FamilyValues& problem) const {
  if (impl_->def.reference.kernel.empty())
    throw_invalid(name() + ": the family has no reference kernel (add \"reference = ...\")");
  return shape_of(impl_->reference, impl_->def.reference.kernel, {}, impl_->full(problem), name() + " reference");
}

std::vector<FamilyLaunchParams> Family::bind(const FamilyValues& config, const FamilyValues& problem,
                                             const FamilyRunBinding& run) const {
  if (!impl_->def.program) throw_invalid(name() + ": bind is for a family with a program (FamilyDef::program)");
  return impl_->def.program->bind(config, impl_->full(problem), run);
}

std::string Family::name_expression(const FamilyValues& config, const FamilyValues& problem) const {
  if (impl_->def.program) {
    if (problem.empty())
      throw_invalid(name() + ": its kernel's name follows the problem (a program plans it): give the problem");
    return plan(config, problem).launches.front().shape.name_expression;
  }
  return name_expression_of(impl_->def.launch.kernel, impl_->launch.targs, config, problem);
}

std::string Family::reference_name_expression(const FamilyValues& problem) const {
  if (impl_->def.reference.kernel.empty()) return "";
  // Its template arguments may use any dim (it has no configuration), and so need the problem's values.
  return name_expression_of(impl_->def.reference.kernel, impl_->reference.targs, {},
                            problem.empty() ? problem : impl_->full(problem));
}

std::vector<FamilyKernelArg> Family::kernel_args(const FamilyValues& config, const FamilyValues& problem) const {
  if (impl_->def.program) throw_invalid(name() + ": its program binds the kernels' arguments (FamilyProgram::bind)");
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
  if (impl_->def.program) return plan(config, problem).scratch_bytes;
  const std::vector<long long> elems = buffer_elements(problem, config);
  std::size_t at = 0;
  for (std::size_t i = 0; i < elems.size(); ++i) {
    if (impl_->def.buffers[i].role != BufferRole::Scratch) continue;
    const long long bytes = std::max(1LL, elems[i]) * dtype_bytes(buffer_dtype(i, problem));
    at += static_cast<std::size_t>((bytes + kFamilyScratchAlign - 1) / kFamilyScratchAlign * kFamilyScratchAlign);
  }
  return at;
}

FamilyTensorMapShape Family::tensor_map_shape(std::size_t index, const FamilyValues& config,
                                              const FamilyValues& problem) const {
  if (index >= impl_->maps.size()) throw_invalid(name() + ": no tensor map " + std::to_string(index));
  return map_full(index, config, impl_->full(problem));
}

FamilyTensorMapShape Family::map_full(std::size_t index, const FamilyValues& config, const FamilyValues& problem) const {
  const Impl::Map& c = impl_->maps[index];
  const std::string w = name() + " tensor map " + impl_->def.tensor_maps[index].name;
  FamilyTensorMapShape s;
  s.buffer = c.buffer;
  s.dtype = buffer_dtype(static_cast<std::size_t>(c.buffer), problem);
  s.rank = static_cast<int>(c.dims.size());
  const long long eb = dtype_bytes(s.dtype);
  const auto value = [&](const Expr& e, const std::string& what, long long lo, long long hi) {
    const long long v = e.eval(problem, config);
    if (v < lo || v > hi)
      throw_invalid(w + ": " + what + " \"" + e.text() + "\" = " + std::to_string(v) + " (" + std::to_string(lo) + ".." +
                    std::to_string(hi) + ")");
    return v;
  };
  // The offset of the last element the map spans, in elements: it must lie in the buffer.
  long long last = 0;
  for (int d = 0; d < s.rank; ++d) {
    const std::string i = "[" + std::to_string(d) + "]";
    s.dims[d] = static_cast<unsigned long long>(value(c.dims[static_cast<std::size_t>(d)], "dims" + i, 1, 1LL << 32));
    s.box[d] = static_cast<unsigned>(value(c.box[static_cast<std::size_t>(d)], "box" + i, 1, 256));
    long long stride = 1;
    if (d > 0) {
      stride = value(c.strides[static_cast<std::size_t>(d - 1)], "strides" + i, 1, ((1LL << 40) - 1) / eb);
      if (stride * eb % 16 != 0)
        throw_invalid(w + ": strides" + i + " = " + std::to_string(stride) + " elements = " + std::to_string(stride * eb) +
                      " bytes (TMA needs a multiple of 16 bytes)");
      s.stride_bytes[d - 1] = static_cast<unsigned long long>(stride * eb);
    }
    last = detail::checked_add(last, detail::checked_mul(static_cast<long long>(s.dims[d]) - 1, stride, w.c_str()), w.c_str());
  }
  s.swizzle_bytes = static_cast<int>(c.swizzle.eval(problem, config));
  if (s.swizzle_bytes != 0 && s.swizzle_bytes != 32 && s.swizzle_bytes != 64 && s.swizzle_bytes != 128)
    throw_invalid(w + ": swizzle = " + std::to_string(s.swizzle_bytes) + " (0, 32, 64 or 128 bytes)");
  const long long row = static_cast<long long>(s.box[0]) * eb;
  if (row % 16 != 0)
    throw_invalid(w + ": box[0] = " + std::to_string(s.box[0]) + " elements = " + std::to_string(row) +
                  " bytes (TMA moves whole 16-byte chunks: a multiple of 16 bytes)");
  if (s.swizzle_bytes != 0 && row > s.swizzle_bytes)
    throw_invalid(w + ": box[0] = " + std::to_string(row) + " bytes, wider than the " + std::to_string(s.swizzle_bytes) +
                  "-byte swizzle span");
  const std::vector<long long> elements = buffer_elements(problem, config);
  if (last >= elements[static_cast<std::size_t>(c.buffer)])
    throw_invalid(w + ": spans " + std::to_string(last + 1) + " elements of buffer " + impl_->def.buffers[static_cast<std::size_t>(c.buffer)].name +
                  ", which has " + std::to_string(elements[static_cast<std::size_t>(c.buffer)]));
  return s;
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

std::string Family::target_arch(const std::string& arch) const {
  if (!impl_->def.arch_specific || arch.empty() || arch.back() == 'a') return arch;
  return arch + "a";
}

double Family::tolerance_for(DType t) const {
  const auto it = impl_->def.dtype_tolerance.find(t);
  return it == impl_->def.dtype_tolerance.end() ? impl_->def.tolerance : it->second;
}

FamilyBankReport Family::analyze(const FamilyValues& config, const FamilyValues& problem) const {
  FamilyBankReport r;
  if (impl_->def.program && impl_->def.program->analyze) return impl_->def.program->analyze(config, impl_->full(problem));
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

}  // namespace swz
