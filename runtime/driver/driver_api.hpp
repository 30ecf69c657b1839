// runtime (internal): the lazily loaded CUDA driver -- its entry-point table, settings, error
// checking and per-thread context selection. Only runtime/*.cpp and tests include this (it needs cuda.h).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <new>
#include <string>

namespace swz {
namespace detail {

/// Where libcuda comes from; read once from the environment.
struct DriverSettings {
  std::string libcuda_path = "libcuda.so.1";  ///< $SWZJIT_LIBCUDA overrides

  static DriverSettings from_environment();
};

// Every entry point the library calls, with the ABI version whose typedef it uses (cudaTypedefs.h).
// cuGetProcAddress is asked for exactly that version, so a newer driver hands back the same ABI.
#define SWZ_DRIVER_ENTRY_POINTS(X)      \
  X(cuInit, 2000)                       \
  X(cuDriverGetVersion, 2020)           \
  X(cuDeviceGet, 2000)                  \
  X(cuDeviceGetCount, 2000)             \
  X(cuDeviceGetName, 2000)              \
  X(cuDeviceGetAttribute, 2000)         \
  X(cuDeviceTotalMem, 3020)             \
  X(cuDevicePrimaryCtxRetain, 7000)     \
  X(cuCtxGetCurrent, 4000)              \
  X(cuCtxSetCurrent, 4000)              \
  X(cuCtxGetDevice, 2000)               \
  X(cuModuleLoadDataEx, 2010)           \
  X(cuModuleUnload, 2000)               \
  X(cuModuleGetFunction, 2000)          \
  X(cuFuncSetAttribute, 9000)           \
  X(cuFuncGetAttribute, 2020)           \
  X(cuLaunchKernel, 4000)               \
  X(cuLaunchKernelEx, 11060)            \
  X(cuMemAlloc, 3020)                   \
  X(cuMemFree, 3020)                    \
  X(cuMemAllocAsync, 11020)             \
  X(cuMemFreeAsync, 11020)              \
  X(cuMemPoolCreate, 11020)             \
  X(cuMemPoolDestroy, 11020)            \
  X(cuMemPoolSetAttribute, 11020)       \
  X(cuMemAllocFromPoolAsync, 11020)     \
  X(cuMemcpyHtoDAsync, 3020)            \
  X(cuMemcpyDtoHAsync, 3020)            \
  X(cuMemsetD8Async, 3020)              \
  X(cuMemsetD32Async, 3020)             \
  X(cuStreamCreate, 2000)               \
  X(cuStreamDestroy, 4000)              \
  X(cuStreamSynchronize, 2000)          \
  X(cuEventCreate, 2000)                \
  X(cuEventDestroy, 4000)               \
  X(cuEventRecord, 2000)                \
  X(cuEventSynchronize, 2000)           \
  X(cuEventElapsedTime, 12080)          \
  X(cuTensorMapEncodeTiled, 12000)

/// The resolved entry points. Members are named after the functions (cuda.h's version macros
/// rename declaration and use alike, e.g. cuMemAlloc -> cuMemAlloc_v2).
struct DriverApi {
#define SWZ_DECLARE_ENTRY_POINT(name, version) PFN_##name##_v##version name = nullptr;
  SWZ_DRIVER_ENTRY_POINTS(SWZ_DECLARE_ENTRY_POINT)
#undef SWZ_DECLARE_ENTRY_POINT
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
};

/// The loaded driver. @throws Error(NoDevice) when it cannot be loaded or initialized,
/// Error(ContextLost) after a sticky error.
const DriverApi& driver_api();

/// Like driver_api(), but never throws and never loads: nullptr unless loaded. For destructors.
const DriverApi* loaded_driver_api() noexcept;

/// Throws for a failed driver call: Error(Driver) naming `what`, the CUresult's name and text;
/// for a sticky error, records the context as lost and throws Error(ContextLost).
void check(CUresult result, const std::string& what);

/// True for the errors after which the context cannot be used again.
bool is_sticky(CUresult result) noexcept;

/// Makes the primary context of `device` current on this thread for its lifetime (retaining it
/// on first use), and restores whatever was current before on destruction.
class ContextGuard {
 public:
  /// @throws Error(NoDevice | ContextLost | InvalidArgument | Driver).
  explicit ContextGuard(int device);
  /// For destructors: never throws, never loads the driver or retains a context; ok() is false
  /// when the context is not usable (no driver, not retained, lost), and then nothing may be freed.
  ContextGuard(int device, std::nothrow_t) noexcept;
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  CUcontext context() const noexcept { return context_; }
  bool ok() const noexcept { return context_ != nullptr; }

 private:
  CUcontext context_ = nullptr;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

/// Test seam: forget the current driver state and load from `settings` on next use. The old state
/// is leaked on purpose (live objects may still refer to it). Meant for a forked child or a process
/// that has not touched the GPU.
void replace_driver_for_testing(const DriverSettings& settings);

}  // namespace detail
}  // namespace swz
