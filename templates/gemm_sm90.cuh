// templates: the sm_90a (Hopper) f16/bf16 GEMM (A and B each K- or MN-major, all four layouts without a
// staging copy): TMA tile loads with the 128-byte swizzle into a ring of
// shared-memory stages guarded by full/empty mbarriers, one producer warpgroup (one thread issues TMA)
// and two consumer warpgroups running wgmma.mma_async from shared-memory descriptors (64 rows of a
// 128 x BN tile each, or one for a 64 x BN tile; f32 accumulators), a registers -> global alpha/beta epilogue or a TMA-store one, a
// static tile scheduler with grouped rasterization (persistent when the grid is smaller than the tile
// count), and split-K over work units of (tile, K slice) for shapes with fewer tiles than SMs.
// Host code (generator/families/gemm_sm90/) includes it for the parameter struct and the sizes.
#pragma once

#include "common.cuh"
#include "gemm_common.cuh"

namespace swz {
namespace tpl {

constexpr int kSm90Bm = 128;          // block tile rows: two consumer warpgroups x 64
constexpr int kSm90Bk = 64;           // k-tile: 64 x 2 bytes = one 128-byte swizzle row
constexpr int kSm90Threads = 384;     // producer warpgroup + two consumer warpgroups (the most a kernel has)
// setmaxnreg budgets: 128 x 40 + 256 x 232 <= 65536 registers of the SM.
constexpr int kSm90ProducerRegs = 40;
constexpr int kSm90ConsumerRegs = 232;
constexpr int kSm90SmemAlign = 1024;  // the 128-byte swizzle pattern repeats every 8 rows = 1024 bytes
constexpr int kSm90MaxSmem = 232448;  // sm_90 opt-in limit per block (227 KiB)

/// A CUtensorMap as the kernel sees it: 128 opaque bytes, passed by value as a __grid_constant__.
struct alignas(64) Sm90TmaMap {
  unsigned long long bits[16];
};

/// The non-TMA kernel arguments, in the kernel's frame: C (m x n, row-major, pitch ldc elements) =
/// alpha * A * B + beta * C; A and B come in through their tensor maps (each K- or MN-major).
struct Sm90GemmParams {
  void* c;
  int m, n, k;
  // Rows of cluster tiles (ceil(m / tile rows / CLUSTER)) and columns of tiles (ceil(n / BN)). The host divides:
  // read from the parameter space at each use, the row count needs no register across the persistent loop
  // (computed in the kernel, ptxas spilled it in TN/TT pairs of 256-wide tiles with the tail, 168 registers).
  int tiles_mc, tiles_n;
  int c_pairs;           // 1 when C, ldc and stride_c allow two-element stores (pointer, pitch and stride aligned)
  int c_tma;             // 1: the TMA-store epilogue may run (its kernels only): C's map is valid and beta is 0
  long long ldc;
  float alpha, beta;
  // Split-K: the work units are tiles x `splits` K slices of `kb_per_split` k-blocks each (the last may be
  // shorter, none is empty). Slice s of a tile writes its f32 partials (alpha 1, beta 0: the host passes
  // them) into rows s * slice_rows.. of C, here the f32 workspace that the reduction
  // (templates/gemm_splitk.cuh) sums; slice_rows covers every tile row, so no slice writes into the next.
  // splits = 1: one slice of all k-blocks, slice_rows unused.
  int splits;
  int kb_per_split;
  int slice_rows;
  // Batches: `batch` matrices, A and B the third dimension of their tensor maps; C's at stride_c elements
  // apart (unsplit), or (split) the workspace's slices, batch b's slice s at row (b * splits + s) * slice_rows.
  int batch;
  long long stride_c;
  // Split-K summed in the kernel (FIXUP; p.splits > 1): C above is the output itself. Slice s of a tile
  // writes its f32 partials into `ws` (rows (b * splits + s) * slice_rows.., pitch ldw), then counts itself
  // in the tile's flag; the slice that counts last reads the others' partials, sums all in slice order and
  // stores C. A flag holds (launch_id << 8) | slices counted: a value of another launch id is stale (the
  // first slice of this launch starts it over), so the flags need no clearing between launches, as long
  // as every launch gets a fresh id (below 2^56).
  float* ws;
  long long ldw;
  unsigned long long* flags;
  unsigned long long launch_id;
  // Rows of A one stage loads: the tile's 128, or, when all of M fits in fewer (one tile row), M rounded up
  // to 8 (K-major; its map's box is that high) or to 64 (MN-major: whole boxes). TMA zero-fills rows past M
  // at about the cost of loading them, so at M = 16 the 128-row box spent most of the copy engine on zeros.
  // The rows it leaves unloaded (stale or uninitialized shared memory) only ever reach accumulator rows
  // past M, which nothing stores. (Skipping the wgmma of a warpgroup with no loaded row would be a branch
  // around wgmma, which ptxas answers by serializing every wgmma of the kernel.)
  int a_rows;
  // The tail (FIXUP 2): the first `dp_tiles` units are whole tiles (flattened: matrix * tiles + cluster
  // tile), computed as usual; the tiles after them, the last partial wave, run in `splits` (2 or 4) K slices
  // of `kb_per_split` k-blocks each, unit dp_tiles + s * tail + q being slice s of tail tile q. A slice
  // writes its accumulators (each thread's in its own order, coalesced) into its slot of `ws`
  // ((q * splits + s) * CLUSTER + rank, 128 x BN floats), counts itself in the tail tile's flag
  // (q * CLUSTER + rank, as FIXUP 1), and the slice that counts last sums all slots as a pairwise tree
  // ((s0 + s1) + (s2 + s3), the same sum whichever slice counts last) and stores C from registers.
  // dp_tiles = all tiles: no tail, no workspace.
  int dp_tiles;
};

/// A stage holds `a_rows` rows of A (the tile's 128, or for one short tile row of M <= a_rows, 64, 32 or 16:
/// A_ROWS, a "short A stage") and bn rows of B, 128 bytes each.
SWZ_HD constexpr int sm90_a_stage_bytes(int a_rows = kSm90Bm) { return a_rows * kSm90Bk * 2; }
SWZ_HD constexpr int sm90_b_stage_bytes(int bn) { return bn * kSm90Bk * 2; }
SWZ_HD constexpr int sm90_stage_bytes(int bn, int a_rows = kSm90Bm) {
  return sm90_a_stage_bytes(a_rows) + sm90_b_stage_bytes(bn);
}
/// Consumer warpgroups of a kernel whose stages hold `a_rows` rows of A: one for tiles of 64 rows (a_rows 64),
/// two (64 rows each) for tiles of 128 rows. Its threads: those and the producer warpgroup.
SWZ_HD constexpr int sm90_consumers(int a_rows = kSm90Bm) { return a_rows == 64 ? 1 : 2; }
SWZ_HD constexpr int sm90_threads(int a_rows = kSm90Bm) { return 128 * (1 + sm90_consumers(a_rows)); }
/// The ring of `stages` stages and, after a ring of short A stages of a 128-row tile (a_rows 32 or 16),
/// slack: both consumers' wgmma read 64 rows of A each from a stage's start (a branch around wgmma would
/// serialize them all), so past a short A stage they read the next bytes. Those rows of A reach only
/// accumulator rows past M, which nothing stores; the slack keeps the last stage's reads inside the window.
SWZ_HD constexpr int sm90_ring_bytes(int bn, int stages, int a_rows = kSm90Bm) {
  return stages * sm90_stage_bytes(bn, a_rows) +
         (sm90_stage_bytes(bn, a_rows) < sm90_a_stage_bytes(64 * sm90_consumers(a_rows))
              ? sm90_a_stage_bytes(64 * sm90_consumers(a_rows)) - sm90_stage_bytes(bn, a_rows)
              : 0);
}
/// The TMA-store epilogue's C buffers: each consumer warpgroup stages 64 rows x one swizzle row of C at a time
/// (a chunk: 64 f16/bf16 or 32 f32 columns with the 128-byte swizzle, 8 KiB; 32 or 16 16-bit columns with the
/// 64- or 32-byte one, 4 or 2 KiB: sm90_c_chunk_bytes), double-buffered so it fills one while the copy engine
/// still reads the other. A chunk of 128-byte rows:
constexpr int kSm90CChunkBytes = 64 * 128;
/// Dynamic shared memory: the ring (sm90_ring_bytes), the C buffers of the TMA-store epilogue (`c_buffer_bytes`:
/// sm90_c_buffer_bytes, or 0 without it), one full and one empty barrier per stage, a word for the split-K
/// fixup's verdict (`fixup`), and the slack that lets the kernel align the stages to 1024 bytes whatever the
/// base of its dynamic window.
SWZ_HD constexpr int sm90_smem_bytes(int bn, int stages, int c_buffer_bytes = 0, bool fixup = false,
                                     int a_rows = kSm90Bm) {
  return kSm90SmemAlign + sm90_ring_bytes(bn, stages, a_rows) + c_buffer_bytes + stages * 16 + (fixup ? 16 : 0);
}

/// Shared-memory matrix descriptor of a K-major operand stored with the 128-byte swizzle: rows of
/// 128 bytes, 8-row groups 1024 bytes apart (stride byte offset), leading byte offset unused (1).
/// Stepping 16 elements along K adds 32 bytes to the start address inside the swizzle atom.
/// Host-callable, so the static analysis decodes the very descriptors the kernel issues.
SWZ_HD constexpr unsigned long long sm90_desc(unsigned addr) {
  return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

/// Bytes of one TMA box of an MN-major operand: 64 elements (128 bytes, one swizzle row) along M or N by
/// the k-tile's 64 rows along K. A tile's M or N extent is several such boxes, one after the other.
constexpr int kSm90MnBox = 64;
constexpr int kSm90MnBoxBytes = kSm90MnBox * kSm90Bk * 2;

// --- the layout the kernel, the tensor maps (gemm_sm90_launch.cpp) and the layout proof
// (gemm_sm90_analysis.cpp) share: one definition, so the proof checks what the kernel does ------------

/// The swizzle of every tensor map (A, B and C): 128-byte rows (CU_TENSOR_MAP_SWIZZLE_128B).
constexpr int kSm90SwizzleBytes = 128;
/// Rows of the block tile per consumer warpgroup (wgmma's M).
constexpr int kSm90ConsumerRows = 64;
/// Rows of B each CTA of a cluster of `cluster` loads (and multicasts).
SWZ_HD constexpr int sm90_b_part(int bn, int cluster) { return bn / cluster; }
/// An operand's TMA box {inner, outer}: K-major, 64 along K x `rows` (M or N rows); MN-major, kSm90MnBox
/// along M/N x the k-tile's 64 along K (a tile of `rows` is rows / kSm90MnBox such boxes).
SWZ_HD constexpr int sm90_box_inner(bool mn_major) { return mn_major ? kSm90MnBox : kSm90Bk; }
SWZ_HD constexpr int sm90_box_outer(bool mn_major, int rows) { return mn_major ? kSm90Bk : rows; }
/// Offsets in the stage ring from the aligned base: stage `s`, A at its start, B after A's `a_rows` rows.
SWZ_HD constexpr unsigned sm90_stage_offset(int bn, int s, int a_rows = kSm90Bm) {
  return static_cast<unsigned>(s * sm90_stage_bytes(bn, a_rows));
}
SWZ_HD constexpr unsigned sm90_b_offset(int a_rows = kSm90Bm) { return static_cast<unsigned>(sm90_a_stage_bytes(a_rows)); }
/// Where in B's stage CTA `rank` of a cluster puts its part (rows of 128 bytes in either layout).
SWZ_HD constexpr unsigned sm90_b_rank_offset(int bn, int cluster, unsigned rank, int a_rows = kSm90Bm) {
  return sm90_b_offset(a_rows) + rank * static_cast<unsigned>(sm90_b_part(bn, cluster)) * 128u;
}
/// Box `h` of an MN-major tile: kSm90MnBox elements along M/N further.
SWZ_HD constexpr unsigned sm90_mn_box_offset(int h) { return static_cast<unsigned>(h * kSm90MnBoxBytes); }
/// Where consumer warpgroup `consumer` reads its 64 rows of A: 64 rows of 128 bytes (K-major) or its own
/// box (MN-major) -- the same offset.
SWZ_HD constexpr unsigned sm90_a_consumer_offset(int consumer) {
  return static_cast<unsigned>(consumer * kSm90ConsumerRows * 128);
}
/// The k16 step `k` (0..3) inside a k-tile: K-major operands step 32 bytes inside the swizzle row,
/// MN-major ones 16 rows of 128 bytes.
SWZ_HD constexpr unsigned sm90_kstep_offset(int k, bool mn_major) {
  return (mn_major ? 2048u : 32u) * static_cast<unsigned>(k);
}

/// The swizzle of the TMA-store epilogue's C map and chunk buffers for a tile `bn` wide of C elements of
/// `out_bytes`: the widest of 128, 64 and 32 bytes whose rows the tile's row holds a whole number of (bn 192
/// of 16-bit C: 128, three chunks of 64 columns; bn 96: 64, three of 32; bn 112: 32, seven of 16). f32 C only
/// 128 (chunks of 32 columns): its st.shared.v2.f32 pairs are 2-way conflicted at 128 bytes as at 64, and
/// narrower f32 chunks were never measured. 0: none.
SWZ_HD constexpr int sm90_c_swizzle_bytes(int bn, int out_bytes) {
  return bn * out_bytes % 128 == 0                    ? 128
         : out_bytes != 2                            ? 0
         : bn * out_bytes % 64 == 0                  ? 64
         : bn * out_bytes % 32 == 0                  ? 32
                                                      : 0;
}
/// The TMA-store epilogue's C map box {inner, outer}: one swizzle row of C elements of `out_bytes` (a chunk:
/// 64 16-bit or 32 f32 columns with the 128-byte swizzle, half that with 64, a quarter with 32) x a consumer's
/// 64 rows.
SWZ_HD constexpr int sm90_c_box_inner(int out_bytes, int swizzle_bytes = kSm90SwizzleBytes) {
  return swizzle_bytes / out_bytes;
}
constexpr int kSm90CBoxOuter = kSm90ConsumerRows;
/// Bytes of one chunk buffer for tiles `bn` wide of C elements of `out_bytes`: a consumer's 64 rows of one
/// swizzle row (8, 4 or 2 KiB). A width of no whole chunks (f32 C at 176: never with the TMA epilogue, whose
/// kernels assert it) counts 128-byte rows.
SWZ_HD constexpr int sm90_c_chunk_bytes(int bn, int out_bytes) {
  return kSm90CBoxOuter * (sm90_c_swizzle_bytes(bn, out_bytes) != 0 ? sm90_c_swizzle_bytes(bn, out_bytes) : kSm90SwizzleBytes);
}
/// All the C buffers (sm90_smem_bytes' `c_buffer_bytes` with the TMA epilogue): 2 consumers x 2 chunk buffers.
SWZ_HD constexpr int sm90_c_buffer_bytes(int bn, int out_bytes) { return 2 * 2 * sm90_c_chunk_bytes(bn, out_bytes); }
/// Offset from the C buffers' start of consumer `consumer`'s two buffers, and of the one of them its chunk
/// number `seq` fills (they are used alternately), for chunk buffers of `chunk_bytes` (sm90_c_chunk_bytes; a
/// multiple of 2 KiB, so each buffer keeps the 1024-byte alignment of the C buffers' start, more than the 256
/// and 512 bytes the 32- and 64-byte swizzles repeat over).
SWZ_HD constexpr unsigned sm90_c_consumer_offset(int consumer, int chunk_bytes) {
  return static_cast<unsigned>(consumer * 2 * chunk_bytes);
}
SWZ_HD constexpr unsigned sm90_c_seq_offset(int seq, int chunk_bytes) {
  return static_cast<unsigned>(seq & 1) * static_cast<unsigned>(chunk_bytes);
}
SWZ_HD constexpr unsigned sm90_c_buffer_offset(int consumer, int seq, int chunk_bytes) {
  return sm90_c_consumer_offset(consumer, chunk_bytes) + sm90_c_seq_offset(seq, chunk_bytes);
}
/// Address in the chunk buffer at `buf` of byte `byte` of row `r`, where the C map's box of rows of
/// `swizzle_bytes` (128, 64 or 32) reads it: the box's rows follow each other, and the swizzle XORs the
/// address's 16-byte unit bits (4.. 4 + log2(swizzle / 16)) with its bits 7.. (the 128-byte line): with 128,
/// row r's unit u at u ^ (r % 8); with 64, u ^ (r / 2 % 4); with 32, u ^ (r / 4 % 2). 1024-, 512- and
/// 256-byte periods: the buffers are 1024-aligned.
SWZ_HD constexpr unsigned sm90_c_address(unsigned buf, int r, int byte, int swizzle_bytes = kSm90SwizzleBytes) {
  return buf + r * swizzle_bytes +
         ((((byte >> 4) ^ ((r * swizzle_bytes / 128) & (swizzle_bytes / 16 - 1))) << 4) | (byte & 15));
}
/// The epilogue's accumulator rows of lane `lane` of warp `warp` of a consumer warpgroup: r0 and r0 + 8
/// (m64nNk16).
SWZ_HD constexpr int sm90_c_row(int warp, int lane, int h) { return warp * 16 + lane / 4 + 8 * h; }
/// Byte, in its chunk's row, of the element pair lane `lane` stores for column group `jj` of the chunk.
SWZ_HD constexpr int sm90_c_byte(int lane, int jj, int out_bytes) { return (jj * 8 + 2 * (lane % 4)) * out_bytes; }
/// stmatrix.x4 number `jp` of a chunk of 16-bit C (its column groups 2 jp and 2 jp + 1): lane `lane` addresses
/// row l % 8 of matrix l / 8; matrices 0 and 1 are the warp's rows 0-7 and 8-15 of the first group, 2 and 3 of
/// the second (the order of the registers each thread gives: its accumulator fragment's). The lane's row
/// among the warpgroup's 64, and the byte in the chunk's row where its matrix row's 8 elements (16 bytes) go.
SWZ_HD constexpr int sm90_c_stmatrix_row(int warp, int lane) { return warp * 16 + lane % 8 + 8 * ((lane / 8) % 2); }
SWZ_HD constexpr int sm90_c_stmatrix_byte(int lane, int jp) { return (2 * jp + lane / 16) * 16; }

/// Shared-memory matrix descriptor of an MN-major operand (M- or N-contiguous, used with wgmma's transpose
/// immediate) stored with the 128-byte swizzle as TMA boxes of kSm90MnBox elements along M/N x 64 rows
/// along K: each K row is 128 bytes (64 elements of M/N), groups of 8 K rows are 1024 bytes apart (stride
/// byte offset), and the next 64 elements along M/N are `lbo` bytes further (leading byte offset: the next
/// box, kSm90MnBoxBytes). Stepping 16 elements along K adds 16 rows = 2048 bytes to the start address.
/// Host-callable like sm90_desc.
SWZ_HD constexpr unsigned long long sm90_desc_mn(unsigned addr, unsigned lbo) {
  return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) |
         (static_cast<unsigned long long>((lbo & 0x3FFFFu) >> 4) << 16) | (64ull << 32) | (1ull << 62);
}
/// The k16 step `k` (0..3) of a k-tile at `addr`: K-major operands step 32 bytes inside the swizzle row,
/// MN-major ones 16 rows of 128 bytes. The step is added to the descriptor of step 0 (its start address
/// field holds addr / 16): shared-memory addresses and the steps stay below 2^18, so the field never
/// carries into the next and the sum is the descriptor of addr + step. The kernel then builds one
/// descriptor an operand a k-tile and adds constants, all in uniform registers.
SWZ_HD constexpr unsigned long long sm90_operand_desc(unsigned addr, int k, bool mn_major) {
  return (mn_major ? sm90_desc_mn(addr, kSm90MnBoxBytes) : sm90_desc(addr)) + (sm90_kstep_offset(k, mn_major) >> 4);
}

#if SWZ_DEVICE_CODE

// --- mbarriers -------------------------------------------------------------------------------------

__device__ __forceinline__ void sm90_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void sm90_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sm90_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// Waits until the phase of `bar` with parity `parity` has completed. A wait that never ends (a broken
/// pipeline) traps after about 2^26 polls instead of hanging the GPU: the host then sees a launch failure.
__device__ __forceinline__ void sm90_mbar_wait(unsigned bar, unsigned parity) {
  for (unsigned spins = 0;; ++spins) {
    unsigned done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (spins == (1u << 26)) asm volatile("trap;\n");
  }
}

/// Arrives on the barrier at the same shared-memory offset as `bar` in the cluster's CTA `rank`. Release
/// at CTA scope (the default): what it orders, this CTA's wgmma reads of a stage, is complete already;
/// a cluster-scope release would also wait for the epilogue's global stores (it ran 2-4x slower).
__device__ __forceinline__ void sm90_mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile("{\n .reg .b32 r;\n mapa.shared::cluster.u32 r, %0, %1;\n"
               " mbarrier.arrive.shared::cluster.b64 _, [r];\n}\n" ::"r"(bar), "r"(rank)
               : "memory");
}

// --- clusters --------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned sm90_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
/// Every thread of every CTA of the cluster (also a block-wide barrier). Not .aligned: it follows
/// branches taken by single threads (barrier initialization, the producer thread).
__device__ __forceinline__ void sm90_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
/// The cluster barrier without the release: it orders execution, not this thread's memory operations. Its
/// release compiles to a GPU-wide MEMBAR, which waits for every global store in flight.
__device__ __forceinline__ void sm90_cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
/// Every thread of the CTA, from divergent code too (barrier 0 without .aligned: the producer's thread 0 and
/// the rest of its warp reach it from different branches).
__device__ __forceinline__ void sm90_cta_sync_all() { asm volatile("barrier.sync 0;\n" ::: "memory"); }

/// Stores four floats at the shared-memory offset `addr` of the cluster's CTA `rank` (distributed shared
/// memory).
__device__ __forceinline__ void sm90_st_cluster_v4(unsigned addr, unsigned rank, float a, float b, float c, float d) {
  asm volatile("{\n .reg .b32 r;\n mapa.shared::cluster.u32 r, %0, %1;\n"
               " st.shared::cluster.v4.f32 [r], {%2, %3, %4, %5};\n}\n" ::"r"(addr), "r"(rank), "f"(a), "f"(b),
               "f"(c), "f"(d)
               : "memory");
}
__device__ __forceinline__ float4 sm90_ld_shared_v4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}

