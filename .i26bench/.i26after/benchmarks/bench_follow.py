#!/usr/bin/env python3
"""Follow mode: the cost of an immutable snapshot per poll (ktui/tui/follow.py), in the worker.

Each poll that changed something copies the run (``snapshot_run``: the event log's columns
copied whole, the rest of the model deep-copied) so the screen never shares state with the
follower. This prints the time of one snapshot for the bundled seed and for the synthetic
trace of bench_tui.py (500 turns, 2,000-line kernels), and the time of a whole poll cycle
(append one turn, poll, snapshot) at the end of the big trace.

    python benchmarks/bench_follow.py [--turns 500] [--kernel-lines 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_tui import SEED, synthetic_trace  # noqa: E402

from ktui.trace.reader import Follower  # noqa: E402
from ktui.tui.follow import snapshot_run  # noqa: E402


def time_snapshot(path: Path, repeat: int) -> tuple[float, int, int]:
    f = Follower(path)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        snapshot_run(f.run)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, len(f.run.turns), len(f.run.events)


def time_poll_cycle(path: Path, repeat: int) -> float:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = len(lines) - 40 * repeat
    live = path.with_name("live.jsonl")
    live.write_text("".join(lines[:cut]), encoding="utf-8")
    f = Follower(live)
    times = []
    for i in range(repeat):
        with open(live, "a", encoding="utf-8") as fh:
            fh.write("".join(lines[cut + 40 * i: cut + 40 * (i + 1)]))
        t0 = time.perf_counter()
        f.poll()
        snapshot_run(f.run)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--kernel-lines", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ms, turns, events = time_snapshot(SEED, args.repeat)
    print(f"seed ({turns} turns, {events} events): snapshot {ms:.1f} ms")
    with tempfile.TemporaryDirectory() as d:
        big = synthetic_trace(Path(d) / "big.jsonl", args.turns, args.kernel_lines)
        ms, turns, events = time_snapshot(big, args.repeat)
        print(f"synthetic ({turns} turns, {events} events, {args.kernel_lines}-line kernels): "
              f"snapshot {ms:.1f} ms")
        cycle = time_poll_cycle(big, args.repeat)
        print(f"synthetic: append ~40 lines, poll and snapshot: {cycle:.1f} ms (median of {args.repeat})")


if __name__ == "__main__":
    main()
