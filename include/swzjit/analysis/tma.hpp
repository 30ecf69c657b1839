// swzjit public API: static analysis of Hopper shared-memory layouts -- the byte layout a TMA box
// writes (swizzle modes as Swizzle<B,4,3> on byte addresses), the address each element of a wgmma
// shared-memory matrix descriptor reads, the proof that the two agree, and the bank cost of the epilogue.
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/bank.hpp"
#include "swzjit/analysis/layout.hpp"

namespace swz {

/// The shared-memory swizzle of a TMA tensor map (CU_TENSOR_MAP_SWIZZLE_*), which is also the layout
/// type of a wgmma descriptor. Each is Swizzle<B,4,3> applied to shared-memory byte addresses: the
/// 16-byte chunk index (bits 4..4+B) is XORed with the row index in the atom (bits 7..7+B).
enum class TmaSwizzle {
  None,  ///< Swizzle<0,4,3>: identity
  B32,   ///< Swizzle<1,4,3>: rows of 32 bytes, the pattern repeats every 256 bytes
  B64,   ///< Swizzle<2,4,3>: rows of 64 bytes, repeats every 512 bytes
  B128,  ///< Swizzle<3,4,3>: rows of 128 bytes, repeats every 1024 bytes
};

/// "none", "32B", "64B", "128B".
std::string to_string(TmaSwizzle s);
/// Reads "none", "32B", "64B", "128B" (also "32", "64", "128"); throws InvalidArgument naming them.
TmaSwizzle parse_tma_swizzle(const std::string& text);
/// The mode as the project's swizzle type: Sw<0,4,3>, Sw<1,4,3>, Sw<2,4,3>, Sw<3,4,3>.
SwizzleSpec tma_swizzle_spec(TmaSwizzle s);
/// Bytes of one row of the pattern: 16 (none: one 16-byte chunk), 32, 64, 128.
int tma_swizzle_row_bytes(TmaSwizzle s);
/// Bytes of one swizzle atom, 8 rows: 128, 256, 512, 1024. Swizzled tiles start on this alignment.
int tma_swizzle_atom_bytes(TmaSwizzle s);
/// The swizzle applied to a shared-memory byte address (the pattern is a function of the address
/// bits, so a tile continues it from wherever its address falls).
long long tma_swizzle_address(TmaSwizzle s, long long address);

/// One 2-D TMA box as cp.async.bulk.tensor writes it to shared memory: `outer` rows of `inner`
/// elements (inner = the tensor's contiguous dimension), packed row after row from `dst`, then
/// swizzled. Element (row, col) lands at tma_swizzle_address(swizzle, dst + (row * inner + col) * elem_bytes).
struct TmaBox {
  long long dst = 0;  ///< shared-memory byte address of the box
  int inner = 0;      ///< elements per row (boxDim[0])
  int outer = 0;      ///< rows (boxDim[1])
  int elem_bytes = 2;
  TmaSwizzle swizzle = TmaSwizzle::None;

  /// Throws InvalidArgument naming the field: elem_bytes 1, 2, 4 or 8; inner and outer in 1..256;
  /// a row (inner * elem_bytes) a multiple of 16 bytes and, when swizzled, exactly the swizzle's row
  /// (narrower rows are not packed by the hardware, and not modelled);
  /// dst >= 0 and 128-byte aligned (what cp.async.bulk.tensor needs).
  void validate() const;
  /// Byte address of element (row, col); row < outer, col < inner (not checked).
  long long address(int row, int col) const;
  /// "64 x 128 f16 128B at 0x400" style text: inner x outer, element bytes, swizzle, dst.
  std::string to_string() const;
};

/// Every element's byte address, row-major (outer rows of inner elements). Validates first.
std::vector<long long> tma_box_addresses(const TmaBox& box);

/// The two shared-memory operands of wgmma.mma_async.
enum class WgmmaOperand { A, B };
/// Which dimension is contiguous in shared memory: K (the "no transpose" layout) or M / N (transposed).
enum class WgmmaMajor { K, MN };
const char* to_string(WgmmaOperand o);  ///< "A", "B"
const char* to_string(WgmmaMajor m);    ///< "K-major", "MN-major"

/// The fields of a 64-bit wgmma shared-memory matrix descriptor, in bytes.
/// Bits 0-13: start address >> 4; 16-29: leading byte offset >> 4; 32-45: stride byte offset >> 4;
/// 49-51: base offset; 62-63: layout type (0 none, 1 128B, 2 64B, 3 32B swizzle); the rest reserved.
struct WgmmaDescriptor {
  unsigned long long raw = 0;
  long long start = 0;  ///< start address (bytes, 16-byte granular, 18 bits)
  long long lbo = 0;    ///< leading dimension byte offset
  long long sbo = 0;    ///< stride dimension byte offset
  int base_offset = 0;
  TmaSwizzle swizzle = TmaSwizzle::None;
  unsigned long long reserved = 0;  ///< the reserved bits that are set (validation rejects any)

