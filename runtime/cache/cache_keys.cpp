// runtime: cache keys, checksums and settings (include/swzjit/cache.hpp): the canonical,
// length-prefixed field encodings hashed with XXH3-128, and where the cache lives.
#include <pwd.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "runtime/cache/cache_internal.hpp"
#include "swzjit/error.hpp"
#include "swzjit/log.hpp"
#include "swzjit/types.hpp"

namespace swz {

namespace detail {

namespace {

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_u64(const std::string& in, std::size_t& pos) {
  if (in.size() - pos < 8 || pos > in.size()) throw std::runtime_error("truncated list");
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += 8;
  return v;
}

std::string hex128(XXH128_hash_t h) {
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, h);
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (unsigned char b : canon.digest) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace

FieldHasher::FieldHasher(const char* domain) : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_128bits_reset(state_);
  add(domain);
}

FieldHasher::~FieldHasher() { XXH3_freeState(state_); }

void FieldHasher::add(const std::string& bytes) {
  std::string len;
  put_u64(len, bytes.size());
  XXH3_128bits_update(state_, len.data(), len.size());
  XXH3_128bits_update(state_, bytes.data(), bytes.size());
}

void FieldHasher::add_int(std::int64_t v) { add(std::to_string(v)); }

void FieldHasher::add_real(double v) {
  if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  std::string s;
  put_u64(s, bits);
  add(s);
}

void FieldHasher::add_list(const std::vector<std::string>& items) {
  add_int(static_cast<std::int64_t>(items.size()));
  for (const auto& item : items) add(item);
}

std::string FieldHasher::hex() { return hex128(XXH3_128bits_digest(state_)); }

std::string encode_list(const std::vector<std::string>& items) {
  std::string out;
  put_u64(out, items.size());
  for (const auto& item : items) {
    put_u64(out, item.size());
    out += item;
  }
  return out;
}

std::vector<std::string> decode_list(const std::string& blob) {
  std::size_t pos = 0;
  const std::uint64_t n = get_u64(blob, pos);
  if (n > blob.size()) throw std::runtime_error("bad list count");
  std::vector<std::string> items;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t len = get_u64(blob, pos);
    if (len > blob.size() - pos) throw std::runtime_error("truncated list item");
    items.push_back(blob.substr(pos, len));
    pos += len;
  }
  if (pos != blob.size()) throw std::runtime_error("trailing bytes after list");
  return items;
}

std::string kernel_checksum(const std::string& key_hash, const KernelEntry& e) {
  // NOTE: the key is part of the checksum, so a value copied under another key's row fails it.
  FieldHasher h("swzjit.kernel-entry");
  h.add(key_hash);
  h.add(e.image);
  h.add_int(e.is_ptx ? 1 : 0);
  h.add(e.lowered_name);
  h.add_int(e.threads);
  h.add_int(e.dynamic_smem);
  h.add_int(e.registers);
  h.add_int(e.spill_bytes);
  return h.hex();
}

std::string candidate_checksum(const std::string& problem_hash, const CandidateResult& r) {
  FieldHasher h("swzjit.candidate");
  h.add(problem_hash);
  h.add(r.config);
  h.add(r.status);
  h.add(r.reason);
  h.add_real(r.median_ms);
  h.add_real(r.p20_ms);
  h.add_real(r.p80_ms);
  h.add_int(r.repetitions);
  return h.hex();
}

std::string winner_checksum(const std::string& problem_hash, const std::string& space_hash, const Winner& w) {
  FieldHasher h("swzjit.winner");
  h.add(problem_hash);
  h.add(space_hash);
  h.add(w.config);
  h.add_real(w.median_ms);
  return h.hex();
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_known_status(const std::string& status) {
  static const char* const kStatuses[] = {"ok",           "compile-failed", "resource-limit",
                                          "launch-failed", "wrong-result",   "timeout"};
  for (const char* s : kStatuses)
    if (status == s) return true;
  return false;
}

}  // namespace detail

std::string KernelKey::hash() const {
  detail::FieldHasher h("swzjit.kernel-key");
  h.add_int(format_version);
  h.add(templates_hash);
  h.add(name_expression);
  h.add(nvrtc_version);
  h.add_list(options);
  h.add(arch);
  return h.hex();
}

std::string TuningProblemKey::hash() const {
  detail::FieldHasher h("swzjit.problem-key");
  h.add_int(kCacheFormatVersion);
  h.add(operation);
  h.add(problem);
  h.add(device_name);
  h.add(arch);
  h.add_int(sm_count);
  h.add(nvrtc_version);
  h.add(templates_hash);
  return h.hex();
}

bool operator==(const KernelKey& a, const KernelKey& b) {
  return a.format_version == b.format_version && a.templates_hash == b.templates_hash &&
         a.name_expression == b.name_expression && a.nvrtc_version == b.nvrtc_version &&
         a.options == b.options && a.arch == b.arch;
}

bool operator==(const KernelEntry& a, const KernelEntry& b) {
  return a.image == b.image && a.is_ptx == b.is_ptx && a.lowered_name == b.lowered_name &&
         a.threads == b.threads && a.dynamic_smem == b.dynamic_smem && a.registers == b.registers &&
         a.spill_bytes == b.spill_bytes;
}

bool operator==(const CandidateResult& a, const CandidateResult& b) {
  auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  return a.config == b.config && a.status == b.status && a.reason == b.reason && same(a.median_ms, b.median_ms) &&
         same(a.p20_ms, b.p20_ms) && same(a.p80_ms, b.p80_ms) && a.repetitions == b.repetitions;
}

std::string content_hash(const std::string& bytes) {
  return detail::hex128(XXH3_128bits(bytes.data(), bytes.size()));
}

std::string search_space_hash(std::vector<std::string> configs) {
  std::sort(configs.begin(), configs.end());
  configs.erase(std::unique(configs.begin(), configs.end()), configs.end());
  detail::FieldHasher h("swzjit.search-space");
  h.add_list(configs);
  return h.hex();
}

std::string Explanation::text() const {
  std::string out = summary + "\n";
  for (const auto& m : near_misses) {
    out += "  stored entry " + m.key + (m.differences.empty() ? " matches every field given\n" : " differs in:\n");
    for (const auto& d : m.differences)
      out += "    " + d.field + ": wanted '" + d.wanted + "', stored '" + d.stored + "'\n";
  }
  return out;
}

std::uint64_t parse_byte_size(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string allowed = " (allowed: a whole number of bytes, optionally with K, M, G or T, e.g. 10M)";
  if (i == 0) throw Error(ErrorKind::InvalidArgument, "'" + text + "' is not a byte size" + allowed);
  int shift = -1;
  const std::pair<const char*, int> kUnits[] = {{"", 0},    {"B", 0},    {"K", 10},  {"KB", 10}, {"KIB", 10},
                                                {"M", 20},  {"MB", 20},  {"MIB", 20}, {"G", 30}, {"GB", 30},
                                                {"GIB", 30}, {"T", 40},  {"TB", 40}, {"TIB", 40}};
  for (const auto& u : kUnits)
    if (unit == u.first) shift = u.second;
  if (shift < 0) throw Error(ErrorKind::InvalidArgument, "'" + text + "' has an unknown unit" + allowed);
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < i; ++k) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[k] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
      throw Error(ErrorKind::InvalidArgument, "'" + text + "' is too large" + allowed);
    v = v * 10 + d;
  }
  if (shift > 0 && v > (std::numeric_limits<std::uint64_t>::max() >> shift))
    throw Error(ErrorKind::InvalidArgument, "'" + text + "' is too large" + allowed);
  return v << shift;
}

