#!/usr/bin/env bash
# tests/fuzz: the sanitizer step of `./dev.sh test` (CI): builds an ASan+UBSan tree with clang and
# libFuzzer (build-asan/, SWZJIT_ASAN_BUILD_DIR overrides it), then runs there
#   1. `swz info` with no driver, the CPU suite (minus its slowest cases, see below), the no_libcuda
#      link check and the GPU suite (which reports "skipped" without a GPU), and
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
echo "== sanitizers: CPU suite"
# NOTE: these cases enumerate every default search space (bank analysis of each config, or an NVRTC
# compile of each): 10-15x slower under ASan+UBSan with libFuzzer's coverage, they alone would take
# CI past its 30 minutes. The normal build runs them; the fuzzers drive the same analysis code here.
# The NVRTC-bound ones spend their time in NVRTC, which ASan does not instrument. A comma inside a name
# is escaped (\,): doctest splits its filters at commas. SWZJIT_ASAN_FULL_SUITE=1 runs them too.
slow_cases="split-K in the default spaces*,every config of every default gemm space*,NVRTC compiles the default gemm spaces*"
slow_cases+=",NVRTC compiles the split-K reduction*,choosing swizzle and pad parameters*"
slow_cases+=",gemm families: configs round-trip\\, default and space are the typed ones*"
slow_cases+=",gemm_sm90 variant: every config of the space compiles for sm_90a*"
slow_cases+=",gemm_sm90: the default configs and all layouts compile for sm_90a*"
slow_cases+=",archs: the default transpose\\, SGEMM\\, HGEMM and rowsum kernels compile for every new target*"
# 64 instrumented swz processes warming from one Redis (3 minutes here); the in-process remote-cache cases
# run the same client code under ASan.
slow_cases+=",remote cli: 64 processes with empty caches warm from one Redis*"
exclude=(-tce="$slow_cases")
[ "${SWZJIT_ASAN_FULL_SUITE:-0}" = 1 ] && exclude=()
# The limit is a hang guard, not a budget: the suite takes about 22 minutes on a 2-core CI machine.
(cd "$BUILD_DIR/tests" && timeout 2400 ./swzjit_tests "${exclude[@]}")
echo "== sanitizers: link check, GPU suite (skipped without a GPU)"
# package_consumer and package_examples build applications without sanitizers against this tree: they run in build/.
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE fuzz -E '^(cpu|package_consumer|package_examples)$'
echo "== sanitizers: fuzz targets (corpus replay, then ${FUZZ_SECONDS} s each)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -L fuzz
