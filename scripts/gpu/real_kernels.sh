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
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the results directory}"
SWEEP="${SWEEP:-.i26sweep}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1
    echo "cpu cores: $(nproc); memory: $(grep MemAvailable /proc/meminfo)"
    python3 -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda)" 2>&1
    echo "sweep: $SWEEP ($(ls "$SWEEP"/*.jsonl | wc -l) traces)"
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"
timeout -s INT $(( ${BUDGET:-520} + 30 )) python3 benchmarks/bench_verify.py --pipeline-compare --modes "${MODES:-on}" \
    --sweep "$SWEEP" --out "$OUT" --trials "${TRIALS:-100}" --timeout 120 --compile-timeout "${COMPILE_TIMEOUT:-400}" --gpus "${GPUS:-0}" --budget "${BUDGET:-520}" \
    ${DEVICE:+--device "$DEVICE"} > "$OUT/pipeline.log" 2>&1
rc=$?
tail -30 "$OUT/pipeline.log"
echo "exit status: $rc"
exit $rc
