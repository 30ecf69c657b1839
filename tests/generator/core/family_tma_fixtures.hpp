// tests: "tma_transpose", a declared family whose kernel loads its tile with TMA (a FamilyTensorMap):
// out (cols x rows) = the transpose of in (rows x cols), both row-major f32. Each block loads one
// TILE x TILE tile of `in` with cp.async.bulk.tensor through the map, in shared memory with the map's
// swizzle (SWZ bytes: 0, or the tile row's own width), then each thread reads one element of the tile
// at the swizzled address and writes it transposed. A kernel reading with the wrong swizzle reads another
// element: every swizzled configuration's result checks that the map's swizzle is the one the template
// assumes (Swizzle<B,4,3> on byte offsets). Shared by the CPU suite (family_tma_test.cpp) and the GPU
// suite (tests/runtime/engine/family_tma_gpu_test.cpp).
#pragma once

#include <string>

namespace swz_test {

inline const char* kTmaTransposeSource = R"(
#include "swizzle.cuh"

struct alignas(64) TmaMap {
  unsigned long long bits[16];
};

// The byte offset of the element at `offset` of a tile that TMA wrote with a SWZ-byte swizzle: the 16-byte
// chunk index (bits 4..) XOR the 128-byte row index (bits 7..), log2(SWZ / 16) bits of each.
template <int SWZ>
__device__ __forceinline__ unsigned tma_swizzled(unsigned offset) {
  if constexpr (SWZ == 128) return static_cast<unsigned>(swz::tpl::Swizzle<3, 4, 3>{}(static_cast<int>(offset)));
  else if constexpr (SWZ == 64) return static_cast<unsigned>(swz::tpl::Swizzle<2, 4, 3>{}(static_cast<int>(offset)));
  else if constexpr (SWZ == 32) return static_cast<unsigned>(swz::tpl::Swizzle<1, 4, 3>{}(static_cast<int>(offset)));
  else return offset;
}

// `in_map`: a __grid_constant__ kernel parameter (or a field of one).
template <int TILE, int SWZ>
__device__ __forceinline__ void tma_transpose_tile(const TmaMap& in_map, float* out, long long rows, long long cols) {
  extern __shared__ unsigned char raw[];
  __shared__ alignas(8) unsigned long long bar;
  // The swizzle pattern repeats every 8 rows of 128 bytes: the tile starts at a multiple of 1024 bytes.
  const unsigned tile = (static_cast<unsigned>(__cvta_generic_to_shared(raw)) + 1023u) & ~1023u;
  const unsigned bar_addr = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
  const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
  if (leader) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar_addr) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (leader) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_addr), "r"(TILE * TILE * 4) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        ::"r"(tile), "l"(reinterpret_cast<unsigned long long>(&in_map)), "r"(c0), "r"(r0), "r"(bar_addr)
        : "memory");
  }
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar_addr)
      : "memory");
  // Thread (x, y) reads tile row x, column y (consecutive threads: consecutive rows of the tile, the
  // accesses the swizzle spreads over the banks) and writes out[c0 + y][r0 + x] (coalesced).
  const unsigned offset = tma_swizzled<SWZ>(static_cast<unsigned>((threadIdx.x * TILE + threadIdx.y) * 4));
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(tile + offset));
  const long long r = r0 + threadIdx.x, c = c0 + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = v;
}

template <int TILE, int SWZ>
__global__ void tma_transpose(const __grid_constant__ TmaMap in_map, float* out, long long rows, long long cols) {
  tma_transpose_tile<TILE, SWZ>(in_map, out, rows, cols);
}

// The same with its arguments in one struct (a packed launch, kernel = NAME<...>({...}) in the text): the map first.
struct TmaTransposeArgs {
  TmaMap in_map;
  float* out;
  int rows;
  long long cols;
};
template <int TILE, int SWZ>
__global__ void tma_transpose_packed(const __grid_constant__ TmaTransposeArgs a) {
  tma_transpose_tile<TILE, SWZ>(a.in_map, a.out, a.rows, a.cols);
}

