#!/usr/bin/env bash
# bench: one GPU-machine session over a build carried from the CPU machine (device tool): the GPU suite,
# the sanitizers, the installed examples, the Python package's GPU tests with PyTorch, the benchmarks.
# Steps as arguments (e.g. `bench/gpu_check.sh suite2 memcheck racecheck gemm_llm`); logs under $OUT;
# a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-logs}
mkdir -p "$OUT" /work
[ -e /work/main/build ] || [ "$PWD" = /work/main ] || ln -sfn "$PWD" /work/main
export SWZJIT_WORKER=$PWD/build/swz-worker
summary=()
# ab TITLE LOG SHAPES CONFIGS [LAYOUT]: an A/B of Hopper GEMM configs (";"-separated, without in=, out= and layout=,
# which the bench adds for each dtype, shape and layout) at SHAPES in the kernel layout LAYOUT (default NT), f16 and
# bf16, each round against cuBLAS in the same round (swz_bench_gemm_sm90 --variants); a summary line a dtype: shape,
# median ratio, config.
ab() {
  local t rc l=${5:-NT}
  for t in f16 bf16; do
    timeout ${BENCH_TIMEOUT:-200} build/bench/swz_bench_gemm_sm90 --dtype $t --layout $l --shape "$3" \
      --configs "$4" --variants base= --reps 5 --rounds ${STEADY_ROUNDS:-11} >"$OUT/$2_$t.log" 2>&1
    rc=$?
    summary+=("$1 $t: rc=$rc $(grep -E "^$t +$l .* in=" "$OUT/$2_$t.log" |
      awk '{c=$7; gsub(/in=[a-z0-9]+,out=[a-z0-9]+,layout=[NT]+,|,persistent=1,inflight=1/, "", c); printf "%s %s %s; ", $3, $4, c}')")
  done
}
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
    suite2)
      # The GPU suite as two processes at once (tuning cases and the rest), so it fits one device call.
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout ${SUITE_TIMEOUT:-540} build/tests/swzjit_gpu_tests -tc='*tune*,*Tune*' \
        >"$OUT/gpu_suite_tune.log" 2>&1 &
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout ${SUITE_TIMEOUT:-540} build/tests/swzjit_gpu_tests -tce='*tune*,*Tune*' \
        >"$OUT/gpu_suite_rest.log" 2>&1
      rest=$?; wait $!; tune=$?
      summary+=("gpu suite (tuning cases): rc=$tune $(grep -E '^\[doctest\] test cases' "$OUT/gpu_suite_tune.log" | tail -1)")
      summary+=("gpu suite (the rest): rc=$rest $(grep -E '^\[doctest\] test cases' "$OUT/gpu_suite_rest.log" | tail -1)") ;;
    suite3|suite4|suite5)
      # The GPU suite as four processes at once (tuning, GEMM, Hopper kernel, the rest), line-buffered so a
      # timeout still leaves the log of what ran; doctest prints each case's duration. suite5 runs the Hopper
      # kernel's narrow-tile, short-A-stage, 64-row-tile and swapped-operand cases in a fifth process (the Hopper
      # process alone reached 560 s beside the other three, ninth session; with the swapped cases in it 459 s of
      # the 540, twenty-fourth session), the narrow-tile case (204 s alone) in a sixth; the widths between the powers
      # of two (eleven configs in every layout they take, twenty-seventh session) in the fifth. suite3 leaves the Hopper
      # kernel's cases out (the tuning
      # process still runs its tunes): for a change that leaves the Hopper kernels alone.
      t=${SUITE_TIMEOUT:-540}
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t stdbuf -oL build/tests/swzjit_gpu_tests --duration=true \
        -tc='*tune*,*Tune*' >"$OUT/gpu_suite_tune.log" 2>&1 &
      p1=$!
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t stdbuf -oL build/tests/swzjit_gpu_tests --duration=true \
        -tc='gemm*' -tce='*tune*,*Tune*,*sm90*' >"$OUT/gpu_suite_gemm.log" 2>&1 &
      p2=$!
      narrow='*narrow tiles*'
      thin="$narrow,*short A stages*,*64-row tiles*,*A and B swapped*,*widths between*"
      p3=
      p5=
      p6=
      if [ "$step" = suite5 ]; then
        SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t stdbuf -oL build/tests/swzjit_gpu_tests --duration=true \
          -tc="$thin" -tce="*tune*,*Tune*,$narrow" >"$OUT/gpu_suite_sm90thin.log" 2>&1 &
        p5=$!
        SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t stdbuf -oL build/tests/swzjit_gpu_tests --duration=true \
          -tc="$narrow" -tce='*tune*,*Tune*' >"$OUT/gpu_suite_sm90narrow.log" 2>&1 &
        p6=$!
      fi
      if [ "$step" != suite3 ]; then
        SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t stdbuf -oL build/tests/swzjit_gpu_tests --duration=true \
          -tc='*sm90*,*wgmma*,*TMA*' -tce="*tune*,*Tune*${p5:+,$thin}" >"$OUT/gpu_suite_sm90.log" 2>&1 &
        p3=$!
      fi
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t stdbuf -oL build/tests/swzjit_gpu_tests --duration=true \
        -tce='*tune*,*Tune*,gemm*,*sm90*,*wgmma*,*TMA*' >"$OUT/gpu_suite_rest.log" 2>&1
      rest=$?; wait $p1; tune=$?; wait $p2; gemm=$?
      parts="tune:$tune gemm:$gemm rest:$rest"
      if [ -n "$p3" ]; then wait $p3; parts+=" sm90:$?"; fi
      if [ -n "$p5" ]; then wait $p5; parts+=" sm90thin:$?"; fi
      if [ -n "$p6" ]; then wait $p6; parts+=" sm90narrow:$?"; fi
      for part in $parts; do
        summary+=("gpu suite (${part%%:*}): rc=${part##*:} $(grep -E '^\[doctest\] test cases' "$OUT/gpu_suite_${part%%:*}.log" | tail -1)")
      done ;;
    gemm_f32)
      # The mma.sync path on an sm_90 GPU (f32 has no Hopper variant), untuned and tuned beside cuBLAS.
      for shape in ${F32_SHAPES:-4096x4096x4096 127x129x4100}; do
        timeout ${BENCH_TIMEOUT:-150} build/bench/swz_bench_gemm --tuned --dtype f32 --layout NN --shape $shape \
          --reps 10 >"$OUT/gemm_f32_$shape.log" 2>&1
        summary+=("gemm --tuned f32 $shape: rc=$? $(grep -E '^geometric mean' "$OUT/gemm_f32_$shape.log")")
      done ;;
    memcheck)
      SWZJIT_CACHE_DIR=$(mktemp -d) timeout ${MEMCHECK_TIMEOUT:-330} compute-sanitizer --tool memcheck --error-exitcode 3 \
        build/tests/swzjit_gpu_tests -tc="${MEMCHECK_CASES:-*workspace*,*repeated call*,*Hopper kernel runs*,*sanitizer-sized*}" \
        >"$OUT/memcheck.log" 2>&1
      summary+=("memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)") ;;
    racecheck)
      # Shared-memory races and barrier misuse of the kernels on sanitizer-sized problems (the Hopper kernel's
      # mbarrier ring and TMA-store epilogue included). Both tools at once, each in two processes: the Hopper
      # kernel's odd-shapes case alone took 243 s under racecheck on the H200 (twentieth session), the other
      # four cases about 20 s. RACECHECK_CASES (a doctest filter) runs those cases in one process a tool.
      t=${RACECHECK_TIMEOUT:-420}
      odd='*small and odd shapes*sanitizer-sized*'
      pids=()
      names=()
      for tool in racecheck synccheck; do
        if [ -n "${RACECHECK_CASES:-}" ]; then
          SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t compute-sanitizer --tool $tool --error-exitcode 3 \
            build/tests/swzjit_gpu_tests -tc="$RACECHECK_CASES" >"$OUT/$tool.log" 2>&1 &
          pids+=($!); names+=("$tool")
        else
          SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t compute-sanitizer --tool $tool --error-exitcode 3 \
            build/tests/swzjit_gpu_tests -tc="$odd" >"$OUT/${tool}_odd.log" 2>&1 &
          pids+=($!); names+=("${tool}_odd")
          SWZJIT_CACHE_DIR=$(mktemp -d) timeout $t compute-sanitizer --tool $tool --error-exitcode 3 \
            build/tests/swzjit_gpu_tests -tc='*sanitizer-sized*' -tce="$odd" >"$OUT/${tool}_rest.log" 2>&1 &
          pids+=($!); names+=("${tool}_rest")
        fi
      done
      for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        rc=$?
        log="$OUT/${names[$i]}.log"
        summary+=("${names[$i]}: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1) $(grep -E '^\[doctest\] test cases' "$log" | tail -1)")
      done ;;
    gemm_llm)
      # What Engine::gemm runs untuned and tuned beside cuBLAS, the LLM shapes, f16 and bf16 NT.
      for t in f16 bf16; do
        timeout ${BENCH_TIMEOUT:-280} build/bench/swz_bench_gemm --tuned --llm --layout NT --dtype $t --reps 10 \
          --rounds ${TUNED_ROUNDS:-6} \
          >"$OUT/gemm_llm_$t.log" 2>&1
        summary+=("gemm --tuned --llm $t: rc=$? $(grep -E '^geometric mean' "$OUT/gemm_llm_$t.log")")
      done ;;
    gemm_steady)
      # The Hopper kernel's default config ("auto") at 4096^3 and 8192^3 in every layout against cuBLAS, the
      # steadiest measure of issue 12's done-when: many short rounds in one process, each round's time against
      # cuBLAS's in the same round, the median over the rounds (swz_bench_gemm_sm90 --variants).
      for t in f16 bf16; do
        timeout ${BENCH_TIMEOUT:-280} build/bench/swz_bench_gemm_sm90 --dtype $t --shape 4096x4096x4096,8192x8192x8192 \
          --layout NT,NN,TN,TT --configs auto --variants base= --reps 5 --rounds ${STEADY_ROUNDS:-15} \
          >"$OUT/gemm_steady_$t.log" 2>&1
        rc=$?
        summary+=("gemm steady $t: rc=$rc $(grep -E "^$t +(NT|NN|TN|TT) .* in=" "$OUT/gemm_steady_$t.log" |
          awk '{printf "%s %s %s; ", $2, $3, $4}')")
      done ;;
    gemm_llm_steady)
      # The default config ("auto") at the LLM shapes of issue 12, NT, f16 and bf16, in rounds against cuBLAS (as
      # gemm_steady): the steadier measure of the LLM done-when than gemm_llm's one measurement a column.
      llm=
      for m in 16 128 2048 8192; do
        for nk in 4096x4096 14336x4096 4096x14336 11008x4096; do llm+="${llm:+,}${m}x$nk"; done
      done
      for t in f16 bf16; do
        timeout ${BENCH_TIMEOUT:-200} build/bench/swz_bench_gemm_sm90 --dtype $t --shape "$llm" --layout NT --configs auto \
          --variants base= --reps 5 --rounds ${STEADY_ROUNDS:-11} >"$OUT/gemm_llm_steady_$t.log" 2>&1
        rc=$?
        summary+=("gemm llm steady $t: rc=$rc $(grep -E '^geometric' "$OUT/gemm_llm_steady_$t.log")")
      done ;;
    gemm_beta)
      # C = A B + C (beta 1, C read) with the default config beside cuBLAS with the same beta, in rounds: the
      # epilogue that reads C. 0.64-0.87 of cuBLAS at 2048..8192 (thirty-fourth session, H100; BENCHMARKS.md).
      for t in f16 bf16; do
        timeout ${BENCH_TIMEOUT:-200} build/bench/swz_bench_gemm_sm90 --dtype $t --beta 1 \
          --shape "${BETA_SHAPES:-4096x4096x4096,8192x8192x8192,2048x11008x4096,1000x1000x4096}" --layout NT,TN \
          --configs auto --variants base= --reps 5 --rounds ${STEADY_ROUNDS:-7} >"$OUT/gemm_beta_$t.log" 2>&1
        rc=$?
        summary+=("gemm beta=1 $t: rc=$rc $(grep -E '^geometric' "$OUT/gemm_beta_$t.log")")
      done ;;
    tail_ab)
      # The tail shapes (the LLM gap on the H100, twenty-ninth session): the default against 128-wide tiles with the
      # tail, alone and in pairs, and 256-wide tiles without it.
      ab "tail A/B" tail_ab "${TAIL_SHAPES:-2048x11008x4096,8192x14336x4096}" \
        'auto;bn=128,stages=6,epilogue=tma,tail=4;bn=128,stages=6,cluster=2,epilogue=tma,tail=4;bn=256,stages=4,epilogue=tma;bn=256,stages=4,cluster=2,epilogue=tma' ;;
    skinny_ab)
      # One or two tile rows against N = 4096 (128 x 4096 x 4096: 0.885 / 0.908 on the H100, twenty-ninth session):
      # the default against 64-row tiles (arows=64, bn 64, the tuner's pick there).
      ab "skinny A/B" skinny_ab "${SKINNY_SHAPES:-128x4096x4096,128x4096x14336,96x4096x4096,256x4096x4096}" \
        'auto;bn=64,stages=14,arows=64' ;;
    rows64_ab)
      # One tile row of 65-128 rows against N = 4096 (thirtieth session, H100): the default (64-row tiles, bn 64,
      # arows=64 since then) against the configs it replaced (128 x 32 tiles; 128-wide tiles in 4 K slices), in
      # every kernel layout (NN and TN take no 32-wide tiles).
      for l in NT TT NN TN; do
        case $l in NT|TT) old='auto;bn=32,stages=11;bn=128,stages=6,epilogue=tma,splits=4' ;;
                   *) old='auto;bn=128,stages=6,epilogue=tma,splits=4' ;; esac
        case $l in NT) sh=72x4096x4096,80x4096x4096,96x4096x4096,112x4096x4096,128x4096x4096,80x4096x14336,128x4096x8192,128x4096x14336 ;;
                   *) sh=80x4096x4096,128x4096x4096,128x4096x14336 ;; esac
        ab "rows64 A/B $l" rows64_ab_$l "${ROWS64_SHAPES:-$sh}" "$old" $l
      done ;;
    rows64_more)
      # 128 x 4096 x 4096 at 0.94-0.95 of cuBLAS on 64 x 64 tiles (thirtieth session, H100): the default against
      # those tiles in pairs sharing B, 64 x 128 tiles K whole or in 2 slices summed in a cluster, 64 x 64 in 2
      # such slices, 64 x 32 (two waves), a shallower ring, and rasters of 16.
      ab "rows64 more" rows64_more "${ROWS64_SHAPES:-128x4096x4096,112x4096x4096,128x4096x8192}" \
        'auto;bn=64,stages=14,arows=64,cluster=2;bn=128,stages=9,arows=64;bn=128,stages=9,arows=64,splits=2,reduce=cluster;bn=64,stages=14,arows=64,splits=2,reduce=cluster;bn=32,stages=18,arows=64;bn=64,stages=10,arows=64;bn=64,stages=14,arows=64,raster=16' ;;
    m16_ab)
      # M = 16 (thirty-first session, H100): under ncu 64-row tiles of C^T (swap=1, arows=64; the tuner's pick at
      # 16 x 4096 x 14336) take 45.0 us against the default's 52.4 (cuBLAS 43.7), but by events they lead only at K =
      # 14336. The default against them, alone and with K in a cluster pair, at the four M = 16 LLM shapes.
      ab "m16 A/B" m16_ab "${M16_SHAPES:-16x4096x14336,16x4096x4096,16x14336x4096,16x11008x4096}" \
        'auto;bn=32,stages=18,arows=64,swap=1;bn=32,stages=18,arows=64,swap=1,splits=2,reduce=cluster' ;;
    swap128_ab)
      # cuBLAS runs 128 x 4096 x 4096 as 64 x 64 tiles in pairs along N that share A (ncu: nvjet_..._64x64_64x13_1x2,
      # thirty-first session, H100). Swapped (C^T = B^T A^T) our pairs along M share the original A: the same structure
      # as a config that is valid today. The default against it, swapped tiles alone and 64 x 128 ones: swapped pairs
      # 0.83-0.88 against the default's 0.94-0.95 (thirty-second session, H100; BENCHMARKS.md).
      ab "swap128 A/B" swap128_ab "${SWAP128_SHAPES:-128x4096x4096,112x4096x4096,128x4096x14336,128x11008x4096}" \
        'auto;bn=64,stages=14,arows=64,swap=1;bn=64,stages=14,arows=64,swap=1,cluster=2;bn=64,stages=13,arows=64,swap=1,cluster=2;bn=128,stages=9,arows=64,swap=1' ;;
    tn_ab)
      # TN 4096^3 (0.995-1.002 of cuBLAS, thirty-first session, H100): the default against other rasters, pairs and
      # 128-wide tiles.
      ab "TN A/B" tn_ab "${TN_SHAPES:-4096x4096x4096}" \
        'auto;bn=256,stages=4,raster=8,epilogue=tma;bn=256,stages=4,raster=16,cluster=2,epilogue=tma;bn=256,stages=4,raster=8,cluster=2,epilogue=tma;bn=128,stages=6,raster=16,epilogue=tma;bn=256,stages=4,raster=32,epilogue=tma' TN ;;
    ncu_llm)
      # Kernel times under ncu (clocks free, two launches a kernel), f16 NT: cuBLAS and each config of NCU_CONFIGS
      # (";"-separated, default the default) at NCU_SHAPES; duration, DRAM throughput, L2 hit rate, grid.
      m="--clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,launch__grid_size"
      IFS=';' read -ra cfgs <<<"${NCU_CONFIGS:-auto}"
      for s in ${NCU_SHAPES:-16x4096x14336 128x4096x4096 2048x11008x4096}; do
        for c in cublas "${cfgs[@]}"; do
          k=gemm_sm90; cc=$c; [ "$c" = cublas ] && k=nvjet && cc=auto
          echo "##### $s $c"
          timeout 60 ncu $m -k regex:$k -c 2 build/bench/swz_bench_gemm_sm90 --dtype f16 --layout NT --shape $s \
            --configs "$cc" --reps 20 2>&1 | grep -E 'gpu__time|dram__|lts__|grid_size|\(.*\)x\('
        done
      done >"$OUT/ncu_llm.log" 2>&1
      # Each shape and config gives two launches; fewer lines mean ncu failed or found no such kernel (see the log).
      summary+=("ncu_llm: $(grep -c gpu__time "$OUT/ncu_llm.log") launches timed") ;;
    swap_ab)
      # M = 16 at N = 4096 (twenty-ninth session, H100): the bf16 tune of 16 x 4096 x 4096 kept 64-row tiles of C^T
      # (swap=1, arows=64, bn 32, 18 stages), which re-timed at half the default's speed in the same run; at K = 14336
      # f16 the same config ran 5% ahead. The default against it, in rounds.
      ab "swap A/B" swap_ab "${SWAP_SHAPES:-16x4096x4096,16x4096x14336}" 'auto;bn=32,stages=18,arows=64,swap=1' ;;
    gemm_square)
      # Untuned and tuned Engine::gemm at 4096^3 and 8192^3, every layout, f16 and bf16.
      for t in f16 bf16; do
        timeout ${BENCH_TIMEOUT:-280} build/bench/swz_bench_gemm --tuned --quick --dtype $t --reps 10 \
          --layout ${SQUARE_LAYOUTS:-NT,NN,TN,TT} >"$OUT/gemm_square_$t.log" 2>&1
        summary+=("gemm --tuned --quick $t: rc=$? $(grep -E '^geometric mean' "$OUT/gemm_square_$t.log")")
      done ;;
    transpose)
      timeout 200 build/bench/swz_bench_transpose --reps 20 >"$OUT/transpose.log" 2>&1
      summary+=("transpose bench: rc=$? $(grep -ciE 'of copy|% ' "$OUT/transpose.log") rows") ;;
    nonvrtc)
      # A machine with only the driver: the app's kernels come from a cache built where NVRTC was.
      ex=build/tests/package_examples
      d=$(mktemp -d)
      { SWZJIT_CACHE_DIR=$d SWZJIT_WORKER=$PWD/$ex/prefix/libexec/swz-worker $ex/build/engine_app &&
        SWZJIT_LIBNVRTC=/nonexistent/libnvrtc.so.13 SWZJIT_LOG_LEVEL=info SWZJIT_CACHE_DIR=$d \
          SWZJIT_WORKER=$PWD/$ex/prefix/libexec/swz-worker $ex/build/engine_app; } >"$OUT/nonvrtc.log" 2>&1
      summary+=("engine_app twice, the second without NVRTC: rc=$? $(grep -c 'looking kernels up as built by NVRTC' "$OUT/nonvrtc.log") borrowed-identity line(s)") ;;
    python)
      # build/python (carried) must match the GPU machine's Python (3.12 there): configure the build with
      # -DSWZJIT_PYTHON=ON -DPython_EXECUTABLE=<a python3.12 with nanobind> and build the target _swzjit.
      py=${PYTHON:-/opt/torch/.venv/bin/python}
      SWZJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/build/python timeout 400 "$py" -m pytest -q -rs python/tests/test_gpu.py \
        >"$OUT/python_gpu.log" 2>&1
      summary+=("python gpu tests: rc=$? $(tail -1 "$OUT/python_gpu.log")") ;;
  esac
  summary[-1]="${summary[-1]} ($(( $(date +%s) - start )) s)"
done
printf '%s\n' "${summary[@]}"
