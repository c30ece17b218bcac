#!/usr/bin/env bash
# GPU check of the minimal /sys for GPU workers (issue 22, fourth pass; ktui/engine/sysview.py,
# ktui/engine/gpusysfs.py). Opt-in (KTUI_GPU_SYSFS=minimal); this script says whether it can be
# the default: the self-test must pass, a CUDA worker must run under it, an honest kernel's verdict
# must be the same as under the host's /sys, and the sandbox tests must pass with CUDA around.
# Run from the repository root on a GPU machine with CUDA torch and ninja:
#     OUT=/some/dir bash scripts/gpu/gpu_sysfs.sh
# Writes at most 8 files under $OUT and finishes within ~13 minutes (each step has a timeout).
set -uo pipefail
. "$(dirname "$0")/common.sh"
gpu_setup
S="$OUT/summary.txt"
{
  echo "# scripts/gpu/gpu_sysfs.sh  $(date -u +%FT%TZ)  $(git rev-parse --short HEAD 2>/dev/null)  uid $(id -u)"
  python -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)"
  head -1 /proc/driver/nvidia/version 2>/dev/null
  python -c "from ktui.engine import sandbox; print('namespaces:', sandbox.detect())"
} > "$S" 2>&1

# 1. the self-test itself (no cache): the probe under the host's /sys and under the minimal one
echo; echo "## self-test (python -m ktui.engine.sysfs_selftest)" >> "$S"
timeout 600 python -m ktui.engine.sysfs_selftest --selftest > "$OUT/selftest.json" 2>"$OUT/selftest.err"
echo "exit $? (0: passed)" >> "$S"
python -c "import json,sys; d=json.load(open(sys.argv[1])); print('ok:', d['ok'], '| why:', d['why']); print('minimal:', d['minimal']); print('host:', d['host'])" "$OUT/selftest.json" >> "$S" 2>&1

# 2. a CUDA worker under the minimal /sys: what it sees, CUDA work, nvidia-smi (NVML reads /sys)
echo; echo "## a CUDA worker under KTUI_GPU_SYSFS=minimal" >> "$S"
KTUI_GPU_SYSFS=minimal timeout 300 python - >> "$S" 2>&1 <<'PY'
import sys
sys.path.insert(0, "tests/fixtures/sandbox")
from sandbox_corpus import run_code
code = '''
import json, os, subprocess
def ls(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return str(e)
import torch
x = torch.randn(2048, 2048, device="cuda"); y = (x @ x).sum().item()
smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True) if os.path.exists("/usr/bin/nvidia-smi") else None
print("OUT " + json.dumps({"matmul": y == y, "top": ls("/sys"), "pci": ls("/sys/bus/pci/devices"),
                           "module": ls("/sys/module"), "net": ls("/sys/class/net"), "firmware": ls("/sys/firmware"),
                           "smi": (smi.returncode, smi.stdout[-300:], smi.stderr[-300:]) if smi else None}), flush=True)
'''
got, w = run_code(code, timeout=240, device="cuda", memory_limit=16 << 30)
print("result:", got)
print("limit:", w.limit_hit)
print("stderr tail:", w.tail("stderr")[-1500:])
print("HELD" if got and got["matmul"] and got["firmware"] == [] and got["pci"] else "CHECK THIS")
PY

# 3. an honest kernel's verdict, the host's /sys then the minimal one: the same verdict, and the
#    sandbox words say which /sys was in force
echo; echo "## seed trace v4 (--fresh), host /sys then minimal /sys" >> "$S"
for mode in host minimal; do
  KTUI_GPU_SYSFS=$mode timeout 240 python -m ktui repro traces/popcorn_l1_p27_grok-4.3.jsonl --version v4 --fresh --json \
    > "$OUT/v4_$mode.json" 2>>"$S"
  python -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], 'verdict:', d['verdict'], '|', d['reason'][:160]); print('  sandbox:', [w for w in d['result'].get('sandbox', {}).get('candidate') or [] if '/sys' in w])" "$OUT/v4_$mode.json" "$mode" >> "$S" 2>&1
done

# 4a (fourth pass, GPU only). Sakana's AI CUDA Engineer / KernelBench #82, across processes: a worker
#    (the reference) fills 1 GiB of device memory with a marker and ends; the next worker (the
#    candidate) allocates uninitialized memory (torch.empty) and looks for the marker
echo; echo "## uninitialized device memory after another worker (memory reuse across processes)" >> "$S"
timeout 240 python - >> "$S" 2>&1 <<'PY'
import sys
sys.path.insert(0, "tests/fixtures/sandbox")
from sandbox_corpus import run_code
fill = 'import json, torch\nx = torch.full((1 << 28,), 1234.5, device="cuda"); torch.cuda.synchronize()\n' \
       'print("OUT " + json.dumps(float(x[7])), flush=True)'
look = 'import json, torch\ny = torch.empty((1 << 28,), device="cuda"); torch.cuda.synchronize()\n' \
       'print("OUT " + json.dumps(int((y == 1234.5).sum())), flush=True)'
a, wa = run_code(fill, timeout=120, device="cuda", memory_limit=16 << 30)
b, wb = run_code(look, timeout=120, device="cuda", memory_limit=16 << 30)
print("filled:", a, "| marker elements found by the next worker:", b, "of", 1 << 28)
print("HELD" if b == 0 else "CHECK THIS (the reference's device memory reaches the candidate)", wb.tail("stderr")[-300:])
PY

# 4. the sandbox tests with CUDA around (the /sys ones, and the fourth pass's attacks)
echo; echo "## tests/test_sandbox_sysfs.py tests/test_sandbox_outside.py" >> "$S"
KTUI_GPU_SYSFS=minimal timeout 200 python -m pytest -q -rs -p no:cacheprovider tests/test_sandbox_sysfs.py \
  tests/test_sandbox_outside.py > "$OUT/pytest_sysfs.txt" 2>&1
echo "exit $?: $(tail -1 "$OUT/pytest_sysfs.txt")" >> "$S"
cat "$S"
