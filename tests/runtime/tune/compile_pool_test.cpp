// tests/runtime: the autotuner's compile pool (runtime/tune/compile_pool.hpp): every outcome arrives exactly
// once whatever the thread and task counts (more threads than tasks, no tasks, instant tasks, many rounds,
// pools at once), throwing tasks become outcomes, stop() ends early, a stuck task is reported, never waited
// on forever, and every pool runs on the same few process threads.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/tune/compile_pool.hpp"
#include "swzjit/error.hpp"

using swz::detail::CompileOutcome;
using swz::detail::CompilePool;

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define SWZ_TEST_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SWZ_TEST_LSAN)
#define SWZ_TEST_LSAN 1
#endif

namespace {

using Clock = std::chrono::steady_clock;

// The forked child's wait status, waiting at most 30 s from `t0`; a child still running then is killed and
// the case fails with `why`.
int wait_child(pid_t pid, Clock::time_point t0, const char* why) {
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() - t0 < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL(why);
  }
  return status;
}

// Set in a forked child that exits with a compile thread still running on purpose: LeakSanitizer's exit
// check cannot stop such a thread ("Running thread ... was not suspended"), then reports what the thread
// holds (its dlerror buffer) as leaked and aborts, or hangs. The child skips that check; the parent's own
// leak check still runs.
std::atomic<int> skip_leak_check_at_exit{0};

}  // namespace

#ifdef SWZ_TEST_LSAN
// LeakSanitizer's hook: nonzero skips its end-of-process check.
extern "C" int __lsan_is_turned_off() { return skip_leak_check_at_exit.load(); }
#endif

namespace {

std::vector<CompilePool::Task> instant_tasks(int n) {
  std::vector<CompilePool::Task> tasks;
  for (int i = 0; i < n; ++i)
    tasks.push_back(CompilePool::Task{i, [i] {
                                        CompileOutcome o;
                                        o.index = i;
                                        o.ok = true;
                                        return o;
                                      }});
  return tasks;
}

// Every outcome of a pool, checking each index arrives once.
std::set<int> drain(CompilePool& pool, double timeout_s = 10) {
  std::set<int> seen;
  CompileOutcome o;
  while (pool.next(&o, timeout_s)) {
    CHECK_MESSAGE(seen.insert(o.index).second, "index " << o.index << " arrived twice");
  }
  return seen;
}

}  // namespace

TEST_CASE("compile pool: more threads than instant tasks, 10,000 rounds, every outcome exactly once") {
  // The old pool counted its running threads down while its constructor still counted them up, so
  // threads that finished instant tasks at once kept later ones from starting and next() waited forever.
  const auto t0 = Clock::now();
  long long outcomes = 0;
  for (int round = 0; round < 10000; ++round) {
    const int tasks = round % 4;          // 0..3 tasks
    const int threads = tasks + 1 + round % 15;  // always more threads than tasks
    CompilePool pool(instant_tasks(tasks), threads);
    // Capped at the task count and at the process's compile threads.
    CHECK(pool.threads() == std::min<std::size_t>(static_cast<std::size_t>(tasks), swz::detail::compile_thread_capacity()));
    const std::set<int> seen = drain(pool);
    if (static_cast<int>(seen.size()) != tasks) {
      FAIL_CHECK("round " << round << ": " << seen.size() << " of " << tasks << " outcomes");
      break;
    }
    outcomes += static_cast<long long>(seen.size());
  }
  CHECK(outcomes == 15000);
  CHECK(Clock::now() - t0 < std::chrono::seconds(120));
}

TEST_CASE("compile pool: no tasks, one thread, many threads") {
  {
    CompilePool pool({}, 8);
    CHECK(pool.threads() == 0);
    CompileOutcome o;
    CHECK_FALSE(pool.next(&o, 0.0));  // nothing to wait for: false at once, no timeout
  }
  for (int threads : {0, 1, 3, 64}) {
    CAPTURE(threads);
    CompilePool pool(instant_tasks(50), threads);
    const std::set<int> seen = drain(pool);
    CHECK(seen.size() == 50);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == 49);
  }
  // Destroyed without taking anything: joins its threads, no outcome is needed.
  { CompilePool pool(instant_tasks(20), 4); }
}

