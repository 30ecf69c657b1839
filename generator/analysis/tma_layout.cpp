// generator: TMA box layouts, wgmma shared-memory descriptors and the proof that they agree
// (include/swzjit/analysis/tma.hpp). The swizzle math is templates/swizzle.cuh's; the epilogue's
// bank costs are in tma_epilogue.cpp.
#include "swzjit/analysis/tma.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "swzjit/error.hpp"
#include "templates/swizzle.cuh"

namespace swz {

namespace {

constexpr long long kDescAddressLimit = 1LL << 18;  // 14-bit fields of 16-byte units
constexpr unsigned long long kReservedBits =
    (3ull << 14) | (3ull << 30) | (7ull << 46) | (0x3FFull << 52);

int swizzle_bits(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::None: return 0;
    case TmaSwizzle::B32: return 1;
    case TmaSwizzle::B64: return 2;
    case TmaSwizzle::B128: return 3;
  }
  return 0;
}

std::string hex(unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", v);
  return buf;
}

std::string num(long long v) { return std::to_string(v); }

// The descriptor's 2-bit layout type <-> swizzle mode (PTX numbers 128B as 1 and 32B as 3).
TmaSwizzle layout_type_swizzle(unsigned bits) {
  switch (bits & 3u) {
    case 1: return TmaSwizzle::B128;
    case 2: return TmaSwizzle::B64;
    case 3: return TmaSwizzle::B32;
    default: return TmaSwizzle::None;
  }
}
unsigned long long swizzle_layout_type(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::B128: return 1;
    case TmaSwizzle::B64: return 2;
    case TmaSwizzle::B32: return 3;
    case TmaSwizzle::None: break;
  }
  return 0;
}

// A logical element of an operand: (stage, mn, k) packed into one key (each < 2^20).
long long logical_key(int stage, int mn, int k) {
  return (static_cast<long long>(stage) << 40) | (static_cast<long long>(mn) << 20) | k;
}
std::string logical_text(long long key) {
  return "(mn " + num((key >> 20) & 0xFFFFF) + ", k " + num(key & 0xFFFFF) + ")";
}

// An integer -> value map for the proof's addresses and logical keys: a flat table over [lo, hi) when the
// span is small (a kernel's stages span a few hundred KiB; the proof of a config then takes milliseconds,
// not the tens a hash map needs), a hash map otherwise. Values are >= 0; -1 means absent.
class IndexMap {
 public:
  IndexMap(long long lo, long long hi) : lo_(lo), hi_(hi) {
    if (hi > lo && hi - lo <= kMaxDense) dense_.assign(static_cast<std::size_t>(hi - lo), -1);
  }
  // False (and no change) when `i` is present already.
  bool insert(long long i, long long v) {
    if (!dense_.empty() && i >= lo_ && i < hi_) {
      long long& slot = dense_[static_cast<std::size_t>(i - lo_)];
      if (slot >= 0) return false;
      slot = v;
      return true;
    }
    return sparse_.emplace(i, v).second;
  }
  long long find(long long i) const {
    if (!dense_.empty() && i >= lo_ && i < hi_) return dense_[static_cast<std::size_t>(i - lo_)];
    const auto it = sparse_.find(i);
    return it == sparse_.end() ? -1 : it->second;
  }

 private:
  static constexpr long long kMaxDense = 1LL << 22;
  long long lo_, hi_;
  std::vector<long long> dense_;
  std::unordered_map<long long, long long> sparse_;
};

}  // namespace

std::string to_string(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::None: return "none";
    case TmaSwizzle::B32: return "32B";
    case TmaSwizzle::B64: return "64B";
    case TmaSwizzle::B128: return "128B";
  }
  return "?";
}

TmaSwizzle parse_tma_swizzle(const std::string& text) {
  if (text == "none") return TmaSwizzle::None;
  if (text == "32B" || text == "32") return TmaSwizzle::B32;
  if (text == "64B" || text == "64") return TmaSwizzle::B64;
  if (text == "128B" || text == "128") return TmaSwizzle::B128;
  throw_invalid("swizzle: '" + text + "' is not a TMA swizzle mode (allowed: none, 32B, 64B, 128B)");
}

