// tests/runtime: a damaged cache is a miss that gets rebuilt, never a crash and never a wrong kernel
// (runtime/cache*.cpp): corrupt rows, garbage and truncated database files, a wrong format version.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "swzjit/cache.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::any_file_contains;
using swz_cache_test::database_path;
using swz_cache_test::make_entry;
using swz_cache_test::make_key;
using swz_cache_test::settings_for;
using swz_cache_test::sql_exec;
using swz_cache_test::sql_int;
using swz_cache_test::TempDir;
using swz_cache_test::WarningLog;

namespace {

/// Fills a cache in `dir` with keys 0..n-1 and returns the database path.
std::string fill(const std::string& dir, int n, std::size_t size = 4096) {
  WarningLog log;
  swz::Cache c(settings_for(dir, log));
  for (int i = 0; i < n; ++i) c.store(make_key(i), make_entry(i, size));
  return c.stats().database;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// After tampering with key `bad`: the load misses, the row is counted and deleted, get_or_build
/// rebuilds it, and the other keys are untouched.
void expect_detected_and_rebuilt(const std::string& dir, const std::string& db, const std::vector<int>& bad,
                                 int total) {
  WarningLog log;
  swz::Cache c(settings_for(dir, log));
  for (int i : bad) CHECK_FALSE(c.load(make_key(i)).has_value());
  CHECK(c.counters().corrupt == bad.size());
  CHECK(c.counters().misses == bad.size());
  CHECK(log.size() == 1);  // one warning, however many rows
  for (int i : bad) CHECK(sql_int(db, "SELECT count(*) FROM kernels WHERE key = " + quoted(make_key(i).hash())) == 0);
  for (int i : bad) {
    int calls = 0;
    const swz::KernelEntry e = c.get_or_build(make_key(i), [&] {
      ++calls;
      return make_entry(i);
    });
    CHECK(calls == 1);
    CHECK(e == make_entry(i));
    const auto again = c.load(make_key(i));
    REQUIRE(again.has_value());
    CHECK(*again == make_entry(i));
  }
  for (int i = 0; i < total; ++i) {
    const auto e = c.load(make_key(i));
    REQUIRE(e.has_value());
    CHECK(*e == make_entry(i));
  }
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& ch : s) ch = static_cast<char>(rng());
  return s;
}

}  // namespace

TEST_CASE("cache: a truncated image blob is detected, counted and rebuilt") {
  TempDir dir;
  const std::string db = fill(dir.path(), 3);
  sql_exec(db, "UPDATE kernels SET image = substr(image, 1, length(image) / 2) WHERE key = " +
                   quoted(make_key(1).hash()));
  expect_detected_and_rebuilt(dir.path(), db, {1}, 3);
}

TEST_CASE("cache: a flipped byte in an image is detected, counted and rebuilt") {
  TempDir dir;
  const std::string db = fill(dir.path(), 3);
  swz_cache_test::flip_image_bit(db, make_key(2).hash(), 100);
  REQUIRE(sql_int(db, "SELECT length(image) FROM kernels WHERE key = " + quoted(make_key(2).hash())) == 4096);
  expect_detected_and_rebuilt(dir.path(), db, {2}, 3);
}

TEST_CASE("cache: metadata changed without the image is detected") {
  TempDir dir;
  const std::string db = fill(dir.path(), 2);
  sql_exec(db, "UPDATE kernels SET registers = registers + 1 WHERE key = " + quoted(make_key(0).hash()));
  expect_detected_and_rebuilt(dir.path(), db, {0}, 2);
}

TEST_CASE("cache: values swapped between two keys' rows are detected (never the wrong kernel)") {
  TempDir dir;
  const std::string db = fill(dir.path(), 3);
  const std::string a = quoted(make_key(0).hash()), b = quoted(make_key(1).hash());
  // Swap every value column *with its checksum*: each row is self-consistent except for its key.
  sql_exec(db,
           "CREATE TEMP TABLE t AS SELECT * FROM kernels WHERE key IN (" + a + ", " + b +
               ");"
               "UPDATE kernels SET (image, is_ptx, lowered_name, threads, dynamic_smem, registers, spill_bytes, "
               "bytes, checksum) = (SELECT image, is_ptx, lowered_name, threads, dynamic_smem, registers, "
               "spill_bytes, bytes, checksum FROM t WHERE t.key = CASE kernels.key WHEN " +
               a + " THEN " + b + " ELSE " + a + " END) WHERE key IN (" + a + ", " + b + ");");
  expect_detected_and_rebuilt(dir.path(), db, {0, 1}, 3);
}

