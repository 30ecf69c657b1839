// swzjit public API: the Engine — compiled kernels from the cache (NVRTC only on a miss), loaded
// lazily per device, launched on the caller's stream, with the tuned configuration when one is cached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "swzjit/cache.hpp"
#include "swzjit/device.hpp"
#include "swzjit/family.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/transpose.hpp"

namespace swz {

/// What the engine does when no tuned result is cached for a problem.
enum class TunePolicy {
  Default,     ///< use a sensible default configuration (never benchmarks)
  /// Run the autotuner once per problem, store the winner, then use it. While one thread tunes a problem,
  /// other calls for it run the default (they never wait for the tune); a tune that fails (no worker, no
  /// device) gives the default for that problem, with a warning on stderr.
  TuneOnMiss,
};

struct EngineOptions {
  int device = 0;
  TunePolicy policy = TunePolicy::Default;
  /// Cache location; empty = default_cache_settings() ($SWZJIT_CACHE_DIR, XDG, ~/.cache/swzjit).
  std::string cache_dir;
  /// Without a cache every kernel is compiled in this process (kept in memory only).
  bool use_cache = true;
  /// Use the cache without ever writing it (CacheSettings::read_only; SWZJIT_CACHE_READ_ONLY=1 too).
  bool cache_read_only = false;
  /// gemm(): copy an operand whose pointer, pitch or batch stride allow fewer than 8 bytes per access
  /// into stream-ordered scratch with 16-byte pitches first (GemmProblem::staged), so full-width kernels
  /// run on it. Off: such calls run the narrow-copy kernels of their alignment.
  bool stage_narrow_operands = true;
  /// gemm() on an sm_90 GPU (H100, H200): f16/bf16 problems in any layout with 16-byte aligned pointers
  /// and pitches, one matrix and enough work units (128x128 tiles, times K slices where few tiles make it
  /// split K; gemm_sm90_preferred) run the Hopper kernel (TMA, wgmma, warp-specialized, persistent,
  /// split-K through an f32 workspace; templates/gemm_sm90.cuh) instead of the mma.sync family,
  /// unless a GemmConfig is passed. That kernel is the built-in family "gemm_sm90" (find_family), which
  /// gemm() runs through run_family: its configuration is the family's tuned winner (autotune_gemm tunes
  /// the family for these problems on such a GPU; TuneOnMiss tunes on a miss), else its default.
  /// Off: always the mma.sync family, and autotune_gemm tunes the mma.sync space.
  bool hopper_gemm = true;
};

/// A transpose problem: `batch` row-major R x C matrices, out[b][c][r] = in[b][r][c].
/// Pitches and strides are in elements; 0 means "packed" (ld_in = cols, ld_out = rows,
/// stride_in = rows * ld_in, stride_out = cols * ld_out).
struct TransposeProblem {
  DType dtype = DType::F32;
  long long rows = 0;
  long long cols = 0;
  long long ld_in = 0;
  long long ld_out = 0;
  long long batch = 1;
  long long stride_in = 0;
  long long stride_out = 0;

  /// The same problem with every 0 replaced by its packed value; throws InvalidArgument naming the
  /// field for negative sizes, pitches smaller than a row, or element counts past 2^62.
  TransposeProblem resolved() const;
  /// Largest vector width in bytes (1..16, a power of two) that the pointers, pitches and strides
  /// allow: a config's vec * elem bytes must not exceed it.
  int max_vec_bytes(DevicePtr in, DevicePtr out) const;
  /// Canonical text used as the tuning key, e.g. "f32 16384x8192 batch=1 ld=8192,16384 stride=0,0 align=16".
  std::string key(int max_vec_bytes) const;
};

// --- GEMM ---------------------------------------------------------------------------------------

/// Storage order of a GEMM matrix.
enum class MatrixOrder { RowMajor, ColMajor };

/// C = alpha * A * B + beta * C with A M x K, B K x N, C M x N, each stored row- or column-major with
/// its leading dimension (elements between rows, resp. columns); 0 means packed. With batch > 1 the
/// matrices of the batch are stride_* elements apart (0 = packed). dtype: f32 (out f32, SGEMM) or f16 /
/// bf16 (out f16, bf16 or f32, HGEMM with f32 accumulation).
struct GemmProblem {
  DType dtype = DType::F32;
  DType out_dtype = DType::F32;
  long long m = 0, n = 0, k = 0;
  MatrixOrder a_order = MatrixOrder::RowMajor;
  MatrixOrder b_order = MatrixOrder::RowMajor;
  MatrixOrder c_order = MatrixOrder::RowMajor;
  long long lda = 0, ldb = 0, ldc = 0;
  long long batch = 1;
  long long stride_a = 0, stride_b = 0, stride_c = 0;

