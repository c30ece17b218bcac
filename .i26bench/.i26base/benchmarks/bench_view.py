"""Time to build the view model and to search it, on real traces and a long synthetic one.

    python benchmarks/bench_view.py            # the seed, every ../shared fixture, a 500-turn trace
    python benchmarks/bench_view.py --turns 5000

Prints, per trace: load time, ``build_view`` (the whole run: header, flags, metrics, every turn's
blocks, kernel diff sizes), one turn's view (what the app builds when a turn is shown) and a
search over every turn (what ``/`` counts), in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ktui.trace import load  # noqa: E402
from ktui.view import build_view, turn_view  # noqa: E402
from ktui.view.build import lookup_stats  # noqa: E402


def synthetic(path: Path, turns: int) -> Path:
    code = "import torch\nfrom torch.utils.cpp_extension import load_inline\n" + "".join(
        f"// line {i}: __global__ void k(float* x) {{ x[{i}] = {i}; }}\n" for i in range(300))
    with open(path, "w") as f:
        f.write(json.dumps({"tick": 0, "ts_ms": 1, "actor": None, "payload": {"kind": "system", "note": "x"}}) + "\n")
        for t in range(turns):
            ts = 1000 * (t + 1)
            f.write(json.dumps({"tick": 2 * t + 1, "ts_ms": ts, "actor": "a", "payload": {
                "kind": "agent_message", "text": f"turn {t}: trying again with a different block size"}}) + "\n")
            f.write(json.dumps({"tick": 2 * t + 1, "ts_ms": ts, "actor": "a", "payload": {
                "kind": "tool_call", "id": f"c{t}", "name": "run_correctness",
                "args": {"kernel_code": code + f"// v{t}\n"}}}) + "\n")
            f.write(json.dumps({"tick": 2 * t + 2, "ts_ms": ts + 500, "actor": "a", "payload": {
                "kind": "tool_result", "id": f"c{t}", "name": "run_correctness",
                "result": {"ok": t % 3 != 0, "tool": "run_correctness",
                           "summary": "run_correctness FAILED: mismatch\n" * 30 if t % 3 == 0 else "PASSED"}}}) + "\n")
    return path


def ms(f) -> tuple[float, object]:
    t = time.perf_counter()
    v = f()
    return (time.perf_counter() - t) * 1000, v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=500)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    paths = [ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl",
             *sorted((ROOT.parent / "shared" / "fixtures").glob("*/*.jsonl")),
             synthetic(tmp / f"synthetic_{args.turns}.jsonl", args.turns)]
    regex = re.compile("mismatch|generator", re.I)
    print(f"{'trace':48} {'turns':>6} {'load':>8} {'build_view':>11} {'one turn':>9} {'search all':>11} {'hits':>6}")
    for p in paths:
        t_load, run = ms(lambda p=p: load(p))
        t_view, view = ms(lambda run=run: build_view(run))
        mid = run.turns[len(run.turns) // 2] if run.turns else None
        t_turn = ms(lambda run=run, mid=mid: turn_view(run, mid, stats=lookup_stats))[0] if mid is not None else 0.0
        t_search, hits = ms(lambda view=view: sum(1 for t in view.turns for s in t.plain_lines()
                                                  for _ in regex.finditer(s)))
        print(f"{p.name[:48]:48} {len(run.turns):>6} {t_load:>7.1f}ms {t_view:>9.1f}ms {t_turn:>7.2f}ms "
              f"{t_search:>9.1f}ms {hits:>6}")


if __name__ == "__main__":
    main()
