// generator: swizzled 2-D layouts for the host (include/swzjit/analysis/layout.hpp); evaluates the
// functions of templates/swizzle.cuh and renders them as text, CSV or a bank-coloured SVG.
#include "swzjit/analysis/layout.hpp"

#include <cstdio>
#include <sstream>

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"
#include "templates/swizzle.cuh"

namespace swz {

namespace {

constexpr long long kMaxCells = 1LL << 20;
// |strides| bound: offsets stay below 2^51 and offset * elem_bytes (SVG banks) below 2^55, so nothing overflows.
constexpr long long kMaxStride = 1LL << 30;
// An SVG cell is ~300 bytes: 128x128 cells make ~5 MB; 1024x1024 made 316 MB (issue 10 item 13).
constexpr long long kMaxSvgCells = 1LL << 14;

tpl::SwizzleRt rt(const SwizzleSpec& s) { return tpl::SwizzleRt{s.b, s.m, s.s}; }
tpl::Layout2D rt(const LayoutSpec& l) { return tpl::Layout2D{l.rows, l.cols, l.stride_row, l.stride_col}; }

}  // namespace

long long SwizzleSpec::operator()(long long offset) const {
  // NOTE: an invalid B shifts 1LL by 64 or more (undefined); validating costs four compares.
  if (!tpl::swizzle_valid(b, m, s)) validate();
  return rt(*this)(offset);
}

void SwizzleSpec::validate() const {
  if (b < 0) throw_invalid("swizzle: B = " + std::to_string(b) + " must be >= 0");
  if (m < 0) throw_invalid("swizzle: M = " + std::to_string(m) + " must be >= 0");
  if (tpl::iabs(s) < b)
    throw_invalid("swizzle: |S| = " + std::to_string(tpl::iabs(s)) + " must be >= B = " + std::to_string(b) +
                  " (the XOR fields would overlap)");
  if (!tpl::swizzle_valid(b, m, s))
    throw_invalid("swizzle: B + M + |S| must be <= 40 (got " +
                  std::to_string(static_cast<long long>(b) + m + tpl::iabs(s)) + ")");
}

std::string SwizzleSpec::to_string() const {
  return "Sw<" + std::to_string(b) + "," + std::to_string(m) + "," + std::to_string(s) + ">";
}

SwizzleSpec parse_swizzle(const std::string& text) {
  static const char* const kForm = " (expected B,M,S: three integers, e.g. 3,3,3 or 1,0,-1)";
  std::vector<int> v;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (v.size() == 3) throw_invalid("--swizzle: '" + text + "' has more than three numbers" + kForm);
    try {
      v.push_back(static_cast<int>(parse_integer("--swizzle", item, -64, 64)));
    } catch (const Error& e) {
      throw_invalid(std::string(e.what()) + kForm);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (v.size() != 3) throw_invalid("--swizzle: '" + text + "' is not B,M,S" + kForm);
  SwizzleSpec spec{v[0], v[1], v[2]};
  spec.validate();
  return spec;
}

void LayoutSpec::validate() const {
  if (rows <= 0 || cols <= 0)
    throw_invalid("layout: shape " + std::to_string(rows) + "," + std::to_string(cols) +
                  " must be positive (rows,cols >= 1)");
  if (rows > kMaxCells || cols > kMaxCells || rows * cols > kMaxCells)
    throw_invalid("layout: shape " + std::to_string(rows) + "x" + std::to_string(cols) + " has more than 2^20 cells");
  if (stride_row < -kMaxStride || stride_row > kMaxStride || stride_col < -kMaxStride || stride_col > kMaxStride)
    throw_invalid("layout: strides " + std::to_string(stride_row) + "," + std::to_string(stride_col) +
                  " must be in [-2^30, 2^30]");
}

std::vector<long long> layout_offsets(const SwizzleSpec& swizzle, const LayoutSpec& layout) {
  swizzle.validate();
  layout.validate();
  const tpl::SwizzleRt sw = rt(swizzle);
  const tpl::Layout2D lay = rt(layout);
  std::vector<long long> out;
  out.reserve(static_cast<std::size_t>(layout.rows * layout.cols));
  for (long long r = 0; r < layout.rows; ++r)
    for (long long c = 0; c < layout.cols; ++c) out.push_back(tpl::swizzled_offset(sw, lay, r, c));
  return out;
}

std::string format_layout_csv(const SwizzleSpec& swizzle, const LayoutSpec& layout) {
  const auto offs = layout_offsets(swizzle, layout);
  std::string out;
  for (long long r = 0; r < layout.rows; ++r) {
    for (long long c = 0; c < layout.cols; ++c) {
      if (c) out += ',';
      out += std::to_string(offs[static_cast<std::size_t>(r * layout.cols + c)]);
    }
    out += '\n';
  }
  return out;
}

std::string format_layout_text(const SwizzleSpec& swizzle, const LayoutSpec& layout) {
  const auto offs = layout_offsets(swizzle, layout);
  int width = 1;
  for (long long v : offs) width = std::max<int>(width, static_cast<int>(std::to_string(v).size()));
  width = std::max<int>(width, static_cast<int>(std::to_string(layout.cols - 1).size()));
  const int row_label = static_cast<int>(std::to_string(layout.rows - 1).size());
  std::ostringstream os;
  os << swizzle.to_string() << " o _0 o (" << layout.rows << "," << layout.cols << "):(" << layout.stride_row
     << "," << layout.stride_col << ")\n";
  std::string sep(static_cast<std::size_t>(row_label + 1), ' ');
  sep += '+';
  for (long long c = 0; c < layout.cols; ++c) sep += std::string(static_cast<std::size_t>(width + 2), '-') + "+";
  char buf[64];
  os << std::string(static_cast<std::size_t>(row_label + 2), ' ');
  for (long long c = 0; c < layout.cols; ++c) {
    std::snprintf(buf, sizeof buf, " %*lld ", width, c);
    os << buf << ' ';
  }
  os << '\n' << sep << '\n';
  for (long long r = 0; r < layout.rows; ++r) {
    std::snprintf(buf, sizeof buf, "%*lld |", row_label, r);
    os << buf;
    for (long long c = 0; c < layout.cols; ++c) {
      std::snprintf(buf, sizeof buf, " %*lld |", width, offs[static_cast<std::size_t>(r * layout.cols + c)]);
      os << buf;
    }
    os << '\n' << sep << '\n';
  }
  return os.str();
}

namespace {

// Text inside SVG (XML) elements: the swizzle's own name "Swizzle<B,M,S>" has angle brackets.
std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string format_layout_svg(const SwizzleSpec& swizzle, const LayoutSpec& layout, int elem_bytes) {
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8 && elem_bytes != 16)
    throw_invalid("--elem-bytes: " + std::to_string(elem_bytes) + " is not allowed (allowed: 1|2|4|8|16)");
  layout.validate();
  if (layout.rows * layout.cols > kMaxSvgCells)
    throw_invalid("layout: an SVG of " + std::to_string(layout.rows) + "x" + std::to_string(layout.cols) +
                  " cells would take about " + std::to_string(layout.rows * layout.cols * 300 / 1000000) +
                  " MB; svg draws at most " + std::to_string(kMaxSvgCells) +
                  " cells (e.g. 128x128): pass a smaller --shape (one tile, e.g. 32,32) or use --format text|csv");
  const auto offs = layout_offsets(swizzle, layout);
  const int cell = 44, margin = 36, legend = 40;
  const long long w = margin + layout.cols * cell + 8, h = margin + layout.rows * cell + legend;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
     << "\" font-family=\"monospace\" font-size=\"11\">\n";
  os << "<title>" << xml_escape(swizzle.to_string()) << " o (" << layout.rows << "," << layout.cols << "):(" << layout.stride_row
     << "," << layout.stride_col << "), " << elem_bytes << "-byte elements, coloured by 4-byte bank</title>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (long long c = 0; c < layout.cols; ++c)
    os << "<text x=\"" << margin + c * cell + cell / 2 << "\" y=\"" << margin - 8 << "\" text-anchor=\"middle\">" << c
       << "</text>\n";
  for (long long r = 0; r < layout.rows; ++r) {
    os << "<text x=\"" << margin - 6 << "\" y=\"" << margin + r * cell + cell / 2 + 4 << "\" text-anchor=\"end\">" << r
       << "</text>\n";
    for (long long c = 0; c < layout.cols; ++c) {
      const long long off = offs[static_cast<std::size_t>(r * layout.cols + c)];
      // NOTE: a negative offset (negative strides) still has a bank; take it modulo 32 properly.
      const long long bank = (((off * elem_bytes) >> 2) % 32 + 32) % 32;
      // 32 hues, alternating lightness so neighbouring banks differ clearly.
      const int hue = static_cast<int>((bank * 360) / 32);
      const int light = (bank % 2) ? 62 : 78;
      const long long x = margin + c * cell, y = margin + r * cell;
      os << "<g><title>(" << r << "," << c << ") offset " << off << " bank " << bank << "</title>"
         << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\"hsl("
         << hue << ",70%," << light << "%)\" stroke=\"#333\" stroke-width=\"0.5\"/>"
         << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + 18 << "\" text-anchor=\"middle\">" << off << "</text>"
         << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + 34 << "\" text-anchor=\"middle\" font-size=\"9\" fill=\"#333\">b"
         << bank << "</text></g>\n";
    }
  }
  os << "<text x=\"" << margin << "\" y=\"" << h - 14 << "\">cell: offset / b = 4-byte bank of offset*" << elem_bytes
     << " bytes; same colour in one access = same bank</text>\n";
  os << "</svg>\n";
  return os.str();
}

}  // namespace swz
