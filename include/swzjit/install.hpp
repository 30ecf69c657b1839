// swzjit public API: where this process finds libswzjit's installed pieces (runtime/worker/worker_client.cpp),
// so an application or `swz info` can check an install before it tunes.
#pragma once

#include <string>

namespace swz {

/// The swz-worker program the autotuner would start: $SWZJIT_WORKER, else next to the running
/// executable, else `../libexec/swz-worker` relative to the executable or to the loaded libswzjit,
/// else the configured install prefix's, else (last) the build tree's.
/// @throws Error(Io) naming every place looked at when none holds an executable swz-worker.
std::string worker_path();

/// The file libswzjit's code was loaded from: libswzjit.so.N for a shared build, the executable
/// itself for a static one ("" if the loader cannot say).
std::string library_path();

namespace detail {
/// Records the libexec directory of the installed package an application was compiled against
/// (worker_path() searches it); called through SWZJIT_PACKAGE_LIBEXEC below. Returns true.
bool register_installed_libexec(const char* directory) noexcept;

// NOTE: find_package(swzjit) defines SWZJIT_PACKAGE_LIBEXEC as <prefix>/libexec of the package found,
// wherever the prefix was moved. A static libswzjit cannot know where it was installed, so the
// application's own code tells it, once, during static initialisation.
#ifdef SWZJIT_PACKAGE_LIBEXEC
inline const bool kPackageLibexecRegistered = register_installed_libexec(SWZJIT_PACKAGE_LIBEXEC);
#endif
}  // namespace detail

}  // namespace swz
