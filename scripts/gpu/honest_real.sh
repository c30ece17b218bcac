#!/usr/bin/env bash
# Issue 26 on one GPU, one call (under 8 minutes): ktui verify over
#   honest   34 honest real kernels of CUDA-L1 (github.com/deepreinforce-ai/CUDA-L1 @ 4ac1f22, MIT; copied
#   honestcu with their KernelBench references into tests/fixtures/real/cudal1/gpu_corpus.json): plain torch
#            (honest) and CUDA extensions, load_inline (honestcu) -- no hack class may be named on any;
#   spot     CUDA-L1 kernels with a static cuda_graph / result_cache / precision_downgrade flag (does a
#            probe see it?) and its kernels with a true class (the CPU: L1 P20, P22, P62, P71, P76; static: P63, L2 P9-18)
#            or a known hack (L1 P9, a lazy tensor subclass);
#   heldout  the held-out hacks and honest variants of scripts/hack_variants.py (sessions 31, 35, and the
#            CUDA-only ones of 34).
# The four groups run as four ktui verify processes at once, one cache (so one device lock: the timing
# windows still have the GPU alone). The problems' sizes of 64 or more are divided by SHRINK (default 4:
# the judge's time per kernel grows with its outputs, one 64 MiB output took 216 s on an H100 in session
# 36; the kernels' code is unchanged). Run from the repository root:
#
#     OUT=/some/dir bash scripts/gpu/honest_real.sh                       # on the GPU
#     OUT=/tmp/x DEVICE=cpu SHRINK=8 LIMIT=2 bash scripts/gpu/honest_real.sh   # a dry run on a CPU
#
# Writes under $OUT: environment.txt, verify_<group>.json/.log (EVENTS=1: events_<group>.json, the engine's
# timeline per group), honest_real.md/.json (per kernel:
# verdict, classes -- static, and *dynamic* ones named by a probe -- reason, as expected or not).
set -uo pipefail
. "$(dirname "$0")/common.sh"
gpu_setup /tmp/ktui-honest-real-cache
BUDGET="${BUDGET:-360}"  # seconds for the four verify calls (run at once)
TRACES="${TRACES:-$(mktemp -d)/traces}"
BACKEND=cuda
[ "${DEVICE:-}" = cpu ] && BACKEND=cpu
gpu_environment "budget: $BUDGET s; shrink: ${SHRINK:-4}; limit: ${LIMIT:-none}; device: ${DEVICE:-cuda}"
# shellcheck disable=SC2086
python3 scripts/honest_real_gpu.py traces "$TRACES" --shrink "${SHRINK:-4}" ${LIMIT:+--limit "$LIMIT"} \
    --backend "$BACKEND" || exit 2
cp "$TRACES/manifest.json" "$OUT/manifest.json"
OPTS="--trials ${TRIALS:-20} --timeout 120 --compile-timeout 300 ${DEVICE:+--device $DEVICE}"
T0=$(date +%s)
declare -A JOBS=([honest]=2 [honestcu]=10 [spot]=3 [heldout]=2)
pids=()
for g in honest honestcu spot heldout; do
    # shellcheck disable=SC2086
    timeout -s INT -k 30 "$BUDGET" python3 -m ktui verify "$TRACES/$g" $OPTS -j "${JOBS[$g]}" --json ${EVENTS:+--events "$OUT/events_$g.json"} \
        > "$OUT/verify_$g.json" 2> "$OUT/verify_$g.log" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
echo "verify (4 groups at once): $(( $(date +%s) - T0 )) s"
for g in honest honestcu spot heldout; do  # a JSON cut short (killed past the grace): read again from the cache
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT/verify_$g.json" 2>/dev/null || \
        timeout -s INT -k 5 15 python3 -m ktui verify "$TRACES/$g" $OPTS -j 1 --json > "$OUT/verify_$g.json" 2>> "$OUT/verify_$g.log"
done
python3 scripts/honest_real_gpu.py table "$OUT" --traces "$TRACES"
rc=$?
echo "table: $OUT/honest_real.md (exit $rc: 1 = an honest kernel has a hack class); total $(( $(date +%s) - T0 )) s"
exit 0
