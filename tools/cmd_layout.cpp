// tools: `swz layout` — print composition(Swizzle<B,M,S>, layout) as text, CSV or a bank-coloured SVG.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "swzjit/analysis/layout.hpp"

namespace swz {
namespace cli {

namespace {

int run_layout(Args& args) {
  const auto sw_text = args.value("swizzle");
  const auto shape_text = args.value("shape");
  const auto order = args.value("order");
  const auto stride_text = args.value("stride");
  const std::string format = parse_choice("--format", args.value_or("format", "text"), {"text", "csv", "svg"});
  const auto elem_text = args.value("elem-bytes");
  args.finish();
  if (!sw_text) throw UsageError("--swizzle B,M,S is required (e.g. --swizzle 3,3,3)");
  if (!shape_text) throw UsageError("--shape R,C is required (e.g. --shape 8,8)");
  if (order && stride_text) throw UsageError("--order and --stride are exclusive (give one)");
  if (elem_text && format != "svg") throw UsageError("--elem-bytes applies to --format svg only");

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

  std::string out;
  if (format == "csv")
    out = format_layout_csv(sw, layout);
  else if (format == "svg")
    out = format_layout_svg(sw, layout, elem);
  else
    out = format_layout_text(sw, layout);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

const char kHelp[] =
    "usage: swz layout --swizzle B,M,S --shape R,C [--order row|col | --stride SR,SC]\n"
    "                  [--format text|csv|svg] [--elem-bytes 1|2|4|8|16]\n\n"
    "Print the offset at each (r, c) of composition(Swizzle<B,M,S>, layout): the layout maps\n"
    "(r, c) to r*SR + c*SC, then the swizzle XORs bits YYY into ZZZ (CuTe semantics):\n"
    "  offset ^ ((offset & yyy_mask) >> S),  yyy_mask = ((1<<B)-1) << (M + max(0,S))\n"
    "B = XOR bits, M = log2 of elements kept together, S = shift (|S| >= B; negative shifts left).\n\n"
    "options:\n"
    "  --swizzle B,M,S   the swizzle, e.g. 3,3,3 or 1,0,-1; 0,0,0 is the identity\n"
    "  --shape R,C       rows and columns (positive)\n"
    "  --order row|col   row-major (strides C,1; default) or column-major (strides 1,R)\n"
    "  --stride SR,SC    arbitrary strides instead of --order\n"
    "  --format FMT      text (a grid like CuTe's print_layout; default), csv (R lines of C\n"
    "                    comma-separated offsets, nothing else), svg (cells coloured by bank;\n"
    "                    at most 16384 cells, e.g. 128x128: draw one tile, not a whole matrix)\n"
    "  --elem-bytes N    element size for the svg bank colouring (default 4)\n\n"
    "examples:\n"
    "  swz layout --swizzle 2,1,2 --shape 8,8\n"
    "  swz layout --swizzle 1,0,-1 --shape 4,4 --stride 1,4 --format csv\n"
    "  swz layout --swizzle 5,0,5 --shape 32,32 --format svg > transpose_tile.svg\n";

}  // namespace

const Command& layout_command() {
  static const Command cmd{"layout", "print a swizzled layout's offsets (text, csv, bank-coloured svg)", kHelp,
                           &run_layout};
  return cmd;
}

}  // namespace cli
}  // namespace swz
