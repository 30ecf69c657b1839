// runtime (internal): the autotuner's compile stage (runtime/autotune.cpp): a fixed number of threads run
// compile tasks in order while the tuning thread takes each outcome as it finishes and benchmarks it.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
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

// Runs tasks in order on a few threads; the tuning thread takes outcomes as they finish.
//
// Every counter lives under one mutex: a task is claimed (claimed_) and its outcome queued (done_) under
// it, and next() hands out exactly `expected_` outcomes: every task, or after stop() the ones already
// claimed. The thread count is fixed before the first thread starts and nothing the threads do changes
// it, so a pool never waits for an outcome no thread will produce.
class CompilePool {
 public:
  using Task = CompileTask;

  CompilePool(std::vector<Task> tasks, int threads) : tasks_(std::move(tasks)), expected_(tasks_.size()) {
    const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, threads)), tasks_.size());
    threads_.reserve(n);
    try {
      for (std::size_t i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
    } catch (...) {  // std::system_error: fewer threads than asked still drain every task
      if (threads_.empty()) {
        stop();
        throw;
      }
    }
  }
  ~CompilePool() {
    // NOTE: a running task cannot be cancelled (an NVRTC compile); the tasks' own waits are bounded.
    stop();
    for (auto& t : threads_) t.join();
  }
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// The next finished task, waiting at most `timeout_s` seconds for one; false once every outcome was
  /// taken (after stop(): every outcome of a task that had started).
  /// @throws Error(Internal) naming the wait when no task finishes within `timeout_s`.
  bool next(CompileOutcome* out, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto ready = [&] { return !done_.empty() || taken_ == expected_; };
    const auto limit = std::chrono::duration<double>(std::max(0.0, timeout_s));
    if (!cv_.wait_for(lock, limit, ready)) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.0f", timeout_s);
      throw Error(ErrorKind::Internal,
                  "autotune: timed out after " + std::string(secs) + " s waiting for a compile to finish (" +
                      std::to_string(taken_) + " of " + std::to_string(expected_) + " compiles done, " +
                      std::to_string(threads_.size()) + " compile threads); a compile is stuck: retry, or raise "
                      "TuneOptions::compile_timeout_s for very large kernels");
    }
    if (done_.empty()) return false;
    *out = std::move(done_.front());
    done_.pop_front();
    ++taken_;
    return true;
  }

  /// No task starts after this; running ones finish and their outcomes can still be taken.
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    expected_ = claimed_;
    cv_.notify_all();
  }

  /// Threads the pool runs (at most the task count; 0 without tasks).
  std::size_t threads() const noexcept { return threads_.size(); }

 private:
  void run() {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopped_ || claimed_ >= tasks_.size()) return;
        i = claimed_++;
      }
      CompileOutcome o;
      try {
        o = tasks_[i].run();
      } catch (const std::exception& e) {  // tasks catch swz::Error themselves; anything else lands here
        o = failed(tasks_[i].index, e.what());
      } catch (...) {
        o = failed(tasks_[i].index, "a compile task threw something that is not a std::exception");
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(o));
      cv_.notify_all();
    }
  }

  static CompileOutcome failed(int index, const std::string& why) {
    CompileOutcome o;
    o.index = index;
    o.status = "compile-failed";
    o.reason = why;
    return o;
  }

  const std::vector<Task> tasks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<CompileOutcome> done_;  // finished, not yet taken
  std::size_t claimed_ = 0;          // tasks started (the next one to start)
  std::size_t taken_ = 0;            // outcomes next() returned
  std::size_t expected_;             // outcomes next() will return in all
  bool stopped_ = false;
  std::vector<std::thread> threads_;  // last: started after every member above is initialized
};

}  // namespace detail
}  // namespace swz
