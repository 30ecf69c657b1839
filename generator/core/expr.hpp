// generator/core: the small integer expression language of declared families (grid, block, shared
// memory, buffer sizes, constraints, template and kernel arguments; docs/ARCHITECTURE.md, "Families").
// Parsed once when a family is registered, evaluated per problem and configuration on 64-bit integers
// with every overflow and division by zero reported, never undefined.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace swz {
namespace detail {

class Expr {
 public:
  Expr() = default;
  /// Parses `text`. @throws Error(InvalidArgument) starting with `what` and saying where it failed.
  static Expr parse(const std::string& text, const std::string& what);

  /// Evaluates with identifiers looked up in `first`, then `second`.
  /// @throws Error(InvalidArgument) starting with what was given to parse(), for an unknown name, a
  /// division by zero, an overflow, or a bad function argument (log2 of a non-power of two, ...).
  long long eval(const std::map<std::string, long long>& first,
                 const std::map<std::string, long long>& second = {}) const;

  /// The identifiers it uses (not the function names), sorted, without repeats.
  std::vector<std::string> identifiers() const;
  const std::string& text() const noexcept { return text_; }
  bool empty() const noexcept { return nodes_.empty(); }

 private:
  struct Node {
    enum Kind { Number, Name, Unary, Binary, Call } kind = Number;
    std::string op;  // operator, function or identifier name
    long long value = 0;
    int a = -1, b = -1;  // child node indexes
  };
  long long eval_node(int index, const std::map<std::string, long long>& first,
                      const std::map<std::string, long long>& second) const;
  friend class ExprParser;

  std::string text_, what_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

/// True when `text` is a C identifier.
bool is_identifier(const std::string& text);

}  // namespace detail
}  // namespace swz
