// generator/families/transpose: the transpose kernel family on the family contract (transpose_family.cpp)
// and the conversions between the typed API (TransposeConfig, include/swzjit/transpose.hpp) and its values.
#pragma once

#include "swzjit/family.hpp"
#include "swzjit/transpose.hpp"

namespace swz {
namespace detail {

/// The registered definition ("transpose"): the same name expressions, space, defaults, launch shapes and
/// bank analysis as the typed functions of include/swzjit/transpose.hpp.
FamilyDef transpose_family();

/// A typed config's param values (its dtype is the problem's "dtype" dim, not a param).
FamilyValues transpose_family_config(const TransposeConfig& config);
/// Back: the config of `values` for element type `dtype`. @throws InvalidArgument when a param is missing.
TransposeConfig transpose_config_of(const FamilyValues& values, DType dtype);

/// A resolved transpose problem's values (what Family::parse_problem would read): `align_in`/`align_out`
/// are the pointers' alignments in bytes (powers of two, <= 16).
FamilyValues transpose_family_problem(DType dtype, long long rows, long long cols, long long ld_in, long long ld_out,
                                      long long batch, long long stride_in, long long stride_out, int align_in,
                                      int align_out);

}  // namespace detail
}  // namespace swz
