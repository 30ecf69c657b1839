// runtime: internals shared by the cache's source files (cache.cpp, cache_open.cpp, cache_keys.cpp,
// cache_tuning.cpp, cache_admin.cpp, cache_transfer.cpp): hashing, row codecs, the schema check and
// the state behind swz::Cache. Build locks, export targets and signatures have their own headers.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/cache/cache_sqlite.hpp"
#include "runtime/cache/remote.hpp"
#include "swzjit/cache.hpp"

struct XXH3_state_s;

namespace swz {
namespace detail {

/// Streaming XXH3-128 over length-prefixed fields, so that "ab"+"c" never collides with "a"+"bc".
/// The domain string separates kinds of records (a key never equals a checksum by construction).
class FieldHasher {
 public:
  explicit FieldHasher(const char* domain);
  ~FieldHasher();
  FieldHasher(const FieldHasher&) = delete;
  FieldHasher& operator=(const FieldHasher&) = delete;

  void add(const std::string& bytes);
  void add_int(std::int64_t v);
  void add_real(double v);  ///< by bit pattern; every NaN hashes alike (SQLite stores NaN as NULL)
  void add_list(const std::vector<std::string>& items);
  /// 32 lowercase hex digits.
  std::string hex();

 private:
  XXH3_state_s* state_;
};

/// Options <-> the BLOB stored beside a kernel (count, then length-prefixed items).
std::string encode_list(const std::vector<std::string>& items);
/// Throws std::runtime_error on a malformed blob (the caller treats the row as corrupt).
std::vector<std::string> decode_list(const std::string& blob);

/// Checksums stored with each row and verified on every load.
std::string kernel_checksum(const std::string& key_hash, const KernelEntry& e);
std::string candidate_checksum(const std::string& problem_hash, const CandidateResult& r);
std::string winner_checksum(const std::string& problem_hash, const std::string& space_hash, const Winner& w);

std::int64_t now_us();
/// "ok", "compile-failed", ...: the statuses a CandidateResult may carry.
bool is_known_status(const std::string& status);

/// The columns of the kernels table, in this order, for SELECT and INSERT.
extern const char* const kKernelColumns;

/// A kernel row as read from the database (not yet trusted).
struct KernelRow {
  std::string key;
  KernelKey fields;
  KernelEntry entry;
  std::string checksum;
  std::int64_t created_us = 0;
  std::int64_t last_use_us = 0;
  std::uint64_t bytes = 0;
};
/// Reads the kKernelColumns of the current row; throws std::runtime_error on malformed options.
KernelRow read_kernel_row(const Stmt& s);
/// Recomputes the key from the stored fields and the checksum from the stored value.
bool kernel_row_valid(const KernelRow& row);
/// INSERT OR REPLACE (replace = true) or INSERT .. DO NOTHING; returns true if a row was written.
bool put_kernel_row(Db& db, const KernelRow& row, bool replace);

struct ProblemRow {
  std::string key;
  TuningProblemKey fields;
  std::int64_t updated_us = 0;
};
extern const char* const kProblemColumns;
ProblemRow read_problem_row(const Stmt& s);
void put_problem_row(Db& db, const ProblemRow& row);
/// Upserts a candidate / winner row with its checksum; only_if_newer keeps a newer stored row.
void put_candidate_row(Db& db, const std::string& problem_hash, const CandidateResult& r, std::int64_t updated_us,
                       bool only_if_newer);
void put_winner_row(Db& db, const std::string& problem_hash, const std::string& space_hash, const Winner& w,
                    std::int64_t updated_us, bool only_if_newer);

extern const char* const kCandidateColumns;
extern const char* const kWinnerColumns;

/// Creates the tables (idempotent) inside the caller's transaction.
void create_schema(Db& db);
/// What is wrong with the schema of a database the library did not just create: "" when it has
/// exactly the tables (and columns) create_schema() makes and no view, trigger or foreign index.
/// Reads only sqlite_master and table pragmas, so it runs before any query that could loop.
/// `meta_only`: check just the meta table (enough to read the format version).
std::string schema_problem(Db& db, bool meta_only = false);

/// A kernel held in memory only (uncached mode, or a write the disk refused).
struct MemoryKernel {
  KernelKey key;
  KernelEntry entry;
  std::int64_t last_use_us = 0;
};

/// Tuning results held in memory only.
struct MemoryProblem {
  TuningProblemKey key;
  std::map<std::string, CandidateResult> candidates;
  std::map<std::string, Winner> winners;
  std::int64_t updated_us = 0;
};

/// One in-process build that other threads asking for the same key wait on.
struct Flight {
  bool done = false;
  std::optional<KernelEntry> entry;
  std::exception_ptr error;
};

}  // namespace detail

struct Cache::Impl {
  explicit Impl(CacheSettings s);

  CacheSettings settings;
  std::string db_path;

