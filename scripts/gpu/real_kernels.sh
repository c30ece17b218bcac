#!/usr/bin/env bash
# ktui verify over REAL kernels on one GPU (issues 23 and 26): passing KernelBench leaderboard
# solutions (CUDA, written by models, not by the project) with KernelBench's references, as traces
# written by scripts/real_kernel_sweep.py into an ignored folder ($SWEEP, default .i26sweep, carried
# to the machine). Cold: a fresh cache, every extension built. The pipeline on (MODES=on) or both
# (MODES=on,off). Run from the repository root:
#
#     python scripts/real_kernel_sweep.py .i26sweep --leaderboard DIR --kernelbench DIR --n 36   # here
#     OUT=/some/dir bash scripts/gpu/real_kernels.sh                                            # there
#
# Writes $OUT/pipeline_compare.md/.json (wall, verdicts, hack classes, per-stage and per-probe
# seconds, time in timing windows over the wall, kernels/min) and environment.txt, pipeline.log.
set -uo pipefail
. "$(dirname "$0")/common.sh"
SWEEP="${SWEEP:-.i26sweep}"
gpu_setup
gpu_environment "sweep: $SWEEP ($(ls "$SWEEP"/*.jsonl | wc -l) traces)"
timeout -s INT $(( ${BUDGET:-520} + 30 )) python3 benchmarks/bench_verify.py --pipeline-compare --modes "${MODES:-on}" \
    --sweep "$SWEEP" --out "$OUT" --trials "${TRIALS:-100}" --timeout 120 --compile-timeout "${COMPILE_TIMEOUT:-400}" --gpus "${GPUS:-0}" --budget "${BUDGET:-520}" \
    ${DEVICE:+--device "$DEVICE"} > "$OUT/pipeline.log" 2>&1
rc=$?
tail -30 "$OUT/pipeline.log"
echo "exit status: $rc"
exit $rc
