// tests/runtime: the cache's size limit and maintenance (runtime/cache/cache.cpp, cache_admin.cpp,
// cache_transfer.cpp): least-recently-used eviction, gc, clear, listings, export/import.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz_cache_test::make_entry;
using swz_cache_test::make_key;
using swz_cache_test::settings_for;
using swz_cache_test::sql_exec;
using swz_cache_test::TempDir;
using swz_cache_test::WarningLog;

namespace {

constexpr std::size_t kImage = 1000;

std::uint64_t entry_bytes(int i) {
  const swz::KernelEntry e = make_entry(i, kImage);
  return e.image.size() + e.lowered_name.size();
}

bool stored(swz::Cache& c, int i) {
  for (const auto& k : c.list_kernels())
    if (k.key == make_key(i).hash()) return true;
  return false;
}

swz::TuningProblemKey problem() {
  swz::TuningProblemKey p;
  p.operation = "transpose";
  p.problem = "f32 1024x1024";
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.arch = "sm_90";
  p.sm_count = 132;
  p.nvrtc_version = "12.4";
  p.templates_hash = "tpl";
  return p;
}

}  // namespace

TEST_CASE("cache: a tiny size limit evicts the least recently used entries") {
  TempDir dir;
  WarningLog log;
  // Room for three entries (keys 1..5 have lowered names of equal length).
  const std::uint64_t limit = entry_bytes(1) + entry_bytes(2) + entry_bytes(3);
  {
    swz::Cache c(settings_for(dir.path(), log, limit));
    for (int i = 1; i <= 3; ++i) c.store(make_key(i), make_entry(i, kImage));
    CHECK(c.stats().kernel_entries == 3);
    CHECK(c.load(make_key(1)).has_value());  // 1 is now more recent than 2
    c.store(make_key(4), make_entry(4, kImage));
    CHECK(c.counters().evictions == 1);
    CHECK_FALSE(stored(c, 2));  // the least recently used went
    CHECK(stored(c, 1));
    CHECK(stored(c, 3));
    CHECK(stored(c, 4));
    CHECK(c.load(make_key(3)).has_value());  // order of last use now: 1, 4, 3
    c.store(make_key(5), make_entry(5, kImage));
    CHECK_FALSE(stored(c, 1));
    CHECK(c.stats().kernel_bytes <= limit);
    CHECK_FALSE(c.load(make_key(2)).has_value());
  }
  // last-use stamps persist: a new object evicts by them too (order now 4, 3, 5)
  swz::Cache c(settings_for(dir.path(), log, 0));
  const auto before = c.list_kernels();
  REQUIRE(before.size() == 3);
  CHECK(before[0].key == make_key(5).hash());  // most recently used first
  CHECK(before[1].key == make_key(3).hash());
  CHECK(before[2].key == make_key(4).hash());
  const swz::GcReport r = c.gc(entry_bytes(3) + entry_bytes(5));
  CHECK(r.evicted_entries == 1);
  CHECK(r.kept_entries == 2);
  CHECK_FALSE(stored(c, 4));
  const swz::GcReport all = c.gc(0);
  CHECK(all.evicted_entries == 2);
  CHECK(all.evicted_bytes == entry_bytes(3) + entry_bytes(5));
  CHECK(c.stats().kernel_entries == 0);
  CHECK(c.stats().kernel_bytes == 0);
  CHECK(log.size() == 0);
}

TEST_CASE("cache: gc shrinks the database file") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  for (int i = 0; i < 30; ++i) c.store(make_key(i), make_entry(i, 64 * 1024));
  const std::string db = c.stats().database;
  const long long pages_before = swz_cache_test::sql_int(db, "PRAGMA page_count");
  c.gc(0);
  const long long pages_after = swz_cache_test::sql_int(db, "PRAGMA page_count");
  CHECK(pages_after * 4 < pages_before);  // incremental vacuum returned the freed pages
}

TEST_CASE("cache: clear removes kernels and tuning results") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  c.store(make_key(1), make_entry(1));
  c.store_candidate(problem(), swz::CandidateResult{"a", "ok", "", 1, 1, 1, 3});
  c.store_winner(problem(), "s", "a", 1);
  c.clear();
  const swz::CacheStats s = c.stats();
  CHECK(s.kernel_entries == 0);
  CHECK(s.tuning_problems == 0);
  CHECK(s.candidates == 0);
  CHECK(s.winners == 0);
  CHECK_FALSE(c.load(make_key(1)).has_value());
  CHECK_FALSE(c.load_winner(problem(), "s").has_value());
}

