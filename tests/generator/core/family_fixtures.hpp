// tests: small declared families written as an application would, shared by the CPU and GPU suites.
// "scale2": out = 2 * in with a tunable block size and a FAULT parameter whose value 1 writes past the
// output (the worker must contain it) and 2 writes a wrong value (verification must catch it).
#pragma once

#include <string>

namespace swz_test {

inline const char* kScaleSource = R"(
#include "common.cuh"
template <int BLOCK, int FAULT>
__global__ void scale2(const float* in, float* out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (i < n) out[i] = 2.f * in[i] + (FAULT == 2 && i == n / 2 ? 1.f : 0.f);
  if (FAULT == 1 && i == 0) out[n + (1 << 20)] = 1.f;
}
__global__ void scale2_reference(const float* in, float* out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.f * in[i];
}
)";

inline std::string scale_family_text(const std::string& fault_values = "0", const std::string& name = "scale2") {
  return "family = " + name + "\n"
         "about = out = 2 * in\n"
         "dims = n\n"
         "param BLOCK = 64 128 256 ; default 128\n"
         "param FAULT = " + fault_values + " ; default 0\n"
         "require = n >= 1\n"
         "buffer in = f32 [n] input\n"
         "buffer out = f32 [n] output\n"
         "kernel = scale2<BLOCK, FAULT>(in, out, n)\n"
         "grid = ceil_div(n, BLOCK)\n"
         "block = BLOCK\n"
         "reference = scale2_reference(in, out, n)\n"
         "reference.grid = ceil_div(n, 256)\n"
         "reference.block = 256\n"
         "tolerance = 1e-6\n"
         "source_name = scale2.cu\n"
         "--- source\n" + std::string(kScaleSource);
}

}  // namespace swz_test
