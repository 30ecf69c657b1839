// runtime: the optional remote tier of swz::Cache -- a Redis server shared by many machines, reached
// through hiredis loaded lazily with dlopen. Reads go local -> remote -> build; every call is bounded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "swzjit/cache.hpp"

namespace swz {
namespace detail {

/// redis://[user:password@]host:port[/db], parsed. The password never leaves this struct except
/// in the AUTH command; redacted() is what may be printed.
struct RemoteUrl {
  std::string host;
  int port = 6379;
  std::string user;
  std::string password;
  int db = 0;
  /// "redis://user:***@host:port/db" (the password replaced; no user: no "@").
  std::string redacted() const;
};

/// Throws swz::Error(InvalidArgument) naming what is wrong (never echoing a password).
RemoteUrl parse_remote_url(const std::string& url);

/// The Redis key of a kernel entry and of a tuning winner (format version inside, so a format bump
/// never reads an old value; a winner's also names this machine's CUDA driver version).
std::string remote_kernel_key(const std::string& key_hash);
std::string remote_winner_key(const std::string& problem_hash, const std::string& space_hash);

/// Value codecs: the entry, its full key fields and its checksum, then an HMAC-SHA-256 over the
/// Redis key and those bytes (64 hex digits; "" without a signing key -> the value is unsigned).
std::string encode_remote_kernel(const std::string& redis_key, const KernelKey& key, const KernelEntry& entry,
                                 const std::string& mac_key);
std::string encode_remote_winner(const std::string& redis_key, const TuningProblemKey& problem,
                                 const std::string& space_hash, const Winner& w, const std::string& mac_key);
/// The decoded entry, or nullopt with `why` set: a bad or missing signature (when `mac_key` is
/// given), a truncated or malformed value, a checksum that fails, or fields of another key.
std::optional<KernelEntry> decode_remote_kernel(const std::string& redis_key, const std::string& value,
                                                const KernelKey& key, const std::string& mac_key, std::string& why);
std::optional<Winner> decode_remote_winner(const std::string& redis_key, const std::string& value,
                                           const TuningProblemKey& problem, const std::string& space_hash,
                                           const std::string& mac_key, std::string& why);

/// True once libhiredis is mapped into this process (tests: it must never be without a remote URL).
bool hiredis_loaded();

/// One connection to Redis, used by one Cache from many threads (calls are serialised: each is
/// short and bounded). A failed call drops the connection and backs off: calls during the back-off
/// return at once without touching the network.
class RemoteTier {
 public:
  using Warn = std::function<void(const std::string& kind, const std::string& message)>;
  /// Throws swz::Error(InvalidArgument) for a bad URL or key file. Connects lazily.
  RemoteTier(const CacheSettings& settings, Warn warn);
  ~RemoteTier();
  RemoteTier(const RemoteTier&) = delete;
  RemoteTier& operator=(const RemoteTier&) = delete;

  std::optional<KernelEntry> get_kernel(const KernelKey& key, const std::string& hash);
  void put_kernel(const KernelKey& key, const std::string& hash, const KernelEntry& entry);
  std::optional<Winner> get_winner(const TuningProblemKey& problem, const std::string& hash,
                                   const std::string& space_hash);
  void put_winner(const TuningProblemKey& problem, const std::string& hash, const std::string& space_hash,
                  const Winner& w);

  /// Raw GET/SET of one key (tools and tests): nullopt on a miss or a failure (see last_error()).
  std::optional<std::string> raw_get(const std::string& redis_key);
  bool raw_set(const std::string& redis_key, const std::string& value);

  bool writable() const { return !mac_key_.empty(); }
  std::string url() const { return url_.redacted(); }
  /// "read-write", "read-only (no signing key)"
  std::string mode() const;
  void add_counters(CacheCounters& c) const;

 private:
  struct Conn;
  enum class Outcome { Value, Nil, Failed, Skipped };
  /// One command under the connection mutex; connects when needed; honours the back-off.
  Outcome call(const char* verb, const std::string& key, const std::string* value, std::string& out);
  bool connect_locked(std::string& error);
  void fail_locked(const std::string& error);
  void record_latency(std::chrono::steady_clock::duration d);

  RemoteUrl url_;
  std::string mac_key_;
  int timeout_ms_;
  int backoff_ms_;
  Warn warn_;

  std::mutex mu_;
  Conn* conn_ = nullptr;
  int conn_pid_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};
  int current_backoff_ms_ = 0;

  std::atomic<std::uint64_t> hits_{0}, misses_{0}, errors_{0}, rejected_{0}, stores_{0}, skipped_{0}, calls_{0},
      latency_us_total_{0}, latency_us_max_{0};
};

}  // namespace detail
}  // namespace swz
