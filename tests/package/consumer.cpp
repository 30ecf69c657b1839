// tests/package: an application built against the installed swzjit package, public API only; exits
// non-zero if anything is off, and prints what run.cmake checks (version, the worker it would start).
#include <swzjit/swzjit.hpp>

#include <cstdio>
#include <cstring>

int main() {
  // seed 002: row 0 of Sw<1,1,1> o (8,8):(8,1) is 0 1 2 3 6 7 4 5
  const auto offsets = swz::layout_offsets(swz::SwizzleSpec{1, 1, 1}, swz::LayoutSpec::row_major(8, 8));
  const long long want[8] = {0, 1, 2, 3, 6, 7, 4, 5};
  for (int c = 0; c < 8; ++c) {
    if (offsets[c] != want[c]) {
      std::printf("consumer: wrong offset at column %d: %lld\n", c, offsets[c]);
      return 1;
    }
  }
  // The headers and the library linked (or loaded) are one release.
  if (std::strcmp(swz::version(), SWZJIT_VERSION_STRING) != 0) {
    std::printf("consumer: headers are %s but the library is %s\n", SWZJIT_VERSION_STRING, swz::version());
    return 1;
  }
  // What TunePolicy::TuneOnMiss would start: the installed worker (run.cmake checks the path).
  try {
    std::printf("consumer: worker %s\n", swz::worker_path().c_str());
  } catch (const swz::Error& e) {
    std::printf("consumer: no worker: %s\n", e.what());
    return 1;
  }
  std::printf("consumer: library %s\n", swz::library_path().c_str());
  std::printf("consumer: ok (libswzjit %s, templates hash %s)\n", swz::version(), swz::templates_hash().c_str());
  return 0;
}
