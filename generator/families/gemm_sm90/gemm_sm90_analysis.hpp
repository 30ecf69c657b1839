// generator (internal): the static layout proof of the Hopper GEMM (swzjit/analysis/sm90_layouts.hpp):
// the TMA boxes, wgmma descriptors and epilogue C writes gemm_sm90.cuh and gemm_sm90_launch.cpp build for
// a config, as data a test may alter, and the proof that every wgmma reads the element the TMA wrote and
// every C element the consumers write is where the C map's TMA store reads it.
#pragma once

#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "swzjit/analysis/sm90_layouts.hpp"
#include "swzjit/analysis/tma.hpp"

namespace swz {

/// Shared-memory byte address the analysis places the stages at: the kernel aligns its base to
/// kSm90SmemAlign, and the swizzle depends only on the address bits below that alignment.
constexpr long long kSm90AnalysisBase = tpl::kSm90SmemAlign;

/// Both operands of one config as the kernel fills and reads them, built from the template's own layout
/// helpers (tpl::sm90_box_inner, sm90_stage_offset, sm90_operand_desc, ...): per stage, A's box(es) (K-major:
/// 64 along K x 128 rows; MN-major: two 64 x 64 boxes) and B's (K-major: 64 x bn, or 64 x bn/2 per CTA of a
/// cluster, multicast; MN-major: 64 x 64 boxes), 128-byte swizzle; A read by each consumer warpgroup's 64
/// rows, B by both, one descriptor per k16 step (tpl::sm90_desc or, MN-major, tpl::sm90_desc_mn). With
/// epilogue=tma, `c`: each consumer's chunks of one tile, the C map's box over the chunk's buffer and every
/// st.shared of the consumers (tpl::sm90_c_buffer_offset, sm90_c_address), C's logical (row, col) taken from
/// the m64nNk16 accumulator layout.
struct Sm90LayoutPlan {
  OperandPlan a;
  OperandPlan b;
  bool has_c = false;
  CStorePlan c;
};
/// @throws Error(InvalidArgument) for an invalid config.
Sm90LayoutPlan plan_sm90_layouts(const Sm90GemmConfig& cfg);

/// Proves the plan of `cfg` (prove_operand on A and B, prove_c_store on C) and costs the epilogues.
Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg);
/// The same, for a plan a caller built or altered.
Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg, const Sm90LayoutPlan& plan);

/// Throws Error(Internal) naming the operand ("A", "B" or "C"), the k step or chunk and the first wrong
/// element when the kernel's layouts for `cfg` disagree; Error(InvalidArgument) for an invalid config.
void check_sm90_layouts(const Sm90GemmConfig& cfg);
/// The same for a plan a caller built or altered.
void check_sm90_layouts(const Sm90GemmConfig& cfg, const Sm90LayoutPlan& plan);

}  // namespace swz
