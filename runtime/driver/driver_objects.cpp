// runtime: the RAII objects of the Driver API runtime (include/swzjit/device.hpp) -- modules,
// kernels and launches, device memory, streams, events. Built on the loader in runtime/driver/driver.cpp.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "runtime/driver/driver_api.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace detail {

// One loaded CUmodule; the last Module or Kernel referring to it unloads it.
struct LoadedModule {
  CUmodule module = nullptr;
  int device = 0;

  LoadedModule() = default;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule() {
    if (module == nullptr) return;
    ContextGuard guard(device, std::nothrow);  // cuModuleUnload acts on the current context
    if (guard.ok()) loaded_driver_api()->cuModuleUnload(module);
  }
};

}  // namespace detail

namespace {

std::string dims(Dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

void require_range(std::size_t offset, std::size_t bytes, std::size_t size, const char* what) {
  if (offset > size || bytes > size - offset)
    throw_invalid(std::string(what) + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                  std::to_string(bytes) + ") lie outside the buffer of " + std::to_string(size) + " bytes");
}

// Synchronous helpers: queue on `stream`, then wait for it, so the call is complete on return.
void finish(const detail::DriverApi& api, CUstream stream, const char* what) {
  detail::check(api.cuStreamSynchronize(stream), std::string("waiting for ") + what);
}

}  // namespace

// --- Module ----------------------------------------------------------------------------------------

Module::Module(const CompiledKernel& compiled, int device) : lowered_name_(compiled.lowered_name) {
  if (compiled.image.empty()) throw_invalid("Module: the compiled kernel '" + compiled.lowered_name + "' has no image");
  detail::ContextGuard guard(device);
  const detail::DriverApi& api = detail::driver_api();

  // The driver's JIT log matters for PTX images; for a cubin it stays empty.
  std::string jit_log(8192, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {&jit_log[0], reinterpret_cast<void*>(static_cast<std::uintptr_t>(jit_log.size()))};
  CUmodule module = nullptr;
  // NOTE: c_str(): a PTX image must be NUL-terminated; a cubin's ELF header gives its own size.
  const CUresult r = api.cuModuleLoadDataEx(&module, compiled.image.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    if (detail::is_sticky(r)) detail::check(r, "cuModuleLoadDataEx");
    const std::size_t log_end = jit_log.find('\0');
    if (log_end != std::string::npos) jit_log.resize(log_end);
    std::string message = "loading '" + compiled.lowered_name + "' (" + (compiled.is_ptx ? "PTX" : "cubin") +
                          " for " + compiled.arch + ") on device " + std::to_string(device);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
      const DeviceInfo info = device_info(device);
      message += " (" + info.arch() + "): the image does not run on this device; compile it for " + info.arch() +
                 " or a PTX target the driver can JIT";
    }
    try {
      detail::check(r, message);
    } catch (const Error& e) {
      throw Error(e.kind(), std::string(e.what()) + (jit_log.empty() ? "" : "\n--- driver JIT log ---\n" + jit_log));
    }
  }
  auto loaded = std::make_shared<detail::LoadedModule>();
  loaded->module = module;
  loaded->device = device;
  module_ = std::move(loaded);
}

int Module::device() const noexcept { return module_->device; }
CUmodule Module::handle() const noexcept { return module_->module; }
Kernel Module::kernel() const { return kernel(lowered_name_); }

Kernel Module::kernel(const std::string& lowered_name) const {
  detail::ContextGuard guard(module_->device);
  CUfunction function = nullptr;
  const CUresult r = detail::driver_api().cuModuleGetFunction(&function, module_->module, lowered_name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    throw_invalid("the module has no kernel named '" + lowered_name + "' (use the lowered name NVRTC returned)");
  detail::check(r, "cuModuleGetFunction('" + lowered_name + "')");
  // Asked here, once, rather than on every launch_dependent.
  int ptx = 0;
  if (detail::driver_api().cuFuncGetAttribute(&ptx, CU_FUNC_ATTRIBUTE_PTX_VERSION, function) != CUDA_SUCCESS) ptx = 0;
  return Kernel(module_, function, lowered_name, ptx);
}

// --- Kernel ----------------------------------------------------------------------------------------

Kernel::Kernel(std::shared_ptr<const detail::LoadedModule> module, CUfunction function, std::string lowered_name,
               int ptx_version)
    : module_(std::move(module)), function_(function), lowered_name_(std::move(lowered_name)), ptx_version_(ptx_version) {}

int Kernel::device() const noexcept { return module_->device; }

void Kernel::set_max_dynamic_smem(int bytes) {
  if (bytes < 0) throw_invalid("set_max_dynamic_smem: bytes must be >= 0, got " + std::to_string(bytes));
  detail::ContextGuard guard(module_->device);
  const detail::DriverApi& api = detail::driver_api();
  const CUresult r = api.cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (r == CUDA_ERROR_INVALID_VALUE) {
    const DeviceInfo info = device_info(module_->device);
    throw_invalid("set_max_dynamic_smem(" + std::to_string(bytes) + ") for '" + lowered_name_ + "': device " +
                  std::to_string(info.ordinal) + " allows at most " + std::to_string(info.max_smem_per_block_optin) +
                  " bytes of shared memory per block, static + dynamic (static here: " +
                  std::to_string(attributes().static_smem_bytes) + ")");
  }
  detail::check(r, "setting the dynamic shared memory limit of '" + lowered_name_ + "'");
}

KernelAttributes Kernel::attributes() const {
  detail::ContextGuard guard(module_->device);
  const detail::DriverApi& api = detail::driver_api();
  const auto get = [&](CUfunction_attribute attr, const char* name) {
    int value = 0;
    detail::check(api.cuFuncGetAttribute(&value, attr, function_), std::string("reading ") + name + " of '" + lowered_name_ + "'");
    return value;
  };
  KernelAttributes a;
  a.num_regs = get(CU_FUNC_ATTRIBUTE_NUM_REGS, "the register count");
  a.local_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "the local memory size");
  a.static_smem_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "the static shared memory size");
  a.const_bytes = get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "the constant memory size");
  a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "the thread limit");
  a.max_dynamic_smem_bytes = get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "the dynamic shared memory limit");
  a.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION, "the PTX version");
  a.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION, "the binary version");
  return a;
}

