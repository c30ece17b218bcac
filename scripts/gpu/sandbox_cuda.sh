#!/usr/bin/env bash
# GPU checks of the sandbox that need CUDA (issue 22, session 36; benchmarks/results/sandbox_heldout_s36.md):
#   1. a CUDA worker under the seccomp filter and the read-only device nodes: CUDA, a Triton kernel (its
#      launcher stub compiled in the sandbox) and torch's CUDA allocator work; the filter refuses what it says
#      (bpf, userfaultfd, io_uring, keyctl); /dev's nodes cannot be made, changed or written around;
#   2. the judge's nvidia-smi check (claims.others_on_gpu) and a wrong kernel raising CUDA's out-of-memory
#      words blaming others: judged unless nvidia-smi shows other processes on the GPU;
#   3. Triton's launcher-stub failure words from a wrong kernel on the GPU: judged (the judge finds a
#      compiler and Python.h); an honest Triton kernel: correct;
#   1b. an honest CUDA worker while another program grows the host's /dev/shm by 6 GiB: no memory_limit;
#   4. the held-out attacks of tests/test_sandbox_heldout_s36.py with the kernels on CUDA.
# Run from the repository root on a GPU machine with CUDA torch (and Triton):
#     OUT=/some/dir bash scripts/gpu/sandbox_cuda.sh
# Finishes within ~4 minutes (every step has a timeout; 2 first, alone on the GPU, then 1, 3 and 4 side by side);
# writes under $OUT:
# summary.txt (everything), environment.txt, step1.txt, step23.txt, judge_words_oom.json, judge_words_rest.json, pytest_s36.txt.
set -uo pipefail
. "$(dirname "$0")/common.sh"
gpu_setup /tmp/ktui-sbx36-cache
S="$OUT/summary.txt"
gpu_environment "uid $(id -u)" \
  "$(python3 -c 'from ktui.engine import sandbox; print("namespaces:", sandbox.detect())' 2>&1 | tail -1)" \
  "driver params: $(grep -s RmProfilingAdminOnly /proc/driver/nvidia/params || echo unreadable)" > "$S"

# 2-3. the judge's words on the GPU: nvidia-smi's view, then wrong kernels speaking the judge's words and an
#      honest Triton kernel, each through the judge on cuda
words() {  # CASES=oom: nvidia-smi's view and the OOM words (alone on the GPU); CASES=rest: the stub, honest Triton
CASES=$1 timeout "$2" python3 - >> "$OUT/step23.txt" 2>&1 <<'PY'
import json, os, sys, tempfile
sys.path.insert(0, "tests")
from pathlib import Path
from ktui.engine import claims
from ktui.engine.gpu import state
from ktui.repro.judging.outcome import unjudged
from ktui.repro.runner import run_request
st = state("cuda:0") or {}
print("[%s] nvidia-smi processes on cuda:0:" % os.environ["CASES"], [(p.get("pid"), p.get("name")) for p in st.get("processes") or []][:8])
print("others_on_gpu(cuda:0, ours={}):", claims.others_on_gpu("cuda:0", set()))
ref = Path("tests/fixtures/repro/reference_scaled_relu.txt").read_text()
OOM = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which "
       "12.00 MiB is free. Including non-PyTorch memory, this process has 1.00 GiB memory in use. Of the allocated "
       "memory 512.00 MiB is allocated by PyTorch")
def kernel(body, pre=""):
    return ("import os, sys, torch, torch.nn as nn\n" + pre + "\nclass ModelNew(nn.Module):\n"
            "    def forward(self, x):\n" + "".join("        " + ln + "\n" for ln in body.splitlines()))
