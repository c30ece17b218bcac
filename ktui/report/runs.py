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
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ktui.report.console import table_console
from ktui.report.fmt import OUTCOME_STYLE
from ktui.trace.aggregate import FAST_P, ModelAggregate, model_aggregates
from ktui.trace.index import RunSummary, ScanIssue, SweepIndex
from ktui.trace.order import natural_key
from ktui.trace.words import count, plural
from ktui.view.fmt import num, ratio, secs
from ktui.view.fmt import pct as fmt_pct
from ktui.view.text import json_data, one_line, safe_data

# (key, header, justify) of the runs table, in order: the important columns first (a narrow
# terminal shows them without scrolling; the app scrolls to the rest)
COLUMNS: list[tuple[str, str, str]] = [
    ("path", "trace", "left"),
    ("model", "model", "left"),
    ("outcome", "outcome", "left"),
    ("speedup", "speedup", "right"),
    ("hacks", "hack classes", "left"),
    ("flags", "flags", "left"),
    ("problem", "problem", "left"),
    ("turns", "turns", "right"),
    ("tokens", "tokens", "right"),
    ("wall", "wall", "right"),
    ("persona", "persona", "left"),
    ("format", "format", "left"),
]
REPRODUCED = ("reproduced", "reproduced", "left")  # once `ktui verify` (the app's key v) has results
LABELS_COLUMN = ("labels", "labels", "left")  # when some run has a label (ktui label, the app's A)
# which columns stay when not all fit, most important first (the rest are left out in text and
# the HTML report, and come after these in the app, where it scrolls)
PRIORITY = ("path", "outcome", "speedup", "hacks", "flags", "reproduced", "labels", "model", "problem", "turns", "tokens",
            "wall", "persona", "format")
# (key, min width, max width) of a column
WIDTH_LIMITS = {
    "path": (16, 60), "format": (6, 16), "problem": (8, 44), "model": (8, 28), "persona": (7, 20),
    "outcome": (10, 10), "turns": (5, 9), "tokens": (6, 10), "wall": (6, 9), "speedup": (7, 9), "hacks": (12, 40),
    "flags": (10, 48), "reproduced": (10, 26), "labels": (6, 30),
}
GAP = 2  # blanks after each column


def natural_widths(runs: Iterable[RunSummary], keys: Iterable[str]) -> dict[str, int]:
    """Each column as wide as its widest cell or header, within :data:`WIDTH_LIMITS`."""
    keys = list(keys)
    heads = {k: h for k, h, _ in [*COLUMNS, REPRODUCED, LABELS_COLUMN]}
    w = {k: max(WIDTH_LIMITS[k][0], min(WIDTH_LIMITS[k][1], len(heads[k]))) for k in keys}
    for s in runs:
        for k in keys:
            if k != "reproduced":
                n = len(cell(s, k))
                if n > w[k]:
                    w[k] = min(WIDTH_LIMITS[k][1], n)
    return w


# a column's fair width: what it gets before a less important column is shown (wider cells are
# cut to it, with an ellipsis, when the room is short)
FAIR = {"path": 40, "flags": 30, "hacks": 24, "model": 16, "problem": 20, "persona": 12, "format": 12,
        "reproduced": 20, "labels": 20}
MUST = ("path", "outcome", "speedup", "hacks", "flags", "reproduced")  # shown down to their minimum widths
PATH_SHARE = 2 / 3  # when every column gives cells, the trace's width counts at this share (it names the row)


