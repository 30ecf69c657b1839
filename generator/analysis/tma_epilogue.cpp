// generator: the bank cost of a wgmma epilogue (include/swzjit/analysis/tma.hpp): a warpgroup's
// m64nNk16 accumulator fragment stored into a shared-memory C tile, costed with the bank model; and the
// proof that a TMA-store epilogue's shared-memory writes land where its C boxes read them back.
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>

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
      add_instruction_cost(cost, r);
    }
  }
  return cost;
}

namespace {

std::string hex_addr(long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

CStoreProof prove_c_store(const CStorePlan& plan) {
  CStoreProof p;
  const auto fail = [&](const std::string& msg) {
    p.ok = false;
    p.error = "operand C: " + msg;
    return p;
  };
  // Box by chunk, and for each box the elements written so far (each must be written exactly once).
  std::unordered_map<int, std::size_t> box_of;
  std::vector<std::vector<unsigned char>> written(plan.boxes.size());
  for (std::size_t i = 0; i < plan.boxes.size(); ++i) {
    const TmaStoreBox& b = plan.boxes[i];
    if (b.box.elem_bytes != plan.elem_bytes)
      return fail("the TMA store box of chunk " + num(b.chunk) + " (" + b.box.to_string() + ") has " +
                  num(b.box.elem_bytes) + "-byte elements but C has " + num(plan.elem_bytes) + "-byte ones");
    b.box.validate();
    if (!box_of.emplace(b.chunk, i).second) return fail("two TMA store boxes for chunk " + num(b.chunk));
    written[i].assign(static_cast<std::size_t>(b.box.inner) * b.box.outer, 0);
  }
  for (const CStoreWrite& w : plan.writes) {
    const auto it = box_of.find(w.chunk);
    if (it == box_of.end()) return fail("chunk " + num(w.chunk) + " is written but no TMA store reads it");
    const TmaStoreBox& b = plan.boxes[it->second];
    for (int e = 0; e < w.elems; ++e) {
      const int row = w.row, col = w.col + e;
      const long long actual = w.address + static_cast<long long>(e) * plan.elem_bytes;
      const int r = row - b.row0, c = col - b.col0;
      ++p.elements_checked;
      const bool inside = r >= 0 && r < b.box.outer && c >= 0 && c < b.box.inner;
      const long long expected = inside ? b.box.address(r, c) : -1;
      if (inside && expected == actual) {
        unsigned char& seen = written[it->second][static_cast<std::size_t>(r) * b.box.inner + c];
        if (seen) return fail("chunk " + num(w.chunk) + ": element (row " + num(row) + ", col " + num(col) +
                              ") is written twice");
        seen = 1;
        continue;
      }
      p.chunk = w.chunk;
      p.row = row;
      p.col = col;
      p.actual_address = actual;
      p.expected_address = expected;
      return fail("chunk " + num(w.chunk) + " (instruction " + num(w.instruction) + ", lane " + num(w.lane) +
                  "): element (row " + num(row) + ", col " + num(col) + ") is written to byte " + hex_addr(actual) +
                  (inside ? ", but the TMA store (" + b.box.to_string() + ") reads it from byte " + hex_addr(expected)
                          : ", outside the TMA store's box (" + b.box.to_string() + ")"));
    }
  }
  for (std::size_t i = 0; i < plan.boxes.size(); ++i) {
    const TmaStoreBox& b = plan.boxes[i];
    for (std::size_t j = 0; j < written[i].size(); ++j) {
      if (written[i][j]) continue;
      const int r = static_cast<int>(j) / b.box.inner, c = static_cast<int>(j) % b.box.inner;
      p.chunk = b.chunk;
      p.row = b.row0 + r;
      p.col = b.col0 + c;
      p.expected_address = b.box.address(r, c);
      return fail("chunk " + num(b.chunk) + ": the TMA store reads element (row " + num(p.row) + ", col " +
                  num(p.col) + ") from byte " + hex_addr(p.expected_address) + ", which no write filled");
    }
  }
  // The bank cost: the writes grouped into their warp-wide instructions (lane order).
  std::map<int, SmemInstruction> instructions;
  for (const CStoreWrite& w : plan.writes) {
    SmemInstruction& in = instructions[w.instruction];
    in.width = w.elems * plan.elem_bytes;
    // 16 bytes of 16-bit elements a lane: an stmatrix.x4's matrix row (phases of 8 lanes, as ldmatrix.x4).
    in.op = in.width == 16 && plan.elem_bytes == 2 ? SmemOp::LdmatrixX4 : SmemOp::Sts;
    if (in.addresses.size() <= static_cast<std::size_t>(w.lane)) in.addresses.resize(w.lane + 1, 0);
    in.addresses[w.lane] = w.address;
  }
  const int width = plan.writes.empty() ? 0 : plan.writes.front().elems * plan.elem_bytes;
  p.cost.instruction = plan.elem_bytes == 4 ? "st.shared.v2.f32" : width == 16 ? "stmatrix.x4" : "st.shared.b32";
  BankReport r;
  for (const auto& kv : instructions) {
    analyze_bank(kv.second, r);
    add_instruction_cost(p.cost, r);
  }
  p.ok = true;
  return p;
}

}  // namespace swz
