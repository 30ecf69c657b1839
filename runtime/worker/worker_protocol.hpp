// runtime (internal): the binary protocol between the autotuner (runtime/tune/autotune.cpp, through
// runtime/worker/worker_client.cpp) and its benchmark worker process (runtime/worker/worker_server.cpp, swz-worker).
//
// A stream of frames, each a 16-byte header then a payload:
//   u32 magic 'SWZW' | u16 protocol version | u16 message type | u64 payload bytes | payload
// Payload fields are little-endian fixed-width integers and IEEE doubles; strings and byte blobs are a
// u64 length then the bytes; lists are a u64 count then the items. Every request gets exactly one
// reply, in order:
//   Hello{device, kind, family}   -> HelloReply   the worker initializes CUDA and allocates the family's
//                                                 buffers
//   Support{check, reference}     -> SupportReply it loads the check kernel, fills the inputs and runs the
//                                                 reference once
//   Bench{job, timing}            -> BenchReply   verify one candidate, then time it
//   Retime{jobs, rounds}          -> RetimeReply  verify, then time several candidates round-robin
//   Quit                          (no reply)      the worker exits
// A reply with worker_exiting set (a sticky CUDA error) is the worker's last word.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "swzjit/error.hpp"

namespace swz {
namespace detail {
namespace worker {

constexpr std::uint32_t kMagic = 0x57575A53u;  // "SZWW" in memory order: 'S' 'Z' 'W' 'W'
// 3: split-K (BenchJob k_splits/k_slice, Support splitk_reduce); 4: Retime warmup_rounds;
// 5: declared families (ProblemKind::Family, FamilyDesc); 6: no transpose kind (transposes are the
// built-in family "transpose"; kind 0 and ProblemDesc are gone); 7: BenchJob then (a family's later launches);
// 8: a family's buffers may be "inout" (an older worker would refuse the definition); 9: a family may name a
// C++ program ("program = ID", FamilyDef::program) that the worker takes from its own built-ins (the Hopper
// GEMM's candidates are the family gemm_sm90's, no longer "sm90:" GEMM jobs); 10: no GEMM kind (the mma.sync
// GEMM's candidates are the families sgemm/hgemm's: kind 1, GemmDesc, BenchJob k_splits/k_slice and Support
// splitk_reduce are gone)
constexpr std::uint16_t kProtocolVersion = 10;
constexpr std::size_t kHeaderBytes = 16;
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{256} << 20;  // kernel images are far smaller

enum class MessageType : std::uint16_t {
  Hello = 1,
  HelloReply = 2,
  Support = 3,
  SupportReply = 4,
  Bench = 5,
  BenchReply = 6,
  Retime = 7,
  RetimeReply = 8,
  Quit = 9,
};
const char* to_string(MessageType type) noexcept;

/// A malformed or unexpected stream: bad magic, another protocol version, a truncated payload.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& message) : Error(ErrorKind::Internal, "worker protocol: " + message) {}
};

// --- payload encoding ---------------------------------------------------------------------------

class Writer {
 public:
  void u32(std::uint32_t v);
  void i64(std::int64_t v);
  void u64(std::uint64_t v);
  void f64(double v);
  void boolean(bool v) { u32(v ? 1 : 0); }
  void str(const std::string& s);
  const std::string& bytes() const noexcept { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : in_(bytes) {}
  std::uint32_t u32();
  std::int64_t i64();
  std::uint64_t u64();
  double f64();
  bool boolean();
  std::string str();
  /// A list count, checked against the bytes left (each item takes at least `min_item_bytes`).
  std::size_t count(std::size_t min_item_bytes);
  /// Throws unless every byte was read.
  void finish() const;

 private:
  const unsigned char* take(std::size_t n);
  const std::string& in_;
  std::size_t pos_ = 0;
};

// --- messages -----------------------------------------------------------------------------------

/// What the worker tunes: the kind of problem a Hello carries (0, once the transpose kind, and 1, once the
/// GEMM kind, are refused: every problem is a declared family's).
enum class ProblemKind : std::uint32_t { Family = 2 };

/// A declared family's problem (include/swzjit/family.hpp): the definition in its text form (the worker
/// rebuilds the Family from it: sizes, launch shapes and arguments come from the same expressions), the
/// problem as "dim=value,..." text, and the seed of the random inputs. The Support request's `reference`
/// is the family's reference kernel and its `check` the family check kernel (templates/family_check.cuh),
/// which compares outputs on the GPU by relative Frobenius error per buffer.
struct FamilyDesc {
  std::string definition;
  std::string problem;
  std::uint32_t seed = 0;
};

/// A loadable kernel: what swz::Module needs.
struct KernelImage {
  std::string image;
  bool is_ptx = false;
  std::string arch;
  std::string lowered_name;
};

/// How to time one candidate: warm-up launches, then enough repetitions for `target_ms` of kernel
/// time, at least min_reps and at most max_reps, each after an L2 flush.
struct TimingSettings {
  int warmup = 1;
  int min_reps = 10;
  int max_reps = 100;
  double target_ms = 20;
};

/// One candidate: its kernel (a declared family's launch) and launch shape, with its dynamic shared memory
/// in bytes.
struct BenchJob {
  std::uint64_t id = 0;
  std::string config;
  KernelImage kernel;
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t block[3] = {1, 1, 1};
  std::uint32_t dynamic_smem = 0;
  /// A declared family's `then` launches (FamilyDef::then) in order: the worker runs them after the
  /// kernel, verified and timed together, with shapes and arguments it evaluates from the definition.
  std::vector<KernelImage> then;
};

/// A candidate's outcome. status: ok, resource-limit, launch-failed, wrong-result, or "" for a job
/// the worker never reached (it stopped at an earlier job's sticky error).
struct BenchResult {
  std::uint64_t id = 0;
  std::string status;
  std::string reason;
  double median_ms = 0, p20_ms = 0, p80_ms = 0;
  int repetitions = 0;
  bool worker_exiting = false;  ///< a sticky error: the worker exits after this reply
};

struct HelloRequest {
  static constexpr MessageType kType = MessageType::Hello;
  int device = 0;
  ProblemKind kind = ProblemKind::Family;
  FamilyDesc family;
  void write(Writer& w) const;
  static HelloRequest read(Reader& r);
};

struct HelloReply {
  static constexpr MessageType kType = MessageType::HelloReply;
  bool ok = false;
  int error_kind = 0;  ///< swz::ErrorKind when !ok
  std::string error;
  std::string device_name, arch;
  int sm_count = 0;
  long long l2_bytes = 0;
  double init_ms = 0;  ///< CUDA initialization and allocations, in the worker
  void write(Writer& w) const;
  static HelloReply read(Reader& r);
};

struct SupportRequest {
  static constexpr MessageType kType = MessageType::Support;
  KernelImage check;      ///< the family check kernel (templates/family_check.cuh)
  KernelImage reference;  ///< the family's reference kernel
  void write(Writer& w) const;
  static SupportRequest read(Reader& r);
};

struct SupportReply {
  static constexpr MessageType kType = MessageType::SupportReply;
  bool ok = false;
  int error_kind = 0;
  std::string error;
  double fill_ms = 0;
  void write(Writer& w) const;
  static SupportReply read(Reader& r);
};

struct BenchRequest {
  static constexpr MessageType kType = MessageType::Bench;
  BenchJob job;
  TimingSettings timing;
  void write(Writer& w) const;
  static BenchRequest read(Reader& r);
};

struct BenchReply {
  static constexpr MessageType kType = MessageType::BenchReply;
  BenchResult result;
  void write(Writer& w) const;
  static BenchReply read(Reader& r);
};

/// Re-time several verified candidates interleaved: `warmup_rounds` untimed rounds, then `rounds` timed
/// rounds, each running every candidate `reps_per_round` times (each run after an L2 flush, as in Bench),
/// so slow drifts (clocks, temperature) hit all of them alike and none is timed on an idle GPU.
struct RetimeRequest {
  static constexpr MessageType kType = MessageType::Retime;
  std::vector<BenchJob> jobs;
  int rounds = 10;
  int reps_per_round = 1;
  int warmup_rounds = 0;
  void write(Writer& w) const;
  static RetimeRequest read(Reader& r);
};

struct RetimeReply {
  static constexpr MessageType kType = MessageType::RetimeReply;
  std::vector<BenchResult> results;  ///< one per job, in the request's order
  void write(Writer& w) const;
  static RetimeReply read(Reader& r);
};

struct QuitRequest {
  static constexpr MessageType kType = MessageType::Quit;
  void write(Writer&) const {}
  static QuitRequest read(Reader&) { return {}; }
};

// --- frames -------------------------------------------------------------------------------------

struct Frame {
  MessageType type = MessageType::Quit;
  std::string payload;
};

/// The 16-byte header of a frame carrying `payload_bytes`.
std::string encode_header(MessageType type, std::uint64_t payload_bytes);
/// Parses a header; throws ProtocolError for a bad magic, version, type or size.
void decode_header(const unsigned char* header, MessageType* type, std::uint64_t* payload_bytes);

template <class M>
std::string encode(const M& message) {
  Writer w;
  message.write(w);
  return encode_header(M::kType, w.bytes().size()) + w.bytes();
}

template <class M>
M decode(const Frame& frame) {
  if (frame.type != M::kType)
    throw ProtocolError(std::string("expected a ") + to_string(M::kType) + " message, got " + to_string(frame.type));
  Reader r(frame.payload);
  M m = M::read(r);
  r.finish();
  return m;
}

/// Writes all of `bytes` to `fd` (a socket without SIGPIPE, else a plain write) within `timeout_s`
/// seconds (0: only what fits at once). False if the other end is gone, or the time ran out while it
/// was not reading (then `*timed_out` is set).
bool write_all(int fd, const std::string& bytes, double timeout_s, bool* timed_out = nullptr);

enum class ReadStatus { Ok, Eof, Timeout };
/// Reads one frame. `timeout_s` < 0 waits forever. Eof only at a frame boundary; a stream that ends
/// inside a frame, or a bad header, throws ProtocolError.
ReadStatus read_frame(int fd, Frame* frame, double timeout_s);

}  // namespace worker
}  // namespace detail
}  // namespace swz
