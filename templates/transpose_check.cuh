// templates: the autotuner's trusted helpers for transpose candidates, run by the benchmark worker
// (runtime/worker_server.cpp): fill the input with hash-based random data on the GPU, and verify a
// candidate's output element-exactly, guard regions included. Deliberately simple: one element per
// thread iteration, no shared memory, nothing a candidate kernel could get wrong in the same way.
#pragma once

#include "common.cuh"

namespace swz {
namespace tpl {

enum TransposeCheckMode { kCheckFill = 0, kCheckVerify = 1 };

/// The poison written over the whole output buffer (guards included) before a candidate runs. The
/// pattern repeats its 16-bit half, so 2-byte elements see 0xBAD5 and 4-byte elements 0xBAD5BAD5.
constexpr unsigned kCheckPoison32 = 0xBAD5BAD5u;

/// Everything the check kernel needs. Sizes are in elements; `out` points at the start of the front
/// guard, so the output proper starts at out + guard_elems.
struct TransposeCheckParams {
  int mode;       // TransposeCheckMode
  unsigned seed;  // of the input data
  void* in;       // kCheckFill: written; kCheckVerify: read
  long long in_elems;
  const void* out;
  long long out_total_elems;  // front guard + output + slack + back guard
  long long guard_elems;      // elements before the output proper
  long long rows, cols, ld_in, ld_out, batch, stride_in, stride_out;
  unsigned long long* result;  // [0]: mismatches (set to 0 first), [1]: first bad index (set to ~0 first)
};

/// Elements of the output proper: every matrix up to the end of the last one's last row.
SWZ_HD constexpr long long check_body_elems(long long cols, long long ld_out, long long batch, long long stride_out) {
  return (batch - 1) * stride_out + cols * ld_out;
}

/// The 32-bit input pattern of element `i`: a hash of (i, seed), never equal to the poison in the
/// element's width, so an element a candidate forgot to write is always caught.
SWZ_HD constexpr unsigned check_input_bits(unsigned long long i, unsigned seed, int elem_bytes) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  unsigned v = static_cast<unsigned>(x);
  const unsigned poison = elem_bytes == 2 ? (kCheckPoison32 & 0xFFFFu) : kCheckPoison32;
  if (elem_bytes == 2) v &= 0xFFFFu;
  return v == poison ? v ^ 1u : v;
}

#if SWZ_DEVICE_CODE

template <int ELEM> struct CheckWord;
template <> struct CheckWord<2> { typedef unsigned short type; };
template <> struct CheckWord<4> { typedef unsigned int type; };

template <int ELEM>
__global__ void transpose_check_kernel(const __grid_constant__ TransposeCheckParams p) {
  typedef typename CheckWord<ELEM>::type T;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p.mode == kCheckFill) {
    T* in = static_cast<T*>(p.in);
    for (long long i = first; i < p.in_elems; i += step)
      in[i] = static_cast<T>(check_input_bits(static_cast<unsigned long long>(i), p.seed, ELEM));
    return;
  }
  const T* in = static_cast<const T*>(p.in);
  const T* out = static_cast<const T*>(p.out);
  const T poison = static_cast<T>(kCheckPoison32);
  const long long body = check_body_elems(p.cols, p.ld_out, p.batch, p.stride_out);
  // NOTE: 32-bit division is several times cheaper than 64-bit; every index fits in most problems.
  const bool narrow = body < (1LL << 31) && p.stride_out < (1LL << 31);
  for (long long i = first; i < p.out_total_elems; i += step) {
    T want = poison;  // guards, slack, row padding and batch gaps must stay untouched
    const long long j = i - p.guard_elems;
    if (j >= 0 && j < body) {
      long long b, c, r;
      if (narrow) {
        const unsigned jj = static_cast<unsigned>(j), so = static_cast<unsigned>(p.stride_out);
        const unsigned ld = static_cast<unsigned>(p.ld_out);
        const unsigned bb = jj / so, rem = jj - bb * so, cc = rem / ld;
        b = bb;
        c = cc;
        r = rem - cc * ld;
      } else {
        b = j / p.stride_out;
        const long long rem = j - b * p.stride_out;
        c = rem / p.ld_out;
        r = rem - c * p.ld_out;
      }
      if (c < p.cols && r < p.rows) want = in[b * p.stride_in + r * p.ld_in + c];
    }
    if (out[i] != want) {
      atomicAdd(&p.result[0], 1ull);
      atomicMin(&p.result[1], static_cast<unsigned long long>(i));
    }
  }
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
