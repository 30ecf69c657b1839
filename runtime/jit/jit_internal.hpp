// runtime (internal): seams of runtime/jit/nvrtc.cpp that tests use to reach paths this machine's NVRTC
// would not take on its own (the PTX fallback for an architecture NVRTC does not list).
#pragma once

#include <string>
#include <vector>

#include "swzjit/jit.hpp"

namespace swz {
namespace detail {

/// compile(), with the list of real architectures NVRTC can emit cubins for given by the caller
/// instead of nvrtc_supported_archs(). An arch whose number is missing from `supported` is
/// compiled to PTX for the matching virtual architecture.
CompiledKernel compile_with_supported_archs(const CompileRequest& request, const std::vector<int>& supported);

/// The number of an arch string: "sm_90a" -> 90. Assumes is_known_arch(arch).
int arch_number(const std::string& arch);

}  // namespace detail
}  // namespace swz
