// swzjit public API: kernel families an application defines at run time (or ships as a .family file)
// from its own CUDA template; they are generated, analysed, compiled, cached, tuned (in the isolated
// worker) and launched by the same machinery as the built-in kernels (docs/ARCHITECTURE.md, "Families").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swzjit/analysis/bank.hpp"
#include "swzjit/types.hpp"

namespace swz {

/// Values by name: a problem's dimensions, or a configuration's parameters. A type dim's value is the
/// code of its DType (static_cast<long long>(DType::F16)); its text form is the DType's name ("f16").
using FamilyValues = std::map<std::string, long long>;

/// A problem value computed from a buffer's device pointer: the largest power-of-two byte alignment of
/// the pointer, capped at 16 (kFamilyMaxAlign). It is part of the problem (and so of the problem key:
/// an alignment class), usable in constraints and expressions like a dim. Engine::run_family computes
/// it from the pointers it is given; the tuner and the worker read it from the problem text (the
/// worker places its buffers at exactly that alignment).
struct FamilyAlign {
  std::string name;    ///< e.g. "align_in"
  std::string buffer;  ///< the buffer whose pointer it measures
};
constexpr long long kFamilyMaxAlign = 16;
/// Each scratch buffer of a run starts at a multiple of this many bytes of its allocation.
constexpr long long kFamilyScratchAlign = 256;

/// A float problem value (text: "scalar alpha = 1.0"), such as a GEMM's alpha and beta: a kernel
/// argument "float:alpha" or "double:alpha" passes it. It is NOT part of the problem or its tuning key
/// (a tuned winner serves every alpha and beta, so they never multiply the number of keys): the caller
/// passes its values to Engine::run_family (FamilyScalars; those it leaves out take their default), while
/// the tuner, the worker and their reference run always use the defaults. Give defaults that exercise
/// every term (beta = 0.5 rather than 0, so a candidate that ignores beta fails its check); a family
/// whose speed depends on a value (a kernel with a beta == 0 path) declares an integer dim for it.
struct FamilyScalar {
  std::string name;
  double default_value = 0;
};

/// Values of a family's scalars by name (Engine::run_family); a scalar not given takes its default.
using FamilyScalars = std::map<std::string, double>;

/// A derived problem value: an expression over dims, aligns and earlier lets, evaluated before any
/// other expression and usable wherever a dim is (not part of the problem key: it follows from it).
struct FamilyLet {
  std::string name;
  std::string expr;
};

/// A tunable template parameter: an identifier, its candidate values (the search space is the product
/// of every parameter's values, less what `constraints` rule out) and the value used without tuning:
/// `default_value`, or when `default_expr` is set, that expression over the problem's values (dims,
/// aligns, lets) and the defaults of the params declared before it (text: "; default min(4, align_in / 4)").
struct FamilyParam {
  std::string name;
  std::vector<long long> values;
  long long default_value = 0;
  std::string default_expr;
};

/// Scratch: device memory the kernels share within one run (e.g. split-K partial sums that a `then`
/// launch reduces). The engine allocates it (stream-ordered, from its own pool) unless the caller lends
/// a FamilyWorkspace; the caller never passes it by name. The worker allocates it for tuning, poisons
/// it (0xFF bytes) before every verification run and neither fills nor compares it.
/// InOut (text: "inout"): a buffer the kernels read and then overwrite, such as a GEMM's C with beta.
/// The caller passes it like an input; the worker fills it with random values like an input, gives the
/// reference the same initial values, restores them before every verification run of a candidate
/// (timing runs may leave it changed) and compares it like an output, guards included.
enum class BufferRole { Input, Output, Scratch, InOut };
/// The role's word in the text form: "input", "output", "scratch" or "inout".
const char* to_string(BufferRole r);

/// A device buffer a launch reads or writes. `elements` is an integer expression over the problem's
/// dimensions (e.g. "batch * rows * cols"); a scratch buffer's may also use the params ("SPLITS * m * n").
/// For verification, inputs are filled with random values in [-1, 1); outputs are poisoned, surrounded
/// by guard regions, and compared with the reference's; inout buffers are filled like inputs and
/// compared like outputs.
struct FamilyBuffer {
  std::string name;
  DType dtype = DType::F32;
  std::string elements;
  BufferRole role = BufferRole::Input;
  /// When set, the element type is this type dim's value for the problem (text: "buffer in = dtype [...]").
  /// Last, so that {name, dtype, elements, role} initializers written before it existed still compile.
  std::string dtype_dim;
};

/// A TMA tensor map over a buffer (text: "tensormap NAME = BUFFER dims [...] strides [...] box [...] swizzle S"),
/// for kernels that load or store tiles with the Tensor Memory Accelerator (sm_90 and later: a family with
/// one needs min_arch >= 90). A kernel argument naming it passes the 128-byte CUtensorMap, encoded with
/// cuTensorMapEncodeTiled over the buffer's pointer at each run (the engine's, the tuner's, the worker's);
/// the kernel takes it as `const __grid_constant__` 128-byte, 64-byte-aligned struct. Expressions are over
/// dims and params, like a launch's:
/// - `dims`: 1 to 5 extents in elements, the contiguous one first;
/// - `strides`: one per dim after the first, in elements between consecutive indices of that dim (each a
///   multiple of 16 bytes, below 2^40 bytes);
/// - `box`: the tile one copy moves, one extent per dim, each 1..256; the first box extent times the element
///   size must be a multiple of 16 bytes, and at most the swizzle span when swizzled;
/// - `swizzle`: 0 (none), 32, 64 or 128 bytes: the 16-byte chunks of each swizzle-span row of the tile in
///   shared memory are permuted as Swizzle<B,4,3> permutes byte offsets (B = 1, 2, 3), the pattern repeating
///   every 8 rows of 128 bytes (so the tile's shared-memory address must be aligned to 256, 512 or 1024 bytes).
/// The element type is the buffer's. Out-of-range elements of a box read as zero and are not written.
/// Every element the map spans must lie in the buffer (checked per problem), and the buffer's pointer must
/// be 16-byte aligned at each run: a family whose caller may pass less declares an align and requires it
/// (`align align_in = in`, `require = align_in >= 16`), so such calls are refused before any launch.
struct FamilyTensorMap {
  std::string name;
  std::string buffer;
  std::vector<std::string> dims;
  std::vector<std::string> strides;
  std::vector<std::string> box;
  std::string swizzle = "0";
};

/// A tensor map evaluated for a configuration and problem (Family::tensor_map_shape): what
/// cuTensorMapEncodeTiled takes, less the pointer.
struct FamilyTensorMapShape {
  int buffer = -1;  ///< index in FamilyDef::buffers
  DType dtype = DType::F32;
  int rank = 1;
  unsigned long long dims[5] = {1, 1, 1, 1, 1};
  unsigned long long stride_bytes[4] = {0, 0, 0, 0};  ///< of dims 1..rank-1
  unsigned box[5] = {1, 1, 1, 1, 1};
  int swizzle_bytes = 0;
};

/// The name a launch's grid and arguments use for the number of SMs of the device it runs on (a persistent
/// kernel: "grid = min(tiles, sm_count)"). The engine, the tuner and the worker add it to the values they
/// evaluate launches with; code that calls Family::shape, kernel_args and the like itself adds it to
/// `problem` (with_sm_count). Not part of the problem or its tuning key (that names the device already);
/// template arguments, the block, shared memory, constraints, param defaults, buffer sizes and tensor maps
/// may not use it, so a family's kernels, space and buffers are the same on every device (Family's
/// check_config evaluates the grid with sm_count = 1 when the problem gives none). Reserved: no dim,
/// param, buffer or other name of a family may take it.
constexpr const char* kFamilySmCount = "sm_count";
/// `problem` with the device's SM count added as launches are evaluated (kFamilySmCount).
inline FamilyValues with_sm_count(FamilyValues problem, int sm_count) {
  problem[kFamilySmCount] = sm_count;
  return problem;
}
/// The name under which the engine and the tuner give a program family's default_config and space
/// (FamilyProgram) the device's peak DRAM bandwidth in GB/s (DeviceInfo::dram_gbps), beside its SM count: the
/// Hopper GEMM splits K for skinny problems where the bandwidth per SM is high. Like kFamilySmCount, not part
/// of the problem or its tuning key (that names the device) and reserved; launches and expressions do not
/// read it. Absent or 0: not known (a program then chooses as for the devices it was measured on first).
constexpr const char* kFamilyDramGBps = "dram_gbps";
/// `problem` with the device's SM count and peak DRAM bandwidth (kFamilySmCount, kFamilyDramGBps).
inline FamilyValues with_device(FamilyValues problem, int sm_count, int dram_gbps) {
  problem[kFamilySmCount] = sm_count;
  problem[kFamilyDramGBps] = dram_gbps;
  return problem;
}

/// One kernel launch. Expressions are integer expressions over the problem's dimensions and the
/// configuration's parameters (grid and arguments also sm_count, kFamilySmCount): + - * / % (C semantics on
/// 64-bit integers), comparisons, && || !,
/// parentheses, and the functions min, max, ceil_div, pow2 (1 << x), log2 (of a power of two), abs,
/// elem_bytes (of a type dim's value) and pow2_align (the largest power of two <= 16 dividing x; 16 for 0).
struct FamilyLaunch {
  std::string kernel;                      ///< the __global__ template's name, e.g. "my::rowsum"
  /// Expressions over params and type dims, a type dim's name (expanded to float, __half or
  /// __nv_bfloat16), or C++ type names (float, __half, ...).
  std::vector<std::string> template_args;
  /// Kernel arguments in order: a buffer's name passes its pointer; a tensor map's name passes the map
  /// (FamilyTensorMap: 128 bytes, 64-byte aligned, also as a field of a packed struct); any other text is an expression
  /// passed as a 64-bit integer (`long long`), or as a 32-bit `int` when written "int:EXPR". A float
  /// argument is "float:X" (a 32-bit float) or "double:X", X a scalar's name or a float literal
  /// ("float:alpha", "double:0.5"): the expression language is integer, so a float is never computed.
  std::vector<std::string> args;
  /// The kernel takes `args` as ONE struct passed by value (text: "name<...>({a, b, c})"): fields in
  /// order, each at its natural alignment (pointers and long long 8 bytes, int 4), as C lays them out.
  bool packed = false;
  std::vector<std::string> grid;   ///< 1 to 3 expressions (x, y, z)
  std::vector<std::string> block;  ///< 1 to 3 expressions
  std::string dynamic_smem = "0";  ///< bytes
};

/// The shared-memory instructions of a configuration's kernel as one warp issues them, for the static
/// bank analysis (the bank model of docs/ARCHITECTURE.md): typically built from the same constexpr index
/// functions the template uses. Configurations whose instructions cost excess wavefronts are left out
/// of a tune unless TuneOptions::keep_conflicted. Family::analyze passes the params together with the
/// problem's values when it is given one.
using SmemAccessMap = std::function<std::vector<SmemInstruction>(const FamilyValues& config)>;

/// The candidates a tune tries for a problem, instead of the product of every param's values (each is
/// still checked against the params' values and the constraints): for a space a family's own C++ picks,
/// such as transpose's conflict-free swizzles chosen by static analysis. Only the engine's process
/// enumerates a space, so like SmemAccessMap it is not part of the text form.
using FamilySpaceFn = std::function<std::vector<FamilyValues>(const FamilyValues& problem)>;

/// Where an earlier version of the library stored a family's winners, for a built-in family that took
/// over an operation the typed API tuned before (transpose): the tuning key's operation and problem text,
/// the space id, and how to read the stored config text (nullopt: unusable). Engine::family_config reads
/// it when the family's own key has no winner, so a cache tuned by that version keeps its winners.
struct FamilyLegacyWinner {
  std::string operation;
  std::string problem;
  std::string space_id;
  std::function<std::optional<FamilyValues>(const std::string& config)> parse;
};
using FamilyLegacyWinnerFn = std::function<std::optional<FamilyLegacyWinner>(const FamilyValues& problem)>;

/// TEST-ONLY: a misbehaving kernel with the launch's signature that a tune runs instead of a candidate
/// named in TuneOptions::inject ("fault", "hang", "wrong" or "oob"): its CUDA source and name expression.
struct FamilyStandIn {
  std::string source;
  std::string name_expression;
};
using FamilyStandInFn = std::function<FamilyStandIn(const std::string& mode, const FamilyValues& problem)>;

struct FamilyProgram;  // below: C++ launches, for the library's own families

/// Everything the library needs to know about a family. Text form (FamilyDef::parse / to_text); '#'
/// starts a comment, except in the source:
///
///     family  = rowsum                        # a lowercase identifier
///     about   = row sums of a batch of matrices
///     dims    = batch rows cols               # "NAME:type" declares a type dim (f32, f16, bf16)
///     align   align_in = in                   # the pointer alignment of buffer in (bytes, <= 16)
///     let     n = batch * rows                # a derived problem value
///     param   BLOCK_ROWS = 32 64 128 256 ; default 64   # values may be ranges (0..3); the default
///                                                       # an expression (default min(128, rows))
///     param   LAYOUT = 0 1 2 ; default 2
///     require = batch <= 65535                # one line per constraint
///     buffer  in  = f32 [batch * rows * cols] input
///     buffer  out = f32 [batch * rows] output
///     kernel  = swz::tpl::rowsum_kernel<BLOCK_ROWS, LAYOUT>(in, out, rows, cols)   # ({...}): one struct
///     grid    = max(1, ceil_div(rows, BLOCK_ROWS)), max(1, batch)
///     block   = BLOCK_ROWS
///     smem    = BLOCK_ROWS * (32 + (LAYOUT == 2)) * 4
///     reference = swz::tpl::rowsum_reference(in, out, rows, cols)
///     reference.grid  = max(1, ceil_div(rows, 128)), max(1, batch)
///     reference.block = 128
///     tolerance = 1e-5                        # relative Frobenius error, > 0
///     source  = rowsum.cuh                    # a file, relative to the description
///
/// or, instead of `source = FILE`, a last line "--- source" (alone on its line) followed by the CUDA source.
///
/// The optional lines for GEMM-like families (see FamilyScalar, BufferRole::Scratch and InOut,
/// FamilyDef::then, FamilyDef::dtype_tolerance):
///
///     scalar  alpha = 1.0                     # a float value run_family takes; "float:alpha" passes it
///     buffer  ws = f32 [SPLITS * rows] scratch   # the engine's memory; elements may use params
///     buffer  c = f32 [rows] inout               # read and overwritten (C with beta): BufferRole::InOut
///     then    = my::reduce<SPLITS>(ws, out, rows, float:alpha)   # a second launch, after the kernel
///     then.grid  = ceil_div(rows, 128)
///     then.block = 128
///     then.smem  = 0
///     tolerance f16 = 2e-3                    # for output buffers of that element type
///
/// and for kernels that copy tiles with TMA (FamilyTensorMap; sm_90 and later):
///
///     tensormap tin = in dims [cols, rows] strides [cols] box [TILE, TILE] swizzle 128
///     kernel  = my::tile_kernel<TILE>(tin, out, rows, cols)   # tin: a const __grid_constant__ map
///
/// and for the architecture and C++ launches (FamilyProgram; no kernel, grid, block, smem or then lines):
///
///     max_arch      = 90                      # the highest compute capability it runs on (0: none)
///     arch_specific = 1                       # compiled for sm_90a on sm_90 (then min_arch = max_arch)
///     program       = gemm_sm90/<version>     # the C++ launches' id (FamilyDef::program)
struct FamilyDef {
  std::string name;
  std::string about;
  /// The CUDA C++ translation unit. It may #include the library's headers by name ("swizzle.cuh",
  /// "common.cuh"); every byte of it is part of the cache key of the family's kernels.
  std::string source;
  std::string source_name = "family.cu";  ///< the file name NVRTC reports in diagnostics
  std::vector<std::string> dims;  ///< names; "NAME:type" for a type dim
  std::vector<FamilyAlign> aligns;
  std::vector<FamilyLet> lets;
  std::vector<FamilyParam> params;
  /// Expressions over dims and params that a configuration must satisfy for a problem (nonzero).
  std::vector<std::string> constraints;
  /// Float values the caller passes at each run (FamilyScalar); not part of the problem.
  std::vector<FamilyScalar> scalars;
  std::vector<FamilyBuffer> buffers;
  /// TMA tensor maps over buffers, which kernel arguments name (FamilyTensorMap).
  std::vector<FamilyTensorMap> tensor_maps;
  FamilyLaunch launch;
  /// Launches after `launch`, in stream order, on every run (the engine's, the tuner's timing: a
  /// candidate's time covers all of them, and the worker's): e.g. a split-K reduction. Text: a line
  /// "then = NAME<...>(ARGS)" starts one; "then.grid", "then.block", "then.smem" that follow belong to
  /// it. Like `launch`, their template arguments and shapes may use the params (they are part of the
  /// candidate).
  std::vector<FamilyLaunch> then;
  /// A trusted (simple) kernel writing the same outputs: each candidate's outputs are compared with
  /// its outputs by relative Frobenius error, per output buffer. Required for tuning and verify().
  FamilyLaunch reference;
  double tolerance = 1e-5;
  /// Per element type (text: "tolerance f16 = 2e-3"): an output buffer is compared with the tolerance
  /// of its own element type (for a buffer typed by a type dim, the problem's type) when one is given
  /// here, else with `tolerance`.
  std::map<DType, double> dtype_tolerance;
  /// Lowest compute capability the template compiles for (80 = sm_80).
  int min_arch = 80;
  /// Highest compute capability the family runs on (text "max_arch = 90"; 0: no bound), for kernels built
  /// on instructions a later architecture dropped (wgmma exists on sm_90 only).
  int max_arch = 0;
  /// Compiled for the device's architecture-specific target (text "arch_specific = 1"): sm_90a on an sm_90
  /// GPU, whose wgmma and setmaxnreg exist only there; such code runs on that exact architecture alone, so
  /// min_arch and max_arch must both name it.
  bool arch_specific = false;
  /// C++ launches instead of `launch` and `then` (FamilyProgram): for a family whose launch shapes and
  /// arguments are more than expressions can say (tensor maps whose boxes follow the configuration,
  /// arguments that depend on the pointers' alignment, the device's SM count or a fresh id per launch).
  /// Not part of the text form, which names it by `program_id` ("program = ID") instead: the worker
  /// process finds the code under that id in its own registry, which holds the library's built-in
  /// families only. So an application's family with a program is compiled, run and inspected like any
  /// other, but autotune_family refuses it (its candidates could not run isolated in the worker).
  std::shared_ptr<const FamilyProgram> program;
  /// The program's id (FamilyProgram::id), in the text form and so in definition_hash(); set with `program`.
  std::string program_id;
  /// Optional (not part of the text form, so the `swz` tool and the worker do not have it).
  SmemAccessMap smem_accesses;
  /// Optional, not part of the text form: see FamilySpaceFn.
  FamilySpaceFn space_fn;
  /// Required with a space_fn (not part of the text form): a version of the code behind it, e.g. a hash
  /// of its sources. It is part of definition_hash(), the id stored winners are valid for, so a winner
  /// chosen from another space is never used; change it whenever the space function's output changes.
  std::string space_version;
  /// Optional, not part of the text form: see FamilyLegacyWinner.
  FamilyLegacyWinnerFn legacy_winner;
  /// Optional, TEST-ONLY, not part of the text form: see FamilyStandIn. Without it, a tune refuses inject.
  FamilyStandInFn stand_in;

