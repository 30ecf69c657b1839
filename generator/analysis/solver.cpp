// generator: the swizzle solver (include/swzjit/analysis/solver.hpp). Expands named access patterns into
// warp-wide instructions, costs them with the bank model, and searches Swizzle<B,M,S> chains.
#include "swzjit/analysis/solver.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "swzjit/error.hpp"
#include "templates/swizzle.cuh"

namespace swz {

namespace {

constexpr int kWarp = 32;
constexpr long long kMaxTileBytes = 256 * 1024;

bool pow2(long long v) { return tpl::is_pow2(v); }
int log2_floor(long long v) {
  int r = 0;
  while ((2LL << r) <= v) ++r;
  return r;
}
// Number of bits needed to write every offset in [0, n).
int bit_width(long long n) {
  int r = 0;
  while (r < 62 && (1LL << r) < n) ++r;
  return r;
}

// One instruction before any swizzle: logical byte addresses of the active lanes, in lane order.
struct LogicalInstr {
  SmemOp op;
  int width;
  std::vector<long long> bytes;
};

struct Expansion {
  std::vector<LogicalInstr> instrs;
  int access_bytes = 0;  // bytes per lane access (the contiguity a swizzle must preserve)
};

[[noreturn]] void bad_pattern(const AccessPattern& p, const SmemTile& t, const std::string& why) {
  throw_invalid("pattern " + p.name() + ": " + why + " (tile: " + std::to_string(t.rows) + " rows x " +
                std::to_string(t.row_bytes) + " bytes, " + std::to_string(t.elem_bytes) + "-byte elements)");
}

// The lane -> coordinate mappings documented in solver.hpp.
Expansion expand_logical(const SmemTile& t, const AccessPattern& p) {
  Expansion ex;
  const long long e = t.elem_bytes;
  const long long re = t.row_elems();
  const long long total_bytes = static_cast<long long>(t.rows) * t.row_bytes;
  const bool sized = p.kind == AccessPattern::Kind::Store || p.kind == AccessPattern::Kind::Load ||
                     p.kind == AccessPattern::Kind::TransposedStore;
  // NOTE: an AccessPattern built in code skips parse_access_pattern; a width of 0 would divide by zero.
  if (sized && p.width != 1 && p.width != 2 && p.width != 4 && p.width != 8 && p.width != 16)
    bad_pattern(p, t, "width " + std::to_string(p.width) + " is not allowed (allowed: 1, 2, 4, 8, 16)");
  switch (p.kind) {
    case AccessPattern::Kind::Store:
    case AccessPattern::Kind::Load: {
      const int w = p.width;
      if (t.row_bytes % w != 0) bad_pattern(p, t, "row-bytes must be a multiple of " + std::to_string(w));
      ex.access_bytes = w;
      const SmemOp op = p.kind == AccessPattern::Kind::Store ? SmemOp::Sts : SmemOp::Lds;
      const long long chunks = total_bytes / w;
      for (long long first = 0; first < chunks; first += kWarp) {
        LogicalInstr in{op, w, {}};
        for (long long c = first; c < std::min(chunks, first + kWarp); ++c) in.bytes.push_back(c * w);
        ex.instrs.push_back(std::move(in));
      }
      break;
    }
    case AccessPattern::Kind::ColRead: {
      ex.access_bytes = t.elem_bytes;
      for (long long c = 0; c < re; ++c) {
        for (long long r0 = 0; r0 < t.rows; r0 += kWarp) {
          LogicalInstr in{SmemOp::Lds, t.elem_bytes, {}};
          for (long long r = r0; r < std::min<long long>(t.rows, r0 + kWarp); ++r) in.bytes.push_back((r * re + c) * e);
          ex.instrs.push_back(std::move(in));
        }
      }
      break;
    }
    case AccessPattern::Kind::TransposedStore: {
      const int v = p.width;
      if (t.rows % v != 0) bad_pattern(p, t, "rows must be a multiple of " + std::to_string(v));
      ex.access_bytes = t.elem_bytes;
      const long long per_row = t.rows / v;  // threads per global row
      const long long threads = t.elems() / v;
      for (long long first = 0; first < threads; first += kWarp) {
        for (int k = 0; k < v; ++k) {
          LogicalInstr in{SmemOp::Sts, t.elem_bytes, {}};
          for (long long th = first; th < std::min(threads, first + kWarp); ++th) {
            const long long row = (th % per_row) * v + k;
            const long long col = th / per_row;
            in.bytes.push_back((row * re + col) * e);
          }
          ex.instrs.push_back(std::move(in));
        }
      }
      break;
    }
    case AccessPattern::Kind::Ldmatrix:
    case AccessPattern::Kind::LdmatrixFlat: {
      if (t.elem_bytes != 2) bad_pattern(p, t, "ldmatrix reads 16x16 blocks of 2-byte elements; elem-bytes must be 2");
      const bool flat = p.kind == AccessPattern::Kind::LdmatrixFlat;
      if (flat && t.elems() % 256 != 0) bad_pattern(p, t, "the tile must hold a multiple of 256 elements");
      if (!flat && (t.rows % 16 != 0 || re % 16 != 0))
        bad_pattern(p, t, "rows and row elements must be multiples of 16");
      ex.access_bytes = 16;
      // Each block: element offset of (block row, block col) = base + br * stride + bc.
      std::vector<std::pair<long long, long long>> blocks;  // (base offset, row stride)
      if (flat) {
        for (long long k = 0; k < t.elems() / 256; ++k) blocks.emplace_back(k * 256, 16);
      } else {
        for (long long br = 0; br < t.rows / 16; ++br)
          for (long long bc = 0; bc < re / 16; ++bc) blocks.emplace_back(br * 16 * re + bc * 16, re);
      }
      for (const auto& [base, stride] : blocks) {
        LogicalInstr in{SmemOp::LdmatrixX4, 16, {}};
        for (int l = 0; l < kWarp; ++l) in.bytes.push_back((base + (l % 16) * stride + (l / 16) * 8) * e);
        ex.instrs.push_back(std::move(in));
      }
      break;
    }
  }
  return ex;
}

// A swizzle chain of at most two, applied to element offsets in order.
struct Chain {
  std::array<tpl::SwizzleRt, 2> sw{};
  int n = 0;
  long long operator()(long long off) const {
    for (int i = 0; i < n; ++i) off = tpl::swizzle_apply(off, sw[static_cast<std::size_t>(i)].b,
                                                         sw[static_cast<std::size_t>(i)].m,
                                                         sw[static_cast<std::size_t>(i)].s);
    return off;
  }
};

Chain make_chain(const std::vector<SwizzleSpec>& specs) {
  if (specs.size() > 2) throw_invalid("swizzles: at most two swizzles may be composed");
  Chain c;
  for (const auto& s : specs) {
    if (!tpl::swizzle_valid(s.b, s.m, s.s))
      throw_invalid("swizzles: " + swizzle_name(s) + " is not a valid swizzle (B, M >= 0, |S| >= B)");
    c.sw[static_cast<std::size_t>(c.n++)] = tpl::SwizzleRt{s.b, s.m, s.s};
  }
  return c;
}

// A W-byte access stays whole under a swizzle with B > 0 only if 2^M elements span >= W bytes.
bool keeps_whole(const Chain& c, int access_bytes, int elem_bytes) {
  for (int i = 0; i < c.n; ++i) {
    const tpl::SwizzleRt& s = c.sw[static_cast<std::size_t>(i)];
    if (s.b > 0 && (1LL << s.m) * elem_bytes < access_bytes) return false;
  }
  return true;
}

void map_instr(const LogicalInstr& in, const Chain& c, int elem_bytes, SmemInstruction& out) {
  out.op = in.op;
  out.width = in.width;
  out.addresses.resize(in.bytes.size());
  for (std::size_t i = 0; i < in.bytes.size(); ++i) {
    const long long b = in.bytes[i];
    out.addresses[i] = c(b / elem_bytes) * elem_bytes + b % elem_bytes;
  }
}

PatternCost cost_expansion(const Expansion& ex, const Chain& c, int elem_bytes) {
  PatternCost pc;
  if (!keeps_whole(c, ex.access_bytes, elem_bytes)) {
    pc.legal = false;
    return pc;
  }
  SmemInstruction scratch;
  BankReport rep;
  for (const auto& in : ex.instrs) {
    map_instr(in, c, elem_bytes, scratch);
    analyze_bank(scratch, rep);
    add_instruction_cost(pc, rep);
  }
  return pc;
}

// Checks chains against every pattern, stopping at the first instruction with excess. Instructions
// that rejected earlier candidates are tried first: most candidates fail on the same few.
class Checker {
 public:
  Checker(const SmemTile& tile, const std::vector<Expansion>& ex) : tile_(tile), ex_(ex) {}