  /// Every 0 replaced by its packed value; throws InvalidArgument naming the field (negative sizes,
  /// pitches below a row, overlapping batch strides, sizes past 2^31 - 1) and Unsupported for dtype pairs.
  GemmProblem resolved() const;
  /// The problem gemm() runs for operands at `a` and `b` (resolved): an operand whose pointer, pitch or
  /// batch stride allow fewer than 8 bytes per access (K > 0, staged copy <= 1 GiB) gets the packed pitch
  /// (its line rounded up to 16 bytes) and stride of its staged copy, and *stage_a / *stage_b say so.
  /// Pass 0 for a pointer to judge pitches only (as the autotuner does).
  GemmProblem staged(DevicePtr a, DevicePtr b, bool* stage_a, bool* stage_b) const;
  /// The kernel layout this problem runs as (C column-major is computed as C^T = B^T A^T).
  GemmLayout kernel_layout() const;
  /// Largest global access width in bytes (2..16) the A and B pointers, pitches and strides allow.
  int max_vec_bytes(DevicePtr a, DevicePtr b) const;
  /// e.g. "f16>f32 4096x4096x4096 A=row B=col C=row ld=4096,4096,4096 batch=1 align=16".
  std::string key(int max_vec_bytes) const;
};

/// Device scratch a caller lends gemm() (as cuBLASLt's workspace): 256-byte aligned, `bytes` long, used in
/// stream order on the call's stream (the caller must not use it on another stream until that work is
/// done). Without one (ptr = 0) gemm() allocates what it needs from the engine's stream-ordered pool.
struct GemmWorkspace {
  DevicePtr ptr = 0;
  std::size_t bytes = 0;
};

/// Device scratch a caller lends Engine::run_family for a family's scratch buffers (BufferRole::Scratch):
/// 256-byte aligned, `bytes` long (Engine::family_workspace_size), used in stream order on the call's
/// stream. Without one (ptr = 0) the engine allocates from its own stream-ordered pool.
struct FamilyWorkspace {
  DevicePtr ptr = 0;
  std::size_t bytes = 0;
};

/// A good configuration without tuning for a problem's shape, dtype, layout and alignment on `arch`
/// (empty = any sm_80+). Unsupported dtype pairs throw Error(Unsupported).
GemmConfig default_gemm_config(const GemmProblem& problem, int max_vec_bytes, const std::string& arch = {});

namespace detail {
struct GemmState;     // runtime/engine/engine_gemm.cpp
struct EngineAccess;  // runtime/engine/engine_impl.hpp: the library's own access to the counters
}

// --- end GEMM -------------------------------------------------------------------------------------

/// Event counts since the engine was made (the cache's own counters are in cache().counters()).
struct EngineCounters {
  std::uint64_t compiles = 0;        ///< NVRTC compiles this process ran
  std::uint64_t kernel_loads = 0;    ///< kernels (modules) this engine loaded and keeps, GEMM ones included
  std::uint64_t tuned_hits = 0;      ///< problems whose tuned winner came from the cache
  std::uint64_t tuned_misses = 0;    ///< problems with no cached winner
  std::uint64_t tunes = 0;           ///< autotuner runs
  std::uint64_t benchmark_runs = 0;  ///< candidate benchmarks (all tunes)
  /// Kernels launched for transposes and declared families: every GEMM kernel counts here too, being the
  /// built-in families' (gemm_sm90, sgemm, hgemm); the staging copies and the reference do not.
  std::uint64_t launches = 0;
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineOptions& options() const noexcept;
  /// The cache (a memory-only one when options().use_cache is false).
  Cache& cache();
  EngineCounters counters() const;

  // --- transpose: the typed API over the built-in family "transpose" (compile_family, family_config,
  // autotune_family: the same kernels, cache entries and stored winners; runtime/engine/engine.cpp) ---

  /// Compile `cfg` for `arch` ("" = this engine's device), from the cache when possible.
  /// Works without a GPU when `arch` is given.
  KernelEntry compile_transpose(const TransposeConfig& cfg, const std::string& arch = {});
  /// The kernel of `cfg`, loaded on this engine's device.
  Kernel transpose_kernel(const TransposeConfig& cfg);