  /// Reads the text form. `base_dir` resolves `source = FILE`. @throws Error(InvalidArgument) naming
  /// the line and field.
  static FamilyDef parse(const std::string& text, const std::string& base_dir = "");
  /// Reads a .family file. @throws Error(InvalidArgument), also when the file cannot be read.
  static FamilyDef load(const std::string& path);
  /// The text form, the source inline after "--- source". parse(to_text()) gives an equal FamilyDef
  /// (less smem_accesses).
  std::string to_text() const;
};

/// The launch of a configuration on a problem, every expression evaluated.
struct FamilyLaunchShape {
  std::string name_expression;  ///< e.g. "rowsum<128, 1>"
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  int threads = 1;              ///< block[0] * block[1] * block[2]
  long long dynamic_smem = 0;
};

/// One launch of a run as a FamilyProgram plans it.
struct FamilyPlannedLaunch {
  FamilyLaunchShape shape;
  /// Launched as a programmatic dependent of the launch before it (Kernel::launch_dependent): it may be
  /// scheduled while that one finishes, and must wait for it (griddepcontrol.wait) before reading its results.
  bool dependent = false;
};

/// What one run of a configuration on a problem launches, known from the configuration, the problem and
/// the device's SM count alone (no pointers): what a tune compiles, what the engine loads and remembers.
struct FamilyPlan {
  /// In stream order; the first is the configuration's own kernel (Family::shape), the others its helpers
  /// (a split-K reduction). Names, blocks and shared memory may not depend on the SM count; grids may.
  std::vector<FamilyPlannedLaunch> launches;
  /// Device scratch one run needs (the engine's pool, a caller's FamilyWorkspace, the worker's own memory;
  /// 256-byte aligned; poisoned by the worker before every verification run).
  std::size_t scratch_bytes = 0;
};

/// The parameters of one launch as bytes: one entry per kernel parameter, in order (what cuLaunchKernel's
/// kernelParams point at; a __grid_constant__ struct or a 128-byte CUtensorMap is one entry).
struct FamilyLaunchParams {
  std::vector<std::vector<unsigned char>> params;
  /// Appends a trivially copyable value as the next parameter.
  template <class T> void add(const T& value) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&value);
    params.emplace_back(p, p + sizeof(T));
  }
};

