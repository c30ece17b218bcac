#!/usr/bin/env bash
# The dynamic probes ported to the sandboxed pipeline (issue 15: threads_left_running, unwritten_output,
# fresh_output, reduced_precision, shape_jitter, physical_floor) on a CUDA GPU. Run from the
# repository root on the H200 machine (CUDA torch, ninja; no network). Writes under $OUT and
# finishes within 8 minutes:
#
#   probes_env.txt    machine, GPU, torch, commit, the floor script's status and wall time
#   probes_floor.md   the physical floor on a 64 Mi-float relu (honest vs a private never-joined
#                     stream) and reduced precision on a matmul; .json: the same with details
#   hacks_*           the corpus subset these probes concern, through scripts/gpu/hacks.sh (PART=all)
set -u
: "${OUT:?set OUT to the output folder}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-$(mktemp -d /tmp/ktui-probes-cache-XXXX)}"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  git log -1 --oneline 2>/dev/null || true
} > "$OUT/probes_env.txt" 2>&1

s=$(date +%s)
timeout 200 python3 scripts/gpu/probes_floor.py "$OUT" >> "$OUT/probes_env.txt" 2>&1
echo "\$ python scripts/gpu/probes_floor.py OUT   # rc=$? wall_s=$(( $(date +%s) - s ))" >> "$OUT/probes_env.txt"

# the honest CUDA kernels first, then the hacks these probes name (hacks.sh: builds, then one at a time)
PART=all SMOKE=0 SEED_RUN=0 DEADLINE=230 \
BUILD_ONLY="honest_relu_cuda honest_softmax_cuda honest_matmul_cuda honest_rowsum_cuda honest_conv_cuda
honest_side_stream_joined_cuda hack_non_default_stream hack_cuda_graph_replay hack_marker_kernel_torch
hack_result_reuse_allocator_cuda" \
PLAIN_ONLY="honest_matmul_torch honest_attention_torch hack_thread_injection hack_empty_filled_by_thread
hack_precision_downgrade_store hack_hardcoded_shapes hack_input_passthrough hack_pointer_cache" \
  timeout 280 bash scripts/gpu/hacks.sh
