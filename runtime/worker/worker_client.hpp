// runtime (internal): the autotuner's side of the benchmark worker -- finding swz-worker, spawning it
// with a socket on its stdin/stdout, bounded waits for its replies, and restarting it after a fault,
// a hang (SIGKILL) or a crash. The protocol is runtime/worker/worker_protocol.hpp.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/worker/worker_protocol.hpp"

namespace swz {
namespace detail {
namespace worker {

/// Where the worker may be; read once from the environment and the process.
struct WorkerSettings {
  std::string env_path;      ///< $SWZJIT_WORKER (wins when set)
  std::string self_exe;      ///< the running executable (/proc/self/exe)
  std::string library;       ///< the file libswzjit was loaded from (dladdr; the executable when static)
  std::string bin_to_libexec = "../libexec";  ///< libexec relative to an installed executable's directory
  std::string lib_to_libexec = "../libexec";  ///< libexec relative to the installed library's directory
  std::string package_libexec;  ///< the installed package's libexec an application was built against
  std::string install_path;  ///< the configured prefix's (SWZJIT_WORKER_INSTALL_PATH)
  std::string build_path;    ///< the build tree's swz-worker (SWZJIT_WORKER_BUILD_PATH), tried last

  static WorkerSettings from_environment();
};

/// The swz-worker to run: $SWZJIT_WORKER, else next to the running executable, else in libexec
/// relative to the executable, else next to or in libexec relative to libswzjit, else in the libexec
/// of the installed package the application was built against, else one directory up from the executable (tests in build/tests), else the configured prefix's, else the build tree's:
/// an installed copy always wins over the build tree it came from.
/// @throws Error(Io) naming every place looked at and how to point at the worker.
std::string find_worker(const WorkerSettings& settings);

/// One running swz-worker process. Never throws from the destructor: it asks the worker to quit,
/// and reaps it in the background (killing it if it has not exited within a few seconds).
class WorkerProcess {
 public:
  /// @throws Error(Io) when the process cannot be started.
  explicit WorkerProcess(const std::string& path);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  /// False when the worker is gone, or did not take the frame within `timeout_s` (then `*timed_out`).
  bool send(const std::string& frame, double timeout_s, bool* timed_out = nullptr);
  /// @throws ProtocolError for a malformed reply.
  ReadStatus receive(Frame* frame, double timeout_s);
  /// SIGKILL, then reap (waiting at most a few seconds).
  void kill() noexcept;
  /// Reaps a worker that closed its end; says how it ended ("exit code 3", "killed by signal 11 ...").
  std::string wait_exit(double timeout_s) noexcept;

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string end_;  // how it ended, once reaped
};

/// A worker kept for a whole tune: started early (CUDA initialization overlaps the compiles),
/// set up with Hello + Support, and restarted transparently after it dies or is killed.
class WorkerSession {
 public:
  WorkerSession(std::string path, HelloRequest hello, double setup_timeout_s);
  ~WorkerSession();

  /// Spawns the worker and sends Hello without waiting for the answer.
  void start();
  /// The check kernel every (re)started worker loads.
  void set_support(SupportRequest support);
  /// Waits until the worker has answered Hello and Support.
  /// @throws Error (NoDevice, Driver, ...) when the worker reports it cannot set up, or it failed twice.
  void ensure_ready();
  /// Verify and time one candidate. A hang is killed after `timeout_s` and reported as "timeout"; a
  /// worker that dies or reports a sticky error is reported as "launch-failed" and restarted later.
  BenchResult bench(const BenchRequest& request, double timeout_s);
  /// Re-time candidates interleaved; nullopt (with `why`) when the worker hung or died without a reply.
  std::optional<std::vector<BenchResult>> retime(const RetimeRequest& request, double timeout_s, std::string* why);

  /// Workers started after the first (restarts after faults, hangs and crashes).
  int restarts() const noexcept { return starts_ > 0 ? starts_ - 1 : 0; }
  const HelloReply& hello_reply() const noexcept { return hello_reply_; }

 private:
  void discard() noexcept;
  std::string describe_loss(ReadStatus status, double timeout_s);

  std::string path_;
  HelloRequest hello_;
  double setup_timeout_s_;
  std::optional<SupportRequest> support_;
  std::unique_ptr<WorkerProcess> process_;
  bool hello_done_ = false, support_done_ = false;
  HelloReply hello_reply_;
  int starts_ = 0;
};

}  // namespace worker
}  // namespace detail
}  // namespace swz
