"""The judge's comparison of one large float32 output: peak memory and time, the chunked comparison
(ktui.engine.compare, COMPARE_CHUNK) against the whole-tensor one of an earlier commit.

    git show 13b5242:ktui/engine/compare.py > /tmp/cmpb/old_compare.py
    python benchmarks/bench_compare_memory.py old 67108864
    python benchmarks/bench_compare_memory.py new 67108864
"""
import importlib.util
import resource
import sys
import time

import torch

which, n = sys.argv[1], int(sys.argv[2])
if which == "old":
    sys.path.insert(0, "/tmp/cmpb")
    import ktui.engine.compare  # noqa (its package for relative imports)
    spec = importlib.util.spec_from_file_location("ktui.engine.old_compare", sys.argv[3] if len(sys.argv) > 3 else "/tmp/cmpb/old_compare.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
else:
    from ktui.engine import compare as m
g = torch.Generator().manual_seed(1)
r = torch.rand(n, generator=g)
o = r * (1 + 1e-6)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
res = m.compare_outputs(r, o)
dt = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{which} n={n} ({n*4/2**20:.0f} MiB float32 each): passed={res['passed']} {dt:.2f} s, peak RSS {peak/1024:.0f} MiB (inputs made: {base/1024:.0f} MiB)")
