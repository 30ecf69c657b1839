#!/usr/bin/env bash
# tools: the main job of `./dev.sh run`. On a GPU machine: tune and run the swizzled transpose; on a
# machine without one: the CPU-side tour (layout, bank model, solver, static analysis, NVRTC compile).
set -uo pipefail
BUILD_DIR=${1:-build}
SWZ="$BUILD_DIR/swz"
step() { printf '\n$ swz %s\n' "$*"; "$SWZ" "$@"; }

step layout --swizzle 3,3,3 --shape 8,64 --format csv | head -n 9
step bank --op ldmatrix.x4 --addresses "$(seq -s, 0 128 3968)"
step solve --rows 16 --row-bytes 128 --elem-bytes 2 --patterns store:16,ldmatrix
if "$SWZ" --help | grep -q '^  analyze'; then
  step analyze transpose --config f32,tile=32x32,threads=256,vec=1,smem=plain
  step analyze transpose --config f32,tile=32x32,threads=256,vec=1,smem=swizzle:5:0:5
fi
if "$SWZ" --help | grep -q '^  compile'; then
  step compile transpose --config f32,tile=64x64,threads=256,vec=4,smem=swizzle:5:0:5 --arch sm_90
fi
if "$SWZ" --help | grep -q '^  info'; then step info; fi
if "$SWZ" --help | grep -q '^  run' && "$SWZ" info 2>/dev/null | grep -q '^device 0'; then
  if "$SWZ" --help | grep -q '^  autotune'; then step autotune transpose --rows 16384 --cols 8192 --dtype f32; fi
  step run transpose --rows 16384 --cols 8192 --dtype f32
else
  echo
  echo "(no GPU here: the GPU steps - swz autotune / swz run transpose - were skipped)"
fi
