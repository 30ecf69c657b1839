// runtime (internal): the process's compile threads (compile_pool.hpp): a FIFO of jobs served by at most
// compile_thread_capacity() threads, started on demand and kept for the life of the process.
#include "runtime/tune/compile_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/jit/nvrtc_api.hpp"  // nvrtc_loaded
#include "swzjit/log.hpp"

namespace swz {
namespace detail {
namespace {

constexpr std::size_t kDefaultMaxCompileThreads = 8;
constexpr double kExitWaitSeconds = 2;

class CompileExecutor {
 public:
  // Never destroyed: its threads wait on its members until the process ends, and a static destructor
  // would run while they still may.
  static CompileExecutor& instance() {
    static CompileExecutor* const executor = [] {
      auto* e = new CompileExecutor();
      // A child forked while the threads exist has none of them: it starts afresh, with a new lock and
      // condition variable (the parent's threads wait on the old ones, whose state the child inherits and
      // must not use: a notify there may go to a waiter that does not exist in the child). The parent
      // holds the old lock across the fork, so no thread of it is changing the queue then. A pool that was
      // running in the parent does not go on in the child.
      pthread_atfork([] { instance_ptr()->mu_->lock(); }, [] { instance_ptr()->mu_->unlock(); },
                     [] {
                       CompileExecutor* x = instance_ptr();
                       // The old ones stay allocated (the child never touches them), kept where a leak
                       // checker at the child's exit finds them.
                       x->retired_.insert(x->retired_.end(), {x->mu_, x->cv_, x->idle_cv_});
                       x->mu_ = new std::mutex();
                       x->cv_ = new std::condition_variable();
                       x->idle_cv_ = new std::condition_variable();
                       x->threads_ = 0;
                       x->idle_ = 0;
                       x->jobs_.clear();
                     });
      // At exit, give the threads a moment to finish what they run (bounded): exit()'s static destructors
      // must not run under a compile, and a thread still releasing a finished job's state is not yet back
      // in its wait. exit() runs handlers and static destructors newest first: this one is registered after
      // the sanitizers' handlers, and once more after NVRTC is loaded (serve(): its statics are then
      // destroyed after the wait; NVRTC is not loaded here, so a warm process that compiles nothing never
      // loads it). Not covered: a static first made by a job still running at exit, and a job that calls
      // exit() itself holds it up for the bound.
      e->register_exit_wait();
      return e;
    }();
    return *executor;
  }

  std::size_t capacity() const noexcept { return capacity_; }

  void register_exit_wait() {
    exit_wait_after_nvrtc_ = detail::nvrtc_loaded();
    std::atexit([] { instance_ptr()->wait_idle(kExitWaitSeconds); });
  }

  /// True once no job is queued or running (every thread waits for work), false after `timeout_s`.
  bool wait_idle(double timeout_s) {
    std::unique_lock<std::mutex> lock(*mu_);
    return idle_cv_->wait_for(lock, std::chrono::duration<double>(timeout_s),
                              [&] { return jobs_.empty() && idle_ == threads_; });
  }

  void post(std::function<void()> job) {
    std::unique_lock<std::mutex> lock(*mu_);
    jobs_.push_back(std::move(job));
    // A new thread only where no thread is free to take the job; never more than the capacity.
    if (idle_ < jobs_.size() && threads_ < capacity_) {
      try {
        std::thread([this] { serve(); }).detach();
        ++threads_;
      } catch (const std::system_error&) {
        if (threads_ == 0) {  // nobody would ever run it
          jobs_.pop_back();
          throw;
        }
      }
    }
    cv_->notify_one();
  }

 private:
  CompileExecutor() : capacity_(default_capacity()) { instance_ptr() = this; }

  // SWZJIT_COMPILE_THREADS (1..256), else the hardware's threads up to kDefaultMaxCompileThreads: each
  // thread's arena may keep up to 64 MiB that NVRTC freed, so a 128-core server does not hold 8 GiB for it.
  static std::size_t default_capacity() {
    if (const char* env = std::getenv("SWZJIT_COMPILE_THREADS")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && v >= 1 && v <= 256) return static_cast<std::size_t>(v);
      log(LogLevel::Warn, "SWZJIT_COMPILE_THREADS=" + std::string(env) + " is not a number from 1 to 256; using the default");
    }
    return std::min<std::size_t>(kDefaultMaxCompileThreads, std::max(1u, std::thread::hardware_concurrency()));
  }

  static CompileExecutor*& instance_ptr() {
    static CompileExecutor* p = nullptr;
    return p;
  }

  void serve() {
    std::unique_lock<std::mutex> lock(*mu_);
    for (;;) {
      ++idle_;
      idle_cv_->notify_all();
      cv_->wait(lock, [&] { return !jobs_.empty(); });
      --idle_;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();  // CompilePool's runner: catches everything its tasks throw
      job = nullptr;
      lock.lock();
      if (!exit_wait_after_nvrtc_ && detail::nvrtc_loaded()) register_exit_wait();  // see instance()
    }
  }

  const std::size_t capacity_;
  // Pointers, so that a forked child can take new ones (pthread_atfork above); never freed.
  std::mutex* mu_ = new std::mutex();
  std::condition_variable* cv_ = new std::condition_variable();
  std::condition_variable* idle_cv_ = new std::condition_variable();  // wait_idle's
  std::deque<std::function<void()>> jobs_;
  std::size_t threads_ = 0;  // started (each serves until the process ends)
  std::size_t idle_ = 0;     // waiting for a job
  bool exit_wait_after_nvrtc_ = false;  // the exit wait is registered after NVRTC's load (see instance())
  std::vector<const void*> retired_;    // a forked child's abandoned lock and condition variables
};

}  // namespace

std::size_t compile_thread_capacity() { return CompileExecutor::instance().capacity(); }

void post_compile_job(std::function<void()> job) { CompileExecutor::instance().post(std::move(job)); }

}  // namespace detail
}  // namespace swz
