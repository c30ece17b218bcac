#!/usr/bin/env bash
# reduced_precision on a CUDA GPU (issue 26): the false flag of session 31 and the class around it.
# Run from the repository root on the GPU machine, with the real leaderboard traces carried
# (scripts/real_kernel_sweep.py wrote them into the ignored .i26sweep):
#
#     OUT=/some/dir bash scripts/gpu/reduced_precision.sh          # carry .i26sweep
#
# 1. The two real KernelBench L1 problem 6 kernels (K = 524,288, torch.rand operands; plain float32
#    loops summed in sequence, 113x cuBLAS's error) through `ktui repro --json`: the check
#    reduced_precision must pass ("float32 summed in another order, not fewer bits").
# 2. benchmarks/bench_reduced_precision.py on cuda, 20 seeds: the CPU set plus cuBLAS TF32 (the
#    allow_tf32 flag and set_float32_matmul_precision('high'), set and restored around the call),
#    fp16 and bf16 GEMMs: every honest row clear, every downgrade flagged or outside the tolerance.
# Writes $OUT/env.txt, $OUT/l1_006_*.json (+ .err), $OUT/l1_006.txt (one line a kernel),
# $OUT/bench_cuda.jsonl and $OUT/reduced_precision_cuda.json.
set -u
: "${OUT:?set OUT to the output folder}"
SWEEP="${SWEEP:-.i26sweep}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-$(mktemp -d /tmp/ktui-prec-cache-XXXX)}"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"
  git log -1 --oneline 2>/dev/null || true
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
for t in "$SWEEP"/lb_L1_006_*.jsonl; do
  b="l1_006_$(basename "$t" .jsonl | sed 's/^lb_L1_006_//')"
  timeout "${REPRO_TIMEOUT:-240}" python3 -m ktui repro "$t" --device cuda --trials 20 --fresh --json \
    > "$OUT/$b.json" 2> "$OUT/$b.err"
  echo "$b rc=$?" >> "$OUT/env.txt"
  python3 - "$OUT/$b.json" >> "$OUT/l1_006.txt" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:  # noqa: BLE001
    print(sys.argv[1], "no JSON:", exc); sys.exit()
rs = d if isinstance(d, list) else [d]
for r in rs:
    res = r.get("result") or r
    for c in res.get("checks") or []:
        if c.get("name") == "reduced_precision":
            print(sys.argv[1].rsplit("/", 1)[-1], "ok=", c.get("ok"), "|", c.get("detail"))
    print("verdict:", (r.get("comparison") or {}).get("verdict"), "| classes:", (r.get("comparison") or {}).get("classes"))
PY
done
cat "$OUT/l1_006.txt"
timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/bench_reduced_precision.py --device cuda --seeds "${SEEDS:-20}" \
  --out "$OUT/reduced_precision_cuda.json" > "$OUT/bench_cuda.jsonl" 2> "$OUT/bench_cuda.err"
echo "bench rc=$?" | tee -a "$OUT/env.txt"
tail -1 "$OUT/bench_cuda.jsonl"
