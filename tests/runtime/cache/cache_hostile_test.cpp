// tests/runtime: the cache against hostile and broken files (issue 10 items 3, 4, 9, 13): export
// never replaces what is not a regular file, a recursive view never hangs, a broken schema is rebuilt.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/cache/cache_sqlite.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/tools/cli_support.hpp"

using namespace swz_cache_test;

namespace {

// A "kernels" that is a view recursing without end: any query of it runs forever.
const char kRecursiveKernels[] =
    "DROP TABLE kernels;"
    "CREATE VIEW kernels(key, format_version, templates_hash, name_expression, nvrtc_version, options, arch, image,"
    "  is_ptx, lowered_name, threads, dynamic_smem, registers, spill_bytes, bytes, checksum, created_us,"
    "  last_use_us) AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)"
    "  SELECT x, 1, '', '', '', x'', '', x'', 0, '', 0, 0, 0, 0, 0, '', 0, 0 FROM r WHERE x < 0;";

/// Runs `body` in a child killed by SIGALRM after `seconds`: a hang fails the test instead of the run.
int run_bounded(int seconds, const std::function<int()>& body) {
  return run_in_child([&] {
    alarm(static_cast<unsigned>(seconds));
    return body();
  });
}

bool is_fifo(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

bool is_symlink(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("cache export: a FIFO, a symbolic link or a device at the path is refused, not replaced") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir / "cache", log));
  c.store(make_key(0), make_entry(0));

  const std::string fifo = dir / "pipe";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_AS(c.export_to(fifo), swz::Error);
  CHECK(is_fifo(fifo));

  std::ofstream(dir / "precious") << "keep me";
  const std::string link = dir / "link";
  REQUIRE(symlink((dir / "precious").c_str(), link.c_str()) == 0);
  CHECK_THROWS_AS(c.export_to(link), swz::Error);
  CHECK(is_symlink(link));
  CHECK(read_all(dir / "precious") == "keep me");

  const std::string devlink = dir / "devnull";
  REQUIRE(symlink("/dev/null", devlink.c_str()) == 0);
  CHECK_THROWS_AS(c.export_to(devlink), swz::Error);
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));

  CHECK_THROWS_AS(c.export_to(dir.path()), swz::Error);  // a directory
  CHECK_THROWS_AS(c.export_to(""), swz::Error);
  // Nothing half-written was left behind.
  for (const auto& n : files_in(dir.path())) CHECK(n.find(".tmp-") == std::string::npos);
}

