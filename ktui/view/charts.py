"""The numbers behind the sweep charts (``ktui runs`` in the app, ``ktui report``), renderer-neutral.

Pure functions over :class:`~ktui.trace.index.RunSummary` (or anything with the same attributes);
no Textual, no Rich, no I/O. The app renders these with Unicode (``ktui.tui.widgets.charts``),
the HTML report as SVG (``ktui.report.html``); both read the same objects, so the pictures say
what ``ktui runs --format json`` says:

- :func:`fast_p_chart`: KernelBench's fast_p over p, per model: the fraction of *all* runs of
  the model that are correct with a speedup greater than p (a step function of p). The recorded
  curve uses :mod:`ktui.trace.aggregate` (so ``fast_0/1/1.5/2`` are exactly the aggregates');
  where re-execution results exist (``ktui verify``), a reproduced curve over the runs verified.
- :func:`speedup_chart`: the speedups of the correct runs per model, with their geometric mean.
- :func:`grid_chart`: model x problem, each cell the best outcome of its runs (failed < compiled
  < correct < faster than the reference) and the best speedup of its correct runs.
- :func:`first_correct_chart`: turns, tokens and wall time to the first correct kernel, per model
  (box-plot statistics over the runs that got one; the others are counted).

Model names and problem titles are untrusted trace text: they are kept as they are here and
made safe by each renderer (``sanitize`` for the terminal, escaping in HTML).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ktui.trace.aggregate import ALL_MODELS, FAST_P, UNKNOWN_MODEL, aggregate, geomean, is_kernel_run
from ktui.view.text import one_line

# best outcome of a grid cell, worst to best
FAILED, COMPILED, CORRECT, FASTER = "failed", "compiled", "correct", "faster"
LEVELS = (FAILED, COMPILED, CORRECT, FASTER)
CHARTS = ("fast_p", "speedup", "grid", "first_correct")
CHART_TITLES = {
    "fast_p": "fast_p over p (correct and speedup > p, of all runs)",
    "speedup": "speedup of correct runs (log scale), geomean marked",
    "grid": "best outcome per model x problem",
    "first_correct": "cost of the first correct kernel",
}


def model_of(run: Any) -> str:
    return getattr(run, "model", None) or UNKNOWN_MODEL


def _finite_pos(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) and f > 0 else None


# ---- fast_p --------------------------------------------------------------------------------------
@dataclass(slots=True)
class FastPCurve:
    """fast_p(p) = #(speedups > p) / runs, a decreasing step function."""

    model: str
    kind: str  # "recorded" | "reproduced"
    runs: int  # the denominator: every run of the model (recorded), the runs verified (reproduced)
    speedups: list[float]  # sorted speedups of the runs that count (correct, known speedup > 0)

    def at(self, p: float) -> float:
        if not self.runs:
            return 0.0
        return (len(self.speedups) - bisect.bisect_right(self.speedups, p)) / self.runs

    def steps(self, lo: float, hi: float) -> list[tuple[float, float]]:
        """(p, fast_p) at lo, at every speedup inside (lo, hi) (the value just after it) and at hi."""
        pts = [(lo, self.at(lo))]
        for s in self.speedups:
            if lo < s < hi:
                pts.append((s, self.at(s)))
        pts.append((hi, self.at(hi)))
        return pts

    @property
    def label(self) -> str:
        return self.model if self.kind == "recorded" else f"{self.model} (reproduced)"


@dataclass(slots=True)
class FastPChart:
    lo: float  # the left end of the log-scaled p axis (below every speedup: the curve starts at fast_0)
    hi: float  # the largest speedup seen (at least 1)
    curves: list[FastPCurve]
    runs: int

    def thresholds(self, curve: FastPCurve) -> dict[float, float]:
        """fast_p at KernelBench's usual thresholds (the aggregates' columns)."""
        return {p: curve.at(p) for p in FAST_P}


def _p_range(all_speedups: Sequence[float]) -> tuple[float, float]:
    if not all_speedups:
        return 0.1, 10.0
    lo = min(min(all_speedups), 1.0) / 2
    hi = max(max(all_speedups), 1.0)
    if hi <= lo * 1.5:
        hi = lo * 4
    return lo, hi


