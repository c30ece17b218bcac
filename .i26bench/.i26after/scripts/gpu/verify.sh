#!/usr/bin/env bash
# ktui verify on the GPU machine (issue 11; issue 12 on a machine of several GPUs): a cold sweep of
# >= 24 distinct CUDA kernels (honest load_inline kernels of varied ops and shapes written by
# benchmarks/make_cuda_sweep.py, the seed run's four versions, the hack corpus's CUDA traces),
# verified by `ktui verify` on every GPU of the machine, against a serial loop of `ktui repro`, and
# with --engine ray when Ray is installed. Run from the repository root:
#
#     OUT=/some/dir bash scripts/gpu/verify.sh
#
# Writes under $OUT (at most 6 files): bench_verify.md (figures + exact commands), bench_verify.json,
# timeline_local.txt, timeline_ray.txt (builds in flight / kernels timing over time), bench_verify.log,
# environment.txt. Finishes within 8 minutes (the benchmark's own budget is 430 s). The machine's
# NCCL_NVLS_ENABLE / TORCH_SYMM_MEM_DISABLE_MULTICAST settings are left as they are.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the results directory}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# the GPUs: what this machine shows (CUDA_VISIBLE_DEVICES when set, else every GPU nvidia-smi lists)
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    GPUS="$CUDA_VISIBLE_DEVICES"
else
    GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' | paste -sd, -)
fi
NGPU=$(echo "$GPUS" | tr ',' '\n' | grep -c .)
{
    echo "date: $(date -u +%FT%TZ)"
    echo "gpus ($NGPU): $GPUS"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1
    echo "cpu cores: $(nproc)"
    python -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda, '| available', torch.cuda.is_available())" 2>&1
    python -c "import ninja; print('ninja ok')" 2>&1 | tail -1
    python -c "import ray; print('ray', ray.__version__)" 2>&1 | tail -1
    env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|CUDA_VISIBLE_DEVICES)=' || true
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"
if [ "$NGPU" -lt 1 ]; then
    echo "no GPU visible: nothing to measure" | tee -a "$OUT/environment.txt"
    exit 1
fi

timeout -s INT 465 python benchmarks/bench_verify.py --out "$OUT" --gpus "$GPUS" --honest 8 \
    --budget 430 --serial-budget 60 --identity 4 > "$OUT/bench_verify.log" 2>&1
rc=$?
tail -60 "$OUT/bench_verify.log"
echo "bench_verify.py exit status: $rc"
exit $rc