  /// The configuration a call would use: the cached winner, else (TuneOnMiss) a fresh tune, else
  /// the default for the problem's dtype and alignment.
  TransposeConfig transpose_config(const TransposeProblem& problem, DevicePtr in, DevicePtr out);
  /// out = transpose(in) on `stream`; `config` overrides the choice (it must fit the alignment:
  /// an InvalidArgument error says which width would). R or C = 0 (or batch = 0) does nothing.
  void transpose(const TransposeProblem& problem, DevicePtr in, DevicePtr out, CUstream stream,
                 const TransposeConfig* config = nullptr);
  /// Launch exactly `cfg` (no choice, no alignment fallback): for tools, tests and the tuner.
  void launch_transpose(const TransposeConfig& cfg, const TransposeProblem& problem, DevicePtr in, DevicePtr out,
                        CUstream stream);

  /// The tuning key of a problem on this engine's device: the transpose family's (operation
  /// "family:transpose"); winners the typed tuner of earlier versions stored are read as a fallback.
  TuningProblemKey transpose_tuning_key(const TransposeProblem& problem, int max_vec_bytes);

  // --- GEMM (runtime/engine/engine_gemm.cpp) -------------------------------------------------------------

  /// Compile `cfg` for `arch` ("" = this engine's device), from the cache when possible; works
  /// without a GPU when `arch` is given. HGEMM on an arch below sm_80: Error(Unsupported).
  KernelEntry compile_gemm(const GemmConfig& cfg, const std::string& arch = {});
  /// The kernel of `cfg`, loaded on this engine's device (dynamic shared memory limit raised).
  Kernel gemm_kernel(const GemmConfig& cfg);
  /// The mma.sync configuration gemm() would use for a problem (after staging narrow operands, so for the
  /// staged problem when there are any): the built-in family sgemm's or hgemm's choice (family_config):
  /// the cached tuned winner (autotune_gemm), else (TunePolicy::TuneOnMiss) a fresh tune, else
  /// default_gemm_config. The choice is remembered per problem for the engine's life. (Where the Hopper variant runs instead, see
  /// EngineOptions::hopper_gemm, this is what would run with it off.)
  GemmConfig gemm_config(const GemmProblem& problem, DevicePtr a, DevicePtr b);
  /// The tuning key of a GEMM problem's mma.sync winners on this engine's device: the built-in family
  /// sgemm's or hgemm's (operation "family:sgemm" / "family:hgemm", the problem in the kernels' frame).
  TuningProblemKey gemm_tuning_key(const GemmProblem& problem, int max_vec_bytes);
  /// C = alpha * A * B + beta * C on `stream`. `config` overrides the choice; it must match the
  /// problem's dtypes and kernel layout and fit its alignment, after staging (InvalidArgument says which
  /// vec would). Narrow operands are staged (EngineOptions::stage_narrow_operands; GemmProblem::staged).
  /// M or N = 0 (or batch = 0) does nothing; K = 0 writes beta * C (beta = 0: zeros, C never read).
  /// A NaN or infinite alpha or beta is an InvalidArgument error, before any device work.
  void gemm(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, float alpha, float beta,
            CUstream stream, const GemmConfig* config = nullptr);
  /// gemm() using the caller's `workspace` for its scratch (staged copies of narrow operands, the split-K
  /// f32 partials) instead of allocating. A workspace below the call's minimum (the staged copies and
  /// one matrix of split-K partials; for the Hopper kernel's split-K all of gemm_workspace_size()) is an
  /// InvalidArgument error naming both sizes; one below gemm_workspace_size() still works on the mma.sync
  /// family, with more split-K launches.
  void gemm(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, float alpha, float beta,
            CUstream stream, const GemmConfig* config, const GemmWorkspace& workspace);
  /// Bytes of device scratch gemm() with these arguments uses (0 for most calls: only narrow operands and
  /// split-K configs need any). Chooses the config as gemm() would (a tune under TuneOnMiss).
  std::size_t gemm_workspace_size(const GemmProblem& problem, DevicePtr a, DevicePtr b,
                                  const GemmConfig* config = nullptr);
  /// Launch exactly `cfg` (no choice, no alignment fallback): for tools, tests and the tuner. A split-K
  /// `cfg` uses `workspace` when one is given.
  void launch_gemm(const GemmConfig& cfg, const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c,
                   float alpha, float beta, CUstream stream, const GemmWorkspace& workspace = {});
  /// The trusted reference (templates/gemm_reference.cuh): one thread per element, f64 (or f32) sums.
  void gemm_reference(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, float alpha, float beta,
                      CUstream stream, bool f64_accumulate = true);
  /// Number of GEMM launches (fast kernels and reference) this engine made: an mma.sync call counts each
  /// kernel (one per 65535 matrices, and with split-K the reduction after each); a call on the Hopper
  /// kernel counts once, with its split-K reduction where it has one.
  std::uint64_t gemm_launches() const;

