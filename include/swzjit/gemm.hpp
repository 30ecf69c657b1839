// swzjit public API: the GEMM families — fp32 SGEMM on CUDA cores and f16/bf16 HGEMM on tensor cores:
// typed configs, validation, generated source, search spaces and static shared-memory bank analysis
// (generator/families/gemm/gemm.cpp, generator/families/gemm/sgemm.cpp, generator/families/gemm/hgemm.cpp).
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/layout.hpp"
#include "swzjit/jit.hpp"  // CompileRequest
#include "swzjit/transpose.hpp"  // LaunchShape, SmemInstrStats
#include "swzjit/types.hpp"

namespace swz {

/// The operand layouts a GEMM kernel is compiled for, in the kernel's frame (C row-major), spelled as
/// in BLAS on row-major storage: the first letter is A's, the second B's; N = the matrix is stored
/// row-major as it appears in C = A * B (A: M x K with K contiguous; B: K x N with N contiguous),
/// T = it is stored transposed (A: M contiguous; B: K contiguous). NT is the tensor-core-native case
/// (both operands K-contiguous). A column-major C is mapped onto this frame by the engine (C^T = B^T A^T).
enum class GemmLayout { NN, NT, TN, TT };
std::string to_string(GemmLayout l);
/// Parse "NN|NT|TN|TT"; throws InvalidArgument naming the allowed values.
GemmLayout parse_gemm_layout(const std::string& text);
/// True when A (B) is K-contiguous in global memory for `l`.
bool gemm_a_kmajor(GemmLayout l);
bool gemm_b_kmajor(GemmLayout l);

/// One SGEMM configuration (the template arguments of templates/sgemm.cuh), seed 004's parameters:
/// block tile bm x bn, k-tile bk, warp tile wm x wn split into wniter sub-tiles along n, thread tile
/// tm x tn per sub-tile. A K-contiguous operand is transposed into its shared tile, which its swizzle
/// keeps conflict-free (B = 0: no swizzle).
struct SgemmConfig {
  GemmLayout layout = GemmLayout::NN;
  int bm = 128, bn = 128, bk = 8;
  int wm = 64, wn = 32, wniter = 2;
  int tm = 4, tn = 4;
  int threads = 256;  ///< must equal (bm/wm) * (bn/wn) * 32
  int stages = 2;     ///< 1: single shared buffer; 2: double-buffered (global loads prefetched in registers)
  int vec = 4;        ///< floats per global load: 4, 2 or 1 (alignment of pointers and pitches)
  int raster = 8;     ///< block rasterization group (tile-rows per group; 1 = plain row-major raster)
  SwizzleSpec swizzle_a;  ///< on the A tile's element offsets ([bk][bm])
  SwizzleSpec swizzle_b;  ///< on the B tile's element offsets ([bk][bn])
  /// Split-K, as for HGEMM: `split` slices of K into an f32 workspace, then a reduction applies alpha/beta.
  int split = 1;

  int wmiter() const;
  int smem_bytes() const;  ///< static shared memory per block; InvalidArgument past 2^31 - 1
};

/// One HGEMM configuration (the template arguments of templates/hgemm.cuh).
struct HgemmConfig {
  DType in = DType::F16;   ///< f16 or bf16 (A and B)
  DType out = DType::F16;  ///< f16, bf16 or f32 (C)
  GemmLayout layout = GemmLayout::NT;
  int bm = 128, bn = 256, bk = 32;
  int wm = 64, wn = 64;
  int stages = 4;  ///< cp.async pipeline depth (>= 2)
  int vec = 8;     ///< elements per cp.async: 8 (16 bytes), 4, 2, or 1 (plain 2-byte copies)
  int raster = 8;
  /// Split-K: K is cut into `split` slices computed by separate blocks into an f32 workspace, then
  /// reduced (alpha, beta, conversion) by a second kernel. 1 = no split. For small M x N with long K.
  int split = 1;
  SwizzleSpec swizzle_a;  ///< on the A tile ([bm][bk] if A is K-contiguous, else [bk][bm])
  SwizzleSpec swizzle_b;  ///< on the B tile ([bn][bk] if B is K-contiguous, else [bk][bn])

  /// (bm / wm) * (bn / wn) * 32; throws InvalidArgument unless 1 <= wm <= bm and 1 <= wn <= bn.
  int threads() const;
  int smem_bytes() const;  ///< dynamic shared memory per block (all stages); InvalidArgument past 2^31 - 1
};

enum class GemmKernelKind { Sgemm, Hgemm };

/// The block-level shape both families share (GemmConfig::tile()).
struct GemmTileShape {
  int bm, bn, bk;  ///< block tile and k-tile
  int wm, wn;      ///< warp tile
  int stages;
  int split;       ///< split-K slices (1 = none)
};

/// A GEMM kernel configuration of either family. Canonical text (parse() reads it back):
///   "sgemm,NN,tile=128x128x8,warp=64x32,wniter=2,thread=4x4,threads=256,stages=2,vec=4,raster=8,swa=1:4:5,swb=0:0:0"
///   "hgemm,f16>f32,NT,tile=128x256x32,warp=64x64,stages=4,vec=8,raster=8,swa=2:3:3,swb=2:3:3"
///   optional trailing field (printed only when not the default): split=N (split-K, either family).
struct GemmConfig {
  GemmKernelKind kind = GemmKernelKind::Sgemm;
  SgemmConfig sgemm;  ///< meaningful when kind == Sgemm
  HgemmConfig hgemm;  ///< meaningful when kind == Hgemm

