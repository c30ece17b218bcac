#!/usr/bin/env bash
# ktui verify on KernelBench's Triton generation sweep (issue 21): ScalingIntelligence/KernelBench,
# branch sokserey/tritonDump, 6842d4f (MIT): 134 recorded-correct Triton kernels
# (triton_runs/level{1,2}_triton/kernels/*_triton.py) with their results.jsonl (speedups recorded on
# an H200 for 50 of them, an H100 for 84) and the references in KernelBench/level{1,2}/. Make the
# folder once (an ignored folder carried to the machine), from the repository root:
#
#     git -C <mirror of KernelBench> archive 6842d4f triton_runs KernelBench/level1 KernelBench/level2 \
#         | (mkdir -p .i21kb && tar -x -C .i21kb)
#     OUT=/some/dir bash scripts/gpu/triton_sweep.sh
#
# The kernels recorded on an H200 are verified first (the same GPU: their speedups are comparable),
# then the others with the time left. Writes under $OUT: environment.txt, verify_h200.json/.log/.txt,
# verify_h100.json/.log.
set -uo pipefail
. "$(dirname "$0")/common.sh"
SWEEP="${SWEEP:-.i21kb/triton_runs}"
BUDGET="${BUDGET:-540}"  # seconds for both verify calls together
FIRST_S="${FIRST_S:-$((BUDGET * 2 / 3))}"
gpu_setup /tmp/ktui-triton-sweep-cache
gpu_environment
python3 - "$SWEEP" > /tmp/triton_sweep_lists.txt <<'PY'
import glob, json, os, sys
root = sys.argv[1]
h200, rest = [], []
for res in sorted(glob.glob(os.path.join(root, "*", "results.jsonl"))):
    for line in open(res):
        d = json.loads(line)
        k = os.path.join(os.path.dirname(res), "kernels", os.path.basename(d["kernel_path"]))
        hw = (d.get("runtime_triton_stats") or {}).get("hardware", "")
        (h200 if "H200" in hw else rest).append(k)
print(" ".join(h200))
print(" ".join(rest))
PY
FIRST=$(sed -n 1p /tmp/triton_sweep_lists.txt)
REST=$(sed -n 2p /tmp/triton_sweep_lists.txt)
echo "recorded on an H200: $(echo $FIRST | wc -w) kernels; others: $(echo $REST | wc -w)"
T0=$(date +%s)
OPTS="--trials 30 --timeout ${TIMEOUT:-300} --compile-timeout 240"
# shellcheck disable=SC2086
timeout "$FIRST_S" python3 -m ktui verify $FIRST $OPTS --json ${EVENTS:+--events "$OUT/events_h200.json"} > "$OUT/verify_h200.json" 2> "$OUT/verify_h200.log"
echo "verify (H200-recorded) rc=$? in $(( $(date +%s) - T0 )) s"
# shellcheck disable=SC2086
timeout 45 python3 -m ktui verify $FIRST $OPTS > "$OUT/verify_h200.txt" 2>&1  # the table, from the cache
LEFT=$(( BUDGET - ($(date +%s) - T0) ))
if [ "$LEFT" -gt 30 ]; then
    # shellcheck disable=SC2086
    timeout "$LEFT" python3 -m ktui verify $REST $OPTS --json ${EVENTS:+--events "$OUT/events_h100.json"} > "$OUT/verify_h100.json" 2> "$OUT/verify_h100.log"
    echo "verify (others) rc=$? in $(( $(date +%s) - T0 )) s total"
fi
