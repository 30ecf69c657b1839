// bench: the ceiling of the instruction class the HGEMM family uses. A register-only loop of
// mma.sync.m16n8k16 (f16 or bf16 inputs, f32 accumulators; no memory traffic at all) on every SM,
// with ACC independent accumulator tiles per warp and W warps per SM, timed with CUDA events. What it
// prints is the most any mma.sync GEMM can reach on this GPU; the HGEMM's TFLOP/s are read against it.
//   swz_bench_mma_peak [--iters N]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "bench/bench_common.hpp"
#include "swzjit/device.hpp"
#include "swzjit/jit.hpp"

using namespace swz;
using swz::bench::check;

namespace {

// ACC accumulator tiles per warp, each updated once per iteration: ACC independent mma per iteration.
const char* kSource = R"(
template <int BF16, int ACC>
__global__ void mma_peak(float* out, int iters) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x * 0x00010001u * (i + 1));
  for (int i = 0; i < 2; ++i) b[i] = 0x3c003c00u ^ (threadIdx.x * 0x00030003u * (i + 1));
  float d[ACC][4];
  for (int j = 0; j < ACC; ++j)
    for (int r = 0; r < 4; ++r) d[j][r] = 0.0f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) {
      if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  float s = 0.0f;
  for (int j = 0; j < ACC; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";

}  // namespace

int main(int argc, char** argv) {
  int iters = 20000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      iters = static_cast<int>(bench::parse_count(argv[++i], "--iters", 1, 1000000000));
    } else {
      std::fprintf(stderr, "usage: swz_bench_mma_peak [--iters N]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context creation");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int sms = prop.multiProcessorCount;
  float* out = nullptr;
  check(cudaMalloc(&out, sizeof(float) * sms * 4 * 1024), "cudaMalloc");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  std::printf("device: %s, %d SMs; mma.sync.m16n8k16 f32-accumulate, registers only, %d iterations\n", prop.name, sms,
              iters);
  std::printf("| inputs | independent mma per warp | warps per SM | TFLOP/s |\n| --- | ---: | ---: | ---: |\n");
  for (int bf16 = 0; bf16 < 2; ++bf16)
    for (int acc : {8, 16, 32}) {
      CompileRequest req;
      req.source = kSource;
      req.name_expression = "mma_peak<" + std::to_string(bf16) + ", " + std::to_string(acc) + ">";
      const CompiledKernel ck = compile(req);
      Module m(ck, 0);
      Kernel k = m.kernel();
      for (int warps : {4, 8, 16}) {
        void* args[] = {&out, &iters};
        const Dim3 grid{static_cast<unsigned>(sms), 1, 1}, block{static_cast<unsigned>(32 * warps), 1, 1};
        try {
          k.launch(grid, block, 0, nullptr, args);  // warm-up
        } catch (const std::exception&) {
          std::printf("| %s | %d | %d | - (registers: does not fit) |\n", bf16 ? "bf16" : "f16", acc, warps);
          continue;
        }
        check(cudaEventRecord(e0), "record");
        k.launch(grid, block, 0, nullptr, args);
        check(cudaEventRecord(e1), "record");
        check(cudaEventSynchronize(e1), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        const double flops = 2.0 * 16 * 8 * 16 * static_cast<double>(acc) * iters * warps * sms;
        std::printf("| %s | %d | %d | %.1f |\n", bf16 ? "bf16" : "f16", acc, warps, flops / (ms * 1e9));
      }
    }
  cudaFree(out);
  return 0;
}