def fit_columns(keys: list[str], natural: dict[str, int], room: int) -> tuple[list[str], dict[str, int]]:
    """The columns (of ``keys``, in their order) that fit in ``room`` cells, chosen by
    :data:`PRIORITY`, and their widths. A column is left out, least important first, while the
    kept ones at their fair widths (:data:`FAIR`) do not fit; the columns of :data:`MUST` only when
    they do not fit at their minimum widths either (the trace never). Then the widest cut first:
    each kept column down to its fair width, least important first, then down to its minimum (the
    trace's width counted at :data:`PATH_SHARE`: at 100 columns a Harbor job's trace kept 23 cells,
    ``GPT-5.5/sam…e1/fp8…wn/…``, as many as hack classes and flags).
    Returns (kept keys, widths of every key: a left-out column keeps its natural width)."""
    rank = {k: i for i, k in enumerate(PRIORITY)}
    fair = {k: min(natural[k], FAIR.get(k, natural[k])) for k in keys}
    least_first = sorted(keys, key=lambda k: -rank.get(k, len(rank)))  # "path" is first in PRIORITY: last here
    kept = list(keys)
    for k in least_first:
        if sum(fair[x] + GAP for x in kept) <= room:
            break
        if k not in MUST:
            kept.remove(k)
    for k in least_first:
        if sum(WIDTH_LIMITS[x][0] + GAP for x in kept) <= room or k == "path":
            break
        if k in kept:
            kept.remove(k)
    w = dict(natural)
    excess = sum(w[k] + GAP for k in kept) - room
    for k in least_first:  # down to the fair widths, the least important first (the trace last)
        if excess <= 0:
            break
        if k in kept:
            cut = min(excess, max(0, w[k] - fair[k]))
            w[k] -= cut
            excess -= cut
    while excess > 0:  # then the widest column above its minimum gives one cell at a time (the
        # trace, which names the row, counted at two thirds of its width: it keeps ~1.5x the others)
        k = max((x for x in kept if w[x] > WIDTH_LIMITS[x][0]),
                key=lambda x: (w[x] * PATH_SHARE if x == "path" else w[x], -rank.get(x, 99)), default=None)
        if k is None:
            break
        w[k] -= 1
        excess -= 1
    return kept, w


def name_counts(paths: Iterable[str]) -> Counter[str]:
    """How many of these trace paths end in each file name (:func:`distinct_part`)."""
    return Counter(p.rpartition("/")[2] for p in paths)


def distinct_part(text: str, counts: Mapping[str, int] | None) -> str:
    """The part of a path worth its cells when it must be cut: a file name that other runs of the
    table share (``trace.jsonl`` in every run folder of a sweep, ``trajectory.json`` of every
    Harbor trial) tells the rows apart no better than nothing, so it becomes ``…`` and the folder
    that differs keeps the room (cut in the middle, all rows read ``l1_p1…trace.jsonl``)."""
    head, sep, name = text.rpartition("/")
    if sep and head and counts and counts.get(name, 0) > 1:
        return head + "/…"
    return text


SEGMENT_MIN = 6  # a folder name cut in its middle keeps at least this much ("fp8…own")


def fit_segments(text: str, width: int) -> str | None:
    """A path cut inside its longest folder names, each in its middle, the file name whole:
    ``GPT-5.5/sample1/fp8…own/…`` where one middle cut read ``GPT-5.5…lama3_8b_down/…`` for
    ``sample1`` and ``sample2`` alike (a Harbor job: model/sample/task/trajectory.json, the runs
    told apart by folders in the middle). None when folder names of :data:`SEGMENT_MIN` cannot
    make it fit (the caller cuts the middle)."""
    segs = text.split("/")
    if len(segs) < 2:
        return None
    lens = [len(x) for x in segs]
    excess = sum(lens) + len(segs) - 1 - width
    while excess > 0:
        i = max(range(len(segs) - 1), key=lambda j: (lens[j], j))  # the longest folder name (the deepest of ties)
        if lens[i] <= SEGMENT_MIN:
            return None
        lens[i] -= 1
        excess -= 1
    out = []
    for seg, n in zip(segs, lens, strict=True):
        if n < len(seg):
            head = n // 2
            seg = seg[:head] + "…" + seg[len(seg) - (n - 1 - head):]
        out.append(seg)
    return "/".join(out)


