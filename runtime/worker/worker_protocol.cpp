// runtime: the autotuner <-> benchmark-worker protocol (runtime/worker/worker_protocol.hpp): field encoding,
// message layouts, frame headers and deadline-bounded frame I/O on a socket or pipe.
#include "runtime/worker/worker_protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace swz {
namespace detail {
namespace worker {

const char* to_string(MessageType type) noexcept {
  switch (type) {
    case MessageType::Hello: return "Hello";
    case MessageType::HelloReply: return "HelloReply";
    case MessageType::Support: return "Support";
    case MessageType::SupportReply: return "SupportReply";
    case MessageType::Bench: return "Bench";
    case MessageType::BenchReply: return "BenchReply";
    case MessageType::Retime: return "Retime";
    case MessageType::RetimeReply: return "RetimeReply";
    case MessageType::Quit: return "Quit";
  }
  return "unknown";
}

// --- Writer / Reader ----------------------------------------------------------------------------

namespace {

template <class T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
}

template <class T>
T get_le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

void Writer::u32(std::uint32_t v) { put_le(out_, v); }
void Writer::i64(std::int64_t v) { put_le(out_, static_cast<std::uint64_t>(v)); }
void Writer::u64(std::uint64_t v) { put_le(out_, v); }
void Writer::f64(double v) {
  std::uint64_t bits = 0;
  static_assert(sizeof bits == sizeof v, "IEEE double expected");
  std::memcpy(&bits, &v, sizeof bits);
  put_le(out_, bits);
}
void Writer::str(const std::string& s) {
  u64(s.size());
  out_ += s;
}

const unsigned char* Reader::take(std::size_t n) {
  if (n > in_.size() - pos_)
    throw ProtocolError("payload truncated: needed " + std::to_string(n) + " more bytes at offset " +
                        std::to_string(pos_) + " of " + std::to_string(in_.size()));
  const auto* p = reinterpret_cast<const unsigned char*>(in_.data()) + pos_;
  pos_ += n;
  return p;
}

std::uint32_t Reader::u32() { return get_le<std::uint32_t>(take(4)); }
std::int64_t Reader::i64() { return static_cast<std::int64_t>(get_le<std::uint64_t>(take(8))); }
std::uint64_t Reader::u64() { return get_le<std::uint64_t>(take(8)); }
double Reader::f64() {
  const std::uint64_t bits = get_le<std::uint64_t>(take(8));
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
bool Reader::boolean() {
  const std::uint32_t v = u32();
  if (v > 1) throw ProtocolError("boolean field holds " + std::to_string(v));
  return v == 1;
}
std::string Reader::str() {
  const std::uint64_t n = u64();
  if (n > in_.size() - pos_) throw ProtocolError("string of " + std::to_string(n) + " bytes runs past the payload");
  const unsigned char* p = take(static_cast<std::size_t>(n));
  return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
}
std::size_t Reader::count(std::size_t min_item_bytes) {
  const std::uint64_t n = u64();
  if (min_item_bytes > 0 && n > (in_.size() - pos_) / min_item_bytes)
    throw ProtocolError("list of " + std::to_string(n) + " items cannot fit in the payload");
  return static_cast<std::size_t>(n);
}
void Reader::finish() const {
  if (pos_ != in_.size())
    throw ProtocolError(std::to_string(in_.size() - pos_) + " unexpected bytes after the last field");
}

// --- message layouts ----------------------------------------------------------------------------

namespace {

void write_image(Writer& w, const KernelImage& k) {
  w.str(k.image);
  w.boolean(k.is_ptx);
  w.str(k.arch);
  w.str(k.lowered_name);
}
KernelImage read_image(Reader& r) {
  KernelImage k;
  k.image = r.str();
  k.is_ptx = r.boolean();
  k.arch = r.str();
  k.lowered_name = r.str();
  return k;
}

void write_job(Writer& w, const BenchJob& j) {
  w.u64(j.id);
  w.str(j.config);
  write_image(w, j.kernel);
  for (std::uint32_t v : j.grid) w.u32(v);
  for (std::uint32_t v : j.block) w.u32(v);
  w.u32(j.dynamic_smem);
  w.u64(j.then.size());
  for (const KernelImage& k : j.then) write_image(w, k);
}
BenchJob read_job(Reader& r) {
  BenchJob j;
  j.id = r.u64();
  j.config = r.str();
  j.kernel = read_image(r);
  for (std::uint32_t& v : j.grid) v = r.u32();
  for (std::uint32_t& v : j.block) v = r.u32();
  j.dynamic_smem = r.u32();
  j.then.resize(r.count(8));
  for (KernelImage& k : j.then) k = read_image(r);
  return j;
}

void write_result(Writer& w, const BenchResult& b) {
  w.u64(b.id);
  w.str(b.status);
  w.str(b.reason);
  w.f64(b.median_ms);
  w.f64(b.p20_ms);
  w.f64(b.p80_ms);
  w.i64(b.repetitions);
  w.boolean(b.worker_exiting);
}
BenchResult read_result(Reader& r) {
  BenchResult b;
  b.id = r.u64();
  b.status = r.str();
  b.reason = r.str();
  b.median_ms = r.f64();
  b.p20_ms = r.f64();
  b.p80_ms = r.f64();
  b.repetitions = static_cast<int>(r.i64());
  b.worker_exiting = r.boolean();
  return b;
}

}  // namespace

void HelloRequest::write(Writer& w) const {
  w.i64(device);
  w.u32(static_cast<std::uint32_t>(kind));
  w.str(family.definition);
  w.str(family.problem);
  w.u32(family.seed);
}
HelloRequest HelloRequest::read(Reader& r) {
  HelloRequest m;
  m.device = static_cast<int>(r.i64());
  const std::uint32_t kind = r.u32();
  if (kind != static_cast<std::uint32_t>(ProblemKind::Family))
    throw ProtocolError("unknown problem kind " + std::to_string(kind));
  m.kind = static_cast<ProblemKind>(kind);
  m.family.definition = r.str();
  m.family.problem = r.str();
  m.family.seed = r.u32();
  return m;
}

void HelloReply::write(Writer& w) const {
  w.boolean(ok);
  w.i64(error_kind);
  w.str(error);
  w.str(device_name);
  w.str(arch);
  w.i64(sm_count);
  w.i64(l2_bytes);
  w.f64(init_ms);
}
HelloReply HelloReply::read(Reader& r) {
  HelloReply m;
  m.ok = r.boolean();
  m.error_kind = static_cast<int>(r.i64());
  m.error = r.str();
  m.device_name = r.str();
  m.arch = r.str();
  m.sm_count = static_cast<int>(r.i64());
  m.l2_bytes = r.i64();
  m.init_ms = r.f64();
  return m;
}

void SupportRequest::write(Writer& w) const {
  write_image(w, check);
  write_image(w, reference);
}
SupportRequest SupportRequest::read(Reader& r) {
  SupportRequest m;
  m.check = read_image(r);
  m.reference = read_image(r);
  return m;
}

void SupportReply::write(Writer& w) const {
  w.boolean(ok);
  w.i64(error_kind);
  w.str(error);
  w.f64(fill_ms);
}
SupportReply SupportReply::read(Reader& r) {
  SupportReply m;
  m.ok = r.boolean();
  m.error_kind = static_cast<int>(r.i64());
  m.error = r.str();
  m.fill_ms = r.f64();
  return m;
}

void BenchRequest::write(Writer& w) const {
  write_job(w, job);
  w.i64(timing.warmup);
  w.i64(timing.min_reps);
  w.i64(timing.max_reps);
  w.f64(timing.target_ms);
}
BenchRequest BenchRequest::read(Reader& r) {
  BenchRequest m;
  m.job = read_job(r);
  m.timing.warmup = static_cast<int>(r.i64());
  m.timing.min_reps = static_cast<int>(r.i64());
  m.timing.max_reps = static_cast<int>(r.i64());
  m.timing.target_ms = r.f64();
  return m;
}

void BenchReply::write(Writer& w) const { write_result(w, result); }
BenchReply BenchReply::read(Reader& r) {
  BenchReply m;
  m.result = read_result(r);
  return m;
}

void RetimeRequest::write(Writer& w) const {
  w.u64(jobs.size());
  for (const auto& j : jobs) write_job(w, j);
  w.i64(rounds);
  w.i64(reps_per_round);
  w.i64(warmup_rounds);
}
RetimeRequest RetimeRequest::read(Reader& r) {
  RetimeRequest m;
  const std::size_t n = r.count(8);
  for (std::size_t i = 0; i < n; ++i) m.jobs.push_back(read_job(r));
  m.rounds = static_cast<int>(r.i64());
  m.reps_per_round = static_cast<int>(r.i64());
  m.warmup_rounds = static_cast<int>(r.i64());
  return m;
}

void RetimeReply::write(Writer& w) const {
  w.u64(results.size());
  for (const auto& b : results) write_result(w, b);
}
RetimeReply RetimeReply::read(Reader& r) {
  RetimeReply m;
  const std::size_t n = r.count(8);
  for (std::size_t i = 0; i < n; ++i) m.results.push_back(read_result(r));
  return m;
}

// --- frames -------------------------------------------------------------------------------------

std::string encode_header(MessageType type, std::uint64_t payload_bytes) {
  std::string h;
  put_le(h, kMagic);
  put_le(h, kProtocolVersion);
  put_le(h, static_cast<std::uint16_t>(type));
  put_le(h, payload_bytes);
  return h;
}

void decode_header(const unsigned char* header, MessageType* type, std::uint64_t* payload_bytes) {
  const auto magic = get_le<std::uint32_t>(header);
  if (magic != kMagic)
    throw ProtocolError("not a swz-worker stream (bad magic 0x" + [&] {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%08x", magic);
      return std::string(buf);
    }() + ")");
  const auto version = get_le<std::uint16_t>(header + 4);
  if (version != kProtocolVersion)
    throw ProtocolError("protocol version " + std::to_string(version) + ", expected " +
                        std::to_string(kProtocolVersion) +
                        " (the worker and the library come from different builds; point SWZJIT_WORKER at the "
                        "swz-worker built with this library)");
  const auto t = get_le<std::uint16_t>(header + 6);
  if (t < static_cast<std::uint16_t>(MessageType::Hello) || t > static_cast<std::uint16_t>(MessageType::Quit))
    throw ProtocolError("unknown message type " + std::to_string(t));
  const auto n = get_le<std::uint64_t>(header + 8);
  if (n > kMaxPayloadBytes)
    throw ProtocolError("payload of " + std::to_string(n) + " bytes exceeds the limit of " +
                        std::to_string(kMaxPayloadBytes));
  *type = static_cast<MessageType>(t);
  *payload_bytes = n;
}

namespace {

// Waits until `fd` can be written, or `deadline` passes (false).
bool wait_writable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (ready > 0) return true;  // writable, or an error the write itself reports
    if (ready < 0 && errno != EINTR) return true;
  }
}

}  // namespace

bool write_all(int fd, const std::string& bytes, double timeout_s, bool* timed_out) {
  if (timed_out) *timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, timeout_s)));
  std::size_t done = 0;
  bool socket = true;
  while (done < bytes.size()) {
    // A socket never blocks here (MSG_DONTWAIT): a full buffer waits in poll, against the deadline.
    ssize_t n = socket ? ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
    if (n < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (!socket) {
      if (!wait_writable(fd, deadline)) {
        if (timed_out) *timed_out = true;
        return false;
      }
      n = ::write(fd, bytes.data() + done, bytes.size() - done);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (wait_writable(fd, deadline)) continue;
        if (timed_out) *timed_out = true;
        return false;
      }
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// Reads exactly `n` bytes before `deadline` (none: forever). Returns the bytes read so far when the
// stream ends or the deadline passes first.
std::size_t read_some(int fd, unsigned char* dst, std::size_t n, bool has_deadline, Clock::time_point deadline,
                      bool* timed_out) {
  std::size_t got = 0;
  *timed_out = false;
  while (got < n) {
    int wait_ms = -1;
    if (has_deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        *timed_out = true;
        return got;
      }
      wait_ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return got;
    }
    if (ready == 0) continue;  // the deadline check above decides
    const ssize_t r = ::read(fd, dst + got, n - got);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return got;  // ECONNRESET and kin: the peer is gone
    }
    if (r == 0) return got;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

ReadStatus read_frame(int fd, Frame* frame, double timeout_s) {
  const bool has_deadline = timeout_s >= 0;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(has_deadline ? timeout_s : 0));
  unsigned char header[kHeaderBytes];
  bool timed_out = false;
  const std::size_t got = read_some(fd, header, kHeaderBytes, has_deadline, deadline, &timed_out);
  if (got == 0 && !timed_out) return ReadStatus::Eof;
  if (got < kHeaderBytes) {
    if (timed_out) return ReadStatus::Timeout;
    throw ProtocolError("the stream ended inside a frame header (" + std::to_string(got) + " of 16 bytes)");
  }
  std::uint64_t n = 0;
  decode_header(header, &frame->type, &n);
  // The payload grows as bytes arrive (1 MiB at a time): a header announcing a large payload costs
  // nothing until the bytes come, so a peer that stops early is seen at once, not after zeroing it all.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  frame->payload.clear();
  std::size_t body = 0;
  while (body < n) {
    const std::size_t want = std::min<std::size_t>(kChunk, static_cast<std::size_t>(n) - body);
    frame->payload.resize(body + want);
    const std::size_t r = read_some(fd, reinterpret_cast<unsigned char*>(&frame->payload[body]), want, has_deadline,
                                    deadline, &timed_out);
    body += r;
    if (r < want) {
      frame->payload.resize(body);
      break;
    }
  }
  if (body < n) {
    if (timed_out) return ReadStatus::Timeout;
    throw ProtocolError("the stream ended inside a " + std::string(to_string(frame->type)) + " payload (" +
                        std::to_string(body) + " of " + std::to_string(n) + " bytes)");
  }
  return ReadStatus::Ok;
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
