// tests/runtime/worker: where swz-worker is searched (runtime/worker/worker_client.cpp): an install's
// libexec, found from the executable, from libswzjit or from the package, always before the build tree.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "runtime/worker/worker_client.hpp"
#include "swzjit/install.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using swz::detail::worker::find_worker;
using swz::detail::worker::WorkerSettings;
using swz_cache_test::TempDir;

namespace {

// A fake installed prefix: bin/, lib/ and libexec/swz-worker (an executable file).
struct Prefix {
  TempDir dir;
  std::string worker = dir / "libexec/swz-worker";
  Prefix() {
    for (const char* sub : {"bin", "lib", "libexec"}) ::mkdir((dir / sub).c_str(), 0755);
    std::ofstream(worker) << "#!/bin/sh\nexit 0\n";
    ::chmod(worker.c_str(), 0755);
  }
};

// The build tree's worker exists and is executable: the search must still prefer an install.
WorkerSettings with_build_tree(const Prefix& build) {
  WorkerSettings s;
  s.build_path = build.worker;
  s.install_path = "/nonexistent/configured-prefix/libexec/swz-worker";
  return s;
}

}  // namespace

TEST_CASE("an installed program finds <prefix>/libexec/swz-worker before the build tree's") {
  Prefix install;
  Prefix build;
  WorkerSettings s = with_build_tree(build);
  s.self_exe = install.dir / "bin/swz";
  CHECK(find_worker(s) == install.worker);

  // Nothing installed next to the program: the build tree is the last resort.
  s.self_exe = "/nonexistent/bin/app";
  CHECK(find_worker(s) == build.worker);
}

TEST_CASE("an application elsewhere finds the worker relative to the shared libswzjit it loaded") {
  Prefix install;
  Prefix build;
  WorkerSettings s = with_build_tree(build);
  s.self_exe = "/nonexistent/app/bin/app";
  s.library = install.dir / "lib/libswzjit.so.0.1";
  CHECK(find_worker(s) == install.worker);
}

TEST_CASE("a static application finds the worker of the installed package it was built against") {
  Prefix install;
  Prefix build;
  WorkerSettings s = with_build_tree(build);
  s.self_exe = "/nonexistent/app/bin/app";
  s.library = s.self_exe;
  s.package_libexec = install.dir / "libexec";
  CHECK(find_worker(s) == install.worker);

  // An error names every place looked at, in order, the build tree last.
  WorkerSettings none;
  none.self_exe = "/nonexistent/app/bin/app";
  none.library = "/nonexistent/lib/libswzjit.so.0.1";
  none.package_libexec = "/nonexistent/pkg/libexec";
  none.install_path = "/nonexistent/configured/libexec/swz-worker";
  none.build_path = "/nonexistent/build/swz-worker";
  try {
    find_worker(none);
    FAIL("no worker exists, yet one was found");
  } catch (const swz::Error& e) {
    const std::string m = e.what();
    const auto exe_libexec = m.find("/nonexistent/app/libexec/swz-worker");
    const auto lib_libexec = m.find("/nonexistent/libexec/swz-worker");
    const auto package = m.find("/nonexistent/pkg/libexec/swz-worker");
    const auto configured = m.find("/nonexistent/configured/libexec/swz-worker");
    const auto build_tree = m.find("/nonexistent/build/swz-worker");
    CHECK(exe_libexec < lib_libexec);
    CHECK(lib_libexec < package);
    CHECK(package < configured);
    CHECK(configured < build_tree);
    CHECK(build_tree != std::string::npos);
  }
}

TEST_CASE("this test program's worker is found through the public API, and the library's file is known") {
  const std::string path = swz::worker_path();
  CHECK(path.size() > std::string("/swz-worker").size());
  CHECK(path.substr(path.size() - 10) == "swz-worker");
  CHECK_FALSE(swz::library_path().empty());
}