  bool free_of_excess(const Chain& c) {
    for (std::size_t i = 0; i < witnesses_.size(); ++i) {
      if (has_excess(c, witnesses_[i])) {
        std::rotate(witnesses_.begin(), witnesses_.begin() + static_cast<long>(i),
                    witnesses_.begin() + static_cast<long>(i) + 1);
        return false;
      }
    }
    for (std::size_t p = 0; p < ex_.size(); ++p) {
      for (std::size_t k = 0; k < ex_[p].instrs.size(); ++k) {
        if (has_excess(c, {p, k})) {
          witnesses_.insert(witnesses_.begin(), {p, k});
          if (witnesses_.size() > kMaxWitnesses) witnesses_.pop_back();
          return false;
        }
      }
    }
    return true;
  }

 private:
  static constexpr std::size_t kMaxWitnesses = 16;
  using Ref = std::pair<std::size_t, std::size_t>;  // (pattern, instruction)

  bool has_excess(const Chain& c, Ref r) {
    map_instr(ex_[r.first].instrs[r.second], c, tile_.elem_bytes, scratch_);
    analyze_bank(scratch_, report_);
    return report_.excess_wavefronts > 0;
  }

  const SmemTile& tile_;
  const std::vector<Expansion>& ex_;
  std::vector<Ref> witnesses_;
  SmemInstruction scratch_;
  BankReport report_;
};

// Every offset of the tile lands inside it, and no two on the same one. `seen` is scratch space.
bool bijective(const SmemTile& tile, const Chain& c, std::vector<char>& seen) {
  const long long n = tile.elems();
  // NOTE: the solver only builds chains whose bit fields lie below bit_width(n); on a tile of 2^k
  // elements such a chain permutes [0, n), so the offset-by-offset walk is needed only otherwise.
  long long top = 0;
  for (int i = 0; i < c.n; ++i) {
    const tpl::SwizzleRt& s = c.sw[static_cast<std::size_t>(i)];
    top |= tpl::swizzle_yyy_mask(s.b, s.m, s.s) | tpl::swizzle_zzz_mask(s.b, s.m, s.s);
  }
  if (pow2(n) && top < n) return true;
  seen.assign(static_cast<std::size_t>(n), 0);
  for (long long o = 0; o < n; ++o) {
    const long long x = c(o);
    if (x < 0 || x >= n || seen[static_cast<std::size_t>(x)]) return false;
    seen[static_cast<std::size_t>(x)] = 1;
  }
  return true;
}

// The order of solver.hpp: (M, |S|, S < 0, B) within a swizzle.
auto shape_key(const tpl::SwizzleRt& s) { return std::make_tuple(s.m, tpl::iabs(s.s), s.s < 0, s.b); }

bool commute(const tpl::SwizzleRt& a, const tpl::SwizzleRt& b) {
  // Neither swizzle changes the bits the other reads, so both orders give the same map.
  return (tpl::swizzle_zzz_mask(a.b, a.m, a.s) & tpl::swizzle_yyy_mask(b.b, b.m, b.s)) == 0 &&
         (tpl::swizzle_zzz_mask(b.b, b.m, b.s) & tpl::swizzle_yyy_mask(a.b, a.m, a.s)) == 0;
}

// Every legal single swizzle of the search space, in (M, |S|, S < 0, B) order.
std::vector<tpl::SwizzleRt> candidate_swizzles(const SmemTile& tile, int access_bytes, const SolveOptions& opt) {
  const long long n = tile.elems();
  const int tile_bits = bit_width(n);
  const int max_m = log2_floor(tile.row_elems());
  int min_m = 0;
  while ((1LL << min_m) * tile.elem_bytes < access_bytes) ++min_m;
  std::vector<tpl::SwizzleRt> out;
  std::vector<char> seen(static_cast<std::size_t>(n));
  for (int b = 1; b <= opt.max_bits; ++b) {
    for (int m = min_m; m <= max_m; ++m) {
      // Both fields inside the offset bits: top bit M + |S| + B - 1 < tile_bits.
      for (int as = b; m + as + b <= tile_bits; ++as) {
        for (int sign : {1, -1}) {
          if (sign < 0 && !opt.allow_negative_shift) continue;
          const tpl::SwizzleRt s{b, m, sign * as};
          if (bijective(tile, Chain{{s, {}}, 1}, seen)) out.push_back(s);
        }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return shape_key(x) < shape_key(y); });
  return out;
}

SwizzleSpec to_spec(const tpl::SwizzleRt& s) { return SwizzleSpec{s.b, s.m, s.s}; }

}  // namespace

void SmemTile::validate() const {
  if (rows < 1) throw_invalid("rows: " + std::to_string(rows) + " must be >= 1");
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8 && elem_bytes != 16)
    throw_invalid("elem-bytes: " + std::to_string(elem_bytes) + " is not allowed (allowed: 1, 2, 4, 8, 16)");
  if (row_bytes < elem_bytes || row_bytes % elem_bytes != 0)
    throw_invalid("row-bytes: " + std::to_string(row_bytes) + " must be a positive multiple of elem-bytes (" +
                  std::to_string(elem_bytes) + ")");
  if (static_cast<long long>(rows) * row_bytes > kMaxTileBytes)
    throw_invalid("rows x row-bytes: " + std::to_string(static_cast<long long>(rows) * row_bytes) +
                  " bytes is larger than shared memory can hold (allowed: at most 262144 bytes)");
}

std::string AccessPattern::name() const {
  switch (kind) {
    case Kind::Store: return "store:" + std::to_string(width);
    case Kind::Load: return "load:" + std::to_string(width);
    case Kind::ColRead: return "colread";
    case Kind::TransposedStore: return "tstore:" + std::to_string(width);
    case Kind::Ldmatrix: return trans ? "ldmatrix.trans" : "ldmatrix";
    case Kind::LdmatrixFlat: return trans ? "ldmatrix.flat.trans" : "ldmatrix.flat";
  }
  return "unknown";
}

AccessPattern parse_access_pattern(const std::string& text) {
  static const char* const kForms =
      " (allowed: store:W, load:W, tstore:V with W, V in 1|2|4|8|16; colread; ldmatrix; ldmatrix.trans; "
      "ldmatrix.flat; ldmatrix.flat.trans)";
  AccessPattern p;
  const std::size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const std::string head = text.substr(0, colon);
    const std::string num = text.substr(colon + 1);
    if (head == "store") p.kind = AccessPattern::Kind::Store;
    else if (head == "load") p.kind = AccessPattern::Kind::Load;
    else if (head == "tstore") p.kind = AccessPattern::Kind::TransposedStore;
    else throw_invalid("pattern: '" + text + "' is not a known pattern" + kForms);
    if (num == "1" || num == "2" || num == "4" || num == "8" || num == "16") p.width = std::stoi(num);
    else throw_invalid("pattern: '" + text + "': width '" + num + "' is not allowed" + kForms);
    return p;
  }
  if (text == "colread") p.kind = AccessPattern::Kind::ColRead;
  else if (text == "ldmatrix" || text == "ldmatrix.trans") p.kind = AccessPattern::Kind::Ldmatrix;
  else if (text == "ldmatrix.flat" || text == "ldmatrix.flat.trans") p.kind = AccessPattern::Kind::LdmatrixFlat;
  else throw_invalid("pattern: '" + text + "' is not a known pattern" + kForms);
  p.trans = text.size() > 6 && text.compare(text.size() - 6, 6, ".trans") == 0;
  return p;
}