TEST_CASE("cache: whole rows swapped between keys (key fields too) are detected") {
  TempDir dir;
  const std::string db = fill(dir.path(), 3);
  const std::string a = quoted(make_key(0).hash()), c = quoted(make_key(2).hash());
  // Everything but the key column moves: the stored fields now hash to the other key.
  sql_exec(db,
           "CREATE TEMP TABLE t AS SELECT * FROM kernels WHERE key IN (" + a + ", " + c +
               ");"
               "UPDATE kernels SET (format_version, templates_hash, name_expression, nvrtc_version, options, arch, "
               "image, is_ptx, lowered_name, threads, dynamic_smem, registers, spill_bytes, bytes, checksum) = "
               "(SELECT format_version, templates_hash, name_expression, nvrtc_version, options, arch, image, "
               "is_ptx, lowered_name, threads, dynamic_smem, registers, spill_bytes, bytes, checksum FROM t "
               "WHERE t.key = CASE kernels.key WHEN " +
               a + " THEN " + c + " ELSE " + a + " END) WHERE key IN (" + a + ", " + c + ");");
  expect_detected_and_rebuilt(dir.path(), db, {0, 2}, 3);
}

TEST_CASE("cache: a malformed options blob is a corrupt row") {
  TempDir dir;
  const std::string db = fill(dir.path(), 2);
  sql_exec(db, "UPDATE kernels SET options = x'0100' WHERE key = " + quoted(make_key(1).hash()));
  expect_detected_and_rebuilt(dir.path(), db, {1}, 2);
}

TEST_CASE("cache: a garbage database file is moved aside with a warning and rebuilt") {
  for (const bool with_magic : {false, true}) {
    CAPTURE(with_magic);
    TempDir dir;
    const std::string db = database_path(dir.path());
    std::string bytes = random_bytes(16384, 7);
    if (with_magic) bytes.replace(0, 16, std::string("SQLite format 3\0", 16));
    write_file(db, bytes);
    ::unlink((db + "-wal").c_str());
    ::unlink((db + "-shm").c_str());
    WarningLog log;
    {
      swz::Cache c(settings_for(dir.path(), log));
      CHECK(c.stats().mode == "disk");
      CHECK(log.size() == 1);
      CHECK(log.all().find("moved it aside") != std::string::npos);
      CHECK(c.counters().corrupt >= 1);
      CHECK(any_file_contains(dir.path(), ".bad-"));
      int calls = 0;
      CHECK(c.get_or_build(make_key(1), [&] {
        ++calls;
        return make_entry(1);
      }) == make_entry(1));
      CHECK(calls == 1);
    }
    swz::Cache again(settings_for(dir.path(), log));
    const auto e = again.load(make_key(1));
    REQUIRE(e.has_value());
    CHECK(*e == make_entry(1));
    CHECK(log.size() == 1);
  }
}

TEST_CASE("cache: a truncated database file is moved aside with a warning and rebuilt") {
  for (const double keep : {0.5, 0.9, 0.001}) {
    CAPTURE(keep);
    TempDir dir;
    const std::string db = fill(dir.path(), 40, 8192);
    ::unlink((db + "-wal").c_str());  // nothing is pending: the last close checkpointed
    const off_t size = static_cast<off_t>(sql_int(db, "PRAGMA page_count") * sql_int(db, "PRAGMA page_size"));
    REQUIRE(size > 300000);
    REQUIRE(::truncate(db.c_str(), static_cast<off_t>(size * keep)) == 0);
    WarningLog log;
    swz::Cache c(settings_for(dir.path(), log));
    CHECK(log.size() == 1);
    CHECK(log.all().find("truncated") != std::string::npos);
    CHECK(any_file_contains(dir.path(), ".bad-"));
    // every key is a miss (never a wrong kernel) and is rebuilt
    for (int i = 0; i < 40; ++i) {
      const auto e = c.load(make_key(i));
      CHECK_FALSE(e.has_value());
    }
    for (int i = 0; i < 40; ++i) CHECK(c.get_or_build(make_key(i), [&] { return make_entry(i, 8192); }) == make_entry(i, 8192));
    CHECK(c.verify().bad() == 0);
  }
}

TEST_CASE("cache: damage inside the database never yields a wrong kernel") {
  TempDir dir;
  const std::string db = fill(dir.path(), 40, 8192);
  ::unlink((db + "-wal").c_str());
  // scribble over the middle pages (the header stays intact, so only SQLite's own checks or our
  // checksums can notice)
  const std::string junk = random_bytes(64 * 1024, 11);
  {
    const int fd = ::open(db.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, junk.data(), junk.size(), 96 * 1024) == static_cast<ssize_t>(junk.size()));
    ::close(fd);
  }
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  int good = 0;
  for (int i = 0; i < 40; ++i) {
    const auto e = c.load(make_key(i));
    if (e) {
      CHECK(*e == make_entry(i, 8192));
      ++good;
    }
  }
  CHECK(good < 40);
  CHECK(c.counters().corrupt >= 1);
  CHECK(log.size() >= 1);
  for (int i = 0; i < 40; ++i) CHECK(c.get_or_build(make_key(i), [&] { return make_entry(i, 8192); }) == make_entry(i, 8192));
}

