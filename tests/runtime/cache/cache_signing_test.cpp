// tests/runtime: signed cache exports (issue 10 item 11): an import with a key refuses unsigned,
// tampered (checksums recomputed) and foreign-key files; key files must be private and long enough.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "runtime/cache/cache_internal.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/tools/cli_support.hpp"

using namespace swz_cache_test;

namespace {

std::string write_key(const std::string& path, const std::string& bytes, mode_t mode = 0600) {
  std::ofstream(path, std::ios::binary) << bytes;
  ::chmod(path.c_str(), mode);
  return path;
}

const std::string kKeyBytes = "0123456789abcdef0123456789abcdef-signing-key";

/// Replaces the image of make_key(i)'s row and recomputes its checksum, as an attacker would.
void tamper(const std::string& file, int i) {
  swz::KernelEntry evil = make_entry(i);
  evil.image[0] = static_cast<char>(evil.image[0] ^ 0x5a);
  const std::string key = make_key(i).hash();
  sqlite3* h = nullptr;
  sqlite3_open(file.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, "UPDATE kernels SET image = ?, checksum = ? WHERE key = ?", -1, &st, nullptr);
  const std::string sum = swz::detail::kernel_checksum(key, evil);
  sqlite3_bind_blob(st, 1, evil.image.data(), static_cast<int>(evil.image.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, sum.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, key.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  sqlite3_close(h);
  REQUIRE(rc == SQLITE_DONE);
}

}  // namespace

TEST_CASE("cache export --sign / import --key: signed files import; tampered, unsigned, foreign ones do not") {
  TempDir dir;
  WarningLog log;
  swz::TransferOptions with_key;
  with_key.key_file = write_key(dir / "key", kKeyBytes);
  {
    swz::Cache c(settings_for(dir / "src", log));
    for (int i = 0; i < 3; ++i) c.store(make_key(i), make_entry(i));
    swz::TuningProblemKey p;
    p.operation = "transpose";
    p.problem = "f32 64x64";
    c.store_candidate(p, swz::CandidateResult{"tile=32x8", "ok", "", 1.0, 0.9, 1.1, 10});
    c.store_winner(p, "space", "tile=32x8", 1.0);
    c.export_to(dir / "signed.swzdb", with_key);
    c.export_to(dir / "plain.swzdb");
  }
  {
    swz::Cache d(settings_for(dir / "ok", log));
    const swz::ImportReport r = d.import_from(dir / "signed.swzdb", with_key);
    CHECK(r.authenticated);
    CHECK(r.kernels_added == 3);
    CHECK(r.winners == 1);
  }
  // A modified cubin with a recomputed checksum: the checksum cannot tell, the signature can.
  std::filesystem::copy_file(dir / "signed.swzdb", dir / "tampered.swzdb");
  tamper(dir / "tampered.swzdb", 1);
  {
    swz::Cache d(settings_for(dir / "t1", log));
    CHECK_THROWS_WITH_AS(d.import_from(dir / "tampered.swzdb", with_key), doctest::Contains("signature"), swz::Error);
    CHECK(d.stats().kernel_entries == 0);  // nothing at all was imported
    CHECK_FALSE(d.load(make_key(0)).has_value());
  }
  // Rows added, a meta row changed, a signature removed: each refused.
  std::filesystem::copy_file(dir / "signed.swzdb", dir / "added.swzdb");
  sql_exec(dir / "added.swzdb",
           "INSERT INTO tuning_problems SELECT 'x' || key, operation, problem, device_name, arch, "
           "sm_count, nvrtc_version, templates_hash, updated_us FROM tuning_problems");
  std::filesystem::copy_file(dir / "signed.swzdb", dir / "meta.swzdb");
  sql_exec(dir / "meta.swzdb", "UPDATE meta SET value = 'someone' WHERE name = 'created_by'");
  std::filesystem::copy_file(dir / "signed.swzdb", dir / "stripped.swzdb");
  sql_exec(dir / "stripped.swzdb", "DELETE FROM meta WHERE name = 'signature'");
  for (const char* f : {"added.swzdb", "meta.swzdb", "stripped.swzdb", "plain.swzdb"}) {
    CAPTURE(f);
    swz::Cache d(settings_for(dir / (std::string("t-") + f), log));
    CHECK_THROWS_AS(d.import_from(dir / f, with_key), swz::Error);
    CHECK(d.stats().kernel_entries == 0);
  }
  // Another key.
  swz::TransferOptions other;
  other.key_file = write_key(dir / "other", kKeyBytes + "!");
  swz::Cache d(settings_for(dir / "t-other", log));
  CHECK_THROWS_AS(d.import_from(dir / "signed.swzdb", other), swz::Error);
  // Without a key the import trusts the author, and says so.
  swz::Cache e(settings_for(dir / "trusting", log));
  CHECK_FALSE(e.import_from(dir / "tampered.swzdb").authenticated);
}

TEST_CASE("cache signing: key files must be private and long enough; the key is never printed") {
  TempDir dir;
  WarningLog log;
  swz::Cache c(settings_for(dir / "c", log));
  c.store(make_key(0), make_entry(0));
  for (const auto& bad : {std::make_pair(std::string("short-secret-key"), mode_t{0600}),
                          std::make_pair(kKeyBytes, mode_t{0644}), std::make_pair(std::string("\n"), mode_t{0600})}) {
    swz::TransferOptions t;
    t.key_file = write_key(dir / "k", bad.first, bad.second);
    std::string what;
    try {
      c.export_to(dir / "out.swzdb", t);
    } catch (const swz::Error& e) {
      what = e.what();
    }
    CHECK(what.find("key file") != std::string::npos);
    if (bad.first.size() > 2) CHECK(what.find(bad.first) == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "out.swzdb"));  // nothing written
    std::filesystem::remove(dir / "k");
  }
  swz::TransferOptions missing;
  missing.key_file = dir / "nope";
  CHECK_THROWS_AS(c.export_to(dir / "out.swzdb", missing), swz::Error);
}

TEST_CASE("swz cache export --sign and import --key") {
  TempDir dir;
  WarningLog log;
  {
    swz::Cache c(settings_for(dir / "src", log));
    c.store(make_key(4), make_entry(4));
  }
  const std::string key = write_key(dir / "key", kKeyBytes);
  const auto ex = swz_test::run_swz("cache --dir " + (dir / "src") + " export --sign " + key + " " + (dir / "f.swzdb"));
  CHECK(ex.code == 0);
  CHECK(ex.out.find("signed") != std::string::npos);
  CHECK(ex.out.find(kKeyBytes) == std::string::npos);
  const auto im = swz_test::run_swz("cache --dir " + (dir / "dst") + " import --key " + key + " " + (dir / "f.swzdb"));
  CHECK(im.code == 0);
  CHECK(im.out.find("signature verified") != std::string::npos);
  tamper(dir / "f.swzdb", 4);
  const auto bad =
      swz_test::run_swz("cache --dir " + (dir / "dst2") + " import --key " + key + " " + (dir / "f.swzdb"));
  CHECK(bad.code == 1);
  CHECK(bad.err.find("signature") != std::string::npos);
  const auto usage = swz_test::run_swz("cache --dir " + (dir / "dst2") + " import --key '' " + (dir / "f.swzdb"));
  CHECK(usage.code == 2);
}
