// runtime: finds and dlopens NVRTC on first use (runtime/jit/nvrtc_api.hpp), so no binary has NEEDED
// libnvrtc: one build serves CUDA 12 and 13, and a machine without NVRTC only fails when it must compile.
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/jit/nvrtc_api.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/log.hpp"

namespace swz {
namespace detail {
namespace {

constexpr const char* kInstallHint =
    "install NVRTC (the CUDA toolkit's libnvrtc, e.g. the cuda-nvrtc-13-0 package or pip's "
    "nvidia-cuda-nvrtc) or set SWZJIT_LIBNVRTC=/path/to/libnvrtc.so.N";
// Newest first: the bare sonames tried through the loader's own search (ld.so.cache, LD_LIBRARY_PATH).
constexpr int kNewestMajor = 14;
constexpr int kOldestMajor = 11;

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

void add_unique(std::vector<std::string>* list, const std::string& item) {
  if (!item.empty() && std::find(list->begin(), list->end(), item) == list->end()) list->push_back(item);
}

// The /usr/local/cuda-X.Y toolkits, so the newest one installed is found even when it is not the default.
std::vector<std::string> versioned_toolkits() {
  std::vector<std::string> out;
  if (DIR* d = ::opendir("/usr/local")) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("cuda-", 0) == 0) out.push_back("/usr/local/" + name + "/lib64");
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

NvrtcSettings NvrtcSettings::from_environment() {
  NvrtcSettings s;
  s.override_path = env_text("SWZJIT_LIBNVRTC");
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    const std::string home = env_text(var);
    if (!home.empty()) add_unique(&s.directories, home + "/lib64");
  }
  const std::string ld = env_text("LD_LIBRARY_PATH");
  std::size_t start = 0;
  while (start <= ld.size()) {
    const std::size_t end = std::min(ld.find(':', start), ld.size());
    add_unique(&s.directories, ld.substr(start, end - start));
    start = end + 1;
  }
#ifdef SWZJIT_CUDA_LIBRARY_DIR
  add_unique(&s.directories, SWZJIT_CUDA_LIBRARY_DIR);  // the toolkit this library was built with
#endif
  add_unique(&s.directories, "/usr/local/cuda/lib64");
  for (const auto& dir : versioned_toolkits()) add_unique(&s.directories, dir);
  add_unique(&s.directories, "/usr/lib/x86_64-linux-gnu");
  add_unique(&s.directories, "/usr/lib64");
  for (int major = kNewestMajor; major >= kOldestMajor; --major) s.soname_majors.push_back(major);
  return s;
}

std::vector<int> nvrtc_file_version(const std::string& file_name) {
  static const std::string kPrefix = "libnvrtc.so.";
  if (file_name.rfind(kPrefix, 0) != 0) return {};
  std::vector<int> version;
  std::size_t pos = kPrefix.size();
  while (pos < file_name.size()) {
    std::size_t end = file_name.find('.', pos);
    if (end == std::string::npos) end = file_name.size();
    const std::string part = file_name.substr(pos, end - pos);
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos) return {};
    version.push_back(std::stoi(part));
    pos = end + 1;
  }
  return version;
}

std::vector<std::string> nvrtc_candidates(const NvrtcSettings& settings) {
  if (!settings.override_path.empty()) return {settings.override_path};
  struct Found {
    std::vector<int> version;
    std::size_t dir_index;
    std::string path;
  };
  std::vector<Found> found;
  for (std::size_t i = 0; i < settings.directories.size(); ++i) {
    for (const auto& name : files_in(settings.directories[i])) {
      auto v = nvrtc_file_version(name);
      if (!v.empty()) found.push_back({std::move(v), i, settings.directories[i] + "/" + name});
    }
  }
  // Newest version first; for one version the earlier directory wins, and within a directory the
  // longest name (libnvrtc.so.13.0.88 before its symlink libnvrtc.so.13) comes from the sort too.
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    const std::size_t n = std::min(a.version.size(), b.version.size());
    for (std::size_t k = 0; k < n; ++k)
      if (a.version[k] != b.version[k]) return a.version[k] > b.version[k];
    if (a.dir_index != b.dir_index) return a.dir_index < b.dir_index;
    return a.version.size() > b.version.size();
  });
  std::vector<std::string> out;
  for (const auto& f : found) add_unique(&out, f.path);
  for (int major : settings.soname_majors) add_unique(&out, "libnvrtc.so." + std::to_string(major));
  return out;
}