// --- TMA, registers, wgmma -------------------------------------------------------------------------

/// One box of a 2-D `map` at (inner c0, outer c1) into shared memory at `dst`, completing on `bar` (the
/// layout probes' maps; the GEMM's are 3-D, below).
__device__ __forceinline__ void sm90_tma_load_2d(unsigned dst, const Sm90TmaMap* map, int c0, int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The GEMM's tensor maps are 3-D: {inner, outer, matrix of the batch}; a box is one matrix deep.
/// One box of `map` at (inner c0, outer c1, matrix c2) into shared memory at `dst`, completing on `bar`.
/// Elements outside the tensor are filled with zeros (and still count towards the transaction bytes).
__device__ __forceinline__ void sm90_tma_load(unsigned dst, const Sm90TmaMap* map, int c0, int c1, int c2,
                                              unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
/// The same box written to the same offset `dst` of every CTA in `mask` (cluster ranks), each completing
/// on its own barrier at offset `bar`.
__device__ __forceinline__ void sm90_tma_load_multicast(unsigned dst, const Sm90TmaMap* map, int c0, int c1, int c2,
                                                        unsigned bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}
/// One box from shared memory at `src` to `map` at (inner c0, outer c1, matrix c2), in this thread's bulk
/// group; the parts of the box outside the tensor are not written.
__device__ __forceinline__ void sm90_tma_store(const Sm90TmaMap* map, unsigned src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
__device__ __forceinline__ void sm90_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until at most N of this thread's bulk groups still read their shared memory.
template <int N> __device__ __forceinline__ void sm90_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/// Waits until all of this thread's bulk groups are complete (their global writes done).
__device__ __forceinline__ void sm90_bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
/// The 128 threads of one warpgroup (named barrier `id`, 1.. : 0 is __syncthreads').
__device__ __forceinline__ void sm90_warpgroup_sync(int id) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

__device__ __forceinline__ void sm90_prefetch_map(const Sm90TmaMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

template <int N> __device__ __forceinline__ void sm90_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void sm90_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

__device__ __forceinline__ void sm90_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void sm90_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void sm90_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/// Pins the accumulators at this point of the program: the compiler may not move their reads or
/// writes across it (wgmma writes them asynchronously, behind the compiler's back).
template <int N> __device__ __forceinline__ void sm90_fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}


// The accumulators as asm operands: SWZ_SM90_OUTn() lists d[0..n-1] ("+f"), SWZ_SM90_Rn their numbers, for
// n = BN / 2 = 16, 24, .., 128. Function-like, so that passing one through a macro argument does not expand
// its commas early.
#define SWZ_SM90_F8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define SWZ_SM90_OUT16() SWZ_SM90_F8(0), SWZ_SM90_F8(8)
#define SWZ_SM90_OUT24() SWZ_SM90_OUT16(), SWZ_SM90_F8(16)
#define SWZ_SM90_OUT32() SWZ_SM90_OUT24(), SWZ_SM90_F8(24)
#define SWZ_SM90_OUT40() SWZ_SM90_OUT32(), SWZ_SM90_F8(32)
#define SWZ_SM90_OUT48() SWZ_SM90_OUT40(), SWZ_SM90_F8(40)
#define SWZ_SM90_OUT56() SWZ_SM90_OUT48(), SWZ_SM90_F8(48)
#define SWZ_SM90_OUT64() SWZ_SM90_OUT56(), SWZ_SM90_F8(56)
#define SWZ_SM90_OUT72() SWZ_SM90_OUT64(), SWZ_SM90_F8(64)
#define SWZ_SM90_OUT80() SWZ_SM90_OUT72(), SWZ_SM90_F8(72)
#define SWZ_SM90_OUT88() SWZ_SM90_OUT80(), SWZ_SM90_F8(80)
#define SWZ_SM90_OUT96() SWZ_SM90_OUT88(), SWZ_SM90_F8(88)
#define SWZ_SM90_OUT104() SWZ_SM90_OUT96(), SWZ_SM90_F8(96)
#define SWZ_SM90_OUT112() SWZ_SM90_OUT104(), SWZ_SM90_F8(104)
#define SWZ_SM90_OUT120() SWZ_SM90_OUT112(), SWZ_SM90_F8(112)
#define SWZ_SM90_OUT128() SWZ_SM90_OUT120(), SWZ_SM90_F8(120)
#define SWZ_SM90_R16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define SWZ_SM90_R24 SWZ_SM90_R16 ", %16, %17, %18, %19, %20, %21, %22, %23"
#define SWZ_SM90_R32 SWZ_SM90_R24 ", %24, %25, %26, %27, %28, %29, %30, %31"
#define SWZ_SM90_R40 SWZ_SM90_R32 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define SWZ_SM90_R48 SWZ_SM90_R40 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define SWZ_SM90_R56 SWZ_SM90_R48 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define SWZ_SM90_R64 SWZ_SM90_R56 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define SWZ_SM90_R72 SWZ_SM90_R64 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define SWZ_SM90_R80 SWZ_SM90_R72 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define SWZ_SM90_R88 SWZ_SM90_R80 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define SWZ_SM90_R96 SWZ_SM90_R88 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define SWZ_SM90_R104 SWZ_SM90_R96 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define SWZ_SM90_R112 SWZ_SM90_R104 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define SWZ_SM90_R120 SWZ_SM90_R112 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define SWZ_SM90_R128 SWZ_SM90_R120 ", %120, %121, %122, %123, %124, %125, %126, %127"
// d (+)= A(64 x 16) * B(16 x BN) for one warpgroup, both operands from shared memory; scale_d = 0
// overwrites d instead of accumulating. P0..P4: the operand numbers after the BN / 2 accumulators (the two
// descriptors, scale_d, the transpose immediates TA / TB: 1 for an MN-major A / B, 16-bit inputs only).
template <int IN_KIND, int BN, int TA, int TB> struct Sm90Wgmma;
#define SWZ_SM90_WGMMA(KIND, T, BN_, REGS, OUTS, P0, P1, P2, P3, P4)                                              \
  template <int TA, int TB> struct Sm90Wgmma<KIND, BN_, TA, TB> {                                                \
    static __device__ __forceinline__ void run(float (&d)[BN_ / 2], unsigned long long da, unsigned long long db, \
                                               int scale_d) {                                                   \
      asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" P2 ", 0;\n"                                          \
                   "wgmma.mma_async.sync.aligned.m64n" #BN_ "k16.f32." T "." T " {" REGS "}, %" P0 ", %" P1       \
                   ", p, 1, 1, %" P3 ", %" P4 ";\n}\n"                                                           \
                   : OUTS()                                                                                     \
                   : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)                                           \
                   : "memory");                                                                                 \
    }                                                                                                           \
  };
#define SWZ_SM90_WGMMA_BOTH(BN_, REGS, OUTS, P0, P1, P2, P3, P4)           \
  SWZ_SM90_WGMMA(kGemmF16, "f16", BN_, REGS, OUTS, P0, P1, P2, P3, P4) \
  SWZ_SM90_WGMMA(kGemmBF16, "bf16", BN_, REGS, OUTS, P0, P1, P2, P3, P4)
SWZ_SM90_WGMMA_BOTH(32, SWZ_SM90_R16, SWZ_SM90_OUT16, "16", "17", "18", "19", "20")
SWZ_SM90_WGMMA_BOTH(48, SWZ_SM90_R24, SWZ_SM90_OUT24, "24", "25", "26", "27", "28")
SWZ_SM90_WGMMA_BOTH(64, SWZ_SM90_R32, SWZ_SM90_OUT32, "32", "33", "34", "35", "36")
SWZ_SM90_WGMMA_BOTH(80, SWZ_SM90_R40, SWZ_SM90_OUT40, "40", "41", "42", "43", "44")
SWZ_SM90_WGMMA_BOTH(96, SWZ_SM90_R48, SWZ_SM90_OUT48, "48", "49", "50", "51", "52")
SWZ_SM90_WGMMA_BOTH(112, SWZ_SM90_R56, SWZ_SM90_OUT56, "56", "57", "58", "59", "60")
SWZ_SM90_WGMMA_BOTH(128, SWZ_SM90_R64, SWZ_SM90_OUT64, "64", "65", "66", "67", "68")
SWZ_SM90_WGMMA_BOTH(144, SWZ_SM90_R72, SWZ_SM90_OUT72, "72", "73", "74", "75", "76")
SWZ_SM90_WGMMA_BOTH(160, SWZ_SM90_R80, SWZ_SM90_OUT80, "80", "81", "82", "83", "84")
SWZ_SM90_WGMMA_BOTH(176, SWZ_SM90_R88, SWZ_SM90_OUT88, "88", "89", "90", "91", "92")
SWZ_SM90_WGMMA_BOTH(192, SWZ_SM90_R96, SWZ_SM90_OUT96, "96", "97", "98", "99", "100")
SWZ_SM90_WGMMA_BOTH(208, SWZ_SM90_R104, SWZ_SM90_OUT104, "104", "105", "106", "107", "108")
SWZ_SM90_WGMMA_BOTH(224, SWZ_SM90_R112, SWZ_SM90_OUT112, "112", "113", "114", "115", "116")
SWZ_SM90_WGMMA_BOTH(240, SWZ_SM90_R120, SWZ_SM90_OUT120, "120", "121", "122", "123", "124")
SWZ_SM90_WGMMA_BOTH(256, SWZ_SM90_R128, SWZ_SM90_OUT128, "128", "129", "130", "131", "132")
#undef SWZ_SM90_WGMMA_BOTH
#undef SWZ_SM90_WGMMA
#undef SWZ_SM90_R16
#undef SWZ_SM90_R24
#undef SWZ_SM90_R32
#undef SWZ_SM90_R40
#undef SWZ_SM90_R48
#undef SWZ_SM90_R56
#undef SWZ_SM90_R64
#undef SWZ_SM90_R72
#undef SWZ_SM90_R80
#undef SWZ_SM90_R88
#undef SWZ_SM90_R96
#undef SWZ_SM90_R104
#undef SWZ_SM90_R112
#undef SWZ_SM90_R120
#undef SWZ_SM90_R128
#undef SWZ_SM90_OUT16
#undef SWZ_SM90_OUT24
#undef SWZ_SM90_OUT32
#undef SWZ_SM90_OUT40
#undef SWZ_SM90_OUT48
#undef SWZ_SM90_OUT56
#undef SWZ_SM90_OUT64
#undef SWZ_SM90_OUT72
#undef SWZ_SM90_OUT80
#undef SWZ_SM90_OUT88
#undef SWZ_SM90_OUT96
#undef SWZ_SM90_OUT104
#undef SWZ_SM90_OUT112
#undef SWZ_SM90_OUT120
#undef SWZ_SM90_OUT128
#undef SWZ_SM90_F8

// --- epilogue --------------------------------------------------------------------------------------

/// C[row][col], C[row][col + 1] = alpha * (v0, v1) + beta * C (C read only when beta != 0), each
/// element predicated on the matrix bounds; one paired store where the row's alignment allows it.
/// `c_base`: elements from p.c to the unit's matrix (unsplit: its batch's C) or K slice of the workspace.
/// C_TRANS (Sm90GemmConfig::swap_ab): the kernel's element (row, col) goes to C at col * ldc + row, so the
/// kernel computes C^T = B^T A^T with the operands' roles swapped, and a tile's 128 rows run along the caller's
/// N. Every store then goes through here (never the TMA-store epilogue), element by element. A template
/// parameter, not a run-time flag: the transposed stores beside the others made every kernel 1.7x the code
/// (the default at 4096^3: 5856 SASS instructions against 3488) and doubled ptxas's time (703 against 369 ms).
template <int OUT_KIND, int C_TRANS = 0>
__device__ __forceinline__ void sm90_store_pair(const Sm90GemmParams& p, int row, int col, float v0, float v1,
                                                long long c_base) {
  typedef typename GemmElem<OUT_KIND>::type T;
  if (row >= p.m || col >= p.n) return;
  const bool both = col + 1 < p.n;
  v0 *= p.alpha;
  v1 *= p.alpha;
  if (C_TRANS) {
    // The pair is two rows of C, ldc apart; the eight lanes of a quad row write 8 adjacent elements.
    T* c = static_cast<T*>(p.c) + c_base + static_cast<long long>(col) * p.ldc + row;
    if (p.beta != 0.0f) {
      v0 += p.beta * gemm_to_f32<OUT_KIND>(c[0]);
      if (both) v1 += p.beta * gemm_to_f32<OUT_KIND>(c[p.ldc]);
    }
    c[0] = gemm_from_f32<OUT_KIND>(v0);
    if (both) c[p.ldc] = gemm_from_f32<OUT_KIND>(v1);
    return;
  }
  T* c = static_cast<T*>(p.c) + c_base + static_cast<long long>(row) * p.ldc + col;
  if (p.beta != 0.0f) {
    v0 += p.beta * gemm_to_f32<OUT_KIND>(c[0]);
    if (both) v1 += p.beta * gemm_to_f32<OUT_KIND>(c[1]);
  }
  if (both && p.c_pairs) {
    if (OUT_KIND == kGemmF32) {
      asm volatile("st.global.v2.f32 [%0], {%1, %2};\n" ::"l"(c), "f"(v0), "f"(v1) : "memory");
    } else {
      const unsigned lo = static_cast<unsigned short>(gemm_from_f32<OUT_KIND>(v0));
      const unsigned hi = static_cast<unsigned short>(gemm_from_f32<OUT_KIND>(v1));
      *reinterpret_cast<unsigned*>(c) = lo | (hi << 16);
    }
  } else {
    c[0] = gemm_from_f32<OUT_KIND>(v0);
    if (both) c[1] = gemm_from_f32<OUT_KIND>(v1);
  }
}

/// Two floats as one register of 16-bit C elements, `lo` in the low half: one cvt for both.
template <int OUT_KIND> __device__ __forceinline__ unsigned sm90_pack2(float lo, float hi) {
  unsigned r;
  if (OUT_KIND == kGemmF16) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

/// A consumer thread's accumulators (rows `row` and `row` + 8, columns `col` + 8j and + 1) stored as pairs when the
/// tile's columns are all inside C, beta is 0 and C takes pairs (sm90_store_pair's common case): no test a pair,
/// one address a row, the pairs at constant offsets from it. The same values and the same rounding as sm90_store_pair.
template <int OUT_KIND, int BN>
__device__ __forceinline__ void sm90_store_rows(const Sm90GemmParams& p, int row, int col, const float (&d)[BN / 2],
                                                long long c_base) {
  typedef typename GemmElem<OUT_KIND>::type T;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (row + 8 * h >= p.m) return;
    T* c = static_cast<T*>(p.c) + c_base + static_cast<long long>(row + 8 * h) * p.ldc + col;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const float v0 = d[4 * j + 2 * h] * p.alpha, v1 = d[4 * j + 2 * h + 1] * p.alpha;
      if (OUT_KIND == kGemmF32) {
        asm volatile("st.global.v2.f32 [%0], {%1, %2};\n" ::"l"(c + 8 * j), "f"(v0), "f"(v1) : "memory");
      } else {
        *reinterpret_cast<unsigned*>(c + 8 * j) = sm90_pack2<OUT_KIND>(v0, v1);
      }
    }
  }
}

/// The TMA-store epilogue of one consumer warpgroup (rows row0.. +63, columns col0.. +BN-1 of C): chunk by
/// chunk of swizzle rows (128 bytes; 64 or 32 for 16-bit tiles that are not whole 128-byte rows,
/// sm90_c_swizzle_bytes), each thread writes its accumulators (times alpha, converted) into the chunk's
/// buffer at the swizzled place TMA expects (sm90_c_address), the warpgroup
/// fences them for the async proxy and syncs, and one thread issues the store (TMA clips the edges) and
/// moves on: the copy engine drains it during the next tile's main loop. A buffer is refilled only after
/// the store two chunks back has read it.
/// 16-bit C goes in with stmatrix.x4, four 8 x 8 matrices per instruction (sm90_c_stmatrix_row/_byte):
/// a matrix's 8 rows are 8 different 16-byte units, so no bank conflict, and a quarter of the store
/// instructions of st.shared pairs. f32 C: st.shared.v2.f32 of each pair (sm90_c_row/_byte).
/// The accumulators are scaled in place (they are dead after this).
template <int OUT_KIND, int BN>
__device__ __forceinline__ void sm90_store_tile_tma(const Sm90TmaMap& map_c, const Sm90GemmParams& p, float (&d)[BN / 2],
                                                    unsigned bufs, int consumer, int t, int row0, int col0,
                                                    int matrix, int& chunk_seq) {
  constexpr int kOutBytes = OUT_KIND == kGemmF32 ? 4 : 2;
  // C's map has this swizzle (gemm_sm90_launch.cpp). Instantiated for EPI 0 too (never called there), where
  // a width of no whole chunks (f32 C at 176) takes 128 bytes; gemm_sm90_body asserts the chunks for EPI 1.
  constexpr int kSwizzle = sm90_c_swizzle_bytes(BN, kOutBytes) != 0 ? sm90_c_swizzle_bytes(BN, kOutBytes) : kSm90SwizzleBytes;
  constexpr int kChunkCols = sm90_c_box_inner(kOutBytes, kSwizzle);  // 64, 32 or 16 16-bit columns, half that in f32
  const int warp = t / 32, lane = t % 32;
  if (p.alpha != 1.0f) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] *= p.alpha;
  }
#pragma unroll
  for (int ch = 0; ch < BN / kChunkCols; ++ch) {
    const unsigned buf = bufs + sm90_c_seq_offset(chunk_seq, sm90_c_chunk_bytes(BN, kOutBytes));
    if (t == 0) sm90_bulk_wait_read<1>();  // the store that last read `buf` (two chunks back) is done with it
    sm90_warpgroup_sync(1 + consumer);
    if (OUT_KIND == kGemmF32) {
#pragma unroll
      for (int jj = 0; jj < kChunkCols / 8; ++jj) {
        const int j = ch * (kChunkCols / 8) + jj;  // accumulator column group: columns 8j + 2 (lane % 4) + {0, 1}
        const int byte = sm90_c_byte(lane, jj, kOutBytes);
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // this thread's rows r0 and r0 + 8 of the warpgroup's 64
          const unsigned addr = sm90_c_address(buf, sm90_c_row(warp, lane, h), byte, kSwizzle);
          asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(d[4 * j + 2 * h]), "f"(d[4 * j + 2 * h + 1])
                       : "memory");
        }
      }
    } else {
#pragma unroll
      for (int jp = 0; jp < kChunkCols / 16; ++jp) {
        const int j = ch * (kChunkCols / 8) + 2 * jp;  // column groups j and j + 1: matrices (rows 0-7 | 8-15) of each
        const unsigned addr =
            sm90_c_address(buf, sm90_c_stmatrix_row(warp, lane), sm90_c_stmatrix_byte(lane, jp), kSwizzle);
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                     "r"(sm90_pack2<OUT_KIND>(d[4 * j], d[4 * j + 1])), "r"(sm90_pack2<OUT_KIND>(d[4 * j + 2], d[4 * j + 3])),
                     "r"(sm90_pack2<OUT_KIND>(d[4 * j + 4], d[4 * j + 5])),
                     "r"(sm90_pack2<OUT_KIND>(d[4 * j + 6], d[4 * j + 7]))
                     : "memory");
      }
    }
    // Generic-proxy writes that the copy engine (async proxy) reads next: fence in every writing thread.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    sm90_warpgroup_sync(1 + consumer);
    if (t == 0) {
      sm90_tma_store(&map_c, buf, col0 + ch * kChunkCols, row0, matrix);
      sm90_bulk_commit();
    }
    ++chunk_seq;
  }
}