TRITON = '''
import triton, triton.language as tl
@triton.jit
def _k(X, Y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(Y + i, tl.maximum(tl.load(X + i, mask=m), 0.0) * 2.0, mask=m)
'''
cases = {
    "wrong kernel raising CUDA OOM words blaming others": kernel(f"x = x * 3.0\nraise RuntimeError({OOM!r})"),
    "wrong kernel raising Triton's stub failure": kernel(
        "import subprocess\nraise subprocess.CalledProcessError(1, ['/usr/bin/gcc', '/tmp/x/cuda_utils.c'])"),
    "honest Triton kernel": kernel("y = torch.empty_like(x)\nn = x.numel()\n_k[(triton.cdiv(n, 1024),)](x, y, n, B=1024)\n"
                                   "return y", TRITON),
}
out = {}
first = "wrong kernel raising CUDA OOM words blaming others"
cases = {n: c for n, c in cases.items() if (n == first) == (os.environ["CASES"] == "oom")}
for name, code in cases.items():
    with tempfile.TemporaryDirectory() as d:
        res = run_request({"kernel_code": code, "reference_source": ref, "device": "cuda", "trials": 3,
                           "correctness_trials": 1, "checks": False, "build_root": os.path.join(d, "b")},
                          run_timeout=90, compile_timeout=120)
    un = unjudged(res)
    f = res.get("failure") or {}
    out[name] = {"status": res.get("status"), "passed": (res.get("correctness") or {}).get("passed"),
                 "failure": {k: f.get(k) for k in ("stage", "kind", "words", "checked")},
                 "message": str(f.get("message"))[:200], "unjudged": un and [un.verdict, un.why, un.message]}
    print(name + ":", json.dumps(out[name]))
json.dump(out, open(os.path.join(os.environ["OUT"], "judge_words_%s.json" % os.environ["CASES"]), "w"), indent=1)
held = [out[n]["unjudged"] is None or "nvidia-smi lists" in json.dumps(out[n]) for n in cases if n.startswith("wrong")]
print("HELD: wrong kernels judged (or nvidia-smi saw other work)" if all(held) else "CHECK THIS: a wrong kernel unjudged")
if "honest Triton kernel" in out:
    print("honest Triton:", "correct" if out["honest Triton kernel"]["passed"] else "CHECK THIS")
PY
}


# 2. first, alone on the GPU (no other process there: the OOM words must then be judged)
echo "## 2-3. the nvidia-smi check and the judge's words on the GPU" > "$OUT/step23.txt"
words oom 90

# 4. in the background (one judge per attack, the kernel on cuda)
KTUI_TEST_ATTACK_DEVICE=cuda timeout 225 python3 -m pytest -q -rA -p no:cacheprovider \
  tests/test_sandbox_heldout_s36.py > "$OUT/pytest_s36.txt" 2>&1 &
PYTEST=$!