SwizzleSpec tma_swizzle_spec(TmaSwizzle s) { return SwizzleSpec{swizzle_bits(s), 4, 3}; }
int tma_swizzle_row_bytes(TmaSwizzle s) { return 16 << swizzle_bits(s); }
int tma_swizzle_atom_bytes(TmaSwizzle s) { return 8 * tma_swizzle_row_bytes(s); }
long long tma_swizzle_address(TmaSwizzle s, long long address) {
  return tpl::swizzle_apply(address, swizzle_bits(s), 4, 3);
}

// --- TMA boxes -------------------------------------------------------------------------------------

void TmaBox::validate() const {
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8)
    throw_invalid("elem-bytes: " + num(elem_bytes) + " is not a TMA element size (allowed: 1, 2, 4, 8)");
  if (inner < 1 || inner > 256) throw_invalid("inner: a box dimension of " + num(inner) + " (allowed: 1..256)");
  if (outer < 1 || outer > 256) throw_invalid("outer: a box dimension of " + num(outer) + " (allowed: 1..256)");
  const long long row = static_cast<long long>(inner) * elem_bytes;
  if (row % 16 != 0)
    throw_invalid("inner: a box row of " + num(row) + " bytes; TMA needs a multiple of 16 bytes");
  if (swizzle != TmaSwizzle::None && row > tma_swizzle_row_bytes(swizzle))
    throw_invalid("inner: a box row of " + num(row) + " bytes is wider than the " + swz::to_string(swizzle) +
                  " swizzle's row of " + num(tma_swizzle_row_bytes(swizzle)) +
                  " bytes; split the box or use a wider swizzle");
  // NOTE: a row narrower than the swizzle's is not packed by the hardware (on the H100, row 1 of a box of
  // 64-byte rows under the 128-byte swizzle is not at byte 64), so such boxes are not modelled.
  if (swizzle != TmaSwizzle::None && row < tma_swizzle_row_bytes(swizzle))
    throw_invalid("inner: a box row of " + num(row) + " bytes is narrower than the " + swz::to_string(swizzle) +
                  " swizzle's row of " + num(tma_swizzle_row_bytes(swizzle)) +
                  " bytes: the model covers rows exactly one swizzle row wide (use the narrower swizzle)");
  if (dst < 0 || dst % 128 != 0)
    throw_invalid("dst: shared-memory address " + hex(static_cast<unsigned long long>(dst)) +
                  " is not 128-byte aligned, as cp.async.bulk.tensor needs");
}

long long TmaBox::address(int row, int col) const {
  return tma_swizzle_address(swizzle, dst + (static_cast<long long>(row) * inner + col) * elem_bytes);
}

std::string TmaBox::to_string() const {
  return num(inner) + " x " + num(outer) + " (" + num(elem_bytes) + "-byte elements, " + swz::to_string(swizzle) +
         " swizzle) at " + hex(static_cast<unsigned long long>(dst));
}

std::vector<long long> tma_box_addresses(const TmaBox& box) {
  box.validate();
  std::vector<long long> out;
  out.reserve(static_cast<std::size_t>(box.inner) * box.outer);
  for (int r = 0; r < box.outer; ++r)
    for (int c = 0; c < box.inner; ++c) out.push_back(box.address(r, c));
  return out;
}

// --- descriptors -----------------------------------------------------------------------------------

const char* to_string(WgmmaOperand o) { return o == WgmmaOperand::A ? "A" : "B"; }
const char* to_string(WgmmaMajor m) { return m == WgmmaMajor::K ? "K-major" : "MN-major"; }

WgmmaDescriptor WgmmaDescriptor::decode(unsigned long long raw) {
  WgmmaDescriptor d;
  d.raw = raw;
  d.start = static_cast<long long>(raw & 0x3FFFull) << 4;
  d.lbo = static_cast<long long>((raw >> 16) & 0x3FFFull) << 4;
  d.sbo = static_cast<long long>((raw >> 32) & 0x3FFFull) << 4;
  d.base_offset = static_cast<int>((raw >> 49) & 7ull);
  d.swizzle = layout_type_swizzle(static_cast<unsigned>(raw >> 62));
  d.reserved = raw & kReservedBits;
  return d;
}

