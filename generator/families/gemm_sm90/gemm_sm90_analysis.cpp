// generator: the Hopper GEMM's layout proof (gemm_sm90_analysis.hpp): builds what gemm_sm90_body and
// gemm_sm90_prepare build -- boxes, stage offsets, consumer rows, the descriptors of each k step, the
// epilogue's C buffers and stores -- through the template's own layout helpers, and proves them with
// prove_operand() and prove_c_store().
#include "generator/families/gemm_sm90/gemm_sm90_analysis.hpp"

#include <algorithm>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"

namespace swz {

namespace {

// The TMA side (boxes, swizzle) comes from the helpers gemm_sm90_launch.cpp encodes its maps with, the
// offsets and descriptors from those gemm_sm90_body uses (templates/gemm_sm90.cuh): nothing is mirrored.
constexpr int kKStep = 16;  // k of one wgmma (f16/bf16)

TmaSwizzle swizzle_of(int bytes) {
  switch (bytes) {
    case 32: return TmaSwizzle::B32;
    case 64: return TmaSwizzle::B64;
    case 128: return TmaSwizzle::B128;
    default: return TmaSwizzle::None;
  }
}
const TmaSwizzle kTmaSwizzle = swizzle_of(tpl::kSm90SwizzleBytes);

OperandPlan operand(WgmmaOperand which, int mn, int elem_bytes, bool mn_major) {
  OperandPlan p;
  p.tile.operand = which;
  p.tile.major = mn_major ? WgmmaMajor::MN : WgmmaMajor::K;
  p.tile.elem_bytes = elem_bytes;
  p.tile.mn = mn;
  return p;
}

TmaBox box(long long dst, int inner, int outer, int elem_bytes, TmaSwizzle swizzle = kTmaSwizzle) {
  TmaBox b;
  b.dst = dst;
  b.inner = inner;
  b.outer = outer;
  b.elem_bytes = elem_bytes;
  b.swizzle = swizzle;
  return b;
}

// The TMA fills of `rows` rows (M or N) of an operand at `dst`, logical rows mn0.. : one K-major box, or
// MN-major boxes of tpl::kSm90MnBox one after the other (the kernel's loops over h / j).
void add_fills(OperandPlan& p, long long dst, int rows, int mn0, int stage, bool mn_major, int eb) {
  const int inner = tpl::sm90_box_inner(mn_major), outer = tpl::sm90_box_outer(mn_major, rows);
  if (!mn_major) {
    p.fills.push_back(TmaFill{box(dst, inner, outer, eb), stage, mn0, 0});
    return;
  }
  for (int h = 0; h < rows / tpl::kSm90MnBox; ++h)
    p.fills.push_back(TmaFill{box(dst + tpl::sm90_mn_box_offset(h), inner, outer, eb), stage,
                              mn0 + h * tpl::kSm90MnBox, 0});
}

// The TMA-store epilogue of one tile (sm90_store_tile_tma): every consumer (two, or one for a 64-row tile),
// every chunk, every store
// (stmatrix.x4 for 16-bit C, st.shared.v2.f32 pairs for f32).
CStorePlan c_store_plan(const Sm90GemmConfig& cfg) {
  const int ob = static_cast<int>(dtype_bytes(cfg.kernel_out()));
  // The swizzle encode_c gives C's map (128 bytes, or 64 / 32 for 16-bit tiles of no whole 128-byte rows).
  const int swizzle = tpl::sm90_c_swizzle_bytes(cfg.bn, ob);
  const int chunk_cols = tpl::sm90_c_box_inner(ob, swizzle);
  const int chunks = cfg.bn / chunk_cols;
  const long long cbase = kSm90AnalysisBase + tpl::sm90_ring_bytes(cfg.bn, cfg.stages, cfg.arows);
  CStorePlan plan;
  plan.elem_bytes = ob;
  int instruction = 0;
  for (int consumer = 0; consumer < tpl::sm90_consumers(cfg.arows); ++consumer) {
    // chunk_seq runs on across tiles, so after a tile of an odd number of chunks (bn 192, or 64 of 16-bit C)
    // the next starts at the second buffer; the two are laid out alike, so this order stands for both.
    for (int ch = 0; ch < chunks; ++ch) {
      const int chunk = consumer * chunks + ch;
      const long long buf = cbase + tpl::sm90_c_buffer_offset(consumer, ch, tpl::sm90_c_chunk_bytes(cfg.bn, ob));
      TmaStoreBox b;
      b.box = box(buf, chunk_cols, tpl::kSm90CBoxOuter, ob, swizzle_of(swizzle));
      b.chunk = chunk;
      b.row0 = consumer * tpl::kSm90ConsumerRows;
      b.col0 = ch * chunk_cols;
      plan.boxes.push_back(b);
      if (ob == 2) {
        // stmatrix.x4 number jp of the chunk: lane l writes row l % 8 of matrix m = l / 8 (8 elements), at the
        // kernel's address for it. The data: register m of each thread, the accumulator fragment of column
        // group j + m / 2, rows 8 (m % 2).. of the warp's 16 (the kernel's register order).
        for (int jp = 0; jp < chunk_cols / 16; ++jp) {
          const int j = ch * (chunk_cols / 8) + 2 * jp;
          for (int warp = 0; warp < 4; ++warp, ++instruction) {
            for (int lane = 0; lane < 32; ++lane) {
              const int m = lane / 8;
              CStoreWrite w;
              w.address = tpl::sm90_c_address(static_cast<unsigned>(buf), tpl::sm90_c_stmatrix_row(warp, lane),
                                              tpl::sm90_c_stmatrix_byte(lane, jp), swizzle);
              w.chunk = chunk;
              w.row = consumer * tpl::kSm90ConsumerRows + 16 * warp + 8 * (m % 2) + lane % 8;
              w.col = 8 * (j + m / 2);
              w.elems = 8;
              w.instruction = instruction;
              w.lane = lane;
              plan.writes.push_back(w);
            }
          }
        }
        continue;
      }
      for (int jj = 0; jj < chunk_cols / 8; ++jj) {
        const int j = ch * (chunk_cols / 8) + jj;
        for (int h = 0; h < 2; ++h) {
          for (int warp = 0; warp < 4; ++warp, ++instruction) {
            for (int lane = 0; lane < 32; ++lane) {
              CStoreWrite w;
              w.address = tpl::sm90_c_address(static_cast<unsigned>(buf), tpl::sm90_c_row(warp, lane, h),
                                              tpl::sm90_c_byte(lane, jj, ob), swizzle);
              w.chunk = chunk;
              // m64nNk16's accumulators d[4j + 2h], d[4j + 2h + 1]: row 16 warp + lane / 4 + 8h, columns
              // 8j + 2 (lane % 4) (+ 1).
              w.row = consumer * tpl::kSm90ConsumerRows + 16 * warp + lane / 4 + 8 * h;
              w.col = 8 * j + 2 * (lane % 4);
              w.elems = 2;
              w.instruction = instruction;
              w.lane = lane;
              plan.writes.push_back(w);
            }
          }
        }
      }
    }
  }
  return plan;
}

// The C buffers must lie in the region sm90_smem_bytes reserves after the stages, and the buffers of
// different consumers (in use at once) must not share a byte. Empty when they do not.
std::string c_buffer_error(const Sm90GemmConfig& cfg, const CStorePlan& c) {
  const long long lo = kSm90AnalysisBase + tpl::sm90_ring_bytes(cfg.bn, cfg.stages, cfg.arows);
  // what the launch allocates (gemm_sm90_smem_bytes) less the alignment slack, barriers and verdict word
  const long long hi = kSm90AnalysisBase + gemm_sm90_smem_bytes(cfg) - tpl::kSm90SmemAlign - 16LL * cfg.stages -
                       (cfg.kernel_fixup() ? 16 : 0);
  const int chunks = static_cast<int>(c.boxes.size()) / tpl::sm90_consumers(cfg.arows);  // a consumer's
  for (const TmaStoreBox& a : c.boxes) {
    const long long end = a.box.dst + static_cast<long long>(a.box.inner) * a.box.outer * a.box.elem_bytes;
    if (a.box.dst < lo || end > hi)
      return "operand C: the buffer of chunk " + std::to_string(a.chunk) + " [" + std::to_string(a.box.dst) + ", " +
             std::to_string(end) + ") is outside the C buffers [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
    for (const TmaStoreBox& b : c.boxes) {
      if (a.chunk / chunks == b.chunk / chunks) continue;  // the same consumer: used one after the other
      const long long bend = b.box.dst + static_cast<long long>(b.box.inner) * b.box.outer * b.box.elem_bytes;
      if (a.box.dst < bend && b.box.dst < end)
        return "operand C: the buffers of chunks " + std::to_string(a.chunk) + " and " + std::to_string(b.chunk) +
               " (two consumers, in use at once) overlap";
    }
  }
  return "";
}

std::vector<Sm90EpilogueOption> epilogue_options(const Sm90GemmConfig& cfg) {
  const int eb = static_cast<int>(dtype_bytes(cfg.kernel_out()));
  std::vector<CTileLayout> layouts;
  CTileLayout c;
  c.rows = tpl::kSm90ConsumerRows;
  c.cols = cfg.bn;
  c.elem_bytes = eb;
  layouts.push_back(c);         // row-major, unpadded
  c.pitch_bytes = cfg.bn * eb + 16;
  layouts.push_back(c);         // row-major, padded by 16 bytes
  c.pitch_bytes = 0;
  // as the TMA store reads it, with the swizzle C's map has for this width (128B; 64B / 32B for 16-bit
  // tiles that are not whole 128-byte rows, such as bn 32, 96 or 112)
  c.swizzle = swizzle_of(tpl::sm90_c_swizzle_bytes(cfg.bn, eb));
  if (c.swizzle != TmaSwizzle::None) layouts.push_back(c);
  std::vector<Sm90EpilogueOption> out;
  for (const CTileLayout& l : layouts) {
    for (EpilogueStore s : {EpilogueStore::Pair, EpilogueStore::Stmatrix}) {
      if (s == EpilogueStore::Stmatrix && eb != 2) continue;
      Sm90EpilogueOption o;
      o.layout = l;
      o.store = s;
      o.cost = epilogue_bank_cost(l, cfg.bn, s);
      out.push_back(o);
    }
  }
  return out;
}

}  // namespace

Sm90LayoutPlan plan_sm90_layouts(const Sm90GemmConfig& cfg) {
  cfg.validate();
  const int eb = static_cast<int>(dtype_bytes(cfg.in));
  const bool a_mn = cfg.a_mn_major(), b_mn = cfg.b_mn_major();
  const int b_part = tpl::sm90_b_part(cfg.bn, cfg.cluster);
  Sm90LayoutPlan plan;
  plan.a = operand(WgmmaOperand::A, tpl::kSm90ConsumerRows, eb, a_mn);
  plan.b = operand(WgmmaOperand::B, cfg.bn, eb, b_mn);
  for (int s = 0; s < cfg.stages; ++s) {
    const long long dst = kSm90AnalysisBase + tpl::sm90_stage_offset(cfg.bn, s, cfg.arows);
    add_fills(plan.a, dst, cfg.arows, 0, s, a_mn, eb);
    // Every CTA of a cluster receives every part of B (multicast), each at its rank's offset.
    for (int r = 0; r < cfg.cluster; ++r)
      add_fills(plan.b, dst + tpl::sm90_b_rank_offset(cfg.bn, cfg.cluster, static_cast<unsigned>(r), cfg.arows), b_part,
                r * b_part, s, b_mn, eb);
    const std::string stage = "stage " + std::to_string(s);
    for (int k = 0; k < tpl::kSm90Bk / kKStep; ++k) {
      for (int consumer = 0; consumer < tpl::sm90_consumers(cfg.arows); ++consumer) {
        const unsigned a = static_cast<unsigned>(dst) + tpl::sm90_a_consumer_offset(consumer);
        // A short A stage of a 128-row tile (arows 32 or 16) holds the first arows rows: the rest each consumer
        // reads is padding.
        const int rows = std::max(0, std::min(tpl::kSm90ConsumerRows, cfg.arows - consumer * tpl::kSm90ConsumerRows));
        plan.a.reads.push_back(WgmmaRead{tpl::sm90_operand_desc(a, k, a_mn), s, consumer * tpl::kSm90ConsumerRows,
                                         k * kKStep, k, stage + ", consumer " + std::to_string(consumer), rows});
      }
      const unsigned b = static_cast<unsigned>(dst) + tpl::sm90_b_offset(cfg.arows);
      plan.b.reads.push_back(WgmmaRead{tpl::sm90_operand_desc(b, k, b_mn), s, 0, k * kKStep, k, stage});
    }
  }
  if (cfg.tma_epilogue) {
    plan.has_c = true;
    plan.c = c_store_plan(cfg);
  }
  return plan;
}

Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg, const Sm90LayoutPlan& plan) {
  cfg.validate();
  Sm90LayoutReport r;
  r.config = cfg.to_string();
  r.operands.push_back(prove_operand(plan.a));
  r.operands.push_back(prove_operand(plan.b));
  r.epilogue = epilogue_options(cfg);
  if (plan.has_c) {
    r.has_c_store = true;
    r.c_store = prove_c_store(plan.c);
    if (r.c_store.ok) {
      const std::string err = c_buffer_error(cfg, plan.c);
      if (!err.empty()) {
        r.c_store.ok = false;
        r.c_store.error = err;
      }
    }
    if (!plan.c.boxes.empty()) r.c_box = plan.c.boxes.front().box.to_string();
    r.c_elem_bytes = plan.c.elem_bytes;
  }
  return r;
}

Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg) {
  return analyze_sm90_layouts(cfg, plan_sm90_layouts(cfg));
}

