// tests/runtime: the remote (Redis) tier of swz::Cache against a real redis-server on loopback:
// sharing kernels and winners between caches with empty local directories, refusing tampered,
// truncated and foreign entries, read-only without a key, ACL users, and bounded calls when Redis
// is down, never answers, or is killed mid-run and restarted.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

#include "runtime/cache/remote.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"
#include "tests/runtime/cache/remote_redis_util.hpp"

using namespace swz_cache_test;

namespace {

const std::string kKey = "remote-test-signing-key-0123456789abcdef";

#define SKIP_WITHOUT_REDIS(r)                                         \
  if (!(r).available()) {                                             \
    MESSAGE("skipped: redis-server not installed");                   \
    return;                                                           \
  }

swz::CacheSettings remote_settings(const std::string& dir, const WarningLog& log, const std::string& url,
                                   const std::string& key = kKey) {
  swz::CacheSettings s = settings_for(dir, log);
  s.remote_url = url;
  s.remote_key = key;
  s.remote_timeout_ms = 50;
  s.remote_backoff_ms = 100;
  return s;
}

swz::TuningProblemKey make_problem(int i) {
  swz::TuningProblemKey p;
  p.operation = "gemm";
  p.problem = "f16 " + std::to_string(1024 * (i + 1)) + "x4096x4096 NN";
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.arch = "sm_90a";
  p.sm_count = 132;
  p.nvrtc_version = "12.4";
  p.templates_hash = "0123456789abcdef0123456789abcdef";
  return p;
}

/// A builder that counts its calls (a remote hit must make none).
struct CountingBuilder {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  swz::Cache::Builder operator()(int i) const {
    auto c = calls;
    return [c, i] {
      ++*c;
      return make_entry(i);
    };
  }
};

/// A raw client on the same server (to look at or damage what the tier wrote).
swz::detail::RemoteTier raw_client(const std::string& url) {
  swz::CacheSettings s;
  s.remote_url = url;
  s.remote_key = kKey;
  s.remote_timeout_ms = 1000;
  return swz::detail::RemoteTier(s, [](const std::string&, const std::string&) {});
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("remote: a second cache with an empty local directory gets kernels and a winner with 0 builds") {
  TempDir tmp;
  RedisServer redis(tmp.path());
  SKIP_WITHOUT_REDIS(redis);
  WarningLog log;
  CountingBuilder first, second;
  {
    swz::Cache a(remote_settings(tmp / "a", log, redis.url()));
    for (int i = 0; i < 8; ++i) CHECK(a.get_or_build(make_key(i), first(i)) == make_entry(i));
    a.store_winner(make_problem(0), "space-1", "hgemm,tile=128x128x32", 0.25);
    const auto c = a.counters();
    CHECK(c.builds == 8);
    CHECK(c.remote_stores == 9);
    CHECK(c.remote_errors == 0);
  }
  swz::Cache b(remote_settings(tmp / "b", log, redis.url()));
  for (int i = 0; i < 8; ++i) CHECK(b.get_or_build(make_key(i), second(i)) == make_entry(i));
  const auto w = b.load_winner(make_problem(0), "space-1");
  REQUIRE(w);
  CHECK(w->config == "hgemm,tile=128x128x32");
  CHECK(w->median_ms == 0.25);
  CHECK(*second.calls == 0);
  const auto c = b.counters();
  CHECK(c.builds == 0);
  CHECK(c.remote_hits == 9);
  CHECK(c.remote_rejected == 0);
  CHECK(c.remote_latency_us_max > 0);
  // Another search space or GPU is a miss, not the stored winner.
  CHECK_FALSE(b.load_winner(make_problem(0), "space-2"));
  swz::TuningProblemKey other_gpu = make_problem(0);
  other_gpu.device_name = "NVIDIA A100-SXM4-80GB";
  CHECK_FALSE(b.load_winner(other_gpu, "space-1"));
  // What came from Redis is now local: a cache with no remote at all finds it.
  swz::Cache local_only(settings_for(tmp / "b", log));
  CHECK(local_only.load(make_key(3)) == make_entry(3));
  CHECK(local_only.load_winner(make_problem(0), "space-1"));
  CHECK(log.size() == 0);
  auto raw = raw_client(redis.url());
  const auto kv = raw.raw_get(swz::detail::remote_kernel_key(make_key(0).hash()));
  const auto wv = raw.raw_get(swz::detail::remote_winner_key(make_problem(0).hash(), "space-1"));
  REQUIRE(kv);
  REQUIRE(wv);
  CHECK(kv->size() > make_entry(0).image.size());
  MESSAGE("remote value bytes: kernel with a 4096-byte image " << kv->size() << ", winner " << wv->size());
}

TEST_CASE("remote: tampered, truncated, foreign and wrongly signed entries are refused and rebuilt") {
  TempDir tmp;
  RedisServer redis(tmp.path());
  SKIP_WITHOUT_REDIS(redis);
  WarningLog log;
  CountingBuilder builder;
  {
    swz::Cache a(remote_settings(tmp / "a", log, redis.url()));
    for (int i = 0; i < 4; ++i) a.get_or_build(make_key(i), builder(i));
    a.store_winner(make_problem(1), "s", "cfg-a", 1.0);
  }
  auto raw = raw_client(redis.url());
  const std::string k0 = swz::detail::remote_kernel_key(make_key(0).hash());
  const std::string k1 = swz::detail::remote_kernel_key(make_key(1).hash());
  const std::string k2 = swz::detail::remote_kernel_key(make_key(2).hash());
  const std::string k3 = swz::detail::remote_kernel_key(make_key(3).hash());
  const auto v0 = raw.raw_get(k0), v2 = raw.raw_get(k2);
  REQUIRE(v0);
  REQUIRE(v2);
  std::string tampered = *v0;
  tampered[tampered.size() / 2] ^= 0x01;  // one bit of the cubin
  REQUIRE(raw.raw_set(k0, tampered));
  REQUIRE(raw.raw_set(k1, v0->substr(0, v0->size() - 100)));  // cut mid-value
  REQUIRE(raw.raw_set(k2, *v0));                               // a valid entry under another key
  // Re-signed with another key (an attacker without ours).
  const std::string forged =
      swz::detail::encode_remote_kernel(k3, make_key(3), make_entry(99), "another-key-of-32-bytes-at-least-xyz");
  REQUIRE(raw.raw_set(k3, forged));
  const std::string wk = swz::detail::remote_winner_key(make_problem(1).hash(), "s");
  auto wv = raw.raw_get(wk);
  REQUIRE(wv);
  std::string wt = *wv;
  wt[wt.find("cfg-a")] = 'x';
  REQUIRE(raw.raw_set(wk, wt));

  WarningLog log_b;
  CountingBuilder rebuild;
  swz::Cache b(remote_settings(tmp / "b", log_b, redis.url()));
  for (int i = 0; i < 4; ++i) CHECK(b.get_or_build(make_key(i), rebuild(i)) == make_entry(i));
  CHECK_FALSE(b.load_winner(make_problem(1), "s"));
  CHECK(*rebuild.calls == 4);
  const auto c = b.counters();
  CHECK(c.remote_rejected == 5);
  CHECK(c.remote_hits == 0);
  CHECK(log_b.all().find("refused the remote cache entry") != std::string::npos);
  CHECK(log_b.size() == 1);  // one warning, however many entries
  // The rebuilt kernels replaced the bad values: a third cache now hits them.
  CountingBuilder third;
  WarningLog log_c;
  swz::Cache c3(remote_settings(tmp / "c", log_c, redis.url()));
  for (int i = 0; i < 4; ++i) CHECK(c3.get_or_build(make_key(i), third(i)) == make_entry(i));
  CHECK(*third.calls == 0);
}

TEST_CASE("remote: codec refuses every truncation and a flipped byte anywhere") {
  const swz::KernelKey key = make_key(5);
  const std::string rk = swz::detail::remote_kernel_key(key.hash());
  const std::string v = swz::detail::encode_remote_kernel(rk, key, make_entry(5, 300), kKey);
  std::string why;
  REQUIRE(swz::detail::decode_remote_kernel(rk, v, key, kKey, why) == make_entry(5, 300));
  for (std::size_t n = 0; n < v.size(); n += 7) CHECK_FALSE(swz::detail::decode_remote_kernel(rk, v.substr(0, n), key, kKey, why));
  for (std::size_t i = 0; i < v.size(); i += 5) {
    std::string bad = v;
    bad[i] ^= 0x20;
    CHECK_FALSE(swz::detail::decode_remote_kernel(rk, bad, key, kKey, why));
  }
  // Unsigned values are refused by a process that has a key, read by one without.
  const std::string unsigned_v = swz::detail::encode_remote_kernel(rk, key, make_entry(5, 300), "");
  CHECK_FALSE(swz::detail::decode_remote_kernel(rk, unsigned_v, key, kKey, why));
  CHECK(why.find("unsigned") != std::string::npos);
  CHECK(swz::detail::decode_remote_kernel(rk, unsigned_v, key, "", why));
}

TEST_CASE("remote: without a key the tier is read-only: it reads, refuses to write, warns once") {
  TempDir tmp;
  RedisServer redis(tmp.path());
  SKIP_WITHOUT_REDIS(redis);
  WarningLog log_a;
  CountingBuilder b0;
  {
    swz::Cache a(remote_settings(tmp / "a", log_a, redis.url()));
    a.get_or_build(make_key(0), b0(0));
  }
  WarningLog log;
  CountingBuilder builder;
  swz::Cache r(remote_settings(tmp / "r", log, redis.url(), ""));
  CHECK(r.get_or_build(make_key(0), builder(0)) == make_entry(0));  // read: checksum-checked
  CHECK(*builder.calls == 0);
  for (int i = 1; i < 4; ++i) r.get_or_build(make_key(i), builder(i));
  r.store_winner(make_problem(2), "s", "cfg", 1.0);
  CHECK(*builder.calls == 3);
  const auto c = r.counters();
  CHECK(c.remote_stores == 0);
  CHECK(c.remote_skipped == 4);
  CHECK(log.size() == 1);
  CHECK(log.all().find("read-only") != std::string::npos);
  CHECK(log.all().find(kKey) == std::string::npos);
  auto raw = raw_client(redis.url());
  CHECK_FALSE(raw.raw_get(swz::detail::remote_kernel_key(make_key(2).hash())));
  CHECK(r.stats().remote_mode.find("read-only") == 0);
}

TEST_CASE("remote: ACL user and password from the URL; a wrong password is an error, never printed") {
  TempDir tmp;
  RedisServer redis(tmp.path(), {"--user", "default", "off", "--user", "swz", "on", ">s3cret-pw", "~swzjit:*",
                                 "+get", "+set", "+auth", "+select", "+ping"});
  SKIP_WITHOUT_REDIS(redis);
  WarningLog log;
  CountingBuilder builder;
  {
    swz::Cache a(remote_settings(tmp / "a", log, redis.url("swz:s3cret-pw")));
    a.get_or_build(make_key(0), builder(0));
    CHECK(a.counters().remote_stores == 1);
    CHECK(a.stats().remote.find("s3cret") == std::string::npos);
    CHECK(a.stats().remote.find("swz:***@") != std::string::npos);
  }
  WarningLog bad_log;
  swz::Cache b(remote_settings(tmp / "b", bad_log, redis.url("swz:wrong-pw")));
  b.get_or_build(make_key(0), builder(0));
  CHECK(*builder.calls == 2);
  CHECK(b.counters().remote_errors == 1);
  CHECK(bad_log.all().find("AUTH") != std::string::npos);
  CHECK(bad_log.all().find("wrong-pw") == std::string::npos);
  // Nothing secret in the local database either.
  CHECK_FALSE(any_file_contains(tmp / "a", "s3cret"));
  CHECK_FALSE(any_file_contains(tmp / "a", kKey));
}

TEST_CASE("remote: a server that never answers costs one bounded call, then a back-off") {
  TempDir tmp;
  // A listening socket nobody accepts on: connect completes (the backlog), every read times out.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 16) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0);
  const std::string url = "redis://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  WarningLog log;
  CountingBuilder builder;
  swz::CacheSettings s = remote_settings(tmp / "a", log, url);
  s.remote_backoff_ms = 60000;
  swz::Cache c(s);
  double worst = 0;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(c.get_or_build(make_key(i), builder(i)) == make_entry(i));
    worst = std::max(worst, ms_since(t0));
  }
  ::close(fd);
  const auto k = c.counters();
  CHECK(k.remote_calls == 1);  // the rest waited out the back-off without touching the network
  CHECK(k.remote_errors == 1);
  CHECK(k.remote_skipped >= 39);
  CHECK(k.remote_latency_us_max < 500000);  // the bound is 50 ms; generous for a loaded machine
  CHECK(worst < 1000);
  CHECK(*builder.calls == 20);
  CHECK(log.size() == 1);
}

TEST_CASE("remote: Redis killed mid-run and restarted loses nothing and never blocks past the bound") {
  TempDir tmp;
  RedisServer redis(tmp.path());
  SKIP_WITHOUT_REDIS(redis);
  WarningLog log;
  CountingBuilder builder;
  swz::Cache c(remote_settings(tmp / "a", log, redis.url()));
  double worst = 0;
  auto timed = [&](int i) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(c.get_or_build(make_key(i), builder(i)) == make_entry(i));
    c.store_winner(make_problem(i), "s", "cfg-" + std::to_string(i), i);
    worst = std::max(worst, ms_since(t0));
  };
  for (int i = 0; i < 10; ++i) timed(i);
  CHECK(c.counters().remote_stores == 20);
  redis.kill();
  for (int i = 10; i < 20; ++i) timed(i);
  CHECK(c.counters().remote_errors >= 1);
  redis.start();  // same port, empty (no persistence)
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past the 100 ms back-off
  for (int i = 20; i < 30; ++i) timed(i);
  CHECK(worst < 1000);
  CHECK(c.counters().remote_latency_us_max < 500000);
  CHECK(*builder.calls == 30);
  // Every local commit survived: a cache with no remote finds all 30 kernels and winners.
  WarningLog log2;
  swz::Cache local_only(settings_for(tmp / "a", log2));
  for (int i = 0; i < 30; ++i) {
    CHECK(local_only.load(make_key(i)) == make_entry(i));
    const auto w = local_only.load_winner(make_problem(i), "s");
    REQUIRE(w);
    CHECK(w->config == "cfg-" + std::to_string(i));
  }
  // After the restart the tier publishes again: a fresh process gets the newest kernels remotely.
  CountingBuilder fresh;
  swz::Cache b(remote_settings(tmp / "b", log2, redis.url()));
  for (int i = 25; i < 30; ++i) b.get_or_build(make_key(i), fresh(i));
  CHECK(*fresh.calls == 0);
}

