// runtime/jit: which NVRTC this process compiles with (its version and supported targets, parts of
// every kernel key), known without loading it on a warm start. Loading libnvrtc (tens of MB) costs
// ~8 ms; a warm process only looks kernels up, so it reads a memo that names the library file by path,
// size and modification time, written beside the cache the first time NVRTC was loaded for it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "runtime/jit/jit_cache.hpp"
#include "runtime/jit/nvrtc_api.hpp"
#include "runtime/jit/jit_internal.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/log.hpp"

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

// Without NVRTC on this machine, the NVRTC that built the cache's kernels (the version most of them name,
// the newest on a tie), so a shipped cache still finds them; a kernel it lacks cannot be compiled and
// says why (compile() loads NVRTC). Nothing when the cache holds no kernel.
std::optional<NvrtcIdentity> identity_of_cache(Cache& cache) {
  std::map<std::string, int> versions;
  for (const KernelListing& k : cache.list_kernels()) ++versions[k.fields.nvrtc_version];
  const auto newer = [](const std::string& a, const std::string& b) {
    int a1 = 0, a2 = 0, b1 = 0, b2 = 0;
    std::sscanf(a.c_str(), "%d.%d", &a1, &a2);
    std::sscanf(b.c_str(), "%d.%d", &b1, &b2);
    return a1 != b1 ? a1 > b1 : a2 > b2;
  };
  std::string best;
  int count = 0;
  for (const auto& v : versions)
    if (!v.first.empty() && (v.second > count || (v.second == count && newer(v.first, best)))) best = v.first, count = v.second;
  if (best.empty()) return std::nullopt;
  NvrtcIdentity id;
  id.version = best;
  for (const std::string& arch : known_archs()) {
    const int n = arch_number(arch);
    if (std::find(id.archs.begin(), id.archs.end(), n) == id.archs.end()) id.archs.push_back(n);
  }
  return id;
}

NvrtcIdentity load_or_borrow(Cache* cache) {
  try {
    return load_identity();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported || cache == nullptr) throw;
    auto id = identity_of_cache(*cache);
    if (!id)
      throw Error(ErrorKind::Unsupported, std::string(e.what()) +
                                              " (without NVRTC only kernels already in the cache can run, and this "
                                              "cache has none: ship or import one built where NVRTC is installed)");
    log(LogLevel::Info, std::string("NVRTC unavailable (") + e.what() + "); looking kernels up as built by NVRTC " +
                            id->version + ", the version of the cache's kernels; a kernel it lacks cannot be compiled");
    return *id;
  }
}

}  // namespace

const NvrtcIdentity& nvrtc_identity(Cache& cache) {
  static std::mutex mutex;
  static std::optional<NvrtcIdentity> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (known) return *known;
  const std::string memo_dir = cache.directory();
  const std::string fingerprint = memo_dir.empty() ? "" : library_fingerprint();
  if (fingerprint.empty()) {
    known = load_or_borrow(&cache);
    return *known;
  }
  const std::string file = memo_dir + "/nvrtc-" + content_hash(fingerprint).substr(0, 16);
  if (auto memo = read_memo(file, fingerprint)) {
    known = *memo;
    return *known;
  }
  known = load_or_borrow(&cache);
  write_memo(file, fingerprint, *known);
  return *known;
}

}  // namespace detail
}  // namespace swz
