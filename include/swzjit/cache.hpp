// swzjit public API: the persistent cache of compiled kernels and tuning results (docs/ARCHITECTURE.md principle 6).
// One SQLite database in WAL mode under cache_directory(); a corrupt entry is a miss, never a wrong kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace swz {

/// Version of the database layout and of the key encodings. A database written with another
/// version is moved aside (with a warning) and rebuilt; bump it whenever either changes.
constexpr int kCacheFormatVersion = 1;

/// Default limit on the kernel bytes kept on disk (SWZJIT_CACHE_MAX_BYTES overrides it).
constexpr std::uint64_t kDefaultCacheMaxBytes = std::uint64_t{1} << 30;

/// Where and how a Cache lives. Read from the environment once per process by
/// default_cache_settings(); tests and applications may build their own.
struct CacheSettings {
  /// Directory of the database. Empty: keep everything in memory (no warning; from_environment()
  /// warns when it can derive no location).
  std::string directory;
  /// Kernel bytes kept on disk before least-recently-used entries are evicted; 0 = no limit.
  std::uint64_t max_bytes = kDefaultCacheMaxBytes;
  /// Never write the database (e.g. a cache shipped with an application); new entries stay in memory.
  /// A directory or database the process may not write is used this way too, with one warning.
  /// SWZJIT_CACHE_READ_ONLY=1 sets it.
  bool read_only = false;
  /// How long a writer waits for another process's transaction before giving up on that write.
  int busy_timeout_ms = 10000;
  /// Longest one database statement may run before it is stopped (a hostile or damaged file must
  /// end in an error, never in an endless query); 0 = no limit.
  int statement_limit_ms = 120000;
  /// Longest get_or_build() waits for a build of the same key by another thread or process (whose
  /// result it then loads) before it compiles the kernel itself; 0 = never wait.
  int build_wait_ms = 120000;
  /// Receives each warning (at most once per kind per Cache). Unset: written to stderr as
  /// "swzjit: warning: ...", at most once per kind and directory per process.
  std::function<void(const std::string&)> warn;

  /// A Redis server shared by many machines, behind the local database:
  /// "redis://[user:password@]host:port[/db]" (SWZJIT_REMOTE_CACHE). Empty: no remote tier, and
  /// libhiredis is never loaded. Lookups go local -> remote -> build; results go to both.
  std::string remote_url;
  /// The key that signs (HMAC-SHA-256) and authenticates remote entries, at least 32 bytes
  /// (SWZJIT_REMOTE_CACHE_KEY). Never printed or stored locally.
  std::string remote_key;
  /// A file holding that key instead (SWZJIT_REMOTE_CACHE_KEY_FILE; mode 0600, 32 to 4096 bytes).
  /// Without either key the remote tier is read-only and its entries are checked by checksum only.
  std::string remote_key_file;
  /// Longest one remote call (connect, get or set) may take (SWZJIT_REMOTE_CACHE_TIMEOUT_MS).
  int remote_timeout_ms = 50;
  /// After a failed remote call, no call is tried for this long (doubling on each further
  /// failure, at most 60 s; SWZJIT_REMOTE_CACHE_BACKOFF_MS).
  int remote_backoff_ms = 1000;

  /// Reads SWZJIT_CACHE_DIR, XDG_CACHE_HOME, HOME, SWZJIT_CACHE_MAX_BYTES, SWZJIT_CACHE_READ_ONLY and
  /// the SWZJIT_REMOTE_CACHE* variables now.
  static CacheSettings from_environment();
};

/// The process's settings: from_environment() evaluated at the first call, then kept.
const CacheSettings& default_cache_settings();

/// $SWZJIT_CACHE_DIR, else $XDG_CACHE_HOME/swzjit, else ~/.cache/swzjit (as read once per process).
std::string cache_directory();

/// Parses a byte count: "1048576", "512K", "10M", "1G", "2T" (powers of 1024; "KiB"/"MB" spellings
/// accepted). Throws swz::Error(InvalidArgument) naming the text otherwise.
std::uint64_t parse_byte_size(const std::string& text);

/// XXH3-128 of arbitrary bytes as 32 lowercase hex digits (e.g. for a templates hash).
std::string content_hash(const std::string& bytes);