def fit_middle(text: str, width: int, counts: Mapping[str, int] | None = None) -> str:
    """A long trace path cut in the middle (its start and its file name stay, unless the name is
    shared by other rows: :func:`distinct_part`), at most ``width``: inside its longest folder
    names where the rows are told apart by their folders (a shared file name: :func:`fit_segments`),
    else once in the middle."""
    if len(text) > width and width >= 8:
        text = distinct_part(text, counts)
        cut = fit_segments(text, width) if len(text) > width and text.endswith("/…") else None
        if cut is not None:
            return cut
    if len(text) <= width or width < 8:
        return text if len(text) <= width else text[: max(0, width - 1)] + "…"
    head = (width - 1) // 3
    tail = width - 1 - head
    return text[:head] + "…" + text[len(text) - tail:]


def columns_for(runs: Iterable[RunSummary]) -> list[tuple[str, str, str]]:
    """The runs table's columns: :data:`COLUMNS`, and the labels column when any run has one."""
    return COLUMNS + [LABELS_COLUMN] if any(s.labels for s in runs) else list(COLUMNS)


def has_label(s: RunSummary, names: Iterable[str]) -> bool:
    """``s`` has one of these labels (on the run, a turn or a version)."""
    mine = {lab.split("@", 1)[0] for lab in s.labels}
    return any(n in mine for n in names)


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
    if key == "labels":
        return one_line(", ".join(s.labels))
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
    """A key to sort the runs table by a column; None when the run has no value there (n/a, —):
    such runs come last in either order (:func:`sorted_runs`)."""
    if key == "turns":
        return s.turns
    if key == "tokens":
        return s.tokens
    if key == "wall":
        return None if s.variant == "V2" else s.wall_ms
    if key == "speedup":
        return s.speedup
    if key == "outcome":
        return {"passed": 0, "failed": 1}.get(s.outcome, 2)
    if key == "flags":
        return len(s.flags) - len(s.hacks)
    if key == "hacks":
        return len(s.hacks)
    text = cell(s, key)
    return None if text in ("", "—") else natural_key(text)


def sorted_runs(indices: Iterable[int], rows: list[RunSummary], key: str, reverse: bool = False) -> list[int]:
    """``indices`` of ``rows`` sorted by column ``key`` (ties in their order), the runs with no
    value last whichever the direction: an ascending speedup sort starts at the slowest run, not n/a."""
    known, unknown = [], []
    for i in indices:
        v = sort_value(rows[i], key)
        (unknown if v is None else known).append((v, i))
    known.sort(key=lambda p: p[0], reverse=reverse)  # stable: ties keep their order either way
    return [i for _, i in known] + [i for _, i in unknown]


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
              "real", "format", "hacks", "labels"]


def csv_row(s: RunSummary) -> list[Any]:
    def v(x: Any) -> Any:
        return "" if x is None else x

    wall = s.wall_ms
    row = [s.path, s.problem, v(s.model), v(s.persona), s.outcome, s.turns, v(s.max_turns), s.tool_calls,
           v(s.tokens), "" if wall is None else round(wall / 1000, 3), v(s.speedup), v(s.runtime_us),
           v(s.ref_runtime_us), s.variant, s.terminal, v(s.scenario), " ".join(s.flags), s.real, s.format,
           " ".join(s.hacks), " ".join(s.labels)]
    return [one_line(x) if isinstance(x, str) else safe_data(x) for x in row]


