#!/usr/bin/env bash
# Issues 26 and 22 in one GPU call, side by side: scripts/gpu/honest_real.sh (34 honest real CUDA-L1
# kernels, its flagged kernels and the held-out hacks through ktui verify, with the engine's events)
# and scripts/gpu/sandbox_cuda.sh (the sandbox's checks that need CUDA, an honest worker while another
# program grows /dev/shm). Both judge through ktui's device lock, so timing windows stay alone on the
# GPU; the sandbox checks' load is part of what the verdicts must withstand.
#
#     OUT=/some/dir bash scripts/gpu/verdicts_and_sandbox.sh      # about 7 minutes
#
# Writes $OUT/honest/ and $OUT/sandbox/ (each script's files) and each one's console output.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
: "${OUT:?set OUT to the results directory}"
mkdir -p "$OUT"
T0=$(date +%s)
( OUT="$OUT/honest" EVENTS=1 bash scripts/gpu/honest_real.sh > "$OUT/honest.out" 2>&1 ) &
( sleep 20; OUT="$OUT/sandbox" bash scripts/gpu/sandbox_cuda.sh > "$OUT/sandbox.out" 2>&1 ) &
wait
tail -25 "$OUT/honest.out"
tail -25 "$OUT/sandbox.out"
echo "total $(( $(date +%s) - T0 )) s"
