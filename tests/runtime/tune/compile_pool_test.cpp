// tests/runtime: the autotuner's compile pool (runtime/compile_pool.hpp): every outcome arrives exactly once
// whatever the thread and task counts (more threads than tasks, no tasks, instant tasks, many rounds),
// throwing tasks become outcomes, stop() ends early, and a stuck task is reported, never waited on forever.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
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

namespace {

using Clock = std::chrono::steady_clock;

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
    CHECK(pool.threads() == static_cast<std::size_t>(tasks));  // capped at the task count
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
