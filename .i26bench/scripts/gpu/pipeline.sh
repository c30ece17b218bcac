#!/usr/bin/env bash
# ktui verify with the pipeline on and off on one GPU (issue 23): a cold sweep of CUDA kernels
# (benchmarks/make_cuda_sweep.py: honest load_inline kernels of varied ops and shapes, the seed run's
# versions, the hack corpus's CUDA traces), verified twice, cold each time: `--no-pipeline` first, then
# the pipeline (two judges on the GPU, the timing windows alone on it). Run from the repository root:
#
#     OUT=/some/dir bash scripts/gpu/pipeline.sh            # HONEST=30 by default; BUDGET=560 s
#
# Writes $OUT/pipeline_compare.md (wall, per-stage and per-probe seconds, time in timing windows over
# the wall, kernels/min, MAX_JOBS, verdicts identical or not, exact commands), pipeline_compare.json,
# pipeline.log, environment.txt. For a real sweep instead: --sweep DIR (its traces) in the command below.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the results directory}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1
    echo "cpu cores: $(nproc); memory: $(grep MemAvailable /proc/meminfo)"
    python -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda)" 2>&1
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"
timeout -s INT $(( ${BUDGET:-560} + 30 )) python benchmarks/bench_verify.py --pipeline-compare --out "$OUT" \
    --honest "${HONEST:-30}" --trials 100 --timeout 120 --gpus "${GPUS:-0}" --budget "${BUDGET:-560}" \
    > "$OUT/pipeline.log" 2>&1
rc=$?
tail -40 "$OUT/pipeline.log"
echo "bench_verify.py --pipeline-compare exit status: $rc"
exit $rc