def fast_p_chart(runs: Sequence[Any], reproduced: Mapping[str, Any] | None = None) -> FastPChart:
    """Recorded (and, where there are results, reproduced) fast_p curves per model, in the
    aggregates' model order. ``reproduced`` maps a run's ``real`` path to its re-execution
    (anything with ``correct`` and ``speedup``: :class:`ktui.repro.reproduced.Reproduced`)."""
    aggs = aggregate(runs, key=model_of, total=False)
    curves: list[FastPCurve] = []
    seen: list[float] = []
    rep_by: dict[str, tuple[int, list[float]]] = {}
    for r in runs:
        rp = (reproduced or {}).get(getattr(r, "real", "") or "")
        if rp is None:
            continue
        n, sps = rep_by.get(model_of(r), (0, []))
        sp = _finite_pos(rp.speedup)
        if rp.correct and sp is not None:
            sps.append(sp)
        rep_by[model_of(r)] = (n + 1, sps)
    for a in aggs:
        sps = sorted(a.speedups)
        curves.append(FastPCurve(a.model, "recorded", a.runs, sps))
        seen.extend(sps)
        if a.model in rep_by:
            n, rsp = rep_by[a.model]
            curves.append(FastPCurve(a.model, "reproduced", n, sorted(rsp)))
            seen.extend(rsp)
    lo, hi = _p_range(seen)
    return FastPChart(lo, hi, curves, len(runs))


# ---- speedup distribution --------------------------------------------------------------------------
@dataclass(slots=True)
class SpeedupRow:
    model: str
    runs: int
    speedups: list[float]  # sorted, correct runs with a known speedup
    geomean: float | None


@dataclass(slots=True)
class SpeedupChart:
    lo: float
    hi: float
    rows: list[SpeedupRow]


def speedup_chart(runs: Sequence[Any]) -> SpeedupChart:
    aggs = aggregate(runs, key=model_of, total=False)
    rows = [SpeedupRow(a.model, a.runs, sorted(a.speedups), a.geomean_speedup) for a in aggs]
    allv = [v for r in rows for v in r.speedups]
    if allv:
        lo, hi = min(min(allv), 1.0), max(max(allv), 1.0)
        if hi / lo < 4:  # a little room on both sides of a narrow range
            mid = math.sqrt(hi * lo)
            lo, hi = min(lo, mid / 2), max(hi, mid * 2)
    else:
        lo, hi = 0.5, 2.0
    return SpeedupChart(lo, hi, rows)


# ---- model x problem grid ------------------------------------------------------------------------
def level_of(run: Any) -> str:
    """The outcome level of one run for the grid."""
    if getattr(run, "outcome", None) == "passed":
        sp = _finite_pos(getattr(run, "speedup", None))
        if getattr(run, "no_gpu_final", False):  # a PyTorch wrapper's speed is not a kernel's
            return CORRECT
        return FASTER if sp is not None and sp > 1.0 else CORRECT
    if getattr(run, "compiled", False):
        return COMPILED
    return FAILED


@dataclass(slots=True)
class GridCell:
    model: str
    problem: str  # problem key
    runs: list[int]  # indices into the runs given to grid_chart (to sweep_charts, through it)
    level: str
    speedup: float | None  # best speedup among its correct runs


@dataclass(slots=True)
class GridChart:
    models: list[str]
    problems: list[str]  # problem keys, sorted
    titles: dict[str, str]  # problem key -> display title
    cells: dict[tuple[str, str], GridCell]

    def cell(self, model: str, problem: str) -> GridCell | None:
        return self.cells.get((model, problem))

    def counts(self) -> dict[str, int]:
        out = {lv: 0 for lv in LEVELS}
        for c in self.cells.values():
            out[c.level] += 1
        return out


NO_PROBLEM = "(no problem)"
_LEVEL_KEY = re.compile(r"L\d+/P\d+$")


def problem_of(run: Any) -> str:
    return getattr(run, "problem_key", "") or NO_PROBLEM


def _natural(s: str) -> tuple:
    """Sort "L1/P9" before "L1/P10"."""
    parts: list[Any] = []
    num = ""
    for ch in s.lower():
        if ch.isdigit():
            num += ch
            continue
        if num:
            parts.append((0, int(num)))
            num = ""
        parts.append((1, ch))
    if num:
        parts.append((0, int(num)))
    return tuple(parts)


