// runtime: the compiled-kernel half of swz::Cache (include/swzjit/cache.hpp): verified loads,
// stores, single-flight builds, last-use stamps, size-limited LRU eviction, and statistics.
// Opening lives in cache_open.cpp, tuning results in cache_tuning.cpp, maintenance in cache_admin.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "runtime/cache/cache_internal.hpp"
#include "runtime/cache/cache_lock.hpp"
#include "swzjit/error.hpp"

namespace swz {

using detail::Db;
using detail::KernelRow;
using detail::Stmt;
using detail::Transaction;

namespace {

// Pending last-use stamps are written in batches: on the next write, on maintenance calls, on
// destruction, or once this many have piled up.
constexpr std::size_t kTouchBatch = 64;

}  // namespace

Cache::Cache() : Cache(default_cache_settings()) {}

Cache::Cache(const std::string& directory) : Cache([&] {
  CacheSettings s = default_cache_settings();
  s.directory = directory;
  return s;
}()) {}

Cache::Cache(CacheSettings settings) : impl_(std::make_unique<Impl>(std::move(settings))) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->open();
  }
  if (!impl_->settings.remote_url.empty()) impl_->open_remote();
}

void Cache::Impl::open_remote() {
  auto warn = [this](const std::string& kind, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu);
    warn_once(kind, message);
  };
  try {
    remote = std::make_unique<detail::RemoteTier>(settings, warn);
  } catch (const Error& e) {
    remote_off = e.what();
    warn("remote-config", std::string("the remote cache is not used: ") + e.what());
    return;
  }
  if (!remote->writable())
    warn("remote-read-only", "the remote cache " + remote->url() +
                                 " is read-only for this process: set SWZJIT_REMOTE_CACHE_KEY (or _KEY_FILE) to sign "
                                 "and publish entries; without a key, entries read are checked by checksum only");
}

Cache::~Cache() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->owner_pid != getpid()) {
    if (impl_->db) impl_->db->leak();  // the parent's connection: never close it here
    return;
  }
  try {
    impl_->flush_touches_now();
  } catch (...) {
    // destructors never throw; a lost last-use stamp is harmless
  }
}

std::int64_t Cache::Impl::next_stamp() {
  // Strictly increasing within this object, so "least recently used" has no ties among our uses.
  last_stamp = std::max(detail::now_us(), last_stamp + 1);
  return last_stamp;
}

void Cache::Impl::flush_touches_locked() {
  if (pending_touches.empty() || !writable()) return;
  Stmt s(*db, "UPDATE kernels SET last_use_us = max(last_use_us, ?) WHERE key = ?");
  for (const auto& t : pending_touches) {
    s.bind_int(1, t.second).bind_text(2, t.first);
    s.run();
    s.reset();
  }
  pending_touches.clear();
}

void Cache::Impl::flush_touches_now() {
  if (pending_touches.empty()) return;
  if (!writable()) {
    pending_touches.clear();
    return;
  }
  const bool ok = with_db("recording last use", false, [&](Db& d) {
    Transaction t(d);
    flush_touches_locked();
    t.commit();
  });
  if (!ok) pending_touches.clear();  // a stamp is a hint; losing one is harmless
}

std::optional<KernelEntry> Cache::Impl::load_locked(const KernelKey& key, const std::string& hash) {
  ensure_process();
  auto mem = memory_kernels.find(hash);
  if (mem != memory_kernels.end() && mem->second.key == key) {
    mem->second.last_use_us = next_stamp();
    ++hits;
    return mem->second.entry;
  }
  std::optional<KernelEntry> found;
  bool bad = false;
  with_db("loading a kernel", false, [&](Db& d) {
    const std::string sql = std::string("SELECT ") + detail::kKernelColumns + " FROM kernels WHERE key = ?";
    Stmt s(d, sql.c_str());
    s.bind_text(1, hash);
    if (!s.step()) return;
    try {
      KernelRow row = detail::read_kernel_row(s);
      if (detail::kernel_row_valid(row) && row.fields == key) {
        found = std::move(row.entry);
        return;
      }
    } catch (const std::runtime_error&) {
      // malformed options blob: as corrupt as a failed checksum
    }
    bad = true;
  });
  if (bad) {
    ++corrupt;
    warn_once("corrupt-entry", "a corrupt kernel entry in " + db_path + " (key " + hash +
                                   ") failed its checksum or key check; it was deleted and will be rebuilt");
    if (writable())
      with_db("deleting a corrupt kernel", false, [&](Db& d) {
        Stmt s(d, "DELETE FROM kernels WHERE key = ?");
        s.bind_text(1, hash);
        s.run();
      });
  }
  if (found) {
    ++hits;
    pending_touches[hash] = next_stamp();
    if (pending_touches.size() >= kTouchBatch) flush_touches_now();
    return found;
  }
  ++misses;
  return std::nullopt;
}