/// What one run binds its launches to.
struct FamilyRunBinding {
  std::vector<unsigned long long> buffers;  ///< device pointer per def().buffers
  unsigned long long scratch = 0;           ///< FamilyPlan::scratch_bytes of device memory (0 when none)
  std::vector<double> scalars;              ///< value per def().scalars (the caller's, else the default)
  int device = 0;                           ///< the CUDA device, whose context encodes tensor maps
  int sm_count = 1;                         ///< its SMs
};

/// The static bank analysis of one configuration (empty when the family gives no SmemAccessMap).
struct FamilyBankReport {
  bool analysed = false;
  int instructions = 0;
  int wavefronts = 0, ideal_wavefronts = 0, excess_wavefronts = 0;
  std::vector<BankReport> per_instruction;
};

/// C++ launches for a family (FamilyDef::program): the library's built-in Hopper GEMM is one. The rest of
/// the definition stays declarative (problem, params, buffers, scalars, reference, tolerance), and the
/// engine, the tuner, the worker and `swz` serve it through the same code as every family.
struct FamilyProgram {
  /// The code's version (e.g. a hash of its sources): written as "program = ID" in the text form, so part
  /// of definition_hash() and of the id stored winners are valid for.
  std::string id;
  /// The launches of one run of `config` on `problem` (dims, aligns, lets) on a device of `sm_count` SMs.
  /// @throws Error(InvalidArgument) or Error(Unsupported) naming why `config` cannot run `problem`:
  /// Family::check_config reports it, so such a configuration is out of the space.
  std::function<FamilyPlan(const FamilyValues& config, const FamilyValues& problem, int sm_count)> plan;
  /// The parameters of every launch of plan(config, problem, run.sm_count) for one run.
  std::function<std::vector<FamilyLaunchParams>(const FamilyValues& config, const FamilyValues& problem,
                                                const FamilyRunBinding& run)>
      bind;
  /// Optional: readies bound parameters for one more run (a fresh launch id for counters the kernels keep
  /// in scratch). Called by the worker before each repeat of a run it bound once; the engine binds anew.
  std::function<void(std::vector<FamilyLaunchParams>& bound)> renew;
  /// Optional: the configuration used without tuning on a device of `sm_count` SMs (0: not known),
  /// instead of the params' defaults; `problem` carries the device's DRAM bandwidth (kFamilyDramGBps) where
  /// the engine or the tuner calls it. @throws Error(Unsupported) for a problem the family does not take.
  std::function<FamilyValues(const FamilyValues& problem, int sm_count)> default_config;
  /// Optional: the candidates of a tune (as FamilyDef::space_fn, for that device).
  std::function<std::vector<FamilyValues>(const FamilyValues& problem, int sm_count)> space;
  /// Optional: a static check of a configuration before its kernels are compiled (Engine::compile_family,
  /// and the engine before it loads a configuration's kernels): throws (InvalidArgument naming what is
  /// wrong) to refuse it. The Hopper GEMM proves there that its TMA boxes and wgmma descriptors agree.
  std::function<void(const FamilyValues& config, const FamilyValues& problem)> before_compile;
  /// Optional: the static bank analysis of a configuration (Family::analyze), for a program whose kernels'
  /// shared-memory index maps live in C++ (the mma.sync GEMM's analyze_gemm); a tune drops configurations
  /// with excess wavefronts, as for an SmemAccessMap.
  std::function<FamilyBankReport(const FamilyValues& config, const FamilyValues& problem)> analyze;
  /// Optional: why a tune leaves `config`, a point of the space that could run `problem`, out of its
  /// candidates ("" keeps it): a static judgement such as the mma.sync GEMM's split-K on a problem whose
  /// tiles already fill the GPU. The report lists it as skipped-static with this reason; the default
  /// config and extra configs are candidates whatever it says.
  std::function<std::string(const FamilyValues& config, const FamilyValues& problem)> skip;
};