namespace {

// Launches `function` (cuLaunchKernel, or cuLaunchKernelEx with programmatic stream serialization when
// `dependent`) and explains a failure.
void launch_function(CUfunction function, const std::string& lowered_name, int device, Dim3 grid, Dim3 block,
                     unsigned dynamic_smem_bytes, CUstream stream, void** args, bool dependent) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    throw_invalid("launch of '" + lowered_name + "': grid " + dims(grid) + " and block " + dims(block) +
                  " must have every extent >= 1");
  detail::ContextGuard guard(device);
  CUresult r;
  if (dependent) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid.x, config.gridDimY = grid.y, config.gridDimZ = grid.z;
    config.blockDimX = block.x, config.blockDimY = block.y, config.blockDimZ = block.z;
    config.sharedMemBytes = dynamic_smem_bytes;
    config.hStream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    r = detail::driver_api().cuLaunchKernelEx(&config, function, args, nullptr);
  } else {
    r = detail::driver_api().cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                            dynamic_smem_bytes, stream, args, nullptr);
  }
  if (r == CUDA_SUCCESS) return;
  std::string what = "launching '" + lowered_name + "' with grid " + dims(grid) + ", block " + dims(block) + ", " +
                     std::to_string(dynamic_smem_bytes) + " bytes of dynamic shared memory";
  if (r == CUDA_ERROR_INVALID_VALUE && dynamic_smem_bytes > 48 * 1024)
    what += " (above 48 KiB, call Kernel::set_max_dynamic_smem first)";
  else if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    what += " (too many threads per block for the kernel's registers)";
  detail::check(r, what);
}

}  // namespace

void Kernel::launch(Dim3 grid, Dim3 block, unsigned dynamic_smem_bytes, CUstream stream, void** args) const {
  launch_function(function_, lowered_name_, module_->device, grid, block, dynamic_smem_bytes, stream, args, false);
}

void Kernel::launch_dependent(Dim3 grid, Dim3 block, unsigned dynamic_smem_bytes, CUstream stream, void** args) const {
  // griddepcontrol exists from PTX for compute_90 on: a kernel built for an older virtual architecture has
  // no wait in it, and must not start before the previous kernel is done.
  launch_function(function_, lowered_name_, module_->device, grid, block, dynamic_smem_bytes, stream, args,
                  ptx_version_ >= 90);
}

// --- DeviceBuffer ----------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device) : size_(bytes), device_(device) {
  detail::ContextGuard guard(device);  // validates the device even for an empty buffer
  if (bytes == 0) return;
  CUdeviceptr ptr = 0;
  detail::check(detail::driver_api().cuMemAlloc(&ptr, bytes),
                "allocating " + std::to_string(bytes) + " bytes on device " + std::to_string(device));
  ptr_ = ptr;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), size_(std::exchange(other.size_, 0)), device_(other.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_ == 0) return;
  detail::ContextGuard guard(device_, std::nothrow);
  if (guard.ok()) detail::loaded_driver_api()->cuMemFree(ptr_);
  ptr_ = 0;
  size_ = 0;
}

