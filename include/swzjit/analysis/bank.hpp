// swzjit public API: the shared-memory bank model of docs/ARCHITECTURE.md ("The bank model").
// 32 banks of 4 bytes; an instruction splits into phases; a phase costs the largest number of
// distinct 4-byte words any one bank must serve; the ideal is ceil(distinct bytes / 128) per phase.
#pragma once

#include <string>
#include <vector>

namespace swz {

/// A warp-wide shared-memory operation.
enum class SmemOp { Lds, Sts, LdmatrixX1, LdmatrixX2, LdmatrixX4 };

/// Parse "lds", "sts", "ldmatrix.x1|x2|x4" (a ".trans" suffix is accepted; addressing is the same).
/// Throws InvalidArgument naming what is allowed.
SmemOp parse_smem_op(const std::string& text, bool* trans = nullptr);
std::string to_string(SmemOp op);

/// One warp-wide instruction: the byte address of each active lane, in lane order (at most 32).
struct SmemInstruction {
  SmemOp op = SmemOp::Lds;
  int width = 4;                    ///< bytes per lane: 1, 2, 4, 8, 16 (ldmatrix: always 16)
  std::vector<long long> addresses; ///< lane i's byte address; lanes past the end are inactive
};

/// The cost of one phase of an instruction.
struct PhaseCost {
  int first_lane = 0;          ///< lanes [first_lane, first_lane + lane_count) form the phase
  int lane_count = 0;
  int active_lanes = 0;
  int wavefronts = 0;          ///< max over banks of distinct 4-byte words (>= 1 if any lane active)
  int ideal_wavefronts = 0;    ///< ceil(distinct bytes / 128)
  int max_way = 0;             ///< the worst bank's number of distinct words
  int worst_bank = -1;         ///< lowest-numbered bank with max_way words; -1 if no lane active
};

/// The cost of an instruction: sums over its phases (max_way is the maximum).
struct BankReport {
  int wavefronts = 0;
  int ideal_wavefronts = 0;
  int excess_wavefronts = 0;
  int max_way = 0;
  std::vector<PhaseCost> phases;
};

/// Throws InvalidArgument on: more than 32 lanes, a width not allowed for the op, a negative
/// address or one past 2^40 bytes, an address not aligned to the access width. Every message starts with the name of the
/// offending field ("op", "width", "addresses") and says what is allowed.
///
/// Phases: widths 1, 2, 4 form one phase of lanes 0-31; width 8 two phases of 16 lanes; width 16
/// four phases of 8 lanes; ldmatrix.xN N phases of 8 lanes (lanes 8N and up are ignored, though
/// their addresses are still validated). Every phase of the instruction is listed; a phase with no
/// active lane is not issued and costs 0 wavefronts (0 ideal, max_way 0).
BankReport analyze_bank(const SmemInstruction& instruction);
/// The same, reusing `out`'s storage (the solver calls this in its inner loop).
void analyze_bank(const SmemInstruction& instruction, BankReport& out);

/// Adds one instruction's report to a running total: any struct with `instructions`, `wavefronts`,
/// `ideal_wavefronts`, `excess_wavefronts` and `max_way` (SmemInstrStats, PatternCost, EpilogueCost).
template <class Totals>
void add_instruction_cost(Totals& totals, const BankReport& r) {
  ++totals.instructions;
  totals.wavefronts += r.wavefronts;
  totals.ideal_wavefronts += r.ideal_wavefronts;
  totals.excess_wavefronts += r.excess_wavefronts;
  if (r.max_way > totals.max_way) totals.max_way = r.max_way;
}

/// Default access width of an op: 4 for lds/sts, 16 for ldmatrix.
int default_width(SmemOp op);
/// True if `width` bytes per lane is allowed for `op` (lds/sts: 1, 2, 4, 8, 16; ldmatrix: 16).
bool width_allowed(SmemOp op, int width);
/// The allowed widths of `op` as text, e.g. "1, 2, 4, 8, 16".
std::string allowed_widths(SmemOp op);

}  // namespace swz