/// One evaluated kernel argument: a buffer's pointer (by its index in FamilyDef::buffers), an integer,
/// a float (`real`; `scalar`: the index in FamilyDef::scalars it comes from, -1 for a literal), or a
/// tensor map (`tensor_map`: its index in FamilyDef::tensor_maps; encoded when the launch is packed).
struct FamilyKernelArg {
  enum Kind { Buffer, Int64, Int32, Float32, Float64, TensorMap } kind = Int64;
  int buffer = -1;
  long long value = 0;
  double real = 0;
  int scalar = -1;
  int tensor_map = -1;
};


/// A registered family: its definition checked once, with what the engine, the tuner, the worker and
/// the `swz` tool ask of every family.
class Family {
 public:
  explicit Family(FamilyDef def);  ///< validates; @throws Error(InvalidArgument) naming the field
  ~Family();
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const FamilyDef& def() const noexcept;
  const std::string& name() const noexcept;
  /// The problem's names in canonical order: the dims (without ":type"), then the aligns.
  const std::vector<std::string>& problem_names() const noexcept;
  /// True when `name` is a type dim.
  bool is_type_dim(const std::string& name) const;
  /// The element type of buffer `index` for `problem` (its type dim's value, or its fixed dtype).
  DType buffer_dtype(std::size_t index, const FamilyValues& problem) const;
  /// True when the source is nothing but #include lines of the library's templates: its kernels are then
  /// keyed by the templates hash alone, like the built-ins' generated sources (the same cache entries).
  bool source_is_templates_only() const noexcept;