TEST_CASE("cache: a wrong format version is a miss: the file is moved aside and rebuilt") {
  TempDir dir;
  const std::string db = fill(dir.path(), 2);
  sql_exec(db, "UPDATE meta SET value = '999' WHERE name = 'format_version'");
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  CHECK(log.size() == 1);
  CHECK(log.all().find("format version '999'") != std::string::npos);
  CHECK(any_file_contains(dir.path(), ".bad-"));
  CHECK_FALSE(c.load(make_key(0)).has_value());
  c.store(make_key(0), make_entry(0));
  CHECK(c.load(make_key(0)).has_value());
  CHECK(sql_int(db, "SELECT value FROM meta WHERE name = 'format_version'") == swz::kCacheFormatVersion);
}

TEST_CASE("cache: an SQLite file that is not a swzjit cache is moved aside") {
  TempDir dir;
  const std::string db = database_path(dir.path());
  ::unlink(db.c_str());
  sql_exec(db, "CREATE TABLE foreign_data(x); INSERT INTO foreign_data VALUES(1);");
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  CHECK(c.stats().mode == "disk");
  CHECK(log.size() == 1);
  CHECK(log.all().find("not a swzjit cache") != std::string::npos);
  c.store(make_key(0), make_entry(0));
  CHECK(c.load(make_key(0)).has_value());
}

TEST_CASE("cache: verify walks every row and deletes the bad ones") {
  TempDir dir;
  WarningLog log;
  swz::TuningProblemKey p;
  p.operation = "transpose";
  p.problem = "f32 64x64";
  p.device_name = "dev";
  p.arch = "sm_90";
  p.sm_count = 1;
  swz::TuningProblemKey q = p;
  q.problem = "f32 128x128";
  std::string db;
  {
    swz::Cache c(settings_for(dir.path(), log));
    for (int i = 0; i < 3; ++i) c.store(make_key(i), make_entry(i));
    c.store_candidate(p, swz::CandidateResult{"a", "ok", "", 1.0, 0.9, 1.1, 10});
    c.store_candidate(p, swz::CandidateResult{"b", "timeout", "over 2 s", 2.0, 2.0, 2.0, 1});
    c.store_winner(p, "space", "a", 1.0);
    c.store_candidate(q, swz::CandidateResult{"a", "ok", "", 3.0, 3.0, 3.0, 10});
    db = c.stats().database;
  }
  sql_exec(db, "UPDATE kernels SET lowered_name = 'evil' WHERE key = " + quoted(make_key(1).hash()));
  sql_exec(db, "UPDATE tuning_candidates SET median_ms = 0.001 WHERE config = 'b'");
  sql_exec(db, "UPDATE tuning_winners SET config = 'b'");
  sql_exec(db, "UPDATE tuning_problems SET device_name = 'other' WHERE key = " + quoted(q.hash()));
  swz::Cache c(settings_for(dir.path(), log));
  const swz::VerifyReport r = c.verify();
  CHECK(r.database_ok);
  CHECK(r.integrity == "ok");
  CHECK(r.kernels_checked == 3);
  CHECK(r.kernels_bad == 1);
  CHECK(r.problems_checked == 2);
  CHECK(r.problems_bad == 1);
  CHECK(r.candidates_checked == 3);
  CHECK(r.candidates_bad == 1);
  CHECK(r.winners_checked == 1);
  CHECK(r.winners_bad == 1);
  CHECK(c.counters().corrupt == 4);
  const swz::VerifyReport again = c.verify();
  CHECK(again.bad() == 0);
  CHECK(again.kernels_checked == 2);
  CHECK(again.candidates_checked == 1);  // q's candidate went with its bad problem row
  CHECK(c.load_candidates(p).size() == 1);
  CHECK(c.load_candidates(q).empty());
}

TEST_CASE("cache: corrupt tuning rows are dropped on load and re-measured") {
  TempDir dir;
  WarningLog log;
  swz::TuningProblemKey p;
  p.operation = "transpose";
  p.problem = "f32 64x64";
  std::string db;
  {
    swz::Cache c(settings_for(dir.path(), log));
    c.store_candidate(p, swz::CandidateResult{"a", "ok", "", 1.0, 0.9, 1.1, 10});
    c.store_candidate(p, swz::CandidateResult{"b", "ok", "", 2.0, 1.9, 2.1, 10});
    c.store_winner(p, "space", "a", 1.0);
    db = c.stats().database;
  }
  sql_exec(db, "UPDATE tuning_candidates SET status = 'wrong-result' WHERE config = 'a'");
  sql_exec(db, "UPDATE tuning_winners SET median_ms = 0.5");
  swz::Cache c(settings_for(dir.path(), log));
  const auto got = c.load_candidates(p);
  CHECK(got.size() == 1);
  CHECK(got.count("b") == 1);
  CHECK_FALSE(c.load_winner(p, "space").has_value());
  CHECK(c.counters().corrupt == 2);
  CHECK(sql_int(db, "SELECT count(*) FROM tuning_candidates") == 1);
  CHECK(sql_int(db, "SELECT count(*) FROM tuning_winners") == 0);
}