# ---- rendering ---------------------------------------------------------------------------------
def runs_table(runs: list[RunSummary], title: str | None = None, width: int | None = None) -> Table:
    """The runs as a table ``width`` cells wide at most (None: every column, as wide as it needs):
    the columns that fit by :data:`PRIORITY`; ``table.left_out`` names the others."""
    all_cols = columns_for(runs)
    keys = [k for k, _, _ in all_cols]
    natural = natural_widths(runs, keys)
    kept, w = fit_columns(keys, natural, width) if width else (keys, natural)
    t = Table(title=title, header_style="bold", box=None, pad_edge=False, show_edge=False,
              padding=(0, GAP, 0, 0), collapse_padding=False)
    cols = [(k, h, j) for k, h, j in all_cols if k in kept]
    for key, header, justify in cols:
        t.add_column(header, justify=justify, no_wrap=True, overflow="ellipsis", width=w[key] if width else None)
    counts = name_counts(cell_text(s, "path").plain for s in runs) if width else None
    for s in runs:
        row = []
        for k, _, _ in cols:
            c = cell_text(s, k)
            if k == "path" and width:
                c.plain = fit_middle(c.plain, w[k], counts)
            row.append(c)
        t.add_row(*row)
    t.left_out = [h for k, h, _ in all_cols if k not in kept]  # type: ignore[attr-defined]
    return t


def aggregates_table(aggs: list[ModelAggregate], width: int | None = None) -> Table:
    """Per-model aggregates; ``width``: the columns that fit, from the left (model names cut to 12
    cells at the least), ``table.left_out`` names the others."""
    cols = list(AGG_COLUMNS)
    widths = {k: max([len(h), *(len(agg_cell(a, k)) for a in aggs)]) for k, h in cols}
    model_w = widths["model"]
    if width:
        while len(cols) > 2 and sum(widths[k] + GAP for k, _ in cols) - model_w + min(model_w, 12) > width:
            cols.pop()
        model_w = max(min(model_w, 12), min(model_w, width - sum(widths[k] + GAP for k, _ in cols[1:]) - GAP))
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False, padding=(0, GAP, 0, 0))
    for key, header in cols:
        t.add_column(header, justify="left" if key == "model" else "right", no_wrap=True, overflow="ellipsis",
                     width=model_w if key == "model" and width else None)
    for a in aggs:
        style = "bold" if a is aggs[-1] and len(aggs) > 1 else ""
        t.add_row(*[Text(agg_cell(a, k), style=style) for k, _ in cols])
    t.left_out = [h for k, h in AGG_COLUMNS if (k, h) not in cols]  # type: ignore[attr-defined]
    return t


def issues_text(issues: Iterable[ScanIssue]) -> list[Text]:
    out = []
    for i in issues:
        style = {"error": "red", "warning": "yellow"}.get(i.severity, "dim")
        out.append(Text(f"{i.severity}: {one_line(i.path)}: {one_line(i.message)}", style=style))
    return out


def no_gpu_note(aggs: list[ModelAggregate]) -> str:
    """Said under the aggregates when correct runs' speedups were left out of fast_p."""
    n = aggs[-1].no_gpu if aggs else 0
    if len(aggs) > 1 and aggs[-1].model != "all runs":
        n = sum(a.no_gpu for a in aggs)
    return (f"{count(n, 'correct run')} whose final kernel has no GPU code: counted as passed, "
            f"{plural(n, 'its', 'their')} speedup in no fast_p and no geomean") if n else ""