// --- the kernel ------------------------------------------------------------------------------------

/// One work unit of the static schedule: matrix `b`, cluster tile `tile`, K slice `split` (k-blocks
/// kb_begin.. kb_end), and for the tail (FIXUP 2) whether it is a slice of a tail tile and which (`q`).
struct Sm90Unit {
  int tile, b, split, slab, kb_begin, kb_end, q;
  bool part;
};
/// The fixups' count (FIXUP 1 and 2): after a slice's partials are stored, counts it in `flag` (launch id
/// << 8 | slices counted: a value of another launch id is stale and this slice starts it over) and returns,
/// to all CONSUMER_THREADS consumer threads (`ct` 0.., 256 or 128), whether it was the last of `slices`; the
/// verdict goes through the shared word at `verdict` (the fixup slot after the barriers). The partials are
/// made visible GPU-wide before the count, and the counted ones to the last slice after it.
template <int CONSUMER_THREADS>
__device__ __forceinline__ bool sm90_count_slice(const Sm90GemmParams& p, unsigned long long* flag, int slices, int ct,
                                                 unsigned verdict) {
  __threadfence();  // the partials are visible GPU-wide before the count says so
  asm volatile("bar.sync 3, %0;\n" ::"n"(CONSUMER_THREADS) : "memory");  // every consumer warpgroup
  if (ct == 0) {
    unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(flag), next;
    for (;;) {
      next = (old >> 8) == p.launch_id ? old + 1 : ((p.launch_id << 8) | 1ull);
      const unsigned long long prev = atomicCAS(flag, old, next);
      if (prev == old) break;
      old = prev;
    }
    const unsigned last = static_cast<int>(next & 0xffu) == slices ? 1u : 0u;
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(verdict), "r"(last) : "memory");
  }
  asm volatile("bar.sync 3, %0;\n" ::"n"(CONSUMER_THREADS) : "memory");
  unsigned last;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(last) : "r"(verdict) : "memory");
  if (last == 0) return false;
  __threadfence();
  return true;
}

