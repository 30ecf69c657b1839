// runtime: the lazily loaded CUDA driver (docs/ARCHITECTURE.md principle 4) -- dlopen + cuGetProcAddress,
// error translation, sticky-error bookkeeping, primary contexts and device queries.
// The RAII objects built on it (modules, kernels, memory, streams, events) are in driver_objects.cpp.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "runtime/driver/driver_api.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace detail {
namespace {

const char* const kInstallHint =
    "install the NVIDIA driver, or set SWZJIT_LIBCUDA to the full path of its libcuda.so.1";

// The driver as this process sees it: loaded at most once, on first use, under a mutex.
class Driver {
 public:
  explicit Driver(DriverSettings settings) : settings_(std::move(settings)) {}
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // The entry points, or nullptr with `why` set when the driver cannot be used.
  const DriverApi* load(std::string* why) {
    if (ready_.load(std::memory_order_acquire)) return &api_;  // the path every call takes
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attempted_) {
      attempted_ = true;
      failure_ = try_load();
      ready_.store(failure_.empty(), std::memory_order_release);
    }
    if (!ready_.load(std::memory_order_relaxed)) {
      if (why != nullptr) *why = failure_;
      return nullptr;
    }
    return &api_;
  }

  // "CUDA_ERROR_X (text)", from the driver when it can name it.
  std::string describe(CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (api_.cuGetErrorName == nullptr || api_.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
    if (api_.cuGetErrorString == nullptr || api_.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
    std::string out = name ? name : "CUresult " + std::to_string(static_cast<int>(r));
    if (text != nullptr) out += std::string(" (") + text + ")";
    return out;
  }

  const DriverApi* loaded() const noexcept { return ready_.load(std::memory_order_acquire) ? &api_ : nullptr; }
  int device_count() const noexcept { return device_count_; }
  int driver_version() const noexcept { return driver_version_; }

  // The retained primary context of `device` (retained on first use, kept for the process).
  // NOTE: primary contexts are never released: objects destroyed during static destruction may
  // still need them, and the driver reclaims everything at exit.
  // Expects a loaded driver and a valid ordinal.
  CUcontext primary_context(int device) {
    std::atomic<CUcontext>& slot = contexts_[static_cast<std::size_t>(device)];
    if (CUcontext ctx = slot.load(std::memory_order_acquire)) return ctx;
    std::lock_guard<std::mutex> lock(mutex_);
    if (CUcontext ctx = slot.load(std::memory_order_relaxed)) return ctx;  // retained by another thread meanwhile
    CUdevice dev = 0;
    check(api_.cuDeviceGet(&dev, device), "cuDeviceGet(" + std::to_string(device) + ")");
    CUcontext ctx = nullptr;
    check(api_.cuDevicePrimaryCtxRetain(&ctx, dev), "retaining the primary context of device " + std::to_string(device));
    slot.store(ctx, std::memory_order_release);
    return ctx;
  }

  // The primary context if it was already retained; never throws (for destructors).
  CUcontext retained_context(int device) const noexcept {
    if (loaded() == nullptr || device < 0 || device >= device_count_) return nullptr;
    return contexts_[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
  }

  void mark_lost(const std::string& message) {
    std::lock_guard<std::mutex> lock(lost_mutex_);
    if (!lost_.load(std::memory_order_relaxed)) lost_message_ = message;  // the first cause is the one to read
    lost_.store(true, std::memory_order_release);
  }

  bool lost(std::string* why) const {
    if (!lost_.load(std::memory_order_acquire)) return false;
    if (why != nullptr) {
      std::lock_guard<std::mutex> lock(lost_mutex_);
      *why = lost_message_;
    }
    return true;
  }

 private:
  // Returns "" on success, else why the driver cannot be used.
  std::string try_load() {
    const std::string& path = settings_.libcuda_path;
    dlerror();
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* err = dlerror();
      return "could not load " + path + " (" + (err ? err : "unknown dlopen error") + "); " + kInstallHint;
    }
    std::string why = resolve_and_init(path);
    // NOTE: a library that failed is left loaded: after cuInit ran, unloading libcuda could run its
    // teardown under our feet, and a failed load happens at most once per process.
    if (!why.empty()) api_ = DriverApi{};
    return why;
  }

  std::string resolve_and_init(const std::string& path) {
    // Error names first (plain exports since CUDA 6.0), so that every later failure can be named.
    api_.cuGetErrorName = reinterpret_cast<PFN_cuGetErrorName_v6000>(dlsym(handle_, "cuGetErrorName"));
    api_.cuGetErrorString = reinterpret_cast<PFN_cuGetErrorString_v6000>(dlsym(handle_, "cuGetErrorString"));
    const auto get_proc_v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle_, "cuGetProcAddress_v2"));
    const auto get_proc_v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(handle_, "cuGetProcAddress"));
    if (get_proc_v2 == nullptr && get_proc_v1 == nullptr)
      return path + " exports no cuGetProcAddress: it is not a CUDA driver, or one older than CUDA 11.3; " +
             kInstallHint;