def runs_print(path: str | Path, fmt: str = "table", use_cache: bool = True, out=None, *,
               labels: Iterable[str] = (), exclude: Iterable[str] = (), labels_file: str | None = None) -> int:
    from ktui.trace.aggregate import select
    from ktui.trace.labels import LabelStore, files_for

    out = out or sys.stdout
    store = LabelStore.read(files_for(path, [labels_file] if labels_file else []))
    idx = SweepIndex(path, use_cache=use_cache, labels=store)
    wanted = [x for x in labels if x]
    if fmt == "csv":  # one row a line: written as the index finds them (a pipe sees the first at once)
        n = _csv_streamed(idx, out, wanted)
        _issues_to_stderr(_with_label_issues(idx.issues, store))
        return 0 if n else 1
    runs = list(idx.summaries())
    issues = _with_label_issues(idx.issues, store)
    if wanted:
        runs = [s for s in runs if has_label(s, wanted)]
    sel = select(runs, tuple(exclude))
    aggs, not_kernel = model_aggregates(sel.kept)
    if fmt == "json":
        body = {
            "root": str(path),
            "runs": [summary_dict(s) for s in runs],
            "aggregates": [a.as_dict() for a in aggs],
            "runs_without_kernel": not_kernel,  # listed in runs, not counted in the aggregates
            "aggregates_selection": sel.to_dict(not_kernel),
            "charts": _charts_json(sel.kept),
            "issues": [{"path": i.path, "message": i.message, "severity": i.severity} for i in issues],
        }
        out.write(_json_text(json_data(body)))
        out.write("\n")
    else:
        term = out.isatty() if hasattr(out, "isatty") else False
        con = table_console(out, term)
        if runs:
            table = runs_table(runs, width=con.width)
            con.print(table)
            if table.left_out:
                con.print(Text(f"not shown at {con.width} columns: {', '.join(table.left_out)} "
                               "(COLUMNS=N; --format csv|json has all)", style="dim"))
            con.print()
            con.print(Text("per model", style="bold"))
            agg = aggregates_table(aggs, width=con.width)
            con.print(agg)
            if agg.left_out:
                con.print(Text(f"not shown at {con.width} columns: {', '.join(agg.left_out)}", style="dim"))
            con.print(Text(sel.line(not_kernel), style="dim"))
            note = no_gpu_note(aggs)
            if note:
                con.print(Text(note, style="dim"))
        n_err = sum(1 for i in issues if i.severity != "info")
        summary = f"{count(len(runs), 'run')} in {one_line(str(path))}"
        if wanted:
            summary += f" labelled {', '.join(one_line(w) for w in wanted)}"
        if idx.duplicates:
            summary += f", {count(idx.duplicates, 'duplicate')} skipped"
        if idx.cache_hits:
            summary += f", {count(idx.cache_hits, 'file')} read from the index cache"  # files, not runs: a sweep's other JSON too
        if issues:
            summary += f"; {count(n_err, 'problem')}" + (f", {count(len(issues) - n_err, 'note')}" if len(issues) > n_err else "")
        con.print()
        con.print(Text(summary, style="dim"))
        for line in issues_text(issues):
            con.print(line)
    return 0 if runs else 1


def _json_text(data: Any) -> str:
    """``data`` as indented JSON: orjson (the json module's indented writer is pure Python: 0.5 s
    of CPU after a 10,000-run scan), the json module where orjson refuses (an int past 64 bits, a
    lone surrogate)."""
    try:
        import orjson

        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except (ImportError, TypeError):
        return json.dumps(data, indent=2, ensure_ascii=False)


def _with_label_issues(issues: list[ScanIssue], store: Any) -> list[ScanIssue]:
    if store.bad_lines:
        issues.append(ScanIssue("labels", f"{count(store.bad_lines, 'line')} of "
                                           f"{plural(len(store.files), 'the labels file', 'the labels files')} skipped",
                                "warning"))
    issues.extend(ScanIssue("labels", p, "warning") for p in store.problems)
    return issues


FLUSH_S = 0.1  # how often streamed rows are flushed (the first one at once)


def _csv_streamed(idx: SweepIndex, out, wanted: list[str]) -> int:
    """Every run as a CSV row as soon as the index has it, in its order; the rows written."""
    w = csv.writer(out)
    w.writerow(CSV_FIELDS)
    flush = getattr(out, "flush", None)
    n, last = 0, 0.0
    for s in idx.summaries():
        if wanted and not has_label(s, wanted):
            continue
        w.writerow(csv_row(s))
        n += 1
        now = time.monotonic()
        if flush is not None and (n == 1 or now - last >= FLUSH_S):
            flush()
            last = now
    return n


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
