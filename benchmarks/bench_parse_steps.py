#!/usr/bin/env python3
"""Where the parse's time goes, step by step, against the bare orjson loop (issue 25, deliver 3).

Each step does what the one before does and more, over the same lines (read and split once,
before timing):

- ``floor``: ``orjson.loads`` of every line, nothing kept (the loop the target is set against);
- ``envelope``: and the envelope's four fields read (payload, kind, tick, ts_ms, actor);
- ``columns``: and checked and appended to five columns with the kind and actor interned: the
  least a reader can keep of an event (no turns, calls, messages or results);
- ``loop``: ktui's reader (``LineParser.feed_batch``) with every kind's handler a no-op: its
  checks, its event log and the handler call;
- ``feed``: the reader and the builder's handlers (turns, calls, results, messages, notes);
- ``finish``: and ``Builder.finish`` without the static findings (what the app loads);
- ``validate``: and with them (what ``ktui validate`` and ``show`` load).

Figures: CPU seconds (``time.process_time``, the least of ``--reps`` runs in one process; no
cyclic GC, as the reader runs), or with ``--callgrind`` the instructions valgrind counts (one
run per step, less a run that only imports and reads: the same on a loaded machine).

    python benchmarks/bench_parse_steps.py dense /tmp/ktui_bench/paint_40MB.jsonl
    python benchmarks/bench_parse_steps.py --callgrind --lines 40000 dense
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

STEPS = ("floor", "envelope", "columns", "loop", "feed", "finish", "validate")

# the least a reader keeps of an event (bench_typed_decode.py's orjson-columns runs it too): child source
COLUMNS = r"""
def columns():
    a, b, c, d, e = array("q"), array("q"), array("i"), array("H"), array("H")
    A, B, C, D, E = a.append, b.append, c.append, d.append, e.append
    kinds, actors = {}, {}
    for raw in lines:
        obj = loads(raw)
        if type(obj) is dict:
            p = obj.get("payload")
            if type(p) is dict:
                kind, tick, ts, actor = p.get("kind"), obj.get("tick"), obj.get("ts_ms"), obj.get("actor")
                if (type(kind) is str and type(tick) is int and type(ts) is int
                        and (actor is None or type(actor) is str)):
                    k = kinds.get(kind)
                    if k is None:
                        k = kinds[kind] = len(kinds)
                    x = actors.get(actor)
                    if x is None:
                        x = actors[actor] = len(actors)
                    A(tick)
                    B(ts)
                    C(-1)
                    D(k)
                    E(x)
"""

# the least of --reps runs of the step, cyclic GC off (as the reader runs): child source, after fns[step]
BEST_OF = r"""
gc.disable()
best = None
for _ in range(reps):
    c = time.process_time()
    fns[step]()
    t = time.process_time() - c
    best = t if best is None else min(best, t)
    gc.collect()
"""

CHILD = r"""
import gc, json, sys, time
from array import array
import orjson
import ktui.trace.reader, ktui.trace.importers, ktui.trace.results, ktui.trace.derive, ktui.trace.findings
from ktui.trace.builder import Builder
from ktui.trace.lazy import LineSource
from ktui.trace.parse import LineParser

path, step, n, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(path, "rb") as f:
    lines = f.read().split(b"\n")
lines = [x for x in (lines[:n] if n else lines) if x.strip()]
loads = orjson.loads


def floor():
    for raw in lines:
        loads(raw)


def envelope():
    for raw in lines:
        obj = loads(raw)
        p = obj.get("payload")
        kind, tick, ts, actor = p.get("kind"), obj.get("tick"), obj.get("ts_ms"), obj.get("actor")

""" + COLUMNS + r"""

def builder(noop=False):
    b = Builder(path, source=LineSource(path))
    if noop:
        nothing = lambda ev, p, o: None  # noqa: E731
        b._dispatch = {k: nothing for k in b._dispatch}
        b._on_unknown = nothing
    return b


def loop():
    LineParser(builder(noop=True)).feed_batch(lines)


def feed():
    LineParser(builder()).feed_batch(lines)


def finish(findings=False):
    b = builder()
    LineParser(b).feed_batch(lines)
    b.finish(findings=findings)


fns = {"floor": floor, "envelope": envelope, "columns": columns, "loop": loop, "feed": feed, "finish": finish,
       "validate": lambda: finish(True), "none": lambda: None}
""" + BEST_OF + r"""print(json.dumps({"cpu_s": best, "lines": len(lines)}))
"""


def measure(path: Path, step: str, n: int, reps: int, callgrind: bool) -> dict:
    cmd = [sys.executable, "-P", "-c", CHILD, str(path.resolve()), step, str(n), str(reps)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not callgrind:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd="/tmp")
        return json.loads(out.stdout)
    cg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd[:-1], "1"]
    out = subprocess.run(cg, env=env, capture_output=True, text=True, check=True, cwd="/tmp")
    got = json.loads(out.stdout)
    got["instructions"] = next(int(x.split()[-1]) for x in out.stderr.splitlines() if "Collected" in x)
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="trace files, or 'dense' (tests/test_scaling.trace(30000))")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lines", type=int, default=0, help="only the first N lines (callgrind is ~50x slower)")
    ap.add_argument("--callgrind", action="store_true", help="count instructions (valgrind) instead of CPU time")
    ap.add_argument("--steps", nargs="+", default=list(STEPS), choices=STEPS)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    from bench_parse import dense, write_results

    results = []
    for t in args.traces:
        path = dense() if t == "dense" else Path(t)
        key = "instructions" if args.callgrind else "cpu_s"
        base = measure(path, "none", args.lines, 1, True)["instructions"] if args.callgrind else 0
        row: dict = {"file": path.name, "unit": "instructions" if args.callgrind else "CPU s"}
        print(f"\n{path.name} ({row['unit']}{', less ' + f'{base:,}' + ' to import and read' if base else ''})",
              flush=True)
        floor = prev = None
        for step in args.steps:
            got = measure(path, step, args.lines, args.reps, args.callgrind)
            v = got[key] - base
            n = got["lines"]
            floor = v if floor is None else floor
            per = f"{v / n:,.0f} instr" if args.callgrind else f"{v / n * 1e6:.2f} us"
            inc = "" if prev is None else (f"   +{(v - prev) / n:,.0f} instr a line" if args.callgrind
                                           else f"   +{(v - prev) / n * 1e6:.2f} us a line")
            shown = f"{v:15,.0f}" if args.callgrind else f"{v:8.3f} s"
            print(f"  {step:9s} {shown}  {per}/line  {v / floor:5.2f}x floor{inc}", flush=True)
            row[step] = v
            row["lines"] = n
            prev = v
        results.append(row)
    return write_results(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
