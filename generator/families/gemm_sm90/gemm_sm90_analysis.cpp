// generator: the Hopper GEMM's layout proof (gemm_sm90_analysis.hpp): builds what gemm_sm90_body and
// gemm_sm90_prepare build -- boxes, stage offsets, consumer rows, the descriptors of each k step, through
// the template's own size helpers and tpl::sm90_desc -- and proves them with prove_operand().
#include "generator/families/gemm_sm90/gemm_sm90_analysis.hpp"

#include <string>

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"

namespace swz {

namespace {

// NOTE: the TMA side (box shape, CU_TENSOR_MAP_SWIZZLE_128B) is encoded by gemm_sm90_launch.cpp's
// encode() and the offsets below are written inline in gemm_sm90_body; both are mirrored here, so a
// change there must be made here too (the proof then says whether the new layouts still agree).
constexpr TmaSwizzle kTmaSwizzle = TmaSwizzle::B128;
constexpr int kConsumerRows = 64;  // rows of the block tile per consumer warpgroup (wgmma's M)
constexpr int kKStep = 16;         // k of one wgmma (f16/bf16)

OperandPlan operand(WgmmaOperand which, int mn, int elem_bytes) {
  OperandPlan p;
  p.tile.operand = which;
  p.tile.major = WgmmaMajor::K;
  p.tile.elem_bytes = elem_bytes;
  p.tile.mn = mn;
  return p;
}

TmaBox box(long long dst, int rows, int elem_bytes) {
  TmaBox b;
  b.dst = dst;
  b.inner = tpl::kSm90Bk;
  b.outer = rows;
  b.elem_bytes = elem_bytes;
  b.swizzle = kTmaSwizzle;
  return b;
}

std::vector<Sm90EpilogueOption> epilogue_options(const Sm90GemmConfig& cfg) {
  const int eb = static_cast<int>(dtype_bytes(cfg.out));
  std::vector<CTileLayout> layouts;
  CTileLayout c;
  c.rows = kConsumerRows;
  c.cols = cfg.bn;
  c.elem_bytes = eb;
  layouts.push_back(c);         // row-major, unpadded
  c.pitch_bytes = cfg.bn * eb + 16;
  layouts.push_back(c);         // row-major, padded by 16 bytes
  c.pitch_bytes = 0;
  c.swizzle = TmaSwizzle::B128;
  layouts.push_back(c);         // as a 128B-swizzled TMA store reads it
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
  const int row_bytes = tpl::kSm90Bk * eb;  // one k-block row of A or B in shared memory
  const int k_a = tpl::sm90_a_stage_bytes();
  const int stage_bytes = tpl::sm90_stage_bytes(cfg.bn);
  const int b_part = cfg.bn / cfg.cluster;  // rows of B each CTA of a cluster loads and multicasts
  Sm90LayoutPlan plan;
  plan.a = operand(WgmmaOperand::A, kConsumerRows, eb);
  plan.b = operand(WgmmaOperand::B, cfg.bn, eb);
  for (int s = 0; s < cfg.stages; ++s) {
    const long long dst = kSm90AnalysisBase + static_cast<long long>(s) * stage_bytes;
    plan.a.fills.push_back(TmaFill{box(dst, tpl::kSm90Bm, eb), s, 0, 0});
    // Every CTA of a cluster receives every part of B (multicast), each at its rank's offset.
    for (int r = 0; r < cfg.cluster; ++r)
      plan.b.fills.push_back(TmaFill{box(dst + k_a + static_cast<long long>(r) * b_part * row_bytes, b_part, eb), s,
                                     r * b_part, 0});
    const std::string stage = "stage " + std::to_string(s);
    for (int k = 0; k < tpl::kSm90Bk / kKStep; ++k) {
      for (int consumer = 0; consumer < tpl::kSm90Bm / kConsumerRows; ++consumer) {
        const unsigned a = static_cast<unsigned>(dst + consumer * kConsumerRows * row_bytes);
        plan.a.reads.push_back(WgmmaRead{tpl::sm90_desc(a + 32 * k), s, consumer * kConsumerRows, k * kKStep, k,
                                         stage + ", consumer " + std::to_string(consumer)});
      }
      const unsigned b = static_cast<unsigned>(dst + k_a);
      plan.b.reads.push_back(WgmmaRead{tpl::sm90_desc(b + 32 * k), s, 0, k * kKStep, k, stage});
    }
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
  return r;
}

Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg) {
  return analyze_sm90_layouts(cfg, plan_sm90_layouts(cfg));
}

void check_sm90_layouts(const Sm90GemmConfig& cfg) {
  const Sm90LayoutPlan plan = plan_sm90_layouts(cfg);
  for (const OperandPlan* p : {&plan.a, &plan.b}) {
    const OperandProof proof = prove_operand(*p);
    if (!proof.ok)
      throw Error(ErrorKind::Internal, "sm_90a gemm " + cfg.to_string() +
                                           ": the TMA layout and the wgmma descriptors disagree: " + proof.error);
  }
}

Sm90LayoutReport analyze_sm90_gemm_layouts(const std::string& config_text) {
  if (config_text.find_first_not_of(" \t") == std::string::npos)
    return analyze_sm90_layouts(default_sm90_gemm_config(DType::F16, DType::F16));
  return analyze_sm90_layouts(Sm90GemmConfig::parse(config_text));
}

}  // namespace swz
