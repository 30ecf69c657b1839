// swzjit public API: swizzle specifications and swizzled 2-D layouts (host side).
// The math itself lives in templates/swizzle.cuh, shared with the kernels.
#pragma once

#include <string>
#include <vector>

namespace swz {

/// Swizzle<B,M,S> with CuTe's semantics: offset ^ ((offset & yyy_mask) >> S), yyy_mask =
/// ((1<<B)-1) << (M + max(0,S)); negative S shifts left. B = 0 is the identity.
struct SwizzleSpec {
  int b = 0;
  int m = 0;
  int s = 0;

  /// Apply to one offset; throws InvalidArgument (as validate()) for an invalid spec.
  long long operator()(long long offset) const;
  /// Throws swz::Error(InvalidArgument) naming the broken rule (B, M >= 0; |S| >= B; width <= 40 bits).
  void validate() const;
  /// "Sw<B,M,S>".
  std::string to_string() const;
  bool operator==(const SwizzleSpec& o) const { return b == o.b && m == o.m && s == o.s; }
  bool operator!=(const SwizzleSpec& o) const { return !(*this == o); }
};

/// Parse "B,M,S" (e.g. "3,3,3" or "1,0,-1"); throws InvalidArgument with the allowed form.
SwizzleSpec parse_swizzle(const std::string& text);

/// A 2-D layout: shape (rows, cols) and strides; offset(r, c) = r*stride_row + c*stride_col.
struct LayoutSpec {
  long long rows = 0;
  long long cols = 0;
  long long stride_row = 0;
  long long stride_col = 0;
  static LayoutSpec row_major(long long rows, long long cols) { return {rows, cols, cols, 1}; }
  static LayoutSpec col_major(long long rows, long long cols) { return {rows, cols, 1, rows}; }
  /// Throws InvalidArgument for a non-positive shape, a shape too large to print (> 2^20 cells) or a
  /// stride outside [-2^30, 2^30].
  void validate() const;
};

/// composition(swizzle, layout): row-major list of rows*cols offsets, swizzle(layout(r, c)).
std::vector<long long> layout_offsets(const SwizzleSpec& swizzle, const LayoutSpec& layout);

/// The same as text, drawn like CuTe's print_layout.
std::string format_layout_text(const SwizzleSpec& swizzle, const LayoutSpec& layout);
/// The same as CSV: rows lines of cols comma-separated offsets.
std::string format_layout_csv(const SwizzleSpec& swizzle, const LayoutSpec& layout);
/// The same as an SVG grid, each cell coloured by the 4-byte bank of offset*elem_bytes. At most 2^14
/// cells (e.g. 128x128, about 5 MB); larger shapes throw InvalidArgument saying how to get a smaller picture.
std::string format_layout_svg(const SwizzleSpec& swizzle, const LayoutSpec& layout, int elem_bytes);

}  // namespace swz
