// tests/runtime: read-only caches (issue 10 item 8): set by CacheSettings, EngineOptions, the
// environment or `--read-only`, or found (a directory this user may only read), and served from.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "swzjit/cache.hpp"
#include "swzjit/engine.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/tools/cli_support.hpp"

using namespace swz_cache_test;

namespace {

constexpr uid_t kNobody = 65534;

/// A cache in `dir` holding make_entry(0) under make_key(0); returns the database path.
std::string fill(const std::string& dir) {
  WarningLog log;
  swz::Cache c(settings_for(dir, log));
  c.store(make_key(0), make_entry(0));
  return c.stats().database;
}

}  // namespace

TEST_CASE("cache: SWZJIT_CACHE_READ_ONLY=1 and EngineOptions set read-only") {
  TempDir dir;
  const std::string db = fill(dir.path());
  const int rc = run_in_child([] {
    setenv("SWZJIT_CACHE_READ_ONLY", "1", 1);
    return swz::CacheSettings::from_environment().read_only ? 0 : 1;
  });
  CHECK(rc == 0);
  CHECK_FALSE(swz::CacheSettings::from_environment().read_only);  // this process has no such variable

  swz::EngineOptions eo;
  eo.cache_dir = dir.path();
  eo.cache_read_only = true;
  swz::Engine engine(eo);
  CHECK(engine.cache().stats().mode == "read-only");
  CHECK(engine.cache().load(make_key(0)).has_value());

  // The CLI: the variable and --read-only; a read-only clear changes nothing and says so.
  const auto s = swz_test::run_swz("cache --dir " + dir.path() + " stats --json", "SWZJIT_CACHE_READ_ONLY=1");
  CHECK(s.code == 0);
  CHECK(s.out.find("\"mode\": \"read-only\"") != std::string::npos);
  const auto c = swz_test::run_swz("cache --read-only --dir " + dir.path() + " clear");
  CHECK(c.code == 1);
  CHECK(c.err.find("read-only") != std::string::npos);
  CHECK(sql_int(db, "SELECT count(*) FROM kernels") == 1);
}

TEST_CASE("cache: verify of a read-only cache says what it could not fix; of an unusable one, not ok") {
  TempDir dir;
  const std::string db = fill(dir.path());
  flip_image_bit(db, make_key(0).hash(), 10);
  WarningLog log;
  swz::CacheSettings s = settings_for(dir.path(), log);
  s.read_only = true;
  swz::Cache c(s);
  const swz::VerifyReport r = c.verify();
  CHECK(r.kernels_bad == 1);
  CHECK(r.read_only);
  REQUIRE(r.not_checked.size() == 1);
  CHECK(r.not_checked[0].find("read-only") != std::string::npos);
  CHECK(sql_int(db, "SELECT count(*) FROM kernels") == 1);  // left in place
  CHECK_FALSE(c.load(make_key(0)).has_value());             // and never served

  const auto v = swz_test::run_swz("cache --read-only --dir " + dir.path() + " verify");
  CHECK(v.code == 1);
  CHECK(v.out.find("not checked") != std::string::npos);

  // A directory that was given but cannot be used: verify must not say "ok".
  WarningLog log2;
  swz::Cache bad(settings_for(dir / "swzjit-v1.db/sub", log2));  // under a regular file
  const swz::VerifyReport r2 = bad.verify();
  CHECK_FALSE(r2.database_ok);
  CHECK_FALSE(r2.not_checked.empty());
}

TEST_CASE("cache: a directory and database this user may only read are found and used read-only") {
  TempDir dir;
  const std::string cache_dir = dir / "cache";
  REQUIRE(mkdir(cache_dir.c_str(), 0700) == 0);
  const std::string db = fill(cache_dir);
  const bool root = geteuid() == 0;
  if (root) {
    // NOTE: root ignores permission bits, so the check would prove nothing; a child that becomes
    // an ordinary user (nobody) meets the real EACCES paths of access() and SQLite.
    MESSAGE("running as root: the permission-based read-only case runs in a child as uid 65534 (nobody)");
    REQUIRE(chmod(dir.path().c_str(), 0711) == 0);
    REQUIRE(chown(cache_dir.c_str(), kNobody, kNobody) == 0);
    REQUIRE(chown(db.c_str(), kNobody, kNobody) == 0);
  }
  REQUIRE(chmod(db.c_str(), 0400) == 0);
  REQUIRE(chmod(cache_dir.c_str(), 0500) == 0);
  const auto before = files_in(cache_dir);
  const int rc = run_in_child([&] {
    if (root && (setgid(kNobody) != 0 || setuid(kNobody) != 0)) return 77;
    WarningLog log;
    swz::Cache c(settings_for(cache_dir, log));
    if (c.stats().mode != "read-only") return 2;
    const auto e = c.load(make_key(0));
    if (!e || *e != make_entry(0)) return 3;  // a hit: no recompile
    int builds = 0;
    for (int i = 0; i < 2; ++i)
      c.get_or_build(make_key(1), [&] {
        ++builds;
        return make_entry(1);
      });
    if (builds != 1) return 4;  // kept in memory for this process
    if (log.size() != 1 || log.all().find("not writable") == std::string::npos) return 5;
    const swz::VerifyReport r = c.verify();
    if (!r.database_ok || r.kernels_checked != 1) return 6;
    return 0;
  });
  if (rc == 77) {
    MESSAGE("skipped: this root cannot become uid 65534 (setuid refused), so read-only permissions cannot be shown");
    return;
  }
  CHECK(rc == 0);
  CHECK(files_in(cache_dir) == before);  // nothing written there
}
