// templates: the autotuner's trusted check for declared-family candidates, run by the benchmark worker
// (runtime/worker/worker_family.cpp): compares one output buffer with the reference kernel's on the GPU
// and leaves a few numbers for the host (sums in f64, counts, first offending indices, the worst difference).
#pragma once

#include "common.cuh"

namespace swz {
namespace tpl {

/// kFamilyCheckCompare: guards, untouched elements, non-finite values, the error sums and the largest
/// difference. kFamilyCheckFindWorst: the first element whose difference equals `worst_bits` (only run
/// when the error is above the tolerance, so a passing candidate costs one pass).
/// kFamilyCheckFill: writes the inputs instead (element i of `got` + head_bytes: a value in [-1, 1) hashed
/// from `seed` and i, so the same for every candidate and every run), no result.
enum FamilyCheckMode { kFamilyCheckCompare = 0, kFamilyCheckFindWorst = 1, kFamilyCheckFill = 2 };

/// Element types, numbered as swz::DType (include/swzjit/types.hpp).
enum FamilyCheckType { kFamilyCheckF32 = 0, kFamilyCheckF16 = 1, kFamilyCheckBF16 = 2 };

/// Threads per block of family_check_kernel (the worker launches it with this many).
constexpr int kFamilyCheckThreads = 256;

/// "None found" for the index fields.
constexpr unsigned long long kFamilyCheckNone = ~0ull;

/// What one check leaves for the host. The host initialises it: sums and counts 0, indices
/// kFamilyCheckNone, worst_bits 0.
struct FamilyCheckResult {
  double err;                          ///< sum (got - want)^2 over the reference's finite elements
  double norm;                         ///< sum want^2 over the same elements
  unsigned long long nonfinite;        ///< candidate values that are inf or NaN where the reference wrote
  unsigned long long first_nonfinite;  ///< the first such element
  unsigned long long first_written;    ///< the first element the reference leaves poisoned but the candidate wrote
  unsigned long long first_guard;      ///< the first byte of `got`'s allocation outside the buffer that changed
  unsigned long long worst_bits;       ///< bits of the largest |got - want| (a non-negative double orders as its bits)
  unsigned long long worst_at;         ///< kFamilyCheckFindWorst: the first element with that difference
};

/// One output buffer. `got` is the candidate's whole allocation (front guard first), the buffer is its
/// bytes [head_bytes, tail_bytes); `want` is the reference's buffer itself. Every byte is poison (0xFF)
/// before the kernels run, so an element whose bits are all ones in `want` is one the reference did not
/// write.
struct FamilyCheckParams {
  int mode;   // FamilyCheckMode
  int dtype;  // FamilyCheckType
  const unsigned char* got;
  const unsigned char* want;
  unsigned long long total_bytes;  // of got's allocation
  unsigned long long head_bytes;   // where element 0 sits in got
  unsigned long long tail_bytes;   // where the buffer ends in got (an empty buffer still has one element's bytes)
  long long elems;
  unsigned long long worst_bits;  // kFamilyCheckFindWorst: the maximum the compare pass found
  FamilyCheckResult* result;
  unsigned long long seed;        // kFamilyCheckFill
};

#if SWZ_DEVICE_CODE

template <int DT> struct FamilyCheckBits { typedef unsigned short type; };
template <> struct FamilyCheckBits<kFamilyCheckF32> { typedef unsigned type; };

template <int DT> __device__ __forceinline__ float family_check_to_f32(typename FamilyCheckBits<DT>::type v);
template <> __device__ __forceinline__ float family_check_to_f32<kFamilyCheckF32>(unsigned v) { return __uint_as_float(v); }
template <> __device__ __forceinline__ float family_check_to_f32<kFamilyCheckF16>(unsigned short v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
template <> __device__ __forceinline__ float family_check_to_f32<kFamilyCheckBF16>(unsigned short v) {
  return __uint_as_float(static_cast<unsigned>(v) << 16);  // exact: bf16 is the top half of an f32
}

// Element i of a buffer; a buffer at an odd alignment class (an align the family measures) is read
// byte by byte, little-endian.
template <typename W>
__device__ __forceinline__ W family_check_load(const unsigned char* base, long long i, bool aligned) {
  if (aligned) return reinterpret_cast<const W*>(base)[i];
  const unsigned char* at = base + i * static_cast<long long>(sizeof(W));
  unsigned v = 0;
  for (int b = 0; b < static_cast<int>(sizeof(W)); ++b) v |= static_cast<unsigned>(at[b]) << (8 * b);
  return static_cast<W>(v);
}

__device__ __forceinline__ unsigned long long family_check_min(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}

template <int DT>
__device__ __forceinline__ void family_check_elements(const FamilyCheckParams& p) {
  typedef typename FamilyCheckBits<DT>::type W;
  const W poison = static_cast<W>(0xFFFFFFFFu);
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned char* got = p.got + p.head_bytes;
  const bool aligned = (reinterpret_cast<unsigned long long>(got) % sizeof(W)) == 0 &&
                       (reinterpret_cast<unsigned long long>(p.want) % sizeof(W)) == 0;
  const bool find_worst = p.mode == kFamilyCheckFindWorst;
  double err = 0, norm = 0, worst = 0;
  unsigned long long nonfinite = 0, first_nonfinite = kFamilyCheckNone, first_written = kFamilyCheckNone;
  unsigned long long worst_at = kFamilyCheckNone;
  for (long long i = first; i < p.elems; i += step) {
    const W want = family_check_load<W>(p.want, i, aligned);
    const W g = family_check_load<W>(got, i, aligned);
    const unsigned long long at = static_cast<unsigned long long>(i);
    if (want == poison) {  // the reference leaves it alone, so must the candidate
      if (g != poison) first_written = family_check_min(first_written, at);
      continue;
    }
    const float x = family_check_to_f32<DT>(g), y = family_check_to_f32<DT>(want);
    if ((__float_as_uint(x) & 0x7F800000u) == 0x7F800000u) {  // inf or NaN never passes
      ++nonfinite;
      first_nonfinite = family_check_min(first_nonfinite, at);
      continue;
    }
    const double d = fabs(static_cast<double>(x) - static_cast<double>(y));
    if (find_worst) {
      if (static_cast<unsigned long long>(__double_as_longlong(d)) == p.worst_bits) worst_at = family_check_min(worst_at, at);
      continue;
    }
    err += d * d;
    norm += static_cast<double>(y) * static_cast<double>(y);
    worst = fmax(worst, d);
  }
  unsigned long long worst_bits = static_cast<unsigned long long>(__double_as_longlong(worst));
  // One atomic per warp and field: shuffles reduce first.
  for (int o = 16; o > 0; o /= 2) {
    err += __shfl_down_sync(0xFFFFFFFFu, err, o);
    norm += __shfl_down_sync(0xFFFFFFFFu, norm, o);
    nonfinite += __shfl_down_sync(0xFFFFFFFFu, nonfinite, o);
    first_nonfinite = family_check_min(first_nonfinite, __shfl_down_sync(0xFFFFFFFFu, first_nonfinite, o));
    first_written = family_check_min(first_written, __shfl_down_sync(0xFFFFFFFFu, first_written, o));
    worst_at = family_check_min(worst_at, __shfl_down_sync(0xFFFFFFFFu, worst_at, o));
    const unsigned long long other = __shfl_down_sync(0xFFFFFFFFu, worst_bits, o);
    worst_bits = other > worst_bits ? other : worst_bits;
  }
  if ((threadIdx.x & 31) != 0) return;
  FamilyCheckResult* r = p.result;
  if (err != 0 || norm != 0) {
    atomicAdd(&r->err, err);
    atomicAdd(&r->norm, norm);
  }
  if (nonfinite != 0) {
    atomicAdd(&r->nonfinite, nonfinite);
    atomicMin(&r->first_nonfinite, first_nonfinite);
  }
  if (first_written != kFamilyCheckNone) atomicMin(&r->first_written, first_written);
  if (worst_at != kFamilyCheckNone) atomicMin(&r->worst_at, worst_at);
  if (worst_bits != 0) atomicMax(&r->worst_bits, worst_bits);
}

// The bytes of got's allocation outside the buffer (the guards and the alignment shift) stay poison.
__device__ __forceinline__ void family_check_guards(const FamilyCheckParams& p) {
  const unsigned long long tail = p.tail_bytes;
  const unsigned long long step = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long outside = p.head_bytes + (p.total_bytes - tail);
  unsigned long long first = kFamilyCheckNone;
  for (unsigned long long g = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; g < outside;
       g += step) {
    const unsigned long long k = g < p.head_bytes ? g : tail + (g - p.head_bytes);
    if (p.got[k] != 0xFFu) first = family_check_min(first, k);
  }
  for (int o = 16; o > 0; o /= 2) first = family_check_min(first, __shfl_down_sync(0xFFFFFFFFu, first, o));
  if ((threadIdx.x & 31) == 0 && first != kFamilyCheckNone) atomicMin(&p.result->first_guard, first);
}

// Element i's input value: splitmix64's finalizer over the seed and i, as a double in [-1, 1) rounded to f32.
__device__ __forceinline__ float family_fill_value(unsigned long long seed, long long i) {
  unsigned long long z = seed + (static_cast<unsigned long long>(i) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

template <int DT> __device__ __forceinline__ typename FamilyCheckBits<DT>::type family_fill_bits(float v);
template <> __device__ __forceinline__ unsigned family_fill_bits<kFamilyCheckF32>(float v) { return __float_as_uint(v); }
template <> __device__ __forceinline__ unsigned short family_fill_bits<kFamilyCheckF16>(float v) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}
template <> __device__ __forceinline__ unsigned short family_fill_bits<kFamilyCheckBF16>(float v) {
  const unsigned u = __float_as_uint(v);  // finite: round to nearest even
  return static_cast<unsigned short>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

template <int DT>
__device__ __forceinline__ void family_fill_elements(const FamilyCheckParams& p) {
  typedef typename FamilyCheckBits<DT>::type W;
  unsigned char* out = const_cast<unsigned char*>(p.got) + p.head_bytes;  // the fill mode's buffer is written
  const bool aligned = (reinterpret_cast<unsigned long long>(out) % sizeof(W)) == 0;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.elems; i += step) {
    const W bits = family_fill_bits<DT>(family_fill_value(p.seed, i));
    if (aligned) {
      reinterpret_cast<W*>(out)[i] = bits;
    } else {
      unsigned char* at = out + i * static_cast<long long>(sizeof(W));
      for (int b = 0; b < static_cast<int>(sizeof(W)); ++b) at[b] = static_cast<unsigned char>(bits >> (8 * b));
    }
  }
}

__global__ void __launch_bounds__(kFamilyCheckThreads) family_check_kernel(const __grid_constant__ FamilyCheckParams p) {
  if (p.mode == kFamilyCheckFill) {
    if (p.dtype == kFamilyCheckF32) family_fill_elements<kFamilyCheckF32>(p);
    else if (p.dtype == kFamilyCheckF16) family_fill_elements<kFamilyCheckF16>(p);
    else family_fill_elements<kFamilyCheckBF16>(p);
    return;
  }
  if (p.mode == kFamilyCheckCompare) family_check_guards(p);
  if (p.dtype == kFamilyCheckF32) family_check_elements<kFamilyCheckF32>(p);
  else if (p.dtype == kFamilyCheckF16) family_check_elements<kFamilyCheckF16>(p);
  else family_check_elements<kFamilyCheckBF16>(p);
}

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
