// runtime/tune (internal): the support kernel that checks a declared family's candidates on the GPU
// (templates/family_check.cuh), compiled once per tune and architecture by runtime/tune/autotune_family.cpp.
#pragma once

#include <functional>
#include <string>

#include "swzjit/cache.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace detail {

/// The NVRTC request for swz::tpl::family_check_kernel on `arch` (one kernel for every family dtype).
CompileRequest family_check_request(const std::string& arch);

/// The check kernel for `arch` through the cache: compiled on the first tune, served from the cache after.
KernelEntry compile_family_check_kernel(Cache& cache, const std::string& arch, const std::function<void()>& on_compile);

}  // namespace detail
}  // namespace swz
