"""The view of a verify report (``ktui verify``, the runs screen's ``v``, ``ktui report --verify``):
one row per run (recorded vs reproduced), per-model aggregates of both sides, the claims that do
not hold (worst first) and the sweep's figures.

    from ktui.view.verify import verify_view
    v = verify_view(record)         # a ktui.repro.verify.results.VerifyReport (Report.record())
    v.runs, v.models, v.claims, v.summary, v.parts

Built from the typed report; every string of it (paths, models, reasons from the judge and the
trace) is cleaned here. No Rich, no Textual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ktui.repro.verify.record import ModelRecord, RunRecord, SideAggregate, VerifyReport, stats_line
from ktui.trace.aggregate import FAST_P
from ktui.trace.words import count
from ktui.view import roles as R
from ktui.view.doc import RIGHT, Column, Part, Table, blank, cell, para
from ktui.view.repro import verdict_span_role
from ktui.view.text import one_line

WIDE = 150  # the runs table shows each run's reason from this many columns on


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def side_text(outcome: str, sp: float | None) -> str:
    return one_line(outcome) + (f" {sp:.2f}x" if sp is not None else "")


@dataclass(frozen=True, slots=True)
class RunLine:
    path: str
    model: str
    version: str
    recorded: str  # "passed 2.10x"
    reproduced: str  # "failed" / "passed 1.90x (cached)"
    verdict: str
    reason: str


@dataclass(frozen=True, slots=True)
class ModelLine:
    model: str
    runs: int
    judged: str  # "3" or "3 (1 not)"
    cells: tuple[str, ...]  # pass, fast_p..., geomean: "recorded → reproduced"


@dataclass(frozen=True, slots=True)
class VerifyView:
    runs: tuple[RunLine, ...]
    models: tuple[ModelLine, ...]
    claims: tuple[RunLine, ...]
    judged: int
    not_judged: int
    summary: str  # the line above the claims (or that every claim holds)
    stats: str
    runs_table: Table
    models_table: Table
    parts: tuple[Part, ...]


def _run(r: RunRecord) -> RunLine:
    return RunLine(one_line(r.path), one_line(r.model or ""), one_line(r.version or "—"),
                   side_text(r.recorded_outcome, r.recorded_speedup),
                   side_text(r.reproduced_outcome, r.reproduced_speedup) + (" (cached)" if r.cached else ""),
                   one_line(r.verdict), one_line(r.reason, 300))


def _model(m: ModelRecord) -> ModelLine:
    a = m.recorded or SideAggregate(None, 0, 0, 0, None, ())
    b = m.reproduced or SideAggregate(None, 0, 0, 0, None, ())
    cells = [f"{pct(a.pass_rate)} → {pct(b.pass_rate)}"]
    cells += [f"{pct(a.fast_p(p))} → {pct(b.fast_p(p))}" for p in FAST_P]
    cells.append(f"{times(a.geomean_speedup)} → {times(b.geomean_speedup)}")
    nj = b.not_judged if m.reproduced else 0
    judged = f"{b.judged if m.reproduced else 0}" + (f" ({nj} not)" if nj else "")
    return ModelLine(one_line(m.model), m.runs, judged, tuple(cells))


def runs_table(runs: tuple[RunLine, ...], verdicts: tuple[str, ...]) -> Table:
    """One run a line (never wrapped: grep finds a run's record whole); the reason only where the
    room is :data:`WIDE` (the claims give the reason of every claim that fails)."""
    cols = (Column("run", "run", wrap=False, min_width=16, max_width=48),
            Column("model", "model", wrap=False, min_width=8, priority=2),
            Column("ver", "ver", wrap=False, priority=3),
            Column("recorded", "recorded", wrap=False, priority=1),
            Column("reproduced", "reproduced", wrap=False, priority=1),
            Column("verdict", "verdict", wrap=False, min_width=10),
            Column("reason", "reason", wrap=False, max_width=70, priority=4, min_room=WIDE))
    rows = tuple((cell(r.path), cell(r.model), cell(r.version), cell(r.recorded), cell(r.reproduced),
                  cell(r.verdict, role=verdict_span_role(v, "")), cell(r.reason)) for r, v in zip(runs, verdicts, strict=True))
    return Table("runs", cols, rows, gap=2, trailing=2)


def models_table(models: tuple[ModelLine, ...]) -> Table:
    """Per model: recorded → reproduced pass rate, fast_p and geomean speedup."""
    cols = [Column("model", "model", wrap=False, min_width=10),
            Column("runs", "runs", justify=RIGHT, fold=False, min_width=4),
            Column("judged", "judged", justify=RIGHT, wrap=False, min_width=6)]
    cols += [Column(h, h, justify=RIGHT, wrap=False, priority=1 if h in ("pass", "geomean") else 2)
             for h in ["pass"] + [f"fast_{p:g}" for p in FAST_P] + ["geomean"]]
    rows = tuple((cell(m.model), cell(str(m.runs)), cell(m.judged), *(cell(c) for c in m.cells)) for m in models)
    return Table("models", tuple(cols), rows, gap=2, trailing=2)


def _not_judged_why(runs: tuple[RunLine, ...]) -> list[Part]:
    """Why runs were not judged here, one line a reason (the runs that share it named, the first
    three): the runs table shows a run's reason only from :data:`WIDE` columns on, so at 100
    columns "see why above" pointed at nothing."""
    groups: dict[str, list[str]] = {}
    for r in runs:
        if r.verdict == "not judged here":
            groups.setdefault(r.reason or "no reason given", []).append(r.path)
    if not groups:
        return []
    out: list[Part] = [blank(), para("not judged here, and why", role=R.STRONG)]
    for reason, paths in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        out.append(para(f"  {count(len(paths), 'run')}: {reason} — {', '.join(paths[:3])}{more}", wrap=False))
    return out


def verify_view(report: VerifyReport) -> VerifyView:
    runs = tuple(_run(r) for r in report.runs)
    claims = tuple(_run(r) for r in report.claims)
    models = tuple(_model(m) for m in report.models)
    rt = runs_table(runs, tuple(r.verdict for r in report.runs))
    mt = models_table(models)
    nj, judged = report.not_judged, report.judged
    judged_text = one_line(report.stats.get("judged", "?"))
    parts: list[Part] = [rt, blank(), para("per model: recorded → reproduced", role=R.STRONG), mt, blank()]
    beside = f"; {count(nj, 'run')} not judged here, why and how to judge them below" if nj else ""
    if claims:
        summary = f"claims that do not hold ({len(claims)} of {judged_text} judged{beside}), worst first"
        parts.append(para(summary, role=R.STRONG))
        for c, r in zip(claims, report.claims, strict=True):
            parts.append(para("  ", (c.verdict, verdict_span_role(r.verdict)),
                              f"  {c.path} {one_line(r.version or '')}: recorded {c.recorded}, reproduced "
                              f"{side_text(r.reproduced_outcome, r.reproduced_speedup)} — {one_line(r.reason, 240)}",
                              wrap=False))
    elif nj and not report.stats.get("judged"):
        summary = f"nothing judged here: {count(nj, 'run')} not judged (why below)"
        parts.append(para(summary, role=R.verdict_role("not judged here")))
    else:
        summary = "every recorded claim holds" + (f" among the {judged_text} judged{beside}" if nj else "")
        parts.append(para(summary, role=R.verdict_role("reproduced")))
    parts += _not_judged_why(runs)
    stats = one_line(stats_line(dict(report.stats))) if report.stats else ""
    if stats:
        parts += [blank(), para(stats, role=R.ASIDE, wrap=False)]
    return VerifyView(runs, models, claims, judged, nj, summary, stats, rt, mt, tuple(parts))


# ---- the CSV (``ktui verify --csv``): one row per run, cells a spreadsheet shows as text ------------
CSV_FIELDS = ["path", "model", "problem", "version", "final", "recorded_outcome", "recorded_speedup",
              "reproduced_outcome", "reproduced_speedup", "kernel_us", "reference_us", "verdict", "reason",
              "failure", "cached", "slot", "real"]
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "|", "%")


def csv_cell(v: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: no formula (=, +, -, @ ... first), no escapes."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return v if math.isfinite(v) else ""
    s = one_line(v, 2000)
    if s.startswith(_FORMULA) or s[:1] in ("\ufeff",):
        s = "'" + s
    return s


def csv_rows(report: VerifyReport) -> list[list[Any]]:
    """The header and one row per run (the runs as ``--json`` writes them), every cell made safe."""
    runs = report.to_dict().get("runs") or []
    return [list(CSV_FIELDS)] + [[csv_cell(d.get(k)) for k in CSV_FIELDS] for d in runs if isinstance(d, dict)]