  static GemmConfig of(const SgemmConfig& c);
  static GemmConfig of(const HgemmConfig& c);
  DType in_dtype() const;
  DType out_dtype() const;
  GemmLayout layout() const;
  int threads() const;
  int vec_bytes() const;           ///< bytes per global load (the alignment A and B must have)
  int dynamic_smem_bytes() const;  ///< launch-time shared memory (HGEMM), 0 for SGEMM (static)
  int smem_bytes() const;          ///< total shared memory per block
  GemmTileShape tile() const;
  SwizzleSpec& swizzle_a();        ///< the A / B tile swizzles of whichever family
  SwizzleSpec& swizzle_b();

  std::string to_string() const;
  static GemmConfig parse(const std::string& text);
  /// Throws InvalidArgument naming the offending field and the rule it breaks.
  void validate() const;
  bool operator==(const GemmConfig& o) const { return to_string() == o.to_string(); }
};

/// The generated translation unit: one #include and one explicit instantiation.
std::string gemm_source(const GemmConfig& cfg);
std::string gemm_name_expression(const GemmConfig& cfg);
/// e.g. "swz_sgemm_<hash>.cu".
std::string gemm_source_name(const GemmConfig& cfg);
/// Grid for an M x N problem in the kernel's frame: x = tiles (rasterized in the kernel), z = matrices
/// x split-K slices, at most 65535 / split matrices per launch (the engine splits larger batches).
/// Throws InvalidArgument for an invalid config, negative sizes or more than 2^31 - 1 block tiles.
LaunchShape gemm_launch_shape(const GemmConfig& cfg, long long m, long long n, long long batch);

/// The NVRTC request (source, name expression, arch sm_90a) of one config of the Hopper GEMM that
/// Engine::gemm runs on sm_90 GPUs, for tools that print or compile it (`swz gen|compile gemm_sm90`).
/// `config_text` is the config as `swz analyze gemm_sm90 --config` and the tuning cache's "sm90:"
/// winners write it (the prefix is optional), e.g. "in=bf16,out=f32,layout=TN,bn=128,stages=6,epilogue=tma";
/// empty: the default config. The config's layouts are proved first (as before every compile).
/// @throws Error(InvalidArgument) naming the offending field.
CompileRequest gemm_sm90_request(const std::string& config_text);
/// The canonical text of that config (what gemm_sm90_request compiled).
std::string gemm_sm90_config_text(const std::string& config_text);

/// The reference kernel (templates/gemm_reference.cuh): one thread per element, f64 or f32 sums.
struct GemmReferenceSpec {
  DType in = DType::F32;
  DType out = DType::F32;
  GemmLayout layout = GemmLayout::NN;
  bool f64_accumulate = true;
  std::string to_string() const;  ///< e.g. "gemm_reference,f16>f32,NT,acc=f64"
};
std::string gemm_reference_source(const GemmReferenceSpec& spec);
std::string gemm_reference_name_expression(const GemmReferenceSpec& spec);
std::string gemm_reference_source_name(const GemmReferenceSpec& spec);
LaunchShape gemm_reference_launch_shape(long long m, long long n, long long batch);

/// Static bank analysis of one k-tile of one block: every warp-wide shared-memory instruction
/// (SGEMM: transposing sts.32 or vector sts, lds.128 fragment reads; HGEMM: cp.async 16-byte stores,
/// ldmatrix.x4 phases), evaluated with the template's own index maps and the docs/ARCHITECTURE.md bank model.
struct GemmAnalysis {
  std::vector<SmemInstrStats> instrs;
  long long store_wavefronts = 0, store_ideal = 0, store_instructions = 0;
  long long load_wavefronts = 0, load_ideal = 0, load_instructions = 0;
  long long excess() const { return store_wavefronts - store_ideal + load_wavefronts - load_ideal; }
  /// Excess of the instructions touching one operand's tile (name starts with "A " or "B ").
  long long excess_of(char operand) const;
};
GemmAnalysis analyze_gemm(const GemmConfig& cfg);

/// Pick, for each operand tile, the cheapest swizzle (none if the plain tile is conflict-free) whose
/// static analysis shows zero excess wavefronts on that tile and that the kernel's address
/// decomposition supports. Returns false (swizzles left at none) if some operand has no such swizzle.
bool gemm_choose_swizzles(GemmConfig& cfg);

/// Default search space of a dtype pair and layout: hand-picked tile shapes (about 10-30), alignment
/// capped by `max_vec_bytes`, each with conflict-free swizzles chosen by static analysis.
/// f32 -> f32 gives SGEMM configs; f16/bf16 -> f16/bf16/f32 HGEMM configs. Throws Unsupported otherwise.
std::vector<GemmConfig> gemm_search_space(DType in, DType out, GemmLayout layout, int max_vec_bytes = 16);

/// Throws Error(Unsupported) unless (in, out) is a supported pair: f32 -> f32 (SGEMM) or
/// f16/bf16 -> f16, bf16 or f32 (HGEMM).
void check_gemm_dtypes(DType in, DType out);

}  // namespace swz