  /// "rows=100,cols=64,batch=2" -> values; every dim and align required, each given once, each >= 0
  /// (a type dim by name: "dtype=f16"; an align a power of two <= 16).
  FamilyValues parse_problem(const std::string& text) const;
  /// "BLOCK_ROWS=64,SWIZZLE=1" -> values; params not given take their default.
  FamilyValues parse_config(const std::string& text) const;
  /// Canonical text of a problem (dims in declaration order) / configuration (params in order).
  std::string problem_text(const FamilyValues& problem) const;
  std::string config_text(const FamilyValues& config) const;
  /// Throws InvalidArgument naming the dim that is missing, unknown or negative. The device's SM count
  /// (kFamilySmCount, with_sm_count) may come along: it is no dim, and the methods below that take a
  /// problem pass it to a program's hooks (FamilyProgram), which size work to the device.
  void validate_problem(const FamilyValues& problem) const;
  /// "" when `config` is a point of the space that satisfies every constraint for `problem`, else why not.
  std::string check_config(const FamilyValues& config, const FamilyValues& problem) const;

  /// The configurations of the space that satisfy the requirements for `problem`, in a fixed order.
  std::vector<FamilyValues> space(const FamilyValues& problem) const;
  /// The defaults when they satisfy the requirements, else the first configuration of space().
  /// @throws Error(Unsupported) when no configuration fits the problem.
  FamilyValues default_config(const FamilyValues& problem) const;