TEST_CASE("cache export: asked to, it writes through a symbolic link and into a FIFO, never blocking") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir / "cache", log));
  c.store(make_key(1), make_entry(1));
  swz::TransferOptions force;
  force.allow_special_target = true;

  std::ofstream(dir / "old.swzdb") << "old";
  const std::string link = dir / "link.swzdb";
  REQUIRE(symlink((dir / "old.swzdb").c_str(), link.c_str()) == 0);
  c.export_to(link, force);
  CHECK(is_symlink(link));  // the link stays; the file it names is the new export
  CHECK(read_all(dir / "old.swzdb").compare(0, 15, "SQLite format 3") == 0);
  swz::Cache other(settings_for(dir / "other", log));
  CHECK(other.import_from(link).kernels_added == 1);

  const std::string fifo = dir / "pipe";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // No reader: an error at once, not an endless open().
  const int rc = run_bounded(20, [&] {
    setenv("TMPDIR", dir.path().c_str(), 1);  // the stream's temporary file stays in the test directory
    try {
      swz::Cache child(settings_for(dir / "cache", log));
      child.export_to(fifo, force);
      return 1;
    } catch (const swz::Error& e) {
      return std::string(e.what()).find("no process is reading") != std::string::npos ? 0 : 2;
    }
  });
  CHECK(rc == 0);
  // With a reader, the bytes arrive.
  std::string received;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[4096];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;)
      received.append(buf, static_cast<std::size_t>(n));
    if (fd >= 0) ::close(fd);
  });
  const int rc2 = run_bounded(20, [&] {
    setenv("TMPDIR", dir.path().c_str(), 1);
    for (int tries = 0; tries < 200; ++tries) {  // until the reader has opened its end
      try {
        swz::Cache child(settings_for(dir / "cache", log));
        child.export_to(fifo, force);
        return 0;
      } catch (const swz::Error&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return 3;
  });
  reader.join();
  CHECK(rc2 == 0);
  CHECK(received.compare(0, 15, "SQLite format 3") == 0);
  CHECK(is_fifo(fifo));
}

TEST_CASE("cache: a recursive view posing as the kernels table neither hangs nor survives") {
  TempDir dir;
  WarningLog log;
  const std::string cache_dir = dir / "cache";
  std::string db;
  {
    swz::Cache c(settings_for(cache_dir, log));
    c.store(make_key(0), make_entry(0));
    db = c.stats().database;
  }
  sql_exec(db, kRecursiveKernels);
  const int rc = run_bounded(30, [&] {
    WarningLog child_log;
    swz::Cache c(settings_for(cache_dir, child_log));
    if (c.stats().mode != "disk") return 2;
    if (!c.list_kernels().empty()) return 3;
    const swz::VerifyReport r = c.verify();
    if (r.database_ok) return 4;  // it found and repaired damage: not "ok"
    c.store(make_key(1), make_entry(1));
    if (!c.load(make_key(1)) || c.counters().store_failures != 0) return 5;
    if (child_log.all().find("schema") == std::string::npos) return 6;
    return 0;
  });
  CHECK(rc == 0);
  CHECK(any_file_contains(cache_dir, ".bad-"));
}

TEST_CASE("cache import: an export whose kernels table is a recursive view is refused at once") {
  TempDir dir;
  WarningLog log;
  {
    swz::Cache c(settings_for(dir / "a", log));
    c.store(make_key(0), make_entry(0));
    c.export_to(dir / "x.swzdb");
  }
  std::filesystem::copy_file(dir / "x.swzdb", dir / "m.swzdb");
  sql_exec(dir / "x.swzdb", kRecursiveKernels);
  // The meta table too: reading the format version would never end.
  sql_exec(dir / "m.swzdb",
           "DROP TABLE meta; CREATE VIEW meta(name, value) AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL "
           "SELECT x + 1 FROM r) SELECT 'format_version', '1' FROM r WHERE x < 0;");
  for (const char* file : {"x.swzdb", "m.swzdb"}) {
    CAPTURE(file);
    const int rc = run_bounded(30, [&] {
      swz::Cache c(settings_for(dir / "b", log));
      try {
        c.import_from(dir / file);
        return 1;
      } catch (const swz::Error& e) {
        return std::string(e.what()).find("view") != std::string::npos ? 0 : 2;
      }
    });
    CHECK(rc == 0);
  }
  // The CLI too: exit 1 with a message, promptly.
  const auto r = swz_test::run_swz("cache --dir " + (dir / "c") + " import " + (dir / "x.swzdb"), "timeout 30");
  CHECK(r.code == 1);
  CHECK(r.err.find("not a swzjit cache export") != std::string::npos);
}

TEST_CASE("cache: every statement is bounded in time (the backstop behind the schema check)") {
  TempDir dir;
  swz::detail::Db db(dir / "t.db", 0x00000002 | 0x00000004 /* READWRITE | CREATE */, 200);
  const auto start = std::chrono::steady_clock::now();
  bool interrupted = false;
  try {
    db.query_int("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r");
  } catch (const swz::detail::SqliteError& e) {
    interrupted = e.is_interrupt();
  }
  CHECK(interrupted);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK(db.query_int("SELECT 41 + 1") == 42);  // the next statement gets a fresh budget
}

TEST_CASE("cache: a dropped or reduced kernels table under a valid meta row is rebuilt") {
  for (const char* damage : {"DROP TABLE kernels;", "DROP TABLE kernels; CREATE TABLE kernels(key TEXT PRIMARY KEY);",
                             "CREATE TRIGGER t AFTER INSERT ON kernels BEGIN DELETE FROM kernels; END;"}) {
    CAPTURE(damage);
    TempDir dir;
    WarningLog log;
    std::string db;
    {
      swz::Cache c(settings_for(dir.path(), log));
      c.store(make_key(0), make_entry(0));
      db = c.stats().database;
    }
    sql_exec(db, damage);
    WarningLog log2;
    swz::Cache c(settings_for(dir.path(), log2));
    CHECK(c.stats().mode == "disk");
    c.store(make_key(2), make_entry(2));
    CHECK(c.counters().store_failures == 0);
    const auto e = c.load(make_key(2));
    REQUIRE(e.has_value());
    CHECK(*e == make_entry(2));
    CHECK(sql_int(db, "SELECT count(*) FROM kernels WHERE key = '" + make_key(2).hash() + "'") == 1);
    CHECK(any_file_contains(dir.path(), ".bad-"));
    CHECK(log2.all().find("damaged schema") != std::string::npos);
    CHECK_FALSE(c.verify().database_ok);  // the repair is reported, not hidden behind "ok"
  }
}

TEST_CASE("swz cache verify exits 1 on a broken schema; export \"\" is bad usage; explain --json is JSON") {
  TempDir dir;
  WarningLog log;
  std::string db;
  {
    swz::Cache c(settings_for(dir.path(), log));
    c.store(make_key(0), make_entry(0));
    db = c.stats().database;
  }
  sql_exec(db, "DROP TABLE kernels;");
  const auto v = swz_test::run_swz("cache --dir " + dir.path() + " verify");
  CHECK(v.code == 1);
  CHECK(v.out.find("damaged schema") != std::string::npos);
  const auto v2 = swz_test::run_swz("cache --dir " + dir.path() + " verify");  // now the rebuilt one
  CHECK(v2.code == 0);

  const auto e = swz_test::run_swz("cache --dir " + dir.path() + " export ''");
  CHECK(e.code == 2);
  const auto x = swz_test::run_swz("cache --dir " + dir.path() + " explain 'f32 1x1' --json");
  CHECK(x.code == 0);
  CHECK(x.out.compare(0, 1, "{") == 0);
  CHECK(x.out.find("\"found\": false") != std::string::npos);

  const std::string fifo = dir / "pipe";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const auto f = swz_test::run_swz("cache --dir " + dir.path() + " export " + fifo, "timeout 30");
  CHECK(f.code == 1);
  CHECK(f.err.find("--force-target") != std::string::npos);
  CHECK(is_fifo(fifo));
}
