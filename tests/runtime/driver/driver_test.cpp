// tests/runtime: the lazy driver loader (runtime/driver/driver.cpp) on a machine without a usable driver,
// and its sticky-error bookkeeping. CPU only. Scenarios that swap the loaded driver run in a forked
// child, so the rest of the suite keeps the process's real driver state.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "runtime/driver/driver_api.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace {

// Runs `body` in a forked child; returns what it reported ("" = every expectation held).
// The child never returns into doctest: it writes its report to a pipe and _exits.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    std::string report;
    try {
      report = body();
    } catch (const std::exception& e) {
      report = std::string("unexpected exception: ") + e.what();
    } catch (...) {
      report = "unexpected non-standard exception";
    }
    const ssize_t ignored = write(fds[1], report.data(), report.size());
    (void)ignored;
    close(fds[1]);
    _exit(report.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string report;
  char buf[1024];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) report.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died (signal " + std::to_string(WTERMSIG(status)) + "): " + report;
  if (WEXITSTATUS(status) != 0 && report.empty()) return "child exited " + std::to_string(WEXITSTATUS(status));
  return report;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// "" if `call` throws swz::Error of `kind` whose message contains `part`; else what happened.
std::string expect_error(const char* label, swz::ErrorKind kind, const std::string& part,
                         const std::function<void()>& call) {
  try {
    call();
  } catch (const swz::Error& e) {
    if (e.kind() != kind)
      return std::string(label) + ": threw '" + swz::to_string(e.kind()) + "' instead of '" + swz::to_string(kind) +
             "': " + e.what() + "\n";
    if (!contains(e.what(), part)) return std::string(label) + ": message lacks '" + part + "': " + e.what() + "\n";
    return "";
  }
  return std::string(label) + ": did not throw\n";
}

// Every device-side entry point must fail with `kind` and a message containing `part`, never crash.
std::string expect_all_fail(swz::ErrorKind kind, const std::string& part) {
  std::string r;
  r += expect_error("device_count", kind, part, [] { swz::device_count(); });
  r += expect_error("device_info", kind, part, [] { swz::device_info(0); });
  r += expect_error("driver_version_string", kind, part, [] { swz::driver_version_string(); });
  r += expect_error("current_device", kind, part, [] { swz::current_device(); });
  r += expect_error("DeviceBuffer", kind, part, [] { swz::DeviceBuffer b(256); });
  r += expect_error("empty DeviceBuffer", kind, part, [] { swz::DeviceBuffer b(0); });
  r += expect_error("Stream", kind, part, [] { swz::Stream s; });
  r += expect_error("Event", kind, part, [] { swz::Event e; });
  r += expect_error("synchronize", kind, part, [] { swz::synchronize(nullptr); });
  r += expect_error("Module", kind, part, [] {
    swz::CompiledKernel k;
    k.image = "not loaded anyway";
    k.lowered_name = "_Z1kv";
    swz::Module m(k);
  });
  return r;
}

}  // namespace

