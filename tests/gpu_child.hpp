// tests: child processes for the GPU suite (implemented in tests/main_gpu.cpp). A test that must
// start from a process that never touched CUDA (sticky errors poison the whole context) registers a
// child mode and runs the suite's own binary again as `swzjit_gpu_tests --swz-child <mode>`.
#pragma once

#include <string>

namespace swz {
namespace test {

/// A child's body: runs in a fresh process before doctest starts; returns the exit code
/// (0 = every expectation held) and explains any failure on stdout.
using ChildMain = int (*)();

/// Registers `mode` (call it from a static initializer). Returns true, for use as an initializer.
bool register_child_mode(const char* mode, ChildMain main);

struct ChildResult {
  int exit_code = -1;  ///< the child's exit status, or 128 + signal when it was killed
  std::string output;  ///< its stdout and stderr, interleaved
};

/// Runs this binary again in child mode `mode` and waits for it (posix_spawn, not fork: the
/// parent has already initialized CUDA, which a forked child may not use).
ChildResult run_child_mode(const char* mode);

}  // namespace test
}  // namespace swz
