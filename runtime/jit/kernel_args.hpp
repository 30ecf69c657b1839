// runtime/jit (internal): a declared family's evaluated kernel arguments (swz::FamilyKernelArg) packed
// into the void*[] a launch takes; shared by the engine (runtime/engine/engine_family.cpp) and the
// benchmark worker (runtime/worker/worker_family.cpp), which differ only in where a buffer points.
#pragma once

#include <functional>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace detail {

class PackedArgs {
 public:
  PackedArgs() = default;
  /// `pointer_of(i)`: the device address of buffer i of the definition.
  PackedArgs(const std::vector<FamilyKernelArg>& list, const std::function<DevicePtr(int)>& pointer_of) {
    // Sized first: the addresses taken below must not move.
    ptrs_.reserve(list.size());
    i64_.reserve(list.size());
    i32_.reserve(list.size());
    for (const FamilyKernelArg& a : list) {
      if (a.kind == FamilyKernelArg::Buffer) {
        ptrs_.push_back(pointer_of(a.buffer));
        args_.push_back(&ptrs_.back());
      } else if (a.kind == FamilyKernelArg::Int32) {
        i32_.push_back(static_cast<int>(a.value));
        args_.push_back(&i32_.back());
      } else {
        i64_.push_back(a.value);
        args_.push_back(&i64_.back());
      }
    }
  }
  PackedArgs(const PackedArgs&) = delete;
  PackedArgs& operator=(const PackedArgs&) = delete;
  PackedArgs(PackedArgs&&) = default;  // vectors move their storage: the addresses stay valid
  PackedArgs& operator=(PackedArgs&&) = default;

  void** data() { return args_.data(); }

 private:
  std::vector<unsigned long long> ptrs_;
  std::vector<long long> i64_;
  std::vector<int> i32_;
  std::vector<void*> args_;
};

}  // namespace detail
}  // namespace swz
