// tests: "rowsum2", a declared family that uses every GEMM-facing part of the contract (float scalars,
// a scratch buffer sized by a param, a `then` launch, a per-dtype tolerance): scaled row sums in two
// launches, partial sums per chunk of CHUNK columns into scratch, then out = alpha * sum + beta * c.
// Shared by the CPU suite (family_ext_test.cpp) and the GPU suite (family_ext_gpu_test.cpp).
#pragma once

#include <string>

namespace swz_test {

inline const char* kRowsum2Source = R"(
template <int CHUNK>
__global__ void rowsum2_partial(const float* in, float* part, long long rows, long long cols, long long chunks) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * chunks) return;
  const long long r = i / chunks, k = i % chunks;
  float s = 0.f;
  for (long long c = k * CHUNK; c < cols && c < (k + 1) * CHUNK; ++c) s += in[r * cols + c];
  part[i] = s;
}
template <int THREADS>
__global__ void rowsum2_finish(const float* part, const float* c, float* out, long long rows, int chunks, float alpha,
                               double beta) {
  const long long r = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int k = 0; k < chunks; ++k) s += part[r * chunks + k];
  out[r] = alpha * s + static_cast<float>(beta * c[r]);
}
__global__ void rowsum2_reference(const float* in, const float* c, float* out, long long rows, long long cols,
                                  float alpha, double beta) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  double s = 0;
  for (long long k = 0; k < cols; ++k) s += in[r * cols + k];
  out[r] = static_cast<float>(alpha * s + beta * c[r]);
}
)";

/// The text of rowsum2 (`name` lets a test register a variant under another name).
inline std::string rowsum2_family_text(const std::string& name = "rowsum2") {
  return "family = " + name + "\n"
         "about = scaled row sums in two launches\n"
         "dims = rows cols\n"
         "scalar alpha = 1.5\n"
         "scalar beta = -0.5\n"
         "param CHUNK = 16 64 256 ; default 64\n"
         "param THREADS = 64 128 ; default 128\n"
         "buffer in = f32 [rows * cols] input\n"
         "buffer c = f32 [rows] input\n"
         "buffer out = f32 [rows] output\n"
         "buffer part = f32 [rows * max(1, ceil_div(cols, CHUNK))] scratch\n"
         "kernel = rowsum2_partial<CHUNK>(in, part, rows, cols, max(1, ceil_div(cols, CHUNK)))\n"
         "grid = max(1, ceil_div(rows * max(1, ceil_div(cols, CHUNK)), THREADS))\n"
         "block = THREADS\n"
         "then = rowsum2_finish<THREADS>(part, c, out, rows, int:max(1, ceil_div(cols, CHUNK)), float:alpha, double:beta)\n"
         "then.grid = max(1, ceil_div(rows, THREADS))\n"
         "then.block = THREADS\n"
         "reference = rowsum2_reference(in, c, out, rows, cols, float:alpha, double:beta)\n"
         "reference.grid = max(1, ceil_div(rows, 128))\n"
         "reference.block = 128\n"
         "tolerance = 1e-5\n"
         "tolerance f16 = 2e-3\n"
         "source_name = rowsum2.cu\n"
         "--- source\n" + std::string(kRowsum2Source);
}

}  // namespace swz_test