TEST_CASE("remote: a bad URL or short key leaves the tier off with one warning; the local cache works") {
  TempDir tmp;
  for (const auto& bad : {std::string("http://host:1"), std::string("redis://:99999"), std::string("redis://h:1/x"),
                          std::string("redis://u:pw@")}) {
    WarningLog log;
    swz::CacheSettings s = remote_settings(tmp / "a", log, bad);
    swz::Cache c(s);
    CountingBuilder builder;
    c.get_or_build(make_key(0), builder(0));
    CHECK(c.stats().remote_mode.rfind("off: ", 0) == 0);
    CHECK(log.size() == 1);
    CHECK(log.all().find("pw") == std::string::npos);
  }
  WarningLog log;
  swz::Cache c(remote_settings(tmp / "b", log, "redis://127.0.0.1:1", "short"));
  CHECK(c.stats().remote_mode.find("at least 32") != std::string::npos);
  const auto u = swz::detail::parse_remote_url("redis://alice:p@ss:word@cache.internal:6380/3");
  CHECK(u.user == "alice");
  CHECK(u.password == "p@ss:word");
  CHECK(u.host == "cache.internal");
  CHECK(u.port == 6380);
  CHECK(u.db == 3);
  CHECK(u.redacted() == "redis://alice:***@cache.internal:6380/3");
}

