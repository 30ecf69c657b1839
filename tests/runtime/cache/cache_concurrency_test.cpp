// tests/runtime: many threads and many processes on one cache (runtime/cache/cache.cpp): one build per
// key per process, every caller served, identical bytes, one row per key, no lost tuning updates.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::make_entry;
using swz_cache_test::make_key;
using swz_cache_test::settings_for;
using swz_cache_test::sql_int;
using swz_cache_test::TempDir;
using swz_cache_test::WarningLog;

namespace {

/// Spins until `done()` or a generous timeout; returns whether done() became true.
template <class F>
bool wait_for(F done, int timeout_ms = 10000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// Forks `n` processes that start together (released when the parent closes its end of a pipe), runs
/// body(i) in process i, which exits with what body returns (25 if it throws); checks each exited 0.
void run_processes_together(int n, const std::function<int(int)>& body) {
  int go[2];
  REQUIRE(pipe(go) == 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < n; ++p) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(go[1]);
      char b;
      if (read(go[0], &b, 1) != 0) _exit(20);  // released when the parent closes its end
      int rc = 25;
      try {
        rc = body(p);
      } catch (...) {
      }
      _exit(rc);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);  // every child starts now
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

}  // namespace

TEST_CASE("cache: concurrent requests for one key wait for the one build") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  constexpr int kThreads = 16;
  std::atomic<int> calls{0};
  std::vector<swz::KernelEntry> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      got[t] = c.get_or_build(make_key(1), [&] {
        ++calls;
        // Hold the build until every other thread has joined it: deterministic single flight.
        wait_for([&] { return c.counters().joined == kThreads - 1; });
        return make_entry(1);
      });
    });
  for (auto& th : threads) th.join();
  CHECK(calls == 1);
  CHECK(c.counters().builds == 1);
  CHECK(c.counters().joined == kThreads - 1);
  for (const auto& e : got) CHECK(e == make_entry(1));
  CHECK(c.stats().kernel_entries == 1);
}

TEST_CASE("cache: a failed build reaches every waiter and is not cached") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  constexpr int kThreads = 8;
  std::atomic<int> calls{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      try {
        c.get_or_build(make_key(2), [&]() -> swz::KernelEntry {
          ++calls;
          wait_for([&] { return c.counters().joined == kThreads - 1; });
          throw swz::Error::compile("nvrtc failed", "error: expected ';'", {"-O3"}, "src", "k.cu");
        });
      } catch (const swz::Error& e) {
        if (e.kind() == swz::ErrorKind::Compile && e.compile_log() == "error: expected ';'") ++errors;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(calls == 1);
  CHECK(errors == kThreads);
  CHECK(c.stats().kernel_entries == 0);
  CHECK(c.get_or_build(make_key(2), [&] {
    ++calls;
    return make_entry(2);
  }) == make_entry(2));
  CHECK(calls == 2);
}

TEST_CASE("cache: many threads over many keys build each key once") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  constexpr int kThreads = 12, kKeys = 24;
  std::vector<std::atomic<int>> calls(kKeys);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int n = 0; n < kKeys; ++n) {
        const int i = (n * 7 + t * 5) % kKeys;
        const swz::KernelEntry e = c.get_or_build(make_key(i), [&] {
          ++calls[i];
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          return make_entry(i);
        });
        if (e != make_entry(i)) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  for (int i = 0; i < kKeys; ++i) CHECK(calls[i] == 1);
  CHECK(c.stats().kernel_entries == kKeys);
}

TEST_CASE("cache: eight processes with many threads fill the same keys at once") {
  TempDir dir;  // no database yet: the processes also race to create it
  constexpr int kProcs = 8, kThreads = 4, kKeys = 12;
  constexpr std::size_t kSize = 24 * 1024;
  run_processes_together(kProcs, [&](int p) {
    int rc = 0;
    WarningLog log;
    swz::Cache c(settings_for(dir.path(), log));
    std::vector<std::atomic<int>> calls(kKeys);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int n = 0; n < kKeys; ++n) {
          const int i = (n + t * 3 + p) % kKeys;
          if (c.get_or_build(make_key(i), [&] {
                ++calls[i];
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                return make_entry(i, kSize);
              }) != make_entry(i, kSize))
            ++wrong;
        }
        // tuning results from every process land without losing each other's rows
        swz::TuningProblemKey prob;
        prob.operation = "transpose";
        prob.problem = "shared";
        c.store_candidate(prob, swz::CandidateResult{"p" + std::to_string(p) + "t" + std::to_string(t), "ok",
                                                     "", 1.0 + p, 1.0, 1.0, 5});
      });
    for (auto& th : threads) th.join();
    if (wrong != 0) rc = 21;
    for (int i = 0; i < kKeys; ++i)
      if (calls[i] > 1) rc = 22;  // one build per key per process
    if (c.stats().mode != "disk") rc = 23;
    if (log.size() != 0) rc = 24;
    return rc;
  });
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  const std::string db = c.stats().database;
  CHECK(c.stats().kernel_entries == kKeys);
  for (int i = 0; i < kKeys; ++i) {
    CHECK(sql_int(db, "SELECT count(*) FROM kernels WHERE key = '" + make_key(i).hash() + "'") == 1);
    const auto e = c.load(make_key(i));
    REQUIRE(e.has_value());
    CHECK(*e == make_entry(i, kSize));
  }
  swz::TuningProblemKey prob;
  prob.operation = "transpose";
  prob.problem = "shared";
  CHECK(c.load_candidates(prob).size() == kProcs * kThreads);
  const swz::VerifyReport r = c.verify();
  CHECK(r.database_ok);
  CHECK(r.bad() == 0);
  CHECK(log.size() == 0);
}

TEST_CASE("cache: processes racing to create a new cache never take each other's schema for damage") {
  // A process that found no meta table and then waited for the write lock used to find the tables
  // another process had just created and move the new database aside as "not a swzjit cache".
  constexpr int kRounds = 20, kProcs = 12;
  for (int round = 0; round < kRounds; ++round) {
    TempDir dir;
    run_processes_together(kProcs, [&](int) {
      WarningLog log;
      swz::Cache c(settings_for(dir.path(), log));
      if (c.stats().mode != "disk") return 21;
      return log.size() != 0 ? 22 : 0;
    });
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      CHECK_MESSAGE(entry.path().filename().string().find(".bad-") == std::string::npos, entry.path().string());
  }
}
