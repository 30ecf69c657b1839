// swzjit public API: the layout proof of the Hopper (sm_90a) GEMM of templates/gemm_sm90.cuh -- its TMA
// boxes against its wgmma descriptors for operands A and B (K- or MN-major), its TMA-store epilogue's C
// writes against the C map's boxes, and the bank cost of the C stores.
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/tma.hpp"

namespace swz {

/// The bank cost of storing the kernel's accumulators into one shared-memory C tile layout (candidates
/// beside the kernel's own: the register epilogue stores registers -> global, the TMA-store one pays
/// Sm90LayoutReport::c_store's cost).
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
  /// True for epilogue=tma: `c_store` proves the consumers' C writes against the C map's boxes.
  bool has_c_store = false;
  CStoreProof c_store;        ///< every consumer (one for 64-row tiles), every chunk of one tile; the stores' cost
  std::string c_box;          ///< the C map's box, e.g. "64 x 64 f16 128B at 0x..." of chunk 0
  int c_elem_bytes = 0;       ///< bytes of a C element (2 or 4)
  /// True when every operand's proof holds (and C's, with the TMA-store epilogue).
  bool ok() const {
    for (const auto& p : operands)
      if (!p.ok) return false;
    if (has_c_store && !c_store.ok) return false;
    return !operands.empty();
  }
};

/// Parses an sm_90a GEMM config ("in=f16,out=f16,layout=NT,bn=256,stages=4,...", blank for the default
/// with in=f16,out=f16) and proves its layouts as the kernel builds them (the tensor maps' boxes and
/// swizzle, the stage and consumer offsets, the descriptors of every k step, and with epilogue=tma the
/// C buffers' swizzled writes against the C map's boxes). A failed proof is reported, not thrown.
/// @throws Error(InvalidArgument) for a malformed or invalid config, naming the field.
Sm90LayoutReport analyze_sm90_gemm_layouts(const std::string& config_text);

}  // namespace swz