TEST_CASE("compile pool: a throwing task is an outcome with its index, not a lost thread") {
  std::vector<CompilePool::Task> tasks = instant_tasks(6);
  tasks[2].run = []() -> CompileOutcome { throw std::runtime_error("nvrtc exploded"); };
  tasks[4].run = []() -> CompileOutcome { throw 42; };
  CompilePool pool(std::move(tasks), 3);
  std::set<int> failed, ok;
  CompileOutcome o;
  while (pool.next(&o, 10)) {
    if (o.ok) {
      ok.insert(o.index);
    } else {
      CHECK(o.status == "compile-failed");
      if (o.index == 2) CHECK(o.reason == "nvrtc exploded");
      if (o.index == 4) CHECK(o.reason.find("not a std::exception") != std::string::npos);
      failed.insert(o.index);
    }
  }
  CHECK(failed == std::set<int>{2, 4});
  CHECK(ok == std::set<int>{0, 1, 3, 5});
}

TEST_CASE("compile pool: stop() mid-way starts nothing new and still ends next()") {
  std::atomic<int> started{0};
  std::vector<CompilePool::Task> tasks;
  for (int i = 0; i < 200; ++i)
    tasks.push_back(CompilePool::Task{i, [i, &started] {
                                        ++started;
                                        std::this_thread::sleep_for(std::chrono::milliseconds(2));
                                        CompileOutcome o;
                                        o.index = i;
                                        o.ok = true;
                                        return o;
                                      }});
  const auto t0 = Clock::now();
  CompilePool pool(std::move(tasks), 4);
  CompileOutcome o;
  std::set<int> seen;
  for (int i = 0; i < 5; ++i) {
    REQUIRE(pool.next(&o, 10));
    seen.insert(o.index);
  }
  pool.stop();
  while (pool.next(&o, 10)) seen.insert(o.index);  // the ones already running
  CHECK(static_cast<int>(seen.size()) == started.load());
  CHECK(started.load() < 200);
  CHECK(Clock::now() - t0 < std::chrono::seconds(10));
  pool.stop();  // twice is harmless
  CHECK_FALSE(pool.next(&o, 0.0));
}

TEST_CASE("compile pool: a stuck task makes next() throw an error naming the wait, within its bound") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<CompilePool::Task> tasks = instant_tasks(2);
  tasks.push_back(CompilePool::Task{2, [&] {
                                      std::unique_lock<std::mutex> lock(mu);
                                      cv.wait(lock, [&] { return release; });  // released below
                                      CompileOutcome o;
                                      o.index = 2;
                                      return o;
                                    }});
  CompilePool pool(std::move(tasks), 3);
  CompileOutcome o;
  REQUIRE(pool.next(&o, 10));
  REQUIRE(pool.next(&o, 10));
  const auto t0 = Clock::now();
  try {
    pool.next(&o, 0.2);
    FAIL("next() should have timed out");
  } catch (const swz::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("timed out") != std::string::npos);
    CHECK(what.find("compile") != std::string::npos);
    CHECK(what.find("2 of 3") != std::string::npos);
  }
  CHECK(Clock::now() - t0 < std::chrono::seconds(5));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  REQUIRE(pool.next(&o, 10));  // the late outcome still arrives
  CHECK(o.index == 2);
  CHECK_FALSE(pool.next(&o, 10));
}

TEST_CASE("compile pool: pools of many tunes at once share the process's compile threads") {
  // Each new compile thread costs a malloc arena that keeps what NVRTC freed (compile_pool.hpp): however
  // many pools run, at once or one after another, their tasks run on at most compile_thread_capacity()
  // distinct threads.
  std::mutex ids_mu;
  std::set<std::thread::id> ids;
  const auto recording_tasks = [&](int n) {
    std::vector<CompilePool::Task> tasks;
    for (int i = 0; i < n; ++i)
      tasks.push_back(CompilePool::Task{i, [i, &ids_mu, &ids] {
                                          {
                                            std::lock_guard<std::mutex> lock(ids_mu);
                                            ids.insert(std::this_thread::get_id());
                                          }
                                          std::this_thread::sleep_for(std::chrono::microseconds(200));
                                          CompileOutcome o;
                                          o.index = i;
                                          o.ok = true;
                                          return o;
                                        }});
    return tasks;
  };
  std::atomic<int> complete{0};
  std::vector<std::thread> tuners;
  for (int t = 0; t < 8; ++t)
    tuners.emplace_back([&] {
      for (int round = 0; round < 25; ++round) {
        CompilePool pool(recording_tasks(12), 64);
        if (drain(pool, 30).size() == 12) ++complete;
      }
    });
  for (auto& t : tuners) t.join();
  CHECK(complete.load() == 200);
  CHECK(ids.size() <= swz::detail::compile_thread_capacity());
  CHECK(ids.count(std::this_thread::get_id()) == 0);
}

