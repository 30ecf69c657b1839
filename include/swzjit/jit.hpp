// swzjit public API: run-time compilation with NVRTC (runtime/jit/nvrtc.cpp), the embedded kernel
// templates it compiles against (runtime/jit/templates.cpp) and cubin metadata (runtime/jit/cubin.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace swz {

// --- embedded templates (docs/ARCHITECTURE.md principle 3) -----------------------------------------------

/// Hex XXH3-128 (32 lowercase hex digits) of every embedded template: for each, in name order,
/// its name and its bytes, each preceded by its length as a 64-bit little-endian integer.
/// Part of every cache key: it changes whenever any template byte changes.
std::string templates_hash();

/// Base names of the embedded templates ("common.cuh", "swizzle.cuh", ...), in embedding order.
std::vector<std::string> template_names();

// --- NVRTC compilation --------------------------------------------------------------------------

/// The targets libswzjit compiles for: "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100",
/// "sm_103", "sm_110", "sm_120", "sm_121" (each family's instructions exist on all of them). For a target
/// the loaded NVRTC has no cubin for, it emits PTX of the virtual arch (CompiledKernel::is_ptx).
const std::vector<std::string>& known_archs();
/// True if `arch` is one of known_archs().
bool is_known_arch(const std::string& arch);

/// True when NVRTC can be loaded (it is dlopened on first use: the newest libnvrtc.so.N found,
/// or $SWZJIT_LIBNVRTC). Otherwise false, with the reason and what to install in `*why`.
bool nvrtc_available(std::string* why = nullptr);
/// The NVRTC library file in use, e.g. "/usr/local/cuda/lib64/libnvrtc.so.13".
/// @throws Error(Unsupported) when NVRTC cannot be loaded.
std::string nvrtc_library_path();

/// NVRTC's (major, minor) version, e.g. (13, 0).
/// @throws Error(Unsupported) when NVRTC cannot be loaded (see nvrtc_available()).
std::pair<int, int> nvrtc_version();
/// The real architectures NVRTC can emit a cubin for, as numbers (80, 86, 90, ...).
std::vector<int> nvrtc_supported_archs();

/// One translation unit to compile. The generator produces `source` (an #include of a template
/// plus one instantiation) and `name_expression` (e.g. "swz::tpl::transpose<float, 32, 32>").
struct CompileRequest {
  std::string source;           ///< CUDA C++; may #include any embedded template by base name
  std::string source_name;      ///< the file name NVRTC reports in diagnostics ("" = "swzjit_kernel.cu")
  std::string name_expression;  ///< the __global__ function (template instantiation) to resolve
  /// Target: one of known_archs(), or "" to detect it from the device of
  /// the calling thread's current CUDA context (device 0 when none is current; needs a driver).
  std::string arch;
  std::vector<std::string> extra_options;  ///< appended after the library's own options
};

/// The result of a compile: everything needed to load it and to key it in a cache.
struct CompiledKernel {
  std::string image;            ///< cubin bytes (ELF), or PTX text when is_ptx
  bool is_ptx = false;          ///< true when NVRTC could not emit a cubin for `arch` (PTX fallback)
  std::string arch;             ///< the target the image is for, e.g. "sm_90a"
  std::string name_expression;  ///< as requested
  std::string lowered_name;     ///< the mangled symbol to look up in the module ("_Z...")
  std::vector<std::string> options;  ///< every option NVRTC was given, in order
  std::string log;              ///< NVRTC's log (warnings; empty when clean)
};

/// Compile `request` with NVRTC, every embedded template available as a header.
/// Options are explicit and returned; no fast math (numerics are IEEE: --ftz=false,
/// --prec-div=true, --prec-sqrt=true, --fmad=true). Emits a cubin for `arch`, or PTX for the
/// matching virtual architecture when nvrtc_supported_archs() lacks it.
/// @throws Error(InvalidArgument) for an unknown arch or an empty source / name expression;
///         Error(Compile) with log, options, source and source name when NVRTC rejects the source
///         or the name expression names no __global__ function; Error(NoDevice) when `arch` is
///         empty and no GPU can be queried.
CompiledKernel compile(const CompileRequest& request);

/// The options compile(request) would pass to NVRTC, in order, without compiling (cache keys are
/// computed from them before a compile is needed).
std::vector<std::string> compile_options(const CompileRequest& request);

// --- cubin metadata, no GPU needed ----------------------------------------------------------

/// Resource usage of one kernel, read from the cubin's ELF sections (.nv.info attributes and the
/// kernel's .nv.shared section) -- the same numbers ptxas prints with -v and the driver reports
/// through cuFuncGetAttribute, available without a GPU.
struct CubinResources {
  std::string kernel;         ///< lowered name
  int registers = 0;          ///< registers per thread (EIATTR_REGCOUNT)
  int static_smem_bytes = 0;  ///< statically declared __shared__ bytes per block (no dynamic smem)
  /// Local memory per thread (stack frame, EIATTR_FRAME_SIZE): register spills plus local arrays.
  /// Greater than 0 means the kernel touches local memory; ptxas's split into spill stores/loads
  /// is not recorded in the cubin.
  int local_bytes = 0;
  int max_threads_per_block = 0;  ///< from __launch_bounds__ / maxntid, 0 when unconstrained
  /// Bytes of the kernel's machine code (its .text.<kernel> section: 16 bytes a SASS instruction from sm_70 on;
  /// 0 where the cubin has no such section). Code size drives NVRTC's compile time: ptxas's time grows with it.
  long long code_bytes = 0;
};

/// Read `lowered_name`'s resources from a cubin image.
/// @throws Error(InvalidArgument) when `cubin` is not a CUDA ELF image or lacks the kernel.
CubinResources cubin_resources(const std::string& cubin, const std::string& lowered_name);
/// Same for a compile result. @throws Error(Unsupported) for a PTX image (load it on a GPU and use
/// Kernel::attributes() instead).
CubinResources cubin_resources(const CompiledKernel& kernel);

}  // namespace swz
