// runtime side of the Hopper (sm_90a) GEMM (gemm_sm90.hpp): tensor maps encoded through the lazily loaded
// driver (cuTensorMapEncodeTiled), kernel parameters, and the launch with the raised shared-memory limit.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "runtime/driver/driver_api.hpp"
#include "swzjit/error.hpp"

namespace swz {

namespace {

static_assert(sizeof(CUtensorMap) == sizeof(tpl::Sm90TmaMap), "the kernel's tensor-map parameter is a CUtensorMap");

// The swizzle of the kernel's tensor maps (tpl::kSm90SwizzleBytes), as the driver names it.
constexpr CUtensorMapSwizzle swizzle_mode() {
  static_assert(tpl::kSm90SwizzleBytes == 128, "only the 128-byte swizzle is mapped");
  return CU_TENSOR_MAP_SWIZZLE_128B;
}
// C's map: the swizzle of its chunks (tpl::sm90_c_swizzle_bytes: 128, or 64 / 32 for narrower 16-bit chunks).
CUtensorMapSwizzle c_swizzle_mode(int bytes) {
  return bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
}

// An operand of `rows` (M or N) x `k` elements. K-major (`mn_major` false): K-contiguous with pitch `ld`
// between rows, read in boxes of 64 along K (128 bytes: one swizzle row) x `box_rows`. MN-major: contiguous
// along the rows with pitch `ld` between K rows, read in boxes of 64 x 64 (tpl::kSm90MnBox along M/N, the
// k-tile along K). Out-of-bounds elements of a box are zero-filled (a box wholly outside too).
// The batch stride of a map over one matrix (never stepped): the matrix's extent, or its pitch where the
// extent is past TMA's 2^40-byte stride limit.
cuuint64_t single_stride(cuuint64_t pitch, cuuint64_t rows) {
  return rows < (cuuint64_t{1} << 40) / pitch ? pitch * rows : pitch;
}

// The third dimension is the batch: `batch` matrices `stride` elements apart (a stand-in stride for one).
tpl::Sm90TmaMap encode(const char* what, DType t, DevicePtr base, long long rows, long long k, long long ld,
                       int box_rows, bool mn_major, long long batch, long long stride) {
  const detail::DriverApi& api = detail::driver_api();
  const long long eb = dtype_bytes(t);
  // K = 0 runs no k-block (nothing is loaded), but a map needs extents >= 1: encode a K-major stand-in.
  if (k <= 0) mn_major = false;
  const cuuint64_t r = static_cast<cuuint64_t>(rows > 0 ? rows : 1);
  const cuuint64_t kk = static_cast<cuuint64_t>(k > 0 ? k : 1);
  const cuuint64_t dims[3] = {mn_major ? r : kk, mn_major ? kk : r, static_cast<cuuint64_t>(std::max(1LL, batch))};
  const cuuint64_t pitch = static_cast<cuuint64_t>(k > 0 ? ld * eb : 16);
  const cuuint64_t strides[2] = {pitch, batch > 1 && k > 0 ? static_cast<cuuint64_t>(stride * eb) : single_stride(pitch, dims[1])};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(tpl::sm90_box_inner(mn_major)),
                             static_cast<cuuint32_t>(tpl::sm90_box_outer(mn_major, box_rows)), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  CUtensorMap map;
  std::memset(&map, 0, sizeof map);
  const CUresult res = api.cuTensorMapEncodeTiled(
      &map, t == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3,
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(base)), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_mode(), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  detail::check(res, std::string("cuTensorMapEncodeTiled for sm_90a gemm operand ") + what + " (" + std::to_string(rows) +
                       " x " + std::to_string(k) + (mn_major ? ", MN-major" : ", K-major") + ", pitch " + std::to_string(ld) + " elements)");
  tpl::Sm90TmaMap out;
  std::memcpy(&out, &map, sizeof out);
  return out;
}

// C (`batch` matrices of rows x cols, row-major, pitch ld elements of `t`, `stride` apart) for the
// TMA-store epilogue of tiles `bn` wide: boxes of one swizzle row (tpl::sm90_c_swizzle_bytes: 128 bytes, 64 16-bit
// or 32 f32 elements, or 64 / 32 bytes for 16-bit tiles that are not whole 128-byte rows) x 64 rows of one
// matrix, with that swizzle; the store clips the edges.
tpl::Sm90TmaMap encode_c(DType t, DevicePtr base, long long rows, long long cols, long long ld, long long batch,
                         long long stride, int bn) {
  const detail::DriverApi& api = detail::driver_api();
  const long long eb = dtype_bytes(t);
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(std::max(1LL, batch))};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld * eb),
                                 batch > 1 ? static_cast<cuuint64_t>(stride * eb)
                                           : single_stride(static_cast<cuuint64_t>(ld * eb), dims[1])};
  const int swizzle = tpl::sm90_c_swizzle_bytes(bn, static_cast<int>(eb));
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(tpl::sm90_c_box_inner(static_cast<int>(eb), swizzle)),
                             static_cast<cuuint32_t>(tpl::kSm90CBoxOuter), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUtensorMapDataType dt = t == DType::F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                 : t == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  CUtensorMap map;
  std::memset(&map, 0, sizeof map);
  const CUresult res = api.cuTensorMapEncodeTiled(&map, dt, 3, reinterpret_cast<void*>(static_cast<std::uintptr_t>(base)),
                                                  dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                  c_swizzle_mode(swizzle), CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  detail::check(res, "cuTensorMapEncodeTiled for sm_90a gemm output C (" + std::to_string(rows) + " x " +
                         std::to_string(cols) + ", pitch " + std::to_string(ld) + " elements)");
  tpl::Sm90TmaMap out;
  std::memcpy(&out, &map, sizeof out);
  return out;
}

