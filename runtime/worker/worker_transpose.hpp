// runtime/worker (internal): the benchmark worker's side of a transpose (runtime/worker/worker_transpose.cpp):
// the input filled on the GPU from the tune's seed, the output between 1 MiB guards, and each candidate's
// output checked on the GPU against the input (templates/transpose_check.cuh).
#pragma once

#include <memory>

#include "runtime/worker/worker_target.hpp"

namespace swz {
namespace detail {
namespace worker {

/// @throws Error(InvalidArgument) for a malformed problem (element size, empty, pitches, overlapping batch
/// strides), Error from CUDA when the buffers cannot be allocated.
std::unique_ptr<Target> make_transpose_target(const ProblemDesc& desc, int device, const DeviceInfo& info,
                                              CUstream stream);

}  // namespace worker
}  // namespace detail
}  // namespace swz