void DeviceBuffer::copy_from_host(const void* src, std::size_t bytes, std::size_t offset, CUstream stream) {
  require_range(offset, bytes, size_, "copy_from_host");
  if (bytes == 0) return;
  detail::ContextGuard guard(device_);
  const detail::DriverApi& api = detail::driver_api();
  detail::check(api.cuMemcpyHtoDAsync(ptr_ + offset, src, bytes, stream), "copying " + std::to_string(bytes) + " bytes to the device");
  finish(api, stream, "a host-to-device copy");
}

void DeviceBuffer::copy_to_host(void* dst, std::size_t bytes, std::size_t offset, CUstream stream) const {
  require_range(offset, bytes, size_, "copy_to_host");
  if (bytes == 0) return;
  detail::ContextGuard guard(device_);
  const detail::DriverApi& api = detail::driver_api();
  detail::check(api.cuMemcpyDtoHAsync(dst, ptr_ + offset, bytes, stream), "copying " + std::to_string(bytes) + " bytes to the host");
  finish(api, stream, "a device-to-host copy");
}

void DeviceBuffer::memset8(std::uint8_t value, CUstream stream) {
  if (size_ == 0) return;
  detail::ContextGuard guard(device_);
  const detail::DriverApi& api = detail::driver_api();
  detail::check(api.cuMemsetD8Async(ptr_, value, size_, stream), "cuMemsetD8Async");
  finish(api, stream, "a memset");
}

void DeviceBuffer::memset32(std::uint32_t value, CUstream stream) {
  if (size_ % 4 != 0) throw_invalid("memset32: the buffer size " + std::to_string(size_) + " is not a multiple of 4");
  if (size_ == 0) return;
  detail::ContextGuard guard(device_);
  const detail::DriverApi& api = detail::driver_api();
  detail::check(api.cuMemsetD32Async(ptr_, value, size_ / 4, stream), "cuMemsetD32Async");
  finish(api, stream, "a memset");
}

// --- Stream ----------------------------------------------------------------------------------------

Stream::Stream(int device, bool non_blocking) : device_(device), owner_(true) {
  detail::ContextGuard guard(device);
  detail::check(detail::driver_api().cuStreamCreate(&stream_, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT),
                "creating a stream on device " + std::to_string(device));
}

Stream Stream::wrap(CUstream stream, int device) noexcept { return Stream(stream, device, false); }

Stream::~Stream() { release(); }

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_), owner_(std::exchange(other.owner_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    release();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

void Stream::release() noexcept {
  if (owner_ && stream_ != nullptr) {
    detail::ContextGuard guard(device_, std::nothrow);
    if (guard.ok()) detail::loaded_driver_api()->cuStreamDestroy(stream_);
  }
  stream_ = nullptr;
  owner_ = false;
}

void Stream::synchronize() const { swz::synchronize(stream_, device_); }

// --- Event -----------------------------------------------------------------------------------------

Event::Event(int device) : device_(device) {
  detail::ContextGuard guard(device);
  detail::check(detail::driver_api().cuEventCreate(&event_, CU_EVENT_DEFAULT),
                "creating an event on device " + std::to_string(device));
}

Event::~Event() { release(); }

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Event::release() noexcept {
  if (event_ == nullptr) return;
  detail::ContextGuard guard(device_, std::nothrow);
  if (guard.ok()) detail::loaded_driver_api()->cuEventDestroy(event_);
  event_ = nullptr;
}

void Event::record(CUstream stream) {
  detail::ContextGuard guard(device_);
  detail::check(detail::driver_api().cuEventRecord(event_, stream), "cuEventRecord");
}

void Event::synchronize() const {
  detail::ContextGuard guard(device_);
  detail::check(detail::driver_api().cuEventSynchronize(event_), "cuEventSynchronize");
}

float elapsed_ms(const Event& start, const Event& stop) {
  if (start.device() != stop.device()) throw_invalid("elapsed_ms: the two events belong to different devices");
  stop.synchronize();
  detail::ContextGuard guard(stop.device());
  float ms = 0.0f;
  detail::check(detail::driver_api().cuEventElapsedTime(&ms, start.handle(), stop.handle()), "cuEventElapsedTime");
  return ms;
}

}  // namespace swz
