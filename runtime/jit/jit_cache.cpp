// runtime (internal): the cached compile path (jit_cache.hpp).
#include "runtime/jit/jit_cache.hpp"

#include <algorithm>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/log.hpp"

namespace swz {
namespace detail {

namespace {
thread_local std::uint64_t t_builds = 0;  // see thread_builds()
}  // namespace

std::uint64_t thread_builds() { return t_builds; }

KernelEntry compile_through_cache(Cache& cache, const CompileRequest& request, int threads, int dynamic_smem,
                                  const std::function<void()>& on_compile, const std::string& source_hash) {
  if (request.arch.empty()) throw Error(ErrorKind::Internal, "compile_through_cache: the arch must be resolved first");
  // The templates hash and NVRTC version cannot change within a process: compute them once.
  static const std::string kTemplatesHash = templates_hash();
  KernelKey key;
  key.templates_hash = source_hash.empty() ? kTemplatesHash : content_hash(kTemplatesHash + "+" + source_hash);
  key.name_expression = request.name_expression;
  // The NVRTC the key names, from a memo beside the database when there is one (no NVRTC load on a
  // warm start; runtime/jit/nvrtc_identity.cpp).
  const NvrtcIdentity& nvrtc = nvrtc_identity(cache);
  key.nvrtc_version = nvrtc.version;
  key.options = compile_options_for(request, nvrtc.archs);
  key.arch = request.arch;
  bool built = false;
  KernelEntry entry = cache.get_or_build(key, [&] {
    built = true;
    ++t_builds;
    if (on_compile) on_compile();
    const CompiledKernel k = compile(request);
    KernelEntry e;
    e.image = k.image;
    e.is_ptx = k.is_ptx;
    e.lowered_name = k.lowered_name;
    e.threads = threads;
    e.dynamic_smem = dynamic_smem;
    if (!k.is_ptx) {
      const CubinResources r = cubin_resources(k);
      e.registers = r.registers;
      e.spill_bytes = r.local_bytes;
    }
    return e;
  });
  if (log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, std::string("kernel cache ") + (built ? "miss, compiled" : "hit") + ": key " + key.hash() +
                             " (" + key.name_expression + ", " + key.arch + ", NVRTC " + key.nvrtc_version + ")");
  return entry;
}

int pow2_alignment(unsigned long long v) {
  int a = 16;
  while (a > 1 && v % static_cast<unsigned long long>(a) != 0) a /= 2;
  return a;
}

int access_alignment(std::initializer_list<unsigned long long> pointers, std::initializer_list<long long> pitches,
                     int elem_bytes) {
  int a = 16;
  for (unsigned long long p : pointers) a = std::min(a, pow2_alignment(p));
  for (long long ld : pitches)
    a = std::min(a, pow2_alignment(static_cast<unsigned long long>(ld) * static_cast<unsigned long long>(elem_bytes)));
  return std::max(a, elem_bytes);
}

}  // namespace detail
}  // namespace swz
