// tests/runtime: the cache under a hostile environment (runtime/cache/cache_open.cpp): unwritable and
// insecure directories, an insecure database file, read-only use, a full disk, fork().
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "swzjit/cache.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::database_path;
using swz_cache_test::files_in;
using swz_cache_test::make_entry;
using swz_cache_test::make_key;
using swz_cache_test::run_in_child;
using swz_cache_test::settings_for;
using swz_cache_test::sql_int;
using swz_cache_test::TempDir;
using swz_cache_test::WarningLog;

namespace {

/// The cache works (builds once per key, then serves from memory) although nothing persists.
void expect_uncached_but_working(swz::Cache& c) {
  int calls = 0;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 3; ++i)
      CHECK(c.get_or_build(make_key(i), [&] {
        ++calls;
        return make_entry(i);
      }) == make_entry(i));
  CHECK(calls == 3);
  CHECK(c.stats().mode == "memory");
  CHECK(c.stats().database.empty());
}

}  // namespace

TEST_CASE("cache: an unusable directory degrades to memory with one warning") {
  TempDir dir;
  {
    // A path under a regular file can never be created, even by root.
    std::ofstream(dir / "file") << "x";
    WarningLog log;
    swz::Cache c(settings_for(dir / "file/swzjit", log));
    expect_uncached_but_working(c);
    CHECK(log.size() == 1);
    CHECK(log.all().find("cannot use the cache directory") != std::string::npos);
    CHECK(c.counters().store_failures == 0);  // uncached by decision, not by failure
  }
  {
    WarningLog log;
    swz::Cache c(settings_for(dir / "file", log));  // exists, not a directory
    expect_uncached_but_working(c);
    CHECK(log.size() == 1);
    CHECK(log.all().find("not a directory") != std::string::npos);
  }
  if (geteuid() == 0) {
    MESSAGE("running as root: chmod 0500 does not stop root from writing; the read-only directory sub-case "
            "is skipped (the path-under-a-file cases above cover an unusable directory)");
  } else {
    const std::string ro = dir / "readonly";
    REQUIRE(mkdir(ro.c_str(), 0700) == 0);
    REQUIRE(chmod(ro.c_str(), 0500) == 0);
    WarningLog log;
    swz::Cache c(settings_for(ro, log));
    expect_uncached_but_working(c);
    CHECK(log.size() == 1);
  }
}

TEST_CASE("cache: a group/world-writable directory is refused with one warning") {
  TempDir dir;
  const std::string shared = dir / "shared";
  REQUIRE(mkdir(shared.c_str(), 0700) == 0);
  REQUIRE(chmod(shared.c_str(), 0777) == 0);
  WarningLog log;
  {
    swz::Cache c(settings_for(shared, log));
    expect_uncached_but_working(c);
    CHECK(c.stats().degraded_reason.find("world-writable") != std::string::npos);
  }
  CHECK(log.size() == 1);
  CHECK(log.all().find("code that will run") != std::string::npos);
  CHECK(files_in(shared).empty());  // nothing was written there

  REQUIRE(chmod(shared.c_str(), 0770) == 0);  // group-writable is refused too
  WarningLog log2;
  swz::Cache c2(settings_for(shared, log2));
  CHECK(c2.stats().mode == "memory");
  CHECK(log2.size() == 1);
}

TEST_CASE("cache: the default warning goes to stderr once per process, however many caches") {
  TempDir dir;
  const std::string shared = dir / "shared";
  REQUIRE(mkdir(shared.c_str(), 0777) == 0);
  REQUIRE(chmod(shared.c_str(), 0777) == 0);
  const std::string err = dir / "stderr.txt";
  const int rc = run_in_child([&] {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) return 10;
    swz::CacheSettings s;
    s.directory = shared;
    for (int i = 0; i < 3; ++i) {
      swz::Cache c(s);
      c.get_or_build(make_key(i), [&] { return make_entry(i); });
      if (c.stats().mode != "memory") return 11;
    }
    return 0;
  });
  CHECK(rc == 0);
  std::ifstream f(err);
  std::string line;
  int warnings = 0;
  while (std::getline(f, line))
    if (line.rfind("swzjit: warning:", 0) == 0) ++warnings;
  CHECK(warnings == 1);
}