/// The tail's slices (FIXUP 2; Sm90GemmParams::dp_tiles): writes this slice's accumulators into its slot
/// and counts it in the tile's flag; the slice that counts last then sums all slots as the pairwise tree and
/// stores C from the sums with alpha and beta (rows `row` and row + 8, columns col + 8j as the accumulators
/// it read them for; `c_base` as sm90_store_pair). The accumulators are dead from the slot's stores on:
/// holding them through the sums spilled. Called by all consumer threads (`ct` 0..255, or 0..127 with one
/// consumer: a slot keeps room for 256); `empty0` locates the verdict word after the barriers.
template <int OUT_KIND, int BN, int STAGES, int CLUSTER, int CONSUMER_THREADS, int C_TRANS>
__device__ __forceinline__ void sm90_tail_fixup(const Sm90GemmParams& p, const float (&d)[BN / 2], const Sm90Unit& w,
                                                int ct, unsigned rank, unsigned empty0, int row, int col,
                                                long long c_base) {
  constexpr int kVec = BN / 8;  // float4s per thread: column group j holds (row, col + 8j, +1), (row + 8, ...)
  // Slice s's slot of this tile and rank, at this thread's first float4.
  float4* const first = reinterpret_cast<float4*>(p.ws) +
                        static_cast<long long>(w.q * p.splits * CLUSTER + static_cast<int>(rank)) * (kVec * 256) + ct;
  const long long slice_step = static_cast<long long>(CLUSTER) * kVec * 256;  // float4s from slice s to s + 1
  float4* mine = first + w.split * slice_step;
#pragma unroll
  for (int i = 0; i < kVec; ++i) __stcg(mine + i * 256, make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]));
  // Another slice of this tile stores it unless this one counts last.
  if (!sm90_count_slice<CONSUMER_THREADS>(p, p.flags + static_cast<long long>(w.q) * CLUSTER + rank, p.splits, ct,
                                          empty0 + STAGES * 8))
    return;
  // (s0 + s1), then + (s2 + s3) for four slices, a few column groups at a time (their loads in flight).
  constexpr int kGroup = kVec < 4 ? kVec : (BN == 256 ? 1 : 4);  // more at bn 256 spilled
  static_assert(kVec % kGroup == 0, "the tail's sums go a whole group of float4s at a time (bn 32, 64, 128, 256)");
  const bool four = p.splits == 4;
  // Groups in a loop, not all unrolled: the sums are a small part of a tail slice's time, and the unrolled
  // stores of C doubled the kernel's code (bn 256: 118 KB against 55 KB without the tail) and its compile time.
  // Eight groups of one float4 at bn 256 keep 16-32 loads in flight (fewer spilled 8 bytes at unroll 2 and 4);
  // one group of four at a time below (8-16 loads).
  constexpr int kUnroll = BN == 256 ? 8 : 1;
