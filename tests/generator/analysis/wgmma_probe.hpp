// tests/generator/analysis: the probe kernels of tma_layout_gpu_test.cpp -- one wgmma.m64n64k16 from
// shared-memory descriptors over a host-built image, and one TMA box load dumped back to global memory; the
// CPU suite compiles them for sm_90a so they are known to build.
#pragma once

#include <string>

namespace swz_test {

inline const char* const kWgmmaProbeSource = R"(
#include "gemm_sm90.cuh"
namespace swz_probe {
// One warpgroup: copy `image` (A at 0, B at 16384) into 1024-aligned shared memory, one wgmma m64n64k16
// f16 -> f32 with the given descriptors (start addresses relative to that base), the accumulators to `out`
// (64 x 64 row-major).
template <int TA, int TB>
__global__ void __launch_bounds__(128) wgmma_layout_probe(const uint4* image, int words, unsigned long long da,
                                                          unsigned long long db, float* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned raw = swz::tpl::gemm_smem_u32(smem);
  const unsigned base = (raw + 1023u) & ~1023u;
  uint4* p = reinterpret_cast<uint4*>(smem + (base - raw));
  for (int i = threadIdx.x; i < words; i += 128) p[i] = image[i];
  // generic-proxy stores, read by wgmma through the async proxy
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  da += base >> 4;
  db += base >> 4;
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.0f;
  swz::tpl::sm90_wgmma_fence();
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, "
      "p, 1, 1, %35, %36;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(0), "n"(TA), "n"(TB)
      : "memory");
  swz::tpl::sm90_wgmma_commit();
  swz::tpl::sm90_wgmma_wait<0>();
  swz::tpl::sm90_fence_regs(d);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = 16 * warp + lane / 4, col = 2 * (lane % 4);
  for (int j = 0; j < 8; ++j) {
    out[row * 64 + col + 8 * j] = d[4 * j];
    out[row * 64 + col + 8 * j + 1] = d[4 * j + 1];
    out[(row + 8) * 64 + col + 8 * j] = d[4 * j + 2];
    out[(row + 8) * 64 + col + 8 * j + 1] = d[4 * j + 3];
  }
}
}  // namespace swz_probe
)";

/// One warpgroup: fill a 1024-aligned shared window of `words` 16-byte words with 0xFF, load one 2-D box of
/// `map` at coordinates (0, 0) to window offset `dst_offset` (`bytes` bytes), copy the window to `out`.
inline const char* const kTmaProbeSource = R"(
#include "gemm_sm90.cuh"
namespace swz_probe {
__global__ void __launch_bounds__(128) tma_box_probe(const __grid_constant__ swz::tpl::Sm90TmaMap map,
                                                     unsigned dst_offset, unsigned bytes, uint4* out, int words) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned raw = swz::tpl::gemm_smem_u32(smem);
  const unsigned base = (raw + 1023u) & ~1023u;
  uint4* p = reinterpret_cast<uint4*>(smem + (base - raw));
  const unsigned bar = base + 16u * words;
  for (int i = threadIdx.x; i < words; i += 128) p[i] = make_uint4(~0u, ~0u, ~0u, ~0u);
  // the fill (generic proxy) is ordered before the TMA's writes (async proxy)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  if (threadIdx.x == 0) {
    swz::tpl::sm90_mbar_init(bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    swz::tpl::sm90_mbar_expect_tx(bar, bytes);
    swz::tpl::sm90_tma_load_2d(base + dst_offset, &map, 0, 0, bar);
  }
  swz::tpl::sm90_mbar_wait(bar, 0);
  for (int i = threadIdx.x; i < words; i += 128) out[i] = p[i];
}
}  // namespace swz_probe
)";
inline const char* const kTmaProbeName = "swz_probe::tma_box_probe";

/// The probe's name expression: operand A / B MN-major (transposed) or K-major.
inline std::string wgmma_probe_name(bool a_mn, bool b_mn) {
  return std::string("swz_probe::wgmma_layout_probe<") + (a_mn ? "1" : "0") + ", " + (b_mn ? "1" : "0") + ">";
}

}  // namespace swz_test