TEST_CASE("cache: export then import round-trips kernels and tuning results") {
  TempDir a, b, files;
  WarningLog log;
  const std::string file = files / "tuned.swzdb";
  const swz::CandidateResult ok{"t32x8", "ok", "", 1.25, 1.2, 1.3, 40};
  const swz::CandidateResult slow{"t64x4", "timeout", "ran past 2 s", std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(), 0, 1};
  {
    swz::Cache src(settings_for(a.path(), log));
    for (int i = 0; i < 3; ++i) src.store(make_key(i), make_entry(i));
    src.store_candidate(problem(), ok);
    src.store_candidate(problem(), slow);
    src.store_winner(problem(), "space-1", "t32x8", 1.25);
    src.export_to(file);
  }
  CHECK(access(file.c_str(), R_OK) == 0);
  CHECK(access((file + "-wal").c_str(), F_OK) != 0);  // standalone: no WAL beside it

  swz::Cache dst(settings_for(b.path(), log));
  const swz::ImportReport r = dst.import_from(file);
  CHECK(r.kernels_added == 3);
  CHECK(r.kernels_present == 0);
  CHECK(r.candidates == 2);
  CHECK(r.winners == 1);
  CHECK(r.skipped_corrupt == 0);
  for (int i = 0; i < 3; ++i) {
    const auto e = dst.load(make_key(i));
    REQUIRE(e.has_value());
    CHECK(*e == make_entry(i));
  }
  const auto cands = dst.load_candidates(problem());
  REQUIRE(cands.size() == 2);
  CHECK(cands.at("t32x8") == ok);
  CHECK(cands.at("t64x4") == slow);
  const auto w = dst.load_winner(problem(), "space-1");
  REQUIRE(w.has_value());
  CHECK(w->config == "t32x8");
  // importing again adds nothing
  const swz::ImportReport again = dst.import_from(file);
  CHECK(again.kernels_added == 0);
  CHECK(again.kernels_present == 3);
  CHECK(dst.stats().kernel_entries == 3);
  CHECK(dst.stats().candidates == 2);
  CHECK(log.size() == 0);
}

TEST_CASE("cache: import skips and counts rows that fail their checksum") {
  TempDir a, b, files;
  WarningLog log;
  const std::string file = files / "tuned.swzdb";
  {
    swz::Cache src(settings_for(a.path(), log));
    for (int i = 0; i < 3; ++i) src.store(make_key(i), make_entry(i));
    src.store_candidate(problem(), swz::CandidateResult{"a", "ok", "", 1, 1, 1, 3});
    src.store_candidate(problem(), swz::CandidateResult{"b", "ok", "", 2, 2, 2, 3});
    src.export_to(file);
  }
  sql_exec(file, "UPDATE kernels SET image = substr(image, 2) WHERE key = '" + make_key(1).hash() + "'");
  sql_exec(file, "UPDATE tuning_candidates SET median_ms = 0.1 WHERE config = 'b'");
  swz::Cache dst(settings_for(b.path(), log));
  const swz::ImportReport r = dst.import_from(file);
  CHECK(r.skipped_corrupt == 2);
  CHECK(r.kernels_added == 2);
  CHECK(r.candidates == 1);
  CHECK_FALSE(dst.load(make_key(1)).has_value());
  CHECK(dst.load(make_key(2)).has_value());
  CHECK(dst.load_candidates(problem()).size() == 1);
}

TEST_CASE("cache: importing something that is not an export is an error, not a crash") {
  TempDir dir, files;
  WarningLog log;
  swz::Cache c(settings_for(dir.path(), log));
  const std::string garbage = files / "garbage";
  std::ofstream(garbage) << std::string(5000, 'x');
  try {
    c.import_from(garbage);
    FAIL("import of garbage did not throw");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Cache);
  }
  try {
    c.import_from(files / "missing");
    FAIL("import of a missing file did not throw");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Io);
  }
  CHECK_THROWS_AS(c.export_to(files / "no/such/dir/out.swzdb"), swz::Error);
  CHECK(c.stats().mode == "disk");
}

TEST_CASE("cache: an uncached (memory) cache exports what it holds") {
  TempDir files, dst_dir;
  WarningLog log;
  swz::Cache mem(settings_for("", log));
  CHECK(mem.stats().mode == "memory");
  CHECK(log.size() == 0);  // memory only by request: no warning
  mem.store(make_key(1), make_entry(1));
  mem.store_winner(problem(), "s", "cfg", 2.0);
  const std::string file = files / "mem.swzdb";
  mem.export_to(file);
  swz::Cache dst(settings_for(dst_dir.path(), log));
  const swz::ImportReport r = dst.import_from(file);
  CHECK(r.kernels_added == 1);
  CHECK(r.winners == 1);
  CHECK(dst.load_winner(problem(), "s").has_value());
}
