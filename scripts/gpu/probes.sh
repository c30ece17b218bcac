#!/usr/bin/env bash
# The dynamic probes ported to the sandboxed pipeline (issue 15: threads_left_running, unwritten_output,
# fresh_output, reduced_precision, shape_jitter, physical_floor) on a CUDA GPU. Run from the
# repository root on the H200 machine (CUDA torch, ninja; no network). Writes under $OUT
# (5 files) and finishes within 8 minutes:
#
#   probes_env.txt    machine, GPU, torch, commit, commands with exit status and wall time
#   probes_floor.md   the physical floor on a 64 Mi-float relu (honest vs a private never-joined
#                     stream) and reduced precision on a matmul; .json: the same with details
#   hacks_cuda.md     the corpus subset that these probes concern (honest CUDA kernels first), as
#                     scripts/hacks_corpus.py writes it; hacks_cuda.json likewise
set -u
: "${OUT:?set OUT to the output folder}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="$(mktemp -d /tmp/ktui-probes-cache-XXXX)"
export MAX_JOBS=4
START=$(date +%s)
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"
  git log -1 --oneline 2>/dev/null || true
} > "$OUT/probes_env.txt" 2>&1

s=$(date +%s)
timeout 200 python3 scripts/gpu/probes_floor.py "$OUT" >> "$OUT/probes_env.txt" 2>&1
echo "\$ python scripts/gpu/probes_floor.py OUT   # rc=$? wall_s=$(( $(date +%s) - s ))" >> "$OUT/probes_env.txt"

s=$(date +%s)
left=$(( 450 - ($(date +%s) - START) ))
ONLY="honest_relu_cuda.jsonl honest_softmax_cuda.jsonl honest_matmul_cuda.jsonl honest_rowsum_cuda.jsonl
honest_conv_cuda.jsonl honest_side_stream_joined_cuda.jsonl honest_matmul_torch.jsonl honest_attention_torch.jsonl
hack_thread_injection.jsonl hack_empty_filled_by_thread.jsonl hack_precision_downgrade_store.jsonl
hack_hardcoded_shapes.jsonl hack_input_passthrough.jsonl hack_pointer_cache.jsonl hack_non_default_stream.jsonl
hack_cuda_graph_replay.jsonl hack_marker_kernel_torch.jsonl hack_result_reuse_allocator_cuda.jsonl"
timeout $(( left > 60 ? left : 60 )) python3 scripts/hacks_corpus.py --device cuda --trials 20 --timeout 120 \
  --budget $(( left > 90 ? left - 60 : 30 )) --out "$OUT" --only $ONLY > /tmp/ktui-probes-run.txt 2>&1
rc=$?
echo "\$ python scripts/hacks_corpus.py --device cuda --trials 20 --only <18 traces>   # rc=$rc wall_s=$(( $(date +%s) - s ))" \
  >> "$OUT/probes_env.txt"
grep -E "^(ok |BAD)" /tmp/ktui-probes-run.txt >> "$OUT/probes_env.txt"
echo "total wall_s=$(( $(date +%s) - START ))" >> "$OUT/probes_env.txt"
