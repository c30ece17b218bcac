"""Parse throughput and peak memory of the trace reader on large traces.

Builds traces by replicating the real fixtures (../shared/fixtures) and the bundled seed trace
until they reach the requested sizes, then loads each in a fresh subprocess and prints
MB/s and peak RSS.

    python benchmarks/bench_load.py              # 100 MB and 1 GB
    python benchmarks/bench_load.py --sizes 100  # just 100 MB
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT.parent / "shared" / "fixtures").rglob("*.jsonl")) + [
    ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
]


def build(path: Path, size_mb: int, sources: list[Path] = SOURCES) -> None:
    blob = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in sources if p.exists())
    target = size_mb << 20
    with open(path, "wb") as f:
        written = 0
        while written < target:
            f.write(blob)
            written += len(blob)


CHILD = r"""
import json, resource, sys, time
from ktui.trace import load
t = time.perf_counter()
run = load(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "events": len(run.events), "turns": len(run.turns),
                  "calls": len(run.calls), "kernels": len(run.kernels), "problems": len(run.problems),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

BASELINE = r"""
import json, resource
import ktui.trace.reader, ktui.trace.builder
print(json.dumps({"maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 1024], help="sizes in MB")
    ap.add_argument("--dir", default=None, help="where to write the big traces (default: a temp dir)")
    ap.add_argument("--mix", choices=["all", "seed"], default="all",
                    help="replicate every fixture (many small events) or only the seed trace (kernel-heavy)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = json.loads(subprocess.check_output([sys.executable, "-c", BASELINE], env=env))
    print(f"interpreter + ktui baseline RSS: {base['maxrss_kb'] / 1024:.0f} MB")
    with tempfile.TemporaryDirectory(dir=args.dir) as td:
        for mb in args.sizes:
            p = Path(td) / f"big_{mb}mb.jsonl"
            t = time.perf_counter()
            build(p, mb, SOURCES if args.mix == "all" else SOURCES[-1:])
            size = p.stat().st_size
            print(f"built {size / 2**20:,.0f} MB trace ({args.mix}) in {time.perf_counter() - t:.1f}s")
            out = subprocess.check_output([sys.executable, "-c", CHILD, str(p)], env=env)
            r = json.loads(out)
            mbps = size / 2**20 / r["seconds"]
            print(f"  {size / 2**20:8,.0f} MB  {r['seconds']:6.2f}s  {mbps:7.1f} MB/s  "
                  f"peak RSS {r['maxrss_kb'] / 1024:,.0f} MB  events={r['events']:,} turns={r['turns']:,} "
                  f"calls={r['calls']:,} kernels={r['kernels']:,} problems={r['problems']}")
            p.unlink()


if __name__ == "__main__":
    main()