void check_sm90_layouts(const Sm90GemmConfig& cfg, const Sm90LayoutPlan& plan) {
  const auto disagree = [&](const std::string& what, const std::string& error) {
    throw Error(ErrorKind::Internal, "sm_90a gemm " + cfg.to_string() + ": " + what + ": " + error +
                                         " (templates/gemm_sm90.cuh's layout helpers and the kernel must agree; "
                                         "this config is not compiled)");
  };
  for (const OperandPlan* p : {&plan.a, &plan.b}) {
    const OperandProof proof = prove_operand(*p);
    if (!proof.ok) disagree("the TMA layout and the wgmma descriptors disagree", proof.error);
  }
  if (plan.has_c) {
    const CStoreProof proof = prove_c_store(plan.c);
    if (!proof.ok) disagree("the epilogue's C writes and the C map's TMA store disagree", proof.error);
    const std::string err = c_buffer_error(cfg, plan.c);
    if (!err.empty()) disagree("the epilogue's C buffers are misplaced", err);
  }
}

void check_sm90_layouts(const Sm90GemmConfig& cfg) { check_sm90_layouts(cfg, plan_sm90_layouts(cfg)); }

Sm90LayoutReport analyze_sm90_gemm_layouts(const std::string& config_text) {
  if (config_text.find_first_not_of(" \t") == std::string::npos)
    return analyze_sm90_layouts(default_sm90_gemm_config(DType::F16, DType::F16));
  return analyze_sm90_layouts(Sm90GemmConfig::parse(config_text));
}

}  // namespace swz
