"""Benchmark ``ktui search`` on a generated 1,000-run sweep.

    python benchmarks/bench_search.py [--traces 1000] [--size-mb 100] [--dir DIR] [--keep] [--json]

The sweep is the one ``bench_runs.py`` writes (the seed run with its turns repeated, a different
model / problem / outcome each, one in ten a fixture of another variant), and ``--rare`` of its
traces (default 10) get an agent message that says ``CUDA error: an illegal memory access was
encountered`` at a known turn. Each search runs as ``ktui search`` in a fresh process (the CLI, as
a user runs it, output to a file), and the figures are wall time, hits, runs hit and how many
traces had to be parsed:

1. the rare error text, literal (most traces are ruled out from their bytes);
2. the same as a regular expression (``illegal\\s+memory``: ruled out from the unescaped text);
3. a text every seed-derived run has (``generator device``: every such trace is parsed);
4. the rare text again after ``ktui runs --format json`` has written the index cache.

The page cache is warm (the tree was just written).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

NEEDLE = "CUDA error: an illegal memory access was encountered"


def plant(sweep: Path, every: int) -> list[tuple[str, int]]:
    """Put NEEDLE into the first agent message of every `every`-th seed-derived trace."""
    planted = []
    traces = sorted(p for p in sweep.rglob("trace.jsonl") if "other_" not in str(p))
    for p in traces[::every]:
        lines = p.read_bytes().split(b"\n")
        for i, ln in enumerate(lines):
            if b'"kind":"agent_message"' in ln:
                ev = json.loads(ln)
                ev["payload"]["text"] = f"run_correctness said: {NEEDLE}\nretrying with a bounds check"
                lines[i] = json.dumps(ev, separators=(",", ":")).encode()
                break
        p.write_bytes(b"\n".join(lines))
        planted.append((str(p.relative_to(sweep)), 0))
    return planted


def run_search(sweep: Path, args: list[str], env: dict) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ktui", "search", str(sweep), *args, "--json"], capture_output=True,
                       text=True, env=env)
    wall = time.perf_counter() - t0
    hits = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    return {"args": args, "rc": r.returncode, "wall_s": round(wall, 3), "hits": len(hits),
            "runs_hit": len({h["path"] for h in hits}), "summary": r.stderr.strip().splitlines()[-1:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=1000)
    ap.add_argument("--size-mb", type=float, default=100.0)
    ap.add_argument("--rare", type=int, default=10, help="traces that get the error text")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from bench_runs import generate

    base = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="ktui-bench-search-"))
    cache = base / "cache"
    env = {**os.environ, "KTUI_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    try:
        gen = generate(base, a.traces, a.size_mb)
        sweep = base / "sweep"
        seeds = a.traces - a.traces // 10
        planted = plant(sweep, max(1, seeds // max(1, a.rare)))
        rows = {
            "rare literal": run_search(sweep, [NEEDLE], env),
            "rare regex": run_search(sweep, [r"illegal\s+memory", "--regex"], env),
            "common text": run_search(sweep, ["generator device", "--max-per-run", "5"], env),
        }
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ktui", "runs", str(sweep), "--format", "json"], env=env,
                       capture_output=True, check=True)
        index_s = time.perf_counter() - t0
        rows["rare literal, index cached"] = run_search(sweep, [NEEDLE], env)
        out = {"sweep": gen, "planted": len(planted), "index_build_s": round(index_s, 2), "searches": rows,
               "cpus": os.cpu_count(), "python": sys.version.split()[0]}
        if a.json:
            print(json.dumps(out, indent=1))
        else:
            print(f"sweep: {gen['traces']} traces, {gen['bytes'] / 1e6:.0f} MB; {len(planted)} planted; "
                  f"{os.cpu_count()} CPUs")
            print(f"{'search':28} {'wall s':>7} {'hits':>6} {'runs':>5}  summary")
            for name, r in rows.items():
                print(f"{name:28} {r['wall_s']:7.2f} {r['hits']:6d} {r['runs_hit']:5d}  {' '.join(r['summary'])}")
            print(f"(ktui runs --format json to build the index: {index_s:.1f} s)")
    finally:
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
