"""Timer patches vs honest runs: what ktui reports when a kernel tampers with every clock it can
reach, next to an unpatched run of the same kernel (through the real path: judge process,
sandboxed workers). Prints a table; --out writes it as Markdown.

    PYTHONPATH=. python benchmarks/bench_sandbox.py --device cpu [--out benchmarks/results/sandbox_cpu.md]
    PYTHONPATH=. python benchmarks/bench_sandbox.py --device cuda --out $OUT/sandbox_cuda.md

CPU kernels: y = 2 * relu(x) plus a 2 ms sleep per call. CUDA kernels: a 2048^3 fp32 matmul.
Patches: time.perf_counter -> 0; the harness's bound clock found by walking gc;
torch.cuda.Event.elapsed_time / 14 (CUDA); torch.cuda.synchronize -> no-op (CUDA).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CPU_REF = '''
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
def get_inputs():
    return [torch.randn(8, 64)]
def get_init_inputs():
    return []
'''
CUDA_REF = '''
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)
def get_inputs():
    return [torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")]
def get_init_inputs():
    return []
'''
CPU_FORWARD = "        time.sleep(0.002)\n        return torch.relu(x) * 2.0\n"
CUDA_FORWARD = "        return torch.matmul(a, b)\n"
CPU_SIG, CUDA_SIG = "x", "a, b"

PATCHES = {
    "honest": "",
    "perf_counter -> 0": "time.perf_counter = lambda: 0.0\n",
    "bound clock via gc -> 0": ("import gc\nfor _o in gc.get_objects():\n"
                                "    if type(_o).__name__ == 'Primitives':\n        _o.perf = lambda: 0.0\n"),
}
CUDA_PATCHES = {
    "Event.elapsed_time / 14": ("_et = torch.cuda.Event.elapsed_time\n"
                                "torch.cuda.Event.elapsed_time = lambda s, e: _et(s, e) / 14\n"),
    "bound event clock via gc / 14": ("import gc\nfor _o in gc.get_objects():\n"
                                      "    if type(_o).__name__ == 'Primitives':\n"
                                      "        _f = _o.ev_elapsed\n        _o.ev_elapsed = lambda s, e, _f=_f: _f(s, e) / 14\n"),
    "synchronize -> no-op": "torch.cuda.synchronize = lambda *a, **k: None\n",
}


def kernel(device: str, patch: str) -> str:
    fwd, sig = (CUDA_FORWARD, CUDA_SIG) if device == "cuda" else (CPU_FORWARD, CPU_SIG)
    return ("import time, torch, torch.nn as nn\n" + patch + "class ModelNew(nn.Module):\n"
            f"    def forward(self, {sig}):\n" + fwd)


def main() -> int:
    from ktui.repro.runner import run_request

    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    patches = dict(PATCHES, **(CUDA_PATCHES if cuda else {}))
    rows = []
    build = tempfile.mkdtemp(prefix="ktui-bench-sandbox-")
    for name, patch in patches.items():
        t0 = time.monotonic()
        res = run_request({"kernel_code": kernel("cuda" if cuda else "cpu", patch),
                           "reference_source": CUDA_REF if cuda else CPU_REF, "device": args.device,
                           "trials": args.trials, "correctness_trials": 2, "build_root": build + "/build",
                           "measure_memory": False, "measure_launches": False},
                          run_timeout=300, compile_timeout=300)
        t = res.get("timing") or {}
        k = t.get("kernel") or {}
        own = t.get("kernel_own") or k
        cc = t.get("cross_check") or {}
        findings = ", ".join(sorted({f["class"] for f in res.get("findings") or []})) or "-"
        rows.append((name, res.get("status"), own.get("median_us"), k.get("median_us"), cc.get("kernel_wall_us"),
                     k.get("source", "-"), findings, round(time.monotonic() - t0, 1),
                     (res.get("failure") or {}).get("message", "")))
    head = ("| patch | status | kernel's own median μs | reported median μs | judge wall μs/forward | "
            "reported from | findings | run s |")
    lines = [f"# timer patches vs honest ({args.device}, {platform.node()}, {time.strftime('%Y-%m-%d %H:%M')})", "",
             f"Command: `PYTHONPATH=. python benchmarks/bench_sandbox.py --device {args.device}`", "",
             head, "|" + "---|" * 8]

    def f(v):
        return "-" if v is None else f"{v:,.1f}"

    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {f(r[2])} | {f(r[3])} | {f(r[4])} | {r[5]} | {r[6]} | {r[7]} |"
                     + (f" {r[8][:80]}" if r[8] else ""))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