#pragma unroll kUnroll
  for (int g = 0; g < kVec; g += kGroup) {
    float4 x[kGroup];
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      const float4 a = __ldcg(first + (g + i) * 256), b = __ldcg(first + slice_step + (g + i) * 256);
      x[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    if (four) {
#pragma unroll
      for (int i = 0; i < kGroup; ++i) {
        const float4 a = __ldcg(first + 2 * slice_step + (g + i) * 256), b = __ldcg(first + 3 * slice_step + (g + i) * 256);
        x[i].x += a.x + b.x, x[i].y += a.y + b.y, x[i].z += a.z + b.z, x[i].w += a.w + b.w;
      }
    }
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      sm90_store_pair<OUT_KIND, C_TRANS>(p, row, col + 8 * (g + i), x[i].x, x[i].y, c_base);
      sm90_store_pair<OUT_KIND, C_TRANS>(p, row + 8, col + 8 * (g + i), x[i].z, x[i].w, c_base);
    }
  }
}

template <int FIXUP, int SPLITC>
__device__ __forceinline__ Sm90Unit sm90_unit(const Sm90GemmParams& p, int unit, int tiles, int kblocks, int krank) {
  Sm90Unit w;
  if (FIXUP == 2) {
    int bt = unit;
    w.split = 0;
    w.part = unit >= p.dp_tiles;
    w.q = 0;
    if (w.part) {
      const int u = unit - p.dp_tiles, tail = tiles * p.batch - p.dp_tiles;
      w.q = u % tail;
      w.split = u / tail;
      bt = p.dp_tiles + w.q;
    }
    w.tile = bt % tiles;
    w.b = bt / tiles;
    w.slab = w.b;
    w.kb_begin = w.part ? w.split * p.kb_per_split : 0;
    w.kb_end = w.part ? min(kblocks, w.kb_begin + p.kb_per_split) : kblocks;
  } else {
    const int unit_splits = SPLITC > 1 ? 1 : p.splits;
    w.tile = unit % tiles;
    w.slab = unit / tiles;  // b * splits + s
    w.split = SPLITC > 1 ? krank : w.slab % unit_splits;
    w.b = w.slab / unit_splits;
    w.kb_begin = w.split * p.kb_per_split;
    w.kb_end = min(kblocks, w.kb_begin + p.kb_per_split);
    w.q = 0;
    w.part = false;
  }
  return w;
}

