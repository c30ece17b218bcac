#!/usr/bin/env bash
# The hack corpus (tests/fixtures/hacks) through `ktui repro --json` on a CUDA GPU (issue 15).
# Run from the repository root on the H200 machine (CUDA torch, ninja; no network):
#
#     OUT=dir PART=build bash scripts/gpu/hacks.sh   # the 16 traces that build an extension, + the seed
#     OUT=dir PART=plain bash scripts/gpu/hacks.sh   # the 31 that build nothing
#
# The whole corpus does not fit one call of the GPU machine (each reproduction starts two CUDA
# workers, ~8 s, and the builds come first), so it runs in two parts; merge them here with
#     python scripts/hacks_corpus.py --device cuda --merge A/hacks_cuda_build.json B/hacks_cuda_plain.json --out R
# Each part writes under $OUT and finishes within 7 minutes:
#
#   hacks_env_$PART.txt       machine, GPU, /dev's NVIDIA nodes, torch, commit, each command's status and wall time
#   hacks_cuda_$PART.md/json  the table: trace, class, expected, ktui's verdict, the classes it named, reason
#   hacks_smoke.txt           (build) one honest torch kernel first: if CUDA fails in the sandbox's
#                             minimal /dev, the part stops there and says so (and tries the host's /dev)
#   hacks_warm.txt            (build) the build-cache warm-up log (9 at a time; its timings are discarded)
#   hacks_seed.txt            (build) the seed's v4 (must stay "correct, unit error", host-bound), timed alone
set -u
: "${OUT:?set OUT to the output folder}"
PART="${PART:?PART=build or PART=plain}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-$(mktemp -d /tmp/ktui-hacks-cache-XXXX)}"
export MAX_JOBS=4
ENV="$OUT/hacks_env_$PART.txt"
START=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"
  git log -1 --oneline 2>/dev/null || true
  echo "host /dev nvidia nodes: $(cd /dev && ls -d nvidia* 2>/dev/null | tr '\n' ' ')"
} > "$ENV" 2>&1
SEED=traces/popcorn_l1_p27_grok-4.3.jsonl

if [ "$PART" = build ]; then
  # 0. smoke: CUDA inside the sandbox's minimal /dev
  timeout 120 python3 scripts/hacks_corpus.py --device cuda --trials 5 --timeout 110 --only honest_matmul_torch.jsonl \
    --out /tmp/ktui-hacks-smoke > "$OUT/hacks_smoke.txt" 2>&1
  rc=$?
  echo "smoke (honest_matmul_torch in the sandbox): rc=$rc wall_s=$(( $(date +%s) - START ))" >> "$ENV"
  if [ $rc -ne 0 ]; then
    python3 -m ktui repro tests/fixtures/hacks/honest_matmul_torch.jsonl --device cuda --trials 5 --fresh \
      >> "$OUT/hacks_smoke.txt" 2>&1
    echo "--- the same with KTUI_SANDBOX_HOST_DEV=1" >> "$OUT/hacks_smoke.txt"
    KTUI_SANDBOX_HOST_DEV=1 timeout 120 python3 -m ktui repro tests/fixtures/hacks/honest_matmul_torch.jsonl \
      --device cuda --trials 5 --fresh >> "$OUT/hacks_smoke.txt" 2>&1
    echo "smoke failed: stopping (see hacks_smoke.txt)" >> "$ENV"
    exit 1
  fi
  # 1. build every extension once, 6 at a time, the seed's too (timings overlap: thrown away)
  s=$(date +%s)
  ( MAX_JOBS=2 timeout 200 python3 -m ktui repro "$SEED" --version v4 --fresh --trials 5 > /tmp/ktui-seed-warm.txt 2>&1 ) &
  MAX_JOBS=2 timeout 200 python3 scripts/hacks_corpus.py --device cuda --needs-build --jobs 9 --trials 2 --timeout 190 \
    --out /tmp/ktui-hacks-warm --tag warm > "$OUT/hacks_warm.txt" 2>&1
  echo "warm-up (builds): rc=$? wall_s=$(( $(date +%s) - s ))" >> "$ENV"
  wait
  FLAG=--needs-build; LIMIT=330
else
  FLAG=--no-build; LIMIT=300
fi

# 2. the part, one reproduction at a time (builds cached, results fresh)
s=$(date +%s)
left=$(( LIMIT - ($(date +%s) - START) ))
timeout $(( left > 60 ? left : 60 )) python3 scripts/hacks_corpus.py --device cuda --trials 20 --timeout 120 $FLAG \
  --budget $(( left > 90 ? left - 45 : 30 )) --out "$OUT" --tag "$PART" > /tmp/ktui-hacks-run.txt 2>&1
rc=$?
echo "\$ python scripts/hacks_corpus.py --device cuda --trials 20 $FLAG   # rc=$rc wall_s=$(( $(date +%s) - s ))" >> "$ENV"
grep -E "^(ok |BAD)" /tmp/ktui-hacks-run.txt >> "$ENV"

# 3. the seed's v4, alone on the GPU (built in step 1)
if [ "$PART" = build ]; then
  s=$(date +%s)
  timeout 90 python3 -m ktui repro "$SEED" --version v4 --fresh > "$OUT/hacks_seed.txt" 2>&1
  echo "seed v4: rc=$? wall_s=$(( $(date +%s) - s ))" >> "$ENV"
fi
echo "total wall_s=$(( $(date +%s) - START ))" >> "$ENV"