/// Order-insensitive hash of a search space (its config strings), for store_winner/load_winner.
std::string search_space_hash(std::vector<std::string> configs);

/// Everything a compiled kernel depends on. Nothing else (the cache path, the time, the process)
/// enters its hash. Options keep their order: NVRTC gives later options precedence.
struct KernelKey {
  int format_version = kCacheFormatVersion;
  std::string templates_hash;   ///< hash of the embedded template bytes
  std::string name_expression;  ///< e.g. "swz::transpose_kernel<float, 32, 8, ...>"
  std::string nvrtc_version;    ///< e.g. "12.4"
  std::vector<std::string> options;
  std::string arch;  ///< exact target, e.g. "sm_90a"

  /// XXH3-128 over the length-prefixed fields, as 32 lowercase hex digits.
  std::string hash() const;
};
bool operator==(const KernelKey& a, const KernelKey& b);
inline bool operator!=(const KernelKey& a, const KernelKey& b) { return !(a == b); }

/// A compiled kernel as stored: the image plus what a launch needs to know.
struct KernelEntry {
  std::string image;  ///< cubin bytes (or PTX text when is_ptx)
  bool is_ptx = false;
  std::string lowered_name;  ///< the mangled name nvrtcGetLoweredName returned
  int threads = 0;           ///< threads per block the kernel was compiled for
  int dynamic_smem = 0;      ///< dynamic shared memory bytes per block
  int registers = 0;
  int spill_bytes = 0;
};
bool operator==(const KernelEntry& a, const KernelEntry& b);
inline bool operator!=(const KernelEntry& a, const KernelEntry& b) { return !(a == b); }

/// What a tuning result depends on (the search-space hash is the winner's second key).
struct TuningProblemKey {
  std::string operation;  ///< e.g. "transpose"
  std::string problem;    ///< canonical string: dtype, shape, layouts, alignment class
  std::string device_name;
  std::string arch;
  int sm_count = 0;
  std::string nvrtc_version;
  std::string templates_hash;

  /// XXH3-128 over the length-prefixed fields (and kCacheFormatVersion), 32 hex digits.
  std::string hash() const;
};

/// One measured (or failed) configuration of a problem.
struct CandidateResult {
  std::string config;  ///< canonical config string
  /// "ok", "compile-failed", "resource-limit", "launch-failed", "wrong-result" or "timeout".
  std::string status;
  std::string reason;  ///< why it failed (empty when ok)
  double median_ms = 0, p20_ms = 0, p80_ms = 0;
  int repetitions = 0;
};
bool operator==(const CandidateResult& a, const CandidateResult& b);

/// The chosen configuration of a problem for one search space.
struct Winner {
  std::string config;
  double median_ms = 0;
};

/// Event counts of one Cache object since it was made.
struct CacheCounters {
  std::uint64_t hits = 0;            ///< kernel lookups served from the database or memory
  std::uint64_t misses = 0;          ///< kernel lookups that found nothing usable
  std::uint64_t builds = 0;          ///< builder calls (compiles)
  std::uint64_t joined = 0;          ///< requests that waited for another thread's build
  std::uint64_t corrupt = 0;         ///< rows or database files found corrupt (and removed)
  std::uint64_t store_failures = 0;  ///< writes that could not reach the disk (kept in memory)
  std::uint64_t evictions = 0;       ///< kernel entries evicted by the size limit or gc()
  std::uint64_t tuning_hits = 0;     ///< load_winner() calls that found a winner
  std::uint64_t tuning_misses = 0;   ///< load_winner() calls that did not
  /// get_or_build() calls that stopped waiting for another thread's or process's build of the same
  /// key (CacheSettings::build_wait_ms) and compiled it themselves.
  std::uint64_t wait_timeouts = 0;
  // --- the remote tier (all 0 without CacheSettings::remote_url) ---------------------------------
  std::uint64_t remote_hits = 0;      ///< kernels and winners served by the remote tier
  std::uint64_t remote_misses = 0;    ///< remote lookups that found nothing
  std::uint64_t remote_errors = 0;    ///< remote calls that failed or timed out (then a back-off)
  std::uint64_t remote_rejected = 0;  ///< remote entries refused: tampered, truncated, foreign
  std::uint64_t remote_stores = 0;    ///< entries written to the remote tier
  std::uint64_t remote_skipped = 0;   ///< remote calls not tried (back-off after an error, or no key to write)
  std::uint64_t remote_calls = 0;     ///< remote calls made (GET and SET, including failed ones)
  std::uint64_t remote_latency_us_total = 0;  ///< summed wall time of those calls
  std::uint64_t remote_latency_us_max = 0;    ///< the longest one
};

