#!/usr/bin/env bash
# tools: the main job of `./dev.sh run`. On a GPU machine: tune the swizzled transpose (cached: a
# second run does no compile and no benchmark), then run, verify and time it. Without a GPU: the
# CPU-side tour (layout, bank model, solver, static analysis, NVRTC compile, compile-only warm-up).
set -uo pipefail
BUILD_DIR=${1:-build}
SWZ="$BUILD_DIR/swz"
export SWZJIT_WORKER="$BUILD_DIR/swz-worker"
step() { printf '\n$ swz %s\n' "$*"; "$SWZ" "$@"; }

step info
if "$SWZ" info 2>/dev/null | grep -qE '^devices: [1-9]'; then
  step autotune transpose --rows 16384 --cols 8192 --dtype f32
  step run transpose --rows 16384 --cols 8192 --dtype f32
  step run transpose --rows 16384 --cols 16384 --dtype f16
  exit $?
fi
echo
echo "(no GPU here: showing the CPU side; on a GPU machine this job tunes and runs the transpose)"
step layout --swizzle 3,3,3 --shape 8,64 --format csv
step bank --op ldmatrix.x4 --addresses "$(seq -s, 0 128 3968)"
step solve --rows 16 --row-bytes 128 --elem-bytes 2 --patterns store:16,ldmatrix
step analyze transpose --dtype f32 --tile 32x32 --vec 1 --smem plain
step analyze transpose --dtype f32 --tile 64x64 --threads 128 --vec 2 --smem swizzle
step compile transpose --dtype f32 --tile 64x64 --threads 128 --vec 2 --smem swizzle --arch sm_90
step autotune transpose --rows 16384 --cols 8192 --dtype f32 --compile-only --arch sm_90