  // --- declared families (include/swzjit/family.hpp; runtime/engine/engine_family.cpp) -----------

  /// Compile `config` of `family` for `arch` ("" = this engine's device), from the cache when possible
  /// (the key covers the family's source bytes); works without a GPU when `arch` is given (an
  /// arch-specific family compiles for its "a" target: sm_90a). `problem` is needed when a template
  /// argument names a type dim (its element type), and always for a family with a program (its kernel's
  /// name follows the problem; FamilyProgram::before_compile runs first).
  /// @throws Error(Unsupported) outside the family's min_arch..max_arch, Error(Compile) with NVRTC's log.
  KernelEntry compile_family(const Family& family, const FamilyValues& config, const std::string& arch = {},
                             const FamilyValues& problem = {});
  /// The configuration run_family() would use: the cached tuned winner for this exact definition, else
  /// (TunePolicy::TuneOnMiss) a fresh tune, else family.default_config(problem). Remembered per problem.
  FamilyValues family_config(const Family& family, const FamilyValues& problem);
  /// Launches the family's kernel on `stream` with `buffers` (a device pointer for every buffer of the
  /// definition, by name). `config` overrides the choice (it must satisfy the constraints). The family's
  /// aligns are computed from the pointers (a value `problem` gives for one may only lower it).
  /// The kernel is followed on `stream` by the family's `then` launches (FamilyDef::then); a family with a
  /// program launches what its plan says, bound over these pointers. Its scalars take their defaults;
  /// scratch comes from the engine's stream-ordered pool.
  void run_family(const Family& family, const FamilyValues& problem, const std::map<std::string, DevicePtr>& buffers,
                  CUstream stream, const FamilyValues* config = nullptr);
  /// run_family() with the values of the family's scalars (FamilyScalar: alpha, beta, ...; one not given
  /// takes its default) and, optionally, the caller's `workspace` for the scratch buffers instead of the
  /// engine's pool (256-byte aligned, at least family_workspace_size() bytes, used in stream order on
  /// `stream`). Scratch buffers are never in `buffers`: the engine places them.
  /// @throws InvalidArgument for an unknown scalar, a workspace too small (naming both sizes) or misaligned.
  void run_family(const Family& family, const FamilyValues& problem, const std::map<std::string, DevicePtr>& buffers,
                  const FamilyScalars& scalars, CUstream stream, const FamilyValues* config = nullptr,
                  const FamilyWorkspace& workspace = {});
  /// Bytes of scratch the run_family() call with these arguments needs (0 for a family without scratch
  /// buffers, or whose program plans none): the scratch of the configuration it would use (`config`, else
  /// family_config()), for this engine's device. `buffers`
  /// gives the pointers the family's aligns are measured from, as in run_family (an align whose buffer
  /// is not given takes the problem's value for it, else 16).
  std::size_t family_workspace_size(const Family& family, const FamilyValues& problem,
                                    const std::map<std::string, DevicePtr>& buffers = {},
                                    const FamilyValues* config = nullptr);
  /// Launches the family's reference kernel (what tuning compares candidates with).
  void run_family_reference(const Family& family, const FamilyValues& problem,
                            const std::map<std::string, DevicePtr>& buffers, CUstream stream);
  /// The reference with the values of the family's scalars (the others take their defaults).
  void run_family_reference(const Family& family, const FamilyValues& problem,
                            const std::map<std::string, DevicePtr>& buffers, const FamilyScalars& scalars,
                            CUstream stream);
  /// The tuning key of a family problem on this engine's device (operation "family:NAME").
  TuningProblemKey family_tuning_key(const Family& family, const FamilyValues& problem);

  struct Impl;  ///< opaque (runtime/engine/engine_impl.hpp)

 private:
  friend struct detail::EngineAccess;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<detail::GemmState> gemm_;  // created on first GEMM use (atomic shared_ptr access)
  detail::GemmState& gemm_state();
};

/// A good configuration without tuning: the shape that won on the H100 for the dtype, its vector
/// width (8 bytes for 4-byte types, 4 for 2-byte types) or less where the alignment forces it, a conflict-free swizzle chosen by static analysis.
TransposeConfig default_transpose_config(DType dtype, int max_vec_bytes);

}  // namespace swz