TEST_CASE("driver: settings come from SWZJIT_LIBCUDA") {
  const std::string report = in_child([] {
    std::string r;
    unsetenv("SWZJIT_LIBCUDA");
    if (swz::detail::DriverSettings::from_environment().libcuda_path != "libcuda.so.1") r += "default path wrong\n";
    setenv("SWZJIT_LIBCUDA", "/opt/somewhere/libcuda.so.1", 1);
    if (swz::detail::DriverSettings::from_environment().libcuda_path != "/opt/somewhere/libcuda.so.1")
      r += "SWZJIT_LIBCUDA ignored\n";
    setenv("SWZJIT_LIBCUDA", "", 1);
    if (swz::detail::DriverSettings::from_environment().libcuda_path != "libcuda.so.1") r += "empty value not ignored\n";
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("driver: a libcuda that does not exist means NoDevice with a reason, never a crash") {
  const std::string report = in_child([] {
    std::string r;
    setenv("SWZJIT_LIBCUDA", "/nonexistent/dir/libcuda.so.1", 1);
    swz::detail::replace_driver_for_testing(swz::detail::DriverSettings::from_environment());
    std::string why;
    if (swz::driver_available(&why)) return std::string("driver_available() is true\n");
    if (!contains(why, "/nonexistent/dir/libcuda.so.1")) r += "reason does not name the path: " + why + "\n";
    if (!contains(why, "SWZJIT_LIBCUDA")) r += "reason does not say what to do: " + why + "\n";
    if (swz::driver_available(nullptr)) r += "driver_available(nullptr) is true\n";
    if (swz::context_lost()) r += "context_lost() is true\n";
    r += expect_all_fail(swz::ErrorKind::NoDevice, "install the NVIDIA driver");
    // CPU-side work is unaffected
    swz::CompileRequest req{"__global__ void k(int* p) { *p = 1; }\n", "", "k", "sm_80", {}};
    if (swz::compile(req).image.empty()) r += "compile without a driver produced nothing\n";
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("driver: the CUDA toolkit's stub libcuda is recognised, not mistaken for a driver") {
  const char* root = std::getenv("CUDA_PATH");
  const std::string stub = std::string(root ? root : "/usr/local/cuda") + "/lib64/stubs/libcuda.so";
  if (access(stub.c_str(), R_OK) != 0) {
    MESSAGE("no stub library at " << stub << "; case not exercised");
    return;
  }
  const std::string report = in_child([&] {
    swz::detail::DriverSettings settings;
    settings.libcuda_path = stub;
    swz::detail::replace_driver_for_testing(settings);
    std::string why;
    if (swz::driver_available(&why)) return std::string("the stub counts as a driver\n");
    std::string r;
    if (!contains(why, "stub")) r += "reason does not say stub: " + why + "\n";
    r += expect_all_fail(swz::ErrorKind::NoDevice, "stub");
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("driver: a library that is not libcuda is rejected with a reason") {
  const std::string report = in_child([] {
    swz::detail::DriverSettings settings;
    settings.libcuda_path = "libc.so.6";  // loads fine, exports no CUDA entry points
    swz::detail::replace_driver_for_testing(settings);
    std::string why;
    if (swz::driver_available(&why)) return std::string("libc counts as a driver\n");
    return contains(why, "cuGetProcAddress") ? std::string() : "unhelpful reason: " + why + "\n";
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("driver: this process's default driver state is consistent") {
  std::string why;
  if (swz::driver_available(&why)) {
    CHECK(why.empty());
    CHECK(swz::device_count() >= 1);
    CHECK(swz::device_info(0).arch().rfind("sm_", 0) == 0);
    return;
  }
  MESSAGE("no driver here: " << why);
  CHECK_FALSE(why.empty());
  const std::string failures = expect_all_fail(swz::ErrorKind::NoDevice, "no usable CUDA driver");
  CHECK_MESSAGE(failures.empty(), failures);
}

TEST_CASE("driver: sticky errors are classified") {
  CHECK(swz::detail::is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_ILLEGAL_INSTRUCTION));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_MISALIGNED_ADDRESS));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_INVALID_ADDRESS_SPACE));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_INVALID_PC));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_HARDWARE_STACK_ERROR));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_LAUNCH_FAILED));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_ECC_UNCORRECTABLE));
  CHECK(swz::detail::is_sticky(CUDA_ERROR_ASSERT));
  CHECK_FALSE(swz::detail::is_sticky(CUDA_SUCCESS));
  CHECK_FALSE(swz::detail::is_sticky(CUDA_ERROR_INVALID_VALUE));
  CHECK_FALSE(swz::detail::is_sticky(CUDA_ERROR_OUT_OF_MEMORY));
  CHECK_FALSE(swz::detail::is_sticky(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  CHECK_FALSE(swz::detail::is_sticky(CUDA_ERROR_NOT_FOUND));
}

TEST_CASE("driver: a failed call names what was done; a sticky one loses the context for good") {
  const std::string report = in_child([] {
    std::string r;
    r += expect_error("check(INVALID_VALUE)", swz::ErrorKind::Driver, "probing the checker failed",
                      [] { swz::detail::check(CUDA_ERROR_INVALID_VALUE, "probing the checker"); });
    if (swz::context_lost()) r += "a non-sticky error lost the context\n";
    r += expect_error("check(ILLEGAL_ADDRESS)", swz::ErrorKind::ContextLost, "restart the process",
                      [] { swz::detail::check(CUDA_ERROR_ILLEGAL_ADDRESS, "running the faulting kernel"); });
    std::string why;
    if (!swz::context_lost(&why)) return r + "context_lost() is false after a sticky error\n";
    if (!contains(why, "running the faulting kernel")) r += "the lost message does not name the cause: " + why + "\n";
    // every later call fails fast with the first cause, whatever the driver's state
    r += expect_all_fail(swz::ErrorKind::ContextLost, "running the faulting kernel");
    std::string avail;
    if (swz::driver_available(&avail)) r += "driver_available() is true after a lost context\n";
    if (!contains(avail, "restart")) r += "driver_available() does not say why: " + avail + "\n";
    // a second sticky error does not overwrite the first cause
    try {
      swz::detail::check(CUDA_ERROR_LAUNCH_FAILED, "something later");
    } catch (const swz::Error&) {
    }
    swz::context_lost(&why);
    if (!contains(why, "running the faulting kernel")) r += "the first cause was overwritten: " + why + "\n";
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}