  /// Splits `raw` into its fields (never throws; wgmma_validate judges them).
  static WgmmaDescriptor decode(unsigned long long raw);
  /// Builds a descriptor; start, lbo and sbo are bytes (multiples of 16 below 2^18).
  /// Throws InvalidArgument for values the fields cannot hold.
  static unsigned long long encode(long long start, long long lbo, long long sbo, TmaSwizzle swizzle,
                                   int base_offset = 0);
  /// "start 0x400 lbo 16 sbo 1024 base 0 128B".
  std::string to_string() const;
};

/// What one wgmma reads through a descriptor: operand, major-ness, element size and the MN extent of
/// the instruction's tile (A: 64; B: N, a multiple of 8 up to 256). The K extent is always 32 bytes
/// (k16 for 2-byte elements, k8 for 4-byte, k32 for 1-byte).
struct WgmmaTile {
  WgmmaOperand operand = WgmmaOperand::A;
  WgmmaMajor major = WgmmaMajor::K;
  int elem_bytes = 2;
  int mn = 64;
  int k() const { return elem_bytes > 0 ? 32 / elem_bytes : 0; }
  /// Throws InvalidArgument: elem_bytes 1, 2 or 4; A's mn 64; B's mn a multiple of 8 in 8..256;
  /// MN-major only with 2-byte elements (wgmma transposes f16 and bf16 only).
  void validate() const;
};

/// Checks a descriptor against the canonical layouts of PTX for `tile` and throws InvalidArgument
/// saying which field is wrong: reserved bits set; a base offset (only atom-aligned patterns, base
/// offset 0, are modelled); a start address not inside the first row of a swizzle atom (a descriptor
/// may move along a row, e.g. the +32-byte k step of a K-major tile, but a pattern starts on an atom);
/// a leading or stride byte offset of 0 that the tile's layout uses.
void wgmma_validate(const WgmmaDescriptor& desc, const WgmmaTile& tile);

/// The shared-memory byte address element (mn, k) of `tile` is read from, by the canonical layouts
/// (T = 16 / elem_bytes elements per 16-byte chunk, W = row bytes / 16, Sw = the descriptor's swizzle):
///  - K-major, none: start + (mn % 8) * 16 + (mn / 8) * SBO + (k / T) * LBO + (k % T) * elem_bytes
///  - K-major, swizzled: Sw(start + (mn % 8) * 16W + (mn / 8) * SBO + k * elem_bytes)
///  - MN-major, none: start + (mn % T) * elem_bytes + (mn / T) * SBO + (k % 8) * 16 + (k / 8) * LBO
///  - MN-major, swizzled: with c = mn / T: Sw(start + (mn % T) * elem_bytes + (c % W) * 16 + (c / W) * LBO
///    + (k % 8) * 16W + (k / 8) * SBO)
/// Does not validate (call wgmma_validate first).
long long wgmma_read_address(const WgmmaDescriptor& desc, const WgmmaTile& tile, int mn, int k);
/// All of them, index mn * tile.k() + k. Validates first.
std::vector<long long> wgmma_read_addresses(const WgmmaDescriptor& desc, const WgmmaTile& tile);

/// A TMA box filling part of an operand's stage: box element (row, col) holds the operand's logical
/// element (mn0 + row, k0 + col) when `major` is K (rows run along MN), (mn0 + col, k0 + row) when MN.
struct TmaFill {
  TmaBox box;
  int stage = 0;  ///< which buffer of a multi-stage ring this fills (logical elements are per stage)
  int mn0 = 0;
  int k0 = 0;
};

/// One wgmma's read of an operand: the descriptor it is issued with and the logical origin of its
/// tile in the stage (A: the consumer's first row; the k step's first k).
struct WgmmaRead {
  unsigned long long desc = 0;
  int stage = 0;
  int mn0 = 0;
  int k0 = 0;
  int k_step = 0;     ///< the k step's number, for messages
  std::string where;  ///< e.g. "stage 1, consumer 0", for messages
  /// Rows (M or N, from mn0) whose elements must be the TMA's; -1: all the tile's. Rows past them are read
  /// but feed only accumulator rows nothing stores (a short A stage, A_ROWS < 128).
  int rows = -1;
};

/// Everything about one operand a proof needs: what the TMA boxes write and what the wgmma read.
struct OperandPlan {
  WgmmaTile tile;
  std::vector<TmaFill> fills;
  std::vector<WgmmaRead> reads;
};

/// The outcome of prove_operand(): `ok`, or the first failure with its place.
struct OperandProof {
  std::string operand;  ///< "A" or "B"
  OperandPlan plan;
  bool ok = false;
  std::string error;                  ///< empty when ok; names the operand and the k step
  long long elements_checked = 0;     ///< elements of all reads compared
  int k_step = -1;                    ///< the failing read's k step, -1 if none
  int mn = -1, k = -1;                ///< the first wrong element (logical, in the stage)
  long long expected_address = -1;    ///< where the TMA wrote it (-1: no box wrote it)
  long long actual_address = -1;      ///< where the descriptor reads it from
};

/// Proves that every element each read of `plan` takes is the element the TMA wrote there: builds the
/// map address -> (stage, mn, k) of the boxes (two boxes writing one byte is a failure), validates each
/// descriptor (wgmma_validate) and compares. Never throws for a failed proof (see OperandProof).
/// @throws Error(InvalidArgument) for an invalid box or tile.
OperandProof prove_operand(const OperandPlan& plan);
/// prove_operand, throwing Error(InvalidArgument) with its message when the proof fails.
void prove_match(const OperandPlan& plan);

/// A shared-memory C tile the epilogue stores the accumulators into: row-major with `pitch_bytes`
/// (0: cols * elem_bytes) when `swizzle` is None, or as a TMA store would read it: column panels of
/// one swizzle row each (128B: 64 f16 or 32 f32 columns), every panel `rows` swizzled rows, panel
/// after panel.
struct CTileLayout {
  int rows = 64;
  int cols = 128;
  int elem_bytes = 2;
  TmaSwizzle swizzle = TmaSwizzle::None;
  int pitch_bytes = 0;