    const auto resolve = [&](const char* name, int version, void** fn) -> std::string {
      CUresult r;
      if (get_proc_v2 != nullptr) {
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
        r = get_proc_v2(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
      } else {
        r = get_proc_v1(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT);
      }
      if (r == CUDA_ERROR_STUB_LIBRARY)
        return path + " is the CUDA toolkit's stub library, not a driver; " + kInstallHint;
      if (r != CUDA_SUCCESS || *fn == nullptr)
        return path + " does not provide " + name + " (" + (r != CUDA_SUCCESS ? describe(r) : "not found") +
               "); the driver is too old for libswzjit: install a driver for CUDA 12 or newer";
      return "";
    };
#define SWZ_RESOLVE_ENTRY_POINT(name, version)                                               \
  {                                                                                          \
    void* fn = nullptr;                                                                      \
    std::string missing = resolve(#name, version, &fn);                                      \
    if (!missing.empty()) return missing;                                                    \
    api_.name = reinterpret_cast<PFN_##name##_v##version>(fn);                               \
  }
    SWZ_DRIVER_ENTRY_POINTS(SWZ_RESOLVE_ENTRY_POINT)
#undef SWZ_RESOLVE_ENTRY_POINT

    const CUresult init = api_.cuInit(0);
    if (init == CUDA_ERROR_STUB_LIBRARY) return path + " is the CUDA toolkit's stub library, not a driver; " + kInstallHint;
    if (init == CUDA_ERROR_NO_DEVICE)
      return "cuInit found no CUDA device (" + describe(init) +
             "); check nvidia-smi and CUDA_VISIBLE_DEVICES";
    if (init != CUDA_SUCCESS) return "cuInit failed: " + describe(init) + "; check the driver installation (nvidia-smi)";
    if (api_.cuDriverGetVersion(&driver_version_) != CUDA_SUCCESS) driver_version_ = 0;
    const CUresult counted = api_.cuDeviceGetCount(&device_count_);
    if (counted != CUDA_SUCCESS) return "cuDeviceGetCount failed: " + describe(counted);
    if (device_count_ <= 0) return "the driver reports no CUDA device; check nvidia-smi and CUDA_VISIBLE_DEVICES";
    contexts_.reset(new std::atomic<CUcontext>[static_cast<std::size_t>(device_count_)]);
    for (int i = 0; i < device_count_; ++i) contexts_[static_cast<std::size_t>(i)].store(nullptr);
    return "";
  }

  const DriverSettings settings_;
  std::mutex mutex_;  // serializes loading and context retains
  bool attempted_ = false;
  std::atomic<bool> ready_{false};
  std::string failure_;
  void* handle_ = nullptr;
  DriverApi api_;
  int device_count_ = 0;
  int driver_version_ = 0;
  std::unique_ptr<std::atomic<CUcontext>[]> contexts_;  // one per device, null until retained
  mutable std::mutex lost_mutex_;
  std::atomic<bool> lost_{false};
  std::string lost_message_;
};

// The process's driver. A pointer so that the test seam can swap it; never deleted (see
// replace_driver_for_testing), so objects destroyed at exit still find it.
std::atomic<Driver*>& driver_slot() {
  static std::atomic<Driver*> slot{new Driver(DriverSettings::from_environment())};
  return slot;
}

Driver& driver() { return *driver_slot().load(std::memory_order_acquire); }

void require_ordinal(int device) {
  const int count = driver().device_count();
  if (device < 0 || device >= count)
    throw_invalid("device " + std::to_string(device) + " does not exist (this machine has " + std::to_string(count) +
                  " CUDA device" + (count == 1 ? "" : "s") + ": ordinals 0.." + std::to_string(count - 1) + ")");
}

}  // namespace

DriverSettings DriverSettings::from_environment() {
  DriverSettings s;
  const char* path = std::getenv("SWZJIT_LIBCUDA");
  if (path != nullptr && *path != '\0') s.libcuda_path = path;
  return s;
}

const DriverApi& driver_api() {
  Driver& d = driver();
  std::string why;
  if (d.lost(&why)) throw Error(ErrorKind::ContextLost, why);
  const DriverApi* api = d.load(&why);
  if (api == nullptr) throw Error(ErrorKind::NoDevice, "no usable CUDA driver: " + why);
  return *api;
}

const DriverApi* loaded_driver_api() noexcept { return driver().loaded(); }

bool is_sticky(CUresult result) noexcept {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_EXTERNAL_DEVICE:
      return true;
    default:
      return false;
  }
}

