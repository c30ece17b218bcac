#!/usr/bin/env python3
"""Full parse against a bare orjson loop, in CPU seconds, for one or more checkouts, interleaved
(issue 25, deliver 3: the parse path at most 1.3x the orjson loop).

Each figure is a fresh process: ``ktui.trace.load(path)`` (with the static findings, as
``validate`` and ``show`` load; and with ``findings=False``, as the app's first load does; and
``--modes skim``: the sweep index's per-trace skim, ``ktui.trace.index.skim.summarize``) run
from a checkout's ``PYTHONPATH``, less the CPU of starting the interpreter and importing what
the load imports; against ``for line in f: orjson.loads(line)`` over the same file (less the
start-up as well: bench_first_paint's loop counts its start-up, 40 ms, in). Rounds are
interleaved (checkout A, B, ..., the loop; then again), so a loaded machine weighs on all alike.

Traces: the paths given, and ``dense`` for ``tests/test_scaling.trace(30000)`` (15.8 MB, 120,001
small events: the event-dense case), written under ``$KTUI_BENCH_DIR`` (default /tmp/ktui_bench).

    python benchmarks/bench_parse.py --src before=/tmp/old_checkout --src after=. \\
        --rounds 3 dense /tmp/ktui_bench/paint_40MB.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
TRACES = Path(os.environ.get("KTUI_BENCH_DIR", "/tmp/ktui_bench"))

ORJSON_LOOP = r"""
import json, resource, sys
import orjson
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
base = cpu()
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
print(json.dumps({"cpu_s": cpu() - base}))
"""
LOAD = r"""
import json, resource, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
import ktui.trace.reader, ktui.trace.importers, ktui.trace.results, ktui.trace.derive
mode = sys.argv[2]
if mode == "findings":
    import ktui.trace.findings  # what the findings import on first use: not the parse
if mode == "skim":
    from ktui.trace.index.skim import summarize
base = cpu()
if mode == "skim":
    s = summarize(sys.argv[1])
    n, turns = s.n_events if hasattr(s, "n_events") else 0, s.turns if hasattr(s, "turns") else 0
else:
    from ktui.trace import load
    run = load(sys.argv[1], findings=mode == "findings")
    n, turns = len(run.events), len(run.turns)
print(json.dumps({"cpu_s": cpu() - base, "events": n, "turns": turns,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def dense() -> Path:
    p = TRACES / "dense_30000turns.jsonl"
    if not p.exists():
        sys.path.insert(0, str(ROOT))
        from tests.test_scaling import trace

        TRACES.mkdir(parents=True, exist_ok=True)
        p.write_bytes(trace(30000))
    return p


def write_results(results: list, path: str) -> int:
    """The rows as JSON to ``path`` (``--json``; nothing without one); the exit status, 0."""
    if path:
        Path(path).write_text(json.dumps(results, indent=2))
    return 0


def ktui_cpu(src: str, path: Path, mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    out = subprocess.run([sys.executable, "-P", "-c", LOAD, str(path), mode], env=env,
                         capture_output=True, text=True, check=True, cwd="/tmp")
    return json.loads(out.stdout)


def orjson_cpu(path: Path) -> float:
    out = subprocess.run([sys.executable, "-c", ORJSON_LOOP, str(path)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)["cpu_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="trace files, or 'dense'")
    ap.add_argument("--src", action="append", default=[], help="NAME=CHECKOUT (repeatable; default: this one)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=["findings", "no-findings"],
                    choices=["findings", "no-findings", "skim"],
                    help="load with the static findings, without them, and/or the sweep index's skim "
                         "(ktui.trace.index.skim.summarize: what `ktui runs` does per trace)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    srcs = [tuple(s.split("=", 1)) for s in args.src] or [("this", str(ROOT))]
    modes = args.modes
    results = []
    for t in args.traces:
        path = dense() if t == "dense" else Path(t)
        row: dict = {"file": path.name, "mb": round(path.stat().st_size / 1e6, 1), "orjson": []}
        print(f"\n{path.name}: {row['mb']:,} MB", flush=True)
        for r in range(args.rounds):
            for name, src in srcs:
                for mode in modes:
                    got = ktui_cpu(str(Path(src).resolve()), path, mode)
                    row.setdefault(f"{name}{'' if mode == 'findings' else f' ({mode})'}", []).append(got["cpu_s"])
                    if mode != "skim":
                        row["events"], row["turns"] = got["events"], got["turns"]
                    row.setdefault(f"{name} peak RSS MB", []).append(round(got["maxrss_mb"]))
            row["orjson"].append(orjson_cpu(path))
            print(f"  round {r + 1}: " + "  ".join(f"{k} {v[-1]:.2f}" for k, v in row.items()
                                                   if isinstance(v, list) and "RSS" not in k), flush=True)
        floor = statistics.median(row["orjson"])
        for k, v in list(row.items()):
            if isinstance(v, list) and k != "orjson" and "RSS" not in k:
                m = statistics.median(v)
                row[f"{k}: median / orjson"] = round(m / floor, 2)
                print(f"  {k:28s} median {m:6.2f} s CPU   {m / floor:5.2f}x the orjson loop ({floor:.3f} s)",
                      flush=True)
        results.append(row)
    return write_results(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