std::unique_ptr<NvrtcApi> load_nvrtc(const NvrtcSettings& settings, std::string* why) {
  const std::vector<std::string> candidates = nvrtc_candidates(settings);
  std::string tried;
  for (const auto& path : candidates) {
    dlerror();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      // NOTE: a missing bare soname is the normal case; only real files' failures are worth a line.
      if (path.find('/') != std::string::npos || !settings.override_path.empty()) {
        const char* err = dlerror();
        tried += std::string(tried.empty() ? " " : "; ") + (err ? err : path + ": dlopen failed");
      }
      continue;
    }
    auto api = std::make_unique<NvrtcApi>();
    std::string missing;
#define SWZ_NVRTC_RESOLVE(name)                                                 \
  api->name = reinterpret_cast<decltype(api->name)>(::dlsym(handle, #name));    \
  if (api->name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    SWZ_NVRTC_ENTRY_POINTS(SWZ_NVRTC_RESOLVE)
#undef SWZ_NVRTC_RESOLVE
    if (!missing.empty()) {
      tried += std::string(tried.empty() ? " " : "; ") + path + " lacks " + missing + " (too old; libswzjit needs NVRTC 11.2 or newer)";
      ::dlclose(handle);
      continue;
    }
    Dl_info info{};
    api->path = path;
    if (::dladdr(reinterpret_cast<void*>(api->nvrtcVersion), &info) != 0 && info.dli_fname != nullptr)
      api->path = info.dli_fname;  // the file a bare soname resolved to
    return api;  // NOTE: the handle is never closed: NVRTC's code may still run from other threads at exit
  }
  if (why != nullptr) {
    if (!settings.override_path.empty())
      *why = "SWZJIT_LIBNVRTC=" + settings.override_path + " could not be loaded:" + tried +
             "; point SWZJIT_LIBNVRTC at a libnvrtc.so.N, or unset it to search the CUDA toolkits";
    else
      *why = "no NVRTC library (libnvrtc.so.N) was found" + (tried.empty() ? std::string() : ":" + tried) + "; " +
             kInstallHint;
  }
  return nullptr;
}

namespace {

// NVRTC dlopens its libnvrtc-builtins for every compile and dlcloses it after; pinning one reference
// (RTLD_NODELETE) keeps it mapped for the process. Repeated compiles stop re-mapping and re-running
// its initializers, and no thread is left with a dynamic-TLS slot of an unmapped library (LeakSanitizer's
// scan of such a slot faults at exit). Best effort: without the file NVRTC finds its own as before.
void pin_nvrtc_builtins(const NvrtcApi& api) {
  int major = 0, minor = 0;
  if (api.nvrtcVersion(&major, &minor) != 0) return;
  char resolved[PATH_MAX];
  if (::realpath(api.path.c_str(), resolved) == nullptr) return;
  std::string dir = resolved;
  const auto slash = dir.rfind('/');
  if (slash == std::string::npos) return;
  dir.resize(slash);
  const std::string name = "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  for (const std::string& path : {dir + "/" + name, name}) {
    if (path.find('/') != std::string::npos && ::access(path.c_str(), R_OK) != 0) continue;
    if (::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) != nullptr) {
      log(LogLevel::Debug, "NVRTC builtins kept loaded: " + path);
      return;
    }
  }
  dlerror();
}

std::atomic<bool> g_nvrtc_loaded{false};

// The process's NVRTC, loaded once; a failure is remembered too, so every compile reports the same
// reason cheaply.
const NvrtcApi* process_nvrtc(std::string* why) {
  static std::once_flag once;
  static const NvrtcApi* api = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    api = load_nvrtc(NvrtcSettings::from_environment(), &failure).release();  // kept for the process
    g_nvrtc_loaded = api != nullptr;
    if (api != nullptr) {
      log(LogLevel::Info, "NVRTC loaded from " + api->path);
      pin_nvrtc_builtins(*api);
    }
    else
      log(LogLevel::Info, "NVRTC unavailable: " + failure);
  });
  if (api == nullptr && why != nullptr) *why = failure;
  return api;
}

}  // namespace

bool nvrtc_loaded() noexcept { return g_nvrtc_loaded.load(); }

const NvrtcApi& nvrtc_api() {
  std::string why;
  const NvrtcApi* api = process_nvrtc(&why);
  if (api == nullptr)
    throw Error(ErrorKind::Unsupported, "NVRTC is needed to compile a kernel that is not cached, and " + why);
  return *api;
}

}  // namespace detail

bool nvrtc_available(std::string* why) { return detail::process_nvrtc(why) != nullptr; }

std::string nvrtc_library_path() { return detail::nvrtc_api().path; }

}  // namespace swz