// Persistent: a grid of at most sm_count blocks (the family's grid expression), each looping over tiles
// with one TMA load a tile into the same shared memory, the barrier's phase flipping each time.
template <int TILE, int SWZ>
__global__ void tma_transpose_persistent(const __grid_constant__ TmaMap in_map, float* out, long long rows, long long cols) {
  extern __shared__ unsigned char raw[];
  __shared__ alignas(8) unsigned long long bar;
  const unsigned tile = (static_cast<unsigned>(__cvta_generic_to_shared(raw)) + 1023u) & ~1023u;
  const unsigned bar_addr = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
  if (leader) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar_addr) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  const int tiles_c = static_cast<int>((cols + TILE - 1) / TILE), tiles = tiles_c * static_cast<int>((rows + TILE - 1) / TILE);
  unsigned phase = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int c0 = (t % tiles_c) * TILE, r0 = (t / tiles_c) * TILE;
    __syncthreads();  // the previous tile is read: the copy may overwrite it
    if (leader) {
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_addr), "r"(TILE * TILE * 4) : "memory");
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
          ::"r"(tile), "l"(reinterpret_cast<unsigned long long>(&in_map)), "r"(c0), "r"(r0), "r"(bar_addr)
          : "memory");
    }
    asm volatile(
        "{\n.reg .pred done;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n" ::"r"(bar_addr), "r"(phase)
        : "memory");
    phase ^= 1u;
    const unsigned offset = tma_swizzled<SWZ>(static_cast<unsigned>((threadIdx.x * TILE + threadIdx.y) * 4));
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(tile + offset));
    const long long r = r0 + threadIdx.x, c = c0 + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = v;
  }
}

__global__ void tma_transpose_reference(const float* in, float* out, long long rows, long long cols) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const long long r = i / cols, c = i % cols;
  out[c * rows + r] = in[i];
}
)";

/// The text of tma_transpose (`name` lets a test register a variant under another name).
inline std::string tma_transpose_family_text(const std::string& name = "tma_transpose") {
  return "family = " + name + "\n"
         "about = out = transpose(in), tiles loaded with TMA into swizzled shared memory\n"
         "dims = rows cols\n"
         "align align_in = in\n"
         "param TILE = 8 16 32 ; default 32\n"
         "param SWZ = 0 32 64 128 ; default 128\n"
         "require = SWZ == 0 || TILE * 4 == SWZ\n"
         "require = align_in >= 16\n"
         "require = cols % 4 == 0\n"
         "buffer in = f32 [rows * cols] input\n"
         "buffer out = f32 [rows * cols] output\n"
         "tensormap tin = in dims [cols, rows] strides [cols] box [TILE, TILE] swizzle SWZ\n"
         "kernel = tma_transpose<TILE, SWZ>(tin, out, rows, cols)\n"
         "grid = max(1, ceil_div(cols, TILE)), max(1, ceil_div(rows, TILE))\n"
         "block = TILE, TILE\n"
         "smem = TILE * TILE * 4 + 1024\n"
         "reference = tma_transpose_reference(in, out, rows, cols)\n"
         "reference.grid = max(1, ceil_div(rows * cols, 256))\n"
         "reference.block = 256\n"
         "tolerance = 1e-6\n"
         "min_arch = 90\n"
         "source_name = tma_transpose.cu\n"
         "--- source\n" + std::string(kTmaTransposeSource);
}

/// tma_transpose as a persistent kernel: at most sm_count blocks (swz::kFamilySmCount), each looping over tiles.
inline std::string tma_transpose_persistent_family_text(const std::string& name = "tma_transpose_persistent") {
  std::string t = tma_transpose_family_text(name);
  const auto swap = [&t](const std::string& from, const std::string& to) { t.replace(t.find(from), from.size(), to); };
  swap("kernel = tma_transpose<", "kernel = tma_transpose_persistent<");
  swap("grid = max(1, ceil_div(cols, TILE)), max(1, ceil_div(rows, TILE))",
       "grid = max(1, min(ceil_div(cols, TILE) * ceil_div(rows, TILE), sm_count))");
  return t;
}

}  // namespace swz_test
