"""GPU check of the ported probes (issue 15) outside the corpus: the physical floor on a problem
big enough to have one (64 Mi floats in, 64 Mi out: ~110 us at an H200's 4.8 TB/s), with an
honest kernel (no finding) and one that launches its work on a private stream it never joins
(the event timer sees nothing: below the floor), plus the reduced-precision probe on TF32 vs
float32 matmuls. Writes probes_floor.json and probes_floor.md under OUT (argv[1])."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ktui.repro.runner import run_request

BIG_RELU = '''
import torch, torch.nn as nn
N = 64 * 1024 * 1024
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(N), device="cuda")]
def get_init_inputs():
    return []
'''
HONEST = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0) * 2.0
'''
SIDE_STREAM = '''
import torch, torch.nn as nn
_s = None
class ModelNew(nn.Module):
    def forward(self, x):
        global _s
        _s = _s or torch.cuda.Stream()
        out = torch.empty_like(x)
        with torch.cuda.stream(_s):
            torch.mul(torch.clamp(x, min=0), 2.0, out=out)
        return out
'''
MATMUL = '''
import torch, torch.nn as nn
M, K, N = 1024, 1024, 1024
class Model(nn.Module):
    def forward(self, A, B):
        return A @ B
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(M), K, device="cuda"), torch.randn(K, N, device="cuda")]
def get_init_inputs():
    return []
'''
MATMUL_HONEST = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
'''
MATMUL_HALF = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, A, B):
        return (A.half() @ B.half()).float()
'''
CASES = [
    ("big relu, honest", BIG_RELU, HONEST, {"physical_floor": True}),
    ("big relu, private stream never joined", BIG_RELU, SIDE_STREAM, {"physical_floor": False}),
    ("matmul, honest", MATMUL, MATMUL_HONEST, {"reduced_precision": True}),
    ("matmul in fp16 (fails the fp32 tolerance: probe not judged)", MATMUL, MATMUL_HALF, {}),
]


def main(out_dir: str) -> int:
    out = Path(out_dir)
    rows = []
    bad = 0
    for label, ref, kernel, expect in CASES:
        t0 = time.monotonic()
        res = run_request({"kernel_code": kernel, "reference_source": ref, "device": "cuda", "trials": 50,
                           "build_root": "/tmp/ktui-probes-floor-build"}, run_timeout=120, compile_timeout=120)
        checks = {c["name"]: c for c in res.get("checks") or []}
        got = {k: (checks.get(k) or {}).get("ok") for k in ("physical_floor", "reduced_precision", "threads_left_running",
                                                          "fresh_output", "shape_jitter", "host_vs_event_time")}
        ok = all(got.get(k) is v for k, v in expect.items())
        bad += not ok
        rows.append({"case": label, "status": res.get("status"), "failure": res.get("failure"),
                     "correct": (res.get("correctness") or {}).get("passed"), "expected": expect, "got": got,
                     "ok": ok, "seconds": round(time.monotonic() - t0, 1),
                     "median_us": ((res.get("timing") or {}).get("kernel") or {}).get("median_us"),
                     "physical_floor_us": (res.get("timing") or {}).get("physical_floor_us"),
                     "details": {k: (checks.get(k) or {}).get("detail") for k in got}})
        print(("ok  " if ok else "BAD ") + label, got, flush=True)
    (out / "probes_floor.json").write_text(json.dumps(rows, indent=1, default=str))
    lines = ["# ported probes on the GPU (scripts/gpu/probes.sh)", "",
             "| case | correct | kernel median us | DRAM floor us | expected | got | ok |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['correct']} | {r['median_us']} | {r['physical_floor_us']} | {r['expected']} | "
                     f"{r['got']} | {'yes' if r['ok'] else '**NO**'} |")
    lines += ["", "details:", ""] + [f"- {r['case']}: " + "; ".join(f"{k}: {v}" for k, v in r["details"].items() if v)
                                     for r in rows]
    (out / "probes_floor.md").write_text("\n".join(lines) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