// Launch ids of reduce=fixup launches: distinct within the process (a counter), and, from a random start,
// unlikely to meet a stale flag another process left in a reused workspace. Below 2^56, never 0.
unsigned long long next_launch_id() {
  static std::atomic<unsigned long long> counter{(std::random_device{}() * 0x9E3779B97F4A7C15ull) >> 8};
  constexpr unsigned long long kMask = (1ull << 56) - 1;
  for (;;) {
    const unsigned long long id = counter.fetch_add(1, std::memory_order_relaxed) & kMask;
    if (id != 0) return id;
  }
}

}  // namespace

Sm90GemmLaunch gemm_sm90_prepare(const Sm90GemmConfig& cfg, const GemmProblem& problem, DevicePtr a, DevicePtr b,
                                 DevicePtr c, float alpha, float beta, int sm_count, int device, DevicePtr workspace) {
  const Sm90Frame f = gemm_sm90_frame(cfg, problem, a, b);
  const int splits = gemm_sm90_k_splits(cfg, f.k);
  Sm90GemmLaunch l;
  const LaunchShape s = gemm_sm90_launch_shape(cfg, f.m, f.n, f.k, sm_count, std::max(1LL, f.batch));
  l.grid = Dim3{s.grid[0], s.grid[1], s.grid[2]};
  l.block = Dim3{s.block[0], s.block[1], s.block[2]};
  l.smem_bytes = static_cast<unsigned>(gemm_sm90_smem_bytes(cfg));
  l.empty = f.m == 0 || f.n == 0;
  if (l.empty) return l;
  l.split = cfg.uses_reduce_kernel();
  const bool fixup = cfg.reduce_fixup && splits > 1;
  // Partials to write (through the reduction kernel or the fixup); K = 0 with the reduction kernel has none.
  if (((l.split && splits > 0) || fixup) && workspace == 0)
    throw_invalid("sm_90a gemm: config " + cfg.to_string() + " splits K and needs a workspace of " +
                  std::to_string(gemm_sm90_workspace_bytes(cfg, problem)) + " bytes (gemm_sm90_workspace_bytes)");
  if ((l.split || fixup) && workspace % 16 != 0)
    throw_invalid("sm_90a gemm: the split-K workspace must be 16-byte aligned");
  if (l.split) {
    // The GEMM writes f32 partials (alpha 1, beta 0) into slices of the workspace; the reduction applies
    // the call's alpha and beta. K = 0: no partials, the reduction alone writes beta * C.
    const long long ldw = gemm_splitk_workspace_ld(f.n), slice_rows = gemm_sm90_slice_rows(cfg, f.m);
    l.gemm = splits > 0;
    l.reduce = tpl::GemmSplitKParams{reinterpret_cast<const float*>(static_cast<std::uintptr_t>(workspace)),
                                     reinterpret_cast<void*>(static_cast<std::uintptr_t>(c)),
                                     static_cast<int>(f.m), static_cast<int>(f.n), ldw, slice_rows * ldw, f.ldc,
                                     f.stride_c, f.batch, splits, alpha, beta};
    const LaunchShape rs = gemm_splitk_reduce_launch_shape(f.m, f.n, f.batch);
    l.reduce_grid = Dim3{rs.grid[0], rs.grid[1], rs.grid[2]};
    l.reduce_block = Dim3{rs.block[0], rs.block[1], rs.block[2]};
    if (!l.gemm) return l;
  }
  // cuTensorMapEncodeTiled needs a current context (CUDA_ERROR_INVALID_CONTEXT without one).
  const detail::ContextGuard guard(device);
  const DevicePtr ka = f.swapped ? b : a, kb = f.swapped ? a : b;
  const int a_rows = std::min(gemm_sm90_a_rows(f.m, f.a_mn), gemm_sm90_tile_rows(cfg));
  l.map_a = encode("A", cfg.in, ka, f.m, f.k, f.lda, a_rows, f.a_mn, f.batch, f.stride_a);
  // Each CTA of a cluster loads its part of B (an MN-major B in boxes of 64 whatever the part).
  l.map_b = encode("B", cfg.in, kb, f.n, f.k, f.ldb, tpl::sm90_b_part(cfg.bn, cfg.cluster), f.b_mn, f.batch, f.stride_b);
  tpl::Sm90GemmParams& p = l.params;
  p.m = static_cast<int>(f.m);
  p.n = static_cast<int>(f.n);
  p.k = static_cast<int>(f.k);
  p.a_rows = a_rows;
  const long long tiles_m = (f.m + gemm_sm90_tile_rows(cfg) - 1) / gemm_sm90_tile_rows(cfg);
  p.tiles_mc = static_cast<int>((tiles_m + cfg.cluster - 1) / cfg.cluster);  // rows of cluster tiles
  p.tiles_n = static_cast<int>((f.n + cfg.bn - 1) / cfg.bn);
  const long long kblocks = (f.k + tpl::kSm90Bk - 1) / tpl::kSm90Bk;
  p.splits = std::max(1, splits);
  p.kb_per_split = static_cast<int>((kblocks + p.splits - 1) / p.splits);
  // What the kernel writes: C itself, or (split) the workspace's slices, one after the other.
  const DType kout = cfg.kernel_out();
  const long long ob = dtype_bytes(kout);
  const DevicePtr out = l.split ? workspace : c;
  const long long ld = l.split ? l.reduce.ldw : f.ldc;
  // Split: one 2-D stack of slabs (matrix b's slice s at rows (b * splits + s) * slice_rows).
  const long long rows = l.split ? l.reduce.stride_w / ld * splits * f.batch : f.m;
  p.c = reinterpret_cast<void*>(static_cast<std::uintptr_t>(out));
  p.slice_rows = l.split ? static_cast<int>(l.reduce.stride_w / ld) : 0;
  p.c_pairs = (out % static_cast<DevicePtr>(2 * ob) == 0 && ld % 2 == 0 && (l.split || f.batch == 1 || f.stride_c % 2 == 0))
                  ? 1 : 0;
  const float kbeta = l.split ? 0.0f : beta;
  // The TMA-store epilogue never reads C, so it runs only for beta = 0; TMA needs C and its pitch aligned.
  p.c_tma = (cfg.tma_epilogue && kbeta == 0.0f && out % 16 == 0 && (ld * ob) % 16 == 0 &&
             (l.split || f.batch == 1 || (f.stride_c * ob) % 16 == 0)) ? 1 : 0;
  if (p.c_tma) l.map_c = encode_c(kout, out, rows, f.n, ld, l.split ? 1 : f.batch, f.stride_c, cfg.bn);
  p.batch = static_cast<int>(f.batch);
  p.stride_c = l.split ? 0 : f.stride_c;
  p.ldc = ld;
  p.alpha = l.split ? 1.0f : alpha;
  p.beta = kbeta;
  if (fixup) {
    // The partials' slices as the reduction kernel would have them, then the tile flags.
    const long long ldw = gemm_splitk_workspace_ld(f.n), slice_rows = gemm_sm90_slice_rows(cfg, f.m);
    const long long partial_bytes = (splits * f.batch * slice_rows * ldw * 4 + 255) / 256 * 256;
    p.ws = reinterpret_cast<float*>(static_cast<std::uintptr_t>(workspace));
    p.ldw = ldw;
    p.slice_rows = static_cast<int>(slice_rows);
    p.flags = reinterpret_cast<unsigned long long*>(static_cast<std::uintptr_t>(workspace + partial_bytes));
    p.launch_id = next_launch_id();
  }
  const Sm90TailPlan plan = gemm_sm90_tail_plan(cfg, f.m, f.n, f.k, f.batch, sm_count);
  p.dp_tiles = static_cast<int>(plan.dp_tiles);
  if (plan.slices > 1) {
    // The last wave's tiles in K slices: their slots, then their flags (gemm_sm90_workspace_bytes).
    const std::size_t need = gemm_sm90_workspace_bytes(cfg, problem, sm_count);
    if (workspace == 0)
      throw_invalid("sm_90a gemm: config " + cfg.to_string() + " runs its last wave of tiles in K slices here and needs a "
                    "workspace of " + std::to_string(need) + " bytes (gemm_sm90_workspace_bytes with the SM count)");
    if (workspace % 16 != 0) throw_invalid("sm_90a gemm: the tail's workspace must be 16-byte aligned");
    const long long slot_bytes = plan.tail_tiles * plan.slices * cfg.cluster * tpl::kSm90Bm * cfg.bn * 4;
    p.splits = plan.slices;
    p.kb_per_split = plan.kb_per_slice;
    p.ws = reinterpret_cast<float*>(static_cast<std::uintptr_t>(workspace));
    p.flags = reinterpret_cast<unsigned long long*>(static_cast<std::uintptr_t>(workspace + (slot_bytes + 255) / 256 * 256));
    p.launch_id = next_launch_id();
  }
  return l;
}

