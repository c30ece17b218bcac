#!/usr/bin/env bash
# GPU check of the sandbox's third pass (issue 22): the IPC, UTS and cgroup namespaces, the IPC caps
# (64 MiB of SysV shared memory, 16 queues), no nested user namespace and the hidden root-only files
# of /etc must not break a CUDA worker, Nsight Compute's profiled target, or an honest kernel's
# verdict; and the attacks of tests/test_sandbox_namespaces.py must hold with CUDA in the worker.
# Run from the repository root on a GPU machine with CUDA torch and ninja:
#     OUT=/some/dir bash scripts/gpu/sandbox_namespaces.sh
# Writes at most 8 files under $OUT and finishes within ~8 minutes (each step has a timeout).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to a directory}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-$(mktemp -d)/ktui-cache}"
S="$OUT/summary.txt"
{
  echo "# scripts/gpu/sandbox_namespaces.sh  $(date -u +%FT%TZ)  $(git rev-parse --short HEAD 2>/dev/null)  uid $(id -u)"
  python -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)"
  python -c "from ktui.engine import sandbox; print('namespaces:', sandbox.detect())"
} > "$S" 2>&1

# 1. a CUDA worker under the new namespaces: its prologue's report, CUDA work, SysV/POSIX shared memory
#    as torch uses it (torch.multiprocessing's shared CPU tensors live in /dev/shm), a nested namespace
echo; echo "## a CUDA worker's prologue and CUDA work" >> "$S"
timeout 180 python - >> "$S" 2>&1 <<'PY'
import json, sys
sys.path.insert(0, "tests/fixtures/sandbox")
from sandbox_corpus import run_code
code = '''
import ctypes, json, socket
import torch
x = torch.randn(2048, 2048, device="cuda"); y = (x @ x).sum().item()
t = torch.zeros(1 << 20).share_memory_()  # /dev/shm, as torch.multiprocessing does
lc = ctypes.CDLL(None, use_errno=True)
nested = lc.unshare(0x10000000)
print("OUT " + json.dumps({"matmul": y == y, "shared": bool(t.is_shared()), "host": socket.gethostname(),
                           "nested_userns": nested, "etc_shadow": __import__("os").path.exists("/etc/shadow")}), flush=True)
'''
got, w = run_code(code, timeout=150, device="cuda", memory_limit=16 << 30)
print("result:", got)
print("limit:", w.limit_hit)
print("stderr tail:", w.tail("stderr")[-1500:])
print("HELD" if got and got["matmul"] and got["nested_userns"] != 0 and got["host"] == "ktui-worker" else "CHECK THIS")
PY

# 2. an honest kernel's verdict through the whole judge (seed trace, v4)
echo; echo "## seed trace v4 (--fresh)" >> "$S"
timeout 240 python -m ktui repro traces/popcorn_l1_p27_grok-4.3.jsonl --version v4 --fresh --json > "$OUT/v4.json" 2>>"$S"
python -c "import json,sys; d=json.load(open(sys.argv[1])); print('v4 verdict:', d['verdict'], '|', d['reason'][:200]); print('sandbox:', d['result'].get('sandbox', {}).get('candidate'))" "$OUT/v4.json" >> "$S" 2>&1

# 3. the attacks with a GPU worker around (IPC, leftovers, floods), and the CUDA-event timer patched
#    from the kernel's module (test_a_kernel_that_shrinks_its_workers_cuda_events_is_timed_by_ktuis)
echo; echo "## tests/test_sandbox_namespaces.py" >> "$S"
KTUI_TEST_ATTACK_DEVICE=cuda timeout 200 python -m pytest -q -rs -p no:cacheprovider tests/test_sandbox_namespaces.py \
  > "$OUT/pytest_namespaces.txt" 2>&1
echo "exit $?: $(tail -1 "$OUT/pytest_namespaces.txt")" >> "$S"

# 4. Nsight Compute's target (the profiler keeps the masked tree; it runs in the same namespaces)
if command -v ncu > /dev/null && [ -f scripts/gpu/profsbx.sh ]; then
  echo; echo "## scripts/gpu/profsbx.sh (profiling under the new namespaces)" >> "$S"
  mkdir -p "$OUT/profsbx"
  OUT="$OUT/profsbx" timeout 150 bash scripts/gpu/profsbx.sh > "$OUT/profsbx.txt" 2>&1
  echo "profsbx exit $?: $(tail -3 "$OUT/profsbx.txt" | tr '\n' ' ')" >> "$S"
fi
cat "$S"
