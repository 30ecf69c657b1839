// tools: `swz layout --highlight` (see layout_highlight.hpp): lanes, banks and wavefronts of one warp
// instruction on a swizzled tile, as text, SVG or JSON members. The cost is the bank model's own.
#include "layout_highlight.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "cli.hpp"
#include "output.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

namespace {

const char kForms[] =
    "OP:A0,A1,... (byte addresses), OP:col=C, OP:row=R or ldmatrix.xN:at=R,C; OP = lds|sts|ldmatrix.x1|x2|x4";

[[noreturn]] void bad(const std::string& why) { throw UsageError("--highlight: " + why + " (accepted: " + kForms + ")"); }

// "0-3,7" for {0,1,2,3,7}.
std::string ranges(const std::set<int>& values) {
  std::string out;
  for (auto it = values.begin(); it != values.end();) {
    int first = *it, last = first;
    ++it;
    while (it != values.end() && *it == last + 1) last = *it++;
    out += (out.empty() ? "" : ",") + std::to_string(first) + (last > first ? "-" + std::to_string(last) : "");
  }
  return out;
}

std::string xml(const std::string& text) {
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

// One wavefront of one phase: the lanes it serves and the banks they use.
struct Wave {
  int phase = 0, index = 0;
  std::set<int> lanes, banks;
};

// Every wavefront of the instruction, phase by phase, in the model's order.
std::vector<Wave> waves(const Highlight& h) {
  std::vector<Wave> out;
  for (std::size_t p = 0; p < h.report.phases.size(); ++p) {
    const PhaseCost& ph = h.report.phases[p];
    for (int k = 0; k < ph.wavefronts; ++k) out.push_back(Wave{static_cast<int>(p), k, {}, {}});
  }
  for (const HighlightLane& l : h.lanes) {
    if (!l.issued) continue;
    for (auto& w : out)
      if (w.phase == l.phase && w.index == l.wavefront) {
        w.lanes.insert(l.lane);
        w.banks.insert(l.bank);
      }
  }
  return out;
}

std::string summary(const Highlight& h) {
  const BankReport& r = h.report;
  std::string s = std::to_string(r.wavefronts) + " wavefront(s), ideal " + std::to_string(r.ideal_wavefronts) +
                  ", excess " + std::to_string(r.excess_wavefronts);
  if (r.max_way > 0) {
    int worst = -1;
    for (const auto& p : r.phases)
      if (p.max_way == r.max_way) {
        worst = p.worst_bank;
        break;
      }
    s += ", worst bank " + std::to_string(worst) + ": " + std::to_string(r.max_way) + "-way";
  }
  return s;
}

}  // namespace

Highlight make_highlight(const std::string& spec, const SwizzleSpec& swizzle, const LayoutSpec& layout, int elem_bytes) {
  Highlight h;
  h.spec = spec;
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos) bad("'" + spec + "' has no ':'");
  try {
    h.instruction.op = parse_smem_op(spec.substr(0, colon), &h.trans);
  } catch (const Error&) {
    bad("'" + spec.substr(0, colon) + "' is not an instruction");
  }
  const bool ldmatrix = h.instruction.op != SmemOp::Lds && h.instruction.op != SmemOp::Sts;
  h.instruction.width = ldmatrix ? 16 : elem_bytes;
  const std::string what = spec.substr(colon + 1);
  const std::vector<long long> offs = layout_offsets(swizzle, layout);
  const auto at = [&](long long r, long long c) -> long long {
    if (r < 0 || r >= layout.rows || c < 0 || c >= layout.cols)
      bad("cell (" + std::to_string(r) + "," + std::to_string(c) + ") is outside the " + std::to_string(layout.rows) +
          "x" + std::to_string(layout.cols) + " tile");
    return offs[static_cast<std::size_t>(r * layout.cols + c)] * elem_bytes;
  };
  std::vector<long long>& addr = h.instruction.addresses;
  if (what.rfind("col=", 0) == 0 || what.rfind("row=", 0) == 0) {
    if (ldmatrix) bad("ldmatrix takes at=R,C or addresses");
    const bool col = what[0] == 'c';
    const long long k = parse_int("--highlight", what.substr(4), 0, (col ? layout.cols : layout.rows) - 1);
    const long long lanes = std::min<long long>(32, col ? layout.rows : layout.cols);
    for (long long i = 0; i < lanes; ++i) addr.push_back(col ? at(i, k) : at(k, i));
  } else if (what.rfind("at=", 0) == 0) {
    if (!ldmatrix) bad("at=R,C is for ldmatrix (lds/sts take col=, row= or addresses)");
    const auto rc = parse_int_list("--highlight", what.substr(3), 0, 1LL << 30, 2);
    const int n = h.instruction.op == SmemOp::LdmatrixX1 ? 8 : h.instruction.op == SmemOp::LdmatrixX2 ? 16 : 32;
    const long long step = 16 / elem_bytes;  // elements in a 16-byte matrix row
    for (int l = 0; l < n; ++l)
      addr.push_back(n == 32 ? at(rc[0] + l % 16, rc[1] + (l / 16) * step) : at(rc[0] + l, rc[1]));
  } else {
    addr = parse_int_list("--highlight", what, -(1LL << 40), 1LL << 40);
  }
  if (addr.size() > 32) bad(std::to_string(addr.size()) + " lanes: a warp has 32");
  try {
    h.report = analyze_bank(h.instruction);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    throw UsageError(std::string("--highlight: ") + e.what());
  }

