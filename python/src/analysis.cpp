// python/src: the analysis API on plain Python values — swizzled layouts, the shared-memory bank
// model and the swizzle solver (include/swzjit/analysis/), all CPU-only.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "swzjit/analysis/bank.hpp"
#include "swzjit/analysis/layout.hpp"
#include "swzjit/analysis/solver.hpp"
#include "swzjit/error.hpp"

namespace swzpy {

namespace {

swz::SwizzleSpec spec_of(int b, int m, int s) {
  swz::SwizzleSpec spec{b, m, s};
  spec.validate();
  return spec;
}

nb::dict cost_dict(const swz::PatternCost& c) {
  nb::dict r;
  r["legal"] = c.legal;
  r["instructions"] = c.instructions;
  r["wavefronts"] = c.wavefronts;
  r["ideal_wavefronts"] = c.ideal_wavefronts;
  r["excess_wavefronts"] = c.excess_wavefronts;
  r["max_way"] = c.max_way;
  return r;
}

nb::tuple swizzle_tuple(const swz::SwizzleSpec& s) { return nb::make_tuple(s.b, s.m, s.s); }

}  // namespace

void bind_analysis(nb::module_& m) {
  m.def("layout_offsets", [](int b, int mm, int s, long long rows, long long cols, long long sr, long long sc) {
    const swz::LayoutSpec layout{rows, cols, sr, sc};
    layout.validate();
    const std::vector<long long> flat = swz::layout_offsets(spec_of(b, mm, s), layout);
    nb::list out;
    for (long long r = 0; r < rows; ++r) {
      nb::list row;
      for (long long c = 0; c < cols; ++c) row.append(flat[static_cast<size_t>(r * cols + c)]);
      out.append(row);
    }
    return out;
  });
  m.def("layout_format", [](int b, int mm, int s, long long rows, long long cols, long long sr, long long sc,
                            const std::string& format, int elem_bytes) {
    const swz::LayoutSpec layout{rows, cols, sr, sc};
    layout.validate();
    const swz::SwizzleSpec spec = spec_of(b, mm, s);
    if (format == "text") return swz::format_layout_text(spec, layout);
    if (format == "csv") return swz::format_layout_csv(spec, layout);
    if (format == "svg") return swz::format_layout_svg(spec, layout, elem_bytes);
    throw swz::Error(swz::ErrorKind::InvalidArgument,
                     "format: '" + format + "' is not a layout format; use \"offsets\", \"text\", \"csv\" or \"svg\"");
  });

  m.def("bank", [](const std::string& op, const std::vector<long long>& addresses, int width) {
    swz::SmemInstruction ins;
    ins.op = swz::parse_smem_op(op);
    ins.width = width > 0 ? width : swz::default_width(ins.op);
    ins.addresses = addresses;
    const swz::BankReport rep = swz::analyze_bank(ins);
    nb::dict r;
    r["op"] = swz::to_string(ins.op);
    r["width"] = ins.width;
    r["wavefronts"] = rep.wavefronts;
    r["ideal_wavefronts"] = rep.ideal_wavefronts;
    r["excess_wavefronts"] = rep.excess_wavefronts;
    r["max_way"] = rep.max_way;
    nb::list phases;
    for (const auto& p : rep.phases) {
      nb::dict d;
      d["first_lane"] = p.first_lane;
      d["lane_count"] = p.lane_count;
      d["active_lanes"] = p.active_lanes;
      d["wavefronts"] = p.wavefronts;
      d["ideal_wavefronts"] = p.ideal_wavefronts;
      d["max_way"] = p.max_way;
      d["worst_bank"] = p.worst_bank;
      phases.append(d);
    }
    r["phases"] = phases;
    return r;
  });

  m.def("solve", [](int rows, int row_bytes, int elem_bytes, const std::vector<std::string>& pattern_names,
                    bool allow_negative_shift, bool allow_composition, int max_bits) {
    swz::SmemTile tile{rows, row_bytes, elem_bytes};
    tile.validate();
    if (pattern_names.empty())
      throw swz::Error(swz::ErrorKind::InvalidArgument,
                       "patterns: give at least one access pattern, e.g. [\"store:16\", \"ldmatrix\"]");
    std::vector<swz::AccessPattern> patterns;
    for (const auto& name : pattern_names) patterns.push_back(swz::parse_access_pattern(name));
    swz::SolveOptions o;
    o.allow_negative_shift = allow_negative_shift;
    o.allow_composition = allow_composition;
    if (max_bits < 1 || max_bits > 5)
      throw swz::Error(swz::ErrorKind::InvalidArgument,
                       "max_bits: " + std::to_string(max_bits) + " is out of range; use 1..5");
    o.max_bits = max_bits;
    swz::SolveResult res;
    {
      nb::gil_scoped_release release;  // a composition search can take a while
      res = swz::solve_swizzle(tile, patterns, o);
    }
    nb::dict r;
    r["status"] = res.status == swz::SolveStatus::IdentityIsFree ? "identity"
                  : res.status == swz::SolveStatus::Found       ? "found"
                                                                : "not_found";
    nb::list sw, names;
    for (const auto& s : res.swizzles) {
      sw.append(swizzle_tuple(s));
      names.append(swz::swizzle_name(s));
    }
    r["swizzles"] = sw;
    r["swizzle_names"] = names;
    nb::list outcomes;
    for (const auto& p : res.patterns) {
      nb::dict d;
      d["pattern"] = p.pattern;
      d["before"] = cost_dict(p.before);
      d["after"] = cost_dict(p.after);
      outcomes.append(d);
    }
    r["patterns"] = outcomes;
    r["singles_tried"] = res.singles_tried;
    r["compositions_tried"] = res.compositions_tried;
    return r;
  });
}

}  // namespace swzpy