TEST_CASE("remote: a full Redis (maxmemory, noeviction) refuses writes; an evicting one forgets: both are misses") {
  TempDir tmp;
  RedisServer full(tmp.path(), {"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
  SKIP_WITHOUT_REDIS(full);
  WarningLog log;
  CountingBuilder builder;
  {
    swz::Cache c(remote_settings(tmp / "a", log, full.url()));
    for (int i = 0; i < 40; ++i) CHECK(c.get_or_build(make_key(i), [i] { return make_entry(i, 256 * 1024); }) ==
                                       make_entry(i, 256 * 1024));
    const auto k = c.counters();
    CHECK(k.builds == 40);
    CHECK(k.remote_stores >= 1);
    CHECK(k.remote_stores < 40);
    CHECK(k.remote_errors >= 1);  // OOM replies: counted, one warning
    CHECK(log.all().find("maxmemory") != std::string::npos);
  }
  WarningLog log2;
  swz::Cache local_only(settings_for(tmp / "a", log2));
  for (int i = 0; i < 40; ++i) CHECK(local_only.load(make_key(i)) == make_entry(i, 256 * 1024));

  TempDir tmp2;
  RedisServer lru(tmp2.path(), {"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"});
  WarningLog log3;
  {
    swz::Cache c(remote_settings(tmp2 / "a", log3, lru.url()));
    for (int i = 0; i < 40; ++i) c.get_or_build(make_key(i), [i] { return make_entry(i, 256 * 1024); });
    CHECK(c.counters().remote_stores == 40);
  }
  swz::Cache b(remote_settings(tmp2 / "b", log3, lru.url()));
  int rebuilt = 0;
  for (int i = 39; i >= 0; --i)  // newest first: a rebuild's SET evicts the oldest, not the next read
    CHECK(b.get_or_build(make_key(i), [i, &rebuilt] {
      ++rebuilt;
      return make_entry(i, 256 * 1024);
    }) == make_entry(i, 256 * 1024));
  CHECK(rebuilt > 0);   // evicted entries are misses ...
  CHECK(rebuilt < 40);  // ... the newest survived
  CHECK(b.counters().remote_hits == static_cast<std::uint64_t>(40 - rebuilt));
  CHECK(b.counters().remote_rejected == 0);
}
