// swzjit public API: the CUDA Driver API runtime (runtime/driver/driver.cpp) -- devices, modules, kernels,
// launches, device memory, streams and events. libcuda is loaded lazily: nothing here needs cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

// Opaque driver handles, declared exactly as cuda.h declares them (a repeated identical typedef is
// legal C++), so users need not include cuda.h. A cudaStream_t is the same handle as a CUstream.
struct CUstream_st;
struct CUevent_st;
struct CUfunc_st;
struct CUmod_st;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUfunc_st* CUfunction;
typedef struct CUmod_st* CUmodule;

namespace swz {

struct CompiledKernel;  // swzjit/jit.hpp

namespace detail {
struct LoadedModule;  // owns a CUmodule; defined in runtime/driver/driver.cpp
}

/// A device address, the same integer as the driver's CUdeviceptr.
using DevicePtr = unsigned long long;

// --- driver and devices -----------------------------------------------------------------------
// Every function and member below throws Error(NoDevice) when libcuda cannot be loaded or has no
// usable GPU (the message says why and what to do), Error(Driver) with the CUresult's name and
// text for any other driver failure, and Error(ContextLost) once a sticky error (illegal address
// and kin) has made the CUDA context unusable: from then on every call fails fast with that message,
// because only a new process gets a working context.

/// True when libcuda was loaded and cuInit succeeded. Never throws; on false, `why` (if given)
/// says what is missing. Reads $SWZJIT_LIBCUDA (default "libcuda.so.1") on first use.
bool driver_available(std::string* why = nullptr);

/// True once a sticky error has made the context unusable; `why` gets the recorded message.
bool context_lost(std::string* why = nullptr) noexcept;

/// The CUDA version the driver supports, e.g. "13.0".
std::string driver_version_string();

/// Number of CUDA devices.
int device_count();

/// The device of the calling thread's current CUDA context, or 0 when none is current.
int current_device();

/// What the library needs to know about a device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int max_smem_per_block = 0;        ///< without opt-in (48 KiB)
  int max_smem_per_block_optin = 0;  ///< with Kernel::set_max_dynamic_smem
  int max_smem_per_sm = 0;
  int max_threads_per_block = 0;
  long long l2_bytes = 0;
  long long global_mem_bytes = 0;
  int driver_version = 0;  ///< as cuDriverGetVersion: 13000 = 13.0
  /// Peak DRAM bandwidth in GB/s: 2 (double data rate) x the memory clock x the bus width / 8 (H200: 3201
  /// MHz x 6016 bits = 4814; an H100 SXM's specifications give 3352); 0 where the driver reports no clock.
  int dram_gbps = 0;

  /// "sm_<major><minor>", e.g. "sm_90". Arch-specific targets ("sm_90a") are never detected:
  /// kernels that need them ask for them.
  std::string arch() const;
};

/// @throws Error(InvalidArgument) when `ordinal` is not in [0, device_count()).
DeviceInfo device_info(int ordinal = 0);

/// Waits for all work on `stream` (nullptr: the legacy default stream of `device`).
void synchronize(CUstream stream, int device = 0);

// --- modules and kernels --------------------------------------------------------------------------

/// Grid or block extent.
struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
};

/// A kernel's resources as the driver reports them (cuFuncGetAttribute).
struct KernelAttributes {
  int num_regs = 0;
  int local_bytes = 0;        ///< per thread: spills and local arrays
  int static_smem_bytes = 0;  ///< per block, static __shared__ only
  int const_bytes = 0;
  int max_threads_per_block = 0;
  int max_dynamic_smem_bytes = 0;  ///< the current CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int ptx_version = 0;             ///< e.g. 90
  int binary_version = 0;          ///< e.g. 90
};

class Module;

/// One __global__ function of a loaded module. Copies share the function; each keeps its module
/// loaded, so a Kernel stays valid after the Module it came from is destroyed.
class Kernel {
 public:
  const std::string& lowered_name() const noexcept { return lowered_name_; }
  CUfunction handle() const noexcept { return function_; }
  int device() const noexcept;

  /// Allow launches with up to `bytes` of dynamic shared memory (needed above 48 KiB).
  /// @throws Error(InvalidArgument) when `bytes` exceeds the device's opt-in limit.
  void set_max_dynamic_smem(int bytes);
  KernelAttributes attributes() const;

