// tools: `swz layout --highlight`: one warp instruction drawn on a swizzled tile -- which cells each lane
// touches, which bank each lands in and which wavefront serves it (the bank model, analysis/bank.hpp).
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/bank.hpp"
#include "swzjit/analysis/layout.hpp"

namespace swz {
namespace cli {

/// One active lane of a highlighted instruction.
struct HighlightLane {
  int lane = 0;
  long long address = 0;   ///< byte address (the swizzled offset times the element size)
  int bank = 0;            ///< bank of the first 4-byte word
  int phase = 0;           ///< the phase of the instruction the lane belongs to
  int wavefront = 0;       ///< 0-based wavefront of its phase that serves the lane's last word
  bool issued = true;      ///< false for ldmatrix lanes past 8N (their address is ignored)
  std::vector<std::size_t> cells;  ///< row-major indices (r * cols + c) of the tile's cells it touches
};

/// The instruction, every lane's place in the picture and the model's cost.
struct Highlight {
  std::string spec;  ///< as given, e.g. "lds:col=0"
  SmemInstruction instruction;
  bool trans = false;
  std::vector<HighlightLane> lanes;
  BankReport report;
};

/// Parses `OP:WHAT` against a tile and computes the highlight. OP: lds, sts, ldmatrix.x1|x2|x4[.trans].
/// WHAT: A0,A1,...  byte addresses, one per lane (as `swz bank --addresses`);
///       col=C      lane i reads element (i, C), i < min(32, rows) (a transpose's column read);
///       row=R      lane i reads element (R, i), i < min(32, cols);
///       at=R,C     (ldmatrix) lane l gives the row address of element (R + l % 16, C + (l / 16) * 16/E)
///                  for .x4, (R + l, C) for .x1 (l < 8) and .x2 (l < 16).
/// Logical cells are mapped through the swizzled layout, so the same WHAT costs differently per swizzle.
/// Throws UsageError naming --highlight and the accepted forms.
Highlight make_highlight(const std::string& spec, const SwizzleSpec& swizzle, const LayoutSpec& layout, int elem_bytes);

/// The text picture: which lane touches each cell, then the wavefronts of each phase.
std::string highlight_text(const Highlight& h, const LayoutSpec& layout);
/// A bank-coloured SVG with the lanes' cells outlined and labelled (lane, wavefront), other cells faded,
/// and a legend of the wavefronts on the right.
std::string highlight_svg(const Highlight& h, const SwizzleSpec& swizzle, const LayoutSpec& layout, int elem_bytes);
/// The members describing the highlight in `swz layout --format json` ("highlight": {...}).
std::string highlight_json(const Highlight& h, const LayoutSpec& layout);

}  // namespace cli
}  // namespace swz
