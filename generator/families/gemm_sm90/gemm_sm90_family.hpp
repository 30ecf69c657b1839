// generator/families/gemm_sm90 (internal): the Hopper GEMM as the built-in family "gemm_sm90" on the family
// contract (gemm_sm90_family.cpp), and the conversions the typed GEMM API (runtime/engine/engine_gemm.cpp,
// runtime/tune/autotune_gemm.cpp) uses to run a GemmProblem through it.
#pragma once

#include <memory>
#include <string>

#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace detail {

/// The definition (registered at start-up by generator/families/registry.cpp).
FamilyDef gemm_sm90_family();
/// The registered family (find_family("gemm_sm90")).
std::shared_ptr<const Family> gemm_sm90_builtin();

/// A resolved GemmProblem in the kernel's frame as the family's problem: C row-major (a column-major C is
/// computed as C^T = B^T A^T: A and B swap places, the caller passes them swapped, gemm_sm90_swaps), A
/// K- or M-contiguous (a_mn), B K- or N-contiguous (b_mn), and `align` (the pointers' alignment class, bytes
/// <= 16) for both operands' aligns.
FamilyValues gemm_sm90_family_problem(const GemmProblem& resolved, int align);
/// True when the family's A is the caller's B (a column-major C).
bool gemm_sm90_swaps(const GemmProblem& resolved);
/// The family's problem back as a GemmProblem in the frame (C row-major), what the kernel's host code takes.
GemmProblem gemm_sm90_frame_problem(const FamilyValues& problem);
/// A config's family values, and back (the dtypes and the layout come from the problem).
FamilyValues gemm_sm90_family_config(const Sm90GemmConfig& cfg);
Sm90GemmConfig gemm_sm90_config_of(const FamilyValues& config, const FamilyValues& problem);

}  // namespace detail
}  // namespace swz