/// C tile (tm, tn) of 128 x BN per iteration of a static schedule over clusters of CLUSTER (1 or 2) CTAs:
/// work unit u = cluster id + i * clusters is matrix b, K slice s (all of K unsplit) of cluster tile
/// c = u % tiles, with u / tiles = b * splits + s, mapped through grouped rasterization (RASTER rows of cluster
/// tiles per group); CTA r of the cluster takes tile row tm = c_m * CLUSTER + r, and the cluster shares B:
/// each CTA loads BN / CLUSTER rows of it and multicasts them to both (a stage is freed in both CTAs).
/// Warpgroup 0 produces: its thread 0 waits for a free stage, announces the stage's bytes and issues the
/// A and B boxes. Warpgroups 1 and 2 (1 alone for 64-row tiles)
/// consume: wait for a full stage, four wgmma k16 steps over it, then wait until at most INFLIGHT (0 or 1)
/// k-blocks of wgmma are still running and free the stage the finished ones read. The producer runs
/// ahead into the next tile while the consumers store the current one.
/// A_MN / B_MN (0 or 1): A is M-contiguous / B is N-contiguous in the kernel's frame. Such an operand comes
/// in as boxes of 64 elements along M/N x 64 along K (sm90_desc_mn), the tile's boxes one after the other,
/// and wgmma reads it with its transpose immediate; a K-major one is one box of 64 along K x all its rows.
/// EPI 1: the epilogue goes through shared memory and TMA stores (sm90_store_tile_tma) when p.c_tma says
/// it may (beta = 0, C fit for TMA), else, and always with EPI 0, straight from registers to global.
/// The kernels below are this body with and without a compile-time cluster shape (a kernel declared with
/// __cluster_dims__(1, 1, 1) ran 7-12% slower on the H100 than one without).
/// SPLITC (2 or 4; 1: off): the CTAs of a cluster of SPLITC compute the K slices (their cluster rank) of
/// one tile and sum them through distributed shared memory, no workspace: after the main loop each sends
/// the columns the others own into their shared memory (over the then idle stage ring), and each sums its
/// own columns in rank order (the same order whoever arrives first) and stores them from registers.
/// Three barriers a unit: A (cluster, relaxed) before the sends, B (cluster, release / acquire) after them,
/// C (this CTA) before the ring fills again. After B no CTA touches another's shared memory, so a CTA may
/// leave while its peers still sum.
/// FIXUP 1: K slices (p.splits > 1) are summed by the kernel itself, by whichever CTA finishes a tile's
/// last slice (Sm90GemmParams::ws / flags): no second kernel, no cluster.
/// A_ROWS (128, or 64, 32, 16 where all of M fits in that many rows): the rows of A a stage has room for.
/// Short A stages leave room for more stages, so more of B is in flight: at M = 16 a stage of 128 x 32
/// tiles is 6 KiB instead of 20. At 32 or 16 rows the two consumers still run their wgmma over 128 rows
/// (sm90_ring_bytes); at 64 the tile is 64 rows, run by one consumer warpgroup (256 threads a CTA).
/// C_TRANS: C is stored transposed (A and B swapped; sm90_store_pair).
template <int IN_KIND, int OUT_KIND, int BN, int STAGES, int RASTER, int INFLIGHT, int CLUSTER, int A_MN, int B_MN,
          int EPI, int SPLITC = 1, int FIXUP = 0, int A_ROWS = kSm90Bm, int C_TRANS = 0>