  /// Kernel (or reference) launch shape of `config` on `problem`. @throws InvalidArgument when an
  /// expression fails (division by zero, a value out of range).
  FamilyLaunchShape shape(const FamilyValues& config, const FamilyValues& problem) const;
  /// Every launch of one run of `config` on `problem` and its scratch: the program's plan (FamilyProgram;
  /// for the SM count `problem` carries, else 1), or the kernel and its `then` launches with the scratch
  /// buffers' bytes. The engine, the tuner and the worker launch what this says.
  FamilyPlan plan(const FamilyValues& config, const FamilyValues& problem) const;
  /// A program family's parameters of every launch of plan(config, problem) for one run (FamilyProgram::bind,
  /// given the problem with its lets). @throws InvalidArgument for a family without a program.
  std::vector<FamilyLaunchParams> bind(const FamilyValues& config, const FamilyValues& problem,
                                       const FamilyRunBinding& run) const;
  FamilyLaunchShape reference_shape(const FamilyValues& problem) const;
  /// The name expression of a configuration. Template arguments use params and type dims only, so the
  /// problem is needed only when one names a type dim (InvalidArgument when it is then missing); a
  /// program's (FamilyDef::program) follows the problem, which it then needs.
  std::string name_expression(const FamilyValues& config, const FamilyValues& problem = {}) const;
  /// The kernel's (or reference's) arguments for `config` on `problem`, in order.
  std::vector<FamilyKernelArg> kernel_args(const FamilyValues& config, const FamilyValues& problem) const;
  std::vector<FamilyKernelArg> reference_args(const FamilyValues& problem) const;
  /// The reference's name expression ("" when the family has no reference). Its template arguments may use
  /// any dim (it has no configuration), so give the problem when they do.
  std::string reference_name_expression(const FamilyValues& problem = {}) const;
  /// Elements of each buffer for `problem`, in the order of def().buffers. A scratch buffer's count may
  /// use params: it is evaluated for `config`, or for default_config(problem) when `config` is empty.
  std::vector<long long> buffer_elements(const FamilyValues& problem, const FamilyValues& config = {}) const;
  /// Bytes of device scratch one run of `config` needs: every scratch buffer rounded up to 256 bytes
  /// (kFamilyScratchAlign), laid out in declaration order in one allocation (0 when there is none).
  std::size_t scratch_bytes(const FamilyValues& config, const FamilyValues& problem) const;
  /// Offsets in that allocation, per buffer of def().buffers (-1 for a buffer that is no scratch).
  std::vector<long long> scratch_offsets(const FamilyValues& config, const FamilyValues& problem) const;

