#!/usr/bin/env bash
# tests/fuzz: the sanitizer step of `./dev.sh test` (CI): builds an ASan+UBSan tree with clang and
# libFuzzer (build-asan/, SWZJIT_ASAN_BUILD_DIR overrides it), then runs there
#   1. `swz info` with no driver, the CPU suite, the no_libcuda link check and the GPU suite (which
#      reports "skipped" without a GPU), and
#   2. every fuzz target: its committed corpus, then SWZJIT_FUZZ_SECONDS (default 20) of fuzzing.
# Any sanitizer report, leak, crash, hang or failed test fails the step.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${SWZJIT_ASAN_BUILD_DIR:-build-asan}
FUZZ_SECONDS=${SWZJIT_FUZZ_SECONDS:-20}
CXX_FUZZ=${SWZJIT_FUZZ_CXX:-clang++-14}
JOBS=${SWZJIT_JOBS:-$(nproc)}

command -v "$CXX_FUZZ" >/dev/null || {
  echo "tests/fuzz/run.sh: $CXX_FUZZ is required (./dev.sh installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# -O1 keeps the suite fast enough; line tables give sanitizer reports file:line without full debug info.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER="$CXX_FUZZ" -DSWZJIT_SANITIZE=address,undefined -DSWZJIT_FUZZ=ON \
  -DSWZJIT_FUZZ_SECONDS="$FUZZ_SECONDS" -DSWZJIT_BUILD_BENCH=OFF -DSWZJIT_TEMPLATE_CHECK=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

echo "== sanitizers: swz info without a driver"
"$BUILD_DIR/swz" info >/dev/null
echo "== sanitizers: CPU suite, link check, GPU suite (skipped without a GPU)"
# package_consumer builds an application without sanitizers against this tree: it runs in build/.
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE fuzz -E '^package_consumer$'
echo "== sanitizers: fuzz targets (corpus replay, then ${FUZZ_SECONDS} s each)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -L fuzz
