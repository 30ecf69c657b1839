// runtime: NVRTC compilation of a generated translation unit against the embedded templates
// (include/swzjit/jit.hpp). Generator source in, cubin (or PTX) + lowered name + explicit options out.
// NVRTC itself is loaded on first use (runtime/jit/nvrtc_loader.cpp).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/jit/embedded_templates.hpp"
#include "runtime/jit/jit_internal.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "runtime/jit/nvrtc_api.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/log.hpp"

namespace swz {
namespace {

constexpr const char* kDefaultSourceName = "swzjit_kernel.cu";

// Owns one nvrtcProgram from the moment nvrtcCreateProgram succeeds, so that every early return
// and every throw below destroys it.
class ProgramGuard {
 public:
  ProgramGuard() = default;
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;
  ~ProgramGuard() {
    if (program_ != nullptr) detail::nvrtc_api().nvrtcDestroyProgram(&program_);
  }
  nvrtcProgram* out() { return &program_; }
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

// An NVRTC API call that is not the compile itself failed: a broken invariant or out of memory.
void check_nvrtc(nvrtcResult result, const char* what) {
  if (result == NVRTC_SUCCESS) return;
  throw Error(ErrorKind::Internal,
              std::string(what) + " failed: " + detail::nvrtc_api().nvrtcGetErrorString(result) + " (NVRTC " +
                  std::to_string(nvrtc_version().first) + "." + std::to_string(nvrtc_version().second) + ")");
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

// The first line of the log that reports an error, so the exception's message alone says what broke.
std::string first_error_line(const std::string& log) {
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    if (line.find("error") != std::string::npos) return line;
    start = end + 1;
  }
  return log.substr(0, log.find('\n'));
}

// The arch to compile for: the request's (validated), or the current device's.
std::string resolve_arch(const std::string& requested) {
  if (!requested.empty()) {
    if (!is_known_arch(requested))
      throw_invalid("arch '" + requested + "' is not a target libswzjit compiles for (allowed: " +
                    join(known_archs(), ", ") + ")");
    return requested;
  }
  DeviceInfo info;
  try {
    info = device_info(current_device());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::NoDevice) throw;
    throw Error(ErrorKind::NoDevice, std::string(e.what()) +
                                         "; to compile without a GPU, name the target explicitly (arch = one of " +
                                         join(known_archs(), ", ") + ")");
  }
  const std::string detected = info.arch();
  if (!is_known_arch(detected))
    throw Error(ErrorKind::Unsupported, "device " + std::to_string(info.ordinal) + " (" + info.name + ") is " +
                                            detected + ", which libswzjit does not target (targets: " +
                                            join(known_archs(), ", ") + "); pass an arch explicitly");
  return detected;
}

// Every option is spelled out, so the option list alone says how the image was built (it is part of
// the cache key). No fast math: kernels are checked for exact results against host references.
std::vector<std::string> all_options(const std::string& arch, bool cubin, const std::vector<std::string>& extra) {
  const std::string target = (cubin ? "sm_" : "compute_") + arch.substr(3);
  std::vector<std::string> options = {
      "--gpu-architecture=" + target,
      "-std=c++17",
      "-default-device",
      "--no-source-include",  // headers come only from the embedded templates, never from the disk
      "--ftz=false",
      "--prec-div=true",
      "--prec-sqrt=true",
      "--fmad=true",
      "-lineinfo",
  };
  options.insert(options.end(), extra.begin(), extra.end());  // last: NVRTC lets later options win
  return options;
}

bool emits_cubin(const std::string& arch, const std::vector<int>& supported) {
  return std::find(supported.begin(), supported.end(), detail::arch_number(arch)) != supported.end();
}

std::string read_log(nvrtcProgram program) {
  const auto& api = detail::nvrtc_api();
  std::size_t size = 0;
  check_nvrtc(api.nvrtcGetProgramLogSize(program, &size), "nvrtcGetProgramLogSize");
  std::string log(size, '\0');
  if (size > 0) check_nvrtc(api.nvrtcGetProgramLog(program, &log[0]), "nvrtcGetProgramLog");
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string read_image(nvrtcProgram program, bool cubin) {
  const auto& api = detail::nvrtc_api();
  std::size_t size = 0;
  std::string image;
  if (cubin) {
    check_nvrtc(api.nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    image.resize(size);
    if (size > 0) check_nvrtc(api.nvrtcGetCUBIN(program, &image[0]), "nvrtcGetCUBIN");
  } else {
    check_nvrtc(api.nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
    image.resize(size);
    if (size > 0) check_nvrtc(api.nvrtcGetPTX(program, &image[0]), "nvrtcGetPTX");
    // NOTE: the PTX size counts its terminating NUL; std::string keeps its own.
    while (!image.empty() && image.back() == '\0') image.pop_back();
  }
  return image;
}

// FNV-1a, 64 bits: names a dumped source by its content, so equal sources share one file.
std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// $SWZJIT_DUMP_SOURCE: writes the generated source, headed by how it is compiled, before NVRTC sees
// it (so a source that crashes NVRTC is on disk too). A failure to write is a warning, never an error.
void dump_source(const std::string& source, const std::string& source_name, const std::string& name_expression,
                 const std::vector<std::string>& options) {
  const std::string& dir = dump_source_directory();
  if (dir.empty()) return;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    log(LogLevel::Warn, "SWZJIT_DUMP_SOURCE=" + dir + ": cannot create it (" + std::strerror(errno) + ")");
    return;
  }
  const std::string header = "// " + name_expression + "\n// nvrtc " + join(options, " ") + "\n";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(source, fnv1a(header))));
  std::string stem = source_name;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".cu") == 0) stem.resize(stem.size() - 3);
  for (char& c : stem)
    if (c == '/') c = '_';
  const std::string path = dir + "/" + stem + "-" + hex + ".cu";
  std::FILE* f = std::fopen(path.c_str(), "w");
  bool ok = f != nullptr;
  if (f != nullptr) {
    ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
         std::fwrite(source.data(), 1, source.size(), f) == source.size();
    ok = (std::fclose(f) == 0) && ok;
  }
  if (!ok) {
    log(LogLevel::Warn, "SWZJIT_DUMP_SOURCE: cannot write " + path);
    return;
  }
  log(LogLevel::Debug, "wrote the source of " + name_expression + " to " + path);
}

}  // namespace