  /// Throws InvalidArgument: rows, cols >= 1; elem_bytes 2 or 4; pitch >= a row and a multiple of the
  /// element; swizzled: a row a multiple of the swizzle row.
  void validate() const;
  long long address(int row, int col) const;
  std::string to_string() const;
};

/// How a warp stores its accumulator fragment: one st.shared of an element pair per lane
/// (st.shared.b32 for 2-byte C, st.shared.v2.f32 for 4-byte C), or stmatrix.sync.x4 (2-byte C only:
/// four 8 x 8 matrices, lane l addressing row l % 8 of matrix l / 8, 16 bytes per row; costed as the
/// bank model's ldmatrix.x4, whose addressing and phases it shares).
enum class EpilogueStore { Pair, Stmatrix };
const char* to_string(EpilogueStore s);  ///< "st.shared pair", "stmatrix.x4"

/// The bank cost of one warpgroup storing its m64nNk16 f32 accumulators (converted to C's element)
/// into `c`: warp w holds rows 16w + lane / 4 (+ 8), columns 8j + 2 (lane % 4) (+ 1).
struct EpilogueCost {
  std::string instruction;  ///< e.g. "st.shared.b32", "stmatrix.x4"
  long long instructions = 0;
  long long wavefronts = 0;
  long long ideal_wavefronts = 0;
  long long excess_wavefronts = 0;
  int max_way = 0;
};
/// Every store instruction of the 4 warps of a warpgroup for a 64 x n accumulator tile (n a multiple
/// of 8, 16 for stmatrix) at rows [0, 64) of `c`, each costed with analyze_bank and summed.
/// @throws Error(InvalidArgument) when the tile does not fit in `c` or stmatrix meets 4-byte C.
EpilogueCost epilogue_bank_cost(const CTileLayout& c, int n, EpilogueStore store);
/// One instruction's lane addresses (warp `warp`, instruction `index` in issue order), for tools.
SmemInstruction epilogue_instruction(const CTileLayout& c, int n, EpilogueStore store, int warp, int index);

/// A TMA store (cp.async.bulk.tensor shared -> global) of one C box: box element (row, col) is C's
/// logical element (row0 + row, col0 + col) as it stands in shared memory when chunk `chunk` is stored.
struct TmaStoreBox {
  TmaBox box;     ///< the C tensor map's box and swizzle, at the buffer the store reads
  int chunk = 0;  ///< the store's place in the epilogue's sequence (buffers are reused by later chunks)
  int row0 = 0;
  int col0 = 0;
};

/// One lane of one shared-memory store of an epilogue: `elems` consecutive C elements (2: a pair of st.shared;
/// 8: one row of an stmatrix matrix, costed in ldmatrix.x4's phases), logical (row, col)
/// onwards, written at `address` for chunk `chunk`. Lanes with the same `instruction` form one warp-wide
/// store (lane `lane`), costed together with the bank model.
struct CStoreWrite {
  long long address = 0;
  int chunk = 0;
  int row = 0;
  int col = 0;
  int elems = 2;
  int instruction = 0;
  int lane = 0;
};

/// What the consumers write into shared memory and what the TMA stores read back from it.
struct CStorePlan {
  int elem_bytes = 2;
  std::vector<TmaStoreBox> boxes;  ///< one per chunk
  std::vector<CStoreWrite> writes;
};

/// The outcome of prove_c_store(): `ok`, or the first failure with its place, and the stores' bank cost.
struct CStoreProof {
  bool ok = false;
  std::string error;                ///< empty when ok; names operand C, the chunk and the element
  long long elements_checked = 0;   ///< C elements written and compared
  int chunk = -1, row = -1, col = -1;  ///< the first wrong element (logical)
  long long expected_address = -1;    ///< where the store's box reads it (-1: no box of its chunk holds it)
  long long actual_address = -1;       ///< where the consumer wrote it
  EpilogueCost cost;                   ///< every write instruction, costed with analyze_bank
};

/// Proves that every C element the plan's writes put into shared memory lands where its chunk's TMA store
/// box reads that element (same logical row and column), that every element each box reads was written
/// exactly once; costs the writes. Never throws for a failed proof. @throws Error(InvalidArgument) for an invalid box.
CStoreProof prove_c_store(const CStorePlan& plan);

}  // namespace swz