bool is_tile_bijection(const SmemTile& tile, const std::vector<SwizzleSpec>& swizzles) {
  tile.validate();
  std::vector<char> seen;
  return bijective(tile, make_chain(swizzles), seen);
}

std::vector<SmemInstruction> expand_pattern(const SmemTile& tile, const AccessPattern& pattern,
                                            const std::vector<SwizzleSpec>& swizzles) {
  tile.validate();
  const Chain c = make_chain(swizzles);
  const Expansion ex = expand_logical(tile, pattern);
  if (!keeps_whole(c, ex.access_bytes, tile.elem_bytes))
    throw_invalid("pattern " + pattern.name() + ": the swizzle splits its " + std::to_string(ex.access_bytes) +
                  "-byte accesses (needs 2^M * elem-bytes >= " + std::to_string(ex.access_bytes) + ")");
  std::vector<SmemInstruction> out(ex.instrs.size());
  for (std::size_t i = 0; i < ex.instrs.size(); ++i) map_instr(ex.instrs[i], c, tile.elem_bytes, out[i]);
  return out;
}

PatternCost evaluate_pattern(const SmemTile& tile, const AccessPattern& pattern,
                             const std::vector<SwizzleSpec>& swizzles) {
  tile.validate();
  return cost_expansion(expand_logical(tile, pattern), make_chain(swizzles), tile.elem_bytes);
}

