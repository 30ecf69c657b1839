// tests: a declared family whose candidates break the family check in known ways, shared by the CPU
// suite (its source compiles) and the GPU suite (a tune reports each failure with its message).
// "gapfill": out[2i] = in[i] + 1 and the odd elements stay untouched; MODE 1 writes a NaN at out[2(n/2)],
// 2 writes the gap element out[7], 3 is off by 0.01 at out[2(n/3)], 4 by 1e-6 there (within tolerance).
#pragma once

#include <string>

namespace swz_test {

inline const char* kGapfillSource = R"(
#include "common.cuh"
template <int BLOCK, int MODE>
__global__ void gapfill(const float* in, float* out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (i >= n) return;
  float v = in[i] + 1.f;
  if (MODE == 1 && i == n / 2) v = __int_as_float(0x7FC00000);
  if (MODE == 3 && i == n / 3) v += 0.01f;
  if (MODE == 4 && i == n / 3) v += 1e-6f;
  out[2 * i] = v;
  if (MODE == 2 && i == 3) out[7] = v;
}
template <int BAD>
__global__ void gapfill_reference(const float* in, float* out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[2 * i] = BAD && i == 5 ? __int_as_float(0x7F800000) : in[i] + 1.f;
}
)";

/// `bad_reference`: the reference writes +inf at out[10], which the worker must refuse to check against.
inline std::string gapfill_family_text(const std::string& name, bool bad_reference = false) {
  return "family = " + name + "\n"
         "about = out[2i] = in[i] + 1, odd elements untouched\n"
         "dims = n\n"
         "param BLOCK = 128 ; default 128\n"
         "param MODE = 0 1 2 3 4 ; default 0\n"
         "require = n >= 8\n"
         "buffer in = f32 [n] input\n"
         "buffer out = f32 [2 * n] output\n"
         "kernel = gapfill<BLOCK, MODE>(in, out, n)\n"
         "grid = ceil_div(n, BLOCK)\n"
         "block = BLOCK\n"
         "reference = gapfill_reference<" + std::string(bad_reference ? "1" : "0") + ">(in, out, n)\n"
         "reference.grid = ceil_div(n, 256)\n"
         "reference.block = 256\n"
         "tolerance = 1e-6\n"
         "source_name = gapfill.cu\n"
         "--- source\n" + std::string(kGapfillSource);
}

}  // namespace swz_test
