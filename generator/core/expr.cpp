// generator/core: the expression language of declared families (generator/core/expr.hpp): a recursive
// descent parser into a node array, and an evaluator on 64-bit integers that reports overflow.
#include "generator/core/expr.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <set>

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"

namespace swz {
namespace detail {

bool is_identifier(const std::string& text) {
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

namespace {

constexpr int kMaxDepth = 64;     // nesting: a hostile text must not exhaust the stack
constexpr int kMaxNodes = 4096;

const char* const kFunctions[] = {"min", "max", "ceil_div", "pow2", "log2", "abs", "elem_bytes", "pow2_align"};
int arity(const std::string& f) { return f == "min" || f == "max" || f == "ceil_div" ? 2 : 1; }
bool is_function(const std::string& name) {
  return std::find(std::begin(kFunctions), std::end(kFunctions), name) != std::end(kFunctions);
}

}  // namespace

class ExprParser {
 public:
  ExprParser(Expr& e, const std::string& text) : e_(e), s_(text) {}

  void run() {
    e_.root_ = parse_or(0);
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + s_.substr(pos_, 1) + "'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw_invalid(e_.what_ + ": " + why + " at column " + std::to_string(pos_ + 1) + " of \"" + s_ + "\"");
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(const char* tok) {
    skip();
    const std::size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) != 0) return false;
    // "<" must not match the start of "<=", "!" not "!=", and so on.
    if (n == 1 && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=' && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!'))
      return false;
    pos_ += n;
    return true;
  }
  int add(Expr::Node node) {
    if (static_cast<int>(e_.nodes_.size()) >= kMaxNodes) fail("expression too long");
    e_.nodes_.push_back(std::move(node));
    return static_cast<int>(e_.nodes_.size()) - 1;
  }
  int binary(const std::string& op, int a, int b) {
    Expr::Node n;
    n.kind = Expr::Node::Binary;
    n.op = op;
    n.a = a;
    n.b = b;
    return add(n);
  }
  void deeper(int depth) const {
    if (depth > kMaxDepth) fail("nested too deeply");
  }

  int parse_or(int d) {
    deeper(d);
    int left = parse_and(d + 1);
    while (eat("||")) left = binary("||", left, parse_and(d + 1));
    return left;
  }
  int parse_and(int d) {
    int left = parse_cmp(d + 1);
    while (eat("&&")) left = binary("&&", left, parse_cmp(d + 1));
    return left;
  }
  int parse_cmp(int d) {
    int left = parse_add(d + 1);
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">"})
      if (eat(op)) return binary(op, left, parse_add(d + 1));
    return left;
  }
  int parse_add(int d) {
    int left = parse_mul(d + 1);
    for (;;) {
      if (eat("+")) left = binary("+", left, parse_mul(d + 1));
      else if (eat("-")) left = binary("-", left, parse_mul(d + 1));
      else return left;
    }
  }
  int parse_mul(int d) {
    int left = parse_unary(d + 1);
    for (;;) {
      if (eat("*")) left = binary("*", left, parse_unary(d + 1));
      else if (eat("/")) left = binary("/", left, parse_unary(d + 1));
      else if (eat("%")) left = binary("%", left, parse_unary(d + 1));
      else return left;
    }
  }
  int parse_unary(int d) {
    deeper(d);
    for (const char* op : {"-", "!", "+"})
      if (eat(op)) {
        Expr::Node n;
        n.kind = Expr::Node::Unary;
        n.op = op;
        n.a = parse_unary(d + 1);
        return add(n);
      }
    return parse_primary(d + 1);
  }
  int parse_primary(int d) {
    deeper(d);
    skip();
    if (pos_ >= s_.size()) fail("expected a number, a name or '('");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      const int inner = parse_or(d + 1);
      if (!eat(")")) fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      long long v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        const int digit = s_[pos_] - '0';
        if (v > (LLONG_MAX - digit) / 10) fail("number too large");
        v = v * 10 + digit;
        ++pos_;
      }
      if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        fail("a number followed by a letter");
      Expr::Node n;
      n.value = v;
      return add(n);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      Expr::Node n;
      n.op = s_.substr(start, pos_ - start);
      if (eat("(")) {
        if (!is_function(n.op)) fail("unknown function '" + n.op + "' (min, max, ceil_div, pow2, log2, abs, elem_bytes, pow2_align)");
        n.kind = Expr::Node::Call;
        n.a = parse_or(d + 1);
        if (arity(n.op) == 2) {
          if (!eat(",")) fail(n.op + " takes two arguments");
          n.b = parse_or(d + 1);
        }
        if (!eat(")")) fail("expected ')' after the arguments of " + n.op);
        return add(n);
      }
      n.kind = Expr::Node::Name;
      return add(n);
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  Expr& e_;
  const std::string& s_;
  std::size_t pos_ = 0;
};

