#!/usr/bin/env bash
# Issue 23's targets in one GPU call: `ktui verify` on a cold sweep of CUDA and Triton kernels
# (benchmarks/make_cuda_sweep.py: HONEST honest CUDA load_inline kernels of as many problems, TRITON
# honest Triton kernels of the first TRITON of those problems (two kernels per problem: the reference's
# outputs and time shared), the hack corpus's CUDA traces (relu, matmul... several kernels each), the
# seed run), judged:
#
#   1. with the pipeline on, cold (builds included): wall, per-stage and per-probe seconds, kernels per
#      minute, slot time per kernel past its timing, time in timing windows over the wall, nvidia-smi
#      utilization, where each kernel's reference time came from and the reference timing requests;
#   2. the same command again on the same cache: the warm re-run (target under 10 s);
#   3. with the pipeline off (the builds the first run made, a fresh result and reference cache): the
#      verdicts compared run by run (reproduced outcome, honesty classes, failure kind; timings are
#      measured twice and not compared), over every run both judged.
#
# Run from the repository root (one `run` call; the whole script stays under BUDGET + 60 s):
#
#     OUT=$OUT bash scripts/gpu/verify_speed.sh          # HONEST=12 TRITON=8 BUDGET=500 GPUS=0 [SWEEP=DIR]
#
# Writes $OUT/pipeline_compare.md (the figures, the identity, the exact commands), pipeline_compare.json,
# events_on.json.gz and events_off.json.gz (every event of each mode),
# pipeline.log, environment.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the results directory}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
BUDGET="${BUDGET:-500}"
{
    echo "date: $(date -u +%FT%TZ); main at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
        --format=csv,noheader 2>&1
    echo "cpu cores: $(nproc); memory: $(grep MemAvailable /proc/meminfo)"
    python3 -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda)" 2>&1
    python3 -c "import triton; print('triton', triton.__version__)" 2>&1
    command -v nvcc >/dev/null && nvcc --version | tail -1
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"
CMD=(python3 benchmarks/bench_verify.py --pipeline-compare --out "$OUT" --first on --modes on,off --share-builds
     --warm --warm-s 40 --first-share 1.4 --honest "${HONEST:-12}" --triton "${TRITON:-8}" --trials 100
     --timeout 120 --compile-timeout 300 --gpus "${GPUS:-0}" --budget "$BUDGET")
# a real sweep instead of the generated one (its own layout, e.g. a carried Harbor jobs folder): SWEEP=DIR
if [ -n "${SWEEP:-}" ]; then CMD+=(--sweep "$SWEEP"); fi
echo "${CMD[*]}" > "$OUT/command.txt"
timeout -s INT $(( BUDGET + 45 )) "${CMD[@]}" > "$OUT/pipeline.log" 2>&1
rc=$?
tail -40 "$OUT/pipeline.log"
echo "bench_verify.py --pipeline-compare exit status: $rc"
exit $rc
