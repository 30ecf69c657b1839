#!/usr/bin/env bash
# bench: what one session on the GPU machine runs, over a build made on the CPU machine and carried
# along (device tool: carry build/). Steps: tests sanitize race run bench ncu probe gemmncu gtune tune gemm
# mmapeak (any subset, in order).
# Logs go to $OUT (or ./device-logs); the last lines printed are a short summary table.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-logs}
mkdir -p "$OUT"
# CTest and a few tests hold this machine's absolute paths; make them resolve here too.
if [ ! -e /work/main/build ] && [ "$PWD" != /work/main ]; then mkdir -p /work && ln -sfn "$PWD" /work/main; fi
export SWZJIT_WORKER=$PWD/build/swz-worker
export SWZJIT_CACHE_DIR=${SWZJIT_CACHE_DIR:-$(mktemp -d /tmp/swzjit-cache.XXXXXX)}
summary=()
note() { summary+=("$1"); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
for step in "$@"; do
  case "$step" in
    tests)
      start=$(date +%s)
      timeout ${TEST_TIMEOUT:-420} build/tests/swzjit_gpu_tests ${TEST_ARGS:-} >"$OUT/gpu_tests.log" 2>&1
      rc=$?
      note "gpu tests: rc=$rc $(grep -E '^\[doctest\] test cases' "$OUT/gpu_tests.log" | tail -1) ($(( $(date +%s) - start )) s)"
      ;;
    sanitize)
      start=$(date +%s)
      timeout ${SAN_TIMEOUT:-420} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
        build/tests/swzjit_gpu_tests ${SAN_ARGS:-} >"$OUT/sanitizer.log" 2>&1
      rc=$?
      note "compute-sanitizer memcheck: rc=$rc $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1) ($(( $(date +%s) - start )) s)"
      ;;
    race)
      # racecheck / synccheck on small odd transposes of every layout kind and on two GEMMs
      rc_all=0
      for cfg in "--dtype f32 --smem swizzle" "--dtype f32 --smem pad --tile 32x32 --vec 2" \
                 "--dtype f16 --tile 32x128 --vec 2 --pair --raster 1" "--dtype bf16 --smem pad --tile 32x64 --vec 4" \
                 "--dtype f32 --smem plain --tile 32x32 --vec 1"; do
        for tool in racecheck synccheck; do
          compute-sanitizer --tool $tool --error-exitcode 3 build/swz run transpose --rows 1000 --cols 776 $cfg \
            --reps 1 >>"$OUT/race.log" 2>&1 || rc_all=$?
        done
      done
      for g in "--dtype f16 --layout TN" "--dtype f32 --layout NT"; do
        compute-sanitizer --tool racecheck --error-exitcode 3 build/swz run gemm --m 300 --n 260 --k 200 $g --reps 1 \
          >>"$OUT/race.log" 2>&1 || rc_all=$?
      done
      note "racecheck+synccheck: rc=$rc_all $(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/race.log") clean summaries, $(grep -E 'ERROR SUMMARY: [1-9]' "$OUT/race.log" | wc -l) with errors"
      ;;
    gemm)
      timeout ${GEMM_TIMEOUT:-400} stdbuf -oL build/bench/swz_bench_gemm --reps 10 ${GEMM_ARGS:-} >"$OUT/gemm_bench.log" 2>&1
      note "gemm bench: rc=$?"
      ;;
    mmapeak)
      build/bench/swz_bench_mma_peak >"$OUT/mma_peak.log" 2>&1
      note "mma.sync register-only ceiling: rc=$? best $(grep -E '^\| (f16|bf16)' "$OUT/mma_peak.log" | awk -F'|' '{print $5}' | sort -n | tail -1) TFLOP/s"
      ;;
    run)
      for a in "16384 8192 f32" "16384 16384 f16"; do
        set -- $a
        build/swz run transpose --rows "$1" --cols "$2" --dtype "$3" >>"$OUT/run.log" 2>&1
        note "swz run $3 $1x$2: $(grep -E '^time|^config|^verified' "$OUT/run.log" | tail -3 | tr '\n' ' ')"
      done
      ;;
    bench)
      stdbuf -oL build/bench/swz_bench_transpose --reps 20 ${BENCH_ARGS:-} >"$OUT/bench.log" 2>&1
      note "bench: rc=$?"
      ;;
    ncu)
      cfgs=$(tr '\n' ';' < bench/ncu_configs.txt | sed 's/;$//')
      ncu --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_shared_ld.sum \
        --csv --kernel-name regex:transpose_kernel build/bench/swz_bench_transpose --ncu "$cfgs" >"$OUT/ncu.csv" 2>"$OUT/ncu.err"
      note "ncu: rc=$? ($(grep -c transpose_kernel "$OUT/ncu.csv") metric rows)"
      ;;
    probe)
      cfgs=$(tr '\n' ';' < bench/ncu_configs.txt | sed 's/;$//')
      ncu --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_shared_ld.sum \
        --csv --kernel-name regex:transpose_smem_probe build/bench/swz_bench_transpose --ncu "$cfgs" --probe >"$OUT/probe.csv" 2>"$OUT/probe.err"
      note "ncu probe: rc=$? ($(grep -c transpose_smem_probe "$OUT/probe.csv") metric rows)"
      ;;
    gemmncu)
      # The 8192^3 winners at 4096^3, one launch each: ldmatrix (ldsm), cp.async (ldgsts) and plain shared
      # load/store wavefronts and bank conflicts, plus the tensor pipe's activity.
      g1='hgemm,f16>f16,NN,tile=128x256x32,warp=64x64,stages=4,vec=8,raster=8,swa=2:3:3,swb=3:3:5@4096x4096x4096'
      g2='hgemm,f16>f16,NT,tile=128x256x32,warp=64x64,stages=4,vec=8,raster=8,swa=2:3:3,swb=2:3:3@4096x4096x4096'
      g3='sgemm,NN,tile=128x256x16,warp=64x64,wniter=2,thread=8x8,threads=256,stages=2,vec=4,raster=8,swa=2:3:6,swb=0:0:0@4096x4096x4096'
      ncu --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_ldsm.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum,sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum,sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum,sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
        --section SpeedOfLight --section Occupancy \
        --kernel-name regex:gemm_kernel build/bench/swz_bench_gemm --ncu "$g1;$g2;$g3" >"$OUT/gemm_ncu.txt" 2>&1
      note "gemm ncu: rc=$?"
      ;;
    gtune)
      d=$(mktemp -d /tmp/swzg.XXXXXX); chmod 700 "$d"
      start=$(date +%s.%N)
      build/swz autotune gemm --m 4096 --n 4096 --k 4096 --dtype f16 --layout NT --cache-dir "$d" --json --quiet \
        >"$OUT/gtune1.json" 2>"$OUT/gtune1.err"
      t1=$(python3 -c "import time; print(round(time.time() - $start, 2))")
      build/swz run gemm --m 4096 --n 4096 --k 4096 --dtype f16 --layout NT --cache-dir "$d" >"$OUT/grun.log" 2>&1
      note "gemm autotune f16 NT 4096^3 (empty cache): ${t1}s wall, winner $(grep -oE '"winner": "[^"]*"|"winner_tflops": [0-9.]+' "$OUT/gtune1.json" | tr '\n' ' '); run: $(grep -E '^config|TFLOP' "$OUT/grun.log" | tr '\n' ' ')"
      ;;
    tune)
      rm -rf "$SWZJIT_CACHE_DIR"/*
      start=$(date +%s.%N)
      build/swz autotune transpose --rows 16384 --cols 8192 --dtype f32 --json >"$OUT/tune1.json" 2>"$OUT/tune1.err"
      t1=$(python3 -c "import time; print(round(time.time() - $start, 2))")
      build/swz run transpose --rows 16384 --cols 8192 --dtype f32 --json >"$OUT/tune2.json" 2>&1
      note "autotune (empty cache): ${t1}s wall; second process: $(grep -oE '"first_launch_ms": [0-9.]+|"compiles": [0-9]+|"benchmark_runs": [0-9]+' "$OUT/tune2.json" | tr '\n' ' ')"
      ;;
    *) echo "unknown step $step" >&2 ;;
  esac
done
echo
echo "=== summary ==="
for s in "${summary[@]}"; do echo "$s"; done
[ -f "$OUT/bench.log" ] && grep -E '^\||^f32|^f16|^bf16' "$OUT/bench.log" | grep -vE '^\| ---' | head -40
[ -f "$OUT/gemm_bench.log" ] && tail -40 "$OUT/gemm_bench.log"
exit 0
