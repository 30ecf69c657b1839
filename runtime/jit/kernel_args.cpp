// runtime/jit: a declared family's tensor maps encoded for a launch (runtime/jit/kernel_args.hpp) through
// the lazily loaded driver's cuTensorMapEncodeTiled.
#include "runtime/jit/kernel_args.hpp"

#include <cstdint>
#include <cstring>

#include "runtime/driver/driver_api.hpp"

namespace swz {
namespace detail {

static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes), "a tensor-map argument is a CUtensorMap");

namespace {

CUtensorMapDataType data_type(DType t) {
  switch (t) {
    case DType::F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

CUtensorMapSwizzle swizzle_mode(int bytes) {
  switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

bool same_shape(const FamilyTensorMapShape& a, const FamilyTensorMapShape& b) {
  if (a.buffer != b.buffer || a.dtype != b.dtype || a.rank != b.rank || a.swizzle_bytes != b.swizzle_bytes) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.dims[d] != b.dims[d] || a.box[d] != b.box[d] || (d > 0 && a.stride_bytes[d - 1] != b.stride_bytes[d - 1]))
      return false;
  return true;
}

// The maps this thread encoded last: a run repeated on the same pointers (the usual case) copies its map
// instead of asking the driver again (cuTensorMapEncodeTiled is a pure function of its arguments).
struct RecentMap {
  FamilyTensorMapShape shape;
  DevicePtr base = 0;
  TensorMapBytes bytes;
  bool valid = false;
};
constexpr int kRecentMaps = 8;
thread_local RecentMap recent_maps[kRecentMaps];
thread_local int recent_next = 0;

std::string list_text(const unsigned long long* v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return "[" + s + "]";
}

}  // namespace

void encode_tensor_map(const FamilyTensorMapShape& shape, DevicePtr base, int device, const std::string& what,
                       TensorMapBytes& out) {
  if (base % 16 != 0)
    throw_invalid(what + ": the buffer's pointer is " + std::to_string(base & (~base + 1)) +
                  "-byte aligned; TMA needs 16 (declare an align for the buffer and require it >= 16 so such calls "
                  "are refused, or pass an aligned pointer)");
  for (const RecentMap& r : recent_maps)
    if (r.valid && r.base == base && same_shape(r.shape, shape)) {
      out = r.bytes;
      return;
    }
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elem_strides[5];
  for (int d = 0; d < shape.rank; ++d) {
    dims[d] = shape.dims[d];
    box[d] = shape.box[d];
    elem_strides[d] = 1;
    if (d > 0) strides[d - 1] = shape.stride_bytes[d - 1];
  }
  CUtensorMap map;
  std::memset(&map, 0, sizeof map);
  const ContextGuard guard(device);  // CUDA_ERROR_INVALID_CONTEXT without a current context
  const CUresult res = driver_api().cuTensorMapEncodeTiled(
      &map, data_type(shape.dtype), static_cast<cuuint32_t>(shape.rank), reinterpret_cast<void*>(static_cast<std::uintptr_t>(base)),
      dims, shape.rank > 1 ? strides : nullptr, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzle_mode(shape.swizzle_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  unsigned long long box_l[5];
  for (int d = 0; d < shape.rank; ++d) box_l[d] = shape.box[d];
  check(res, "cuTensorMapEncodeTiled for " + what + " (" + to_string(shape.dtype) + ", dims " +
                 list_text(shape.dims, shape.rank) + ", stride bytes " + list_text(shape.stride_bytes, shape.rank - 1) +
                 ", box " + list_text(box_l, shape.rank) + ", swizzle " + std::to_string(shape.swizzle_bytes) + ")");
  std::memcpy(out.bytes, &map, sizeof map);
  RecentMap& slot = recent_maps[recent_next];
  recent_next = (recent_next + 1) % kRecentMaps;
  slot.shape = shape;
  slot.base = base;
  slot.bytes = out;
  slot.valid = true;
}

}  // namespace detail
}  // namespace swz