void Cache::Impl::remember_in_memory(const KernelKey& key, const std::string& hash, const KernelEntry& entry) {
  memory_kernels[hash] = detail::MemoryKernel{key, entry, next_stamp()};
  if (settings.max_bytes > 0) evict_memory_locked(settings.max_bytes);
}

void Cache::Impl::evict_memory_locked(std::uint64_t max_bytes) {
  auto size_of = [](const detail::MemoryKernel& m) {
    return static_cast<std::uint64_t>(m.entry.image.size() + m.entry.lowered_name.size());
  };
  std::uint64_t total = 0;
  for (const auto& m : memory_kernels) total += size_of(m.second);
  while (total > max_bytes && !memory_kernels.empty()) {
    auto oldest = std::min_element(memory_kernels.begin(), memory_kernels.end(), [](const auto& a, const auto& b) {
      return a.second.last_use_us < b.second.last_use_us;
    });
    total -= size_of(oldest->second);
    memory_kernels.erase(oldest);
    ++evictions;
  }
}

GcReport Cache::Impl::evict_locked(std::uint64_t max_bytes) {
  GcReport r;
  std::vector<std::pair<std::string, std::uint64_t>> rows;  // oldest first
  {
    Stmt s(*db, "SELECT key, bytes FROM kernels ORDER BY last_use_us ASC, key ASC");
    while (s.step()) rows.emplace_back(s.text(0), static_cast<std::uint64_t>(s.integer(1)));
  }
  std::uint64_t total = 0;
  for (const auto& row : rows) total += row.second;
  Stmt del(*db, "DELETE FROM kernels WHERE key = ?");
  for (const auto& row : rows) {
    if (total <= max_bytes) {
      ++r.kept_entries;
      r.kept_bytes += row.second;
      continue;
    }
    del.bind_text(1, row.first);
    del.run();
    del.reset();
    total -= row.second;
    ++r.evicted_entries;
    r.evicted_bytes += row.second;
  }
  evictions += r.evicted_entries;
  return r;
}

void Cache::Impl::store_locked(const KernelKey& key, const std::string& hash, const KernelEntry& entry) {
  ensure_process();
  if (writable()) {
    KernelRow row;
    row.key = hash;
    row.fields = key;
    row.entry = entry;
    row.checksum = detail::kernel_checksum(hash, entry);
    row.created_us = row.last_use_us = next_stamp();
    const bool ok = with_db("storing a kernel", true, [&](Db& d) {
      if (!writable()) throw detail::SqliteError(8 /* SQLITE_READONLY */, "the database was reopened read-only");
      Transaction t(d);
      flush_touches_locked();
      detail::put_kernel_row(d, row, true);
      bool evicted = false;
      if (settings.max_bytes > 0 &&
          static_cast<std::uint64_t>(d.query_int("SELECT coalesce(sum(bytes), 0) FROM kernels")) > settings.max_bytes)
        evicted = evict_locked(settings.max_bytes).evicted_entries > 0;
      t.commit();
      if (evicted) d.exec("PRAGMA incremental_vacuum");
    });
    if (ok) {
      memory_kernels.erase(hash);
      return;
    }
    ++store_failures;
  } else if (mode != "memory" && !read_only) {
    ++store_failures;
  }
  remember_in_memory(key, hash, entry);
}

std::optional<KernelEntry> Cache::load(const KernelKey& key) {
  const std::string hash = key.hash();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->load_locked(key, hash);
}

void Cache::store(const KernelKey& key, const KernelEntry& entry) {
  const std::string hash = key.hash();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->store_locked(key, hash, entry);
  }
  if (impl_->remote) impl_->remote->put_kernel(key, hash, entry);
}

KernelEntry Cache::Impl::load_or_build(const KernelKey& key, const std::string& hash, const Builder& builder,
                                       bool lock_across_processes) {
  std::string lock_path;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto entry = load_locked(key, hash)) return *entry;
    if (lock_across_processes && writable()) lock_path = db_path + ".build-lock";
  }
  if (remote) {
    // Outside mu: a remote call may take up to its timeout and must not stall other lookups.
    if (auto entry = remote->get_kernel(key, hash)) {
      std::lock_guard<std::mutex> lock(mu);
      store_locked(key, hash, *entry);
      return *entry;
    }
  }
  std::optional<detail::BuildLock> file_lock;
  if (!lock_path.empty()) {
    file_lock.emplace(lock_path, hash, settings.build_wait_ms);
    if (file_lock->waited()) {
      // Another process was building this key (or one sharing its stripe): its result may be stored.
      std::lock_guard<std::mutex> lock(mu);
      if (auto entry = load_locked(key, hash)) return *entry;
    }
    // NOTE: never fail the call over the lock: after the bounded wait, compile anyway.
    if (file_lock->state() == detail::BuildLock::State::TimedOut) ++wait_timeouts;
  }
  ++builds;
  KernelEntry entry = builder();  // outside every mutex: a compile takes long
  {
    std::lock_guard<std::mutex> lock(mu);
    store_locked(key, hash, entry);  // the local commit comes first: a remote failure never loses it
  }
  if (remote) remote->put_kernel(key, hash, entry);
  return entry;
}

