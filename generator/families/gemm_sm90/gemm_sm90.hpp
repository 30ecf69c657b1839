// generator (internal): the Hopper (sm_90a) GEMM of templates/gemm_sm90.cuh on the host -- its config with
// text round trip and validation, the NVRTC request, the launch shape, and the launch itself (tensor maps
// encoded with cuTensorMapEncodeTiled). Pure functions of (problem, config) plus one launch function, so
// the family contract (swzjit/family.hpp) can wrap it later.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"  // GemmProblem, MatrixOrder
#include "swzjit/jit.hpp"
#include "swzjit/types.hpp"
#include "templates/gemm_sm90.cuh"
#include "templates/gemm_splitk.cuh"

namespace swz {

/// One sm_90a GEMM kernel: a 128 x bn x 64 block tile (two consumer warpgroups of 64 rows; one for a 64-row
/// tile, arows=64), `stages`
/// TMA stages, `raster` tile-rows per rasterization group, and a grid of at most one block per SM
/// (persistent) or one block per tile. Operands: f16 or bf16, each K- or MN-major (`layout`); C f16, bf16 or
/// f32.
/// Canonical text (parse() reads it back):
///   "in=f16,out=f16,layout=NT,bn=256,stages=4,raster=8,persistent=1,inflight=1,cluster=1"
struct Sm90GemmConfig {
  DType in = DType::F16;
  DType out = DType::F16;
  /// The operands' layout in the kernel's frame (C row-major), as GemmLayout names it: the first letter is A
  /// (N: row-major, K-contiguous; T: column-major, M-contiguous), the second B (T: column-major,
  /// K-contiguous; N: row-major, N-contiguous). "NT", "NN", "TN" or "TT"; gemm_sm90_layout(problem) gives
  /// a problem's. An M/N-contiguous operand is read with wgmma's transpose immediate.
  std::string layout = "NT";
  int bn = 256;          ///< 32..256, a multiple of 16 (wgmma m64nBNk16); an N-contiguous B needs bn / cluster a multiple of 64;
                         ///< widths other than 32, 64, 128 and 256 run one CTA a tile, K whole (validate)
  int stages = 4;        ///< 2.. as many as fit in 227 KiB (bn 256: 4, bn 128: 7)
  int raster = 8;        ///< tile-rows per rasterization group, 1..64
  bool persistent = true;
  /// k-blocks of wgmma a consumer leaves running when it frees a stage: 0 (wait for all, free the stage just
  /// read) or 1 (free the previous k-block's stage, keep the tensor cores fed while waiting).
  int inflight = 1;
  /// CTAs per cluster (1 or 2): a pair computes vertically adjacent tiles and shares B through TMA multicast,
  /// each CTA loading half of it (half the L2 traffic for B).
  int cluster = 1;
  /// The epilogue: false writes C from registers to global memory; true (text "epilogue=tma", printed only
  /// when set) stages C through shared memory (32, 16 or 8 KiB more: tpl::sm90_c_buffer_bytes) and TMA stores
  /// that drain during the next tile's main loop, where beta is 0 and C is 16-byte aligned with a pitch of a
  /// multiple of 16 bytes (other calls of such a kernel take the register path).
  bool tma_epilogue = false;
  /// K slices (split-K, 1..32; text "splits=N", printed only when > 1): each tile's K is cut into this
  /// many slices computed by different CTAs, which write f32 partials into a workspace
  /// (gemm_sm90_workspace_bytes) that the split-K reduction (templates/gemm_splitk.cuh) sums into C with
  /// alpha and beta. For shapes with fewer tiles than SMs (M <= 128 against a 4096-wide N).
  int splits = 1;
  /// How the K slices are summed (text "reduce=cluster", printed only when set): false, through the f32
  /// workspace and the split-K reduction kernel; true, inside the kernel: the `splits` (2 or 4) slices of a
  /// tile run on one cluster of CTAs that sum them through distributed shared memory and store C from
  /// registers (no workspace, no second kernel; one cluster per tile, not persistent; epilogue=tma and
  /// cluster=2 do not apply).
  bool reduce_cluster = false;
  /// Sums the K slices in the kernel too (text "reduce=fixup", printed only when set): the slices write f32
  /// partials into the workspace as with the reduction kernel, and the CTA that finishes a tile's last
  /// slice sums them (in slice order) and stores C with alpha and beta: no second kernel. The workspace
  /// also holds a flag per tile (gemm_sm90_workspace_bytes).
  bool reduce_fixup = false;
  /// The last partial wave in K slices (text "tail=N", printed only when > 1; N is 2 or 4): where the tiles
  /// fill some whole waves of SMs and then a last one at most half, those last tiles are cut into up to N K
  /// slices (as many as fit in one wave, each of at least 4 k-blocks) that the kernel sums itself (as
  /// reduce=fixup, in a workspace of gemm_sm90_workspace_bytes); every other tile runs whole. 2048 x 11008
  /// on 128 x 256 tiles: 5 waves of 132 and 28 tiles left, which run as 112 quarter tiles. With splits = 1.
  int tail = 1;
  /// Rows of A a stage has room for (text "arows=N", printed only when below 128): 128, or 64, 32 or 16 for
  /// a problem whose M fits in them (one short tile row; gemm_sm90_frame refuses a larger M). The stages
  /// shrink with it, so more fit: at M = 16 on 128 x 32 tiles a stage is 6 KiB instead of 20, and the
  /// ring keeps three times as much of B in flight. An M-contiguous A takes 64 or 128 (64-row boxes).
  int arows = 128;
  /// A and B swap roles (text "swap=1", printed only when set): the kernel computes C^T = B^T A^T, so its
  /// 128-row tiles run along the problem's N and its bn-wide ones along M, and it stores C transposed,
  /// element by element. For small M (M = 16 against N = 4096: 128 x 32 tiles of C^T, a quarter of the
  /// tensor work of 128-row tiles over 16 rows). `layout` is then the swapped frame's (an NN problem runs
  /// as TT: gemm_sm90_layout(problem, true)). Not with epilogue=tma nor with K slices summed by the
  /// reduction kernel (splits > 1 without reduce=cluster or fixup).
  bool swap_ab = false;

