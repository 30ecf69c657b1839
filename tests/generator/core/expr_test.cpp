// tests/generator/core: the expression language of declared families (generator/core/expr.hpp).
#include <doctest/doctest.h>

#include <climits>
#include <string>

#include "generator/core/expr.hpp"
#include "swzjit/error.hpp"

using swz::detail::Expr;

namespace {

long long ev(const std::string& text, const std::map<std::string, long long>& v = {}) {
  return Expr::parse(text, "test").eval(v);
}

std::string error_of(const std::string& text, const std::map<std::string, long long>& v = {}) {
  try {
    ev(text, v);
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("expr: precedence, associativity and C integer semantics") {
  CHECK(ev("1 + 2 * 3") == 7);
  CHECK(ev("(1 + 2) * 3") == 9);
  CHECK(ev("10 - 3 - 2") == 5);
  CHECK(ev("100 / 10 / 5") == 2);
  CHECK(ev("-7 / 2") == -3);
  CHECK(ev("-7 % 3") == -1);
  CHECK(ev("2 * -3") == -6);
  CHECK(ev("1 < 2 && 3 >= 3 || 0") == 1);
  CHECK(ev("!(4 == 4) || 5 != 5") == 0);
  CHECK(ev("1 <= 0") == 0);
  CHECK(ev("0 && 1 / 0") == 0);  // short-circuit: the division is never evaluated
  CHECK(ev("1 || 1 / 0") == 1);
}

TEST_CASE("expr: names and functions") {
  const std::map<std::string, long long> v{{"rows", 1000}, {"TILE", 64}};
  CHECK(ev("ceil_div(rows, TILE)", v) == 16);
  CHECK(ev("min(rows, TILE) + max(rows, TILE)", v) == 1064);
  CHECK(ev("pow2(log2(TILE) + 1)", v) == 128);
  CHECK(Expr::parse("a * b + ceil_div(a, c)", "x").identifiers() == std::vector<std::string>{"a", "b", "c"});
  // Lookup order: the first map, then the second.
  CHECK(Expr::parse("n + m", "x").eval({{"n", 1}}, {{"n", 100}, {"m", 2}}) == 3);
}

TEST_CASE("expr: errors name what failed and never wrap") {
  CHECK(error_of("1 / 0").find("division by zero") != std::string::npos);
  CHECK(error_of("5 % (2 - 2)").find("division by zero") != std::string::npos);
  CHECK(error_of("9223372036854775807 + 1").find("overflow") != std::string::npos);
  CHECK(error_of("4611686018427387904 * 2").find("overflow") != std::string::npos);
  CHECK(error_of("-9223372036854775807 - 2").find("overflow") != std::string::npos);
  CHECK(error_of("99999999999999999999").find("too large") != std::string::npos);
  CHECK(error_of("nope + 1").find("unknown name 'nope'") != std::string::npos);
  CHECK(error_of("log2(12)").find("not a power of two") != std::string::npos);
  CHECK(error_of("pow2(63)").find("pow2") != std::string::npos);
  CHECK(error_of("ceil_div(5, 0)").find("ceil_div") != std::string::npos);
  CHECK(error_of("sqrt(4)").find("unknown function") != std::string::npos);
  CHECK(error_of("min(1)").find("two arguments") != std::string::npos);
  CHECK(error_of("1 +").find("column") != std::string::npos);
  CHECK(error_of("(1 + 2").find("')'") != std::string::npos);
  CHECK(error_of("3x").find("number followed by a letter") != std::string::npos);
  CHECK(error_of("1 2").find("unexpected") != std::string::npos);
  CHECK(error_of("").find("expected") != std::string::npos);
  CHECK(error_of("a ? 1 : 2", {{"a", 1}}).find("unexpected '?'") != std::string::npos);
  // Nesting is bounded: a hostile text cannot exhaust the stack.
  CHECK(error_of(std::string(5000, '(') + "1" + std::string(5000, ')')).find("nested too deeply") != std::string::npos);
  CHECK(error_of(std::string(5000, '-') + "1").find("nested too deeply") != std::string::npos);
}

TEST_CASE("expr: abs, elem_bytes and pow2_align") {
  CHECK(ev("abs(-7)") == 7);
  CHECK(ev("abs(7)") == 7);
  CHECK(error_of("abs(x)", {{"x", LLONG_MIN}}).find("overflow") != std::string::npos);
  CHECK(ev("elem_bytes(t)", {{"t", 0}}) == 4);  // DType::F32
  CHECK(ev("elem_bytes(t)", {{"t", 1}}) == 2);  // DType::F16
  CHECK(ev("elem_bytes(t)", {{"t", 2}}) == 2);  // DType::BF16
  CHECK(error_of("elem_bytes(3)").find("not an element type") != std::string::npos);
  CHECK(ev("pow2_align(0)") == 16);
  CHECK(ev("pow2_align(24)") == 8);
  CHECK(ev("pow2_align(48)") == 16);
  CHECK(ev("pow2_align(7)") == 1);
  CHECK(error_of("pow2_align(-4)").find("pow2_align") != std::string::npos);
  CHECK(error_of("abs(1, 2)").find("expected ')'") != std::string::npos);
}