void gemm_sm90_renew(Sm90GemmLaunch& launch) { gemm_sm90_renew(launch.params); }

void gemm_sm90_renew(tpl::Sm90GemmParams& params) {
  if (params.flags != nullptr) params.launch_id = next_launch_id();
}

std::array<void*, 4> gemm_sm90_args(const Sm90GemmLaunch& launch) {
  return {const_cast<tpl::Sm90TmaMap*>(&launch.map_a), const_cast<tpl::Sm90TmaMap*>(&launch.map_b),
          const_cast<tpl::Sm90TmaMap*>(&launch.map_c), const_cast<tpl::Sm90GemmParams*>(&launch.params)};
}

void gemm_sm90_launch(const Kernel& kernel, const Sm90GemmLaunch& launch, CUstream stream, bool raise_smem,
                      const Kernel* reduce) {
  if (launch.empty) return;
  if (launch.split && reduce == nullptr)
    throw_invalid("sm_90a gemm: a split-K launch needs the reduction kernel (gemm_splitk_reduce_name_expression)");
  if (launch.gemm) {
    if (raise_smem) {
      Kernel k = kernel;  // copies share the CUfunction, whose attribute this sets
      k.set_max_dynamic_smem(static_cast<int>(launch.smem_bytes));
    }
    // cuLaunchKernel copies the parameters at the call, so pointers into `launch` (or the copy with a fresh
    // launch id, for reduce=fixup) are enough.
    std::array<void*, 4> args = gemm_sm90_args(launch);
    tpl::Sm90GemmParams renewed = launch.params;
    if (renewed.flags != nullptr) {
      renewed.launch_id = next_launch_id();
      args[3] = &renewed;
    }
    kernel.launch(launch.grid, launch.block, launch.smem_bytes, stream, args.data());
  }
  if (launch.split) {
    // A programmatic dependent: the reduction's launch overlaps the GEMM's last blocks, and it waits for the
    // GEMM's partials (templates/gemm_splitk.cuh).
    void* rargs[] = {const_cast<tpl::GemmSplitKParams*>(&launch.reduce)};
    if (launch.gemm) {
      reduce->launch_dependent(launch.reduce_grid, launch.reduce_block, 0, stream, rargs);
    } else {
      reduce->launch(launch.reduce_grid, launch.reduce_block, 0, stream, rargs);
    }
  }
}

}  // namespace swz
