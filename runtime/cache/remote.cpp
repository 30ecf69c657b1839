// runtime: the remote (Redis) tier of swz::Cache (see remote.hpp): hiredis loaded with dlopen on the
// first remote call, bounded calls with a back-off, and the URL parser. Value codecs: remote_codec.cpp.
#include "runtime/cache/remote.hpp"

#include <dlfcn.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/cache/cache_sign.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"

#if __has_include(<hiredis/hiredis.h>)
#include <hiredis/hiredis.h>
#define SWZJIT_HAVE_HIREDIS_HEADER 1
#else
#define SWZJIT_HAVE_HIREDIS_HEADER 0
#endif

namespace swz {
namespace detail {

namespace {

#if SWZJIT_HAVE_HIREDIS_HEADER
#define SWZ_STR2(x) #x
#define SWZ_STR(x) SWZ_STR2(x)
// NOTE: only the library of the header's ABI is loaded: redisReply's layout changed in hiredis 1.0.
#if HIREDIS_MAJOR == 0
constexpr const char* kHiredisSoname = "libhiredis.so.0." SWZ_STR(HIREDIS_MINOR);
#else
constexpr const char* kHiredisSoname = "libhiredis.so." SWZ_STR(HIREDIS_MAJOR) "." SWZ_STR(HIREDIS_MINOR) "." SWZ_STR(
    HIREDIS_PATCH);
#endif

/// The few hiredis entry points the tier uses, resolved once per process on first use.
struct HiredisApi {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded ("" when loaded)
  redisContext* (*connect)(const char*, int, const struct timeval) = nullptr;
  int (*set_timeout)(redisContext*, const struct timeval) = nullptr;
  void* (*command_argv)(redisContext*, int, const char**, const size_t*) = nullptr;
  void (*free_reply)(void*) = nullptr;
  void (*free_context)(redisContext*) = nullptr;
};

const HiredisApi& hiredis() {
  static const HiredisApi api = [] {
    HiredisApi a;
    dlerror();
    a.handle = dlopen(kHiredisSoname, RTLD_NOW | RTLD_LOCAL);
    if (!a.handle) {
      const char* e = dlerror();
      a.error = std::string("could not load ") + kHiredisSoname + " (" + (e ? e : "unknown dlopen error") +
                "); install it (Debian: apt-get install libhiredis0.14) or unset SWZJIT_REMOTE_CACHE";
      return a;
    }
    a.connect = reinterpret_cast<decltype(a.connect)>(dlsym(a.handle, "redisConnectWithTimeout"));
    a.set_timeout = reinterpret_cast<decltype(a.set_timeout)>(dlsym(a.handle, "redisSetTimeout"));
    a.command_argv = reinterpret_cast<decltype(a.command_argv)>(dlsym(a.handle, "redisCommandArgv"));
    a.free_reply = reinterpret_cast<decltype(a.free_reply)>(dlsym(a.handle, "freeReplyObject"));
    a.free_context = reinterpret_cast<decltype(a.free_context)>(dlsym(a.handle, "redisFree"));
    if (!a.connect || !a.set_timeout || !a.command_argv || !a.free_reply || !a.free_context)
      a.error = std::string(kHiredisSoname) + " lacks an entry point the remote cache needs (a damaged install?)";
    return a;
  }();
  return api;
}

timeval to_timeval(std::chrono::microseconds us) {
  const long long v = std::max<long long>(us.count(), 1000);
  timeval tv;
  tv.tv_sec = static_cast<time_t>(v / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(v % 1000000);
  return tv;
}
#endif

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string RemoteUrl::redacted() const {
  std::string out = "redis://";
  if (!user.empty() || !password.empty()) out += user + (password.empty() ? "" : ":***") + "@";
  return out + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

RemoteUrl parse_remote_url(const std::string& url) {
  const std::string form = " (expected redis://[user:password@]host:port[/db], e.g. redis://cache.internal:6379/0)";
  const std::string scheme = "redis://";
  if (url.compare(0, scheme.size(), scheme) != 0)
    throw Error(ErrorKind::InvalidArgument, "the remote cache URL does not start with redis://" + form);
  std::string rest = url.substr(scheme.size());
  RemoteUrl u;
  // The user-info ends at the last '@', so a password may hold '@' (it is never echoed).
  const std::size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    const std::string info = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const std::size_t colon = info.find(':');
    if (colon == std::string::npos) {
      u.password = info;  // redis://password@host, as redis-cli reads it
    } else {
      u.user = info.substr(0, colon);
      u.password = info.substr(colon + 1);
    }
  }
  const std::size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    const std::string db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty()) {
      if (!all_digits(db)) throw Error(ErrorKind::InvalidArgument, "the remote cache URL's database '" + db +
                                                                       "' is not a number" + form);
      u.db = std::stoi(db);
    }
  }
  const std::size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    if (!all_digits(port) || std::stoi(port) < 1 || std::stoi(port) > 65535)
      throw Error(ErrorKind::InvalidArgument, "the remote cache URL's port '" + port + "' is not 1 to 65535" + form);
    u.port = std::stoi(port);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) throw Error(ErrorKind::InvalidArgument, "the remote cache URL names no host" + form);
  u.host = rest;
  return u;
}

std::string remote_kernel_key(const std::string& key_hash) {
  return "swzjit:" + std::to_string(kCacheFormatVersion) + ":kernel:" + key_hash;
}

namespace {

// The CUDA driver of this machine ("driver=13.0"; "driver=none" where none loads): a winner tuned under
// one driver is not served to machines running another, whose compiler back end may rank configs
// differently. Read once per process.
const std::string& driver_tag() {
  static const std::string tag = [] {
    try {
      return "driver=" + driver_version_string();
    } catch (const Error&) {
      return std::string("driver=none");
    }
  }();
  return tag;
}

}  // namespace

std::string remote_winner_key(const std::string& problem_hash, const std::string& space_hash) {
  return "swzjit:" + std::to_string(kCacheFormatVersion) + ":winner:" + driver_tag() + ":" + problem_hash + ":" +
         space_hash;
}

struct RemoteTier::Conn {
#if SWZJIT_HAVE_HIREDIS_HEADER
  redisContext* ctx = nullptr;
#endif
};

RemoteTier::RemoteTier(const CacheSettings& settings, Warn warn)
    : url_(parse_remote_url(settings.remote_url)),
      timeout_ms_(std::max(settings.remote_timeout_ms, 1)),
      backoff_ms_(std::max(settings.remote_backoff_ms, 0)),
      warn_(std::move(warn)) {
  if (!settings.remote_key.empty()) {
    if (settings.remote_key.size() < 32)
      throw Error(ErrorKind::InvalidArgument, "the remote cache key (SWZJIT_REMOTE_CACHE_KEY) holds " +
                                                  std::to_string(settings.remote_key.size()) +
                                                  " bytes; it needs at least 32 (e.g. head -c 32 /dev/urandom | base64)");
    mac_key_ = settings.remote_key;
  } else if (!settings.remote_key_file.empty()) {
    mac_key_ = read_key_file(settings.remote_key_file);
  }
}

RemoteTier::~RemoteTier() {
#if SWZJIT_HAVE_HIREDIS_HEADER
  if (conn_ && conn_->ctx) hiredis().free_context(conn_->ctx);
#endif
  delete conn_;
  std::fill(mac_key_.begin(), mac_key_.end(), '\0');
}

std::string RemoteTier::mode() const {
  return writable() ? "read-write" : "read-only (no SWZJIT_REMOTE_CACHE_KEY: entries checked by checksum only)";
}

void RemoteTier::record_latency(std::chrono::steady_clock::duration d) {
  const auto us = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
  latency_us_total_ += us;
  std::uint64_t prev = latency_us_max_.load();
  while (us > prev && !latency_us_max_.compare_exchange_weak(prev, us)) {
  }
}

void RemoteTier::fail_locked(const std::string& error) {
  ++errors_;
#if SWZJIT_HAVE_HIREDIS_HEADER
  if (conn_ && conn_->ctx) hiredis().free_context(conn_->ctx);
#endif
  delete conn_;
  conn_ = nullptr;
  current_backoff_ms_ = current_backoff_ms_ == 0 ? backoff_ms_ : std::min(current_backoff_ms_ * 2, 60000);
  retry_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(current_backoff_ms_);
  warn_("remote-failed", "the remote cache " + url_.redacted() + " failed (" + error +
                             "); continuing with the local cache, retrying after a back-off of " +
                             std::to_string(current_backoff_ms_) + " ms or more");
}

bool RemoteTier::connect_locked(std::string& error) {
#if SWZJIT_HAVE_HIREDIS_HEADER
  const HiredisApi& api = hiredis();
  if (!api.error.empty()) {
    error = api.error;
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
  };
  redisContext* ctx = api.connect(url_.host.c_str(), url_.port, to_timeval(left()));
  if (!ctx || ctx->err) {
    error = std::string("cannot connect: ") + (ctx ? ctx->errstr : "out of memory");
    if (ctx) api.free_context(ctx);
    return false;
  }
  auto simple = [&](std::vector<std::string> words, const char* what) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& w : words) {
      argv.push_back(w.data());
      lens.push_back(w.size());
    }
    api.set_timeout(ctx, to_timeval(left()));
    auto* r = static_cast<redisReply*>(api.command_argv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()));
    std::fill(words.back().begin(), words.back().end(), '\0');
    if (!r) {
      error = std::string(what) + " failed: " + ctx->errstr;
      return false;
    }
    // NOTE: the reply text of a refused AUTH names no secret; it is shown to say what to fix.
    const bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) error = std::string(what) + " refused: " + std::string(r->str, r->len);
    api.free_reply(r);
    return ok;
  };
  bool ok = true;
  if (!url_.password.empty())
    ok = url_.user.empty() ? simple({"AUTH", url_.password}, "AUTH")
                           : simple({"AUTH", url_.user, url_.password}, "AUTH (check the user and password)");
  if (ok && url_.db != 0) ok = simple({"SELECT", std::to_string(url_.db)}, "SELECT");
  if (!ok) {
    api.free_context(ctx);
    return false;
  }
  conn_ = new Conn;
  conn_->ctx = ctx;
  conn_pid_ = static_cast<int>(getpid());
  return true;
