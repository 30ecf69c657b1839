// tools: `swz layout` — print composition(Swizzle<B,M,S>, layout) as text, CSV, JSON or a bank-coloured
// SVG; --highlight draws one warp instruction on it (tools/layout_highlight.cpp).
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "layout_highlight.hpp"
#include "output.hpp"
#include "swzjit/analysis/layout.hpp"

namespace swz {
namespace cli {

namespace {

std::string layout_json(const SwizzleSpec& sw, const LayoutSpec& layout, int elem, const Highlight* h) {
  const std::vector<long long> offs = layout_offsets(sw, layout);
  std::string out = "{" + json_version_member() + "\"swizzle\": " + json_string(sw.to_string()) +
                    ", \"rows\": " + std::to_string(layout.rows) + ", \"cols\": " + std::to_string(layout.cols) +
                    ", \"stride_row\": " + std::to_string(layout.stride_row) +
                    ", \"stride_col\": " + std::to_string(layout.stride_col) +
                    ", \"elem_bytes\": " + std::to_string(elem) + ", \"offsets\": [";
  for (long long r = 0; r < layout.rows; ++r) {
    out += r ? ", [" : "[";
    for (long long c = 0; c < layout.cols; ++c)
      out += (c ? ", " : "") + std::to_string(offs[static_cast<std::size_t>(r * layout.cols + c)]);
    out += "]";
  }
  out += "]";
  if (h) out += ", \"highlight\": " + highlight_json(*h, layout);
  return out + "}\n";
}

int run_layout(Args& args) {
  const auto sw_text = args.value("swizzle");
  const auto shape_text = args.value("shape");
  const auto order = args.value("order");
  const auto stride_text = args.value("stride");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv, Format::Svg});
  const auto elem_text = args.value("elem-bytes");
  const auto highlight = args.value("highlight");
  args.finish();
  if (!sw_text) throw UsageError("--swizzle B,M,S is required (e.g. --swizzle 3,3,3)");
  if (!shape_text) throw UsageError("--shape R,C is required (e.g. --shape 8,8)");
  if (order && stride_text) throw UsageError("--order and --stride are exclusive (give one)");
  if (elem_text && format == Format::Csv)
    throw UsageError("--elem-bytes does not apply to --format csv (offsets only; it colours svg and addresses --highlight)");
  if (highlight && format == Format::Csv)
    throw UsageError("--highlight applies to --format text, json and svg (csv is the bare grid)");

  const SwizzleSpec sw = parse_swizzle(*sw_text);
  const auto shape = parse_int_list("--shape", *shape_text, -(1LL << 40), 1LL << 40, 2);
  if (shape[0] <= 0 || shape[1] <= 0)
    throw UsageError("--shape: " + *shape_text + " must be two positive integers R,C");
  LayoutSpec layout = LayoutSpec::row_major(shape[0], shape[1]);
  if (order) {
    if (parse_choice("--order", *order, {"row", "col"}) == "col") layout = LayoutSpec::col_major(shape[0], shape[1]);
  } else if (stride_text) {
    const auto st = parse_int_list("--stride", *stride_text, -(1LL << 30), 1LL << 30, 2);
    layout.stride_row = st[0];
    layout.stride_col = st[1];
  }
  const int elem = elem_text ? static_cast<int>(parse_int("--elem-bytes", *elem_text, 1, 16)) : 4;
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8 && elem != 16)
    throw UsageError("--elem-bytes: " + std::to_string(elem) + " is not allowed (allowed: 1|2|4|8|16)");
  Highlight h;
  if (highlight) {
    layout.validate();
    h = make_highlight(*highlight, sw, layout, elem);
  }

