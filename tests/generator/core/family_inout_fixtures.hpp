// tests: "rowsum_acc", a declared family whose only checked buffer is inout (BufferRole::InOut): out =
// alpha * (row sums of in) + beta * out, in ONE buffer, as a GEMM's C with beta is. Shared by the CPU
// suite (family_inout_test.cpp) and the GPU suite (tests/runtime/engine/family_inout_gpu_test.cpp).
#pragma once

#include <string>

namespace swz_test {

inline const char* kRowsumAccSource = R"(
template <int THREADS, int UNROLL>
__global__ void rowsum_acc(const float* in, float* out, long long rows, long long cols, float alpha, float beta) {
  const long long r = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  long long k = 0;
  for (; k + UNROLL <= cols; k += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += in[r * cols + k + u];
  }
  for (; k < cols; ++k) s += in[r * cols + k];
  out[r] = alpha * s + beta * out[r];
}
__global__ void rowsum_acc_reference(const float* in, float* out, long long rows, long long cols, float alpha,
                                     double beta) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  double s = 0;
  for (long long k = 0; k < cols; ++k) s += in[r * cols + k];
  out[r] = static_cast<float>(alpha * s + beta * out[r]);
}
)";

/// The text of rowsum_acc (`name` lets a test register a variant under another name). beta's default is
/// not 0, so a candidate that ignores out's initial values fails its check.
inline std::string rowsum_acc_family_text(const std::string& name = "rowsum_acc") {
  return "family = " + name + "\n"
         "about = out = alpha * row sums + beta * out, in place\n"
         "dims = rows cols\n"
         "scalar alpha = 1.5\n"
         "scalar beta = 0.5\n"
         "param THREADS = 64 128 256 ; default 128\n"
         "param UNROLL = 1 4 ; default 4\n"
         "buffer in = f32 [rows * cols] input\n"
         "buffer out = f32 [rows] inout\n"
         "kernel = rowsum_acc<THREADS, UNROLL>(in, out, rows, cols, float:alpha, float:beta)\n"
         "grid = max(1, ceil_div(rows, THREADS))\n"
         "block = THREADS\n"
         "reference = rowsum_acc_reference(in, out, rows, cols, float:alpha, double:beta)\n"
         "reference.grid = max(1, ceil_div(rows, 128))\n"
         "reference.block = 128\n"
         "tolerance = 1e-5\n"
         "source_name = rowsum_acc.cu\n"
         "--- source\n" + std::string(kRowsumAccSource);
}

}  // namespace swz_test
