#!/usr/bin/env bash
# libswzjit's one entry point for a fresh Debian 12 machine with the CUDA toolkit in /usr/local/cuda:
# installs the missing packages (apt, as root or with sudo), builds, then runs the main job or the tests.
#   ./dev.sh run     build + the main job (see README: tune/run the transpose on a GPU; CPU demo otherwise)
#   ./dev.sh test    build + the whole test suite (CPU suites; the GPU suite reports "skipped" without a GPU),
#                    then the sanitizer step: the same under ASan+UBSan plus bounded fuzzing (tests/fuzz/run.sh)
#   ./dev.sh sanitize  only the sanitizer step
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${SWZJIT_BUILD_DIR:-build}
what=${1:-run}
case "$what" in run|test|sanitize) ;; *) echo "usage: ./dev.sh run|test|sanitize" >&2; exit 2 ;; esac

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
  # The sanitizer step builds with clang and links libFuzzer and the sanitizer runtimes from compiler-rt.
  command -v clang++-14 >/dev/null || need_pkgs+=(clang-14)
  compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need_pkgs+=(libclang-rt-14-dev)
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

if [ "$what" = sanitize ]; then
  exec bash tests/fuzz/run.sh
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"

case "$what" in
  test)
    ctest --test-dir "$BUILD_DIR" --output-on-failure
    bash tests/fuzz/run.sh
    ;;
  run)
    exec bash tools/main_job.sh "$BUILD_DIR"
    ;;
esac