# 1. a CUDA worker: the filter, the device nodes, CUDA, Triton (in the background too: $OUT/step1.txt)
echo "## 1. a CUDA worker under the filter and the read-only device nodes" > "$OUT/step1.txt"
timeout 200 python3 - >> "$OUT/step1.txt" 2>&1 <<'PY' &
import json, sys
sys.path.insert(0, "tests/fixtures/sandbox")
from sandbox_corpus import run_code
code = r'''
import ctypes, errno, json, os, platform, stat
lc = ctypes.CDLL(None, use_errno=True)
lc.syscall.restype = ctypes.c_long
x86 = platform.machine() == "x86_64"
def sysc(nx, na, *a):
    r = lc.syscall(ctypes.c_long(nx if x86 else na), *[ctypes.c_long(v) for v in a])
    return errno.errorcode.get(ctypes.get_errno(), "?") if r < 0 else "allowed"
out = {"seccomp": [ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("Seccomp:")],
       "bpf": sysc(321, 280, 0, 0, 0), "userfaultfd": sysc(323, 282, 1), "io_uring_setup": sysc(425, 425, 1, 0),
       "keyctl": sysc(250, 219, 0, 0)}
import torch
a = torch.randn(1024, 1024, device="cuda")
out["matmul"] = bool(torch.isfinite(a @ a).all().item())
out["allocator_mib"] = torch.cuda.memory_allocated() >> 20
nodes = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
out["nodes"] = nodes
tries = {}
for n in nodes[:6]:
    p = "/dev/" + n
    try:
        os.chmod(p, 0o666); tries[n + " chmod"] = "allowed"
    except OSError as e:
        tries[n + " chmod"] = errno.errorcode.get(e.errno, str(e.errno))
for what, fn in (("mknod /dev/s36", lambda: os.mknod("/dev/s36", 0o666 | stat.S_IFCHR, os.makedev(195, 0))),
                 ("create /dev/s36f", lambda: open("/dev/s36f", "w").close()),
                 ("mknod in temp", lambda: os.mknod(os.path.join(os.environ.get("TMPDIR", "/tmp"), "s36n"),
                                                    0o666 | stat.S_IFCHR, os.makedev(195, 255)))):
    try:
        fn(); tries[what] = "allowed"
    except OSError as e:
        tries[what] = errno.errorcode.get(e.errno, str(e.errno))
out["device_tries"] = tries
out["dev_mount"] = [ln.split()[5] for ln in open("/proc/self/mountinfo") if ln.split()[4] == "/dev"]
try:
    import triton, triton.language as tl
    @triton.jit
    def k(X, Y, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        m = i < n
        tl.store(Y + i, tl.maximum(tl.load(X + i, mask=m), 0.0) * 2.0, mask=m)
    x = torch.randn(4096, device="cuda"); y = torch.empty_like(x)
    k[(4,)](x, y, 4096, B=1024)
    out["triton"] = bool(torch.allclose(y, torch.relu(x) * 2.0))
except Exception as e:
    out["triton"] = "%s: %s" % (type(e).__name__, str(e)[:300])
print("OUT " + json.dumps(out), flush=True)
'''
got, w = run_code(code, timeout=140, device="cuda", memory_limit=16 << 30)
print(json.dumps(got, indent=1))
print("limit:", w.limit_hit)
if got is None:
    print("stderr tail:", w.tail("stderr")[-2000:])
ok = bool(got) and got.get("matmul") and got.get("triton") is True and got.get("seccomp") == ["2"] and \
    all(got.get(c) == "EPERM" for c in ("bpf", "userfaultfd", "io_uring_setup", "keyctl")) and \
    not any(v == "allowed" for v in got.get("device_tries", {}).values())
print("HELD: CUDA and Triton work under the filter; no device node made or changed" if ok else "CHECK THIS")

# 1b. an honest CUDA worker (CUDA's own unix socket in its tree) while another program grows the host's /dev/shm
#     by 6 GiB: the H100 sweep of this session (devres36/r/tri) charged that growth to an honest kernel
import os, time
from attack_run import launch, finish
honest = """
import time, torch
torch.randn(1024, 1024, device="cuda").sum().item()
print("OUT 1", flush=True)
time.sleep(20)
print("OUT 2", flush=True)
"""
w = launch(honest, device="cuda", memory_limit=4 << 30)
path = "/dev/shm/ktui-s36-outside-%d" % os.getpid()
try:
    end = time.monotonic() + 60
    while "OUT 1" not in w.tail("stdout") and w.alive() and time.monotonic() < end:
        time.sleep(0.1)
    with open(path, "wb") as fh:
        for _ in range(6 * 1024):
            fh.write(b"\5" * (1 << 20))
    finish(w, 60)
finally:
    try:
        os.unlink(path)
    except OSError:
        pass
print("1b honest CUDA worker, /dev/shm grown 6 GiB outside: limit", w.limit_hit, "| finished:", "OUT 2" in w.tail("stdout"))
print("HELD: no false flag" if w.limit_hit is None and "OUT 2" in w.tail("stdout") else "CHECK THIS")
PY
STEP1=$!


# 3. the rest of the words while 1 and 4 run
words rest 160

wait $STEP1
wait $PYTEST
rc=$?
for f in step1 step23; do echo >> "$S"; cat "$OUT/$f.txt" >> "$S"; done
echo; echo "## 4. tests/test_sandbox_heldout_s36.py on cuda: exit $rc: $(tail -1 "$OUT/pytest_s36.txt")" >> "$S"
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)" "$OUT/pytest_s36.txt" >> "$S"
cat "$S"
