// runtime (internal): the autotuner's compile stage (runtime/tune/autotune.cpp): the process's compile
// threads run a tune's compile tasks in order while the tuning thread takes each outcome as it finishes and
// benchmarks it.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace detail {

/// One finished compile task.
struct CompileOutcome {
  int index = -1;  // into the tuner's work list; -1: the check kernel
  bool ok = false;
  KernelEntry entry;
  std::string status, reason;  // when !ok
  bool cached = false;  // the kernel came from the kernel cache: no NVRTC compile by this task
};

/// One compile task: `index` is the outcome's index (kept when the task throws).
struct CompileTask {
  int index = -1;
  std::function<CompileOutcome()> run;
};

/// The process's compile threads, shared by every tune of every engine: at most compile_thread_capacity()
/// threads (SWZJIT_COMPILE_THREADS, else the hardware's threads up to 8), started when first needed and kept. A compile (NVRTC) allocates hundreds of MiB on the thread
/// that runs it, and glibc gives each new thread a malloc arena whose freed pages it keeps: a fresh set of
/// threads per tune left a process that tuned 90 problems with 75 arenas and 1.4 GiB resident, 0.3 GiB
/// of it in use (H100 soak, BENCHMARKS.md "Soak: resident memory after tunes"). Reused threads touch at
/// most that many arenas, whatever the number of tunes.
std::size_t compile_thread_capacity();
/// Queues `job` for a compile thread (FIFO). @throws std::system_error when no compile thread exists and
/// none can be started (the job is then not queued).
void post_compile_job(std::function<void()> job);

// Runs tasks in order on up to `threads` of the process's compile threads at once while the tuning thread
// takes outcomes as they finish.
//
// Every counter lives under one mutex: a task is claimed (claimed) and its outcome queued (done) under
// it, and next() hands out exactly `expected` outcomes: every task, or after stop() the ones already
// claimed. The runners hold the state, not the pool: a runner still queued behind another tune's compiles
// when this pool is destroyed finds it stopped and ends without running a task. The destructor waits only
// for tasks that are running (their closures point into the tuner).
class CompilePool {
 public:
  using Task = CompileTask;

  CompilePool(std::vector<Task> tasks, int threads) : state_(std::make_shared<State>(std::move(tasks))) {
    const std::size_t n = std::min({static_cast<std::size_t>(std::max(1, threads)), state_->tasks.size(),
                                    compile_thread_capacity()});
    for (std::size_t i = 0; i < n; ++i) {
      try {
        post_compile_job([st = state_] { run(*st); });
      } catch (...) {  // std::system_error: no compile thread at all
        stop();
        throw;
      }
      ++runners_;
    }
  }
  ~CompilePool() {
    // NOTE: a running task cannot be cancelled (an NVRTC compile); the tasks' own waits are bounded.
    stop();
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->running == 0; });
  }
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// The next finished task, waiting at most `timeout_s` seconds for one; false once every outcome was
  /// taken (after stop(): every outcome of a task that had started).
  /// @throws Error(Internal) naming the wait when no task finishes within `timeout_s`.
  bool next(CompileOutcome* out, double timeout_s) {
    State& st = *state_;
    std::unique_lock<std::mutex> lock(st.mu);
    const auto ready = [&] { return !st.done.empty() || st.taken == st.expected; };
    const auto limit = std::chrono::duration<double>(std::max(0.0, timeout_s));
    if (!st.cv.wait_for(lock, limit, ready)) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.0f", timeout_s);
      throw Error(ErrorKind::Internal,
                  "autotune: timed out after " + std::string(secs) + " s waiting for a compile to finish (" +
                      std::to_string(st.taken) + " of " + std::to_string(st.expected) + " compiles done, " +
                      std::to_string(runners_) + " compile threads); a compile is stuck: retry, or raise "
                      "TuneOptions::compile_timeout_s for very large kernels");
    }
    if (st.done.empty()) return false;
    *out = std::move(st.done.front());
    st.done.pop_front();
    ++st.taken;
    return true;
  }

  /// No task starts after this; running ones finish and their outcomes can still be taken.
  void stop() {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopped = true;
    state_->expected = state_->claimed;
    state_->cv.notify_all();
  }

  /// Compile threads the pool runs on at once (at most the task count and compile_thread_capacity(); 0
  /// without tasks).
  std::size_t threads() const noexcept { return runners_; }

 private:
  struct State {
    explicit State(std::vector<Task> t) : tasks(std::move(t)), expected(tasks.size()) {}
    const std::vector<Task> tasks;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<CompileOutcome> done;  // finished, not yet taken
    std::size_t claimed = 0;          // tasks started (the next one to start)
    std::size_t taken = 0;            // outcomes next() returned
    std::size_t expected;             // outcomes next() will return in all
    std::size_t running = 0;          // tasks running now
    bool stopped = false;
  };

  static void run(State& st) {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lock(st.mu);
        if (st.stopped || st.claimed >= st.tasks.size()) return;
        i = st.claimed++;
        ++st.running;
      }
      CompileOutcome o;
      try {
        o = st.tasks[i].run();
      } catch (const std::exception& e) {  // tasks catch swz::Error themselves; anything else lands here
        o = failed(st.tasks[i].index, e.what());
      } catch (...) {
        o = failed(st.tasks[i].index, "a compile task threw something that is not a std::exception");
      }
      std::lock_guard<std::mutex> lock(st.mu);
      st.done.push_back(std::move(o));
      --st.running;
      st.cv.notify_all();
    }
  }

  static CompileOutcome failed(int index, const std::string& why) {
    CompileOutcome o;
    o.index = index;
    o.status = "compile-failed";
    o.reason = why;
    return o;
  }

  std::shared_ptr<State> state_;
  std::size_t runners_ = 0;
};

}  // namespace detail
}  // namespace swz
