// templates: staging of a narrow GEMM operand. An operand whose pointer, pitch or batch stride allows only
// 2- or 4-byte accesses (odd pitches of 16-bit matrices, odd float pitches) would force every kernel of the
// space onto its narrowest copies; the engine first copies it into a packed scratch matrix whose pitch is a
// multiple of 16 bytes, then runs a full-width kernel on the copy (runtime/engine/engine_gemm.cpp).
#pragma once

#include "common.cuh"

namespace swz {
namespace tpl {

constexpr int kGemmPackBlock = 256;

/// `batch` matrices of rows x cols elements (a row = one contiguous line of the operand), source pitch
/// ld_src and stride stride_src (any alignment of the element size), destination pitch ld_dst (a multiple
/// of 16 / ELEM_BYTES) and stride stride_dst = rows * ld_dst, 16-byte aligned. Columns cols .. ld_dst - 1
/// of the destination are written with zeros.
struct GemmPackParams {
  const void* src;
  void* dst;
  long long rows, cols;
  long long ld_src, stride_src;
  long long ld_dst, stride_dst;
  long long batch;
};

SWZ_HD constexpr long long gemm_pack_ld(long long cols, int elem_bytes) {
  return (cols + 16 / elem_bytes - 1) / (16 / elem_bytes) * (16 / elem_bytes);
}

#if SWZ_DEVICE_CODE

template <int N> struct GemmPackWord;
template <> struct GemmPackWord<2> {
  typedef unsigned short type;
};
template <> struct GemmPackWord<4> {
  typedef unsigned type;
};

/// One thread per 16-byte chunk of a destination row: element loads (coalesced along the row), one vector store.
template <int ELEM_BYTES>
__global__ void __launch_bounds__(kGemmPackBlock) gemm_pack_kernel(const __grid_constant__ GemmPackParams p) {
  typedef typename GemmPackWord<ELEM_BYTES>::type T;
  constexpr int V = 16 / ELEM_BYTES;
  const long long chunks = p.ld_dst / V, per_matrix = p.rows * chunks, total = p.batch * per_matrix;
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long b = i / per_matrix, rc = i % per_matrix, r = rc / chunks, c0 = (rc % chunks) * V;
    const T* s = src + b * p.stride_src + r * p.ld_src;
    union {
      T e[V];
      uint4 v;
    } u;
#pragma unroll
    for (int j = 0; j < V; ++j) u.e[j] = c0 + j < p.cols ? s[c0 + j] : static_cast<T>(0);
    *reinterpret_cast<uint4*>(dst + b * p.stride_dst + r * p.ld_dst + c0) = u.v;
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
