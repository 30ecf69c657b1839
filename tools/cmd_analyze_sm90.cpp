// tools: `swz analyze gemm_sm90 [--config TEXT]` -- the layout proof of the Hopper GEMM: per operand the TMA
// boxes, the wgmma descriptors decoded and "matches" or the first wrong element; with epilogue=tma the C
// writes against the C map's boxes (operand C) and their bank cost; the candidate epilogues' bank costs.
// tools/cmd_kernel.cpp dispatches `swz analyze` here on the family name.
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "output.hpp"
#include "swzjit/analysis/sm90_layouts.hpp"

namespace swz {
namespace cli {

const char kAnalyzeSm90Help[] =
    "\nswz analyze gemm_sm90 [--config TEXT] [--format text|json|csv]\n"
    "Layout proof of the sm_90a (Hopper) GEMM: for operands A and B, the TMA boxes the kernel loads (and\n"
    "their swizzle) against the wgmma shared-memory descriptors it issues for every stage, consumer and\n"
    "k16 step (K-major or, layouts NN/TN/TT, MN-major in 64 x 64 boxes); every element each wgmma reads\n"
    "must be the one the TMA wrote there. With epilogue=tma, operand C: every element the consumers\n"
    "write into the swizzled C buffers must be where the C map's box reads it for the TMA store, and the\n"
    "bank cost of those st.shared. Prints the boxes and descriptors of stage 0 (text; json lists all),\n"
    "\"matches\" or the first wrong element, and the bank cost of storing a consumer's accumulators into\n"
    "candidate shared-memory C tiles (row-major, padded, 128B-swizzled) with st.shared pairs and stmatrix.\n"
    "Exit 1 when a proof fails.\n"
    "--config: in=f16|bf16,out=f16|bf16|f32,layout=NT|NN|TN|TT,bn=32..256 (a multiple of 16),stages=N,raster=N,\n"
    "          persistent=0|1,inflight=0|1,cluster=1|2,epilogue=regs|tma,splits=1..32,reduce=workspace|cluster|fixup,\n"
    "          tail=1|2|4 (the last partial wave of tiles in up to that many K slices)\n"
    "          (default: the default config, in=f16,out=f16)\n"
    "--format: text (default), json (one object) or csv (one row per operand); --json = --format json\n"
    "example: swz analyze gemm_sm90 --config in=bf16,out=f32,layout=TN,bn=128,stages=6,epilogue=tma\n";

namespace {

std::string hex(unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", v);
  return buf;
}

std::string fill_json(const TmaFill& f) {
  return "{\"stage\": " + std::to_string(f.stage) + ", \"dst\": " + std::to_string(f.box.dst) +
         ", \"inner\": " + std::to_string(f.box.inner) + ", \"outer\": " + std::to_string(f.box.outer) +
         ", \"elem_bytes\": " + std::to_string(f.box.elem_bytes) + ", \"swizzle\": " +
         json_string(to_string(f.box.swizzle)) + ", \"mn0\": " + std::to_string(f.mn0) +
         ", \"k0\": " + std::to_string(f.k0) + "}";
}

std::string read_json(const WgmmaRead& r) {
  const WgmmaDescriptor d = WgmmaDescriptor::decode(r.desc);
  return "{\"stage\": " + std::to_string(r.stage) + ", \"where\": " + json_string(r.where) +
         ", \"k_step\": " + std::to_string(r.k_step) + ", \"mn0\": " + std::to_string(r.mn0) +
         ", \"k0\": " + std::to_string(r.k0) + ", \"descriptor\": " + json_string(hex(r.desc)) +
         ", \"start\": " + std::to_string(d.start) + ", \"lbo\": " + std::to_string(d.lbo) +
         ", \"sbo\": " + std::to_string(d.sbo) + ", \"base_offset\": " + std::to_string(d.base_offset) +
         ", \"swizzle\": " + json_string(to_string(d.swizzle)) + "}";
}

void print_json(const Sm90LayoutReport& r) {
  std::printf("{%s\"family\": \"gemm_sm90\", \"config\": %s, \"matches\": %s, \"operands\": [",
              json_version_member().c_str(), json_string(r.config).c_str(), boolean(r.ok()));
  for (std::size_t i = 0; i < r.operands.size(); ++i) {
    const OperandProof& p = r.operands[i];
    std::printf("%s{\"operand\": \"%s\", \"major\": \"%s\", \"elem_bytes\": %d, \"mn\": %d, \"k\": %d, "
                "\"matches\": %s, \"error\": %s, \"elements_checked\": %lld, \"boxes\": [",
                i ? ", " : "", p.operand.c_str(), to_string(p.plan.tile.major), p.plan.tile.elem_bytes,
                p.plan.tile.mn, p.plan.tile.k(), boolean(p.ok), p.ok ? "null" : json_string(p.error).c_str(),
                p.elements_checked);
    for (std::size_t j = 0; j < p.plan.fills.size(); ++j)
      std::printf("%s%s", j ? ", " : "", fill_json(p.plan.fills[j]).c_str());
    std::printf("], \"descriptors\": [");
    for (std::size_t j = 0; j < p.plan.reads.size(); ++j)
      std::printf("%s%s", j ? ", " : "", read_json(p.plan.reads[j]).c_str());
    std::printf("]}");
  }
  std::printf("], \"c_store\": ");
  if (r.has_c_store) {
    const CStoreProof& c = r.c_store;
    std::printf("{\"operand\": \"C\", \"box\": %s, \"matches\": %s, \"error\": %s, \"elements_checked\": %lld, "
                "\"instruction\": \"%s\", \"count\": %lld, \"wavefronts\": %lld, \"ideal_wavefronts\": %lld, "
                "\"excess_wavefronts\": %lld, \"max_way\": %d}",
                json_string(r.c_box).c_str(), boolean(c.ok), c.ok ? "null" : json_string(c.error).c_str(),
                c.elements_checked, c.cost.instruction.c_str(), c.cost.instructions, c.cost.wavefronts,
                c.cost.ideal_wavefronts, c.cost.excess_wavefronts, c.cost.max_way);
  } else {
    std::printf("null");
  }
  std::printf(", \"epilogue\": [");
  for (std::size_t i = 0; i < r.epilogue.size(); ++i) {
    const Sm90EpilogueOption& o = r.epilogue[i];
    std::printf("%s{\"layout\": %s, \"instruction\": \"%s\", \"count\": %lld, \"wavefronts\": %lld, "
                "\"ideal_wavefronts\": %lld, \"excess_wavefronts\": %lld, \"max_way\": %d}",
                i ? ", " : "", json_string(o.layout.to_string()).c_str(), o.cost.instruction.c_str(),
                o.cost.instructions, o.cost.wavefronts, o.cost.ideal_wavefronts, o.cost.excess_wavefronts,
                o.cost.max_way);
  }
  std::printf("]}\n");
}

void print_csv(const Sm90LayoutReport& r) {
  CsvTable t({"family", "config", "operand", "major", "elem_bytes", "mn", "k", "boxes", "descriptors",
              "elements_checked", "matches", "error"});
  for (const OperandProof& p : r.operands)
    t.add({"gemm_sm90", r.config, p.operand, to_string(p.plan.tile.major), std::to_string(p.plan.tile.elem_bytes),
           std::to_string(p.plan.tile.mn), std::to_string(p.plan.tile.k()), std::to_string(p.plan.fills.size()),
           std::to_string(p.plan.reads.size()), std::to_string(p.elements_checked), boolean(p.ok), p.error});
  // C: its boxes are the chunks' TMA stores, its "descriptors" the warp-wide st.shared that fill them.
  if (r.has_c_store)
    t.add({"gemm_sm90", r.config, "C", "row-major", std::to_string(r.c_elem_bytes),
           "", "", "", std::to_string(r.c_store.cost.instructions), std::to_string(r.c_store.elements_checked),
           boolean(r.c_store.ok), r.c_store.error});
  t.print();
}

void print_text(const Sm90LayoutReport& r) {
  std::printf("gemm_sm90 %s: TMA boxes against wgmma descriptors (stage 0 shown; every stage proved)\n",
              r.config.c_str());
  for (const OperandProof& p : r.operands) {
    const WgmmaTile& t = p.plan.tile;
    std::printf("\noperand %s: %s, %d-byte elements, %d x %d per wgmma; %zu boxes, %zu descriptors, %lld elements "
                "compared\n",
                p.operand.c_str(), to_string(t.major), t.elem_bytes, t.mn, t.k(), p.plan.fills.size(),
                p.plan.reads.size(), p.elements_checked);
    for (const TmaFill& f : p.plan.fills)
      if (f.stage == 0)
        std::printf("  box   %-58s holds (mn %d.., k %d..)\n", f.box.to_string().c_str(), f.mn0, f.k0);
    for (const WgmmaRead& rd : p.plan.reads) {
      if (rd.stage != 0) continue;
      const std::string what = "k step " + std::to_string(rd.k_step) + " (" + rd.where + ")";
      std::printf("  desc  %-28s %-20s %s\n", what.c_str(), hex(rd.desc).c_str(),
                  WgmmaDescriptor::decode(rd.desc).to_string().c_str());
    }
    std::printf("  %s\n", p.ok ? "matches" : ("MISMATCH: " + p.error).c_str());
  }
  if (r.has_c_store) {
    const CStoreProof& c = r.c_store;
    std::printf("\noperand C (TMA-store epilogue): every consumer's C chunks of one tile, written with st.shared into\n"
                "the swizzled C buffers and read back by the C map's boxes; %lld elements compared\n"
                "  box   %s (chunk 0)\n",
                c.elements_checked, r.c_box.c_str());
    std::printf("  %s\n", c.ok ? "matches" : ("MISMATCH: " + c.error).c_str());
    std::printf("  stores: %-17s %6lld instructions, %lld wavefronts (ideal %lld, excess %lld), max-way %d\n",
                c.cost.instruction.c_str(), c.cost.instructions, c.cost.wavefronts, c.cost.ideal_wavefronts,
                c.cost.excess_wavefronts, c.cost.max_way);
  }
  if (!r.epilogue.empty()) {
    std::printf("\nepilogue candidates: one consumer's 64-row accumulator tile stored to shared memory (bank cost;\n"
                "the register epilogue stores registers -> global, epilogue=tma pays operand C's cost above)\n");
    std::printf("  %-48s %-17s %6s %11s %6s %7s %8s\n", "C tile", "instruction", "count", "wavefronts", "ideal",
                "excess", "max-way");
    for (const Sm90EpilogueOption& o : r.epilogue)
      std::printf("  %-48s %-17s %6lld %11lld %6lld %7lld %8d\n", o.layout.to_string().c_str(),
                  o.cost.instruction.c_str(), o.cost.instructions, o.cost.wavefronts, o.cost.ideal_wavefronts,
                  o.cost.excess_wavefronts, o.cost.max_way);
  }
  std::printf("\n%s\n", r.ok() ? "layouts match" : "LAYOUT MISMATCH: see above");
}

}  // namespace

int run_analyze_sm90(Args& args) {
  args.next_positional();  // "gemm_sm90"
  const std::string config = args.value_or("config", "");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  const Sm90LayoutReport r = analyze_sm90_gemm_layouts(config);
  if (format == Format::Json) {
    print_json(r);
  } else if (format == Format::Csv) {
    print_csv(r);
  } else {
    print_text(r);
  }
  return r.ok() ? 0 : 1;
}

}  // namespace cli
}  // namespace swz