  /// Tensor map `index` of def().tensor_maps evaluated for `config` on `problem`. @throws InvalidArgument
  /// naming the map and what is wrong: an extent, stride or box out of TMA's range, a first box row that is
  /// no multiple of 16 bytes or wider than the swizzle span, or a map reaching past its buffer.
  FamilyTensorMapShape tensor_map_shape(std::size_t index, const FamilyValues& config, const FamilyValues& problem) const;

  /// The `then` launches (def().then): their shapes and arguments, like shape() and kernel_args().
  std::size_t then_count() const noexcept;
  FamilyLaunchShape then_shape(std::size_t index, const FamilyValues& config, const FamilyValues& problem) const;
  std::vector<FamilyKernelArg> then_args(std::size_t index, const FamilyValues& config, const FamilyValues& problem) const;
  std::string then_name_expression(std::size_t index, const FamilyValues& config, const FamilyValues& problem = {}) const;

  /// `args` (from kernel_args, then_args or reference_args) with each scalar argument set to its value
  /// in `scalars` (the default when not given). @throws InvalidArgument for a name that is no scalar
  /// of the family, or a value that is not finite.
  std::vector<FamilyKernelArg> with_scalars(std::vector<FamilyKernelArg> args, const FamilyScalars& scalars) const;
  /// The target this family's kernels are compiled for on `arch`: `arch` itself, or for a family that is
  /// arch-specific (FamilyDef::arch_specific) its "a" variant ("sm_90" -> "sm_90a").
  std::string target_arch(const std::string& arch) const;
  /// The tolerance an output buffer of element type `t` is compared with (dtype_tolerance, else tolerance).
  double tolerance_for(DType t) const;

