// generator/core (internal): a family's launches compiled once (generator/core/family.cpp validates a
// definition with them): template and kernel arguments parsed into expressions, then evaluated per
// configuration and problem into name expressions, launch shapes and kernel arguments.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "generator/core/expr.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace detail {

/// One template argument: an expression over params, or a verbatim type name.
struct TemplateArg {
  bool is_expr = false;
  Expr expr;
  std::string text;
  std::string type_dim;  ///< a type dim's name: expands to the problem's C++ element type
};

/// One kernel argument: a buffer (its index), an integer expression, a float, or a tensor map (its index).
struct LaunchArg {
  FamilyKernelArg::Kind kind = FamilyKernelArg::Int64;
  int buffer = -1;
  int tensor_map = -1;
  Expr expr;
  double real = 0;  ///< a float argument: a literal's value, or the scalar's default
  int scalar = -1;
};

/// A FamilyLaunch with every expression parsed and its names checked.
struct CompiledLaunch {
  std::vector<TemplateArg> targs;
  std::vector<LaunchArg> args;
  std::vector<Expr> grid, block;
  Expr smem;
};

/// Throws InvalidArgument naming `what` when `e` uses a name outside `allowed` ("is not " + may).
void check_names(const std::set<std::string>& allowed, const Expr& e, const std::string& what, const std::string& may);

/// Parses and checks launch `l` (`what` names it in errors, e.g. "family.kernel"). `params`: the names
/// the launch may use besides dims (none for the reference); `all_params`: every param of the family,
/// so that a reference naming one is refused rather than read as a type name. `dims`: every name of the
/// problem (dims, aligns, lets); `type_dims`: those a template argument may use, or with `dims_in_targs`
/// (the reference, which has no configuration and whose name is always made for a problem) every one.
CompiledLaunch compile_launch(const FamilyLaunch& l, const std::string& what, const std::set<std::string>& params,
                              const std::set<std::string>& dims, const std::vector<FamilyBuffer>& buffers,
                              const std::set<std::string>& all_params, const std::set<std::string>& type_dims,
                              const std::vector<FamilyScalar>& scalars, const std::vector<FamilyTensorMap>& maps = {},
                              bool dims_in_targs = false);

/// "kernel<evaluated template arguments>" for `config` on `problem` (the problem for type dims only).
std::string name_expression_of(const std::string& kernel, const std::vector<TemplateArg>& targs,
                               const FamilyValues& config, const FamilyValues& problem);

/// The evaluated shape; InvalidArgument naming `what` for a dimension out of the hardware's range.
FamilyLaunchShape shape_of(const CompiledLaunch& l, const std::string& kernel, const FamilyValues& config,
                           const FamilyValues& problem, const std::string& what);

/// The evaluated arguments (scalars at their defaults: Family::with_scalars sets them).
std::vector<FamilyKernelArg> args_of(const CompiledLaunch& l, const FamilyValues& config, const FamilyValues& problem);

}  // namespace detail
}  // namespace swz
