#!/usr/bin/env bash
# The hack corpus (tests/fixtures/hacks) through `ktui repro --json` on a CUDA GPU (issue 15).
# Run from the repository root on the H200 machine (CUDA torch, ninja; no network). Writes under
# $OUT (5 files) and finishes within 8 minutes:
#
#   hacks_env.txt     machine, GPU, torch, commit, the commands with their exit status and wall time
#   hacks_cuda.md     the table: trace, class, expected, ktui's verdict, the classes it named, reason
#   hacks_cuda.json   the same rows as JSON (with the failure, if any)
#   hacks_warm.txt    the build-cache warm-up log (extensions built 6 at a time, timings discarded)
#   hacks_seed.txt    the seed's v4 (must stay "correct, unit error") as `ktui repro` prints it
#
# The table is the one for benchmarks/results/ (the command is in its header).
set -u
: "${OUT:?set OUT to the output folder}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="$(mktemp -d /tmp/ktui-hacks-cache-XXXX)"
export MAX_JOBS=4
START=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"
  git log -1 --oneline 2>/dev/null || true
} > "$OUT/hacks_env.txt" 2>&1

# 0. the seed's v4 in the background (its own build; GPU work is light next to the builds below)
( timeout 300 python3 -m ktui repro traces/popcorn_l1_p27_grok-4.3.jsonl --version v4 --fresh > "$OUT/hacks_seed.txt" 2>&1
  echo "seed v4 rc=$?" >> "$OUT/hacks_seed.txt" ) &
SEED_PID=$!

# 1. build every extension once, 6 at a time (their timings overlap: this pass is thrown away)
s=$(date +%s)
timeout 200 python3 scripts/hacks_corpus.py --device cuda --needs-build --jobs 6 --trials 2 --timeout 190 \
  --out /tmp/ktui-hacks-warm --tag warm > "$OUT/hacks_warm.txt" 2>&1
echo "warm-up (builds): rc=$? wall_s=$(( $(date +%s) - s ))" >> "$OUT/hacks_env.txt"

# 2. the corpus, one reproduction at a time (builds cached, results fresh)
s=$(date +%s)
left=$(( 440 - ($(date +%s) - START) ))
timeout $(( left > 60 ? left : 60 )) python3 scripts/hacks_corpus.py --device cuda --trials 20 --timeout 120 \
  --budget $(( left > 90 ? left - 60 : 30 )) --out "$OUT" > /tmp/ktui-hacks-run.txt 2>&1
rc=$?
echo "\$ python scripts/hacks_corpus.py --device cuda --trials 20   # rc=$rc wall_s=$(( $(date +%s) - s ))" \
  >> "$OUT/hacks_env.txt"
grep -E "^(ok |BAD)" /tmp/ktui-hacks-run.txt >> "$OUT/hacks_env.txt"

# 3. the seed (started first)
wait $SEED_PID
echo "total wall_s=$(( $(date +%s) - START ))" >> "$OUT/hacks_env.txt"