TEST_CASE("compile pool: a pool queued behind busy compile threads is destroyed at once") {
  // Every compile thread blocked by one pool's tasks; a second pool's runners wait in the queue. Destroying
  // the second pool waits for none of them (none of its tasks runs), and they end without running a task
  // once the threads are free.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> blocked{0};
  const std::size_t cap = swz::detail::compile_thread_capacity();
  std::vector<CompilePool::Task> blockers;
  for (std::size_t i = 0; i < cap; ++i)
    blockers.push_back(CompilePool::Task{static_cast<int>(i), [&, i] {
                                           ++blocked;
                                           std::unique_lock<std::mutex> lock(mu);
                                           cv.wait(lock, [&] { return release; });
                                           CompileOutcome o;
                                           o.index = static_cast<int>(i);
                                           return o;
                                         }});
  CompilePool busy(std::move(blockers), static_cast<int>(cap));
  const auto t0 = Clock::now();
  while (blocked.load() < static_cast<int>(cap) && Clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(blocked.load() == static_cast<int>(cap));
  std::atomic<int> ran{0};
  {
    std::vector<CompilePool::Task> tasks;
    for (int i = 0; i < 4; ++i)
      tasks.push_back(CompilePool::Task{i, [i, &ran] {
                                          ++ran;
                                          CompileOutcome o;
                                          o.index = i;
                                          return o;
                                        }});
    const auto t1 = Clock::now();
    { CompilePool queued(std::move(tasks), 4); }
    CHECK(Clock::now() - t1 < std::chrono::seconds(2));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  CHECK(drain(busy).size() == cap);
  // A later pool still gets every outcome: the stopped runners freed their threads.
  CompilePool after(instant_tasks(5), 5);
  CHECK(drain(after).size() == 5);
  CHECK(ran.load() == 0);
}

TEST_CASE("compile pool: a child forked after the compile threads started gets threads of its own") {
  // The parent's compile threads do not exist in a child; the child's first pool starts new ones instead of
  // waiting for threads it does not have (and the queue's lock is not left held by a thread that is gone).
  {
    CompilePool warm(instant_tasks(4), 4);
    REQUIRE(drain(warm).size() == 4);
  }
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 1;
    try {
      CompilePool pool(instant_tasks(6), 3);
      CompileOutcome o;
      int n = 0;
      while (pool.next(&o, 10)) ++n;
      code = n == 6 ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    _exit(code);
  }
  const int status = wait_child(pid, Clock::now(), "the forked child's compile pool did not finish within 30 s");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("compile pool: exit() waits (bounded) for a compile thread's job before static destructors run") {
  // A child starts a 300 ms job on a compile thread and calls exit() at once: the job still finishes (it
  // writes to a pipe as its last act), so a process never tears down NVRTC or its sanitizer checks under a
  // running compile. A job longer than the bound (2 s) does not hold exit up beyond it.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    const int w = fds[1];
    swz::detail::post_compile_job([w] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const char done = 'x';
      (void)!write(w, &done, 1);
    });
    swz::detail::post_compile_job([] { std::this_thread::sleep_for(std::chrono::seconds(60)); });
    skip_leak_check_at_exit = 1;  // the 60 s job's thread is still running at exit
    std::exit(0);
  }
  close(fds[1]);
  const auto t0 = Clock::now();
  char got = 0;
  const ssize_t n = read(fds[0], &got, 1);
  close(fds[0]);
  // Bounded: a child stuck in exit fails this case instead of holding up the suite.
  const int status = wait_child(pid, t0, "the forked child did not exit within 30 s");
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(n == 1);
  CHECK(got == 'x');
  CHECK(WIFEXITED(status));
  CHECK(waited < 10);  // the 60 s job was left behind after the 2 s bound
}
