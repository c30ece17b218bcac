#!/usr/bin/env bash
# `ktui repro --profile` with ncu + the profiled target inside the repro sandbox (real ncu, real GPU).
# Run from the repository root on the H200 machine (no network). Writes 3 files under $OUT, < 8 min:
#   profsbx_ns.json    --profile --json with namespaces (the default): notes name the protections
#   profsbx_nons.json  the same with KTUI_TEST_SANDBOX_LEVEL=none (tells a namespace problem, e.g.
#                      ncu needing loopback inside the network namespace, from anything else)
#   profsbx_env.txt    machine, ncu, commit, exit statuses and wall times
set -u
: "${OUT:?set OUT to the output folder}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-$(mktemp -d /tmp/ktui-profsbx-cache-XXXX)}"  # reuse a warm build cache
TRACE=traces/popcorn_l1_p27_grok-4.3.jsonl
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; (command -v ncu && ncu --version | tail -1)
  git log -1 --oneline 2>/dev/null; } > "$OUT/profsbx_env.txt" 2>&1
for mode in ns nons; do
  lvl=""; [ "$mode" = nons ] && lvl=none
  s=$(date +%s)
  KTUI_TEST_SANDBOX_LEVEL=$lvl timeout 120 python3 -m ktui repro "$TRACE" --version v4 --profile --json \
    > "$OUT/profsbx_$mode.json" 2>> "$OUT/profsbx_env.txt"
  echo "$mode: rc=$? wall_s=$(( $(date +%s) - s ))" >> "$OUT/profsbx_env.txt"
done
