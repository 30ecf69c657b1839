// tests/runtime (GPU suite): the whole runtime path on a device -- NVRTC compile of a template
// instantiation, module load, launch on the caller's stream, results checked on fresh random data
// inside guard regions; a second thread; >48 KiB dynamic shared memory; a sticky fault in a child.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "templates/swizzle.cuh"
#include "tests/gpu_child.hpp"

namespace {

constexpr std::uint32_t kPoison = 0x7fc0dead;  // a NaN no kernel computes
constexpr std::size_t kGuard = 1024;           // floats of poison on each side of every output

std::string probe_source() {
  const std::string path = std::string(SWZ_SOURCE_DIR) + "/tests/runtime/kernels/runtime_probe.cu";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw swz::Error(swz::ErrorKind::Io, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The device's arch, which the suite needs to be one libswzjit targets.
std::string device_arch() {
  const std::string arch = swz::device_info(0).arch();
  REQUIRE_MESSAGE(swz::is_known_arch(arch), "device 0 is " << arch << ", not a libswzjit target");
  return arch;
}

swz::CompiledKernel compile_probe(const std::string& name_expression, const std::string& arch) {
  swz::CompileRequest r;
  r.source = probe_source();
  r.source_name = "runtime_probe.cu";
  r.name_expression = name_expression;
  r.arch = arch;
  return swz::compile(r);
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::uint32_t fresh_seed() {
  const std::uint32_t seed = std::random_device{}();
  MESSAGE("random seed " << seed);
  return seed;
}

// An output buffer of `n` floats between two poisoned guard regions.
struct GuardedOutput {
  swz::DeviceBuffer buffer;
  std::size_t n;
  explicit GuardedOutput(std::size_t count) : buffer((count + 2 * kGuard) * sizeof(float)), n(count) {
    buffer.memset32(kPoison);
  }
  swz::DevicePtr data() const { return buffer.ptr() + kGuard * sizeof(float); }
  // The output, after checking that both guards still hold the poison.
  std::vector<float> read_checked() const {
    std::vector<std::uint32_t> all(n + 2 * kGuard);
    buffer.copy_to_host(all.data(), all.size() * sizeof(std::uint32_t));
    std::size_t damaged = 0;
    for (std::size_t i = 0; i < kGuard; ++i) damaged += (all[i] != kPoison) + (all[kGuard + n + i] != kPoison);
    CHECK_MESSAGE(damaged == 0, damaged << " guard words overwritten");
    std::vector<float> out(n);
    std::memcpy(out.data(), all.data() + kGuard, n * sizeof(float));
    return out;
  }
};

// Runs swizzle_gather<3,3,3> on `stream` and checks it against the host's evaluation of the same
// Swizzle functor (templates/swizzle.cuh, compiled here by the host compiler).
void run_swizzle_gather(const swz::Kernel& kernel, CUstream stream) {
  constexpr int kN = 1 << 16;  // a multiple of the period 2^(3+3+3)
  const auto input = random_floats(kN, fresh_seed());
  swz::DeviceBuffer in(kN * sizeof(float));
  in.copy_from_host(input.data(), kN * sizeof(float), 0, stream);
  GuardedOutput out(kN);

  swz::DevicePtr in_ptr = in.ptr();
  swz::DevicePtr out_ptr = out.data();
  int n = kN;
  void* args[] = {&in_ptr, &out_ptr, &n};
  kernel.launch({kN / 256, 1, 1}, {256, 1, 1}, 0, stream, args);
  swz::synchronize(stream);

  const auto got = out.read_checked();
  const swz::tpl::Swizzle<3, 3, 3> swizzle{};
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += got[i] != input[static_cast<std::size_t>(swizzle(i))];
  CHECK_MESSAGE(wrong == 0, wrong << " of " << kN << " outputs wrong");
}

}  // namespace

TEST_CASE("gpu runtime: compile, load and launch a template instantiation on the caller's stream") {
  const std::string arch = device_arch();
  const auto compiled = compile_probe("swz_test::swizzle_gather<3, 3, 3>", arch);
  const swz::Module module(compiled);
  const swz::Kernel kernel = module.kernel();
  CHECK(kernel.lowered_name() == compiled.lowered_name);
  CHECK(kernel.handle() != nullptr);

  swz::Stream stream;  // non-blocking: nothing orders it with the legacy stream but the helpers' stream argument
  run_swizzle_gather(kernel, stream.handle());
  // the legacy default stream works too
  run_swizzle_gather(kernel, nullptr);

  // the driver and the cubin parser agree on resources
  const auto attrs = kernel.attributes();
  const auto elf = swz::cubin_resources(compiled);
  CHECK(attrs.num_regs == elf.registers);
  CHECK(attrs.local_bytes == elf.local_bytes);
  CHECK(attrs.static_smem_bytes == elf.static_smem_bytes);
  CHECK(attrs.binary_version == swz::device_info(0).cc_major * 10 + swz::device_info(0).cc_minor);
}

TEST_CASE("gpu runtime: static shared memory and local memory as the driver reports them") {
  const std::string arch = device_arch();
  const auto compiled = compile_probe("swz_test::smem_reverse<256>", arch);
  const swz::Module module(compiled);
  const auto smem = module.kernel().attributes();
  MESSAGE("smem_reverse<256>: driver says " << smem.static_smem_bytes << " static smem bytes, ELF says "
                                            << swz::cubin_resources(compiled).static_smem_bytes);
  CHECK(smem.static_smem_bytes == swz::cubin_resources(compiled).static_smem_bytes);
  const auto local = module.kernel("_ZN8swz_test11local_arrayEPKfPfi").attributes();
  CHECK(local.local_bytes == swz::cubin_resources(compiled.image, "_ZN8swz_test11local_arrayEPKfPfi").local_bytes);
  CHECK_THROWS_AS(module.kernel("_Z12not_a_kernelv"), swz::Error);
}

TEST_CASE("gpu runtime: a call from a thread that never touched CUDA works") {
  const std::string arch = device_arch();
  const swz::Module module(compile_probe("swz_test::swizzle_gather<3, 3, 3>", arch));
  const swz::Kernel kernel = module.kernel();
  std::string failure;
  std::thread worker([&] {
    try {
      swz::Stream stream;
      run_swizzle_gather(kernel, stream.handle());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  worker.join();
  CHECK_MESSAGE(failure.empty(), failure);
  // and the module, loaded on this thread, was used there and is still fine here
  run_swizzle_gather(kernel, nullptr);
}

TEST_CASE("gpu runtime: more than 48 KiB of dynamic shared memory needs and honours the attribute") {
  const std::string arch = device_arch();
  const swz::DeviceInfo info = swz::device_info(0);
  const int floats = 80 * 1024 / 4;  // 80 KiB per block
  REQUIRE(info.max_smem_per_block_optin >= floats * 4);
  const auto compiled = compile_probe("swz_test::dynamic_smem_reverse", arch);
  const swz::Module module(compiled);
  swz::Kernel kernel = module.kernel();

  constexpr int kBlocks = 8;
  const auto input = random_floats(static_cast<std::size_t>(kBlocks) * floats, fresh_seed());
  swz::DeviceBuffer in(input.size() * sizeof(float));
  in.copy_from_host(input.data(), input.size() * sizeof(float));
  GuardedOutput out(input.size());
  swz::DevicePtr in_ptr = in.ptr();
  swz::DevicePtr out_ptr = out.data();
  int n = floats;
  void* args[] = {&in_ptr, &out_ptr, &n};
  const unsigned smem = static_cast<unsigned>(floats * 4);

  // without the opt-in the launch is refused (a plain driver error, not a lost context)
  try {
    kernel.launch({kBlocks, 1, 1}, {256, 1, 1}, smem, nullptr, args);
    FAIL("a launch with 80 KiB of dynamic shared memory was accepted without the attribute");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Driver);
    CHECK(std::string(e.what()).find("set_max_dynamic_smem") != std::string::npos);
  }
  CHECK_FALSE(swz::context_lost());

  kernel.set_max_dynamic_smem(static_cast<int>(smem));
  CHECK(kernel.attributes().max_dynamic_smem_bytes == static_cast<int>(smem));
  kernel.launch({kBlocks, 1, 1}, {256, 1, 1}, smem, nullptr, args);
  swz::synchronize(nullptr);
  const auto got = out.read_checked();
  int wrong = 0;
  for (int b = 0; b < kBlocks; ++b)
    for (int i = 0; i < floats; ++i)
      wrong += got[static_cast<std::size_t>(b) * floats + i] != input[static_cast<std::size_t>(b) * floats + (floats - 1 - i)];
  CHECK_MESSAGE(wrong == 0, wrong << " outputs wrong");

  // beyond the device's limit: InvalidArgument naming the limit
  try {
    kernel.set_max_dynamic_smem(info.max_smem_per_block_optin + 1024);
    FAIL("an impossible dynamic shared memory size was accepted");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find(std::to_string(info.max_smem_per_block_optin)) != std::string::npos);
  }
}

TEST_CASE("gpu runtime: events time work; buffers check their ranges; bad launches are InvalidArgument") {
  swz::Stream stream;
  swz::Event start, stop;
  swz::DeviceBuffer buffer(1 << 24);
  start.record(stream.handle());
  buffer.memset8(0x5a, stream.handle());
  stop.record(stream.handle());
  const float ms = swz::elapsed_ms(start, stop);
  CHECK(ms >= 0.0f);
  unsigned char probe[4] = {};
  buffer.copy_to_host(probe, 4, buffer.size() - 4);
  CHECK(probe[3] == 0x5a);
  CHECK_THROWS_AS(buffer.copy_to_host(probe, 4, buffer.size() - 3), swz::Error);
  CHECK_THROWS_AS(swz::DeviceBuffer(8, swz::device_count()), swz::Error);  // no such device

  const swz::Module module(compile_probe("swz_test::store_to", device_arch()));
  void* no_args[] = {nullptr};
  try {
    module.kernel().launch({0, 1, 1}, {1, 1, 1}, 0, nullptr, no_args);
    FAIL("an empty grid was launched");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
  }
}

// --- sticky errors: only in a fresh child process --------------------------------------------------

namespace {

// The child: fault on purpose, then check that the fault and every later call report ContextLost.
int sticky_child() {
  int failures = 0;
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what.c_str());
      ++failures;
    }
  };
  try {
    const swz::Module module(compile_probe("swz_test::store_to", swz::device_info(0).arch()));
    swz::DevicePtr target = 0x10;  // never mapped
    int value = 1;
    void* args[] = {&target, &value};
    module.kernel().launch({1, 1, 1}, {1, 1, 1}, 0, nullptr, args);
    std::string first;
    try {
      swz::synchronize(nullptr);
      expect(false, "synchronize after an illegal store did not throw");
    } catch (const swz::Error& e) {
      first = e.what();
      std::printf("fault reported as %s: %s\n", swz::to_string(e.kind()), e.what());
      expect(e.kind() == swz::ErrorKind::ContextLost, "the fault is not ContextLost");
      expect(first.find("restart the process") != std::string::npos, "the message does not say to restart");
    }
    expect(swz::context_lost(), "context_lost() is false");
    const auto fails_fast = [&](const char* label, auto call) {
      try {
        call();
        expect(false, std::string(label) + " succeeded after the context was lost");
      } catch (const swz::Error& e) {
        expect(e.kind() == swz::ErrorKind::ContextLost && std::string(e.what()) == first,
               std::string(label) + " did not fail fast with the first message: " + e.what());
      }
    };
    fails_fast("DeviceBuffer", [] { swz::DeviceBuffer b(64); });
    fails_fast("Stream", [] { swz::Stream s; });
    fails_fast("launch", [&] { module.kernel().launch({1, 1, 1}, {1, 1, 1}, 0, nullptr, args); });
    fails_fast("device_info", [] { swz::device_info(0); });
    std::string why;
    expect(!swz::driver_available(&why), "driver_available() is true after a lost context");
  } catch (const std::exception& e) {
    std::printf("FAILED: unexpected exception: %s\n", e.what());
    ++failures;
  }
  std::printf("sticky child: %d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}

const bool kStickyRegistered = swz::test::register_child_mode("sticky-fault", &sticky_child);

}  // namespace

TEST_CASE("gpu runtime: a sticky fault reports ContextLost and later calls fail fast (child process)") {
  REQUIRE(kStickyRegistered);
  const auto child = swz::test::run_child_mode("sticky-fault");
  INFO("child output:\n" << child.output);
  CHECK(child.exit_code == 0);
  CHECK(child.output.find("fault reported as context lost") != std::string::npos);
  // the parent's context is untouched
  CHECK_FALSE(swz::context_lost());
  swz::DeviceBuffer still_fine(64);
  still_fine.memset32(1);
}
