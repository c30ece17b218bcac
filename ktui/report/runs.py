"""``ktui runs DIR --print`` / ``--format csv|json``: the sweep table headless.

The cell formatting here is shared with the app's runs screen (:mod:`ktui.tui.screens.runs`):
both show the same columns with the same text. Trace strings (paths, models, problem names)
are untrusted: they become ``rich.text.Text`` after :func:`~ktui.view.text.one_line`, never
markup.

Exit status: 0 when at least one run was listed, 1 when the tree holds no trace.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ktui.report.console import table_console
from ktui.report.fmt import OUTCOME_STYLE
from ktui.trace.aggregate import FAST_P, ModelAggregate, aggregate
from ktui.trace.index import RunSummary, ScanIssue, SweepIndex
from ktui.view.fmt import num, ratio, secs
from ktui.view.fmt import pct as fmt_pct
from ktui.view.text import one_line, safe_data

# (key, header, justify) of the runs table, in order
COLUMNS: list[tuple[str, str, str]] = [
    ("path", "trace", "left"),
    ("format", "format", "left"),
    ("problem", "problem", "left"),
    ("model", "model", "left"),
    ("persona", "persona", "left"),
    ("outcome", "outcome", "left"),
    ("turns", "turns", "right"),
    ("tokens", "tokens", "right"),
    ("wall", "wall", "right"),
    ("speedup", "speedup", "right"),
    ("hacks", "hack classes", "left"),
    ("flags", "flags", "left"),
]

AGG_COLUMNS: list[tuple[str, str]] = [
    ("model", "model"), ("runs", "runs"), ("passed", "passed"), ("pass_rate", "pass rate"),
    *[(f"fast_{p:g}", f"fast_{p:g}") for p in FAST_P],
    ("geomean", "geomean speedup"), ("tokens", "tokens / run"), ("wall", "wall / run"),
]


def speedup_text(v: float | None) -> str:
    return ratio(v)


def turns_text(s: RunSummary) -> str:
    return f"{s.turns}/{s.max_turns}" if s.max_turns else str(s.turns)


def wall_text(s: RunSummary) -> str:
    if s.variant == "V2":
        return "n/a"
    return secs(s.wall_ms)


def cell(s: RunSummary, key: str) -> str:
    """The plain text of one cell of the runs table."""
    if key == "path":
        return one_line(s.path)
    if key == "format":
        return f"ensemble {s.variant}" if s.format == "ensemble" else one_line(s.format)
    if key == "problem":
        return one_line(s.problem) or "—"
    if key == "model":
        return one_line(s.model) if s.model else "—"
    if key == "persona":
        return one_line(s.persona) if s.persona else "—"
    if key == "outcome":
        return s.outcome
    if key == "turns":
        return turns_text(s)
    if key == "tokens":
        return num(s.tokens)
    if key == "wall":
        return wall_text(s)
    if key == "speedup":
        return speedup_text(s.speedup)
    if key == "hacks":
        return ", ".join(s.hacks)
    if key == "flags":  # the run's other flags (its hack classes have their own column)
        return ", ".join(f for f in s.flags if f not in s.hacks)
    raise KeyError(key)


def flag_style(s: RunSummary, key: str) -> str | None:
    """The style of a hack-classes or flags cell (shared by every renderer of the table)."""
    if key == "hacks" and s.hacks:
        return "bold red"
    if key == "flags" and len(s.flags) > len(s.hacks):
        return "red" if any(f in ("bad_lines", "unreadable", "backend_error") for f in s.flags) else "yellow"
    return None


def cell_text(s: RunSummary, key: str) -> Text:
    """A styled cell (``Text``, never markup)."""
    t = Text(cell(s, key), no_wrap=True, end="")
    if key == "outcome":
        t.stylize(OUTCOME_STYLE.get(s.outcome, ""))
    elif key in ("hacks", "flags"):
        t.stylize(flag_style(s, key) or "")
    elif key == "speedup" and s.speedup is not None and s.outcome != "passed":
        t.stylize("dim")
    return t


def sort_value(s: RunSummary, key: str) -> Any:
    """A key to sort the runs table by a column (unknown values last)."""
    big = float("inf")
    if key == "turns":
        return s.turns
    if key == "tokens":
        return s.tokens if s.tokens is not None else -1
    if key == "wall":
        return s.wall_ms if s.wall_ms is not None else -1
    if key == "speedup":
        return s.speedup if s.speedup is not None else -big
    if key == "outcome":
        return {"passed": 0, "failed": 1}.get(s.outcome, 2)
    if key == "flags":
        return len(s.flags) - len(s.hacks)
    if key == "hacks":
        return len(s.hacks)
    return cell(s, key).lower()


def pct(v: float | None) -> str:
    return fmt_pct(v)


def agg_cell(a: ModelAggregate, key: str) -> str:
    if key == "model":
        return one_line(a.model)
    if key == "runs":
        return str(a.runs)
    if key == "passed":
        return str(a.passed)
    if key == "pass_rate":
        return pct(a.pass_rate)
    if key.startswith("fast_"):
        return pct(a.fast_p(float(key[5:])))
    if key == "geomean":
        g = a.geomean_speedup
        return "—" if g is None else f"{ratio(g)} ({len(a.speedups)})"
    if key == "tokens":
        return num(round(a.tokens_per_run)) if a.tokens_per_run is not None else "—"
    if key == "wall":
        return secs(a.wall_ms_per_run)
    raise KeyError(key)


def summary_dict(s: RunSummary) -> dict[str, Any]:
    """What ``--format json`` writes for one run."""
    d = s.to_dict()
    for k in ("fingerprint", "record_sig"):
        d.pop(k, None)
    d["wall_ms"] = s.wall_ms
    return d


CSV_FIELDS = ["path", "problem", "model", "persona", "outcome", "turns", "max_turns", "tool_calls", "tokens",
              "wall_s", "speedup", "runtime_us", "ref_runtime_us", "variant", "terminal", "scenario", "flags",
              "real", "format", "hacks"]


def csv_row(s: RunSummary) -> list[Any]:
    def v(x: Any) -> Any:
        return "" if x is None else x

    wall = s.wall_ms
    row = [s.path, s.problem, v(s.model), v(s.persona), s.outcome, s.turns, v(s.max_turns), s.tool_calls,
           v(s.tokens), "" if wall is None else round(wall / 1000, 3), v(s.speedup), v(s.runtime_us),
           v(s.ref_runtime_us), s.variant, s.terminal, v(s.scenario), " ".join(s.flags), s.real, s.format,
           " ".join(s.hacks)]
    return [one_line(x) if isinstance(x, str) else safe_data(x) for x in row]


# ---- rendering ---------------------------------------------------------------------------------
def runs_table(runs: list[RunSummary], title: str | None = None) -> Table:
    t = Table(title=title, header_style="bold", box=None, pad_edge=False, show_edge=False,
              padding=(0, 2, 0, 0))
    for key, header, justify in COLUMNS:
        t.add_column(header, justify=justify, no_wrap=True,
                     overflow="ellipsis" if key in ("problem", "path") else "fold")
    for s in runs:
        t.add_row(*[cell_text(s, k) for k, _, _ in COLUMNS])
    return t


def aggregates_table(aggs: list[ModelAggregate]) -> Table:
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False, padding=(0, 2, 0, 0))
    for key, header in AGG_COLUMNS:
        t.add_column(header, justify="left" if key == "model" else "right", no_wrap=True)
    for a in aggs:
        style = "bold" if a is aggs[-1] and len(aggs) > 1 else ""
        t.add_row(*[Text(agg_cell(a, k), style=style) for k, _ in AGG_COLUMNS])
    return t


def issues_text(issues: Iterable[ScanIssue]) -> list[Text]:
    out = []
    for i in issues:
        style = {"error": "red", "warning": "yellow"}.get(i.severity, "dim")
        out.append(Text(f"{i.severity}: {one_line(i.path)}: {one_line(i.message)}", style=style))
    return out


def runs_print(path: str | Path, fmt: str = "table", use_cache: bool = True, out=None) -> int:
    out = out or sys.stdout
    idx = SweepIndex(path, use_cache=use_cache)
    runs = list(idx.summaries())
    issues = idx.issues
    aggs = aggregate(runs)
    if fmt == "json":
        body = {
            "root": str(path),
            "runs": [summary_dict(s) for s in runs],
            "aggregates": [a.as_dict() for a in aggs],
            "charts": _charts_json(runs),
            "issues": [{"path": i.path, "message": i.message, "severity": i.severity} for i in issues],
        }
        json.dump(safe_data(body), out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif fmt == "csv":
        w = csv.writer(out)
        w.writerow(CSV_FIELDS)
        for s in runs:
            w.writerow(csv_row(s))
        _issues_to_stderr(issues)
    else:
        term = out.isatty() if hasattr(out, "isatty") else False
        con = table_console(out, term)
        if runs:
            con.print(runs_table(runs))
            con.print()
            con.print(Text("per model", style="bold"))
            con.print(aggregates_table(aggs))
        n_err = sum(1 for i in issues if i.severity != "info")
        summary = f"{len(runs)} run(s) in {one_line(str(path))}"
        if idx.duplicates:
            summary += f", {idx.duplicates} duplicate(s) skipped"
        if idx.cache_hits:
            summary += f", {idx.cache_hits} from the index cache"
        if issues:
            summary += f"; {n_err} problem(s)" + (f", {len(issues) - n_err} note(s)" if len(issues) > n_err else "")
        con.print()
        con.print(Text(summary, style="dim"))
        for line in issues_text(issues):
            con.print(line)
    return 0 if runs else 1


def _charts_json(runs: list[RunSummary]) -> dict[str, Any]:
    """The numbers behind the runs charts (the app's ``p`` key, ``ktui report``)."""
    from ktui.repro.reproduced import reproduced_results
    from ktui.view.charts import charts_dict, sweep_charts

    return charts_dict(sweep_charts(runs, reproduced_results(runs)))


def _issues_to_stderr(issues: list[ScanIssue]) -> None:
    if not issues:
        return
    err = Console(stderr=True, highlight=False)
    for line in issues_text(issues):
        err.print(line)
