// swzjit public API: the swizzle solver. Given a shared-memory tile and the warp-wide access
// patterns a kernel performs on it, find the cheapest XOR swizzle that leaves no excess wavefronts.
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/bank.hpp"
#include "swzjit/analysis/layout.hpp"

namespace swz {

/// A row-major shared-memory tile: `rows` rows of `row_bytes` bytes holding elements of
/// `elem_bytes` bytes. Element (r, c) sits at element offset r * row_elems() + c; a swizzle maps
/// that offset, and the byte address is swizzled offset * elem_bytes.
struct SmemTile {
  int rows = 0;
  int row_bytes = 0;
  int elem_bytes = 4;

  int row_elems() const { return elem_bytes > 0 ? row_bytes / elem_bytes : 0; }
  long long elems() const { return static_cast<long long>(rows) * row_elems(); }
  /// Throws InvalidArgument (messages start with "rows", "row-bytes" or "elem-bytes"): rows >= 1,
  /// elem_bytes in {1, 2, 4, 8, 16}, row_bytes a positive multiple of elem_bytes, at most 256 KiB.
  void validate() const;
};

/// A named access pattern; each expands to every warp-wide instruction that covers the tile once.
/// Lanes are numbered as a kernel with a 1-D thread index t = 32 * warp + lane would number them:
///
///  - `store:W` (W = 1, 2, 4, 8, 16): sts of W bytes, a global->smem copy. Lane i of warp j stores
///    the (32j+i)-th W-byte chunk of the tile in row-major byte order (byte address (32j+i)*W).
///    Needs row_bytes % W == 0.
///  - `load:W`: the same addresses read with lds (an smem->global copy-out).
///  - `colread`: lds of one element (width elem_bytes; a transpose reads 4-byte elements), a
///    column read. For every column c and every group of 32 rows r0 = 0, 32, 64, ...: lane i reads
///    element (r0 + i, c); lanes whose row is past the tile are inactive.
///  - `tstore:V` (V = 1, 2, 4, 8, 16): the tile holds the transpose of a global tile of row_elems rows
///    and `rows` columns, filled as seed 004 fills its A tile: thread t loads V consecutive elements
///    of global row t / (rows/V), columns (t % (rows/V)) * V + k, and stores element k to tile
///    element (row (t % (rows/V)) * V + k, column t / (rows/V)); one sts of elem_bytes per (warp, k).
///    Needs rows % V == 0.
///  - `ldmatrix`: ldmatrix.x4 of every 16x16 block of 2-byte elements (blocks in row-major order).
///    Lane l addresses the 16-byte row at block row l % 16, block column (l / 16) * 8, so phase 0 =
///    rows 0-7 left half, 1 = rows 8-15 left, 2 = rows 0-7 right, 3 = rows 8-15 right (the A-operand
///    order of mma.m16n8k16). Needs elem_bytes == 2 and rows, row_elems multiples of 16.
///  - `ldmatrix.trans`: ldmatrix.x4.trans with the same addresses. .trans only changes how the
///    loaded 8x8 matrices are spread over the registers, not which rows are read, so its cost is
///    that of `ldmatrix`; it is listed separately because a kernel issues it separately.
///  - `ldmatrix.flat` (and `ldmatrix.flat.trans`): every 256 consecutive elements of the tile,
///    taken as a row-major 16x16 block, read with ldmatrix.x4 (lane l: element 256k + (l % 16) * 16
///    + (l / 16) * 8). On a tile whose rows hold 256 fp16 elements this reads each row as a 16x16
///    block: the second access of seed 003's multi-layer swizzle problem. Needs elem_bytes == 2 and
///    a multiple of 256 elements.
struct AccessPattern {
  enum class Kind { Store, Load, ColRead, TransposedStore, Ldmatrix, LdmatrixFlat };
  Kind kind = Kind::Store;
  int width = 16;      ///< W of store/load, V of tstore; unused otherwise
  bool trans = false;  ///< ldmatrix .trans (same addressing)

