// generator (internal): the static layout proof of the Hopper GEMM (swzjit/analysis/sm90_layouts.hpp):
// the TMA boxes and wgmma descriptors gemm_sm90.cuh and gemm_sm90_launch.cpp build for a config, as data
// a test may alter, and the proof that every wgmma reads the element the TMA wrote.
#pragma once

#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "swzjit/analysis/sm90_layouts.hpp"
#include "swzjit/analysis/tma.hpp"

namespace swz {

/// Shared-memory byte address the analysis places the stages at: the kernel aligns its base to
/// kSm90SmemAlign, and the swizzle depends only on the address bits below that alignment.
constexpr long long kSm90AnalysisBase = tpl::kSm90SmemAlign;

/// Both operands of one config as the kernel fills and reads them: per stage, A's box (64 x 128 rows)
/// and B's box(es) (64 x bn, or one 64 x bn/2 per CTA of a cluster, multicast), 128-byte swizzle; A read
/// by each consumer warpgroup's 64 rows, B by both, one descriptor per k16 step (tpl::sm90_desc).
struct Sm90LayoutPlan {
  OperandPlan a;
  OperandPlan b;
};
/// An MN-major operand or another swizzle is a change of this plan only: tile.major = MN, boxes whose
/// inner dimension runs along MN (TmaFill's convention), and the descriptors from the kernel's own builder;
/// the decoder and the proof handle every major-ness and swizzle mode.
/// @throws Error(InvalidArgument) for an invalid config.
Sm90LayoutPlan plan_sm90_layouts(const Sm90GemmConfig& cfg);

/// Proves the plan of `cfg` (prove_operand on A and B) and costs the candidate epilogues.
Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg);
/// The same, for a plan a caller built or altered.
Sm90LayoutReport analyze_sm90_layouts(const Sm90GemmConfig& cfg, const Sm90LayoutPlan& plan);

/// Throws Error(Internal) naming the operand, the k step and the first wrong element when the kernel's
/// layouts for `cfg` disagree; Error(InvalidArgument) for an invalid config.
void check_sm90_layouts(const Sm90GemmConfig& cfg);

}  // namespace swz