def grid_chart(runs: Sequence[Any]) -> GridChart:
    models = [a.model for a in aggregate(runs, key=model_of, total=False)]
    cells: dict[tuple[str, str], GridCell] = {}
    titles: dict[str, str] = {}
    for i, r in enumerate(runs):
        m, pk = model_of(r), problem_of(r)
        if pk not in titles:
            titles[pk] = getattr(r, "problem", "") or pk
        c = cells.get((m, pk))
        if c is None:
            c = cells[(m, pk)] = GridCell(m, pk, [], FAILED, None)
        c.runs.append(i)
        lv = level_of(r)
        if LEVELS.index(lv) > LEVELS.index(c.level):
            c.level = lv
        if getattr(r, "outcome", None) == "passed" and not getattr(r, "no_gpu_final", False):
            # a final kernel with no GPU code (a PyTorch wrapper) passed, but its speedup is not a
            # kernel's: shown as passed, as the aggregates count it (in no fast_p, no geomean)
            sp = _finite_pos(getattr(r, "speedup", None))
            if sp is not None and (c.speedup is None or sp > c.speedup):
                c.speedup = sp
    # KernelBench-style keys (L1/P27) first, in number order, then named problems, then none
    problems = sorted(titles, key=lambda k: (k == NO_PROBLEM, _LEVEL_KEY.match(k) is None, _natural(k)))
    return GridChart(models, problems, titles, cells)


# ---- cost of the first correct kernel ----------------------------------------------------------------
@dataclass(slots=True)
class BoxStats:
    n: int
    lo: float
    q1: float
    median: float
    q3: float
    hi: float
    values: list[float] = field(default_factory=list)  # sorted


def quantile(sorted_vals: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_vals:
        raise ValueError("no values")
    pos = (len(sorted_vals) - 1) * q
    i = int(math.floor(pos))
    j = min(i + 1, len(sorted_vals) - 1)
    return sorted_vals[i] + (sorted_vals[j] - sorted_vals[i]) * (pos - i)


def box_stats(values: Sequence[float]) -> BoxStats | None:
    v = sorted(float(x) for x in values)
    if not v:
        return None
    return BoxStats(len(v), v[0], quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75), v[-1], v)


FIRST_CORRECT_METRICS = (("turns", "turns", ""), ("tokens", "tokens", ""), ("wall_s", "wall time", "s"))


@dataclass(slots=True)
class FirstCorrectRow:
    model: str
    runs: int
    reached: int  # runs with a first correct kernel
    stats: dict[str, BoxStats | None]  # metric -> stats over the runs that reached it (and record it)
    unplaced: int = 0  # correct runs whose correct turn the trace does not say (a result at the end only)


@dataclass(slots=True)
class FirstCorrectChart:
    rows: list[FirstCorrectRow]
    ranges: dict[str, tuple[float, float]]  # metric -> (min, max) over every model


def first_correct_values(run: Any) -> dict[str, float | None]:
    """turns (1-based count up to and including the first correct turn), tokens, wall seconds."""
    fct = getattr(run, "first_correct_turn", None)
    if fct is None:
        return {"turns": None, "tokens": None, "wall_s": None}
    tok = getattr(run, "tokens_to_correct", None)
    wall = getattr(run, "wall_ms_to_correct", None)
    return {"turns": float(fct + 1), "tokens": float(tok) if tok is not None else None,
            "wall_s": wall / 1000 if wall is not None else None}


def first_correct_chart(runs: Sequence[Any]) -> FirstCorrectChart:
    models = [a.model for a in aggregate(runs, key=model_of, total=False)]
    vals: dict[str, dict[str, list[float]]] = {m: {k: [] for k, _, _ in FIRST_CORRECT_METRICS} for m in models}
    counts = {m: [0, 0] for m in models}
    unplaced = dict.fromkeys(models, 0)
    for r in runs:
        m = model_of(r)
        counts[m][0] += 1
        fv = first_correct_values(r)
        if fv["turns"] is None:
            if getattr(r, "correct", None) is True:
                unplaced[m] += 1
            continue
        counts[m][1] += 1
        for k, v in fv.items():
            if v is not None:
                vals[m][k].append(v)
    rows = [FirstCorrectRow(m, counts[m][0], counts[m][1], {k: box_stats(vals[m][k]) for k in vals[m]},
                            unplaced[m]) for m in models]
    ranges: dict[str, tuple[float, float]] = {}
    for k, _, _ in FIRST_CORRECT_METRICS:
        allv = [v for m in models for v in vals[m][k]]
        ranges[k] = (min(allv), max(allv)) if allv else (0.0, 1.0)
    return FirstCorrectChart(rows, ranges)


