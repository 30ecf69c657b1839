// tests: entry point of the GPU suite (tests/*/*_gpu_test.cpp). Where no driver or GPU is usable it
// prints "skipped: <reason>" and exits 77 (ctest's SKIP_RETURN_CODE); it never passes silently.
// `--swz-child <mode>` runs a registered child body instead (see tests/gpu_child.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "swzjit/device.hpp"
#include "tests/gpu_child.hpp"

extern char** environ;

namespace {
constexpr int kSkipExitCode = 77;  // ctest's SKIP_RETURN_CODE for the "gpu" test
}

namespace swz {
namespace test {
namespace {

std::map<std::string, ChildMain>& child_modes() {
  static std::map<std::string, ChildMain> modes;
  return modes;
}

}  // namespace

bool register_child_mode(const char* mode, ChildMain main) {
  child_modes()[mode] = main;
  return true;
}

ChildResult run_child_mode(const char* mode) {
  ChildResult result;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::string exe = "/proc/self/exe";
  std::string flag = "--swz-child";
  std::string mode_arg = mode;
  char* argv[] = {&exe[0], &flag[0], &mode_arg[0], nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    result.output = std::string("posix_spawn: ") + std::strerror(spawned);
    return result;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace test
}  // namespace swz

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--swz-child") == 0) {
    const auto& modes = swz::test::child_modes();
    const auto it = modes.find(argv[2]);
    if (it == modes.end()) {
      std::printf("unknown child mode '%s'\n", argv[2]);
      return 2;
    }
    return it->second();
  }

  std::string why;
  if (!swz::driver_available(&why)) {
    std::printf("skipped: %s\n", why.c_str());
    return kSkipExitCode;
  }
  // driver_available() guarantees at least one device; a failing query here is a real failure.
  try {
    const swz::DeviceInfo info = swz::device_info(0);
    std::printf("GPU suite on device 0: %s (%s, %d SMs), driver CUDA %s\n", info.name.c_str(), info.arch().c_str(),
                info.sm_count, swz::driver_version_string().c_str());
  } catch (const std::exception& e) {
    std::printf("GPU suite: the driver loaded but device 0 cannot be queried: %s\n", e.what());
    return 1;
  }

  doctest::Context context(argc, argv);
  return context.run();
}
