// generator/core: the text form of a family definition (FamilyDef::parse / load / to_text,
// include/swzjit/family.hpp). One format serves .family files, the worker's Hello (the isolated
// benchmark process rebuilds the family from it) and the definition hash that keys tuned winners.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "generator/core/config_text.hpp"
#include "generator/core/expr.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace {

using detail::split_top_level;
using detail::trim;

constexpr const char* kSourceMarker = "--- source";

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

std::string format_double(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// "name<targs>(args)" -> the three parts; the template list is optional.
void parse_call(const std::string& text, FamilyLaunch& launch, const std::string& where) {
  const std::string t = trim(text);
  if (t.empty() || t.back() != ')') throw_invalid(where + ": expected NAME<TEMPLATE ARGS>(ARGS), got \"" + t + "\"");
  int depth = 0;
  std::size_t open = std::string::npos;
  for (std::size_t i = t.size(); i-- > 0;) {
    if (t[i] == ')') ++depth;
    if (t[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos) throw_invalid(where + ": unbalanced parentheses in \"" + t + "\"");
  const std::string inner = trim(t.substr(open + 1, t.size() - open - 2));
  launch.packed = inner.size() >= 2 && inner.front() == '{' && inner.back() == '}';
  launch.args = split_top_level(launch.packed ? inner.substr(1, inner.size() - 2) : inner);
  std::string head = trim(t.substr(0, open));
  launch.template_args.clear();
  if (!head.empty() && head.back() == '>') {
    const std::size_t lt = head.find('<');
    if (lt == std::string::npos) throw_invalid(where + ": '>' without '<' in \"" + head + "\"");
    launch.template_args = split_top_level(head.substr(lt + 1, head.size() - lt - 2));
    head = trim(head.substr(0, lt));
  }
  if (head.empty()) throw_invalid(where + ": no kernel name in \"" + t + "\"");
  launch.kernel = head;
}

std::string format_call(const FamilyLaunch& l) {
  std::string s = l.kernel;
  if (!l.template_args.empty()) s += "<" + join(l.template_args, ", ") + ">";
  return s + (l.packed ? "({" + join(l.args, ", ") + "})" : "(" + join(l.args, ", ") + ")");
}

// A fixed element type, or the name of a type dim (checked against the dims by swz::Family).
void buffer_dtype(const std::string& text, const std::string& where, FamilyBuffer& b) {
  try {
    b.dtype = parse_dtype(text);
  } catch (const Error& e) {
    if (!detail::is_identifier(text)) throw_invalid(where + ": " + e.what());
    b.dtype_dim = text;
  }
}

// "4", "-2" (a number) or "LO..HI" (every integer from LO to HI).
void param_values(const std::string& word, const std::string& where, std::vector<long long>& out) {
  constexpr long long kLimit = 1LL << 40;
  const std::size_t dots = word.find("..");
  if (dots == std::string::npos) {
    out.push_back(parse_integer(where, word, -kLimit, kLimit));
    return;
  }
  const long long lo = parse_integer(where, word.substr(0, dots), -kLimit, kLimit);
  const long long hi = parse_integer(where, word.substr(dots + 2), -kLimit, kLimit);
  if (hi < lo || hi - lo >= 4096) throw_invalid(where + ": range " + word + " must be LO..HI with LO <= HI, at most 4096 values");
  for (long long v = lo; v <= hi; ++v) out.push_back(v);
}

// A finite floating-point number, the whole text.
double number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) throw_invalid(what + " must be a number, got \"" + text + "\"");
  return v;
}

bool is_integer_text(const std::string& t) {
  std::size_t i = t.size() > 1 && t[0] == '-' ? 1 : 0;
  if (i == t.size()) return false;
  for (; i < t.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  return true;
}

// "BUFFER dims [E, ...] strides [E, ...] box [E, ...] swizzle E" (strides may be left out at rank 1;
// swizzle may be left out: 0).
FamilyTensorMap tensor_map(const std::string& name, const std::string& value, const std::string& where) {
  const std::string form = "expected \"tensormap NAME = BUFFER dims [E, ...] strides [E, ...] box [E, ...] swizzle 0|32|64|128\"";
  FamilyTensorMap t;
  t.name = name;
  std::size_t at = value.find_first_of(" \t");
  t.buffer = value.substr(0, at);
  bool have_dims = false, have_strides = false, have_box = false, have_swizzle = false;
  while (at != std::string::npos) {
    at = value.find_first_not_of(" \t", at);
    if (at == std::string::npos) break;
    const std::size_t end = value.find_first_of(" \t[", at);
    const std::string word = value.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (word == "swizzle") {
      if (have_swizzle || end == std::string::npos) throw_invalid(where + ": " + form);
      t.swizzle = trim(value.substr(end));
      if (t.swizzle.empty()) throw_invalid(where + ": " + form);
      have_swizzle = true;
      break;
    }
    std::vector<std::string>* list = word == "dims" ? &t.dims : word == "strides" ? &t.strides : word == "box" ? &t.box : nullptr;
    bool* seen = word == "dims" ? &have_dims : word == "strides" ? &have_strides : &have_box;
    if (!list || *seen) throw_invalid(where + ": " + form + ", got \"" + word + "\"");
    const std::size_t lb = value.find_first_not_of(" \t", end);
    if (lb == std::string::npos || value[lb] != '[') throw_invalid(where + ": " + form + " ('[' after " + word + ")");
    const std::size_t rb = value.find(']', lb);
    if (rb == std::string::npos) throw_invalid(where + ": " + form + " (no ']' after " + word + ")");
    const std::string inner = trim(value.substr(lb + 1, rb - lb - 1));
    if (!inner.empty()) *list = split_top_level(inner);
    *seen = true;
    at = rb + 1;
  }
  if (t.buffer.empty() || !have_dims || !have_box) throw_invalid(where + ": " + form);
  return t;
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid(what + ": cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

FamilyDef FamilyDef::parse(const std::string& text, const std::string& base_dir) {
  FamilyDef d;
  d.source_name.clear();
  bool have_source = false, have_kernel = false;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  std::size_t consumed = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    consumed += raw.size() + 1;
    const std::string where = "family line " + std::to_string(line_no);
    std::string line = raw;
    if (trim(line) == kSourceMarker) {
      if (have_source) throw_invalid(where + ": a second source");
      d.source = consumed <= text.size() ? text.substr(consumed) : std::string();
      have_source = true;
      break;
    }
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) throw_invalid(where + ": expected KEY = VALUE, got \"" + line + "\"");
    const std::vector<std::string> key = words(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    if (key.empty()) throw_invalid(where + ": no key before '='");
    const std::string& k = key[0];
    auto single = [&](const char* what) {
      if (key.size() != 1) throw_invalid(where + ": " + what + " takes no name before '='");
    };
    if (k == "param" || k == "buffer" || k == "align" || k == "let" || k == "scalar" || k == "tensormap") {
      if (key.size() != 2) throw_invalid(where + ": expected " + k + " NAME = ...");
    } else if (k == "tolerance") {
      if (key.size() > 2) throw_invalid(where + ": expected \"tolerance = V\" or \"tolerance DTYPE = V\"");
    } else {
      single(k.c_str());
    }
    if (k == "family") {
      d.name = value;
    } else if (k == "about") {
      d.about = value;
    } else if (k == "dims") {
      d.dims = words(value);
    } else if (k == "param") {
      FamilyParam p;
      p.name = key[1];
      const std::size_t semi = value.find(';');
      const std::string values = value.substr(0, semi);
      for (const std::string& v : words(values)) param_values(v, where + " " + p.name, p.values);
      if (p.values.empty()) throw_invalid(where + ": param " + p.name + " has no values");
      p.default_value = p.values.front();
      if (semi != std::string::npos) {
        const std::string rest = trim(value.substr(semi + 1));
        const std::vector<std::string> w = words(rest);
        if (w.size() < 2 || w[0] != "default")
          throw_invalid(where + ": expected \"param NAME = V1 V2 ... ; default V\" (V: a number or an expression)");
        const std::string def = trim(rest.substr(rest.find("default") + 7));
        if (is_integer_text(def)) p.default_value = parse_integer(where + " default", def, -(1LL << 40), 1LL << 40);
        else p.default_expr = def;
      }
      d.params.push_back(p);
    } else if (k == "align") {
      d.aligns.push_back(FamilyAlign{key[1], value});
    } else if (k == "let") {
      d.lets.push_back(FamilyLet{key[1], value});
    } else if (k == "scalar") {
      FamilyScalar sc;
      sc.name = key[1];
      sc.default_value = number(value, where + ": scalar " + sc.name);
      d.scalars.push_back(sc);
    } else if (k == "require") {
      d.constraints.push_back(value);
    } else if (k == "buffer") {
      // buffer NAME = DTYPE [ELEMENTS] input|output|scratch|inout
      const std::size_t lb = value.find('['), rb = value.rfind(']');
      if (lb == std::string::npos || rb == std::string::npos || rb < lb)
        throw_invalid(where + ": expected \"buffer NAME = DTYPE [ELEMENTS] input|output|scratch|inout\"");
      FamilyBuffer b;
      b.name = key[1];
      buffer_dtype(trim(value.substr(0, lb)), where, b);
      b.elements = trim(value.substr(lb + 1, rb - lb - 1));
      const std::string role = trim(value.substr(rb + 1));
      if (role == "input") b.role = BufferRole::Input;
      else if (role == "output") b.role = BufferRole::Output;
      else if (role == "scratch") b.role = BufferRole::Scratch;
      else if (role == "inout") b.role = BufferRole::InOut;
      else throw_invalid(where + ": buffer role must be input or output, or scratch or inout, got \"" + role + "\"");
      d.buffers.push_back(b);
    } else if (k == "tensormap") {
      d.tensor_maps.push_back(tensor_map(key[1], value, where));
    } else if (k == "kernel") {
      parse_call(value, d.launch, where);
      have_kernel = true;
    } else if (k == "grid") {
      d.launch.grid = split_top_level(value);
    } else if (k == "block") {
      d.launch.block = split_top_level(value);
    } else if (k == "smem") {
      d.launch.dynamic_smem = value;
    } else if (k == "then") {
      d.then.emplace_back();
      parse_call(value, d.then.back(), where);
    } else if (k == "then.grid" || k == "then.block" || k == "then.smem") {
      if (d.then.empty()) throw_invalid(where + ": " + k + " before any \"then = NAME<...>(...)\" line");
      if (k == "then.grid") d.then.back().grid = split_top_level(value);
      else if (k == "then.block") d.then.back().block = split_top_level(value);
      else d.then.back().dynamic_smem = value;
    } else if (k == "reference") {
      parse_call(value, d.reference, where);
    } else if (k == "reference.grid") {
      d.reference.grid = split_top_level(value);
    } else if (k == "reference.block") {
      d.reference.block = split_top_level(value);
    } else if (k == "reference.smem") {
      d.reference.dynamic_smem = value;
    } else if (k == "tolerance") {
      if (key.size() == 1) {
        d.tolerance = number(value, where + ": tolerance");
      } else {
        DType t;
        try {
          t = parse_dtype(key[1]);
        } catch (const Error& e) {
          throw_invalid(where + ": tolerance " + key[1] + ": " + e.what());
        }
        if (!d.dtype_tolerance.emplace(t, number(value, where + ": tolerance " + key[1])).second)
          throw_invalid(where + ": tolerance " + key[1] + " given twice");
      }
    } else if (k == "min_arch") {
      d.min_arch = static_cast<int>(parse_integer(where + " min_arch", value, 50, 200));
    } else if (k == "max_arch") {
      d.max_arch = static_cast<int>(parse_integer(where + " max_arch", value, 50, 200));
    } else if (k == "arch_specific") {
      d.arch_specific = parse_integer(where + " arch_specific", value, 0, 1) != 0;
    } else if (k == "program") {
      if (value.empty() || value.find_first_of(" \t") != std::string::npos)
        throw_invalid(where + ": program = ID (one word: the version of the family's C++ launches)");
      d.program_id = value;
    } else if (k == "source_name") {
      d.source_name = value;
    } else if (k == "source") {
      if (have_source) throw_invalid(where + ": a second source");
      const std::string path = !value.empty() && value[0] != '/' && !base_dir.empty() ? base_dir + "/" + value : value;
      d.source = read_file(path, where + " source");
      if (d.source_name.empty()) d.source_name = value.substr(value.find_last_of('/') + 1);
      have_source = true;
    } else {
      throw_invalid(where + ": unknown key \"" + k +
                    "\" (family, about, dims, align, let, scalar, param, require, buffer, tensormap, kernel, grid, block, smem, then, "
                    "then.grid, then.block, then.smem, reference, reference.grid, reference.block, reference.smem, "
                    "tolerance, min_arch, max_arch, arch_specific, program, source_name, source)");
    }
  }
  for (const FamilyBuffer& b : d.buffers) {
    if (b.dtype_dim.empty()) continue;
    const std::string declared = b.dtype_dim + ":type";
    if (std::find(d.dims.begin(), d.dims.end(), declared) == d.dims.end())
      throw_invalid("family buffer " + b.name + ": \"" + b.dtype_dim +
                    "\" is neither an element type (f32, f16, bf16) nor a dim declared \"" + declared + "\"");
  }
  // A program's launches are C++ (FamilyProgram): it has no kernel line.
  if (!have_kernel && d.program_id.empty()) throw_invalid("family: no \"kernel = NAME<...>(...)\" line");
  if (have_kernel && !d.program_id.empty())
    throw_invalid("family: \"kernel = ...\" and \"program = ...\" both given (a program makes the launches itself)");
  if (!have_source) throw_invalid("family: no source (\"source = FILE\" or a last \"--- source\" section)");
  if (d.source_name.empty()) d.source_name = (d.name.empty() ? "family" : d.name) + ".cu";
  return d;
}

FamilyDef FamilyDef::load(const std::string& path) {
  const std::string text = read_file(path, "family file");
  const std::size_t slash = path.find_last_of('/');
  return parse(text, slash == std::string::npos ? "." : path.substr(0, slash));
}

std::string FamilyDef::to_text() const {
  std::ostringstream os;
  os << "family = " << name << "\n";
  if (!about.empty()) os << "about = " << about << "\n";
  os << "dims = " << join(dims, " ") << "\n";
  for (const FamilyAlign& a : aligns) os << "align " << a.name << " = " << a.buffer << "\n";
  for (const FamilyLet& l : lets) os << "let " << l.name << " = " << l.expr << "\n";
  for (const FamilyParam& p : params) {
    os << "param " << p.name << " =";
    // Runs of consecutive values as ranges, so a wide param stays one readable line.
    for (std::size_t i = 0; i < p.values.size();) {
      std::size_t j = i;
      while (j + 1 < p.values.size() && p.values[j + 1] == p.values[j] + 1) ++j;
      if (j >= i + 2) os << " " << p.values[i] << ".." << p.values[j];
      else for (std::size_t k = i; k <= j; ++k) os << " " << p.values[k];
      i = j + 1;
    }
    os << " ; default " << (p.default_expr.empty() ? std::to_string(p.default_value) : p.default_expr) << "\n";
  }
  for (const FamilyScalar& sc : scalars) os << "scalar " << sc.name << " = " << format_double(sc.default_value) << "\n";
  for (const std::string& c : constraints) os << "require = " << c << "\n";
  for (const FamilyBuffer& b : buffers)
    os << "buffer " << b.name << " = " << (b.dtype_dim.empty() ? swz::to_string(b.dtype) : b.dtype_dim) << " [" << b.elements << "] "
       << to_string(b.role) << "\n";  // a role's own word: a definition without inout keeps its text and hash
  for (const FamilyTensorMap& t : tensor_maps) {
    os << "tensormap " << t.name << " = " << t.buffer << " dims [" << join(t.dims, ", ") << "]";
    if (!t.strides.empty()) os << " strides [" << join(t.strides, ", ") << "]";
    os << " box [" << join(t.box, ", ") << "] swizzle " << t.swizzle << "\n";
  }
  if (program_id.empty()) {
    os << "kernel = " << format_call(launch) << "\n";
    os << "grid = " << join(launch.grid, ", ") << "\n";
    os << "block = " << join(launch.block, ", ") << "\n";
    os << "smem = " << launch.dynamic_smem << "\n";
  } else {
    os << "program = " << program_id << "\n";
  }
  for (const FamilyLaunch& t : then) {
    os << "then = " << format_call(t) << "\n";
    os << "then.grid = " << join(t.grid, ", ") << "\n";
    os << "then.block = " << join(t.block, ", ") << "\n";
    os << "then.smem = " << t.dynamic_smem << "\n";
  }
  if (!reference.kernel.empty()) {
    os << "reference = " << format_call(reference) << "\n";
    os << "reference.grid = " << join(reference.grid, ", ") << "\n";
    os << "reference.block = " << join(reference.block, ", ") << "\n";
    os << "reference.smem = " << reference.dynamic_smem << "\n";
  }
  os << "tolerance = " << format_double(tolerance) << "\n";
  for (const auto& kv : dtype_tolerance) os << "tolerance " << swz::to_string(kv.first) << " = " << format_double(kv.second) << "\n";
  os << "min_arch = " << min_arch << "\n";
  // Written only when set, so definitions without them keep their text and hash.
  if (max_arch != 0) os << "max_arch = " << max_arch << "\n";
  if (arch_specific) os << "arch_specific = 1\n";
  os << "source_name = " << source_name << "\n";
  os << kSourceMarker << "\n" << source;
  return os.str();
}

const char* to_string(BufferRole r) {
  switch (r) {
    case BufferRole::Input: return "input";
    case BufferRole::Output: return "output";
    case BufferRole::Scratch: return "scratch";
    case BufferRole::InOut: return "inout";
  }
  return "?";
}

}  // namespace swz
