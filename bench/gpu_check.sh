#!/usr/bin/env bash
# bench: one GPU-machine session over a build carried from the CPU machine (device tool): the GPU suite,
# the installed examples, the Python package's GPU tests with PyTorch. Logs under $OUT; a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-logs}
mkdir -p "$OUT" /work
[ -e /work/main/build ] || [ "$PWD" = /work/main ] || ln -sfn "$PWD" /work/main
export SWZJIT_WORKER=$PWD/build/swz-worker
summary=()
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    suite)
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout ${SUITE_TIMEOUT:-480} build/tests/swzjit_gpu_tests ${SUITE_ARGS:-} >"$OUT/gpu_suite.log" 2>&1
      summary+=("gpu suite: rc=$? $(grep -E '^\[doctest\] test cases' "$OUT/gpu_suite.log" | tail -1)") ;;
    examples)
      ex=build/tests/package_examples
      d=$(mktemp -d)
      { SWZJIT_CACHE_DIR=$d SWZJIT_WORKER=$PWD/$ex/prefix/libexec/swz-worker $ex/build/engine_app &&
        SWZJIT_CACHE_DIR=$d SWZJIT_WORKER=$PWD/$ex/prefix/libexec/swz-worker $ex/build/own_family examples/tile_transpose_add.cuh; } \
        >"$OUT/examples.log" 2>&1
      summary+=("examples (installed package): rc=$?") ;;
    python)
      py=${PYTHON:-/opt/torch/.venv/bin/python}
      SWZJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/build/python timeout 400 "$py" -m pytest -q -rs python/tests/test_gpu.py \
        >"$OUT/python_gpu.log" 2>&1
      summary+=("python gpu tests: rc=$? $(tail -1 "$OUT/python_gpu.log")") ;;
  esac
  summary[-1]="${summary[-1]} ($(( $(date +%s) - start )) s)"
done
printf '%s\n' "${summary[@]}"