  // --- guarded by mu: the connection, the memory tier, the mode ---------------------------------
  std::mutex mu;
  std::unique_ptr<detail::Db> db;  // null when not on disk
  dev_t db_dev = 0;
  ino_t db_ino = 0;
  pid_t owner_pid = 0;
  std::string mode = "memory";  // "disk", "read-only", "memory"
  bool read_only = false;       // asked for (settings.read_only) or found (a disk we may not write)
  std::string degraded_reason;
  std::string repaired;  // why a damaged database was moved aside by this object ("" if never)
  std::set<std::string> warned;
  std::map<std::string, detail::MemoryKernel> memory_kernels;
  std::map<std::string, detail::MemoryProblem> memory_problems;
  std::map<std::string, std::int64_t> pending_touches;  // key -> last-use stamp not yet written
  std::int64_t last_stamp = 0;

  // --- counters ---------------------------------------------------------------------------------
  std::atomic<std::uint64_t> hits{0}, misses{0}, builds{0}, joined{0}, corrupt{0}, store_failures{0}, evictions{0},
      tuning_hits{0}, tuning_misses{0}, wait_timeouts{0};

  // --- the remote tier (null without settings.remote_url); used without holding mu ---------------
  std::unique_ptr<detail::RemoteTier> remote;
  std::string remote_off;  // why a configured remote tier is not used ("" when it is, or none is set)
  /// Creates `remote` from the settings; a bad URL or key warns and leaves it off. Call without mu.
  void open_remote();

  // --- single flight, guarded by flight_mu ------------------------------------------------------
  std::mutex flight_mu;
  std::condition_variable flight_cv;
  std::map<std::string, std::shared_ptr<detail::Flight>> flights;

  // cache_open.cpp
  void open();
  /// A connection to db_path: read-write, or read-only (immutable when the -shm cannot be set up).
  std::unique_ptr<detail::Db> open_connection(bool read_only_open);
  void degrade(const std::string& kind, const std::string& reason);
  void warn_once(const std::string& kind, const std::string& message);
  /// Moves the database file aside (if it is still the one we opened) and opens a fresh one.
  void quarantine_and_reopen(const std::string& why);
  /// After fork(): drop (without closing) the parent's connection and open our own.
  void ensure_process();
  bool writable() const { return db && mode == "disk"; }

  /// Runs `f(db)` and sorts SQLite failures: corruption -> quarantine (+ one retry when `retry`),
  /// a refused write -> one warning; returns false if `f` did not complete. Requires mu held.
  template <class F>
  bool with_db(const char* what, bool retry, F&& f);

  // cache.cpp
  std::int64_t next_stamp();
  std::optional<KernelEntry> load_locked(const KernelKey& key, const std::string& hash);
  void store_locked(const KernelKey& key, const std::string& hash, const KernelEntry& entry);
  void flush_touches_locked();  // inside the caller's transaction
  void flush_touches_now();     // its own transaction; failures ignored
  GcReport evict_locked(std::uint64_t max_bytes);  // inside the caller's transaction
  void evict_memory_locked(std::uint64_t max_bytes);
  void remember_in_memory(const KernelKey& key, const std::string& hash, const KernelEntry& entry);
  /// load(), else build and store; with `lock_across_processes`, under the key's BuildLock so that
  /// another process building the same key is waited for (boundedly) and its result loaded. Takes mu.
  KernelEntry load_or_build(const KernelKey& key, const std::string& hash, const Cache::Builder& builder,
                            bool lock_across_processes);

  // cache_tuning.cpp
  detail::MemoryProblem& memory_problem(const TuningProblemKey& key, const std::string& hash);
  /// Deletes a problem whose stored fields no longer hash to its key, or single bad rows of it.
  void drop_bad_tuning_rows(const std::string& hash, bool whole_problem, const std::vector<std::string>& bad_configs,
                            const std::vector<std::string>& bad_spaces);
  void warn_corrupt_tuning(const std::string& hash);
  /// The local half of store_winner(). Requires mu held.
  void store_winner_locked(const TuningProblemKey& problem, const std::string& hash, const std::string& space_hash,
                           const Winner& w);
};

template <class F>
bool Cache::Impl::with_db(const char* what, bool retry, F&& f) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    ensure_process();
    if (!db) return false;
    try {
      f(*db);
      return true;
    } catch (const detail::SqliteError& e) {
      if (e.is_corruption()) {
        ++corrupt;
        quarantine_and_reopen(std::string("is damaged (") + e.what() + ", while " + what + ")");
        if (retry) continue;
        return false;
      }
      if (e.is_write_refusal()) {
        warn_once("write", std::string("the cache database ") + db_path + " refused a write (" + e.what() +
                               ", while " + what + "); continuing from memory");
        return false;
      }
      warn_once("sql", std::string("cache operation failed while ") + what + ": " + e.what());
      return false;
    }
  }
  return false;
}

}  // namespace swz