unsigned long long WgmmaDescriptor::encode(long long start, long long lbo, long long sbo, TmaSwizzle swizzle,
                                           int base_offset) {
  const auto field = [](const char* what, long long v) {
    if (v < 0 || v >= kDescAddressLimit || v % 16 != 0)
      throw_invalid(std::string(what) + ": " + num(v) +
                    " bytes cannot be encoded (allowed: multiples of 16 below 2^18)");
    return static_cast<unsigned long long>(v >> 4);
  };
  if (base_offset < 0 || base_offset > 7) throw_invalid("base-offset: " + num(base_offset) + " (allowed: 0..7)");
  return field("start", start) | (field("lbo", lbo) << 16) | (field("sbo", sbo) << 32) |
         (static_cast<unsigned long long>(base_offset) << 49) | (swizzle_layout_type(swizzle) << 62);
}

std::string WgmmaDescriptor::to_string() const {
  return "start " + hex(static_cast<unsigned long long>(start)) + " lbo " + num(lbo) + " sbo " + num(sbo) + " base " +
         num(base_offset) + " " + swz::to_string(swizzle);
}

void WgmmaTile::validate() const {
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)
    throw_invalid("elem-bytes: " + num(elem_bytes) + " is not a wgmma operand size (allowed: 1, 2, 4)");
  if (operand == WgmmaOperand::A && mn != 64)
    throw_invalid("mn: operand A of wgmma is 64 rows, not " + num(mn));
  if (operand == WgmmaOperand::B && (mn < 8 || mn > 256 || mn % 8 != 0))
    throw_invalid("mn: operand B's N of " + num(mn) + " (allowed: multiples of 8 in 8..256)");
  if (major == WgmmaMajor::MN && elem_bytes != 2)
    throw_invalid("major: MN-major (transposed) operands exist for 2-byte elements (f16, bf16) only, not " +
                  num(elem_bytes) + "-byte ones");
}

void wgmma_validate(const WgmmaDescriptor& d, const WgmmaTile& tile) {
  tile.validate();
  const std::string what = "descriptor " + hex(d.raw) + ": ";
  if (d.reserved != 0)
    throw_invalid(what + "reserved bits are set (" + hex(d.reserved) +
                  "); bits 14-15, 30-31, 46-48 and 52-61 must be zero");
  const int row = tma_swizzle_row_bytes(d.swizzle), atom = tma_swizzle_atom_bytes(d.swizzle);
  if (d.base_offset != 0)
    throw_invalid(what + "base offset " + num(d.base_offset) +
                  ": only patterns that start on a swizzle atom are modelled (base offset 0); align the tile to " +
                  num(atom) + " bytes and leave the base offset 0");
  const std::string shape = num(tile.mn) + " x " + num(tile.k()) + " " + to_string(tile.major) + " " +
                            to_string(tile.operand) + " tile";
  if (d.swizzle != TmaSwizzle::None) {
    const long long into = d.start % atom;
    if (into >= row)
      throw_invalid(what + "start address " + hex(static_cast<unsigned long long>(d.start)) + " is " + num(into) +
                    " bytes into a " + num(atom) + "-byte " + to_string(d.swizzle) +
                    " swizzle atom; a descriptor may start only inside an atom's first " + num(row) +
                    "-byte row (moving along it, as a K-major k step does): align the tile to " + num(atom) +
                    " bytes");
    if (tile.major == WgmmaMajor::K && into + 32 > row)
      throw_invalid(what + "start address " + hex(static_cast<unsigned long long>(d.start)) + " is " + num(into) +
                    " bytes into a " + num(row) + "-byte " + to_string(d.swizzle) +
                    " row: the 32 bytes of K one wgmma reads must fit in the row");
  }
  const int t = 16 / tile.elem_bytes, w = row / 16;
  bool lbo_used, sbo_used;
  const char* lbo_is;
  const char* sbo_is;
  if (tile.major == WgmmaMajor::K) {
    lbo_used = d.swizzle == TmaSwizzle::None;  // K spans two 16-byte core matrices; swizzled rows hold both
    sbo_used = tile.mn > 8;
    lbo_is = "the distance between the tile's two core matrices along K";
    sbo_is = "the distance between groups of 8 rows";
  } else if (d.swizzle == TmaSwizzle::None) {
    lbo_used = tile.k() > 8;
    sbo_used = tile.mn > t;
    lbo_is = "the distance between groups of 8 k";
    sbo_is = "the distance between 16-byte core matrices along MN";
  } else {
    lbo_used = tile.mn > t * w;
    sbo_used = tile.k() > 8;
    lbo_is = "the distance between swizzle-row-wide blocks along MN";
    sbo_is = "the distance between groups of 8 k";
  }
  if (lbo_used && d.lbo == 0)
    throw_invalid(what + "leading byte offset is 0 but the " + shape + " uses it: set it to " + lbo_is);
  if (sbo_used && d.sbo == 0)
    throw_invalid(what + "stride byte offset is 0 but the " + shape + " uses it: set it to " + sbo_is);
}