Expr Expr::parse(const std::string& text, const std::string& what) {
  Expr e;
  e.text_ = text;
  e.what_ = what;
  ExprParser(e, e.text_).run();
  return e;
}

std::vector<std::string> Expr::identifiers() const {
  std::set<std::string> names;
  for (const Node& n : nodes_)
    if (n.kind == Node::Name) names.insert(n.op);
  return {names.begin(), names.end()};
}

long long Expr::eval(const std::map<std::string, long long>& first,
                     const std::map<std::string, long long>& second) const {
  if (root_ < 0) throw_invalid(what_ + ": empty expression");
  return eval_node(root_, first, second);
}

long long Expr::eval_node(int index, const std::map<std::string, long long>& first,
                          const std::map<std::string, long long>& second) const {
  const Node& n = nodes_[static_cast<std::size_t>(index)];
  auto fail = [&](const std::string& why) -> long long {
    throw_invalid(what_ + ": " + why + " in \"" + text_ + "\"");
  };
  switch (n.kind) {
    case Node::Number:
      return n.value;
    case Node::Name: {
      auto it = first.find(n.op);
      if (it != first.end()) return it->second;
      it = second.find(n.op);
      if (it != second.end()) return it->second;
      if (n.op == "sm_count")  // swz::kFamilySmCount
        return fail("sm_count (the device's SM count) was not given: the engine and the worker add it to the values "
                    "a launch is evaluated with; add it (swz::with_sm_count) when evaluating one yourself");
      return fail("unknown name '" + n.op + "'");
    }
    case Node::Unary: {
      const long long a = eval_node(n.a, first, second);
      if (n.op == "!") return a == 0 ? 1 : 0;
      if (n.op == "+") return a;
      if (a == LLONG_MIN) return fail("overflow");
      return -a;
    }
    case Node::Call: {
      const long long a = eval_node(n.a, first, second);
      if (n.op == "pow2") {
        if (a < 0 || a > 62) return fail("pow2 of " + std::to_string(a) + " (0..62)");
        return 1LL << a;
      }
      if (n.op == "log2") {
        if (a <= 0 || (a & (a - 1)) != 0) return fail("log2 of " + std::to_string(a) + ", not a power of two");
        long long k = 0;
        while ((1LL << k) < a) ++k;
        return k;
      }
      if (n.op == "abs") {
        if (a == LLONG_MIN) return fail("overflow");
        return a < 0 ? -a : a;
      }
      if (n.op == "elem_bytes") {
        // A type dim's value is its DType's code (docs/ARCHITECTURE.md, "Families").
        if (a < static_cast<long long>(DType::F32) || a > static_cast<long long>(DType::BF16))
          return fail("elem_bytes of " + std::to_string(a) + ", not an element type");
        return dtype_bytes(static_cast<DType>(a));
      }
      if (n.op == "pow2_align") {
        // The widest power-of-two access (<= 16 bytes) a byte offset allows; 0 allows every width.
        if (a < 0) return fail("pow2_align of " + std::to_string(a));
        long long r = 16;
        while (r > 1 && a % r != 0) r /= 2;
        return r;
      }
      const long long b = eval_node(n.b, first, second);
      if (n.op == "min") return std::min(a, b);
      if (n.op == "max") return std::max(a, b);
      // ceil_div
      if (b <= 0 || a < 0) return fail("ceil_div(" + std::to_string(a) + ", " + std::to_string(b) + ")");
      return a / b + (a % b != 0 ? 1 : 0);
    }
    case Node::Binary:
      break;
  }
  const long long a = eval_node(n.a, first, second);
  if (n.op == "&&" && a == 0) return 0;  // short-circuit, as in C
  if (n.op == "||" && a != 0) return 1;
  const long long b = eval_node(n.b, first, second);
  long long r = 0;
  const std::string& op = n.op;
  if (op == "+") {
    if (__builtin_add_overflow(a, b, &r)) return fail("overflow");
    return r;
  }
  if (op == "-") {
    if (__builtin_sub_overflow(a, b, &r)) return fail("overflow");
    return r;
  }
  if (op == "*") {
    if (__builtin_mul_overflow(a, b, &r)) return fail("overflow");
    return r;
  }
  if (op == "/" || op == "%") {
    if (b == 0) return fail("division by zero");
    if (a == LLONG_MIN && b == -1) return fail("overflow");
    return op == "/" ? a / b : a % b;
  }
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "&&" || op == "||") return b != 0;
  return fail("unknown operator '" + op + "'");
}

}  // namespace detail
}  // namespace swz
