// runtime/jit: which NVRTC this process compiles with (its version and supported targets, parts of
// every kernel key), known without loading it on a warm start. Loading libnvrtc (tens of MB) costs
// ~8 ms; a warm process only looks kernels up, so it reads a memo that names the library file by path,
// size and modification time, written beside the cache the first time NVRTC was loaded for it.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "runtime/jit/jit_cache.hpp"
#include "runtime/jit/nvrtc_api.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace detail {
namespace {

// The file the loader would open first, with its size and mtime; "" when only a bare soname (resolved
// by the dynamic loader at dlopen) is left, which cannot be identified without loading it.
std::string library_fingerprint() {
  const NvrtcSettings settings = NvrtcSettings::from_environment();
  const std::vector<std::string> candidates =
      settings.override_path.empty() ? nvrtc_candidates(settings) : std::vector<std::string>{settings.override_path};
  for (const std::string& path : candidates) {
    if (path.find('/') == std::string::npos) return "";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    std::ostringstream os;
    os << path << '|' << st.st_size << '|' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec;
    return os.str();
  }
  return "";
}

NvrtcIdentity load_identity() {
  NvrtcIdentity id;
  const auto v = nvrtc_version();  // loads NVRTC (throws Unsupported, saying what to install, without it)
  id.version = std::to_string(v.first) + "." + std::to_string(v.second);
  id.archs = nvrtc_supported_archs();
  return id;
}

std::optional<NvrtcIdentity> read_memo(const std::string& file, const std::string& fingerprint) {
  std::ifstream in(file);
  std::string fp, version, archs;
  if (!std::getline(in, fp) || !std::getline(in, version) || !std::getline(in, archs) || fp != fingerprint)
    return std::nullopt;
  NvrtcIdentity id;
  id.version = version;
  std::istringstream is(archs);
  for (int a; is >> a;) id.archs.push_back(a);
  if (id.version.empty() || id.archs.empty() || !is.eof()) return std::nullopt;
  return id;
}

void write_memo(const std::string& file, const std::string& fingerprint, const NvrtcIdentity& id) {
  const std::string tmp = file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;  // a read-only or missing directory: the next process loads NVRTC again
    out << fingerprint << '\n' << id.version << '\n';
    for (int a : id.archs) out << a << ' ';
    out << '\n';
    if (!out) return;
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

const NvrtcIdentity& nvrtc_identity(const std::string& memo_dir) {
  static std::mutex mutex;
  static std::optional<NvrtcIdentity> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (known) return *known;
  const std::string fingerprint = memo_dir.empty() ? "" : library_fingerprint();
  if (fingerprint.empty()) {
    known = load_identity();
    return *known;
  }
  const std::string file = memo_dir + "/nvrtc-" + content_hash(fingerprint).substr(0, 16);
  if (auto memo = read_memo(file, fingerprint)) {
    known = *memo;
    return *known;
  }
  known = load_identity();
  write_memo(file, fingerprint, *known);
  return *known;
}

}  // namespace detail
}  // namespace swz