__device__ __forceinline__ void gemm_sm90_body(const Sm90TmaMap& map_a, const Sm90TmaMap& map_b,
                                               const Sm90TmaMap& map_c, const Sm90GemmParams& p) {
  static_assert(BN % 16 == 0 && BN >= 32 && BN <= 256, "BN is a multiple of 16 in 32..256 (wgmma m64nBNk16)");
  // An MN-major B comes in boxes of 64 columns, one swizzle row each: every CTA's part of it is whole boxes.
  static_assert(B_MN == 0 || sm90_b_part(BN, CLUSTER) % kSm90MnBox == 0, "an MN-major B part is whole 64-wide boxes");
  // The TMA-store epilogue stores whole chunks of one swizzle row of C (128, 64 or 32 bytes).
  static_assert(EPI == 0 || sm90_c_swizzle_bytes(BN, OUT_KIND == kGemmF32 ? 4 : 2) != 0, "BN is whole C chunks");
  static_assert(SPLITC == 1 || (CLUSTER == 1 && (SPLITC == 2 || SPLITC == 4)), "SPLITC is 2 or 4, without CLUSTER");
  static_assert(SPLITC == 1 || (BN / 2 / SPLITC) % 4 == 0, "each rank of the cluster sum owns whole float4s of columns");
  static_assert(SPLITC == 1 || (SPLITC - 1) * (BN / 2 / SPLITC) * 2 * 128 * 4 <= STAGES * sm90_stage_bytes(BN, A_ROWS),
                "the cluster reduction's receive buffers fit in the stage ring");
  static_assert(A_ROWS == 128 || A_ROWS == 64 || A_ROWS == 32 || A_ROWS == 16, "A_ROWS is 128, 64, 32 or 16");
  static_assert(A_ROWS >= 64 || CLUSTER == 1, "stages of 32 or 16 rows hold one tile row: no pairs of tile rows");
  // Rows of C a tile covers: 128 (two consumer warpgroups), or 64 with 64-row stages (tiles of 64 rows, any M;
  // one consumer warpgroup, and the kernel is launched with sm90_threads(64) = 256 threads).
  constexpr int kTileM = A_ROWS == 64 ? 64 : kSm90Bm;
  constexpr int kConsumers = sm90_consumers(A_ROWS);
  constexpr int kConsumerThreads = 128 * kConsumers;
  static_assert(kTileM == 64 * kConsumers, "a consumer warpgroup per 64 rows of the tile");
  constexpr int kCtas = CLUSTER * SPLITC;  // CTAs per cluster
  static_assert(STAGES >= 2, "at least two stages");
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "INFLIGHT is 0 or 1");
  static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER is 1 or 2");
  static_assert((A_MN == 0 || A_MN == 1) && (B_MN == 0 || B_MN == 1), "A_MN and B_MN are 0 or 1");
  static_assert(A_MN == 0 || kSm90MnBoxBytes * (A_ROWS / kSm90MnBox) == sm90_a_stage_bytes(A_ROWS),
                "MN-major A boxes (64 rows each) fill the A stage");
  constexpr int kBPart = sm90_b_part(BN, CLUSTER);  // rows of B each CTA of a cluster loads (and multicasts)
  constexpr int kStage = sm90_stage_bytes(BN, A_ROWS);
  extern __shared__ __align__(1024) unsigned char sm90_smem[];
  const unsigned base = (gemm_smem_u32(sm90_smem) + (kSm90SmemAlign - 1)) & ~static_cast<unsigned>(kSm90SmemAlign - 1);
  // The TMA-store epilogue's C buffers follow the stages (1024-byte aligned, as the swizzle needs).
  const unsigned cbuf0 = base + sm90_ring_bytes(BN, STAGES, A_ROWS);
  constexpr int kCChunk = sm90_c_chunk_bytes(BN, OUT_KIND == kGemmF32 ? 4 : 2);  // one chunk buffer
  // STAGES full barriers, then STAGES empty ones
  const unsigned full0 = cbuf0 + (EPI ? sm90_c_buffer_bytes(BN, OUT_KIND == kGemmF32 ? 4 : 2) : 0);
  const unsigned empty0 = full0 + STAGES * 8;
  // The warpgroup, broadcast from lane 0 so that the compiler knows it is the same in every lane: the consumers'
  // shared-memory addresses and wgmma descriptors derived from it can then stay in uniform registers.
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  // A split-K reduction launched after this grid as a programmatic dependent may be scheduled from now on:
  // its blocks take SMs as this grid's blocks leave, and wait at griddepcontrol.wait for its completion.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sm90_mbar_init(full0 + 8 * s, 1);
      // Lane 0 of every consumer warp of every CTA of the cluster frees a stage.
      sm90_mbar_init(empty0 + 8 * s, 4 * kConsumers * CLUSTER);
    }
    // The barriers are used by the TMA unit (the async proxy) as well: publish their initialization.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    sm90_prefetch_map(&map_a);
    sm90_prefetch_map(&map_b);
  }
  // The peer CTA multicasts into this one's stages and arrives on its barriers: all must be initialized.
  if (kCtas > 1) {
    sm90_cluster_sync();
  } else {
    __syncthreads();
  }
  const unsigned rank = CLUSTER > 1 ? sm90_cluster_rank() : 0u;
  const int tiles = p.tiles_mc * p.tiles_n;
  const int cluster_id = blockIdx.x / kCtas, clusters = gridDim.x / kCtas;
  const int kblocks = (p.k + kSm90Bk - 1) / kSm90Bk;
  // (matrix, K slice, tile): unit = (b * splits + s) * tiles + tile; the slices of one tile are `tiles` apart.
  // With SPLITC the slice is the CTA's cluster rank instead.
  const int unit_splits = SPLITC > 1 ? 1 : p.splits;
  const int units = FIXUP == 2 ? p.dp_tiles + (tiles * p.batch - p.dp_tiles) * p.splits : tiles * unit_splits * p.batch;
  const int krank = SPLITC > 1 ? static_cast<int>(sm90_cluster_rank()) : 0;
  const bool to_workspace = SPLITC == 1 && FIXUP == 0 && p.splits > 1;  // f32 partials for the split-K reduction
  static_assert(FIXUP == 0 || SPLITC == 1, "FIXUP and SPLITC are two ways of summing the slices");
  static_assert(FIXUP >= 0 && FIXUP <= 2, "FIXUP is 0, 1 (K slices) or 2 (the tail)");

  if (wg == 0) {
    sm90_setmaxnreg_dec<kSm90ProducerRegs>();
    int stage = 0;
    unsigned phase = 0;
    for (int unit = cluster_id; unit < units; unit += clusters) {
      // The cluster reduction's three barriers per unit (see the consumers), which every thread passes.
      if (SPLITC > 1 && threadIdx.x != 0) {
        sm90_cluster_sync_relaxed();
        sm90_cluster_sync();
        sm90_cta_sync_all();
        continue;
      }
      if (SPLITC == 1 && threadIdx.x != 0) break;
      {
        const Sm90Unit w = sm90_unit<FIXUP, SPLITC>(p, unit, tiles, kblocks, krank);
        const int b = w.b;
        const int tm = gemm_raster_m(w.tile, p.tiles_mc, p.tiles_n, RASTER) * CLUSTER + static_cast<int>(rank);
        const int tn = gemm_raster_n(w.tile, p.tiles_mc, p.tiles_n, RASTER);
        for (int kb = w.kb_begin; kb < w.kb_end; ++kb) {
          sm90_mbar_wait(empty0 + 8 * stage, phase ^ 1u);  // a fresh barrier passes parity 1 at once
          const unsigned full = full0 + 8 * stage;
          const unsigned dst = base + sm90_stage_offset(BN, stage, A_ROWS);
          // A's rows (p.a_rows), this CTA's part of B and the peer's.
          sm90_mbar_expect_tx(full, kStage - static_cast<unsigned>(A_ROWS - p.a_rows) * kSm90Bk * 2);
          // A rows past M (the second CTA of a cluster on the last tile row) are zero-filled, never stored.
          if (A_MN) {
            for (int h = 0; h < p.a_rows / kSm90MnBox; ++h)
              sm90_tma_load(dst + sm90_mn_box_offset(h), &map_a, tm * kTileM + h * kSm90MnBox, kb * kSm90Bk, b, full);
          } else {
            sm90_tma_load(dst, &map_a, kb * kSm90Bk, tm * kTileM, b, full);
          }
          // This CTA's part of B (all of it without a cluster): kBPart rows of 128 bytes in either layout.
          const unsigned b_dst = dst + sm90_b_rank_offset(BN, CLUSTER, rank, A_ROWS);
          const int b_row = tn * BN + static_cast<int>(rank) * kBPart;
          if (B_MN) {
#pragma unroll
            for (int j = 0; j < kBPart / kSm90MnBox; ++j) {
              if (CLUSTER > 1) {
                sm90_tma_load_multicast(b_dst + sm90_mn_box_offset(j), &map_b, b_row + j * kSm90MnBox, kb * kSm90Bk, b,
                                        full, (1u << CLUSTER) - 1);
              } else {
                sm90_tma_load(b_dst + sm90_mn_box_offset(j), &map_b, b_row + j * kSm90MnBox, kb * kSm90Bk, b, full);
              }
            }
          } else if (CLUSTER > 1) {
            sm90_tma_load_multicast(b_dst, &map_b, kb * kSm90Bk, b_row, b, full, (1u << CLUSTER) - 1);
          } else {
            sm90_tma_load(b_dst, &map_b, kb * kSm90Bk, b_row, b, full);
          }
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1u;
          }
        }
      }
      if (SPLITC > 1) {
        sm90_cluster_sync_relaxed();
        sm90_cluster_sync();
        sm90_cta_sync_all();
      }
    }
  } else {
    sm90_setmaxnreg_inc<kSm90ConsumerRegs>();
    const int consumer = wg - 1;  // rows 64 * consumer .. + 63 of the tile
    const int t = threadIdx.x % 128;
    const int warp = t / 32, lane = t % 32;
    float d[BN / 2];
    int chunk_seq = 0;  // C chunks this warpgroup stored through TMA (picks the buffer)
    int stage = 0;
    unsigned phase = 0;
    // Frees stage s in every CTA of the cluster: each producer multicasts into all of them.
    const auto free_stage = [&](int s) {
      if (CLUSTER > 1) {
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) sm90_mbar_arrive_cluster(empty0 + 8 * s, r);
      } else {
        sm90_mbar_arrive(empty0 + 8 * s);
      }
    };
    // A unit without k-blocks runs no wgmma, so its accumulators must be zero (C = beta * C). Unsplit and with
    // the in-kernel fixup's slices (FIXUP 1: gemm_sm90_k_splits leaves none empty) that is K = 0 alone, for
    // every unit: zero d once here, not in every tile's epilogue (there, 128 selects on the tensor cores'
    // critical path; 0.5% of the time at 4096^3 on average, bench/results_gemm_sm90_kzero_h100_session16.log). The
    // cluster reduction (SPLITC: a rank past K's end) and the tail's slices (FIXUP 2) zero per unit below.
    if (kblocks == 0) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    }
    for (int unit = cluster_id; unit < units; unit += clusters) {
      const Sm90Unit w = sm90_unit<FIXUP, SPLITC>(p, unit, tiles, kblocks, krank);
      const int tile = w.tile, slab = w.slab, split = w.split, b = w.b;
      const int tm = gemm_raster_m(tile, p.tiles_mc, p.tiles_n, RASTER) * CLUSTER + static_cast<int>(rank);
      const int tn = gemm_raster_n(tile, p.tiles_mc, p.tiles_n, RASTER);
      const int kb_begin = w.kb_begin, kb_end = w.kb_end;
      // Where the unit's C goes: its slab's rows of the workspace (split), else its matrix of C.
      const int row_base = to_workspace ? slab * p.slice_rows : 0;
      const int c_matrix = to_workspace ? 0 : b;
      int reading = -1;  // the stage the k-block still in flight reads (INFLIGHT = 1)
      for (int kb = kb_begin; kb < kb_end; ++kb) {
        sm90_mbar_wait(full0 + 8 * stage, phase);
        // Rows 64 * consumer.. of A: 64 rows of 128 bytes (K-major) or the consumer's own box (MN-major).
        // Past a short A stage of a 128-row tile (A_ROWS 32 or 16) the rows read are the next bytes: rows past M
        // (sm90_ring_bytes). A 64-row tile's one consumer reads its stage's 64 rows.
        const unsigned a = base + sm90_stage_offset(BN, stage, A_ROWS) + sm90_a_consumer_offset(consumer);
        const unsigned b = base + sm90_stage_offset(BN, stage, A_ROWS) + sm90_b_offset(A_ROWS);
        sm90_wgmma_fence();
#pragma unroll
        for (int k = 0; k < kSm90Bk / 16; ++k)
          Sm90Wgmma<IN_KIND, BN, A_MN, B_MN>::run(d, sm90_operand_desc(a, k, A_MN != 0), sm90_operand_desc(b, k, B_MN != 0),
                                                  kb != kb_begin || k != 0);
        sm90_wgmma_commit();
        // Consecutive wgmma on the same accumulators are ordered by the hardware, so the next k-block may
        // be issued while this one runs; only the stage must stay until its reads are done.
        sm90_wgmma_wait<INFLIGHT>();
        if (INFLIGHT == 0) {
          if (lane == 0) free_stage(stage);
        } else {
          if (reading >= 0 && lane == 0) free_stage(reading);
          reading = stage;
        }
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1u;
        }
      }
      sm90_wgmma_wait<0>();
      sm90_fence_regs(d);
      if (INFLIGHT != 0 && reading >= 0 && lane == 0) free_stage(reading);
      // A cluster rank past K's end (SPLITC) has no slice; the sum then overwrites d with its own columns.
      if (SPLITC > 1 && kb_end <= kb_begin) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
      }
      // Accumulator layout of m64nNk16: warp w holds rows 16w + lane/4 (+ 8), columns 8j + 2 (lane % 4) (+ 1).
      const int row = tm * kTileM + consumer * 64 + warp * 16 + lane / 4;
      const int col = tn * BN + 2 * (lane % 4);
      const long long c_base = static_cast<long long>(row_base) * p.ldc + c_matrix * p.stride_c;
      if constexpr (FIXUP == 2) {
        // A slice of a tail tile: its slot, the count, and C from all slots by the last (sm90_tail_fixup).
        if (w.part) {
          // A slice past K's end. gemm_sm90_tail_plan makes none (at most 4 slices of >= 4 k-blocks each);
          // this keeps a plan that did from storing the previous tile's sums. Only the tail's units test it.
          if (kb_end <= kb_begin) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
          }
          sm90_tail_fixup<OUT_KIND, BN, STAGES, CLUSTER, kConsumerThreads, C_TRANS>(p, d, w, consumer * 128 + t, rank,
                                                                                     empty0, row, col, c_base);
          continue;
        }
      }
      if constexpr (FIXUP == 1) {
        if (p.splits > 1) {
          // This slice's partials, at the rows and columns this thread holds (and reads back, if last).
          const auto ws_at = [&](int s, int r, int cc) {
            return p.ws + (static_cast<long long>(b * p.splits + s) * p.slice_rows + r) * p.ldw + cc;
          };
#pragma unroll
          for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = row + 8 * h, cc = col + 8 * j;  // cc even and ldw >= n rounded up to 4: a pair fits
              if (r < p.m && cc < p.n)
                asm volatile("st.global.v2.f32 [%0], {%1, %2};\n" ::"l"(ws_at(split, r, cc)), "f"(d[4 * j + 2 * h]),
                             "f"(d[4 * j + 2 * h + 1])
                             : "memory");
            }
          // The count's verdict for the whole CTA, in the word after the barriers (sm90_smem_bytes' fixup slot).
          if (!sm90_count_slice<kConsumerThreads>(p, p.flags + (static_cast<long long>(b) * tiles + tile) * CLUSTER + rank,
                                                  p.splits, consumer * 128 + t, empty0 + STAGES * 8))
            continue;  // another slice of this tile stores C
          // Sum the tile from the workspace, all consumer threads over its in-bounds element pairs (rows
          // of C past M, e.g. 112 of 128 at M = 16, cost nothing), every slice (this one's too: its own stores
          // are visible to it) in slice order: the same sum whichever slice counts last. Four pairs a thread
          // at a time keep 4 x splits loads in flight. C is stored from here, alpha and beta applied.
          const int ct = consumer * 128 + t;
          const int row0 = tm * kTileM, col0 = tn * BN;
          const int rows = min(kTileM, p.m - row0), pairs_per_row = BN / 2;
          const int pairs = rows * pairs_per_row;
          for (int e0 = ct; e0 < pairs; e0 += 4 * kConsumerThreads) {
            float x[4], y[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) x[q] = y[q] = 0.0f;
            for (int s = 0; s < p.splits; ++s) {
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const int e = e0 + q * kConsumerThreads;
                const int r = row0 + e / pairs_per_row, cc = col0 + 2 * (e % pairs_per_row);
                if (e < pairs && cc < p.n) {
                  const float2 v = __ldcg(reinterpret_cast<const float2*>(ws_at(s, r, cc)));
                  x[q] += v.x, y[q] += v.y;
                }
              }
            }
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int e = e0 + q * kConsumerThreads;
              if (e < pairs)
                sm90_store_pair<OUT_KIND, C_TRANS>(p, row0 + e / pairs_per_row, col0 + 2 * (e % pairs_per_row), x[q], y[q],
                                                   c_base);
            }
          }
          continue;
        }
      }
      if (SPLITC > 1) {
        // Rank q owns the column groups [q * kPart / 4, (q + 1) * kPart / 4): registers q * kPart.. of every
        // thread. A receive slot per (sender, consumer) holds kPart floats of each of the 128 threads.
        constexpr int kPart = BN / 2 / SPLITC, kPart4 = kPart / 4;
        const auto slot_addr = [&](int slot, int i4) {
          return base + static_cast<unsigned>(((slot * 2 + consumer) * kPart4 + i4) * 2048 + t * 16);
        };
        // A: every CTA of the cluster is done with its stage ring. No release is needed: the peers' reads of
        // it (wgmma, waited for) are over and every TMA write of the unit was waited for on the full
        // barriers before they arrive, and the producers issue nothing more before C. Relaxed, it skips a
        // GPU-wide MEMBAR. (Safety rests on those waits, not on the barrier's memory order.)
        sm90_cluster_sync_relaxed();
#pragma unroll
        for (int q = 0; q < SPLITC; ++q) {
          if (q == krank) continue;
          const int slot = krank - (krank > q ? 1 : 0);  // this sender's slot at rank q
#pragma unroll
          for (int i4 = 0; i4 < kPart4; ++i4) {
            const int i = q * kPart + 4 * i4;
            sm90_st_cluster_v4(slot_addr(slot, i4), static_cast<unsigned>(q), d[i], d[i + 1], d[i + 2], d[i + 3]);
          }
        }
        sm90_cluster_sync();  // B: the parts have landed (release / acquire at cluster scope)
#pragma unroll
        for (int q = 0; q < SPLITC; ++q) {
          if (q != krank) continue;
#pragma unroll
          for (int i4 = 0; i4 < kPart4; ++i4) {
            const int i = q * kPart + 4 * i4;
            float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int src = 0; src < SPLITC; ++src) {  // rank order: the same sum in every run
              const float4 v = src == q ? make_float4(d[i], d[i + 1], d[i + 2], d[i + 3])
                                        : sm90_ld_shared_v4(slot_addr(src - (src > q ? 1 : 0), i4));
              acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
            }
            d[i] = acc.x, d[i + 1] = acc.y, d[i + 2] = acc.z, d[i + 3] = acc.w;
          }
#pragma unroll
          for (int jj = 0; jj < kPart4; ++jj) {
            const int j = q * kPart4 + jj;
            sm90_store_pair<OUT_KIND, C_TRANS>(p, row, col + 8 * j, d[4 * j], d[4 * j + 1], c_base);
            sm90_store_pair<OUT_KIND, C_TRANS>(p, row + 8, col + 8 * j, d[4 * j + 2], d[4 * j + 3], c_base);
          }
        }
        // The slots were written and read by the generic proxy; the next unit's TMA (async proxy) refills them.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        // C: the receive slots are read; the stage ring may fill again. Only this CTA's producer fills it (no
        // multicast beside SPLITC) and the peers write into it only after the next unit's A: a CTA barrier
        // does, not a cluster one whose release waited for this unit's stores of C (H200, 16 x 4096 x 4096:
        // a tenth of the consumers' warp samples sat in the three barriers' GPU-wide MEMBARs).
        sm90_cta_sync_all();
        continue;
      }
      if (EPI && p.c_tma) {
        sm90_store_tile_tma<OUT_KIND, BN>(map_c, p, d, cbuf0 + sm90_c_consumer_offset(consumer, kCChunk), consumer, t,
                                          row_base + tm * kTileM + consumer * 64, tn * BN, c_matrix, chunk_seq);
        continue;
      }
      if (!C_TRANS && p.beta == 0.0f && p.c_pairs && tn * BN + BN <= p.n) {
        sm90_store_rows<OUT_KIND, BN>(p, row, col, d, c_base);
        continue;
      }
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        sm90_store_pair<OUT_KIND, C_TRANS>(p, row, col + 8 * j, d[4 * j], d[4 * j + 1], c_base);
        sm90_store_pair<OUT_KIND, C_TRANS>(p, row + 8, col + 8 * j, d[4 * j + 2], d[4 * j + 3], c_base);
      }
    }
    // The stores still in flight must finish reading this CTA's shared memory before it exits.
    if (EPI && t == 0) sm90_bulk_wait_all();
  }
  // The peer may still arrive on this CTA's barriers: no CTA of a cluster leaves before all are done.
  if (CLUSTER > 1) sm90_cluster_sync();
}