  std::string out;
  if (format == Format::Csv)
    out = format_layout_csv(sw, layout);
  else if (format == Format::Json)
    out = layout_json(sw, layout, elem, highlight ? &h : nullptr);
  else if (format == Format::Svg)
    out = highlight ? highlight_svg(h, sw, layout, elem) : format_layout_svg(sw, layout, elem);
  else
    out = format_layout_text(sw, layout) + (highlight ? "\n" + highlight_text(h, layout) : "");
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

const char kHelp[] =
    "usage: swz layout --swizzle B,M,S --shape R,C [--order row|col | --stride SR,SC]\n"
    "                  [--format text|json|csv|svg] [--elem-bytes 1|2|4|8|16] [--highlight OP:WHAT]\n\n"
    "Print the offset at each (r, c) of composition(Swizzle<B,M,S>, layout): the layout maps\n"
    "(r, c) to r*SR + c*SC, then the swizzle XORs bits YYY into ZZZ (CuTe semantics):\n"
    "  offset ^ ((offset & yyy_mask) >> S),  yyy_mask = ((1<<B)-1) << (M + max(0,S))\n"
    "B = XOR bits, M = log2 of elements kept together, S = shift (|S| >= B; negative shifts left).\n\n"
    "options:\n"
    "  --swizzle B,M,S   the swizzle, e.g. 3,3,3 or 1,0,-1; 0,0,0 is the identity\n"
    "  --shape R,C       rows and columns (positive)\n"
    "  --order row|col   row-major (strides C,1) or column-major (strides 1,R) (default row)\n"
    "  --stride SR,SC    arbitrary strides instead of --order\n"
    "  --format FMT      text (a grid like CuTe's print_layout; default), json (one object: swizzle,\n"
    "                    shape, strides, offsets[r][c], highlight), csv (R lines of C comma-separated\n"
    "                    offsets, nothing else: a grid, not a table, so no header row), svg (cells\n"
    "                    coloured by bank; at most 16384 cells, e.g. 128x128: draw one tile)\n"
    "  --json            short for --format json\n"
    "  --elem-bytes N    element size in bytes, for the bank colours and --highlight (default 4)\n"
    "  --highlight OP:WHAT\n"
    "                    one warp instruction drawn on the tile (text, json, svg): the cells each lane\n"
    "                    touches, its bank and the wavefront that serves it, costed by the bank model\n"
    "                    (swz bank --help). OP: lds, sts, ldmatrix.x1|x2|x4[.trans]. WHAT:\n"
    "        A0,A1,...   byte addresses, one per lane (as swz bank --addresses)\n"
    "        col=C       lane i reads element (i, C), i < min(32, R): a transpose's column read\n"
    "        row=R       lane i reads element (R, i), i < min(32, C)\n"
    "        at=R,C      ldmatrix: lane l gives the row address of element (R + l%16, C + (l/16)*16/E)\n"
    "                    for .x4, (R + l, C) for .x1 and .x2\n"
    "                    cells are logical (r, c), so the same WHAT shows what a swizzle changes\n\n"
    "examples:\n"
    "  swz layout --swizzle 2,1,2 --shape 8,8\n"
    "  swz layout --swizzle 1,0,-1 --shape 4,4 --stride 1,4 --format csv\n"
    "  swz layout --swizzle 5,0,5 --shape 32,32 --format svg > transpose_tile.svg\n"
    "  # a transpose's column read: 32 wavefronts on the plain tile, 1 on the swizzled one\n"
    "  swz layout --swizzle 0,0,0 --shape 32,32 --format svg --highlight lds:col=0 > before.svg\n"
    "  swz layout --swizzle 5,0,5 --shape 32,32 --format svg --highlight lds:col=0 > after.svg\n"
    "  swz layout --swizzle 3,3,3 --shape 16,64 --elem-bytes 2 --highlight ldmatrix.x4:at=0,0\n";

}  // namespace

const Command& layout_command() {
  static const Command cmd{"layout", "print a swizzled layout's offsets (text, json, csv, bank-coloured svg)", kHelp,
                           &run_layout};
  return cmd;
}

}  // namespace cli
}  // namespace swz
