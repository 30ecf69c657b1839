// runtime (internal): the autotuner's compile stage (runtime/autotune.cpp): a few threads run compile
// tasks in order while the tuning thread takes each outcome as it finishes and benchmarks it.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "swzjit/cache.hpp"

namespace swz {
namespace detail {

/// One finished compile task.
struct CompileOutcome {
  int index = -1;  // into the tuner's work list; -1: the check kernel
  bool ok = false;
  KernelEntry entry;
  std::string status, reason;  // when !ok
};

// Runs tasks in order on a few threads; the tuning thread takes outcomes as they finish.
class CompilePool {
 public:
  using Task = std::function<CompileOutcome()>;

  CompilePool(std::vector<Task> tasks, int threads) : tasks_(std::move(tasks)) {
    const int n = std::max(1, std::min<int>(threads, static_cast<int>(tasks_.size())));
    running_ = tasks_.empty() ? 0 : n;
    for (int i = 0; i < running_; ++i) threads_.emplace_back([this] { run(); });
  }
  ~CompilePool() {
    stop();
    for (auto& t : threads_) t.join();
  }
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// The next finished task, waiting for one; false once every thread is done and all were taken.
  bool next(CompileOutcome* out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !done_.empty() || running_ == 0; });
    if (done_.empty()) return false;
    *out = std::move(done_.front());
    done_.pop_front();
    return true;
  }
  /// No task starts after this; running ones finish.
  void stop() { stop_ = true; }

 private:
  void run() {
    for (;;) {
      if (stop_) break;
      const std::size_t i = next_task_++;
      if (i >= tasks_.size()) break;
      CompileOutcome o;
      try {
        o = tasks_[i]();
      } catch (const std::exception& e) {  // tasks catch swz::Error themselves; anything else lands here
        o.ok = false;
        o.status = "compile-failed";
        o.reason = e.what();
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(o));
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    cv_.notify_all();
  }

  std::vector<Task> tasks_;
  std::atomic<std::size_t> next_task_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<CompileOutcome> done_;
  int running_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace detail
}  // namespace swz
