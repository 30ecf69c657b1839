// runtime/jit (internal): a declared family's evaluated kernel arguments (swz::FamilyKernelArg) packed
// into the void*[] a launch takes; shared by the engine (runtime/engine/engine_family.cpp) and the
// benchmark worker (runtime/worker/worker_family.cpp), which differ only in where a buffer points.
#pragma once

#include <cstring>
#include <functional>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace detail {

class PackedArgs {
 public:
  PackedArgs() = default;
  /// `pointer_of(i)`: the device address of buffer i of the definition. `as_struct` (FamilyLaunch::packed):
  /// the kernel takes the arguments as one struct, fields at their natural alignment.
  PackedArgs(const std::vector<FamilyKernelArg>& list, const std::function<DevicePtr(int)>& pointer_of,
             bool as_struct = false) {
    if (as_struct) {
      // At most 8 bytes per field, whatever the padding.
      struct_.assign(list.size() + 1, 0);
      unsigned char* base = reinterpret_cast<unsigned char*>(struct_.data());
      std::size_t at = 0;
      for (const FamilyKernelArg& a : list) {
        const std::size_t width = a.kind == FamilyKernelArg::Int32 || a.kind == FamilyKernelArg::Float32 ? 4 : 8;
        at = (at + width - 1) / width * width;
        if (a.kind == FamilyKernelArg::Buffer) {
          const unsigned long long p = pointer_of(a.buffer);
          std::memcpy(base + at, &p, 8);
        } else if (a.kind == FamilyKernelArg::Int32) {
          const int v = static_cast<int>(a.value);
          std::memcpy(base + at, &v, 4);
        } else if (a.kind == FamilyKernelArg::Float32) {
          const float v = static_cast<float>(a.real);
          std::memcpy(base + at, &v, 4);
        } else if (a.kind == FamilyKernelArg::Float64) {
          std::memcpy(base + at, &a.real, 8);
        } else {
          std::memcpy(base + at, &a.value, 8);
        }
        at += width;
      }
      args_.push_back(struct_.data());
      return;
    }
    // Sized first: the addresses taken below must not move.
    ptrs_.reserve(list.size());
    i64_.reserve(list.size());
    i32_.reserve(list.size());
    f32_.reserve(list.size());
    f64_.reserve(list.size());
    for (const FamilyKernelArg& a : list) {
      if (a.kind == FamilyKernelArg::Buffer) {
        ptrs_.push_back(pointer_of(a.buffer));
        args_.push_back(&ptrs_.back());
      } else if (a.kind == FamilyKernelArg::Int32) {
        i32_.push_back(static_cast<int>(a.value));
        args_.push_back(&i32_.back());
      } else if (a.kind == FamilyKernelArg::Float32) {
        f32_.push_back(static_cast<float>(a.real));
        args_.push_back(&f32_.back());
      } else if (a.kind == FamilyKernelArg::Float64) {
        f64_.push_back(a.real);
        args_.push_back(&f64_.back());
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
  std::vector<unsigned long long> ptrs_, struct_;
  std::vector<long long> i64_;
  std::vector<int> i32_;
  std::vector<float> f32_;
  std::vector<double> f64_;
  std::vector<void*> args_;
};

}  // namespace detail
}  // namespace swz
