#!/usr/bin/env bash
# ktui verify on a real Harbor Triton sweep (issue 21): lilian-muyaoli/kernelbench-harbor's
# results/jobs (3 models x 2 samples x 10 tasks, terminus-2, Triton kernels, reward.json per trial).
# The sweep has no licence, so it is not in the repository: copy its results/jobs to $SWEEP (default
# .i21data/jobs, an ignored folder carried to the machine). The recorded-correct runs (reward.json
# "correct": true) are verified first, then the others with the time left. Run from the repository root:
#
#     OUT=/some/dir bash scripts/gpu/real_sweep.sh
#
# Writes under $OUT: environment.txt, verify_correct.json/.log/.txt (the recorded-correct runs),
# verify_rest.json/.log (the others). References come from each run's task prompt (no --reference).
# The task folders (the benchmark's subset_final/, no licence either: carried like the jobs, default
# .i21data/subset_final) give each task's correctness rule (cosine for nsa_block_sparse and
# fused_silu_fp8): passed as --tasks when that folder is there; without it the verdicts say the
# harness's rule is unknown.
set -uo pipefail
. "$(dirname "$0")/common.sh"
SWEEP="${SWEEP:-.i21data/jobs}"
BUDGET="${BUDGET:-420}"  # seconds for both verify calls together
CORRECT_S="${CORRECT_S:-$((BUDGET * 2 / 3))}"  # of which the recorded-correct runs
gpu_setup /tmp/ktui-real-sweep-cache
gpu_environment
python3 - "$SWEEP" > /tmp/real_sweep_lists.txt <<'PY'
import glob, json, os, sys
root = sys.argv[1]
good, rest = [], []
for r in sorted(glob.glob(os.path.join(root, "*", "*", "*", "reward.json"))):
    t = os.path.join(os.path.dirname(r), "trajectory.json")
    (good if json.load(open(r)).get("correct") is True else rest).append(t)
print(" ".join(good))
print(" ".join(rest))
PY
GOOD=$(sed -n 1p /tmp/real_sweep_lists.txt)
REST=$(sed -n 2p /tmp/real_sweep_lists.txt)
echo "recorded correct: $(echo $GOOD | wc -w) runs; others: $(echo $REST | wc -w)"
T0=$(date +%s)
TASKS="${TASKS:-.i21data/subset_final}"
OPTS="--trials 30 --timeout ${TIMEOUT:-300} --compile-timeout 240"
if [ -d "$TASKS" ]; then OPTS="$OPTS --tasks $TASKS"; echo "task folders: $TASKS"; else echo "no task folders ($TASKS)"; fi
# shellcheck disable=SC2086
timeout "$CORRECT_S" python3 -m ktui verify $GOOD $OPTS --json ${EVENTS:+--events "$OUT/events_correct.json"} > "$OUT/verify_correct.json" 2> "$OUT/verify_correct.log"
echo "verify (recorded correct) rc=$? in $(( $(date +%s) - T0 )) s"
# shellcheck disable=SC2086
timeout 45 python3 -m ktui verify $GOOD $OPTS > "$OUT/verify_correct.txt" 2>&1  # the table, from the cache
LEFT=$(( BUDGET - ($(date +%s) - T0) ))
if [ "$LEFT" -gt 30 ]; then
    # shellcheck disable=SC2086
    timeout "$LEFT" python3 -m ktui verify $REST $OPTS --json ${EVENTS:+--events "$OUT/events_rest.json"} > "$OUT/verify_rest.json" 2> "$OUT/verify_rest.log"
    echo "verify (others) rc=$? in $(( $(date +%s) - T0 )) s total"
fi