#else
  error = "this build of libswzjit has no remote cache support (hiredis headers were missing at build time)";
  return false;
#endif
}

RemoteTier::Outcome RemoteTier::call(const char* verb, const std::string& key, const std::string* value,
                                     std::string& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
#if SWZJIT_HAVE_HIREDIS_HEADER
  if (conn_ && conn_pid_ != static_cast<int>(getpid())) {
    // After fork(): the parent's socket is not ours to talk on; closing our copy of it is harmless.
    hiredis().free_context(conn_->ctx);
    delete conn_;
    conn_ = nullptr;
  }
#endif
  if (!conn_ && t0 < retry_at_) {
    ++skipped_;
    return Outcome::Skipped;
  }
  ++calls_;
  std::string error;
  if (!conn_ && !connect_locked(error)) {
    record_latency(std::chrono::steady_clock::now() - t0);
    fail_locked(error);
    return Outcome::Failed;
  }
#if SWZJIT_HAVE_HIREDIS_HEADER
  const HiredisApi& api = hiredis();
  const auto left = std::chrono::milliseconds(timeout_ms_) - (std::chrono::steady_clock::now() - t0);
  api.set_timeout(conn_->ctx, to_timeval(std::chrono::duration_cast<std::chrono::microseconds>(left)));
  const char* argv[3] = {verb, key.data(), value ? value->data() : nullptr};
  const size_t lens[3] = {std::strlen(verb), key.size(), value ? value->size() : 0};
  auto* r = static_cast<redisReply*>(api.command_argv(conn_->ctx, value ? 3 : 2, argv, lens));
  record_latency(std::chrono::steady_clock::now() - t0);
  if (!r) {
    fail_locked(std::string(verb) + " failed: " + conn_->ctx->errstr);
    return Outcome::Failed;
  }
  current_backoff_ms_ = 0;
  Outcome o = Outcome::Value;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
    out.assign(r->str, r->len);
  } else if (r->type == REDIS_REPLY_NIL) {
    o = Outcome::Nil;
  } else {
    // An error reply (maxmemory reached, NOPERM, a wrong type): the connection is fine, the call is not.
    ++errors_;
    const std::string text = r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "an unexpected reply";
    warn_(std::string("remote-reply-") + verb,
          "the remote cache " + url_.redacted() + " answered " + verb + " with: " + text +
              " (continuing with the local cache)");
    o = Outcome::Failed;
  }
  api.free_reply(r);
  return o;