  // Cells by element offset, to find what each lane touches.
  std::multimap<long long, std::size_t> cell_of;
  for (std::size_t i = 0; i < offs.size(); ++i) cell_of.emplace(offs[i], i);
  const int width = h.instruction.width;
  for (std::size_t i = 0; i < addr.size(); ++i) {
    HighlightLane l;
    l.lane = static_cast<int>(i);
    l.address = addr[i];
    l.bank = static_cast<int>((addr[i] / 4) % 32);
    l.issued = false;
    for (std::size_t p = 0; p < h.report.phases.size(); ++p) {
      const PhaseCost& ph = h.report.phases[p];
      if (l.lane >= ph.first_lane && l.lane < ph.first_lane + ph.lane_count) {
        l.phase = static_cast<int>(p);
        l.issued = true;
      }
    }
    for (long long e = addr[i] / elem_bytes; e <= (addr[i] + width - 1) / elem_bytes; ++e) {
      const auto range = cell_of.equal_range(e);
      for (auto it = range.first; it != range.second; ++it) l.cells.push_back(it->second);
    }
    h.lanes.push_back(l);
  }
  // The wavefront of each lane, as the model counts them: in a phase, the j-th distinct word of a bank
  // is served by wavefront j; a lane is served when its last word is.
  for (std::size_t p = 0; p < h.report.phases.size(); ++p) {
    std::map<int, std::vector<long long>> words_of_bank;
    for (HighlightLane& l : h.lanes) {
      if (!l.issued || l.phase != static_cast<int>(p)) continue;
      for (long long w = l.address / 4; w <= (l.address + width - 1) / 4; ++w) {
        auto& words = words_of_bank[static_cast<int>(w % 32)];
        auto it = std::find(words.begin(), words.end(), w);
        const int slot = static_cast<int>(it - words.begin());
        if (it == words.end()) words.push_back(w);
        l.wavefront = std::max(l.wavefront, slot);
      }
    }
  }
  return h;
}

