// swzjit public API: the layout proof of the Hopper (sm_90a) GEMM of templates/gemm_sm90.cuh -- its TMA
// boxes against its wgmma descriptors for operands A and B, and the bank cost of candidate C epilogues.
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/tma.hpp"

namespace swz {

/// The bank cost of storing the kernel's accumulators into one shared-memory C tile layout (the kernel
/// stores registers -> global today; these are the costs a shared-memory epilogue would pay).
struct Sm90EpilogueOption {
  CTileLayout layout;
  EpilogueStore store = EpilogueStore::Pair;
  EpilogueCost cost;
};

/// What analyze_sm90_gemm_layouts() proves for one config.
struct Sm90LayoutReport {
  std::string config;                       ///< the config's canonical text
  std::vector<OperandProof> operands;       ///< A, then B: every stage, every consumer, every k step
  std::vector<Sm90EpilogueOption> epilogue; ///< one warpgroup's 64 x bn tile, per layout and store
  /// True when every operand's proof holds.
  bool ok() const {
    for (const auto& p : operands)
      if (!p.ok) return false;
    return !operands.empty();
  }
};

/// Parses an sm_90a GEMM config ("in=f16,out=f16,layout=NT,bn=256,stages=4,...", blank for the default
/// with in=f16,out=f16) and proves its layouts as the kernel builds them (the tensor maps' boxes and
/// swizzle, the stage and consumer offsets, the descriptors of every k step). A failed proof is
/// reported, not thrown.
/// @throws Error(InvalidArgument) for a malformed or invalid config, naming the field.
Sm90LayoutReport analyze_sm90_gemm_layouts(const std::string& config_text);

}  // namespace swz
