// generator/families/gemm_sm90 (internal): the Hopper GEMM as the built-in family "gemm_sm90" on the family
// contract (gemm_sm90_family.cpp), and the conversions the typed GEMM API (runtime/engine/engine_gemm.cpp,
// runtime/tune/autotune_gemm.cpp) uses to run a GemmProblem through it.
#pragma once

#include <memory>
#include <string>

#include "generator/families/gemm/gemm_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace detail {

/// The definition (registered at start-up by generator/families/registry.cpp).
FamilyDef gemm_sm90_family();
/// The registered family (find_family("gemm_sm90")).
std::shared_ptr<const Family> gemm_sm90_builtin();

/// The family's problem is the GEMM frame of generator/families/gemm/gemm_family.hpp (gemm_family_problem,
/// gemm_family_swaps, gemm_family_frame).
/// A config's family values, and back (the dtypes and the layout come from the problem).
FamilyValues gemm_sm90_family_config(const Sm90GemmConfig& cfg);
Sm90GemmConfig gemm_sm90_config_of(const FamilyValues& config, const FamilyValues& problem);

}  // namespace detail
}  // namespace swz