long long wgmma_read_address(const WgmmaDescriptor& d, const WgmmaTile& tile, int mn, int k) {
  const long long e = tile.elem_bytes;
  const int t = static_cast<int>(16 / e);
  const int w = tma_swizzle_row_bytes(d.swizzle) / 16;
  long long a = d.start;
  if (tile.major == WgmmaMajor::K) {
    if (d.swizzle == TmaSwizzle::None) {
      a += (mn % 8) * 16LL + (mn / 8) * d.sbo + (k / t) * d.lbo + (k % t) * e;
    } else {
      a += (mn % 8) * 16LL * w + (mn / 8) * d.sbo + k * e;
    }
  } else {
    if (d.swizzle == TmaSwizzle::None) {
      a += (mn % t) * e + (mn / t) * d.sbo + (k % 8) * 16LL + (k / 8) * d.lbo;
    } else {
      const int c = mn / t;
      a += (mn % t) * e + (c % w) * 16LL + (c / w) * d.lbo + (k % 8) * 16LL * w + (k / 8) * d.sbo;
    }
  }
  return tma_swizzle_address(d.swizzle, a);
}

std::vector<long long> wgmma_read_addresses(const WgmmaDescriptor& d, const WgmmaTile& tile) {
  wgmma_validate(d, tile);
  std::vector<long long> out;
  out.reserve(static_cast<std::size_t>(tile.mn) * tile.k());
  for (int mn = 0; mn < tile.mn; ++mn)
    for (int k = 0; k < tile.k(); ++k) out.push_back(wgmma_read_address(d, tile, mn, k));
  return out;
}

// --- the proof -------------------------------------------------------------------------------------

