"""Figures for `ktui repro --profile`'s own (CPU) work on real ncu output: reading the raw page,
the per-forward sums, the rows and the roofline chart. The GPU side (ncu's replay passes and wall
time) is measured by scripts/gpu/profile.sh; see benchmarks/results/profile_h200.md.

    python benchmarks/bench_profile.py
"""

from __future__ import annotations

import time
from pathlib import Path

from ktui.repro.profile.chart import roofline_chart
from ktui.repro.profile.compare import compare_profile
from ktui.repro.profile.parse import parse_raw_csv
from ktui.repro.profile.roofline import roofline
from ktui.repro.profile.summary import summarize

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ncu"


def best(fn, n: int = 20) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out) * 1e3


def main() -> None:
    full = (FIX / "raw_seed_v4.full.csv").read_text(encoding="utf-8")
    trimmed = (FIX / "raw_mm_fp32.csv").read_text(encoding="utf-8")
    print(f"parse full raw page ({len(full) / 1024:.0f} KiB, 2,238 columns): {best(lambda: parse_raw_csv(full)):.2f} ms")
    print(f"parse trimmed raw page ({len(trimmed) / 1024:.0f} KiB): {best(lambda: parse_raw_csv(trimmed)):.2f} ms")
    many = trimmed.splitlines()
    big = "\n".join(many[:2] + [many[2].replace('"0"', f'"{i}"', 1) for i in range(1000)])
    print(f"parse + summarize 1,000 launches: {best(lambda: summarize(parse_raw_csv(big)), 3):.1f} ms")
    f = summarize(parse_raw_csv(trimmed))["forward"]
    print(f"rows (no recorded page): {best(lambda: compare_profile(None, f)):.2f} ms")
    r = roofline(f, f)
    print(f"roofline chart 60x14: {best(lambda: roofline_chart(r)):.2f} ms")


if __name__ == "__main__":
    main()
