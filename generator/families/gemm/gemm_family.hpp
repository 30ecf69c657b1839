// generator/families/gemm (internal): the GEMM on the family contract. The frame every GEMM family's
// problem is written in (shared with gemm_sm90), and the mma.sync kernels (templates/sgemm.cuh,
// templates/hgemm.cuh) as the built-in families "sgemm" and "hgemm" (gemm_family.cpp): their params are
// SgemmConfig's and HgemmConfig's fields, their launches a program (FamilyProgram) over this directory's
// host code, so the typed Engine::gemm (runtime/engine/engine_gemm.cpp) launches them through run_family.
// docs/ARCHITECTURE.md, "Programs".
#pragma once

#include <memory>
#include <string>

#include "swzjit/family.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/engine.hpp"  // GemmProblem

namespace swz {
namespace detail {

/// A resolved GemmProblem in the kernels' frame as a GEMM family's problem: C row-major (a column-major C
/// is computed as C^T = B^T A^T: A and B swap places, the caller passes them swapped, gemm_family_swaps),
/// A K- or M-contiguous (a_mn), B K- or N-contiguous (b_mn), and `align` (the call's alignment class,
/// GemmProblem::max_vec_bytes, <= 16) for both operands' aligns. A single matrix's batch strides are 0.
FamilyValues gemm_family_problem(const GemmProblem& resolved, int align);
/// True when the family's A is the caller's B (a column-major C).
bool gemm_family_swaps(const GemmProblem& resolved);
/// The family's problem back as a GemmProblem in the frame (C row-major), what the kernels' host code takes.
GemmProblem gemm_family_frame(const FamilyValues& problem);
/// The alignment class of a family problem: bytes every global load of A and B may take (the aligns, and
/// the pitches and, for a batch, the strides in bytes), at most 16, as GemmProblem::max_vec_bytes.
int gemm_family_access_align(const FamilyValues& problem);

/// The definition lines every GEMM family shares (the frame problem: dims, aligns, the pitch and batch
/// rules, buffers a, b, c, scalars alpha and beta, and the f64 reference of templates/gemm_reference.cuh).
std::string gemm_family_frame_lines();

/// The definitions (registered at start-up by generator/families/registry.cpp).
FamilyDef sgemm_family();
FamilyDef hgemm_family();
/// The registered mma.sync family for input type `in`: "sgemm" for f32, else "hgemm".
std::shared_ptr<const Family> gemm_mma_builtin(DType in);
/// A config's family values, and back (the dtypes and the layout come from the problem).
FamilyValues gemm_mma_family_config(const GemmConfig& cfg);
GemmConfig gemm_mma_config_of(const FamilyValues& config, const FamilyValues& problem);
/// A split config's f32 workspace for one matrix of `frame` (bytes), and the matrices one launch (and so one
/// run's scratch) takes; 0, 0 for a config that does not split, or K = 0.
struct GemmSplitNeed {
  long long matrix_bytes = 0, per_launch = 0;
};
GemmSplitNeed gemm_mma_split_need(const GemmConfig& cfg, const GemmProblem& frame);
/// Kernel launches of one run of `cfg` on `frame` (a problem in the frame): one per 65535 matrices, and
/// with split-K one reduction each (and no GEMM kernel where K = 0).
long long gemm_mma_launch_count(const GemmConfig& cfg, const GemmProblem& frame);

/// Why a tune of `resolved` (a caller's problem or a frame) leaves out the split-K config `cfg` ("" when
/// it stays; always "" for configs that do not split): batch x splits over the grid's 65535, or, unless
/// the user asked for it (`requested`: an extra config), a problem with enough block tiles already or too
/// short a K for the slices.
std::string gemm_split_mismatch(const GemmConfig& cfg, const GemmProblem& resolved, bool requested);

}  // namespace detail
}  // namespace swz
