#!/usr/bin/env bash
# GPU validation of the repro sandbox (issue 8) and of trustworthy timing (issue 15 item 4).
# Run from the repository root on an H200 machine with CUDA torch, ninja and triton:
#     OUT=/some/dir bash scripts/gpu/sandbox.sh
# Writes at most 7 files under $OUT and finishes within ~8 minutes (each step has a timeout).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-$(mktemp -d)/ktui-cache}"
S="$OUT/summary.txt"
{
  echo "# scripts/gpu/sandbox.sh  $(date -u +%FT%TZ)  $(git rev-parse --short HEAD 2>/dev/null)"
  python -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda, '| gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)"
  echo "unshare: $(command -v unshare) $(unshare --version 2>/dev/null | head -1)"
  unshare --user --map-root-user --pid --fork --mount-proc --net --kill-child=SIGKILL true && echo "user+pid+net namespaces: ok" || echo "user namespaces: NOT available"
  echo "cgroup: $(stat -fc %T /sys/fs/cgroup)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu --format=csv 2>&1 | head -3
  echo
  echo "## the protections a worker gets here (ktui.engine.sandbox.planned)"
  python -c "from ktui.engine import sandbox; print('\n'.join('- ' + w for w in sandbox.planned('cuda')))"
} > "$S" 2>&1

# 1. the seed's versions (v4 must stay correct + unit error; v2, v3 fail as recorded)
echo; echo "## seed trace, every version (--fresh)" >> "$S"
timeout 270 python -m ktui repro traces/popcorn_l1_p27_grok-4.3.jsonl --all --fresh > "$OUT/seed_all.txt" 2>&1
echo "ktui repro --all: exit $?" >> "$S"
timeout 60 python -m ktui repro traces/popcorn_l1_p27_grok-4.3.jsonl --version v4 --json > "$OUT/v4.json" 2>>"$S"
python - "$OUT/v4.json" >> "$S" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["result"]
t = r.get("timing") or {}
print("v4 verdict:", d["verdict"], "|", d["reason"][:300])
print("v4 correctness passed:", (r.get("correctness") or {}).get("passed"))
print("v4 kernel median us:", (t.get("kernel") or {}).get("median_us"), "IQR", (t.get("kernel") or {}).get("iqr_us"),
      "rse", (t.get("kernel") or {}).get("rse"), "source", (t.get("kernel") or {}).get("source"))
print("v4 host-bound:", (t.get("host_bound") or {}).get("reason"))
print("v4 gpu lock:", t.get("gpu_lock"), "| gpu not idle:", t.get("gpu_not_idle"))
print("v4 gpu state before:", json.dumps((t.get("gpu_state") or {}).get("before"))[:400])
print("v4 sandbox (candidate):", r.get("sandbox", {}).get("candidate"))
print("v4 findings:", [f["class"] for f in r.get("findings") or []])
print("v4 checks:", [(c["name"], c["ok"]) for c in r.get("checks") or []])
PY

# 2. timer patches vs honest, CUDA (2048^3 fp32 matmul)
echo; echo "## timer patches vs honest (benchmarks/bench_sandbox.py --device cuda)" >> "$S"
timeout 150 python benchmarks/bench_sandbox.py --device cuda --trials 20 --out "$OUT/sandbox_cuda.md" >> "$S" 2>&1
echo "bench exit $?" >> "$S"

# 3. the attack corpus with CUDA kernels inside the sandbox (hostile kernel, judge patches,
#    protocol forging, kills, daemons, floods, SIGTERM/SIGHUP of ktui repro)
echo; echo "## attack corpus, CUDA (KTUI_TEST_ATTACK_DEVICE=cuda)" >> "$S"
KTUI_TEST_ATTACK_DEVICE=cuda timeout 200 python -m pytest -q -p no:cacheprovider tests/test_repro_attacks.py \
  > "$OUT/pytest_attacks_cuda.txt" 2>&1
echo "attacks (cuda) exit $?: $(tail -1 "$OUT/pytest_attacks_cuda.txt")" >> "$S"

# 4. the GPU repro tests (illegal address, OOM, seed versions) through the sandbox
echo; echo "## tests/test_repro_gpu.py" >> "$S"
timeout 120 python -m pytest -q -p no:cacheprovider tests/test_repro_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu tests exit $?: $(tail -1 "$OUT/pytest_gpu.txt")" >> "$S"
echo "done $(date -u +%FT%TZ)" >> "$S"
