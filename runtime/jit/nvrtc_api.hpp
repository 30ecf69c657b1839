// runtime (internal): NVRTC loaded lazily with dlopen, like the driver (runtime/driver/driver_api.hpp):
// its entry-point table, where it is searched, and the seams tests use. Only runtime/ and tests include it.
#pragma once

#include <nvrtc.h>  // types and constants only: nothing links libnvrtc

#include <memory>
#include <string>
#include <vector>

namespace swz {
namespace detail {

// Every NVRTC entry point the library calls. Their signatures are unchanged from CUDA 11.2 to 13,
// so one build serves any of those NVRTCs.
#define SWZ_NVRTC_ENTRY_POINTS(X) \
  X(nvrtcVersion)                 \
  X(nvrtcGetErrorString)          \
  X(nvrtcGetNumSupportedArchs)    \
  X(nvrtcGetSupportedArchs)       \
  X(nvrtcCreateProgram)           \
  X(nvrtcDestroyProgram)          \
  X(nvrtcAddNameExpression)       \
  X(nvrtcCompileProgram)          \
  X(nvrtcGetProgramLogSize)       \
  X(nvrtcGetProgramLog)           \
  X(nvrtcGetLoweredName)          \
  X(nvrtcGetCUBINSize)            \
  X(nvrtcGetCUBIN)                \
  X(nvrtcGetPTXSize)              \
  X(nvrtcGetPTX)

/// The loaded NVRTC: one pointer per entry point, plus the file it came from.
struct NvrtcApi {
#define SWZ_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  SWZ_NVRTC_ENTRY_POINTS(SWZ_NVRTC_MEMBER)
#undef SWZ_NVRTC_MEMBER
  std::string path;  ///< the library dlopen loaded, e.g. "/usr/local/cuda/lib64/libnvrtc.so.13"
};

/// Where NVRTC is searched; read once from the environment.
struct NvrtcSettings {
  std::string override_path;              ///< $SWZJIT_LIBNVRTC: only this file is tried when set
  std::vector<std::string> directories;   ///< scanned for libnvrtc.so.N[.M...], newest first
  std::vector<int> soname_majors;         ///< then dlopen("libnvrtc.so.N") through the loader's paths

  static NvrtcSettings from_environment();
};

/// The candidates `settings` yields, in the order they are tried: every libnvrtc.so.<version> file
/// of the directories, newest version first (ties: the earlier directory), then the bare sonames.
std::vector<std::string> nvrtc_candidates(const NvrtcSettings& settings);

/// Parses the version of a file name "libnvrtc.so.13.0.48" -> {13, 0, 48}; empty if the name is
/// not an NVRTC library (libnvrtc-builtins, libnvrtc.alt, the unversioned libnvrtc.so).
std::vector<int> nvrtc_file_version(const std::string& file_name);

/// Loads the first candidate of `settings` that opens and has every entry point. Never throws:
/// nullptr with `why` (every file tried and why it failed, plus what to install or set).
/// The library is never dlclosed, so the table stays valid as long as the caller keeps it.
std::unique_ptr<NvrtcApi> load_nvrtc(const NvrtcSettings& settings, std::string* why);

/// The process's NVRTC, loaded on first use from NvrtcSettings::from_environment().
/// @throws Error(Unsupported) when no NVRTC can be loaded, saying what to install or set.
const NvrtcApi& nvrtc_api();
/// True once this process has loaded NVRTC (nvrtc_api() succeeded somewhere); never loads it itself, so a
/// warm process that needs no compile keeps running without it.
bool nvrtc_loaded() noexcept;

}  // namespace detail
}  // namespace swz
