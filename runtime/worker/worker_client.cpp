// runtime: the autotuner's side of the benchmark worker (runtime/worker/worker_client.hpp): locate swz-worker,
// posix_spawn it on one end of a socketpair, wait for replies with deadlines, kill and restart it.
#include "runtime/worker/worker_client.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "swzjit/error.hpp"
#include "swzjit/install.hpp"
#include "swzjit/log.hpp"

extern char** environ;

namespace swz {
namespace detail {
namespace worker {
namespace {

constexpr double kQuitGraceSeconds = 5;
constexpr double kKillReapSeconds = 10;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string dirname_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// `dir` + "/" + `rel`, with rel's leading "../" taken off dir, so the paths named are the plain ones
// ("<prefix>/libexec/swz-worker", not "<prefix>/bin/../libexec/swz-worker").
std::string join_relative(std::string dir, std::string rel) {
  while (rel.rfind("../", 0) == 0 && dir != "/" && dir != ".") {
    dir = dirname_of(dir);
    rel.erase(0, 3);
  }
  return dir == "/" ? "/" + rel : dir + "/" + rel;
}

// The libexec directory of the installed package an application was compiled against (install.hpp
// registers it during static initialisation); a function-local static, so registration may come first.
std::mutex& package_libexec_mutex() {
  static std::mutex mu;
  return mu;
}
std::string& package_libexec_slot() {
  static std::string dir;
  return dir;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    std::string s = "exit code " + std::to_string(code);
    if (code == 3) s += " (a sticky CUDA error)";
    if (code == 2) s += " (a protocol error)";
    return s;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "status " + std::to_string(status);
}

// Waits up to `timeout_s` for `pid`; true (with its status) once reaped.
bool reap(pid_t pid, double timeout_s, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more: nothing to reap
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

}  // namespace

WorkerSettings WorkerSettings::from_environment() {
  WorkerSettings s;
  if (const char* env = std::getenv("SWZJIT_WORKER")) s.env_path = env;
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) s.self_exe.assign(buf, static_cast<std::size_t>(n));
  Dl_info info{};
  // NOTE: any function of the library names its file: libswzjit.so, or the executable it is linked into.
  if (::dladdr(reinterpret_cast<void*>(&find_worker), &info) != 0 && info.dli_fname != nullptr) {
    char real[4096];
    s.library = ::realpath(info.dli_fname, real) ? std::string(real) : std::string(info.dli_fname);
  }
  {
    std::lock_guard<std::mutex> lock(package_libexec_mutex());
    s.package_libexec = package_libexec_slot();
  }
#ifdef SWZJIT_BIN_TO_LIBEXEC
  s.bin_to_libexec = SWZJIT_BIN_TO_LIBEXEC;
#endif
#ifdef SWZJIT_LIB_TO_LIBEXEC
  s.lib_to_libexec = SWZJIT_LIB_TO_LIBEXEC;
#endif
#ifdef SWZJIT_WORKER_BUILD_PATH
  s.build_path = SWZJIT_WORKER_BUILD_PATH;
#endif
#ifdef SWZJIT_WORKER_INSTALL_PATH
  s.install_path = SWZJIT_WORKER_INSTALL_PATH;
#endif
  return s;
}

std::string find_worker(const WorkerSettings& s) {
  if (!s.env_path.empty()) {
    if (is_executable_file(s.env_path)) return s.env_path;
    throw Error(ErrorKind::Io, "SWZJIT_WORKER=" + s.env_path +
                                   " is not an executable file; point it at the swz-worker program built with "
                                   "libswzjit, or unset it to use the one next to your program or installed");
  }
  std::vector<std::string> places;
  auto add = [&](const std::string& p) {
    if (std::find(places.begin(), places.end(), p) == places.end()) places.push_back(p);
  };
  if (!s.self_exe.empty()) {
    add(dirname_of(s.self_exe) + "/swz-worker");
    add(join_relative(dirname_of(s.self_exe), s.bin_to_libexec + "/swz-worker"));
  }
  if (!s.library.empty() && s.library != s.self_exe) {
    add(dirname_of(s.library) + "/swz-worker");
    add(join_relative(dirname_of(s.library), s.lib_to_libexec + "/swz-worker"));
  }
  if (!s.package_libexec.empty()) add(s.package_libexec + "/swz-worker");
  // One directory up: the test programs of a build tree (build/tests/) reach its build/swz-worker.
  if (!s.self_exe.empty()) add(dirname_of(dirname_of(s.self_exe)) + "/swz-worker");
  if (!s.install_path.empty()) add(s.install_path);
  if (!s.build_path.empty()) add(s.build_path);
  std::string looked;
  for (const auto& p : places) {
    if (is_executable_file(p)) {
      log(LogLevel::Debug, "benchmark worker: " + p);
      return p;
    }
    looked += (looked.empty() ? "" : ", ") + p;
  }
  throw Error(ErrorKind::Io,
              "cannot find swz-worker, the autotuner's benchmark process (looked at: " + looked +
                  "); build it (target swz-worker) or install libswzjit, then set SWZJIT_WORKER=/path/to/swz-worker "
                  "if it is somewhere else");
}

}  // namespace worker
}  // namespace detail

std::string worker_path() { return detail::worker::find_worker(detail::worker::WorkerSettings::from_environment()); }

namespace detail {

bool register_installed_libexec(const char* directory) noexcept {
  try {
    std::lock_guard<std::mutex> lock(worker::package_libexec_mutex());
    worker::package_libexec_slot() = directory != nullptr ? directory : "";
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace detail

std::string library_path() { return detail::worker::WorkerSettings::from_environment().library; }

namespace detail {
namespace worker {

// --- WorkerProcess ------------------------------------------------------------------------------

WorkerProcess::WorkerProcess(const std::string& path) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw Error(ErrorKind::Io, std::string("creating the worker's socket: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, sv[1], STDOUT_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // nothing else of ours leaks into the worker
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string arg0 = path;
  char* argv[] = {&arg0[0], nullptr};
  const int rc = ::posix_spawn(&pid_, path.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    throw Error(ErrorKind::Io, "starting the benchmark worker " + path + ": " + std::strerror(rc) +
                                   " (set SWZJIT_WORKER to a working swz-worker)");
  }
  fd_ = sv[0];
}

WorkerProcess::~WorkerProcess() {
  if (fd_ >= 0) {
    write_all(fd_, encode(QuitRequest{}), 0);  // only if it fits at once: closing the socket ends it too
    ::close(fd_);
  }
  if (reaped_ || pid_ <= 0) return;
  // NOTE: the worker tears its CUDA context down after Quit (tens of ms); nobody needs to wait for
  // that, so a detached thread reaps it, killing it if it lingers.
  const pid_t pid = pid_;
  const auto reaper = [pid] {
    int status = 0;
    if (!reap(pid, kQuitGraceSeconds, &status)) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  };
  try {
    std::thread(reaper).detach();
  } catch (...) {
    reaper();
  }
}

bool WorkerProcess::send(const std::string& frame, double timeout_s, bool* timed_out) {
  if (timed_out) *timed_out = false;
  return fd_ >= 0 && write_all(fd_, frame, timeout_s, timed_out);
}

ReadStatus WorkerProcess::receive(Frame* frame, double timeout_s) {
  if (fd_ < 0) return ReadStatus::Eof;
  return read_frame(fd_, frame, timeout_s);
}

void WorkerProcess::kill() noexcept {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  if (reap(pid_, kKillReapSeconds, &status)) {
    reaped_ = true;
    end_ = describe_status(status);
  }
}

std::string WorkerProcess::wait_exit(double timeout_s) noexcept {
  if (reaped_) return end_;
  int status = 0;
  if (pid_ > 0 && reap(pid_, timeout_s, &status)) {
    reaped_ = true;
    end_ = describe_status(status);
    return end_;
  }
  return "still running after closing its socket";
}

// --- WorkerSession ------------------------------------------------------------------------------

WorkerSession::WorkerSession(std::string path, HelloRequest hello, double setup_timeout_s)
    : path_(std::move(path)), hello_(hello), setup_timeout_s_(setup_timeout_s) {}

WorkerSession::~WorkerSession() = default;

void WorkerSession::start() {
  if (process_) return;
  process_ = std::make_unique<WorkerProcess>(path_);
  ++starts_;
  hello_done_ = support_done_ = false;
  process_->send(encode(hello_), setup_timeout_s_);  // a worker that died at once shows up at the first receive
}

void WorkerSession::set_support(SupportRequest support) { support_ = std::move(support); }

void WorkerSession::discard() noexcept {
  if (process_) process_->kill();
  process_.reset();
  hello_done_ = support_done_ = false;
}

std::string WorkerSession::describe_loss(ReadStatus status, double timeout_s) {
  if (status == ReadStatus::Timeout) return "no answer within " + std::to_string(timeout_s) + " s";
  return "the worker ended (" + process_->wait_exit(2.0) + ")";
}

void WorkerSession::ensure_ready() {
  for (int attempt = 0;; ++attempt) {
    start();
    std::string failure;
    try {
      Frame frame;
      if (!hello_done_) {
        const ReadStatus st = process_->receive(&frame, setup_timeout_s_);
        if (st != ReadStatus::Ok) {
          failure = "answering Hello: " + describe_loss(st, setup_timeout_s_);
        } else {
          hello_reply_ = decode<HelloReply>(frame);
          if (!hello_reply_.ok) {
            discard();
            throw Error(static_cast<ErrorKind>(hello_reply_.error_kind),
                        "the benchmark worker could not set up the GPU: " + hello_reply_.error);
          }
          hello_done_ = true;
        }
      }
      if (failure.empty() && !support_done_) {
        if (!support_) throw Error(ErrorKind::Internal, "the autotuner started benchmarks before its check kernel");
        bool send_timed_out = false;
        const ReadStatus st = process_->send(encode(*support_), setup_timeout_s_, &send_timed_out)
                                  ? process_->receive(&frame, setup_timeout_s_)
                                  : send_timed_out ? ReadStatus::Timeout : ReadStatus::Eof;
        if (st != ReadStatus::Ok) {
          failure = "loading the check kernel: " + describe_loss(st, setup_timeout_s_);
        } else {
          const SupportReply reply = decode<SupportReply>(frame);
          if (!reply.ok) {
            discard();
            throw Error(static_cast<ErrorKind>(reply.error_kind),
                        "the benchmark worker could not load its check kernel or fill the input: " + reply.error);
          }
          support_done_ = true;
        }
      }
    } catch (const ProtocolError& e) {
      failure = e.what();
    }
    if (failure.empty()) return;
    discard();
    if (attempt >= 1)
      throw Error(ErrorKind::Driver, "the benchmark worker " + path_ + " failed twice while setting up: " + failure);
  }
}

BenchResult WorkerSession::bench(const BenchRequest& request, double timeout_s) {
  ensure_ready();
  BenchResult result;
  result.id = request.job.id;
  Frame frame;
  ReadStatus st = ReadStatus::Eof;
  std::string protocol_failure;
  try {
    bool send_timed_out = false;
    if (process_->send(encode(request), timeout_s, &send_timed_out))
      st = process_->receive(&frame, timeout_s);
    else if (send_timed_out)
      st = ReadStatus::Timeout;
    if (st == ReadStatus::Ok) {
      const BenchReply reply = decode<BenchReply>(frame);
      if (reply.result.id != request.job.id) throw ProtocolError("a reply for another candidate");
      if (reply.result.worker_exiting) discard();  // it exits after a sticky error; the next job restarts it
      return reply.result;
    }
  } catch (const ProtocolError& e) {
    protocol_failure = e.what();
  }
  if (!protocol_failure.empty()) {
    result.status = "launch-failed";
    result.reason = protocol_failure + " (the worker was restarted)";
  } else if (st == ReadStatus::Timeout) {
    result.status = "timeout";
    result.reason = "no answer within " + std::to_string(timeout_s) + " s; the worker was killed and restarted";
  } else {
    result.status = "launch-failed";
    result.reason = "the worker died running this candidate (" + process_->wait_exit(2.0) + ")";
  }
  discard();
  return result;
}

std::optional<std::vector<BenchResult>> WorkerSession::retime(const RetimeRequest& request, double timeout_s,
                                                              std::string* why) {
  ensure_ready();
  Frame frame;
  ReadStatus st = ReadStatus::Eof;
  try {
    bool send_timed_out = false;
    if (process_->send(encode(request), timeout_s, &send_timed_out))
      st = process_->receive(&frame, timeout_s);
    else if (send_timed_out)
      st = ReadStatus::Timeout;
    if (st == ReadStatus::Ok) {
      RetimeReply reply = decode<RetimeReply>(frame);
      if (reply.results.size() != request.jobs.size()) throw ProtocolError("a re-time reply of the wrong length");
      for (const auto& r : reply.results)
        if (r.worker_exiting) discard();
      return std::move(reply.results);
    }
    if (why) *why = describe_loss(st, timeout_s);
  } catch (const ProtocolError& e) {
    if (why) *why = e.what();
  }
  discard();
  return std::nullopt;
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