TEST_CASE("cache: an insecure database file is refused") {
  TempDir dir;
  const std::string db = database_path(dir.path());
  SUBCASE("world-writable") {
    REQUIRE(chmod(db.c_str(), 0666) == 0);
    WarningLog log;
    swz::Cache c(settings_for(dir.path(), log));
    expect_uncached_but_working(c);
    CHECK(log.size() == 1);
  }
  SUBCASE("a symbolic link") {
    const std::string elsewhere = dir / "elsewhere.db";
    REQUIRE(rename(db.c_str(), elsewhere.c_str()) == 0);
    REQUIRE(symlink(elsewhere.c_str(), db.c_str()) == 0);
    WarningLog log;
    swz::Cache c(settings_for(dir.path(), log));
    expect_uncached_but_working(c);
    CHECK(log.all().find("symbolic link") != std::string::npos);
  }
  SUBCASE("owned by another user") {
    if (geteuid() != 0) {
      MESSAGE("not root: cannot give a file to another user; sub-case skipped");
      return;
    }
    REQUIRE(chown(db.c_str(), 12345, 12345) == 0);
    WarningLog log;
    swz::Cache c(settings_for(dir.path(), log));
    expect_uncached_but_working(c);
    CHECK(log.all().find("owned by uid 12345") != std::string::npos);
  }
}

TEST_CASE("cache: a directory owned by another user is refused (root only)") {
  if (geteuid() != 0) {
    MESSAGE("not root: cannot give a directory to another user; test skipped");
    return;
  }
  TempDir dir;
  const std::string theirs = dir / "theirs";
  REQUIRE(mkdir(theirs.c_str(), 0700) == 0);
  REQUIRE(chown(theirs.c_str(), 12345, 12345) == 0);
  WarningLog log;
  swz::Cache c(settings_for(theirs, log));
  expect_uncached_but_working(c);
  CHECK(log.size() == 1);
  CHECK(log.all().find("owned by uid 12345") != std::string::npos);
}

TEST_CASE("cache: read_only serves what is stored and keeps new entries in memory") {
  TempDir dir;
  WarningLog log;
  std::string db;
  {
    swz::Cache c(settings_for(dir.path(), log));
    c.store(make_key(0), make_entry(0));
    db = c.stats().database;
  }
  swz::CacheSettings s = settings_for(dir.path(), log);
  s.read_only = true;
  swz::Cache c(s);
  CHECK(c.stats().mode == "read-only");
  const auto e = c.load(make_key(0));
  REQUIRE(e.has_value());
  CHECK(*e == make_entry(0));
  int calls = 0;
  for (int round = 0; round < 2; ++round)
    CHECK(c.get_or_build(make_key(1), [&] {
      ++calls;
      return make_entry(1);
    }) == make_entry(1));
  CHECK(calls == 1);
  CHECK(c.stats().memory_kernel_entries == 1);
  CHECK(sql_int(db, "SELECT count(*) FROM kernels") == 1);
  CHECK(log.size() == 0);  // asked for, so no warning
}

TEST_CASE("cache: a full disk (writes failing) still succeeds from memory with one warning") {
  TempDir dir;
  // In a child: a 384 KiB file-size limit makes SQLite's writes fail (EFBIG -> SQLITE_IOERR/FULL)
  // once the WAL outgrows it, exactly like a disk that filled up.
  const int rc = run_in_child([&] {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{384 * 1024, 384 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) return 10;
    WarningLog log;
    swz::Cache c(settings_for(dir.path(), log));
    if (c.stats().mode != "disk") return 11;
    int calls = 0;
    for (int round = 0; round < 2; ++round)
      for (int i = 0; i < 40; ++i) {
        const swz::KernelEntry e = c.get_or_build(make_key(i), [&] {
          ++calls;
          return make_entry(i, 32 * 1024);
        });
        if (e != make_entry(i, 32 * 1024)) return 12;
      }
    if (calls != 40) return 13;                          // nothing built twice
    if (c.counters().store_failures == 0) return 14;     // the limit did bite
    if (log.size() != 1) return 15;                      // one warning however many failures
    if (c.stats().memory_kernel_entries == 0) return 16;
    return 0;
  });
  CHECK(rc == 0);
  // What did reach the disk is intact.
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  const swz::VerifyReport r = c.verify();
  CHECK(r.database_ok);
  CHECK(r.bad() == 0);
  for (int i = 0; i < 40; ++i) {
    const auto e = c.load(make_key(i));
    if (e) CHECK(*e == make_entry(i, 32 * 1024));
  }
}

TEST_CASE("cache: a Cache used across fork() reopens its own connection in the child") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  c.store(make_key(0), make_entry(0));
  const int rc = run_in_child([&] {
    const auto e = c.load(make_key(0));
    if (!e || *e != make_entry(0)) return 10;
    c.store(make_key(1), make_entry(1));
    return 0;
  });
  CHECK(rc == 0);
  const auto from_child = c.load(make_key(1));
  REQUIRE(from_child.has_value());
  CHECK(*from_child == make_entry(1));
  c.store(make_key(2), make_entry(2));
  CHECK(c.verify().bad() == 0);
  CHECK(c.stats().kernel_entries == 3);
  CHECK(log.size() == 0);
}