/// Where the cache is and what it holds.
struct CacheStats {
  std::string directory;
  std::string database;  ///< path of the database file ("" when in memory)
  std::string mode;      ///< "disk", "read-only" or "memory"
  std::string degraded_reason;  ///< why the cache is not on disk (empty in "disk" mode)
  std::uint64_t kernel_entries = 0;  ///< on disk
  std::uint64_t kernel_bytes = 0;    ///< image + lowered-name bytes on disk
  std::uint64_t memory_kernel_entries = 0;  ///< held only in memory (not persisted)
  std::uint64_t tuning_problems = 0;
  std::uint64_t candidates = 0;
  std::uint64_t winners = 0;
  std::uint64_t file_bytes = 0;  ///< database + WAL file sizes
  std::uint64_t max_bytes = 0;
  std::string remote;       ///< the remote tier's URL, password redacted ("" when there is none)
  std::string remote_mode;  ///< "read-write" or "read-only (...)"; "off: <why>" when it could not be set up
  CacheCounters counters;
};

/// One kernel entry, as `swz cache ls` shows it.
struct KernelListing {
  std::string key;
  KernelKey fields;
  std::uint64_t bytes = 0;
  bool is_ptx = false;
  std::int64_t last_use_us = 0;  ///< microseconds since the Unix epoch
  bool memory_only = false;      ///< not persisted (the disk was unusable)
};

/// One tuning problem, as `swz cache ls` shows it.
struct TuningListing {
  std::string key;
  TuningProblemKey problem;
  std::uint64_t candidates = 0;
  std::map<std::string, Winner> winners;  ///< by search-space hash
  std::int64_t updated_us = 0;
};

/// What verify() found; bad rows have been deleted (unless the cache is read-only).
struct VerifyReport {
  /// False when the database is damaged, was repaired (moved aside) by this Cache, or could not be
  /// checked at all (a cache directory was given but the cache runs in memory).
  bool database_ok = true;
  std::string integrity;  ///< SQLite's quick_check answer ("ok") or why it was not run
  bool read_only = false;  ///< bad rows were found but could not be deleted
  /// What verify could not check or fix, one sentence each (empty when it checked everything).
  std::vector<std::string> not_checked;
  std::uint64_t kernels_checked = 0, kernels_bad = 0;
  std::uint64_t problems_checked = 0, problems_bad = 0;
  std::uint64_t candidates_checked = 0, candidates_bad = 0;
  std::uint64_t winners_checked = 0, winners_bad = 0;
  std::uint64_t bad() const { return kernels_bad + problems_bad + candidates_bad + winners_bad; }
};

/// What import_from() merged.
struct ImportReport {
  std::uint64_t kernels_added = 0, kernels_present = 0;
  std::uint64_t candidates = 0, winners = 0;
  std::uint64_t skipped_corrupt = 0;
  /// The file's signature was checked against TransferOptions::key_file. False: the import trusted
  /// the file's author (its checksums catch damage, not tampering).
  bool authenticated = false;
};

/// How export_to() writes and import_from() trusts a cache export.
struct TransferOptions {
  /// export: sign the file (HMAC-SHA-256 over the format and every row, in a canonical order) with
  /// the key in this file; import: refuse a file that is unsigned or not signed with this key.
  /// The key file must be a regular file that only its owner may read or write (chmod 600) and hold
  /// 32 to 4096 bytes (e.g. `head -c 32 /dev/urandom > key`); the key is never printed.
  std::string key_file;
  /// export: write through a symbolic link (replacing the file it points to) or into a FIFO or
  /// character device. Without it, anything at the path but a regular file is refused.
  bool allow_special_target = false;
};

