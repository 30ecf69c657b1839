// tools: `swz bank` — cost one warp-wide shared-memory instruction with the bank model
// (include/swzjit/analysis/bank.hpp) and print the per-phase table as text or one JSON object.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "swzjit/analysis/bank.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

namespace {

std::string format_text(const SmemInstruction& in, bool trans, const BankReport& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%s%s, %d bytes per lane, %zu active lane(s), %zu phase(s)\n",
                to_string(in.op).c_str(), trans ? ".trans" : "", in.width, in.addresses.size(), r.phases.size());
  out += line;
  out += "phase  lanes   active  wavefronts  ideal  excess  worst bank\n";
  for (std::size_t i = 0; i < r.phases.size(); ++i) {
    const PhaseCost& p = r.phases[i];
    const std::string lanes = std::to_string(p.first_lane) + "-" + std::to_string(p.first_lane + p.lane_count - 1);
    std::string worst = p.active_lanes == 0 ? "(not issued)"
                                            : "bank " + std::to_string(p.worst_bank) + ", " +
                                                  std::to_string(p.max_way) + "-way";
    std::snprintf(line, sizeof line, "%5zu  %-6s  %6d  %10d  %5d  %6d  %s\n", i, lanes.c_str(), p.active_lanes,
                  p.wavefronts, p.ideal_wavefronts, p.wavefronts - p.ideal_wavefronts, worst.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "total: %d wavefront(s), ideal %d, excess %d, worst bank %d-way\n",
                r.wavefronts, r.ideal_wavefronts, r.excess_wavefronts, r.max_way);
  out += line;
  return out;
}

std::string format_json(const SmemInstruction& in, bool trans, const BankReport& r) {
  std::string out = "{" + json_version_member() + "\"op\":\"" + to_string(in.op) + (trans ? ".trans" : "") + "\",\"width\":" +
                    std::to_string(in.width) + ",\"lanes\":" + std::to_string(in.addresses.size()) +
                    ",\"wavefronts\":" + std::to_string(r.wavefronts) +
                    ",\"ideal_wavefronts\":" + std::to_string(r.ideal_wavefronts) +
                    ",\"excess_wavefronts\":" + std::to_string(r.excess_wavefronts) +
                    ",\"max_way\":" + std::to_string(r.max_way) + ",\"phases\":[";
  for (std::size_t i = 0; i < r.phases.size(); ++i) {
    const PhaseCost& p = r.phases[i];
    out += std::string(i ? "," : "") + "{\"first_lane\":" + std::to_string(p.first_lane) +
           ",\"lane_count\":" + std::to_string(p.lane_count) + ",\"active_lanes\":" + std::to_string(p.active_lanes) +
           ",\"wavefronts\":" + std::to_string(p.wavefronts) +
           ",\"ideal_wavefronts\":" + std::to_string(p.ideal_wavefronts) +
           ",\"excess_wavefronts\":" + std::to_string(p.wavefronts - p.ideal_wavefronts) +
           ",\"max_way\":" + std::to_string(p.max_way) + ",\"worst_bank\":" + std::to_string(p.worst_bank) + "}";
  }
  out += "]}\n";
  return out;
}

std::string format_csv(const SmemInstruction& in, bool trans, const BankReport& r) {
  CsvTable t({"op", "width", "lanes", "phase", "first_lane", "lane_count", "active_lanes", "wavefronts",
              "ideal_wavefronts", "excess_wavefronts", "max_way", "worst_bank"});
  for (std::size_t i = 0; i < r.phases.size(); ++i) {
    const PhaseCost& p = r.phases[i];
    t.add({to_string(in.op) + (trans ? ".trans" : ""), std::to_string(in.width), std::to_string(in.addresses.size()),
           std::to_string(i), std::to_string(p.first_lane), std::to_string(p.lane_count), std::to_string(p.active_lanes),
           std::to_string(p.wavefronts), std::to_string(p.ideal_wavefronts),
           std::to_string(p.wavefronts - p.ideal_wavefronts), std::to_string(p.max_way), std::to_string(p.worst_bank)});
  }
  return t.str();
}

int run_bank(Args& args) {
  const auto op_text = args.value("op");
  const auto width_text = args.value("width");
  const auto addr_text = args.value("addresses");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  if (!op_text) throw UsageError("--op is required (allowed: lds|sts|ldmatrix.x1|ldmatrix.x2|ldmatrix.x4[.trans])");
  if (!addr_text) throw UsageError("--addresses A0,A1,... is required (one byte address per active lane)");

  SmemInstruction in;
  bool trans = false;
  in.op = naming_flag([&] { return parse_smem_op(*op_text, &trans); });
  in.width = default_width(in.op);
  if (width_text) {
    in.width = static_cast<int>(parse_int("--width", *width_text, 1, 16));
    if (!width_allowed(in.op, in.width))
      throw UsageError("--width: " + *width_text + " is not allowed for " + *op_text + " (allowed: " +
                       allowed_widths(in.op) + ")");
  }
  // Negative addresses parse here so the model can say which lane is wrong.
  in.addresses = parse_int_list("--addresses", *addr_text, -(1LL << 40), 1LL << 40);
  const BankReport report = naming_flag([&] { return analyze_bank(in); });

  const std::string out = format == Format::Json  ? format_json(in, trans, report)
                          : format == Format::Csv ? format_csv(in, trans, report)
                                                  : format_text(in, trans, report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

const char kHelp[] =
    "usage: swz bank --op OP [--width 1|2|4|8|16] --addresses A0,A1,... [--format text|json|csv]\n\n"
    "Cost one warp-wide shared-memory instruction with the bank model: 32 banks of 4 bytes.\n"
    "The instruction splits into phases: 1-4 byte accesses are one phase of 32 lanes, 8-byte\n"
    "accesses two phases of 16 lanes, 16-byte accesses and ldmatrix four phases of 8 lanes\n"
    "(ldmatrix.xN uses N phases; lanes 8i..8i+7 give the rows of matrix i; lanes past 8N are\n"
    "ignored). In a phase, a bank costs the number of distinct 4-byte words of it touched (the\n"
    "same word is a broadcast); the phase costs its worst bank, the instruction the sum of its\n"
    "phases, in wavefronts. Ideal = ceil(distinct bytes / 128) per phase; excess = cost - ideal.\n"
    "A phase with no active lane is not issued and costs 0.\n\n"
    "options:\n"
    "  --op OP          lds, sts, ldmatrix.x1, ldmatrix.x2, ldmatrix.x4 (ldmatrix may end in\n"
    "                   .trans; the addressing is the same)\n"
    "  --width N        bytes per lane: 1, 2, 4, 8, 16 for lds/sts (default 4); ldmatrix is 16\n"
    "  --addresses L    comma-separated byte addresses, one per active lane in lane order (at\n"
    "                   most 32; each >= 0 and a multiple of the width)\n"
    "  --format FMT     text (per-phase table and totals; default) or json (one object with\n"
    "                   swzjit_version, wavefronts, ideal_wavefronts, excess_wavefronts, max_way and\n"
    "                   phases[]) or csv (a header row, then one row per phase)\n"
    "  --json           short for --format json\n\n"
    "examples:\n"
    "  # seed 001: a 32x32 fp32 transpose reading column 0: 32-way, 32 wavefronts\n"
    "  swz bank --op lds --addresses 0,128,256,384,512,640,768,896,1024,1152,1280,1408,1536,1664,\\\n"
    "1792,1920,2048,2176,2304,2432,2560,2688,2816,2944,3072,3200,3328,3456,3584,3712,3840,3968\n"
    "  # all lanes on one word: a broadcast, 1 wavefront\n"
    "  swz bank --op lds --addresses 64,64,64,64 --format json\n"
    "  # ldmatrix.x1 of an 8x8 fp16 matrix with 128-byte rows: 8-way\n"
    "  swz bank --op ldmatrix.x1 --addresses 0,128,256,384,512,640,768,896\n"
    "  # 8-byte stores: two phases of 16 lanes\n"
    "  swz bank --op sts --width 8 --addresses 0,8,16,24,32,40,48,56,64,72,80,88,96,104,112,120,128\n";

}  // namespace

const Command& bank_command() {
  static const Command cmd{"bank", "cost one shared-memory instruction in wavefronts (bank conflicts)", kHelp,
                           &run_bank};
  return cmd;
}

}  // namespace cli
}  // namespace swz