def model_label(name: str, width: int, names: Sequence[str] = ()) -> str | None:
    """A model's name cut to ``width`` characters keeping its last part (``…/claude-opus-4.8``,
    where an end cut read ``openrouter/anthropic/claude…``); None when it fits, when its last part
    does not, or when another of ``names`` ends in the same part (the caller cuts it as before)."""
    head, sep, last = name.rpartition("/")
    if not sep or not head or len(name) <= width or not 0 < len(last) <= width - 2:
        return None
    if sum(1 for n in names if n.rpartition("/")[2] == last) > 1:
        return None
    return "…/" + last


def not_reached_line(rows: Sequence[FirstCorrectRow], name_width: int = 40) -> str:
    """Under the chart, the models it has no row for: those with no correct run ("no correct
    kernel: M 0/20"), and those whose correct runs do not say at which turn (a Harbor trial's
    reward.json is read at the end: "correct, turn not recorded: M 5/20"), which the chart said had
    no correct kernel."""
    never = [r for r in rows if not r.reached and not r.unplaced]
    unsaid = [r for r in rows if not r.reached and r.unplaced]
    parts = []
    if never:
        parts.append("no correct kernel: " + " · ".join(f"{one_line(r.model, name_width)} 0/{r.runs}" for r in never))
    if unsaid:
        parts.append("correct, turn not recorded: "
                     + " · ".join(f"{one_line(r.model, name_width)} {r.unplaced}/{r.runs}" for r in unsaid))
    return "; ".join(parts)


# ---- axes -------------------------------------------------------------------------------------------
NICE_STEPS = (1, 1.5, 2, 3, 5)


def log_ticks(lo: float, hi: float) -> list[float]:
    """1, 1.5, 2, 3, 5 x 10^k inside [lo, hi]."""
    out: list[float] = []
    if not (lo > 0 and hi > 0 and math.isfinite(lo) and math.isfinite(hi)):
        return out
    e = math.floor(math.log10(lo)) - 1
    while 10 ** e <= hi * 10:
        for m in NICE_STEPS:
            v = m * 10 ** e
            if lo <= v <= hi:
                out.append(round(v, 10))
        e += 1
    return out


def lin_ticks(lo: float, hi: float, n: int) -> list[float]:
    """About ``n`` round values inside [lo, hi]."""
    if hi <= lo or n < 1:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), 10 * mag)
    v = math.ceil(lo / step) * step
    out = []
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def fit_log_ticks(lo: float, hi: float, most: int, keep: tuple[str, ...] = ("1", "2", "5")) -> list[float]:
    """:func:`log_ticks`, thinned to the values whose leading digit is in ``keep`` when there are
    more than ``most`` (all of them if none would be left)."""
    ticks = log_ticks(lo, hi)
    if len(ticks) > most:
        ticks = [t for t in ticks if f"{t:g}".lstrip("0.")[:1] in keep] or ticks
    return ticks


@dataclass(frozen=True, slots=True)
class Axis:
    """Where values fall along a chart axis from ``lo`` to ``hi``, log-scaled or linear, as a
    fraction of its length: 0 at ``lo``, 1 at ``hi``, clamped to [0, 1]. A degenerate range
    (``hi <= lo``) is one unit long (linear) or a factor e (log; ``lo`` must be > 0). On a log
    axis a value is taken as at least ``floor`` (``lo`` when None). The renderers turn a fraction
    into pixels (SVG) or into one of ``n`` cells (the terminal, :meth:`index`)."""

    lo: float
    hi: float
    log: bool = True
    floor: float | None = None

    def fraction(self, v: float) -> float:
        if self.log:
            a = math.log(self.lo)
            b = math.log(self.hi) if self.hi > self.lo else a + 1
            f = (math.log(max(v, self.lo if self.floor is None else self.floor)) - a) / (b - a)
        else:
            hi = self.hi if self.hi > self.lo else self.lo + 1
            f = (v - self.lo) / (hi - self.lo)
        return min(1.0, max(0.0, f))

    def index(self, v: float, n: int) -> int:
        """The cell (0 .. n-1) of ``v`` on an axis ``n`` cells long."""
        return round(self.fraction(v) * (n - 1))


