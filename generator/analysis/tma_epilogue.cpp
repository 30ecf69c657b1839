// generator: the bank cost of a wgmma epilogue (include/swzjit/analysis/tma.hpp): a warpgroup's
// m64nNk16 accumulator fragment stored into a shared-memory C tile, costed with the bank model.
#include <string>

#include "swzjit/analysis/tma.hpp"
#include "swzjit/error.hpp"

namespace swz {

namespace {

constexpr int kWarps = 4;  // a warpgroup
constexpr int kLanes = 32;

std::string num(long long v) { return std::to_string(v); }

int instructions_per_warp(int n, EpilogueStore store) { return store == EpilogueStore::Pair ? 2 * (n / 8) : n / 16; }

void check(const CTileLayout& c, int n, EpilogueStore store) {
  c.validate();
  const int step = store == EpilogueStore::Stmatrix ? 16 : 8;
  if (n < step || n > 256 || n % step != 0)
    throw_invalid("n: " + num(n) + " accumulator columns (allowed for " + to_string(store) + ": multiples of " +
                  num(step) + " in " + num(step) + "..256)");
  if (c.rows < 64 || c.cols < n)
    throw_invalid("c: a " + num(c.rows) + " x " + num(c.cols) + " C tile cannot hold a warpgroup's 64 x " + num(n) +
                  " accumulators");
  if (store == EpilogueStore::Stmatrix && c.elem_bytes != 2)
    throw_invalid("store: stmatrix stores 16-bit elements; a C of " + num(c.elem_bytes) +
                  "-byte elements needs st.shared");
}

}  // namespace

void CTileLayout::validate() const {
  if (rows < 1 || cols < 1) throw_invalid("c: a C tile of " + num(rows) + " x " + num(cols) + " (both must be >= 1)");
  if (elem_bytes != 2 && elem_bytes != 4)
    throw_invalid("c: " + num(elem_bytes) + "-byte C elements (allowed: 2 for f16/bf16, 4 for f32)");
  const long long row = static_cast<long long>(cols) * elem_bytes;
  if (swizzle == TmaSwizzle::None) {
    if (pitch_bytes != 0 && (pitch_bytes < row || pitch_bytes % elem_bytes != 0))
      throw_invalid("c: pitch of " + num(pitch_bytes) + " bytes (allowed: 0 for " + num(row) +
                    ", or at least a row of " + num(row) + " bytes, a multiple of the element)");
  } else if (row % tma_swizzle_row_bytes(swizzle) != 0) {
    throw_invalid("c: a row of " + num(row) + " bytes is not a whole number of " + swz::to_string(swizzle) +
                  " swizzle rows (" + num(tma_swizzle_row_bytes(swizzle)) + " bytes)");
  }
}

long long CTileLayout::address(int row, int col) const {
  if (swizzle == TmaSwizzle::None) {
    const long long pitch = pitch_bytes != 0 ? pitch_bytes : static_cast<long long>(cols) * elem_bytes;
    return row * pitch + static_cast<long long>(col) * elem_bytes;
  }
  // A TMA store of column panels: each panel one box of `rows` rows of one swizzle row.
  const int rb = tma_swizzle_row_bytes(swizzle);
  const int panel_cols = rb / elem_bytes;
  const long long panel = col / panel_cols;
  return tma_swizzle_address(swizzle,
                             panel * rows * rb + static_cast<long long>(row) * rb + (col % panel_cols) * elem_bytes);
}

std::string CTileLayout::to_string() const {
  std::string s = num(rows) + " x " + num(cols) + " x " + num(elem_bytes) + " B, ";
  if (swizzle != TmaSwizzle::None) return s + swz::to_string(swizzle) + "-swizzled panels (TMA store)";
  return s + "row-major, pitch " + num(pitch_bytes != 0 ? pitch_bytes : static_cast<long long>(cols) * elem_bytes);
}

const char* to_string(EpilogueStore s) { return s == EpilogueStore::Pair ? "st.shared pair" : "stmatrix.x4"; }

SmemInstruction epilogue_instruction(const CTileLayout& c, int n, EpilogueStore store, int warp, int index) {
  check(c, n, store);
  if (warp < 0 || warp >= kWarps) throw_invalid("warp: " + num(warp) + " (allowed: 0..3, the warps of a warpgroup)");
  if (index < 0 || index >= instructions_per_warp(n, store))
    throw_invalid("index: " + num(index) + " (allowed: 0.." + num(instructions_per_warp(n, store) - 1) + ")");
  SmemInstruction in;
  in.addresses.resize(kLanes);
  if (store == EpilogueStore::Pair) {
    // The kernel's order: for each 8-column block j, rows lane / 4, then rows lane / 4 + 8.
    in.op = SmemOp::Sts;
    in.width = 2 * c.elem_bytes;
    const int j = index / 2, half = index % 2;
    for (int l = 0; l < kLanes; ++l)
      in.addresses[l] = c.address(16 * warp + l / 4 + 8 * half, 8 * j + 2 * (l % 4));
  } else {
    // stmatrix.x4 of columns [16 i, 16 i + 16): matrices (rows 0-7 | 8-15) x (columns 0-7 | 8-15), in the
    // order of the fragment's registers; lane l gives row l % 8 of matrix l / 8.
    in.op = SmemOp::LdmatrixX4;
    in.width = 16;
    for (int l = 0; l < kLanes; ++l) {
      const int m = l / 8;
      in.addresses[l] = c.address(16 * warp + l % 8 + 8 * (m % 2), 16 * index + 8 * (m / 2));
    }
  }
  return in;
}

EpilogueCost epilogue_bank_cost(const CTileLayout& c, int n, EpilogueStore store) {
  check(c, n, store);
  EpilogueCost cost;
  cost.instruction = store == EpilogueStore::Stmatrix ? "stmatrix.x4"
                     : c.elem_bytes == 2             ? "st.shared.b32"
                                                     : "st.shared.v2.f32";
  BankReport r;
  for (int w = 0; w < kWarps; ++w) {
    for (int i = 0; i < instructions_per_warp(n, store); ++i) {
      analyze_bank(epilogue_instruction(c, n, store, w, i), r);
      ++cost.instructions;
      cost.wavefronts += r.wavefronts;
      cost.ideal_wavefronts += r.ideal_wavefronts;
      cost.excess_wavefronts += r.excess_wavefronts;
      if (r.max_way > cost.max_way) cost.max_way = r.max_way;
    }
  }
  return cost;
}

}  // namespace swz