std::string highlight_text(const Highlight& h, const LayoutSpec& layout) {
  std::vector<std::string> mark(static_cast<std::size_t>(layout.rows * layout.cols), ".");
  std::vector<int> count(mark.size(), 0);
  for (const HighlightLane& l : h.lanes)
    for (std::size_t c : l.cells) {
      if (count[c]++ == 0) mark[c] = std::to_string(l.lane);
      else if (mark[c].back() != '+') mark[c] += "+";  // several lanes: the lowest one, then '+'
    }
  std::size_t width = std::max<std::size_t>(3, std::to_string(layout.cols - 1).size());
  for (const auto& m : mark) width = std::max(width, m.size());
  const int label = static_cast<int>(std::to_string(layout.rows - 1).size());
  std::ostringstream os;
  os << "highlight " << h.spec << ": " << to_string(h.instruction.op) << (h.trans ? ".trans" : "") << ", "
     << h.instruction.width << " bytes per lane, " << h.instruction.addresses.size() << " lane(s)\n";
  os << "lane touching each cell ('.' none, '+' more lanes):\n";
  char buf[64];
  os << std::string(static_cast<std::size_t>(label + 2), ' ');
  for (long long c = 0; c < layout.cols; ++c) {
    std::snprintf(buf, sizeof buf, " %*lld", static_cast<int>(width), c);
    os << buf;
  }
  os << '\n';
  for (long long r = 0; r < layout.rows; ++r) {
    std::snprintf(buf, sizeof buf, "%*lld |", label, r);
    os << buf;
    for (long long c = 0; c < layout.cols; ++c) {
      std::snprintf(buf, sizeof buf, " %*s", static_cast<int>(width), mark[static_cast<std::size_t>(r * layout.cols + c)].c_str());
      os << buf;
    }
    os << '\n';
  }
  int current = -1;
  for (const Wave& w : waves(h)) {
    if (w.phase != current) {
      current = w.phase;
      const PhaseCost& p = h.report.phases[static_cast<std::size_t>(w.phase)];
      os << "phase " << w.phase << " (lanes " << p.first_lane << "-" << p.first_lane + p.lane_count - 1
         << "): " << p.wavefronts << " wavefront(s), ideal " << p.ideal_wavefronts << "\n";
    }
    os << "  wavefront " << w.index << ": lane" << (w.lanes.size() > 1 ? "s " : " ") << ranges(w.lanes) << " (bank"
       << (w.banks.size() > 1 ? "s " : " ") << ranges(w.banks) << ")\n";
  }
  for (const HighlightLane& l : h.lanes)
    if (!l.issued) os << "lane " << l.lane << ": ignored (ldmatrix takes rows from lanes of its matrices only)\n";
  os << "total: " << summary(h) << "\n";
  return os.str();
}

