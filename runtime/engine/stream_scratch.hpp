// runtime (internal): stream-ordered scratch for the engine's launches -- a memory pool that keeps what it
// has, and an allocation from it freed on its stream when it goes (the GEMM's workspaces and staged
// copies, a family's scratch buffers).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "swzjit/device.hpp"

namespace swz {
namespace detail {

/// A memory pool on `device` whose release threshold is "never", so a repeated call allocates without a
/// driver call into the OS. `what` names it in errors ("the split-K workspace"), `hint` says what the
/// caller can do instead (appended to the error). The caller owns the pool (cuMemPoolDestroy).
CUmemoryPool create_keeping_pool(int device, const std::string& what, const std::string& hint);

/// A stream-ordered allocation from `pool` (cuMemAllocFromPoolAsync), freed on the same stream when the
/// object goes: after every kernel enqueued before, so an error between launches neither leaks it nor
/// frees it under a kernel that still uses it.
class StreamScratch {
 public:
  /// `what` names the scratch and what the caller can do without it, for the error when the device is full.
  StreamScratch(std::size_t bytes, int device, CUstream stream, CUmemoryPool pool, const std::string& what);
  ~StreamScratch();
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  DevicePtr ptr() const noexcept { return ptr_; }

 private:
  DevicePtr ptr_ = 0;
  int device_;
  CUstream stream_;
};

}  // namespace detail
}  // namespace swz
