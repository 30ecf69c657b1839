// runtime (internal): the one path from a generated translation unit to a cached kernel, shared by the
// engine's families and the autotuner's support kernels, so every cache key is built the same way.
#pragma once

#include <cstdint>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "swzjit/cache.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace detail {

/// `request`'s kernel from `cache`, keyed by its full compile identity (templates hash, name
/// expression, NVRTC version, every option, exact arch — request.arch must be given); NVRTC runs
/// only on a miss (`on_compile` is called then), and the entry records registers/spills read from
/// the cubin. `source_hash` (a declared family's Family::source_hash()) joins the templates hash in the
/// key when the source is not generated from the name expression alone.
/// Kernels the calling thread has built (compiled with NVRTC) through compile_through_cache so far: a
/// caller compares it before and after a lookup to tell a fresh compile from a cache hit.
std::uint64_t thread_builds();

KernelEntry compile_through_cache(Cache& cache, const CompileRequest& request, int threads, int dynamic_smem,
                                  const std::function<void()>& on_compile = {}, const std::string& source_hash = {});

/// The NVRTC kernel keys are made for: its "major.minor" version and the real architectures it emits
/// cubins for. Known without loading NVRTC when the cache's directory holds a memo for the very library
/// file the loader would open (runtime/jit/nvrtc_identity.cpp); computed once per process. Without any
/// NVRTC, the version the cache's kernels were built with (they run; a kernel it lacks cannot be built).
/// @throws Error(Unsupported) when there is neither NVRTC nor a kernel in the cache.
struct NvrtcIdentity {
  std::string version;
  std::vector<int> archs;
};
const NvrtcIdentity& nvrtc_identity(Cache& cache);

/// compile_options(request) for an NVRTC that supports `supported` (no NVRTC call).
std::vector<std::string> compile_options_for(const CompileRequest& request, const std::vector<int>& supported);

/// Largest power of two <= 16 that divides `v` (0 divides everything): the vector width an address,
/// pitch or stride allows.
int pow2_alignment(unsigned long long v);
/// The widest access (bytes, a power of two in [elem_bytes, 16]) that pointers, pitches and strides of
/// `elem_bytes`-byte elements all allow: the alignment of every address a kernel's vectors would touch.
/// `pitches` are in elements; pass strides only when a batch uses them.
int access_alignment(std::initializer_list<unsigned long long> pointers, std::initializer_list<long long> pitches,
                     int elem_bytes);

}  // namespace detail
}  // namespace swz