std::string highlight_svg(const Highlight& h, const SwizzleSpec& swizzle, const LayoutSpec& layout, int elem_bytes) {
  const std::vector<long long> offs = layout_offsets(swizzle, layout);
  std::vector<const HighlightLane*> lane_of(offs.size(), nullptr);
  for (const HighlightLane& l : h.lanes)
    for (std::size_t c : l.cells)
      if (!lane_of[c]) lane_of[c] = &l;
  const std::vector<Wave> ws = waves(h);
  std::vector<std::string> legend = {h.spec + ": " + to_string(h.instruction.op) + (h.trans ? ".trans" : "") + ", " +
                                         std::to_string(h.instruction.width) + " bytes per lane, " +
                                         std::to_string(h.instruction.addresses.size()) + " lanes",
                                     summary(h), ""};
  int current = -1;
  for (const Wave& w : ws) {
    if (w.phase != current) {
      current = w.phase;
      const PhaseCost& p = h.report.phases[static_cast<std::size_t>(w.phase)];
      legend.push_back("phase " + std::to_string(w.phase) + " (lanes " + std::to_string(p.first_lane) + "-" +
                       std::to_string(p.first_lane + p.lane_count - 1) + "): " + std::to_string(p.wavefronts) +
                       " wavefront(s)");
    }
    legend.push_back("  w" + std::to_string(w.index) + ": lane" + (w.lanes.size() > 1 ? "s " : " ") + ranges(w.lanes) +
                     " (bank" + (w.banks.size() > 1 ? "s " : " ") + ranges(w.banks) + ")");
  }
  const int cell = 44, margin = 36, line = 15, legend_w = 430;
  const long long grid_w = margin + layout.cols * cell + 8;
  const long long grid_h = margin + layout.rows * cell + 40;
  const long long w = grid_w + legend_w, hgt = std::max<long long>(grid_h, margin + 20 + line * static_cast<long long>(legend.size()));
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << hgt
     << "\" font-family=\"monospace\" font-size=\"11\">\n";
  os << "<title>" << xml(swizzle.to_string()) << " o (" << layout.rows << "," << layout.cols << "):(" << layout.stride_row
     << "," << layout.stride_col << "), " << elem_bytes << "-byte elements; highlight " << xml(h.spec) << "</title>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (long long c = 0; c < layout.cols; ++c)
    os << "<text x=\"" << margin + c * cell + cell / 2 << "\" y=\"" << margin - 8 << "\" text-anchor=\"middle\">" << c
       << "</text>\n";
  for (long long r = 0; r < layout.rows; ++r) {
    os << "<text x=\"" << margin - 6 << "\" y=\"" << margin + r * cell + cell / 2 + 4 << "\" text-anchor=\"end\">" << r
       << "</text>\n";
    for (long long c = 0; c < layout.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * layout.cols + c);
      const long long off = offs[i];
      const long long bank = (((off * elem_bytes) >> 2) % 32 + 32) % 32;
      const int hue = static_cast<int>((bank * 360) / 32);
      const int light = (bank % 2) ? 62 : 78;
      const long long x = margin + c * cell, y = margin + r * cell;
      const HighlightLane* l = lane_of[i];
      os << "<g class=\"" << (l ? "lane" : "cell") << "\"><title>(" << r << "," << c << ") offset " << off << " bank "
         << bank;
      if (l) os << ", lane " << l->lane << (l->issued ? ", wavefront " + std::to_string(l->wavefront) : ", not issued");
      os << "</title><rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell
         << "\" fill=\"hsl(" << hue << ",70%," << light << "%)\"" << (l ? "" : " fill-opacity=\"0.25\"")
         << " stroke=\"" << (l ? "#000" : "#999") << "\" stroke-width=\"" << (l ? 3 : 0.5) << "\"/>"
         << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + 14 << "\" text-anchor=\"middle\""
         << (l ? "" : " fill=\"#888\"") << ">" << off << "</text>";
      if (l)
        os << "<text x=\"" << x + cell / 2 << "\" y=\"" << y + 27 << "\" text-anchor=\"middle\" font-size=\"9\">L"
           << l->lane << " b" << bank << "</text><text x=\"" << x + cell / 2 << "\" y=\"" << y + 39
           << "\" text-anchor=\"middle\" font-size=\"9\" font-weight=\"bold\">"
           << (l->issued ? "w" + std::to_string(l->wavefront) : std::string("-")) << "</text>";
      os << "</g>\n";
    }
  }
  os << "<text x=\"" << margin << "\" y=\"" << grid_h - 14 << "\">cell: offset; outlined: L lane, b bank, w wavefront"
     << " (same colour = same bank)</text>\n";
  for (std::size_t i = 0; i < legend.size(); ++i)
    os << "<text x=\"" << grid_w + 8 << "\" y=\"" << margin + static_cast<long long>(i) * line << "\""
       << (i < 2 ? " font-weight=\"bold\"" : "") << " xml:space=\"preserve\">" << xml(legend[i]) << "</text>\n";
  os << "</svg>\n";
  return os.str();
}

std::string highlight_json(const Highlight& h, const LayoutSpec& layout) {
  std::string out = "{\"spec\": " + json_string(h.spec) + ", \"op\": " +
                    json_string(to_string(h.instruction.op) + (h.trans ? ".trans" : "")) +
                    ", \"width\": " + std::to_string(h.instruction.width) +
                    ", \"wavefronts\": " + std::to_string(h.report.wavefronts) +
                    ", \"ideal_wavefronts\": " + std::to_string(h.report.ideal_wavefronts) +
                    ", \"excess_wavefronts\": " + std::to_string(h.report.excess_wavefronts) +
                    ", \"max_way\": " + std::to_string(h.report.max_way) + ", \"lanes\": [";
  for (std::size_t i = 0; i < h.lanes.size(); ++i) {
    const HighlightLane& l = h.lanes[i];
    out += std::string(i ? ", " : "") + "{\"lane\": " + std::to_string(l.lane) + ", \"address\": " +
           std::to_string(l.address) + ", \"bank\": " + std::to_string(l.bank) + ", \"issued\": " + boolean(l.issued) +
           ", \"phase\": " + std::to_string(l.phase) + ", \"wavefront\": " + std::to_string(l.wavefront) +
           ", \"cells\": [";
    for (std::size_t j = 0; j < l.cells.size(); ++j)
      out += std::string(j ? ", " : "") + "[" + std::to_string(static_cast<long long>(l.cells[j]) / layout.cols) +
             ", " + std::to_string(static_cast<long long>(l.cells[j]) % layout.cols) + "]";
    out += "]}";
  }
  return out + "]}";
}

}  // namespace cli
}  // namespace swz