SolveResult solve_swizzle(const SmemTile& tile, const std::vector<AccessPattern>& patterns,
                          const SolveOptions& options) {
  tile.validate();
  if (patterns.empty()) throw_invalid("pattern: give at least one access pattern");
  if (options.max_bits < 1 || options.max_bits > 5)
    throw_invalid("max-bits: " + std::to_string(options.max_bits) + " is out of range (allowed: 1 to 5)");

  std::vector<Expansion> ex;
  int access_bytes = 0;
  for (const auto& p : patterns) {
    ex.push_back(expand_logical(tile, p));
    access_bytes = std::max(access_bytes, ex.back().access_bytes);
  }

  SolveResult result;
  const Chain identity;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const PatternCost before = cost_expansion(ex[i], identity, tile.elem_bytes);
    result.patterns.push_back({patterns[i].name(), before, before});
  }
  const bool identity_free = std::all_of(result.patterns.begin(), result.patterns.end(),
                                         [](const PatternOutcome& o) { return o.before.excess_wavefronts == 0; });
  if (identity_free) {
    result.status = SolveStatus::IdentityIsFree;
    return result;
  }

  const std::vector<tpl::SwizzleRt> cands = candidate_swizzles(tile, access_bytes, options);
  Checker checker(tile, ex);
  Chain found;

  // Singles: fewest bits first, then the (M, |S|, S < 0) order of the candidate list.
  for (int b = 1; b <= options.max_bits && found.n == 0; ++b) {
    for (const auto& s : cands) {
      if (s.b != b) continue;
      Chain c;
      c.sw[0] = s;
      c.n = 1;
      ++result.singles_tried;
      if (checker.free_of_excess(c)) {
        found = c;
        break;
      }
    }
  }

  // Pairs, only when no single swizzle works.
  if (found.n == 0 && options.allow_composition) {
    for (int total = 2; total <= 2 * options.max_bits && found.n == 0; ++total) {
      for (std::size_t i = 0; i < cands.size() && found.n == 0; ++i) {
        const int rest = total - cands[i].b;
        if (rest < 1 || rest > options.max_bits) continue;
        for (std::size_t j = 0; j < cands.size(); ++j) {
          if (j == i || cands[j].b != rest) continue;
          if (j < i && commute(cands[i], cands[j])) continue;  // tried as (j, i) already
          Chain c;
          c.sw[0] = cands[i];
          c.sw[1] = cands[j];
          c.n = 2;
          ++result.compositions_tried;
          if (checker.free_of_excess(c)) {
            found = c;
            break;
          }
        }
      }
    }
  }

  if (found.n == 0) {
    result.status = SolveStatus::NotFound;
    return result;
  }
  result.status = SolveStatus::Found;
  for (int i = 0; i < found.n; ++i) result.swizzles.push_back(to_spec(found.sw[static_cast<std::size_t>(i)]));
  for (std::size_t i = 0; i < patterns.size(); ++i)
    result.patterns[i].after = cost_expansion(ex[i], found, tile.elem_bytes);
  return result;
}

std::string swizzle_name(const SwizzleSpec& spec) {
  return "Swizzle<" + std::to_string(spec.b) + "," + std::to_string(spec.m) + "," + std::to_string(spec.s) + ">";
}

}  // namespace swz
