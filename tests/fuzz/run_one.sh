#!/usr/bin/env bash
# tests/fuzz: one bounded libFuzzer run (a ctest of tests/fuzz/CMakeLists.txt, driven by run.sh):
#   run_one.sh FUZZER CORPUS SCRATCH SECONDS
# Starts from the committed corpus (read only) plus earlier finds in SCRATCH; any crash, leak,
# sanitizer report, hang (30 s on one input) or memory blow-up (2 GiB) fails the test and leaves the
# reproducer in SCRATCH/artifacts/.
set -euo pipefail
fuzzer=$1 corpus=$2 scratch=$3 seconds=$4
mkdir -p "$scratch/new" "$scratch/artifacts"
# fuzz_cache_import writes databases per input: in memory they cost no disk syncs.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
exec "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -max_len=262144 \
  -print_final_stats=1 -artifact_prefix="$scratch/artifacts/" "$scratch/new" "$corpus"
