"""``ktui compare A B [C ...] --print``: the comparison summary and the final-kernel diff as text.

The summary has one column per run and one row per figure
(:func:`ktui.trace.aggregate.compare_rows`); in each row with a direction the better value is
bold green on a terminal and marked ``*`` everywhere (so it survives a pipe). A warning comes
first when the runs are not on the same problem. Then the final kernel of run #1 is diffed
against the final kernel of every other run.

The cell formatting (:func:`value_text`) is shared with the app's compare screen.
Exit status: 0, or 2 when a trace cannot be read at all.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ktui.report.console import table_console
from ktui.report.fmt import OUTCOME_STYLE
from ktui.report.render_diff import clean, stats_text, unified_text_lines
from ktui.trace import diffing
from ktui.trace.aggregate import CompareRow, compare_rows, problem_warning
from ktui.trace.model import Run
from ktui.trace.words import count
from ktui.view.fmt import num, ratio, secs, us
from ktui.view.text import one_line

BEST_STYLE = "bold green"
BEST_MARK = " *"


def best_legend() -> Text:
    """What the ``*`` beside a value means (under the summary, in ``--print`` and in the app)."""
    return Text(f"{BEST_MARK.strip()} the better value of its row (bold green); cost rows (tokens, time) compare "
                "only the runs with the best outcome", style="dim")


def value_text(row: CompareRow, i: int) -> str:
    """The plain text of run ``i``'s value in ``row``."""
    v: Any = row.values[i]
    f = row.fmt
    if f == "turns":
        turns, mx = v
        return f"{turns} / {mx}" if mx else str(turns)
    if v is None:
        if row.key == "first_correct":
            return "never"
        if row.key in ("wall", "llm", "tool"):
            return "n/a"
        return "—"
    if f == "int":
        return num(v)
    if f == "ms":
        return secs(v)
    if f == "us":
        return us(v)
    if f == "x":
        return ratio(v)
    if f == "turn":
        return f"turn {v}"
    if f == "flags":
        codes: list[str] = []
        for c in v:
            if c not in codes:
                codes.append(c)
        return ", ".join(codes) if codes else "none"
    return clean(v).replace("\n", " ")


def cell(row: CompareRow, i: int, mark: bool = True) -> Text:
    """A styled cell: outcome colours, the better value emphasised (``Text``, never markup)."""
    s = value_text(row, i)
    best = i in row.best
    t = Text(s + (BEST_MARK if best and mark else ""), end="")
    if row.fmt == "outcome":
        t.stylize(OUTCOME_STYLE.get(str(row.values[i]), ""))
    if best:
        t.stylize(BEST_STYLE)
    elif row.fmt == "flags" and row.values[i]:
        t.stylize("yellow")
    return t


def distinct_names(paths: Sequence[str]) -> list[str]:
    """What tells these runs' paths apart: each file name where they differ; else (every run of
    a Harbor job is a ``trajectory.json``, of many harnesses a ``trace.jsonl``) the folders that
    differ among the shortest path ends that do ("GPT-5.5/sample1" and "GPT-5.5/sample2", not
    "trajectory.json" twice)."""
    parts = [Path(p).parts or (p,) for p in paths]
    names = [x[-1] for x in parts]
    if len(set(names)) == len(names) or len(set(paths)) < len(paths):
        return names
    longest = max(len(x) for x in parts)
    for k in range(2, longest + 1):
        ends = [("",) * (k - len(x)) + x[-k:] for x in parts]
        if len(set(ends)) == len(ends):
            varies = [j for j in range(k) if len({e[j] for e in ends}) > 1]
            return ["/".join(e[j] for j in varies if e[j]) or n for e, n in zip(ends, names, strict=True)]
    return names


def run_title(run: Run, i: int, name: str | None = None) -> str:
    """``#N model · name``: ``name`` from :func:`distinct_names` of the runs compared, else the file's."""
    return f"#{i + 1} {clean(run.model or '?')} · {clean(name if name is not None else Path(run.path).name)}"


def summary_table(runs: Sequence[Run], rows: list[CompareRow] | None = None, mark: bool = True) -> Table:
    rows = rows if rows is not None else compare_rows(runs)
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False, padding=(0, 3, 0, 0))
    t.add_column("", style="bold", no_wrap=True)
    names = distinct_names([str(r.path) for r in runs])
    for i, r in enumerate(runs):
        t.add_column(Text(run_title(r, i, names[i])), no_wrap=False, overflow="fold")
    for row in rows:
        label = Text(("  " * row.indent) + one_line(row.label), style="dim" if row.indent else "bold")
        t.add_row(label, *[cell(row, i, mark) for i in range(len(runs))])
    return t


def final_kernel_diffs(runs: Sequence[Run]) -> list[tuple[int, int]]:
    """The pairs to diff: run #1 against each other run."""
    return [(0, j) for j in range(1, len(runs))]


def kernel_label(run: Run, i: int, k) -> str:
    return f"#{i + 1} {clean(run.model or '?')} {k.label} ({k.sha1[:10]})"


def compare_print(paths: Sequence[str | Path], out=None) -> int:
    from ktui.trace import load

    out = out or sys.stdout
    term = out.isatty() if hasattr(out, "isatty") else False
    con = table_console(out, term)
    err = Console(stderr=True, highlight=False)
    runs: list[Run] = []
    for p in paths:
        try:
            runs.append(load(Path(p)))
        except Exception as exc:  # noqa: BLE001 - the reader should not raise; one clear line if it does
            err.print(Text(f"ktui: {clean(p)}: cannot read trace: {clean(exc)}"))
            return 2
    warn = problem_warning(runs)
    if warn:
        con.print(Text(f"warning: {warn}", style="bold yellow"))
        con.print()
    con.print(summary_table(runs))
    con.print(best_legend())
    for r in runs:
        if r.problems:
            con.print(Text(f"{clean(r.path)}: {count(len(r.problems), 'problem')} reading the trace "
                           f"(first: {clean(r.problems[0])})", style="yellow"))
    for a, b in final_kernel_diffs(runs):
        con.print()
        ra, rb = runs[a], runs[b]
        ka, kb = ra.final_kernel, rb.final_kernel
        head = Text(f"final kernel: #{a + 1} → #{b + 1}", style="bold")
        if ka is None or kb is None:
            missing = [f"#{i + 1}" for i, k in ((a, ka), (b, kb)) if k is None]
            con.print(head)
            con.print(Text(f"no kernel in {' and '.join(missing)}: nothing to diff", style="dim"))
            continue
        stubs = [k for k in (ka, kb) if k.attachment]
        if stubs:
            con.print(head)
            con.print(Text("code not in the trace (attachment stub): "
                           + ", ".join(clean(k.attachment) for k in stubs), style="yellow"))
            continue
        ca, cb = clean(ka.code), clean(kb.code)
        added, removed = diffing.diff_stats(ca, cb)
        if not term:
            con.print(head)
            text = diffing.unified_text(ca, cb, kernel_label(ra, a, ka), kernel_label(rb, b, kb))
            out.write(text if text else "identical kernels\n")  # as it is: a diff's blanks are content
            out.flush()
            continue
        head.append(f"   {kernel_label(ra, a, ka)} → {kernel_label(rb, b, kb)}   ", style="dim")
        head.append_text(stats_text(added, removed))
        con.print(head)
        lines = unified_text_lines(ca, cb)
        if not lines:
            con.print(Text("(identical kernels)", style="dim"))
        for line in lines:
            con.print(line, crop=False, overflow="fold")
    return 0