const std::vector<std::string>& known_archs() {
  // Every family's instructions (cp.async, ldmatrix, mma.sync, ordinary loads and stores) exist on all of
  // them; the arch-specific "a" target is Hopper's, for its wgmma/TMA kernels.
  static const std::vector<std::string> archs = {"sm_80",  "sm_86",  "sm_87",  "sm_89",  "sm_90", "sm_90a",
                                                 "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"};
  return archs;
}

bool is_known_arch(const std::string& arch) {
  const auto& archs = known_archs();
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

std::pair<int, int> nvrtc_version() {
  int major = 0;
  int minor = 0;
  if (detail::nvrtc_api().nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    throw Error(ErrorKind::Internal, "nvrtcVersion failed");
  return {major, minor};
}

std::vector<int> nvrtc_supported_archs() {
  const auto& api = detail::nvrtc_api();
  int count = 0;
  check_nvrtc(api.nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(std::max(count, 0)));
  if (count > 0) check_nvrtc(api.nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

CompiledKernel compile(const CompileRequest& request) {
  return detail::compile_with_supported_archs(request, nvrtc_supported_archs());
}

std::vector<std::string> compile_options(const CompileRequest& request) {
  return detail::compile_options_for(request, nvrtc_supported_archs());
}

std::vector<std::string> detail::compile_options_for(const CompileRequest& request, const std::vector<int>& supported) {
  const std::string arch = resolve_arch(request.arch);
  return all_options(arch, emits_cubin(arch, supported), request.extra_options);
}


namespace detail {

int arch_number(const std::string& arch) {
  // "sm_90a" -> 90, "sm_100" -> 100: the digits after "sm_".
  int n = 0;
  for (std::size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
  return n;
}

CompiledKernel compile_with_supported_archs(const CompileRequest& request, const std::vector<int>& supported) {
  if (request.source.empty()) throw_invalid("compile: the source is empty");
  if (request.name_expression.empty())
    throw_invalid("compile: the name expression is empty (give the __global__ instantiation to resolve)");
  const std::string arch = resolve_arch(request.arch);
  const std::string source_name = request.source_name.empty() ? kDefaultSourceName : request.source_name;
  const bool cubin = emits_cubin(arch, supported);

  CompiledKernel result;
  result.arch = arch;
  result.is_ptx = !cubin;
  result.name_expression = request.name_expression;
  result.options = all_options(arch, cubin, request.extra_options);

  // Every embedded template is offered as a header; they include each other by base name.
  std::vector<const char*> header_names;
  std::vector<const char*> header_sources;
  for (std::size_t i = 0; i < kEmbeddedTemplateCount; ++i) {
    header_names.push_back(kEmbeddedTemplates[i].name);
    header_sources.push_back(kEmbeddedTemplates[i].data);  // NUL-terminated by embed_templates.cmake
  }

  const auto& api = nvrtc_api();  // throws the clear "install NVRTC" error on a machine without it
  dump_source(request.source, source_name, request.name_expression, result.options);
  const auto started = std::chrono::steady_clock::now();
  ProgramGuard program;
  check_nvrtc(api.nvrtcCreateProgram(program.out(), request.source.c_str(), source_name.c_str(),
                                 static_cast<int>(header_names.size()), header_sources.data(), header_names.data()),
              "nvrtcCreateProgram");
  check_nvrtc(api.nvrtcAddNameExpression(program.get(), request.name_expression.c_str()), "nvrtcAddNameExpression");

  std::vector<const char*> option_ptrs;
  for (const auto& option : result.options) option_ptrs.push_back(option.c_str());
  const nvrtcResult compiled =
      api.nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  // NOTE: the log is read before the result is looked at: it is the only account of a failure.
  result.log = read_log(program.get());
  if (compiled != NVRTC_SUCCESS) {
    const std::string headline = first_error_line(result.log);
    throw Error::compile("NVRTC could not compile " + source_name + " for " + arch + " (" +
                             api.nvrtcGetErrorString(compiled) + ")" + (headline.empty() ? "" : ": " + headline),
                         result.log, result.options, request.source, source_name);
  }

  const char* lowered = nullptr;
  const nvrtcResult named = api.nvrtcGetLoweredName(program.get(), request.name_expression.c_str(), &lowered);
  if (named != NVRTC_SUCCESS || lowered == nullptr)
    throw Error::compile("name expression '" + request.name_expression + "' does not name a __global__ function of " +
                             source_name + " (" + api.nvrtcGetErrorString(named) + ")",
                         result.log, result.options, request.source, source_name);
  result.lowered_name = lowered;  // owned by the program: copy before it is destroyed
  result.image = read_image(program.get(), cubin);
  if (log_enabled(LogLevel::Debug)) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f ms", ms);
    log(LogLevel::Debug, "compiled " + request.name_expression + " (" + source_name + ") for " + arch + " in " +
                             took + " -> " + (cubin ? "cubin" : "PTX") + " of " + std::to_string(result.image.size()) +
                             " bytes; options: " + join(result.options, " "));
  }
  return result;
}

}  // namespace detail
}  // namespace swz
