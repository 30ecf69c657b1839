// templates: the XOR swizzle functor Swizzle<B,M,S> (CuTe semantics) and its composition with a
// 2-D layout. The single source of truth for swizzle math: kernels (NVRTC), the bank analyzer and
// the CLI all evaluate these functions.
#pragma once

#include "common.cuh"

namespace swz {
namespace tpl {

// An offset, read as bits (S > 0 shown; S < 0 swaps the roles of the two fields):
//
//   offset = 0b ...... YYY ...... ZZZ MMMM
//                      ^B bits     ^B bits  ^M bits kept together (2^M consecutive elements)
//                      |<-- S --->|
//
//   result = offset ^ ((offset & yyy_mask) >> S)        i.e. ZZZ ^= YYY
//   yyy_mask = ((1 << B) - 1) << (M + max(0, S)),   zzz_mask = ((1 << B) - 1) << (M - min(0, S))
//
// B = 0 is the identity. |S| >= B keeps the two fields disjoint, which makes the map a bijection
// of every aligned block of 2^(M + |S| + B) offsets onto itself.

/// Run-time form: the same function the compile-time Swizzle<B,M,S> uses.
SWZ_HD constexpr long long swizzle_yyy_mask(int b, int m, int s) {
  return (((1LL << b) - 1) << (m + imax(0, s)));
}
SWZ_HD constexpr long long swizzle_zzz_mask(int b, int m, int s) {
  return (((1LL << b) - 1) << (m - imin(0, s)));
}
SWZ_HD constexpr long long swizzle_apply(long long offset, int b, int m, int s) {
  // NOTE: a negative shift shifts left, as CuTe's shiftr does.
  return s >= 0 ? offset ^ ((offset & swizzle_yyy_mask(b, m, s)) >> s)
                : offset ^ ((offset & swizzle_yyy_mask(b, m, s)) << (-s));
}
/// True when (b, m, s) satisfies the invariants the compile-time functor asserts.
SWZ_HD constexpr bool swizzle_valid(int b, int m, int s) {
  return b >= 0 && m >= 0 && iabs(s) >= b && static_cast<long long>(b) + m + iabs(s) <= 40;  // no int overflow
}

template <int BBits, int MBase, int SShift = BBits>
struct Swizzle {
  static_assert(BBits >= 0, "Swizzle: BBits must be >= 0");
  static_assert(MBase >= 0, "Swizzle: MBase must be >= 0");
  static_assert(iabs(SShift) >= BBits, "Swizzle: |SShift| must be >= BBits (fields would overlap)");
  static_assert(BBits + MBase + iabs(SShift) <= 30, "Swizzle: pattern wider than a 32-bit offset");

  static constexpr int kBits = BBits;
  static constexpr int kBase = MBase;
  static constexpr int kShift = SShift;
  static constexpr long long kYyyMask = swizzle_yyy_mask(BBits, MBase, SShift);
  static constexpr long long kZzzMask = swizzle_zzz_mask(BBits, MBase, SShift);

  SWZ_HD constexpr long long operator()(long long offset) const {
    return swizzle_apply(offset, BBits, MBase, SShift);
  }
  SWZ_HD constexpr int operator()(int offset) const {
    return static_cast<int>(swizzle_apply(offset, BBits, MBase, SShift));
  }
};

/// Run-time swizzle, for host code that picks B, M, S from data (solver, analyzer, CLI).
struct SwizzleRt {
  int b = 0;
  int m = 0;
  int s = 0;
  SWZ_HD constexpr long long operator()(long long offset) const { return swizzle_apply(offset, b, m, s); }
};

/// A 2-D layout: (row, col) -> row * stride_row + col * stride_col.
struct Layout2D {
  long long rows = 0;
  long long cols = 0;
  long long stride_row = 0;
  long long stride_col = 0;
  SWZ_HD constexpr long long operator()(long long r, long long c) const {
    return r * stride_row + c * stride_col;
  }
};

SWZ_HD constexpr Layout2D make_row_major(long long rows, long long cols) { return {rows, cols, cols, 1}; }
SWZ_HD constexpr Layout2D make_col_major(long long rows, long long cols) { return {rows, cols, 1, rows}; }

/// composition(swizzle, layout) evaluated at (r, c): the layout first, then the swizzle of its offset.
SWZ_HD constexpr long long swizzled_offset(const SwizzleRt& sw, const Layout2D& layout, long long r, long long c) {
  return sw(layout(r, c));
}

}  // namespace tpl
}  // namespace swz
