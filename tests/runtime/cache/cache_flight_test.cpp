// tests/runtime: single flight across processes and its bounds (issue 10 item 12): two processes
// missing one key compile it once; a waiter that waits too long compiles anyway and never fails.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "swzjit/cache.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz_cache_test;

namespace {

/// Appends one line to `log` (O_APPEND: lines from several processes never interleave).
void note_build(const std::string& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) return;
  const char line[] = "built\n";
  (void)!::write(fd, line, sizeof line - 1);
  ::close(fd);
}

int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

/// Forks a child that runs get_or_build(make_key(7)) with a builder taking `build_ms`.
pid_t start_builder(const std::string& dir, const std::string& log, int build_ms, int wait_ms, int delay_ms) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  alarm(60);  // a deadlock fails the test instead of hanging it
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  int rc = 0;
  try {
    WarningLog w;
    swz::CacheSettings s = settings_for(dir, w);
    s.build_wait_ms = wait_ms;
    swz::Cache c(s);
    const swz::KernelEntry e = c.get_or_build(make_key(7), [&] {
      note_build(log);
      std::this_thread::sleep_for(std::chrono::milliseconds(build_ms));
      return make_entry(7);
    });
    rc = e == make_entry(7) ? 0 : 2;
    if (rc == 0 && c.counters().wait_timeouts > 0) rc = 10;  // tells the parent it stopped waiting
  } catch (...) {
    rc = 3;
  }
  _exit(rc);
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("cache: two processes missing the same key compile it once") {
  TempDir dir;
  const std::string log = dir / "builds.txt";
  const pid_t a = start_builder(dir / "cache", log, 1500, 60000, 0);
  const pid_t b = start_builder(dir / "cache", log, 1500, 60000, 300);  // misses while a compiles
  CHECK(wait_for(a) == 0);
  CHECK(wait_for(b) == 0);
  CHECK(count_lines(log) == 1);
}

TEST_CASE("cache: a process that waits too long for another's build compiles anyway") {
  TempDir dir;
  const std::string log = dir / "builds.txt";
  const pid_t a = start_builder(dir / "cache", log, 3000, 60000, 0);
  const pid_t b = start_builder(dir / "cache", log, 10, 200, 300);
  const auto start = std::chrono::steady_clock::now();
  CHECK(wait_for(b) == 10);  // succeeded, after giving up the wait
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2800));  // before a finished
  CHECK(wait_for(a) == 0);
  CHECK(count_lines(log) == 2);
}

TEST_CASE("cache: a build killed while holding the lock does not block the next process") {
  TempDir dir;
  const std::string log = dir / "builds.txt";
  const pid_t a = start_builder(dir / "cache", log, 30000, 60000, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(a, SIGKILL);  // the kernel drops its lock with it
  CHECK(wait_for(a) == 128 + SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  const pid_t b = start_builder(dir / "cache", log, 10, 60000, 0);
  CHECK(wait_for(b) == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("cache: a thread waiting on another thread's build gives up after build_wait_ms") {
  TempDir dir;
  WarningLog log;
  swz::CacheSettings s = settings_for(dir.path(), log);
  s.build_wait_ms = 100;
  swz::Cache c(s);
  std::mutex mu;
  std::condition_variable cv;
  bool follower_done = false;
  std::atomic<int> builds{0};
  std::atomic<bool> leader_started{false};
  std::thread leader([&] {
    c.get_or_build(make_key(3), [&] {
      ++builds;
      leader_started = true;
      std::unique_lock<std::mutex> lock(mu);
      // Bounded so that old code (a follower that waits forever) fails the checks, not the run.
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return follower_done; });
      return make_entry(3);
    });
  });
  while (!leader_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const swz::KernelEntry e = c.get_or_build(make_key(3), [&] {
    ++builds;
    return make_entry(3);
  });
  bool leader_still_building = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    leader_still_building = !follower_done;
    follower_done = true;
  }
  cv.notify_all();
  leader.join();
  CHECK(e == make_entry(3));
  CHECK(leader_still_building);  // the follower returned on its own, not through the leader
  CHECK(builds == 2);
  CHECK(c.counters().wait_timeouts == 1);
  CHECK(c.load(make_key(3)).has_value());
}
