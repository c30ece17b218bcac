"""One CPU judge run of a large output under cProfile: where the judge's own time goes (the workers'
time is the wait in select). An honest ReLU kernel against its reference, ROWS x 4096 float32 inputs
and outputs, every probe, trials=3.

    OMP_NUM_THREADS=1 python benchmarks/bench_judge_profile.py [ROWS] [OUT.prof]

Prints the wall, the stages, the probes, each worker's seconds per request and the 40 functions of
the judge with the most cumulative time. KTUI_CACHE_DIR and the lock folder go to a temp dir.
"""
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
OUT = sys.argv[2] if len(sys.argv) > 2 else None
tmp = tempfile.mkdtemp(prefix="ktui-judge-profile-")
os.environ["KTUI_CACHE_DIR"] = os.path.join(tmp, "cache")
REF = f'''import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
def get_inputs():
    return [torch.randn({ROWS}, 4096)]
def get_init_inputs():
    return []
'''
KERNEL = '''import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
'''
from ktui.engine.pipeline import judge  # noqa: E402

pr = cProfile.Profile()
t0 = time.time()
pr.enable()
res = judge({"kernel_code": KERNEL, "reference_source": REF, "device": "cpu", "trials": 3, "run_timeout": 600,
             "compile_timeout": 600, "lock_dir": os.path.join(tmp, "locks"),
             "build_root": os.path.join(tmp, "cache", "build")})
pr.disable()
print(f"wall {time.time() - t0:.1f} s, {res['status']}, failure {res.get('failure')}")
print("stages", {k: v["seconds"] for k, v in res["stages"].items()})
print("probes", {k: v["seconds"] for k, v in (res.get("probes") or {}).items()})
print("worker seconds", res.get("worker_seconds"))
if OUT:
    pr.dump_stats(OUT)
pstats.Stats(pr).sort_stats("cumulative").print_stats(40)