void check(CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return;
  Driver& d = driver();
  const std::string text = d.describe(result);
  if (is_sticky(result)) {
    const std::string message =
        "CUDA context lost: " + what + " failed with " + text +
        ". This error is sticky: the CUDA context of this process is unusable and every later GPU call "
        "fails; restart the process (run the failing kernel under compute-sanitizer to find the fault)";
    d.mark_lost(message);
    throw Error(ErrorKind::ContextLost, message);
  }
  throw Error(ErrorKind::Driver, what + " failed: " + text);
}

ContextGuard::ContextGuard(int device) {
  const DriverApi& api = driver_api();
  require_ordinal(device);
  context_ = driver().primary_context(device);
  check(api.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (previous_ != context_) {
    check(api.cuCtxSetCurrent(context_), "making the primary context of device " + std::to_string(device) + " current");
    switched_ = true;
  }
}

ContextGuard::ContextGuard(int device, std::nothrow_t) noexcept {
  const DriverApi* api = loaded_driver_api();
  if (api == nullptr || driver().lost(nullptr)) return;
  context_ = driver().retained_context(device);
  if (context_ == nullptr || api->cuCtxGetCurrent(&previous_) != CUDA_SUCCESS) {
    context_ = nullptr;
    return;
  }
  if (previous_ != context_) {
    if (api->cuCtxSetCurrent(context_) != CUDA_SUCCESS) {
      context_ = nullptr;
      return;
    }
    switched_ = true;
  }
}

ContextGuard::~ContextGuard() {
  if (!switched_) return;
  if (const DriverApi* api = loaded_driver_api()) api->cuCtxSetCurrent(previous_);  // best effort
}

void replace_driver_for_testing(const DriverSettings& settings) {
  driver_slot().store(new Driver(settings), std::memory_order_release);
}

}  // namespace detail

// --- public: driver and devices ------------------------------------------------------------------

bool driver_available(std::string* why) {
  try {
    detail::Driver& d = detail::driver();
    if (d.lost(why)) return false;
    return d.load(why) != nullptr;  // `why` gets the bare reason, without driver_api()'s preamble
  } catch (const std::exception& e) {
    if (why != nullptr) *why = e.what();
  }
  return false;
}

bool context_lost(std::string* why) noexcept {
  try {
    return detail::driver().lost(why);
  } catch (...) {
    return true;  // only a failed string copy gets here, and only once the context is lost
  }
}

std::string driver_version_string() {
  detail::driver_api();
  const int v = detail::driver().driver_version();
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

int device_count() {
  detail::driver_api();
  return detail::driver().device_count();
}

int current_device() {
  const detail::DriverApi& api = detail::driver_api();
  CUcontext ctx = nullptr;
  detail::check(api.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx == nullptr) return 0;
  CUdevice dev = 0;
  detail::check(api.cuCtxGetDevice(&dev), "cuCtxGetDevice");
  return static_cast<int>(dev);
}

std::string DeviceInfo::arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }

DeviceInfo device_info(int ordinal) {
  const detail::DriverApi& api = detail::driver_api();
  detail::require_ordinal(ordinal);
  const std::string which = "device " + std::to_string(ordinal);
  CUdevice dev = 0;
  detail::check(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")");
  const auto attribute = [&](CUdevice_attribute attr, const char* name) {
    int value = 0;
    detail::check(api.cuDeviceGetAttribute(&value, attr, dev), std::string("reading ") + name + " of " + which);
    return value;
  };
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  detail::check(api.cuDeviceGetName(name, static_cast<int>(sizeof name) - 1, dev), "reading the name of " + which);
  info.name = name;
  info.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability");
  info.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability");
  info.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "the SM count");
  info.max_smem_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block");
  info.max_smem_per_block_optin =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block");
  info.max_smem_per_sm =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM");
  info.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block");
  info.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "the L2 size");
  std::size_t total = 0;
  detail::check(api.cuDeviceTotalMem(&total, dev), "reading the memory size of " + which);
  info.global_mem_bytes = static_cast<long long>(total);
  // The memory clock and bus width only inform defaults (DeviceInfo::dram_gbps): a driver that does not
  // report them leaves the bandwidth unknown (0) rather than failing the query.
  int mem_khz = 0, bus_bits = 0;
  if (api.cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) != CUDA_SUCCESS ||
      api.cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) != CUDA_SUCCESS)
    mem_khz = bus_bits = 0;
  const long long gbps = 2LL * std::max(0, mem_khz) * std::max(0, bus_bits) / 8 / 1000000;  // kHz x bytes -> GB/s
  info.dram_gbps = static_cast<int>(std::min<long long>(gbps, 1 << 30));
  info.driver_version = detail::driver().driver_version();
  return info;
}

void synchronize(CUstream stream, int device) {
  detail::ContextGuard guard(device);
  detail::check(detail::driver_api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace swz
