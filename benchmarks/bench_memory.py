#!/usr/bin/env python3
"""Memory a loaded run keeps (issue 25), with long lines read back on demand and with everything
kept (``KTUI_LAZY_MIN`` above any line: the builder before), each load in a fresh process.

Traces (generated under ``$KTUI_BENCH_DIR``, default ``/tmp/ktui_bench``, never in the repo):

- ``long``: 2,000 turns of 25 KB of unique text each (a kernel source and a tool output per
  turn, ~50 MB; ``tests/test_lazy_memory.py`` writes the same);
- ``paint_<N>MB``: the real fixtures and the seed trace repeated to N MB (``bench_first_paint``'s
  files: event-dense, ~900 bytes a line, 170 events per copy).

Figures per load: resident anonymous memory after the load (``RssAnon``, less the interpreter's
and imports' own), the peak (``VmHWM``), the bytes Python still holds (tracemalloc), CPU seconds.

    python benchmarks/bench_memory.py [--sizes 40 400] [--skip-long] [--dense] [--traced]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
TRACES = Path(os.environ.get("KTUI_BENCH_DIR", "/tmp/ktui_bench"))

CHILD = r"""
import gc, json, resource, sys, time, tracemalloc
def anon():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon:")) / 1024
from ktui.trace import load
import ktui.trace.importers, ktui.trace.results  # what load imports on first use: not the run's
base = anon()
trace = sys.argv[2] == "1"
if trace:
    tracemalloc.start()
c = time.process_time()
run = load(sys.argv[1], findings=False)
cpu = time.process_time() - c
gc.collect()
held = tracemalloc.get_traced_memory()[0] / 2**20 if trace else None
sites = []
if trace and int(sys.argv[3]):  # where what the run keeps was allocated: the top sites
    stats = tracemalloc.take_snapshot().statistics("lineno")
    for st in stats[:int(sys.argv[3])]:
        fr = st.traceback[0]
        sites.append((fr.filename.rsplit("/ktui/", 1)[-1], fr.lineno, round(st.size / 2**20, 2), st.count))
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
print(json.dumps({"rss_anon_mb": round(anon() - base, 1), "peak_rss_mb": round(hwm, 1),
                  "python_held_mb": None if held is None else round(held, 1), "cpu_s": round(cpu, 2), "sites": sites,
                  "events": len(run.events), "turns": len(run.turns), "calls": len(run.calls)}))
"""


def one(path: Path, lazy: bool, traced: bool, sites: int = 0) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not lazy:
        env["KTUI_LAZY_MIN"] = str(1 << 40)
    else:
        env.pop("KTUI_LAZY_MIN", None)
    # -P: this checkout's ktui (PYTHONPATH), not the one in the current directory
    out = subprocess.run([sys.executable, "-P", "-c", CHILD, str(path), "1" if traced else "0", str(sites)],
                         env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[40, 400])
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--traced", action="store_true", help="also count Python's bytes (tracemalloc: slower)")
    ap.add_argument("--sites", type=int, default=0,
                    help="with --traced: the N allocation sites that hold most of the run (tracemalloc)")
    ap.add_argument("--lazy-only", action="store_true", help="only the load that reads long lines back on demand")
    ap.add_argument("--dense", action="store_true",
                    help="also the event-dense trace (tests/test_scaling.trace(30000), bench_parse's 'dense')")
    args = ap.parse_args()
    TRACES.mkdir(parents=True, exist_ok=True)
    files = []
    if not args.skip_long:
        from test_lazy_memory import write_trace

        p = TRACES / "long_2000turns.jsonl"
        if not p.exists():
            write_trace(p, 25_000)
        files.append(p)
    if args.dense:
        from bench_parse import dense

        files.append(dense())
    if args.sizes:
        from bench_first_paint import make

        files += [make(mb) for mb in args.sizes]
    for p in files:
        print(f"\n{p.name}: {p.stat().st_size / 1e6:,.0f} MB", flush=True)
        for lazy in (True,) if args.lazy_only else (True, False):
            r = one(p, lazy, args.traced, args.sites)
            what = "read back on demand" if lazy else "everything kept    "
            held = f"  Python holds {r['python_held_mb']:7.1f} MB" if r["python_held_mb"] is not None else ""
            print(f"  {what}  RssAnon {r['rss_anon_mb']:7.1f} MB  peak RSS {r['peak_rss_mb']:7.1f} MB{held}  "
                  f"CPU {r['cpu_s']:6.2f} s   ({r['events']:,} events, {r['turns']:,} turns)", flush=True)
            for where, line, mb, count in r["sites"]:
                print(f"      {mb:8.2f} MB {count:9,} blocks  {where}:{line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