OperandProof prove_operand(const OperandPlan& plan) {
  plan.tile.validate();
  OperandProof p;
  p.operand = to_string(plan.tile.operand);
  p.plan = plan;
  const std::string op = "operand " + p.operand;
  const auto fail = [&](const std::string& msg) {
    p.ok = false;
    p.error = msg;
    return p;
  };
  // What the TMA wrote: address -> logical element, and back. The spans: the boxes' bytes (a swizzle
  // moves bytes only inside their 1024-byte atom) and the dense numbering of their logical elements.
  long long lo = -1, hi = 0;
  int max_stage = 0, max_mn = 0, max_k = 0;
  for (const TmaFill& f : plan.fills) {
    const long long end = f.box.dst + static_cast<long long>(f.box.inner) * f.box.outer * f.box.elem_bytes;
    lo = lo < 0 ? f.box.dst : std::min(lo, f.box.dst);
    hi = std::max(hi, end);
    max_stage = std::max(max_stage, f.stage);
    max_mn = std::max(max_mn, f.mn0 + std::max(f.box.inner, f.box.outer));
    max_k = std::max(max_k, f.k0 + std::max(f.box.inner, f.box.outer));
  }
  const long long atom = 1024;
  IndexMap written(lo < 0 ? 0 : lo / atom * atom, (hi + atom - 1) / atom * atom);
  // Element keys are logical_key(); numbered densely when they fall in the boxes' ranges.
  const auto dense_key = [&](long long key) {
    const long long st = key >> 40, mn = (key >> 20) & 0xFFFFF, k = key & 0xFFFFF;
    if (st > max_stage || mn >= max_mn || k >= max_k) return -1 - key;  // out of range: its own sparse key
    return (st * max_mn + mn) * max_k + k;
  };
  IndexMap where_written(0, static_cast<long long>(max_stage + 1) * max_mn * max_k);
  for (std::size_t i = 0; i < plan.fills.size(); ++i) {
    const TmaFill& f = plan.fills[i];
    const std::string box = op + ": TMA box " + num(static_cast<long long>(i)) + " (" + f.box.to_string() + ")";
    if (f.box.elem_bytes != plan.tile.elem_bytes)
      return fail(box + " has " + num(f.box.elem_bytes) + "-byte elements but the wgmma reads " +
                  num(plan.tile.elem_bytes) + "-byte ones");
    try {
      f.box.validate();
    } catch (const Error& e) {
      return fail(box + ": " + e.what());
    }
    for (int r = 0; r < f.box.outer; ++r) {
      for (int c = 0; c < f.box.inner; ++c) {
        const bool k_major = plan.tile.major == WgmmaMajor::K;
        const long long key = logical_key(f.stage, f.mn0 + (k_major ? r : c), f.k0 + (k_major ? c : r));
        const long long a = f.box.address(r, c);
        if (!written.insert(a, key))
          return fail(box + " writes byte " + hex(static_cast<unsigned long long>(a)) +
                      " that an earlier box wrote too");
        if (!where_written.insert(dense_key(key), a))
          return fail(box + " writes element " + logical_text(key) + " of stage " + num(f.stage) +
                      " that an earlier box wrote too");
      }
    }
  }
  for (const WgmmaRead& rd : plan.reads) {
    const WgmmaDescriptor d = WgmmaDescriptor::decode(rd.desc);
    const std::string at = op + ", k step " + num(rd.k_step) + " (" + (rd.where.empty() ? "" : rd.where + ", ") +
                           "descriptor " + hex(rd.desc) + " = " + d.to_string() + ")";
    p.k_step = rd.k_step;
    try {
      wgmma_validate(d, plan.tile);
    } catch (const Error& e) {
      return fail(at + ": " + e.what());
    }
    const int rows = rd.rows < 0 ? plan.tile.mn : std::min(rd.rows, plan.tile.mn);
    for (int mn = 0; mn < rows; ++mn) {
      for (int k = 0; k < plan.tile.k(); ++k) {
        const long long want = logical_key(rd.stage, rd.mn0 + mn, rd.k0 + k);
        const long long a = wgmma_read_address(d, plan.tile, mn, k);
        ++p.elements_checked;
        const long long got = written.find(a);
        if (got == want) continue;
        const long long exp = where_written.find(dense_key(want));
        p.mn = rd.mn0 + mn;
        p.k = rd.k0 + k;
        p.actual_address = a;
        p.expected_address = exp;
        std::string msg = at + ": element " + logical_text(want) + " is read from byte " +
                          hex(static_cast<unsigned long long>(a)) + ", where " +
                          (got < 0 ? std::string("no TMA box wrote anything")
                                   : "the TMA wrote " + logical_text(got) +
                                         ((got >> 40) != rd.stage ? " of stage " + num(got >> 40) : std::string()));
        msg += exp < 0 ? "; no TMA box wrote that element"
                       : "; the TMA wrote it to byte " + hex(static_cast<unsigned long long>(exp));
        return fail(msg);
      }
    }
  }
  p.k_step = -1;
  p.ok = true;
  return p;
}

void prove_match(const OperandPlan& plan) {
  const OperandProof p = prove_operand(plan);
  if (!p.ok) throw_invalid(p.error);
}

}  // namespace swz
