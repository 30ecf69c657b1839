// tests/fuzz: the declared-family text form (FamilyDef::parse, generator/core/family_text.cpp) and the
// expression language (generator/core/expr.cpp) on arbitrary text. A definition that parses must print
// as text that parses to the same text, register as a Family, and answer every question the engine,
// tuner and tool ask (space, default, shapes, arguments, buffer sizes) with a value or a swz::Error,
// never a crash, a hang or a sanitizer report. Lines starting with "expr " are evaluated as expressions.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "generator/core/expr.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "fuzz_family: %s\n  first:  %s\n  second: %s\n", what, a.c_str(), b.c_str());
  std::abort();
}

void exercise_expression(const std::string& text) {
  swz::detail::Expr e;
  try {
    e = swz::detail::Expr::parse(text, "fuzz");
  } catch (const swz::Error&) {
    return;
  }
  // Every identifier bound, to small and to extreme values.
  for (long long v : {0LL, 1LL, 7LL, -3LL, (1LL << 40), (1LL << 62) - 1}) {
    std::map<std::string, long long> vars;
    for (const std::string& id : e.identifiers()) vars[id] = v;
    try {
      (void)e.eval(vars);
    } catch (const swz::Error&) {
    }
  }
}

void exercise_definition(const std::string& text) {
  swz::FamilyDef def;
  try {
    def = swz::FamilyDef::parse(text);
  } catch (const swz::Error&) {
    return;
  }
  const std::string printed = def.to_text();
  swz::FamilyDef again;
  try {
    again = swz::FamilyDef::parse(printed);
  } catch (const swz::Error& e) {
    fail("to_text() of a parsed definition does not parse", text, printed + "  (" + e.what() + ")");
  }
  if (again.to_text() != printed) fail("round trip is not stable", printed, again.to_text());
  std::unique_ptr<swz::Family> family;
  try {
    family = std::make_unique<swz::Family>(std::move(def));
  } catch (const swz::Error&) {
    return;
  }
  const swz::Family& f = *family;
  // A problem with every dim set to a few values, the space (bounded by the parser's own limits), the
  // default, then shapes and arguments of the first configurations.
  for (long long v : {0LL, 1LL, 3LL, 1000LL, (1LL << 40)}) {
    swz::FamilyValues problem;
    for (const std::string& d : f.def().dims) problem[d] = v;
    try {
      (void)f.problem_text(problem);
      (void)f.buffer_elements(problem);
    } catch (const swz::Error&) {
    }
    std::vector<swz::FamilyValues> space;
    try {
      space = f.space(problem);
      (void)f.default_config(problem);
    } catch (const swz::Error&) {
    }
    for (std::size_t i = 0; i < space.size() && i < 4; ++i) {
      try {
        const std::string t = f.config_text(space[i]);
        if (f.config_text(f.parse_config(t)) != t) fail("config text round trip", t, f.config_text(f.parse_config(t)));
        (void)f.check_config(space[i], problem);
        (void)f.name_expression(space[i]);
        (void)f.shape(space[i], problem);
        (void)f.plan(space[i], problem);
        (void)f.kernel_args(space[i], problem);
        (void)f.analyze(space[i]);
      } catch (const swz::Error&) {
      }
    }
    try {
      (void)f.reference_shape(problem);
      (void)f.reference_name_expression(problem);  // its template arguments may use dims
      (void)f.reference_args(problem);
    } catch (const swz::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16384) return -1;  // definitions are a few dozen lines
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.rfind("expr ", 0) == 0) {
    exercise_expression(text.substr(5));
    return 0;
  }
  exercise_definition(text);
  return 0;
}