  std::string to_string() const;
  /// @throws Error(InvalidArgument) naming the field for unknown keys, bad values or an invalid config.
  static Sm90GemmConfig parse(const std::string& text);
  /// @throws Error(InvalidArgument) naming the offending field and the rule it breaks.
  void validate() const;
  bool operator==(const Sm90GemmConfig& o) const { return to_string() == o.to_string(); }
  /// A is M-contiguous / B is N-contiguous in the kernel's frame (from `layout`).
  bool a_mn_major() const { return layout.size() == 2 && layout[0] == 'T'; }
  bool b_mn_major() const { return layout.size() == 2 && layout[1] == 'N'; }
  /// bn is 32, 64, 128 or 256 (the widths every feature takes; the others run one CTA a tile, K whole).
  bool bn_pow2() const { return bn == 32 || bn == 64 || bn == 128 || bn == 256; }
  /// What the kernel itself writes: f32 partials into the workspace when it splits K, else C's `out`.
  DType kernel_out() const { return uses_reduce_kernel() ? DType::F32 : out; }
  /// Whether K slices go through the workspace (the reduction kernel's or the fixup's).
  bool uses_workspace() const { return splits > 1 && !reduce_cluster; }
  /// Whether the split-K reduction kernel runs after the GEMM (gemm_sm90_launch's `reduce`).
  bool uses_reduce_kernel() const { return uses_workspace() && !reduce_fixup; }
  /// Whether the last partial wave may run in K slices (tail > 1; gemm_sm90_tail_plan says whether it does).
  bool uses_tail() const { return tail > 1; }
  /// Whether the kernel sums K slices itself (a tile flag and the verdict word: reduce=fixup or the tail).
  bool kernel_fixup() const { return reduce_fixup || uses_tail(); }
};

/// How a tail config (Sm90GemmConfig::tail) runs on a problem: the first `dp_tiles` (cluster tiles x
/// matrices) whole, the `tail_tiles` after them in `slices` K slices of `kb_per_slice` k-blocks. slices = 1
/// (no tail, every tile whole) where the tiles fill fewer than one wave of `sm_count` SMs (sm_count /
/// cluster clusters), fill their last wave exactly, or leave more than half of it for the rest, or where K
/// is too short for slices of 4 k-blocks; or for a config that is not a tail config.
struct Sm90TailPlan {
  long long dp_tiles = 0;
  long long tail_tiles = 0;
  int slices = 1;
  int kb_per_slice = 0;
};
Sm90TailPlan gemm_sm90_tail_plan(const Sm90GemmConfig& cfg, long long m, long long n, long long k, long long batch,
                                 int sm_count);

/// The layout (Sm90GemmConfig::layout) `problem` has in the kernel's frame: its own for a row-major C; for a
/// column-major C, computed as C^T = B^T A^T, the roles swap (NN runs as TT, TT as NN; NT and TN stay).
/// `swap_ab` (Sm90GemmConfig::swap_ab) swaps them once more.
std::string gemm_sm90_layout(const GemmProblem& problem, bool swap_ab = false);
/// Whether the kernel's A is the problem's B: a column-major C or swap_ab, not both.
inline bool gemm_sm90_swaps(const Sm90GemmConfig& cfg, const GemmProblem& problem) {
  return (problem.c_order != MatrixOrder::RowMajor) != cfg.swap_ab;
}

/// The default config (layout NT, bn 256, 4 stages, raster 8, persistent, one k-block in flight).
Sm90GemmConfig default_sm90_gemm_config(DType in, DType out);
/// A config for a problem's layout and shape without tuning: the default with the problem's layout and the
/// TMA-store epilogue, bn 128 when 128 x 256 tiles would
/// leave SMs idle (fewer tiles than `sm_count`, e.g. M = 128) or fill the last wave of SMs clearly better,
/// clusters of two from 8 waves of tiles on, 128 x 256 tiles with the last wave in K slices (tail=4) where
/// that wave is at most half full (gemm_sm90_tail_plan: 2048 x 11008, 8192 x 14336), and
/// K split into up to 16 slices (of at least 4 k-blocks) where whole tiles would keep at most half the SMs
/// busy (summed in the kernel, reduce=fixup, where a tile row holds at most 32 rows of C); but 128 x 64 or
/// 128 x 32 tiles (9 or 11 stages, register epilogue, K unsplit) where those fill
/// half to one wave of SMs and the tile rows are mostly full (M = 128 or 256 against N = 4096), or M is
/// one short tile row with K up to 8192 (M = 16..64 against N = 4096); for M up to 64, with short A stages
/// (arows), as many as fit, and so also at longer K (16 x 4096 x 14336, K unsplit). On a device with
/// `dram_gbps` of peak DRAM bandwidth (DeviceInfo::dram_gbps; 0: not known) of 30 GB/s per SM or more (the
/// H200, not the H100 SXM), one tile row (M <= 128) with at least 64 k-blocks (K > 4032) runs 128 x 64 tiles
/// in 2 K slices summed in a cluster (reduce=cluster) instead, where those tiles fill a quarter to half a
/// wave (M = 16..128 against N = 2049..4224 on 132 SMs). There too, at most 32 rows of C (in the kernel's
/// frame) of one matrix with both operands K-contiguous (NT) and at least 64 k-blocks (K > 4032) swap A and
/// B (swap=1, 128 x 32 tiles of C^T along N): in 2 K
/// slices summed in a cluster pair where those tiles fill a quarter to half a wave of pairs (N = 2049..4224),
/// K whole where they fill half to one wave (N = 8449..16896). `allow_swap` false: the choice without that
/// rule (a tune's space holds both).
Sm90GemmConfig choose_sm90_gemm_config(const GemmProblem& problem, int sm_count, int dram_gbps = 0, bool allow_swap = true);


/// Dynamic shared memory per block (stages + the TMA epilogue's C buffers + barriers + alignment slack).
int gemm_sm90_smem_bytes(const Sm90GemmConfig& cfg);
/// The most stages of `cfg`'s tile (its bn, arows, epilogue and fixup; its own stage count aside) that fit an
/// sm_90 block (at least 2; shared memory only: a config's other rules still apply).
int gemm_sm90_max_stages(const Sm90GemmConfig& cfg);
/// The narrowest tile width, a multiple of `step` (16, 32 or 64) in 32..256, whose `tile_rows` rows of 128-row
/// tiles (every matrix's) across `n` columns fit one wave of `sm_count` SMs, one CTA a tile; 0 where none does.
int gemm_sm90_wave_width(long long tile_rows, long long n, int sm_count, int step);
/// The step of the widths `cfg`'s layout and C take with the TMA epilogue: 64 for an N-contiguous B (whole
/// 64-wide boxes), else 16 for 16-bit C (chunks of 64, 32 or 16 columns) and 32 for f32 C (chunks of 32).
int gemm_sm90_wave_step(const Sm90GemmConfig& cfg);
/// Sm90GemmConfig::arows for M = `m` rows of the kernel's frame: 16, 32 or 64 (64 for an M-contiguous A,
/// whose boxes are 64 rows), 128 beyond 64.
int gemm_sm90_short_arows(long long m, bool a_mn);
/// The generated translation unit, its kernel's name expression and file name.
std::string gemm_sm90_source(const Sm90GemmConfig& cfg);
std::string gemm_sm90_name_expression(const Sm90GemmConfig& cfg);
std::string gemm_sm90_source_name(const Sm90GemmConfig& cfg);
/// The NVRTC request: the source above for arch "sm_90a" (wgmma and setmaxnreg exist only there).
CompileRequest gemm_sm90_compile_request(const Sm90GemmConfig& cfg);

/// The problem in the kernel's frame (C row-major m x n; A m x k, B k x n, each K- or MN-major).
struct Sm90Frame {
  long long m = 0, n = 0, k = 0;
  long long lda = 0, ldb = 0, ldc = 0;  ///< elements: the pitch between rows of the operand as stored
  bool swapped = false;                 ///< A and B swap roles (gemm_sm90_swaps): a column-major C or swap_ab
  bool c_trans = false;                 ///< C is stored transposed (swap_ab): kernel (row, col) at col * ldc + row
  bool a_mn = false, b_mn = false;      ///< A M-contiguous / B N-contiguous (the config's layout)
  long long batch = 1;                  ///< matrices, each operand's stride_* elements apart
  long long stride_a = 0, stride_b = 0, stride_c = 0;
};

/// Checks that `problem` can run on `cfg` and maps it onto the kernel's frame. Any order of A, B and C,
/// any batch; the config's dtypes and layout (gemm_sm90_layout), and what TMA needs: A and B 16-byte
/// aligned with pitches (lda, ldb) and, for batches, strides (stride_a, stride_b) of multiples of 16 bytes.
/// @throws Error(Unsupported) for what this kernel cannot take (the caller falls back to the mma.sync
///         family), naming the reason; Error(InvalidArgument) for an invalid problem or config.
Sm90Frame gemm_sm90_frame(const Sm90GemmConfig& cfg, const GemmProblem& problem, DevicePtr a, DevicePtr b);

/// Whether the Hopper kernel beats the mma.sync family's untuned choice on a problem of this frame (shape
/// only; what it cannot take gemm_sm90_frame says): from half the SMs' 128 x 128 tiles on, and with full
/// 128-row tiles from a fifth of them. Measured on the H100 (f16 NT, K 4096, TFLOP/s Hopper vs mma.sync):
/// M 128 x N 4096 (32 tiles) 139 vs 100; M 16 / 64 x N 4096 17.7 / 70.4 vs 18.3 / 71.9; N 14336 (112
/// tiles) at M 16 / 64 / 128: 32 / 135 / 268 vs 28 / 118 / 203.
/// Work units count `cfg`'s tiles (128 x 128 for wider ones) times its K slices at the frame's depth: 16 x
/// 4096 on 128 x 32 tiles is 128 units (23.6 TFLOP/s against the mma.sync family's 18.3).
bool gemm_sm90_preferred(const Sm90GemmConfig& cfg, const Sm90Frame& frame, int sm_count);

/// Grid and block of a launch: x = cluster x units when not persistent, where units = cluster tiles x K
/// slices x matrices (a cluster tile is `cluster` vertically adjacent tiles; the slices gemm_sm90_k_splits
/// gives for depth `k`). Persistent: the waves w = ceil(units / (sm_count / cluster)), x = cluster x
/// ceil(units / w), so that every cluster runs the same number of units, or within one (a tail in K slices
/// keeps sm_count / cluster clusters). Block tpl::sm90_threads(cfg.arows): 384 threads, 256 for 64-row tiles.
LaunchShape gemm_sm90_launch_shape(const Sm90GemmConfig& cfg, long long m, long long n, long long k, int sm_count,
                                   long long batch = 1);

/// The K slices a launch of `cfg` at depth `k` computes: cfg.splits, fewer where slices of whole 64-deep
/// k-blocks run out (none is empty), 1 for an unsplit config, 0 for K = 0 (the reduction alone writes
/// beta * C).
int gemm_sm90_k_splits(const Sm90GemmConfig& cfg, long long k);
/// Bytes of f32 workspace a launch of `cfg` on `problem` needs (256-byte multiple; 0 when it does not
/// split K): one slice of every tile row per K slice and matrix; for reduce=fixup then 8 bytes of flag per
/// tile and matrix (256-byte aligned).
/// A tail config's (gemm_sm90_tail_plan) needs one slot of 128 x bn floats per tail tile, slice and cluster
/// rank, then 8 bytes of flag per tail tile and rank; it depends on `sm_count`, which it then needs (>= 1).
/// @throws Error(InvalidArgument) for a tail config without sm_count.
std::size_t gemm_sm90_workspace_bytes(const Sm90GemmConfig& cfg, const GemmProblem& problem, int sm_count = 0);
/// Rows of C one tile covers: 128, or 64 for a config with 64-row stages (arows=64: tiles of 64 rows, so M
/// may span several; the kernel then runs one consumer warpgroup, 256 threads: tpl::sm90_threads).
inline int gemm_sm90_tile_rows(const Sm90GemmConfig& cfg) { return cfg.arows == 64 ? 64 : tpl::kSm90Bm; }
/// Tile flags of a reduce=fixup launch on m x n (the kernel's frame) x batch: one per tile of every cluster
/// tile; they follow the partials in the workspace.
long long gemm_sm90_fixup_flags(const Sm90GemmConfig& cfg, long long m, long long n, long long batch);
/// Rows of one K slice in the workspace for `m` rows of C (the kernel's frame): every row a tile (of a
/// cluster) writes, so no slice runs into the next. Its pitch is gemm_splitk_workspace_ld(n).
inline long long gemm_sm90_slice_rows(const Sm90GemmConfig& cfg, long long m) {
  const long long rows = gemm_sm90_tile_rows(cfg);
  const long long tiles_m = (m + rows - 1) / rows;
  return (tiles_m + cfg.cluster - 1) / cfg.cluster * cfg.cluster * rows;
}

/// Rows of A a stage loads for `m` rows of C (the kernel's frame): the tile's 128, or where all of M fits in
/// fewer, M rounded up to 8 (K-major A, a box that high) or 64 (MN-major A, whole 64-wide boxes). The
/// zero fill of rows past M costs the copy engine about as much as loading them.
inline int gemm_sm90_a_rows(long long m, bool a_mn) {
  const long long unit = a_mn ? tpl::kSm90MnBox : 8;
  return static_cast<int>(std::min<long long>(tpl::kSm90Bm, std::max(1LL, (m + unit - 1) / unit) * unit));
}

/// Everything one launch passes: the two tensor maps, the scalar parameters, grid, block and shared memory.
/// Prepared once, launched any number of times (the maps are encoded on the host, no GPU work); a
/// reduce=fixup launch needs a fresh launch id each time (gemm_sm90_launch gives it one; callers that
/// launch through gemm_sm90_args call gemm_sm90_renew first).
struct Sm90GemmLaunch {
  tpl::Sm90TmaMap map_a{};
  tpl::Sm90TmaMap map_b{};
  tpl::Sm90TmaMap map_c{};  ///< encoded when params.c_tma is 1 (TMA-store epilogue), else zeros
  tpl::Sm90GemmParams params{};
  Dim3 grid, block;
  unsigned smem_bytes = 0;
  bool empty = false;  ///< m or n is 0: nothing to launch
  /// Split-K through the workspace (cfg.uses_workspace()): the GEMM writes f32 partials into the workspace, then the reduction kernel
  /// (gemm_splitk_reduce_name_expression(out)) runs with `reduce` on `reduce_grid` x `reduce_block`.
  /// With K = 0 only the reduction runs (`gemm` false).
  bool split = false;
  bool gemm = true;
  tpl::GemmSplitKParams reduce{};
  Dim3 reduce_grid, reduce_block;
};

/// Encodes the tensor maps (cuTensorMapEncodeTiled: 128-byte swizzle; a K-major operand in boxes of 64
/// along K x its tile rows, an MN-major one in boxes of 64 x 64; zero fill out of bounds) and the parameters of C = alpha * A * B + beta * C (C not read when beta
/// is 0). Needs a driver (the maps are encoded by libcuda, in `device`'s primary context), no kernel.
/// @throws as gemm_sm90_frame, and Error(Driver) when the driver rejects a tensor map.
/// A config that splits K needs `workspace`: gemm_sm90_workspace_bytes of device memory, 16-byte aligned,
/// that no other launch uses until this one's reduction is done (stream order).
/// @throws Error(InvalidArgument) when a split config gets no workspace or a misaligned one.
Sm90GemmLaunch gemm_sm90_prepare(const Sm90GemmConfig& cfg, const GemmProblem& problem, DevicePtr a, DevicePtr b,
                                 DevicePtr c, float alpha, float beta, int sm_count, int device = 0,
                                 DevicePtr workspace = 0);

/// The kernel's parameters of a prepared launch, in order (map_a, map_b, map_c, params), for callers that
/// launch it themselves (cuLaunchKernel's kernelParams); pointers into `launch`.
std::array<void*, 4> gemm_sm90_args(const Sm90GemmLaunch& launch);
/// Gives a prepared reduce=fixup launch a launch id no earlier launch in this process had (its tile flags
/// in the workspace then count afresh); nothing for other launches.
void gemm_sm90_renew(Sm90GemmLaunch& launch);
/// The same for the kernel's parameters alone (a copy of Sm90GemmLaunch::params).
void gemm_sm90_renew(tpl::Sm90GemmParams& params);

/// Launches a prepared GEMM on `stream` with `kernel` (compiled from gemm_sm90_compile_request(cfg) of
/// the same cfg), then for a split launch the reduction with `reduce` as a programmatic dependent launch
/// (Kernel::launch_dependent: its launch overlaps the GEMM's last blocks, it waits for the GEMM at
/// griddepcontrol.wait); raises the kernel's dynamic shared-memory limit first when `raise_smem` is set.
/// @throws Error(InvalidArgument) when a split launch gets no reduction kernel.
void gemm_sm90_launch(const Kernel& kernel, const Sm90GemmLaunch& launch, CUstream stream, bool raise_smem = true,
                      const Kernel* reduce = nullptr);

}  // namespace swz