#else
  (void)verb, (void)key, (void)value, (void)out;
  return Outcome::Failed;
#endif
}

std::optional<std::string> RemoteTier::raw_get(const std::string& redis_key) {
  std::string out;
  if (call("GET", redis_key, nullptr, out) == Outcome::Value) return out;
  return std::nullopt;
}

bool RemoteTier::raw_set(const std::string& redis_key, const std::string& value) {
  std::string out;
  return call("SET", redis_key, &value, out) == Outcome::Value;
}

std::optional<KernelEntry> RemoteTier::get_kernel(const KernelKey& key, const std::string& hash) {
  const std::string rkey = remote_kernel_key(hash);
  std::string value;
  const Outcome o = call("GET", rkey, nullptr, value);
  if (o == Outcome::Nil) ++misses_;
  if (o != Outcome::Value) return std::nullopt;
  std::string why;
  auto entry = decode_remote_kernel(rkey, value, key, mac_key_, why);
  if (!entry) {
    ++rejected_;
    warn_("remote-rejected", "refused the remote cache entry " + rkey + " from " + url_.redacted() + ": " + why +
                                 " (treated as a miss; the kernel is built here)");
    return std::nullopt;
  }
  ++hits_;
  return entry;
}

void RemoteTier::put_kernel(const KernelKey& key, const std::string& hash, const KernelEntry& entry) {
  if (!writable()) {
    ++skipped_;
    return;
  }
  const std::string rkey = remote_kernel_key(hash);
  const std::string value = encode_remote_kernel(rkey, key, entry, mac_key_);
  std::string out;
  if (call("SET", rkey, &value, out) == Outcome::Value) ++stores_;
}