  /// The static bank analysis of `config`. The SmemAccessMap sees the config's params together with
  /// `problem`'s values (and lets), for a family whose accesses depend on the problem (an element type).
  FamilyBankReport analyze(const FamilyValues& config, const FamilyValues& problem = {}) const;

  /// XXH3-128 of the source bytes; part of every kernel key of the family.
  const std::string& source_hash() const noexcept;
  /// XXH3-128 of the whole text form and the space_version: a stored winner is valid only for the exact
  /// definition (space, space function, requirements, launch, source) that produced it.
  const std::string& definition_hash() const noexcept;

 private:
  std::string check_full(const FamilyValues& config, const FamilyValues& problem_with_lets) const;
  FamilyTensorMapShape map_full(std::size_t index, const FamilyValues& config, const FamilyValues& problem_with_lets) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Registers a family for this process (thread-safe) and returns it. Registering a definition whose
/// text equals a registered one returns that one.
/// @throws Error(InvalidArgument) for an invalid definition, or a name taken by a different one.
std::shared_ptr<const Family> register_family(FamilyDef def);
/// The registered family `name`, or nullptr. The library's own declarative families are registered
/// from the start (family_names() lists them).
std::shared_ptr<const Family> find_family(const std::string& name);
/// Like find_family, but throws InvalidArgument listing the registered names.
std::shared_ptr<const Family> get_family(const std::string& name);
std::vector<std::string> family_names();

}  // namespace swz