std::string Cache::directory() const {
  return impl_->settings.directory;  // set at construction, never changed
}

KernelEntry Cache::get_or_build(const KernelKey& key, const Builder& builder) {
  const std::string hash = key.hash();
  Impl& im = *impl_;
  std::shared_ptr<detail::Flight> flight;
  bool leader = false;
  {
    std::lock_guard<std::mutex> lock(im.flight_mu);
    auto it = im.flights.find(hash);
    if (it != im.flights.end()) {
      flight = it->second;
    } else {
      flight = std::make_shared<detail::Flight>();
      im.flights.emplace(hash, flight);
      leader = true;
    }
  }
  if (!leader) {
    ++im.joined;
    std::unique_lock<std::mutex> lock(im.flight_mu);
    const auto wait = std::chrono::milliseconds(std::max(im.settings.build_wait_ms, 0));
    if (im.flight_cv.wait_for(lock, wait, [&] { return flight->done; })) {
      if (flight->error) std::rethrow_exception(flight->error);
      return *flight->entry;
    }
    lock.unlock();
    // The other thread's build is taking too long (or hangs): build without it rather than wait on.
    ++im.wait_timeouts;
    return im.load_or_build(key, hash, builder, false);
  }
  auto finish = [&](std::optional<KernelEntry> entry, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(im.flight_mu);
    flight->entry = std::move(entry);
    flight->error = error;
    flight->done = true;
    im.flights.erase(hash);
    im.flight_cv.notify_all();
  };
  try {
    KernelEntry entry = im.load_or_build(key, hash, builder, true);
    finish(entry, nullptr);
    return entry;
  } catch (...) {
    finish(std::nullopt, std::current_exception());
    throw;
  }
}

GcReport Cache::gc(std::uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  GcReport r;
  im.evict_memory_locked(max_bytes);
  if (!im.writable()) return r;
  im.with_db("evicting kernels", false, [&](Db& d) {
    Transaction t(d);
    im.flush_touches_locked();
    r = im.evict_locked(max_bytes);
    t.commit();
    if (r.evicted_entries > 0) d.exec("PRAGMA incremental_vacuum");
  });
  return r;
}

CacheCounters Cache::counters() const {
  const Impl& im = *impl_;
  CacheCounters c;
  c.hits = im.hits;
  c.misses = im.misses;
  c.builds = im.builds;
  c.joined = im.joined;
  c.corrupt = im.corrupt;
  c.store_failures = im.store_failures;
  c.evictions = im.evictions;
  c.tuning_hits = im.tuning_hits;
  c.tuning_misses = im.tuning_misses;
  c.wait_timeouts = im.wait_timeouts;
  if (im.remote) im.remote->add_counters(c);
  return c;
}

CacheStats Cache::stats() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& im = *impl_;
  im.ensure_process();
  im.flush_touches_now();
  CacheStats s;
  s.directory = im.settings.directory;
  s.mode = im.mode;
  s.degraded_reason = im.degraded_reason;
  s.max_bytes = im.settings.max_bytes;
  s.memory_kernel_entries = im.memory_kernels.size();
  im.with_db("reading statistics", false, [&](Db& d) {
    Stmt k(d, "SELECT count(*), coalesce(sum(bytes), 0) FROM kernels");
    if (k.step()) {
      s.kernel_entries = static_cast<std::uint64_t>(k.integer(0));
      s.kernel_bytes = static_cast<std::uint64_t>(k.integer(1));
    }
    s.tuning_problems = static_cast<std::uint64_t>(d.query_int("SELECT count(*) FROM tuning_problems"));
    s.candidates = static_cast<std::uint64_t>(d.query_int("SELECT count(*) FROM tuning_candidates"));
    s.winners = static_cast<std::uint64_t>(d.query_int("SELECT count(*) FROM tuning_winners"));
  });
  for (const auto& p : im.memory_problems) {
    s.candidates += p.second.candidates.size();
    s.winners += p.second.winners.size();
  }
  if (im.db) {
    s.database = im.db_path;
    for (const char* suffix : {"", "-wal"}) {
      struct stat st;
      if (::stat((im.db_path + suffix).c_str(), &st) == 0) s.file_bytes += static_cast<std::uint64_t>(st.st_size);
    }
  }
  if (im.remote) {
    s.remote = im.remote->url();
    s.remote_mode = im.remote->mode();
  } else if (!im.settings.remote_url.empty()) {
    s.remote = "(not shown: it could not be parsed)";
    s.remote_mode = "off: " + im.remote_off;
  }
  s.counters = counters();
  return s;
}

}  // namespace swz
