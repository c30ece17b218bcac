#!/usr/bin/env bash
# `ktui repro --profile` on a CUDA GPU with Nsight Compute (issue 10). Run from the repository root
# on the H200 machine (CUDA torch, ninja, ncu preinstalled; no network). Writes at most 8 files
# under $OUT and finishes within 8 minutes (timeouts 240 + 45 + 190 s):
#
#   profile_env.txt        machine, ncu, commit
#   profile_v4.txt         `ktui repro traces/popcorn_l1_p27_grok-4.3.jsonl --version v4 --profile` (the table,
#                          the roofline), its exit status and wall time
#   profile_v4.json        the same profile as --json (written by the GPU test)
#   profile_pytest.txt     pytest -m gpu tests/test_profile_gpu.py (seed v4 + a memory-bound and a
#                          compute-bound kernel)
#   kernel_raw.csv, kernel_ncu.log, reference_raw.csv, reference_ncu.log
#                          ktui's own ncu command's raw page and log (the v4 text run), for fixtures
set -u
: "${OUT:?set OUT to the output folder}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="$(mktemp -d /tmp/ktui-profile-cache-XXXX)"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
TRACE=traces/popcorn_l1_p27_grok-4.3.jsonl
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  "$NCU" --version | tail -1
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"
  git log -1 --oneline 2>/dev/null || true
} > "$OUT/profile_env.txt" 2>&1

# 1. the text report, keeping ktui's own raw ncu output
s=$(date +%s.%N)
KTUI_PROFILE_KEEP="$OUT" timeout 240 python3 -m ktui repro "$TRACE" --version v4 --profile > "$OUT/profile_v4.txt" 2>&1
rc=$?; e=$(date +%s.%N)
echo "\$ python -m ktui repro $TRACE --version v4 --profile   # rc=$rc wall_s=$(python3 -c "print(round($e-$s,1))")" \
  >> "$OUT/profile_v4.txt"
# the plain run of the same version, for the overhead figure (build cached by now)
s=$(date +%s.%N); timeout 45 python3 -m ktui repro "$TRACE" --version v4 --fresh > /dev/null 2>&1; e=$(date +%s.%N)
echo "plain ktui repro --version v4 --fresh: wall_s=$(python3 -c "print(round($e-$s,1))")" >> "$OUT/profile_env.txt"

# 2. the GPU tests (they write the --json profile of v4)
KTUI_PROFILE_JSON="$OUT/profile_v4.json" timeout 190 python3 -m pytest -m gpu tests/test_profile_gpu.py -q \
  -p no:cacheprovider > "$OUT/profile_pytest.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/profile_pytest.txt"
rm -rf "$KTUI_CACHE_DIR"
