#!/usr/bin/env bash
# libswzjit's one entry point for a fresh Debian 12 machine with the CUDA toolkit in /usr/local/cuda:
# installs the missing packages (apt, as root or with sudo), builds, then runs the main job or the tests.
#   ./dev.sh run     build only swz and swz-worker, then the main job (see README: tune/run the transpose on
#                    a GPU; CPU demo otherwise)
#   ./dev.sh test    build + the whole test suite (CPU suites; the GPU suite reports "skipped" without a GPU),
#                    then the shared-library step, then the sanitizer step: the same under ASan+UBSan plus
#                    bounded fuzzing (tests/fuzz/run.sh)
#   ./dev.sh shared  only the shared-library step: libswzjit.so in build-shared/ and the install test
#                    (prefix moved, swz and the worker found from it) against it
#   ./dev.sh sanitize  only the sanitizer step
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${SWZJIT_BUILD_DIR:-build}
what=${1:-run}
SHARED_BUILD_DIR=${SWZJIT_SHARED_BUILD_DIR:-build-shared}
case "$what" in run|test|shared|sanitize) ;; *) echo "usage: ./dev.sh run|test|shared|sanitize" >&2; exit 2 ;; esac

need_pkgs=()
[ -f /usr/include/doctest/doctest.h ] || need_pkgs+=(doctest-dev)
[ -f /usr/include/sqlite3.h ] || need_pkgs+=(libsqlite3-dev)
[ -f /usr/include/xxhash.h ] || need_pkgs+=(libxxhash-dev)
[ -f /usr/include/openssl/hmac.h ] || need_pkgs+=(libssl-dev)
# The remote cache tier (SWZJIT_REMOTE_CACHE): headers at build time; the library is dlopened at run time.
[ -f /usr/include/hiredis/hiredis.h ] || need_pkgs+=(libhiredis-dev)
command -v cmake >/dev/null || need_pkgs+=(cmake)
command -v g++ >/dev/null || need_pkgs+=(g++)
if [ "$what" != run ]; then
  # The remote-tier tests start a real redis-server on a loopback port (they say "skipped" without it).
  command -v redis-server >/dev/null || [ -x /usr/bin/redis-server ] || need_pkgs+=(redis-server)
fi
if [ "$what" = test ] || [ "$what" = sanitize ]; then
  # The sanitizer step builds with clang and links libFuzzer and the sanitizer runtimes from compiler-rt.
  command -v clang++-14 >/dev/null || need_pkgs+=(clang-14)
  compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need_pkgs+=(libclang-rt-14-dev)
  # The Python package's tests (python/run_tests.sh): a venv, and Python's headers for the extension.
  command -v python3 >/dev/null || need_pkgs+=(python3)
  python3 -c "import venv, ensurepip" 2>/dev/null || need_pkgs+=(python3-venv)
  python3 -c "import os, sysconfig; assert os.path.exists(sysconfig.get_paths()['include'] + '/Python.h')" \
    2>/dev/null || need_pkgs+=(python3-dev)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "dev.sh: installing ${need_pkgs[*]}" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "dev.sh: missing packages ${need_pkgs[*]}; install them (apt-get install ${need_pkgs[*]}) or run as root" >&2
    exit 1
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; else
    echo "dev.sh: the CUDA toolkit (nvcc, NVRTC) is required; install it under /usr/local/cuda" >&2
    exit 1
  fi
fi

# A shared libswzjit (BUILD_SHARED_LIBS=ON) in its own tree, installed and used by an application and
# by `swz` from a moved prefix (the package test), so CI tests both kinds of build (the static one is
# $BUILD_DIR's). The CPU suite itself runs against the static build only: the same code, and CI stays
# near 30 minutes (SWZJIT_SHARED_SUITE=1 runs it here too).
shared_step() {
  echo "dev.sh: shared-library build in $SHARED_BUILD_DIR" >&2
  cmake -S . -B "$SHARED_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
        -DSWZJIT_BUILD_BENCH=OFF -DSWZJIT_TEMPLATE_CHECK=OFF >/dev/null
  if [ "${SWZJIT_SHARED_SUITE:-0}" = 1 ]; then
    cmake --build "$SHARED_BUILD_DIR" -j "$(nproc)" --target swz swz-worker swzjit_tests
    "$SHARED_BUILD_DIR/tests/swzjit_tests" -tce='*NVRTC compiles the default gemm spaces*'
  else
    cmake --build "$SHARED_BUILD_DIR" -j "$(nproc)" --target swz swz-worker
  fi
  ctest --test-dir "$SHARED_BUILD_DIR" --output-on-failure -R '^package_consumer$'
}

case "$what" in
  sanitize)
    exec bash tests/fuzz/run.sh
    ;;
  shared)
    shared_step
    ;;
  test)
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$BUILD_DIR" -j "$(nproc)"
    ctest --test-dir "$BUILD_DIR" --output-on-failure
    shared_step
    bash tests/fuzz/run.sh
    bash python/run_tests.sh   # pip install . into a venv, then pytest (GPU part skipped without one)
    ;;
  run)
    # Only what the main job runs: swz and the worker it starts (no tests, no benchmarks, no nvcc
    # template check), with the build's own progress lines.
    echo "dev.sh: configuring $BUILD_DIR" >&2
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
    echo "dev.sh: building swz and swz-worker ($(nproc) jobs)" >&2
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target swz swz-worker
    exec bash tools/main_job.sh "$BUILD_DIR"
    ;;
esac
