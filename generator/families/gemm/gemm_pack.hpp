// swzjit public API: staging of narrow GEMM operands (generator/families/gemm/gemm_pack.cpp). Engine::gemm copies an
// operand whose pointer, pitch or batch stride allow only 2- or 4-byte accesses into packed scratch with
// 16-byte pitches (templates/gemm_pack.cuh), so the kernels run their full-width copies on it.
#pragma once

#include <string>

#include "swzjit/transpose.hpp"  // LaunchShape
#include "swzjit/types.hpp"

namespace swz {

/// The staged pitch of a line of `cols` elements of dtype `t`: rounded up to 16 bytes.
long long gemm_pack_ld(long long cols, DType t);

/// The staging kernel for elements of dtype `t` (any of f32, f16, bf16: it moves bits): its generated
/// translation unit, name expression, source name and launch shape (grid-stride: any size fits).
std::string gemm_pack_source(DType t);
std::string gemm_pack_name_expression(DType t);
std::string gemm_pack_source_name(DType t);
LaunchShape gemm_pack_launch_shape(long long rows, long long ld_dst, long long batch, DType t);

}  // namespace swz
