// swzjit public API: split-K for both GEMM families (generator/families/gemm/gemm_splitk.cpp). A config with split > 1
// computes K in slices into an f32 workspace (one matrix per slice), then the reduction kernel of
// templates/gemm_splitk.cuh sums the slices into C with alpha, beta and the conversion.
#pragma once

#include <string>

#include "swzjit/gemm.hpp"
#include "swzjit/transpose.hpp"  // LaunchShape
#include "swzjit/types.hpp"

namespace swz {

/// The K slices of a config: 1 for configs with split <= 1.
int gemm_k_splits(const GemmConfig& cfg);

/// k elements per slice for a problem of depth `k`: ceil(k / splits) rounded up to the config's k-tile
/// (so slice offsets keep the operands' 16-byte alignment), at least one k-tile. The last slices may be
/// short or empty (empty slices write zeros). 0 when the config does not split.
int gemm_k_slice(const GemmConfig& cfg, long long k);

/// Matrices of a batch one launch may cover: the grid's z extent (65535) holds matrices x splits.
long long gemm_max_batch_per_launch(const GemmConfig& cfg);

/// The f32 workspace of a split launch, in elements: pitch (N rounded up to 4 floats, so each row is
/// 16-byte aligned) and stride of one slice's M x N matrix.
long long gemm_splitk_workspace_ld(long long n);
long long gemm_splitk_workspace_stride(long long m, long long n);

/// The reduction kernel (templates/gemm_splitk.cuh) for C of dtype `out` (f16, bf16 or f32):
/// its generated translation unit, name expression, source name and launch shape for `batch`
/// M x N matrices (a grid-stride loop: any size fits).
std::string gemm_splitk_reduce_source(DType out);
std::string gemm_splitk_reduce_name_expression(DType out);
std::string gemm_splitk_reduce_source_name(DType out);
LaunchShape gemm_splitk_reduce_launch_shape(long long m, long long n, long long batch);

}  // namespace swz