std::optional<Winner> RemoteTier::get_winner(const TuningProblemKey& problem, const std::string& hash,
                                             const std::string& space_hash) {
  const std::string rkey = remote_winner_key(hash, space_hash);
  std::string value;
  const Outcome o = call("GET", rkey, nullptr, value);
  if (o == Outcome::Nil) ++misses_;
  if (o != Outcome::Value) return std::nullopt;
  std::string why;
  auto w = decode_remote_winner(rkey, value, problem, space_hash, mac_key_, why);
  if (!w) {
    ++rejected_;
    warn_("remote-rejected", "refused the remote cache entry " + rkey + " from " + url_.redacted() + ": " + why +
                                 " (treated as a miss)");
    return std::nullopt;
  }
  ++hits_;
  return w;
}

void RemoteTier::put_winner(const TuningProblemKey& problem, const std::string& hash, const std::string& space_hash,
                            const Winner& w) {
  if (!writable()) {
    ++skipped_;
    return;
  }
  const std::string rkey = remote_winner_key(hash, space_hash);
  const std::string value = encode_remote_winner(rkey, problem, space_hash, w, mac_key_);
  std::string out;
  if (call("SET", rkey, &value, out) == Outcome::Value) ++stores_;
}

void RemoteTier::add_counters(CacheCounters& c) const {
  c.remote_hits = hits_;
  c.remote_misses = misses_;
  c.remote_errors = errors_;
  c.remote_rejected = rejected_;
  c.remote_stores = stores_;
  c.remote_skipped = skipped_;
  c.remote_calls = calls_;
  c.remote_latency_us_total = latency_us_total_;
  c.remote_latency_us_max = latency_us_max_;
}

bool hiredis_loaded() {
#if SWZJIT_HAVE_HIREDIS_HEADER
  void* h = dlopen(kHiredisSoname, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
#else
  return false;
#endif
}

}  // namespace detail
}  // namespace swz
