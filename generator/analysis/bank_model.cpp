// generator: the shared-memory bank model of docs/ARCHITECTURE.md ("The bank model"), include/swzjit/analysis/bank.hpp.
// Costs one warp-wide lds/sts/ldmatrix in wavefronts; the swizzle solver and `swz bank` build on it.
#include "swzjit/analysis/bank.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "swzjit/error.hpp"

namespace swz {

namespace {

constexpr int kBanks = 32;
constexpr int kBankBytes = 4;
constexpr int kWavefrontBytes = kBanks * kBankBytes;  // 128 bytes served per wavefront
constexpr int kWarpLanes = 32;
// Far beyond any shared memory; keeps address + width and the word arithmetic clear of overflow.
constexpr long long kMaxAddress = 1LL << 40;

bool is_ldmatrix(SmemOp op) {
  return op == SmemOp::LdmatrixX1 || op == SmemOp::LdmatrixX2 || op == SmemOp::LdmatrixX4;
}

// How the instruction splits into phases: `count` phases of `lanes` lanes each.
struct PhaseShape {
  int count;
  int lanes;
};

PhaseShape phase_shape(SmemOp op, int width) {
  switch (op) {
    case SmemOp::LdmatrixX1: return {1, 8};
    case SmemOp::LdmatrixX2: return {2, 8};
    case SmemOp::LdmatrixX4: return {4, 8};
    case SmemOp::Lds:
    case SmemOp::Sts: break;
  }
  if (width <= 4) return {1, 32};
  if (width == 8) return {2, 16};
  return {4, 8};
}

void validate(const SmemInstruction& in) {
  if (!width_allowed(in.op, in.width))
    throw_invalid("width: " + std::to_string(in.width) + " bytes is not allowed for " + to_string(in.op) +
                  " (allowed: " + allowed_widths(in.op) + ")");
  if (in.addresses.size() > static_cast<std::size_t>(kWarpLanes))
    throw_invalid("addresses: " + std::to_string(in.addresses.size()) +
                  " lanes given, but a warp has at most 32 (one address per active lane)");
  for (std::size_t lane = 0; lane < in.addresses.size(); ++lane) {
    const long long a = in.addresses[lane];
    if (a < 0)
      throw_invalid("addresses: lane " + std::to_string(lane) + " has negative address " + std::to_string(a) +
                    " (allowed: byte offsets >= 0)");
    if (a > kMaxAddress)
      throw_invalid("addresses: lane " + std::to_string(lane) + " address " + std::to_string(a) +
                    " is past 2^40 bytes (allowed: byte offsets in [0, 2^40])");
    if (a % in.width != 0)
      throw_invalid("addresses: lane " + std::to_string(lane) + " address " + std::to_string(a) +
                    " is not aligned to the access width of " + std::to_string(in.width) +
                    " bytes (allowed: multiples of " + std::to_string(in.width) + ")");
  }
}

// Cost one phase: lanes [first, first + lanes) of `in`.
PhaseCost cost_phase(const SmemInstruction& in, int first, int lanes) {
  PhaseCost pc;
  pc.first_lane = first;
  pc.lane_count = lanes;

  // NOTE: a phase touches at most 128 bytes' worth of lane slots (32x4, 16x8, 8x16), i.e. at most
  // 32 word slots and 32 intervals, so fixed arrays suffice and the solver's inner loop never allocates.
  std::array<long long, 32> words{};
  std::array<long long, 32> starts{};
  int n_words = 0;
  int n_lanes = 0;
  const int end = std::min<int>(first + lanes, static_cast<int>(in.addresses.size()));
  for (int lane = first; lane < end; ++lane) {
    const long long a = in.addresses[static_cast<std::size_t>(lane)];
    starts[static_cast<std::size_t>(n_lanes++)] = a;
    // every 4-byte word overlapping [a, a + width)
    for (long long w = a / kBankBytes; w <= (a + in.width - 1) / kBankBytes; ++w) {
      if (n_words == static_cast<int>(words.size()))
        throw Error(ErrorKind::Internal, "bank model: a phase touches more than 32 word slots");
      words[static_cast<std::size_t>(n_words++)] = w;
    }
  }
  pc.active_lanes = n_lanes;
  if (n_lanes == 0) return pc;  // not issued: 0 wavefronts, 0 ideal, max_way 0

  std::sort(words.begin(), words.begin() + n_words);
  n_words = static_cast<int>(std::unique(words.begin(), words.begin() + n_words) - words.begin());
  std::array<int, kBanks> per_bank{};
  for (int i = 0; i < n_words; ++i) ++per_bank[static_cast<std::size_t>(words[static_cast<std::size_t>(i)] % kBanks)];
  for (int b = 0; b < kBanks; ++b) {
    if (per_bank[static_cast<std::size_t>(b)] > pc.max_way) {
      pc.max_way = per_bank[static_cast<std::size_t>(b)];
      pc.worst_bank = b;
    }
  }
  pc.wavefronts = std::max(1, pc.max_way);

  // Distinct bytes = size of the union of the lanes' [a, a + width) intervals.
  std::sort(starts.begin(), starts.begin() + n_lanes);
  long long bytes = 0;
  long long covered_to = -1;  // union so far ends before this byte
  for (int i = 0; i < n_lanes; ++i) {
    const long long lo = std::max(starts[static_cast<std::size_t>(i)], covered_to);
    const long long hi = starts[static_cast<std::size_t>(i)] + in.width;
    if (hi > lo) bytes += hi - lo;
    covered_to = std::max(covered_to, hi);
  }
  pc.ideal_wavefronts = static_cast<int>((bytes + kWavefrontBytes - 1) / kWavefrontBytes);
  return pc;
}

}  // namespace

SmemOp parse_smem_op(const std::string& text, bool* trans) {
  static const char* const kAllowed =
      " (allowed: lds, sts, ldmatrix.x1, ldmatrix.x2, ldmatrix.x4; ldmatrix may end in .trans)";
  std::string base = text;
  bool is_trans = false;
  const std::string suffix = ".trans";
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) {
    base.resize(base.size() - suffix.size());
    is_trans = true;
  }
  SmemOp op;
  if (base == "lds") op = SmemOp::Lds;
  else if (base == "sts") op = SmemOp::Sts;
  else if (base == "ldmatrix.x1") op = SmemOp::LdmatrixX1;
  else if (base == "ldmatrix.x2") op = SmemOp::LdmatrixX2;
  else if (base == "ldmatrix.x4") op = SmemOp::LdmatrixX4;
  else throw_invalid("op: '" + text + "' is not a shared-memory operation" + kAllowed);
  if (is_trans && !is_ldmatrix(op))
    throw_invalid("op: '" + text + "': .trans applies only to ldmatrix" + kAllowed);
  if (trans) *trans = is_trans;
  return op;
}