/// What gc() evicted and kept.
struct GcReport {
  std::uint64_t evicted_entries = 0, evicted_bytes = 0;
  std::uint64_t kept_entries = 0, kept_bytes = 0;
};

/// One key field that differs between a lookup and a stored entry.
struct FieldDifference {
  std::string field;  ///< "templates_hash", "nvrtc_version", "options", "arch", ...
  std::string wanted, stored;
};

/// A stored entry close to the one looked up, with the fields that differ.
struct NearMiss {
  std::string key;
  std::vector<FieldDifference> differences;
};

/// Why a lookup hits or misses.
struct Explanation {
  bool found = false;
  std::string key;
  std::string summary;  ///< one line
  std::vector<NearMiss> near_misses;
  /// Several lines: the summary, then one line per near miss and differing field.
  std::string text() const;
};

/// The on-disk cache. One object may be used from many threads; many processes may share a
/// directory. It never throws for an unusable disk: it warns once and keeps going in memory.
class Cache {
 public:
  using Builder = std::function<KernelEntry()>;

  /// The cache under default_cache_settings().
  Cache();
  explicit Cache(CacheSettings settings);
  /// default_cache_settings() with another directory (tests, tools).
  explicit Cache(const std::string& directory);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  /// The stored entry for `key`, verified against its checksum and key fields; a corrupt row is
  /// deleted, counted, and reported as a miss.
  std::optional<KernelEntry> load(const KernelKey& key);
  /// Stores (replacing) the entry for `key`; a failed write keeps it in memory and warns once.
  void store(const KernelKey& key, const KernelEntry& entry);
  /// load(), else the remote tier (CacheSettings::remote_url), else build once (concurrent callers for
  /// the same key wait for that build) and store locally, then remotely. load() alone never asks the
  /// remote tier. A builder's exception reaches every caller waiting on that build; nothing is stored.
  KernelEntry get_or_build(const KernelKey& key, const Builder& builder);
  /// The directory of the database ("" for a cache kept in memory).
  std::string directory() const;

  /// Every stored candidate of a problem, by config.
  std::map<std::string, CandidateResult> load_candidates(const TuningProblemKey& problem);
  /// Stores (replacing) one candidate; the status must be one of CandidateResult::status's values.
  void store_candidate(const TuningProblemKey& problem, const CandidateResult& result);
  void store_winner(const TuningProblemKey& problem, const std::string& space_hash, const std::string& config,
                    double median_ms);
  /// The stored winner; on a local miss, the remote tier's (then stored locally). store_winner()
  /// commits locally, then publishes to the remote tier when it has a signing key.
  std::optional<Winner> load_winner(const TuningProblemKey& problem, const std::string& space_hash);

  /// Evicts kernel entries, least recently used first, until at most `max_bytes` remain.
  GcReport gc(std::uint64_t max_bytes);
  /// Checks every row (checksums, key fields) and the database; deletes bad rows.
  VerifyReport verify();
  /// Deletes every entry (kernels and tuning results).
  void clear();
  /// Kernel entries, most recently used first.
  std::vector<KernelListing> list_kernels();
  std::vector<TuningListing> list_tuning();
  /// Why `key` hits or misses: stored entries with the same name expression and their differing fields.
  Explanation explain(const KernelKey& key);
  /// Why a problem hits or misses: stored problems with the same operation and problem string.
  /// With a space hash, "found" means a winner is stored for that search space.
  Explanation explain(const TuningProblemKey& problem, const std::string& space_hash = {});

  /// Writes one standalone SQLite file with every kernel entry and tuning result: a new file in
  /// `path`'s directory, renamed over `path` when complete. Throws swz::Error(Io) if `path` is not a
  /// regular file (unless options.allow_special_target) or cannot be written.
  void export_to(const std::string& path, const TransferOptions& options = {});
  /// Merges a file written by export_to(); rows failing their checksum are skipped and counted.
  /// Throws swz::Error(Cache) if the file is not a cache export of this format version, has a
  /// schema export_to() never writes, or (with options.key_file) is unsigned or tampered with.
  /// NOTE: without a key the import trusts the file's author: a cubin is code that will run.
  ImportReport import_from(const std::string& path, const TransferOptions& options = {});

  CacheStats stats();
  CacheCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace swz