CacheSettings CacheSettings::from_environment() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  CacheSettings s;
  const std::string explicit_dir = env("SWZJIT_CACHE_DIR");
  const std::string xdg = env("XDG_CACHE_HOME");
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = getpwuid(geteuid())) home = pw->pw_dir ? pw->pw_dir : "";
  }
  if (!explicit_dir.empty()) {
    s.directory = explicit_dir;
  } else if (!xdg.empty() && xdg[0] == '/') {  // the XDG spec says relative paths are to be ignored
    s.directory = xdg + "/swzjit";
  } else if (!home.empty()) {
    s.directory = home + "/.cache/swzjit";
  } else {
    log(LogLevel::Warn,
        "no cache directory is known (set SWZJIT_CACHE_DIR, XDG_CACHE_HOME or HOME); running uncached");
  }
  const std::string max_bytes = env("SWZJIT_CACHE_MAX_BYTES");
  if (!max_bytes.empty()) {
    try {
      s.max_bytes = parse_byte_size(max_bytes);
    } catch (const Error& e) {
      log(LogLevel::Warn, std::string("SWZJIT_CACHE_MAX_BYTES: ") + e.what() + "; using the default of 1G");
    }
  }
  const std::string read_only = env("SWZJIT_CACHE_READ_ONLY");
  if (read_only == "1" || read_only == "true" || read_only == "yes") {
    s.read_only = true;
  } else if (!read_only.empty() && read_only != "0" && read_only != "false" && read_only != "no") {
    log(LogLevel::Warn, "SWZJIT_CACHE_READ_ONLY='" + read_only + "' is not 1 or 0; the cache stays writable");
  }
  s.remote_url = env("SWZJIT_REMOTE_CACHE");
  s.remote_key = env("SWZJIT_REMOTE_CACHE_KEY");
  s.remote_key_file = env("SWZJIT_REMOTE_CACHE_KEY_FILE");
  const std::pair<const char*, int*> kMillis[] = {{"SWZJIT_REMOTE_CACHE_TIMEOUT_MS", &s.remote_timeout_ms},
                                                  {"SWZJIT_REMOTE_CACHE_BACKOFF_MS", &s.remote_backoff_ms}};
  for (const auto& m : kMillis) {
    const std::string v = env(m.first);
    if (v.empty()) continue;
    try {
      *m.second = static_cast<int>(parse_integer(m.first, v, 1, 600000));
    } catch (const Error& e) {
      log(LogLevel::Warn, std::string(e.what()) + "; using the default of " + std::to_string(*m.second) + " ms");
    }
  }
  return s;
}

const CacheSettings& default_cache_settings() {
  static const CacheSettings settings = CacheSettings::from_environment();
  return settings;
}

std::string cache_directory() { return default_cache_settings().directory; }

}  // namespace swz
