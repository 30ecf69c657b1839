// runtime: the value format of the remote (Redis) tier (see remote.hpp): length-prefixed fields of
// the entry and its complete key, its checksum, and an HMAC-SHA-256 over the Redis key and payload.
#include <cstring>
#include <stdexcept>

#include "runtime/cache/cache_internal.hpp"
#include "runtime/cache/cache_sign.hpp"
#include "runtime/cache/remote.hpp"

namespace swz {
namespace detail {

namespace {

constexpr const char* kKernelMagic = "swzjit-remote-kernel-v1";
constexpr const char* kWinnerMagic = "swzjit-remote-winner-v1";
constexpr std::size_t kMacHexDigits = 64;

class Writer {
 public:
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void real(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

/// Reads what Writer wrote; a short or overlong value throws std::runtime_error ("truncated").
class Reader {
 public:
  explicit Reader(const std::string& in, std::size_t pos = 0) : in_(in), pos_(pos) {}
  std::uint64_t u64() {
    if (in_.size() - pos_ < 8) throw std::runtime_error("the value is truncated");
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return v;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  int int32() {
    const std::int64_t v = i64();
    if (v < -2147483647LL || v > 2147483647LL) throw std::runtime_error("a field is out of range");
    return static_cast<int>(v);
  }
  double real() {
    const std::uint64_t bits = u64();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > in_.size() - pos_) throw std::runtime_error("the value is truncated");
    std::string s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  const std::string& in_;
  std::size_t pos_;
};

std::string mac_of(const std::string& mac_key, const std::string& redis_key, const std::string& payload) {
  ExportMac mac(mac_key);
  mac.add_marker("swzjit-remote-entry-v1");
  mac.add_marker(redis_key);
  mac.add_marker(payload);
  return mac.hex();
}

/// value = str(mac hex or "") + payload.
std::string seal(const std::string& redis_key, const std::string& payload, const std::string& mac_key) {
  Writer w;
  w.str(mac_key.empty() ? std::string() : mac_of(mac_key, redis_key, payload));
  return w.bytes() + payload;
}

/// The payload of a sealed value, or throws naming why it is not trusted.
std::string unseal(const std::string& redis_key, const std::string& value, const std::string& mac_key) {
  Reader r(value);
  const std::string tag = r.str();
  std::string payload = value.substr(r.pos());
  if (mac_key.empty()) return payload;
  if (tag.empty()) throw std::runtime_error("it is unsigned and this process has a signing key");
  if (tag.size() != kMacHexDigits || !same_signature(tag, mac_of(mac_key, redis_key, payload)))
    throw std::runtime_error("its signature does not match (tampered, truncated, or signed with another key)");
  return payload;
}

}  // namespace

std::string encode_remote_kernel(const std::string& redis_key, const KernelKey& key, const KernelEntry& entry,
                                 const std::string& mac_key) {
  const std::string hash = key.hash();
  Writer w;
  w.str(kKernelMagic);
  w.str(hash);
  w.i64(key.format_version);
  w.str(key.templates_hash);
  w.str(key.name_expression);
  w.str(key.nvrtc_version);
  w.str(encode_list(key.options));
  w.str(key.arch);
  w.str(entry.image);
  w.i64(entry.is_ptx ? 1 : 0);
  w.str(entry.lowered_name);
  w.i64(entry.threads);
  w.i64(entry.dynamic_smem);
  w.i64(entry.registers);
  w.i64(entry.spill_bytes);
  w.str(kernel_checksum(hash, entry));
  return seal(redis_key, w.bytes(), mac_key);
}

std::optional<KernelEntry> decode_remote_kernel(const std::string& redis_key, const std::string& value,
                                                const KernelKey& key, const std::string& mac_key, std::string& why) {
  try {
    const std::string payload = unseal(redis_key, value, mac_key);
    Reader r(payload);
    if (r.str() != kKernelMagic) throw std::runtime_error("it is not a kernel entry of this format");
    const std::string hash = r.str();
    KernelKey k;
    k.format_version = r.int32();
    k.templates_hash = r.str();
    k.name_expression = r.str();
    k.nvrtc_version = r.str();
    k.options = decode_list(r.str());
    k.arch = r.str();
    KernelEntry e;
    e.image = r.str();
    e.is_ptx = r.i64() != 0;
    e.lowered_name = r.str();
    e.threads = r.int32();
    e.dynamic_smem = r.int32();
    e.registers = r.int32();
    e.spill_bytes = r.int32();
    const std::string checksum = r.str();
    if (!r.at_end()) throw std::runtime_error("it has bytes after its last field");
    if (hash != key.hash() || k != key || k.hash() != hash)
      throw std::runtime_error("it belongs to another key (foreign or moved entry)");
    if (kernel_checksum(hash, e) != checksum) throw std::runtime_error("its checksum does not match its bytes");
    return e;
  } catch (const std::exception& ex) {
    why = ex.what();
    return std::nullopt;
  }
}

std::string encode_remote_winner(const std::string& redis_key, const TuningProblemKey& problem,
                                 const std::string& space_hash, const Winner& win, const std::string& mac_key) {
  const std::string hash = problem.hash();
  Writer w;
  w.str(kWinnerMagic);
  w.str(hash);
  w.str(space_hash);
  w.str(problem.operation);
  w.str(problem.problem);
  w.str(problem.device_name);
  w.str(problem.arch);
  w.i64(problem.sm_count);
  w.str(problem.nvrtc_version);
  w.str(problem.templates_hash);
  w.str(win.config);
  w.real(win.median_ms);
  w.str(winner_checksum(hash, space_hash, win));
  return seal(redis_key, w.bytes(), mac_key);
}

std::optional<Winner> decode_remote_winner(const std::string& redis_key, const std::string& value,
                                           const TuningProblemKey& problem, const std::string& space_hash,
                                           const std::string& mac_key, std::string& why) {
  try {
    const std::string payload = unseal(redis_key, value, mac_key);
    Reader r(payload);
    if (r.str() != kWinnerMagic) throw std::runtime_error("it is not a tuning winner of this format");
    const std::string hash = r.str();
    const std::string space = r.str();
    TuningProblemKey p;
    p.operation = r.str();
    p.problem = r.str();
    p.device_name = r.str();
    p.arch = r.str();
    p.sm_count = r.int32();
    p.nvrtc_version = r.str();
    p.templates_hash = r.str();
    Winner w;
    w.config = r.str();
    w.median_ms = r.real();
    const std::string checksum = r.str();
    if (!r.at_end()) throw std::runtime_error("it has bytes after its last field");
    const bool same = p.operation == problem.operation && p.problem == problem.problem &&
                      p.device_name == problem.device_name && p.arch == problem.arch &&
                      p.sm_count == problem.sm_count && p.nvrtc_version == problem.nvrtc_version &&
                      p.templates_hash == problem.templates_hash;
    if (!same || hash != problem.hash() || p.hash() != hash || space != space_hash)
      throw std::runtime_error("it belongs to another problem or GPU (foreign or moved entry)");
    if (w.config.empty()) throw std::runtime_error("its config is empty");
    if (winner_checksum(hash, space, w) != checksum) throw std::runtime_error("its checksum does not match its bytes");
    return w;
  } catch (const std::exception& ex) {
    why = ex.what();
    return std::nullopt;
  }
}

}  // namespace detail
}  // namespace swz