std::string to_string(SmemOp op) {
  switch (op) {
    case SmemOp::Lds: return "lds";
    case SmemOp::Sts: return "sts";
    case SmemOp::LdmatrixX1: return "ldmatrix.x1";
    case SmemOp::LdmatrixX2: return "ldmatrix.x2";
    case SmemOp::LdmatrixX4: return "ldmatrix.x4";
  }
  return "unknown";
}

int default_width(SmemOp op) { return is_ldmatrix(op) ? 16 : 4; }

bool width_allowed(SmemOp op, int width) {
  if (is_ldmatrix(op)) return width == 16;
  return width == 1 || width == 2 || width == 4 || width == 8 || width == 16;
}

std::string allowed_widths(SmemOp op) { return is_ldmatrix(op) ? "16" : "1, 2, 4, 8, 16"; }

void analyze_bank(const SmemInstruction& instruction, BankReport& out) {
  validate(instruction);
  const PhaseShape shape = phase_shape(instruction.op, instruction.width);
  out.wavefronts = out.ideal_wavefronts = out.excess_wavefronts = out.max_way = 0;
  out.phases.clear();
  for (int p = 0; p < shape.count; ++p) {
    const PhaseCost pc = cost_phase(instruction, p * shape.lanes, shape.lanes);
    out.wavefronts += pc.wavefronts;
    out.ideal_wavefronts += pc.ideal_wavefronts;
    out.max_way = std::max(out.max_way, pc.max_way);
    out.phases.push_back(pc);
  }
  out.excess_wavefronts = out.wavefronts - out.ideal_wavefronts;
}

BankReport analyze_bank(const SmemInstruction& instruction) {
  BankReport report;
  analyze_bank(instruction, report);
  return report;
}

}  // namespace swz
