// runtime/worker (internal): the benchmark worker's side of a declared family (include/swzjit/family.hpp):
// buffers sized by the family's own expressions, random inputs, guarded and poisoned outputs, the
// reference kernel's outputs computed once, and each candidate's outputs compared with them on the GPU
// (templates/family_check.cuh).
#pragma once

#include <memory>

#include "runtime/worker/worker_target.hpp"

namespace swz {
namespace detail {
namespace worker {

/// @throws Error(InvalidArgument) for a definition or problem that does not parse or check, and
/// Error from CUDA when the buffers cannot be allocated.
std::unique_ptr<Target> make_family_target(const FamilyDesc& desc, int device, CUstream stream);

}  // namespace worker
}  // namespace detail
}  // namespace swz
