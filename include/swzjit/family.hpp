// swzjit public API: kernel families an application defines at run time (or ships as a .family file)
// from its own CUDA template; they are generated, analysed, compiled, cached, tuned (in the isolated
// worker) and launched by the same machinery as the built-in kernels (docs/ARCHITECTURE.md, "Families").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "swzjit/analysis/bank.hpp"
#include "swzjit/types.hpp"

namespace swz {

/// Values by name: a problem's dimensions, or a configuration's parameters.
using FamilyValues = std::map<std::string, long long>;

/// A tunable template parameter: an identifier, its candidate values (the search space is the product
/// of every parameter's values, less what `constraints` rule out) and the value used without tuning.
struct FamilyParam {
  std::string name;
  std::vector<long long> values;
  long long default_value = 0;
};

enum class BufferRole { Input, Output };

/// A device buffer a launch reads or writes. `elements` is an integer expression over the problem's
/// dimensions (e.g. "batch * rows * cols"). For verification, inputs are filled with random values in
/// [-1, 1); outputs are poisoned, surrounded by guard regions, and compared with the reference's.
struct FamilyBuffer {
  std::string name;
  DType dtype = DType::F32;
  std::string elements;
  BufferRole role = BufferRole::Input;
};

/// One kernel launch. Expressions are integer expressions over the problem's dimensions and the
/// configuration's parameters: + - * / % (C semantics on 64-bit integers), comparisons, && || !,
/// parentheses, and the functions min, max, ceil_div, pow2 (1 << x), log2 (of a power of two).
struct FamilyLaunch {
  std::string kernel;                      ///< the __global__ template's name, e.g. "my::rowsum"
  std::vector<std::string> template_args;  ///< expressions, or C++ type names (float, __half, ...)
  /// Kernel arguments in order: a buffer's name passes its pointer; any other text is an expression
  /// passed as a 64-bit integer (`long long`), or as a 32-bit `int` when written "int:EXPR".
  std::vector<std::string> args;
  std::vector<std::string> grid;   ///< 1 to 3 expressions (x, y, z)
  std::vector<std::string> block;  ///< 1 to 3 expressions
  std::string dynamic_smem = "0";  ///< bytes
};

/// The shared-memory instructions of a configuration's kernel as one warp issues them, for the static
/// bank analysis (the bank model of docs/ARCHITECTURE.md): typically built from the same constexpr index
/// functions the template uses. Configurations whose instructions cost excess wavefronts are left out
/// of a tune unless TuneOptions::keep_conflicted.
using SmemAccessMap = std::function<std::vector<SmemInstruction>(const FamilyValues& config)>;

/// Everything the library needs to know about a family. Text form (FamilyDef::parse / to_text):
///
///     family  = rowsum                    # lowercase identifier
///     about   = row sums of a batch of matrices
///     dims    = batch rows cols
///     param   BLOCK_ROWS = 32 64 128 256 ; default 128
///     param   SWIZZLE = 0 1 ; default 1
///     require = BLOCK_ROWS <= 1024       # one line per constraint
///     buffer  in  = f32 [batch * rows * cols] input
///     buffer  out = f32 [batch * rows] output
///     kernel  = rowsum<BLOCK_ROWS, SWIZZLE>(in, out, rows, cols)
///     grid    = ceil_div(rows, BLOCK_ROWS), batch
///     block   = BLOCK_ROWS
///     smem    = BLOCK_ROWS * 32 * 4
///     reference = rowsum_reference<>(in, out, rows, cols)
///     reference.grid  = ceil_div(rows, 128), batch
///     reference.block = 128
///     tolerance = 1e-5
///     source  = rowsum.cuh                # a file, relative to the description; or, last:
///     --- source                          # every following line is the CUDA source
struct FamilyDef {
  std::string name;
  std::string about;
  /// The CUDA C++ translation unit. It may #include the library's headers by name ("swizzle.cuh",
  /// "common.cuh"); every byte of it is part of the cache key of the family's kernels.
  std::string source;
  std::string source_name = "family.cu";  ///< the file name NVRTC reports in diagnostics
  std::vector<std::string> dims;
  std::vector<FamilyParam> params;
  /// Expressions over dims and params that a configuration must satisfy for a problem (nonzero).
  std::vector<std::string> constraints;
  std::vector<FamilyBuffer> buffers;
  FamilyLaunch launch;
  /// A trusted (simple) kernel writing the same outputs: each candidate's outputs are compared with
  /// its outputs by relative Frobenius error, per output buffer. Required for tuning and verify().
  FamilyLaunch reference;
  double tolerance = 1e-5;
  /// Lowest compute capability the template compiles for (80 = sm_80).
  int min_arch = 80;
  /// Optional (not part of the text form, so the `swz` tool and the worker do not have it).
  SmemAccessMap smem_accesses;

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

/// One evaluated kernel argument: a buffer's pointer (by its index in FamilyDef::buffers), or an integer.
struct FamilyKernelArg {
  enum Kind { Buffer, Int64, Int32 } kind = Int64;
  int buffer = -1;
  long long value = 0;
};

/// The static bank analysis of one configuration (empty when the family gives no SmemAccessMap).
struct FamilyBankReport {
  bool analysed = false;
  int instructions = 0;
  int wavefronts = 0, ideal_wavefronts = 0, excess_wavefronts = 0;
  std::vector<BankReport> per_instruction;
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

  /// "rows=100,cols=64,batch=2" -> values; every dim required, each given once, each >= 0.
  FamilyValues parse_problem(const std::string& text) const;
  /// "BLOCK_ROWS=64,SWIZZLE=1" -> values; params not given take their default.
  FamilyValues parse_config(const std::string& text) const;
  /// Canonical text of a problem (dims in declaration order) / configuration (params in order).
  std::string problem_text(const FamilyValues& problem) const;
  std::string config_text(const FamilyValues& config) const;
  /// Throws InvalidArgument naming the dim that is missing, unknown or negative.
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
  FamilyLaunchShape reference_shape(const FamilyValues& problem) const;
  /// The name expression of a configuration (no problem needed: template arguments use params only).
  std::string name_expression(const FamilyValues& config) const;
  /// The kernel's (or reference's) arguments for `config` on `problem`, in order.
  std::vector<FamilyKernelArg> kernel_args(const FamilyValues& config, const FamilyValues& problem) const;
  std::vector<FamilyKernelArg> reference_args(const FamilyValues& problem) const;
  /// The reference's name expression ("" when the family has no reference).
  std::string reference_name_expression() const;
  /// Elements of each buffer for `problem`, in the order of def().buffers.
  std::vector<long long> buffer_elements(const FamilyValues& problem) const;

  FamilyBankReport analyze(const FamilyValues& config) const;

  /// XXH3-128 of the source bytes; part of every kernel key of the family.
  const std::string& source_hash() const noexcept;
  /// XXH3-128 of the whole text form: a stored winner is valid only for the exact definition (space,
  /// requirements, launch, source) that produced it.
  const std::string& definition_hash() const noexcept;

 private:
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
