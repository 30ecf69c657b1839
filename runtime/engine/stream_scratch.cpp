// runtime: stream-ordered scratch for the engine's launches (stream_scratch.hpp).
#include "runtime/engine/stream_scratch.hpp"

#include <new>

#include "runtime/driver/driver_api.hpp"

namespace swz {
namespace detail {

CUmemoryPool create_keeping_pool(int device, const std::string& what, const std::string& hint) {
  ContextGuard guard(device);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool = nullptr;
  check(driver_api().cuMemPoolCreate(&pool, &props),
        "creating the " + what + " memory pool on device " + std::to_string(device) +
            " (stream-ordered allocation needs a driver and device with memory pools" + hint + ")");
  cuuint64_t keep = ~static_cast<cuuint64_t>(0);
  const CUresult r = driver_api().cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  if (r != CUDA_SUCCESS) {
    driver_api().cuMemPoolDestroy(pool);
    check(r, "setting the " + what + " memory pool's release threshold");
  }
  return pool;
}

StreamScratch::StreamScratch(std::size_t bytes, int device, CUstream stream, CUmemoryPool pool, const std::string& what)
    : device_(device), stream_(stream) {
  ContextGuard guard(device);
  CUdeviceptr ptr = 0;
  check(driver_api().cuMemAllocFromPoolAsync(&ptr, bytes, pool, stream),
        "allocating " + what + " (" + std::to_string(bytes) + " bytes, stream-ordered) on device " + std::to_string(device));
  ptr_ = ptr;
}

StreamScratch::~StreamScratch() {
  if (ptr_ == 0) return;
  ContextGuard guard(device_, std::nothrow);
  if (guard.ok()) loaded_driver_api()->cuMemFreeAsync(ptr_, stream_);
}

}  // namespace detail
}  // namespace swz