/// One CTA per cluster tile.
template <int IN_KIND, int OUT_KIND, int BN, int STAGES, int RASTER, int INFLIGHT, int A_MN = 0, int B_MN = 0,
          int EPI = 0, int FIXUP = 0, int A_ROWS = kSm90Bm, int C_TRANS = 0>
__global__ void __launch_bounds__(kSm90Threads, 1)
    gemm_sm90_kernel(const __grid_constant__ Sm90TmaMap map_a, const __grid_constant__ Sm90TmaMap map_b,
                     const __grid_constant__ Sm90TmaMap map_c, const __grid_constant__ Sm90GemmParams p) {
  gemm_sm90_body<IN_KIND, OUT_KIND, BN, STAGES, RASTER, INFLIGHT, 1, A_MN, B_MN, EPI, 1, FIXUP, A_ROWS, C_TRANS>(
      map_a, map_b, map_c, p);
}

// NOTE: nvcc rejects __cluster_dims__ in an sm_80 device pass even in an uninstantiated template.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
/// Clusters of two CTAs sharing B (launched with a grid of an even size).
template <int IN_KIND, int OUT_KIND, int BN, int STAGES, int RASTER, int INFLIGHT, int A_MN = 0, int B_MN = 0,
          int EPI = 0, int FIXUP = 0, int A_ROWS = kSm90Bm, int C_TRANS = 0>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kSm90Threads, 1)
    gemm_sm90_cluster2_kernel(const __grid_constant__ Sm90TmaMap map_a, const __grid_constant__ Sm90TmaMap map_b,
                              const __grid_constant__ Sm90TmaMap map_c, const __grid_constant__ Sm90GemmParams p) {
  gemm_sm90_body<IN_KIND, OUT_KIND, BN, STAGES, RASTER, INFLIGHT, 2, A_MN, B_MN, EPI, 1, FIXUP, A_ROWS, C_TRANS>(
      map_a, map_b, map_c, p);
}
/// Split-K in clusters of SPLITC CTAs (2 or 4), one K slice each, summed through distributed shared memory.
template <int IN_KIND, int OUT_KIND, int BN, int STAGES, int RASTER, int INFLIGHT, int A_MN = 0, int B_MN = 0,
          int EPI = 0, int A_ROWS = kSm90Bm, int C_TRANS = 0>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kSm90Threads, 1)
    gemm_sm90_splitk2_kernel(const __grid_constant__ Sm90TmaMap map_a, const __grid_constant__ Sm90TmaMap map_b,
                             const __grid_constant__ Sm90TmaMap map_c, const __grid_constant__ Sm90GemmParams p) {
  gemm_sm90_body<IN_KIND, OUT_KIND, BN, STAGES, RASTER, INFLIGHT, 1, A_MN, B_MN, EPI, 2, 0, A_ROWS, C_TRANS>(
      map_a, map_b, map_c, p);
}
template <int IN_KIND, int OUT_KIND, int BN, int STAGES, int RASTER, int INFLIGHT, int A_MN = 0, int B_MN = 0,
          int EPI = 0, int A_ROWS = kSm90Bm, int C_TRANS = 0>
__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(kSm90Threads, 1)
    gemm_sm90_splitk4_kernel(const __grid_constant__ Sm90TmaMap map_a, const __grid_constant__ Sm90TmaMap map_b,
                             const __grid_constant__ Sm90TmaMap map_c, const __grid_constant__ Sm90GemmParams p) {
  gemm_sm90_body<IN_KIND, OUT_KIND, BN, STAGES, RASTER, INFLIGHT, 1, A_MN, B_MN, EPI, 4, 0, A_ROWS, C_TRANS>(
      map_a, map_b, map_c, p);
}
#endif

#endif  // SWZ_DEVICE_CODE

}  // namespace tpl
}  // namespace swz