def first_correct_axis(fc: FirstCorrectChart, metric: str) -> tuple[float, float, bool]:
    """(lo, hi, log) of one metric's axis: the range over every model (turns start at 1 at the
    most), log-scaled when it spans more than 20x (never for turns). ``hi`` is always above ``lo``:
    one value alone (every run took 0.05 s) gets the axis from 0 to twice it, so the renderers
    draw it in the middle of an axis whose labels say where that is."""
    lo, hi = fc.ranges[metric]
    if metric == "turns":
        lo = min(lo, 1.0)
    if hi <= lo:
        lo, hi = (0.0, 2 * lo) if lo > 0 else (lo, lo + 1)
    return lo, hi, metric != "turns" and lo > 0 and hi / lo > 20


# ---- number labels ------------------------------------------------------------------------------------
def fmt_x(v: float | None) -> str:
    """A speedup: 123x, 12.3x, 1.23x; a dash for none."""
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:.0f}x"
    if v >= 10:
        return f"{v:.1f}x"
    return f"{v:.2f}x"


def fmt_num(v: float, unit: str = "") -> str:
    """A count (1.2M, 34k, 5.6k, 78, 7.5) or, with unit "s", seconds (12s, 3.4s)."""
    if unit == "s":
        return f"{v:.0f}s" if v >= 10 else f"{v:.1f}s"
    if v >= 1_000_000:
        return f"{v / 1e6:.1f}M"
    if v >= 10_000:
        return f"{v / 1e3:.0f}k"
    if v >= 1000:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}" if v == int(v) else f"{v:.1f}"


def pct(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:.0f}%"


# ---- all of them --------------------------------------------------------------------------------------
@dataclass(slots=True)
class SweepCharts:
    runs: int
    fast_p: FastPChart
    speedup: SpeedupChart
    grid: GridChart
    first_correct: FirstCorrectChart


def sweep_charts(runs: Sequence[Any], reproduced: Mapping[str, Any] | None = None) -> SweepCharts:
    """Every chart over ``runs`` (the filtered view), computed once (call it in a worker). Runs
    that are not GPU-kernel tasks (:func:`ktui.trace.aggregate.is_kernel_run`: a coding session in
    the same folder) are left out, as in the per-model table: no model is charted for them."""
    everything = list(runs)
    at = [i for i, r in enumerate(everything) if is_kernel_run(r)]
    runs = [everything[i] for i in at]
    grid = grid_chart(runs)
    for c in grid.cells.values():  # a cell's runs index what the caller gave (its table rows)
        c.runs = [at[i] for i in c.runs]
    return SweepCharts(len(runs), fast_p_chart(runs, reproduced), speedup_chart(runs), grid,
                       first_correct_chart(runs))


def charts_dict(c: SweepCharts) -> dict[str, Any]:
    """The charts as plain data (``ktui runs --format json`` and the HTML report carry this)."""
    fp = c.fast_p
    return {
        "runs": c.runs,
        "fast_p": {"lo": fp.lo, "hi": fp.hi, "curves": [
            {"model": cv.model, "kind": cv.kind, "runs": cv.runs, "speedups": cv.speedups,
             **{f"fast_{p:g}": v for p, v in fp.thresholds(cv).items()}} for cv in fp.curves]},
        "speedup": {"lo": c.speedup.lo, "hi": c.speedup.hi, "rows": [
            {"model": r.model, "runs": r.runs, "speedups": r.speedups, "geomean": r.geomean}
            for r in c.speedup.rows]},
        "grid": {"models": c.grid.models, "problems": [{"key": k, "title": c.grid.titles[k]} for k in c.grid.problems],
                 "cells": [{"model": g.model, "problem": g.problem, "runs": g.runs, "level": g.level,
                            "speedup": g.speedup} for g in c.grid.cells.values()]},
        "first_correct": [{"model": r.model, "runs": r.runs, "reached": r.reached,
                           **{k: (None if s is None else {"n": s.n, "min": s.lo, "q1": s.q1, "median": s.median,
                                                          "q3": s.q3, "max": s.hi})
                              for k, s in r.stats.items()}} for r in c.first_correct.rows],
    }


__all__ = ["ALL_MODELS", "CHARTS", "geomean", "sweep_charts", "charts_dict"]