  /// Launch on `stream` (a CUstream or cudaStream_t of this kernel's device; nullptr: the legacy
  /// default stream). `args` points at one pointer per kernel parameter, as for cuLaunchKernel.
  /// Returns once the launch is queued; faults in the kernel surface at the next synchronizing call.
  void launch(Dim3 grid, Dim3 block, unsigned dynamic_smem_bytes, CUstream stream, void** args) const;
  /// Like launch(), as a programmatic dependent launch (sm_90+): the kernel's blocks may start while the
  /// kernel before it in `stream` still runs, and wait for it (its completion and memory) at
  /// `griddepcontrol.wait`. Only for kernels that execute that wait before they touch what the previous
  /// kernel writes (e.g. the split-K reduction of templates/gemm_splitk.cuh). A kernel compiled for a
  /// virtual architecture below compute_90 cannot wait: it is launched as by launch().
  void launch_dependent(Dim3 grid, Dim3 block, unsigned dynamic_smem_bytes, CUstream stream, void** args) const;

 private:
  friend class Module;
  Kernel(std::shared_ptr<const detail::LoadedModule> module, CUfunction function, std::string lowered_name,
         int ptx_version);
  std::shared_ptr<const detail::LoadedModule> module_;
  CUfunction function_ = nullptr;
  std::string lowered_name_;
  int ptx_version_ = 0;  ///< the function's PTX version, asked once (launch_dependent needs >= 90)
};

/// A compiled image (cubin or PTX) loaded into the primary context of a device. The module is
/// unloaded when the last Module or Kernel that refers to it goes away.
class Module {
 public:
  /// Load `compiled.image` on `device`. A PTX image is JIT-compiled by the driver; its log is part
  /// of the error if that fails. A cubin for another architecture fails with a message naming both.
  explicit Module(const CompiledKernel& compiled, int device = 0);

  int device() const noexcept;
  CUmodule handle() const noexcept;
  /// The kernel the image was compiled for (its lowered name).
  Kernel kernel() const;
  /// Any kernel of the module, by lowered (mangled) name.
  /// @throws Error(InvalidArgument) when the module has no such function.
  Kernel kernel(const std::string& lowered_name) const;

 private:
  std::shared_ptr<const detail::LoadedModule> module_;
  std::string lowered_name_;
};

// --- memory, streams, events -----------------------------------------------------------------

/// Device memory owned by the object (cuMemAlloc / cuMemFree). Move-only. The copy and memset
/// helpers are for tests and tools: each is complete when it returns; the optional `stream` orders
/// it after work already queued there.
class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  /// Allocate `bytes` on `device` (0 bytes: an empty buffer with a null pointer).
  explicit DeviceBuffer(std::size_t bytes, int device = 0);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr ptr() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }
  int device() const noexcept { return device_; }

  /// Bytes [offset, offset + bytes) of the buffer. @throws Error(InvalidArgument) out of range.
  void copy_from_host(const void* src, std::size_t bytes, std::size_t offset = 0, CUstream stream = nullptr);
  void copy_to_host(void* dst, std::size_t bytes, std::size_t offset = 0, CUstream stream = nullptr) const;
  /// Fill the whole buffer with a byte / a 32-bit pattern (size must be a multiple of 4).
  void memset8(std::uint8_t value, CUstream stream = nullptr);
  void memset32(std::uint32_t value, CUstream stream = nullptr);

 private:
  void release() noexcept;
  DevicePtr ptr_ = 0;
  std::size_t size_ = 0;
  int device_ = 0;
};

/// A CUDA stream: created and destroyed by the object, or borrowed from the caller (wrap()).
class Stream {
 public:
  /// Create a stream on `device`; non-blocking streams do not synchronize with the legacy stream.
  explicit Stream(int device = 0, bool non_blocking = true);
  /// Borrow `stream` (never destroyed by the Stream).
  static Stream wrap(CUstream stream, int device = 0) noexcept;
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream handle() const noexcept { return stream_; }
  int device() const noexcept { return device_; }
  bool owns() const noexcept { return owner_; }
  void synchronize() const;

 private:
  Stream(CUstream stream, int device, bool owner) noexcept : stream_(stream), device_(device), owner_(owner) {}
  void release() noexcept;
  CUstream stream_ = nullptr;
  int device_ = 0;
  bool owner_ = false;
};

/// A timing event (cuEventCreate with timing enabled). Move-only.
class Event {
 public:
  explicit Event(int device = 0);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent handle() const noexcept { return event_; }
  int device() const noexcept { return device_; }
  void record(CUstream stream);
  void synchronize() const;

 private:
  void release() noexcept;
  CUevent event_ = nullptr;
  int device_ = 0;
};

/// Milliseconds between two recorded events (waits for `stop`).
float elapsed_ms(const Event& start, const Event& stop);

}  // namespace swz