  /// The canonical name, as parse_access_pattern accepts it ("store:16", "ldmatrix.trans", ...).
  std::string name() const;
};

/// Parse one pattern name; throws InvalidArgument (message starts with "pattern") listing the forms.
AccessPattern parse_access_pattern(const std::string& text);

/// The instructions of `pattern` on `tile`, with the chain `swizzles` applied to element offsets
/// (first element first; empty = identity). Throws InvalidArgument (message starts with "pattern")
/// if the pattern does not fit the tile, or if a swizzle of the chain would split one lane's access
/// (a W-byte access needs 2^M * elem_bytes >= W for every swizzle with B > 0).
std::vector<SmemInstruction> expand_pattern(const SmemTile& tile, const AccessPattern& pattern,
                                            const std::vector<SwizzleSpec>& swizzles = {});

/// Totals of one pattern under one swizzle chain.
struct PatternCost {
  bool legal = true;  ///< false if the chain splits a vector access (the other fields are then 0)
  int instructions = 0;
  long long wavefronts = 0;
  long long ideal_wavefronts = 0;
  long long excess_wavefronts = 0;
  int max_way = 0;  ///< worst bank degree over all instructions
};

/// Cost `pattern` on `tile` under `swizzles` (see expand_pattern). Illegal chains give legal = false.
PatternCost evaluate_pattern(const SmemTile& tile, const AccessPattern& pattern,
                             const std::vector<SwizzleSpec>& swizzles = {});

/// True if the chain `swizzles` maps the tile's element offsets [0, elems()) one-to-one onto
/// themselves (every swizzled offset < elems() and all distinct). Always true for a tile of 2^k
/// elements whose swizzles' bit fields lie below bit k; other tiles are checked offset by offset.
bool is_tile_bijection(const SmemTile& tile, const std::vector<SwizzleSpec>& swizzles);

/// What the solver may search.
struct SolveOptions {
  bool allow_negative_shift = true;  ///< also try S < 0
  bool allow_composition = true;     ///< try two swizzles when no single one works
  int max_bits = 5;                  ///< largest B tried for each swizzle (1..5)
};

enum class SolveStatus {
  IdentityIsFree,  ///< the plain row-major tile already has no excess wavefronts
  Found,           ///< `swizzles` holds one swizzle, or two applied in order
  NotFound,        ///< no candidate in the searched space removes every excess wavefront
};

struct PatternOutcome {
  std::string pattern;  ///< canonical name
  PatternCost before;   ///< identity layout
  PatternCost after;    ///< chosen swizzle(s); equal to `before` unless status == Found
};

struct SolveResult {
  SolveStatus status = SolveStatus::NotFound;
  std::vector<SwizzleSpec> swizzles;  ///< application order: offset -> s[0] -> s[1]
  std::vector<PatternOutcome> patterns;
  long long singles_tried = 0;       ///< single swizzles evaluated
  long long compositions_tried = 0;  ///< ordered pairs evaluated
};

/// Find the cheapest swizzle (chain) that leaves every pattern with zero excess wavefronts.
///
/// Search space: Swizzle<B,M,S> with 1 <= B <= max_bits, 0 <= M <= log2(row_elems), B <= |S|,
/// both XOR fields inside the tile's offset bits (a mask past them would be a no-op or leave the
/// tile), S > 0 and, if allowed, S < 0; a candidate must map the tile's offsets one-to-one onto
/// themselves (checked offset by offset) and keep every vector access whole (2^M * elem_bytes >= W).
///
/// Order (first success wins, so the answer is deterministic): all single swizzles before any
/// composition (the rule: compose only when no single swizzle works); singles by fewest
/// XOR bits B, then smallest M, then smallest |S|, positive S first. Pairs by fewest total bits,
/// then by (M, |S|, S < 0, B) of the first swizzle, then of the second. A pair whose two swizzles
/// commute is tried in one order only.
SolveResult solve_swizzle(const SmemTile& tile, const std::vector<AccessPattern>& patterns,
                          const SolveOptions& options = {});

/// "Swizzle<B,M,S>" (the template spelling, for reports).
std::string swizzle_name(const SwizzleSpec& spec);

}  // namespace swz
