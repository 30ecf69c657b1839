// runtime/jit (internal): a declared family's evaluated kernel arguments (swz::FamilyKernelArg) packed
// into the void*[] a launch takes; shared by the engine (runtime/engine/engine_family.cpp) and the
// benchmark worker (runtime/worker/worker_family.cpp), which differ only in where a buffer points.
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace detail {

/// A CUtensorMap's 128 opaque bytes, as a kernel parameter takes them.
struct alignas(64) TensorMapBytes {
  unsigned long long bytes[16] = {};
};

/// The CUtensorMap of `shape` over `base` (cuTensorMapEncodeTiled through the lazily loaded driver, with
/// `device`'s context current), into `out`. `what` names the map in errors. @throws InvalidArgument when
/// `base` is not 16-byte aligned (before the driver is loaded), Error(Driver) when the driver refuses the map.
void encode_tensor_map(const FamilyTensorMapShape& shape, DevicePtr base, int device, const std::string& what,
                       TensorMapBytes& out);

/// The tensor maps the arguments in `list` name, evaluated for `config` on `problem` (indexed like
/// FamilyDef::tensor_maps; the entries no argument names stay default). Empty when none is named.
inline std::vector<FamilyTensorMapShape> tensor_map_shapes(const Family& f, const std::vector<FamilyKernelArg>& list,
                                                           const FamilyValues& config, const FamilyValues& problem) {
  std::vector<FamilyTensorMapShape> out;
  for (const FamilyKernelArg& a : list) {
    if (a.kind != FamilyKernelArg::TensorMap) continue;
    if (out.empty()) out.resize(f.def().tensor_maps.size());
    out[static_cast<std::size_t>(a.tensor_map)] = f.tensor_map_shape(static_cast<std::size_t>(a.tensor_map), config, problem);
  }
  return out;
}

class PackedArgs {
 public:
  PackedArgs() = default;
  /// `pointer_of(i)`: the device address of buffer i of the definition. `as_struct` (FamilyLaunch::packed):
  /// the kernel takes the arguments as one struct, fields at their natural alignment (a tensor map: 128
  /// bytes at a multiple of 64). `maps`: the evaluated tensor maps the list names (tensor_map_shapes),
  /// encoded here over their buffers' pointers for `device`; `family` names them in errors.
  PackedArgs(const std::vector<FamilyKernelArg>& list, const std::function<DevicePtr(int)>& pointer_of,
             bool as_struct = false, const std::vector<FamilyTensorMapShape>* maps = nullptr, const Family* family = nullptr,
             int device = 0) {
    std::size_t map_count = 0;
    for (const FamilyKernelArg& a : list) map_count += a.kind == FamilyKernelArg::TensorMap ? 1 : 0;
    maps_.reserve(map_count);
    for (const FamilyKernelArg& a : list) {
      if (a.kind != FamilyKernelArg::TensorMap) continue;
      const std::size_t i = static_cast<std::size_t>(a.tensor_map);
      if (!maps || i >= maps->size() || (*maps)[i].buffer < 0)
        throw Error(ErrorKind::Internal, "a tensor-map argument without its evaluated map (please report)");
      const std::string what = (family ? family->name() + " tensor map " + family->def().tensor_maps[i].name : "tensor map");
      maps_.emplace_back();
      encode_tensor_map((*maps)[i], pointer_of((*maps)[i].buffer), device, what, maps_.back());
    }
    if (as_struct) {
      // Enough for every field at its width and alignment, and the struct's tail padding (to 64 bytes).
      std::size_t words = 8;
      for (const FamilyKernelArg& a : list) words += a.kind == FamilyKernelArg::TensorMap ? 24 : 1;
      struct_.assign(words, 0);
      unsigned char* base = reinterpret_cast<unsigned char*>(struct_.data());
      std::size_t at = 0, map = 0;
      for (const FamilyKernelArg& a : list) {
        if (a.kind == FamilyKernelArg::TensorMap) {
          at = (at + 63) / 64 * 64;
          std::memcpy(base + at, maps_[map++].bytes, sizeof(TensorMapBytes));
          at += sizeof(TensorMapBytes);
          continue;
        }
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
    std::size_t map = 0;
    for (const FamilyKernelArg& a : list) {
      if (a.kind == FamilyKernelArg::TensorMap) {
        args_.push_back(maps_[map++].bytes);
      } else if (a.kind == FamilyKernelArg::Buffer) {
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
  std::vector<TensorMapBytes> maps_;
  std::vector<long long> i64_;
  std::vector<int> i32_;
  std::vector<float> f32_;
  std::vector<double> f64_;
  std::vector<void*> args_;
};

}  // namespace detail
}  // namespace swz
