// tools: `swz solve` — find the cheapest XOR swizzle of a shared-memory tile that frees a set of
// access patterns of excess wavefronts (include/swzjit/analysis/solver.hpp), and print before/after costs.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "swzjit/error.hpp"
#include "swzjit/analysis/solver.hpp"

namespace swz {
namespace cli {

namespace {

const char* status_word(SolveStatus s) {
  switch (s) {
    case SolveStatus::IdentityIsFree: return "identity";
    case SolveStatus::Found: return "found";
    case SolveStatus::NotFound: return "none";
  }
  return "none";
}

std::string cost_json(const PatternCost& c) {
  return "{\"legal\":" + std::string(c.legal ? "true" : "false") + ",\"instructions\":" +
         std::to_string(c.instructions) + ",\"wavefronts\":" + std::to_string(c.wavefronts) +
         ",\"ideal_wavefronts\":" + std::to_string(c.ideal_wavefronts) +
         ",\"excess_wavefronts\":" + std::to_string(c.excess_wavefronts) + ",\"max_way\":" + std::to_string(c.max_way) +
         "}";
}

std::string format_json(const SmemTile& t, const SolveResult& r) {
  std::string out = "{" + json_version_member() + "\"tile\":{\"rows\":" + std::to_string(t.rows) + ",\"row_bytes\":" + std::to_string(t.row_bytes) +
                    ",\"elem_bytes\":" + std::to_string(t.elem_bytes) + "},\"status\":\"" + status_word(r.status) +
                    "\",\"swizzles\":[";
  for (std::size_t i = 0; i < r.swizzles.size(); ++i)
    out += std::string(i ? "," : "") + "{\"b\":" + std::to_string(r.swizzles[i].b) + ",\"m\":" +
           std::to_string(r.swizzles[i].m) + ",\"s\":" + std::to_string(r.swizzles[i].s) + "}";
  out += "],\"patterns\":[";
  for (std::size_t i = 0; i < r.patterns.size(); ++i)
    out += std::string(i ? "," : "") + "{\"pattern\":\"" + r.patterns[i].pattern + "\",\"before\":" +
           cost_json(r.patterns[i].before) + ",\"after\":" + cost_json(r.patterns[i].after) + "}";
  out += "],\"singles_tried\":" + std::to_string(r.singles_tried) +
         ",\"compositions_tried\":" + std::to_string(r.compositions_tried) + "}\n";
  return out;
}

std::string format_text(const SmemTile& t, const SolveResult& r) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "tile: %d rows x %d bytes, %d-byte elements (%d x %d elements)\n", t.rows,
                t.row_bytes, t.elem_bytes, t.rows, t.row_elems());
  out += line;
  switch (r.status) {
    case SolveStatus::IdentityIsFree:
      out += "swizzle: none needed (the plain row-major tile has no excess wavefronts)\n";
      break;
    case SolveStatus::Found:
      out += "swizzle: " + swizzle_name(r.swizzles[0]);
      if (r.swizzles.size() > 1)
        out += " then " + swizzle_name(r.swizzles[1]) + " (composed: the second applied to the first's output)";
      out += ", on element offsets (byte address = swizzled offset * elem-bytes)\n";
      break;
    case SolveStatus::NotFound:
      out += "swizzle: none found in the searched space (no single swizzle or composition of two removes "
             "every excess wavefront)\n";
      break;
  }
  std::snprintf(line, sizeof line, "searched: %lld single swizzle(s), %lld composition(s)\n\n", r.singles_tried,
                r.compositions_tried);
  out += line;
  std::snprintf(line, sizeof line, "%-20s %6s | %-33s | %s\n", "", "", "before (identity)",
                r.status == SolveStatus::Found ? "after" : "after (unchanged)");
  out += line;
  std::snprintf(line, sizeof line, "%-20s %6s | %10s %6s %7s %7s | %10s %6s %7s %7s\n", "pattern", "instrs",
                "wavefronts", "ideal", "excess", "max-way", "wavefronts", "ideal", "excess", "max-way");
  out += line;
  for (const auto& p : r.patterns) {
    const PatternCost& b = p.before;
    const PatternCost& a = p.after;
    std::snprintf(line, sizeof line, "%-20s %6d | %10lld %6lld %7lld %7d | %10lld %6lld %7lld %7d\n", p.pattern.c_str(),
                  b.instructions, b.wavefronts, b.ideal_wavefronts, b.excess_wavefronts, b.max_way, a.wavefronts,
                  a.ideal_wavefronts, a.excess_wavefronts, a.max_way);
    out += line;
  }
  return out;
}

std::string format_csv(const SmemTile& t, const SolveResult& r) {
  CsvTable table({"rows", "row_bytes", "elem_bytes", "status", "swizzle", "pattern", "instructions",
                  "before_wavefronts", "before_ideal", "before_excess", "before_max_way", "after_wavefronts",
                  "after_ideal", "after_excess", "after_max_way"});
  std::string swizzle;
  for (const auto& s : r.swizzles) swizzle += (swizzle.empty() ? "" : " then ") + swizzle_name(s);
  for (const auto& p : r.patterns) {
    const PatternCost& b = p.before;
    const PatternCost& a = p.after;
    table.add({std::to_string(t.rows), std::to_string(t.row_bytes), std::to_string(t.elem_bytes), status_word(r.status),
               swizzle, p.pattern, std::to_string(b.instructions), std::to_string(b.wavefronts),
               std::to_string(b.ideal_wavefronts), std::to_string(b.excess_wavefronts), std::to_string(b.max_way),
               std::to_string(a.wavefronts), std::to_string(a.ideal_wavefronts), std::to_string(a.excess_wavefronts),
               std::to_string(a.max_way)});
  }
  return table.str();
}

int run_solve(Args& args) {
  const auto rows_text = args.value("rows");
  const auto row_bytes_text = args.value("row-bytes");
  const auto elem_text = args.value("elem-bytes");
  std::vector<std::string> pattern_texts = args.values("pattern");
  for (auto& p : args.values("patterns")) pattern_texts.push_back(p);  // alias: one comma list
  const auto max_bits_text = args.value("max-bits");
  const bool no_compose = args.flag("no-compose");
  const bool no_negative = args.flag("no-negative-shift");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  if (!rows_text) throw UsageError("--rows is required (the tile's row count, e.g. --rows 32)");
  if (!row_bytes_text) throw UsageError("--row-bytes is required (bytes per tile row, e.g. --row-bytes 128)");
  if (pattern_texts.empty())
    throw UsageError("--pattern is required (e.g. --pattern store:16 --pattern ldmatrix; see --help)");

  SmemTile tile;
  tile.rows = static_cast<int>(parse_int("--rows", *rows_text, 1, 65536));
  tile.row_bytes = static_cast<int>(parse_int("--row-bytes", *row_bytes_text, 1, 262144));
  tile.elem_bytes = elem_text ? static_cast<int>(parse_int("--elem-bytes", *elem_text, 1, 16)) : 4;
  naming_flag([&] { tile.validate(); });

  std::vector<AccessPattern> patterns;
  for (const auto& text : pattern_texts) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      patterns.push_back(naming_flag([&] { return parse_access_pattern(item); }));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }

  SolveOptions opt;
  opt.allow_composition = !no_compose;
  opt.allow_negative_shift = !no_negative;
  if (max_bits_text) opt.max_bits = static_cast<int>(parse_int("--max-bits", *max_bits_text, 1, 5));
  const SolveResult result = naming_flag([&] { return solve_swizzle(tile, patterns, opt); });

  const std::string out = format == Format::Json  ? format_json(tile, result)
                          : format == Format::Csv ? format_csv(tile, result)
                                                  : format_text(tile, result);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

const char kHelp[] =
    "usage: swz solve --rows R --row-bytes N [--elem-bytes E] --pattern P [--pattern P ...]\n"
    "                 [--max-bits 1..5] [--no-compose] [--no-negative-shift] [--format text|json|csv]\n\n"
    "Find the cheapest Swizzle<B,M,S> of a row-major shared-memory tile that leaves every given\n"
    "access pattern with no excess wavefronts under the bank model (see swz bank --help). The\n"
    "swizzle maps ELEMENT offsets (offset = row * (N/E) + col; byte address = swizzled offset * E).\n"
    "Cheapest = fewest XOR bits B, then smallest M, then smallest |S| (positive first). Only when no\n"
    "single swizzle works are compositions of two tried (the second applied to the first's output),\n"
    "by fewest total bits. A swizzle must map the tile onto itself one-to-one and keep each vector\n"
    "access whole (2^M * E >= access bytes). Prints the choice and, per pattern, the wavefronts\n"
    "before (plain row-major) and after. Exit 0 also when none is found (the output says so).\n\n"
    "options:\n"
    "  --rows R            tile rows (>= 1)\n"
    "  --row-bytes N       bytes per row (a multiple of E; rows * N <= 262144)\n"
    "  --elem-bytes E      element size: 1, 2, 4, 8, 16 (default 4)\n"
    "  --pattern P         an access pattern; repeat it or give a comma list (--patterns P1,P2,...\n"
    "                      is the same); lanes are numbered as thread t = 32*warp + lane\n"
    "      store:W         W-byte vector stores of a global->smem copy: lane i of warp j stores the\n"
    "                      (32j+i)-th W-byte chunk of the tile, row-major (W = 1, 2, 4, 8, 16)\n"
    "      load:W          the same addresses read (an smem->global copy)\n"
    "      colread         column reads, as a transpose does: lane i reads element (r0+i, c), 32 rows\n"
    "                      at a time, for every column c (width E)\n"
    "      tstore:V        transposed scalar stores of V-wide global loads (seed 004's A tile): thread t\n"
    "                      stores element k of its vector to (row (t % (R/V))*V + k, column t / (R/V))\n"
    "      ldmatrix        ldmatrix.x4 of every 16x16 block (E = 2): lane l reads block row l%16,\n"
    "                      column (l/16)*8\n"
    "      ldmatrix.trans  ldmatrix.x4.trans: same addresses, so the same cost\n"
    "      ldmatrix.flat   every 256 consecutive elements read as a 16x16 block (with 256-element\n"
    "                      rows: each row as a 16x16 block, seed 003's multi-layer problem); .trans too\n"
    "  --max-bits B        largest B per swizzle (default 5)\n"
    "  --no-compose        try single swizzles only\n"
    "  --no-negative-shift try S > 0 only\n"
    "  --format FMT        text (default) or json (status identity|found|none, swizzles[{b,m,s}],\n"
    "                      patterns[{pattern, before, after}] with wavefronts, ideal_wavefronts,\n"
    "                      excess_wavefronts, max_way) or csv (a header row, one row per pattern;\n"
    "                      swizzle is e.g. \"Sw<5,0,5>\", quoted since it holds commas)\n"
    "  --json              short for --format json\n\n"
    "examples:\n"
    "  # seed 001: 32x32 fp32 transpose tile -> Swizzle<5,0,5> (col ^= row)\n"
    "  swz solve --rows 32 --row-bytes 128 --elem-bytes 4 --pattern store:4 --pattern colread\n"
    "  # seed 003: 16x64 fp16 tile loaded with 16-byte copies, read with ldmatrix -> Swizzle<3,3,3>\n"
    "  swz solve --rows 16 --row-bytes 128 --elem-bytes 2 --pattern store:16,ldmatrix\n"
    "  # seed 004: the SGEMM A tile stored transposed (BK=8 rows of BM=64 floats)\n"
    "  swz solve --rows 8 --row-bytes 256 --pattern tstore:4,load:16\n"
    "  # seed 003 multi-layer: 16x256 fp16 read as column blocks and as row blocks -> two swizzles\n"
    "  swz solve --rows 16 --row-bytes 512 --elem-bytes 2 --pattern store:16,ldmatrix,ldmatrix.flat\n";

}  // namespace

const Command& solve_command() {
  static const Command cmd{"solve", "find the cheapest conflict-free swizzle for a tile's access patterns", kHelp,
                           &run_solve};
  return cmd;
}

}  // namespace cli
}  // namespace swz
