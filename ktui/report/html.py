"""``ktui report DIR -o report.html``: one self-contained HTML file about a sweep.

The page holds, inline (no network at view time): the stylesheet and script
(:mod:`ktui.report.html_assets`), the four sweep charts as SVG (:mod:`ktui.report.svg`, from the
same :mod:`ktui.view.charts` numbers as the app's ``p`` key), the per-model aggregates, the
runs table (sortable, filterable; the same cells as ``ktui runs``) and, per run, its detail:
header facts, flags, metrics, its final kernel's cached reproduction and profile
(:func:`ktui.report.html_results.run_results`: cache lookups only), the transcript and the kernel
diffs, serialized from the view model (:func:`ktui.view.build_view`, what ``ktui show`` and the
app draw). Each run's detail is
gzipped JSON in its own ``<script type="application/octet-stream">`` element and decoded only
when the run is opened, so a 1,000-run report opens at once.

Trace text is untrusted: the server side escapes everything it writes as HTML; the JSON data is
written with ``<``, ``>`` and ``&`` as ``\\u`` escapes (no ``</script>`` can end it early); the
script only sets ``textContent``; and the page's Content-Security-Policy allows no script but its
own (nonce) and no connections.
"""

from __future__ import annotations

import base64
import gzip
import html
import math
import multiprocessing
import os
import secrets
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from ktui.report.html_assets import CSS, JS
from ktui.report.runs import AGG_COLUMNS, agg_cell, cell, columns_for, no_gpu_note, sort_value
from ktui.report.svg import fast_p_svg, first_correct_svg, grid_svg, speedup_svg
from ktui.trace.aggregate import model_aggregates, non_kernel_note
from ktui.trace.index import RunSummary, SweepIndex, TraceFile, default_jobs, summarize_loaded
from ktui.trace.words import count
from ktui.view.charts import CHART_TITLES, SweepCharts, sweep_charts
from ktui.view.text import clean, one_line

PARALLEL_MIN = 64  # runs before the details are built by helper processes
_MP = multiprocessing.get_context("spawn")  # never fork a process that may hold threads (the app, tests)
NUMERIC = {"turns", "tokens", "wall", "speedup"}


# ---- one run's detail, from the view model ---------------------------------------------------------
def _block(b) -> list[Any]:
    from ktui.view.build import is_error_line
    from ktui.view.model import HEADING, LINES, OUTPUT

    if b.kind in (HEADING, LINES):
        payload: Any = [[[sp.text, sp.role] for sp in line] for line in b.lines]
        errs: list[int] = []
    else:
        payload = b.text_lines
        errs = [i for i, ln in enumerate(b.text_lines) if is_error_line(ln)] if (
            b.kind == OUTPUT and b.error_lines) else []
    return [b.kind, b.role, b.indent, b.lang, b.numbers, b.fold, payload, errs]


def run_detail(path: str) -> dict[str, Any]:
    """What the report shows when a run is opened (plain data, every string already clean)."""
    from ktui.trace import load

    return detail_of(load(path))


def detail_of(run: Any) -> dict[str, Any]:
    """:func:`run_detail` of a run loaded already (as :func:`ktui.trace.load` loads it)."""
    from ktui.trace.diffing import unified_lines
    from ktui.view import build_view

    v = build_view(run)
    h = v.header
    out: dict[str, Any] = {
        "title": h.title, "model": h.model, "outcome": h.outcome,
        "facts": [[f.label, f.text, f.role] for f in h.facts],
        "flags": [[f.severity, f.code, f.message, f.where] for f in v.flags],
        "problems": list(v.problems),
        "metrics": None if v.metrics is None else {
            "source": v.metrics.source,
            "groups": [[g.title, [[r.label, r.value_text, r.recorded_text, r.note] for r in g.rows]]
                       for g in v.metrics.groups]},
        "pre": [_block(b) for b in v.preamble],
        "turns": [{"i": t.index, "actor": t.actor, "status": t.status, "blocks": [_block(b) for b in t.blocks]}
                  for t in v.turns],
        "terminal": [[x.kind, x.text, x.line] for x in v.terminal],
        "kernels": [[k.label, k.n_lines, k.first_turn, k.is_final, list(k.delta) if k.delta else None]
                    for k in v.kernels],
        "diffs": [],
    }
    from ktui.report.html_results import run_results

    out["results"] = run_results(run)
    kernels = [k for k in run.kernels if k.code and k.attachment is None]
    for a, b in zip(kernels, kernels[1:], strict=False):
        lines = unified_lines(a.code, b.code, intraline=False)
        out["diffs"].append({"a": a.label, "b": b.label, "lines": [[d.kind, clean(d.text)] for d in lines]})
    return out


def _json(obj: Any) -> bytes:
    """JSON safe inside a <script> element (no '<', '>' or '&' in it)."""
    data = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def packed_detail(path: str, run: Any = None) -> str:
    """A run's detail as base64 of gzipped JSON (never raises: a broken run says why). ``run``:
    the run at ``path`` loaded already."""
    try:
        d = run_detail(path) if run is None else detail_of(run)
    except Exception as exc:  # noqa: BLE001 - one bad run must not stop the report; it says why
        d = {"error": f"cannot show this run: {one_line(type(exc).__name__)}: {one_line(exc, 300)}"}
    return base64.b64encode(gzip.compress(orjson.dumps(d), compresslevel=4, mtime=0)).decode("ascii")


def _packed_many(paths: list[str]) -> list[str]:
    return [packed_detail(p) for p in paths]


def _rows_and_details(files: list[TraceFile]) -> list[tuple[RunSummary, dict[str, str]]]:
    """Each file's row and the packed detail of each run in it, by the run's real path (a file of
    many runs: by each run's address): an ensemble trace is read once for both
    (:func:`ktui.trace.index.summarize_loaded`); a file that is no trace has none."""
    from ktui.trace.address import join

    out: list[tuple[RunSummary, dict[str, str]]] = []
    for tf in files:
        s, run = summarize_loaded(tf)
        real = tf.real or tf.path
        if s.parts:
            keys = [d.get("key") for d in s.parts]
            out.append((s, {join(real, k): packed_detail(join(real, k)) for k in keys if isinstance(k, str)}))
        elif s.format in ("none", "result") or s.not_trace:
            out.append((s, {}))
        else:
            out.append((s, {real: packed_detail(real, run)}))
    return out


def _chunks(items: list[Any], n: int) -> list[list[Any]]:
    size = max(8, len(items) // (n * 4))
    return [items[i: i + size] for i in range(0, len(items), size)]


def packed_details(paths: list[str], jobs: int | None = None) -> list[str]:
    """Every run's packed detail, in order; helper processes for big sweeps."""
    n = _workers(len(paths), jobs)
    if n <= 1:
        return _packed_many(paths)
    with ProcessPoolExecutor(max_workers=n, mp_context=_MP) as ex:
        return [d for part in ex.map(_packed_many, _chunks(paths, n)) for d in part]


def _workers(n_paths: int, jobs: int | None) -> int:
    jobs = (default_jobs() + 1) if jobs is None else jobs
    if jobs <= 1 or n_paths < PARALLEL_MIN:
        return 1
    return max(1, min(jobs, os.cpu_count() or 1))


def scan_and_detail(root: str | os.PathLike[str], *, use_cache: bool = True, jobs: int | None = None,
                    labels: Any = None) -> tuple[SweepIndex, list[RunSummary], list[str]]:
    """The sweep's summaries and each listed run's packed detail. Each trace is read once for
    both (its row is the loaded run's, :func:`ktui.trace.index.summarize_loaded`), by helper
    processes for a big sweep; the index then puts the rows in order, applies the sweep's records
    and writes its cache."""
    idx = SweepIndex(root, use_cache=use_cache, jobs=0, labels=labels)
    files = idx.discover()
    n = _workers(len(files), jobs)
    if n <= 1:
        pairs = _rows_and_details(files)
    else:
        with ProcessPoolExecutor(max_workers=n, mp_context=_MP) as ex:
            pairs = [p for part in ex.map(_rows_and_details, _chunks(files, n)) for p in part]
    given = {tf.real: s for tf, (s, _) in zip(files, pairs, strict=True)}
    by_path = {k: d for _, details in pairs for k, d in details.items()}
    runs = list(idx.summaries(given))
    return idx, runs, [by_path.get(s.real) or packed_detail(s.real or s.path) for s in runs]


# ---- the page ----------------------------------------------------------------------------------------------
def _table_data(runs: list[RunSummary], charts: SweepCharts) -> dict[str, Any]:
    # each column also carries its rank (PRIORITY): the page hides the least important ones on a
    # narrow window instead of scrolling sideways (see CSS in html_assets); labels when a run has one
    columns = columns_for(runs)
    cols = [{"key": k, "header": h, "cls": ("num" if k in NUMERIC else k) + f" c-{k}"} for k, h, _ in columns]
    rows = []
    for s in runs:
        sv = [_finite_sort(sort_value(s, k)) for k, _, _ in columns]
        rows.append({"c": [cell(s, k) for k, _, _ in columns], "s": sv, "o": s.outcome,
                     "m": one_line(s.model or "(unknown)")})
    g = charts.grid
    cells = [[one_line(c.model), one_line(g.titles.get(c.problem, c.problem)), c.runs] for c in g.cells.values()]
    return {"columns": cols, "rows": rows, "cells": cells}


def _finite_sort(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return -1e300 if v < 0 or v != v else 1e300
    return v


def _aggregates_html(runs: list[RunSummary], selection: Any = None) -> str:
    aggs, other = model_aggregates(runs)
    notes = [selection.line(other)] if selection is not None else []
    for n in (no_gpu_note(aggs), non_kernel_note(other) if selection is None else ""):
        if n:
            notes.append(n)
    foot = "".join(f'<p class="muted">{html.escape(n)}</p>' for n in notes)
    head = "".join(f'<th class="{"" if k == "model" else "num"}">{html.escape(h)}</th>' for k, h in AGG_COLUMNS)
    body = []
    for a in aggs:
        tds = "".join(f'<td class="{"" if k == "model" else "num"}">{html.escape(agg_cell(a, k))}</td>'
                      for k, _ in AGG_COLUMNS)
        body.append(f"<tr>{tds}</tr>")
    return f'<table id="aggregates"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{foot}'


def _legend_html(charts: SweepCharts) -> str:
    from ktui.report.svg import color_of

    colors: dict[str, str] = {}
    for c in charts.fast_p.curves:
        colors.setdefault(c.model, color_of(len(colors)))
    rows = []
    for c in charts.fast_p.curves:
        th = "".join(f'<td class="num">{v * 100:.0f}%</td>' for v in charts.fast_p.thresholds(c).values())
        line = "╍╍" if c.kind != "recorded" else "━━"
        rows.append(f'<tr class="legend-row"><td style="color:{colors[c.model]}">{line}</td>'
                    f'<td>{html.escape(one_line(c.label))}</td>{th}<td class="num">{c.runs}</td></tr>')
    head = "<tr><th></th><th>model</th><th class=num>fast_0</th><th class=num>fast_1</th>" \
           "<th class=num>fast_1.5</th><th class=num>fast_2</th><th class=num>of runs</th></tr>"
    return f'<table class="legend"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def build_report(root: str | os.PathLike[str], *, use_cache: bool = True, jobs: int | None = None,
                 title: str | None = None, exclude: tuple[str, ...] = (), labels_file: str | None = None,
                 verify: Any = None, verify_source: str = "") -> tuple[str, dict[str, Any]]:
    """The report page and some figures about it (runs, seconds per phase). ``exclude``: runs the
    aggregates and charts leave out (:func:`ktui.trace.aggregate.select`; the count is said);
    ``verify``: a verify report (``VerifyReport``, from ``ktui verify --json``) shown in its own
    section (:func:`ktui.report.html_results.verify_section`)."""
    from ktui.report.html_results import CSS as DOC_CSS
    from ktui.report.html_results import verify_section
    from ktui.repro.reproduced import reproduced_results
    from ktui.trace.aggregate import select
    from ktui.trace.labels import LabelStore, files_for

    t0 = time.perf_counter()
    store = LabelStore.read(files_for(root, [labels_file] if labels_file else []))
    idx, runs, details = scan_and_detail(root, use_cache=use_cache, jobs=jobs, labels=store)
    t1 = time.perf_counter()
    selection = select(runs, exclude)
    charts = sweep_charts(selection.kept, reproduced_results(selection.kept))
    t2 = time.perf_counter()
    g = charts.grid
    cell_index = {k: i for i, k in enumerate(g.cells)}
    nonce = secrets.token_urlsafe(16)
    name = title or f"ktui report: {one_line(str(root))}"
    issues = [i for i in idx.issues if i.severity != "info"]
    in_tree = f" · {count(len(issues), 'problem')} in the tree" if issues else ""
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'nonce-{nonce}'; img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'\">",
        '<meta name=viewport content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(name)}</title><style>{CSS}{DOC_CSS}</style></head><body>",
        f'<header class="top"><h1>{html.escape(name)}</h1><div class="sub">{count(len(runs), "run")} · '
        f'{count(len(g.models), "model")} · '
        f'{count(len(g.problems), "problem")} · made by ktui {time.strftime("%Y-%m-%d %H:%M")}'
        f'{in_tree}</div></header><main>',
        '<section id="charts-section"><h2>Charts</h2><div class="charts">',
        f'<div class="card" id="chart-fast_p"><h2>{html.escape(CHART_TITLES["fast_p"])}</h2>'
        f'{fast_p_svg(charts.fast_p)}{_legend_html(charts)}</div>',
        f'<div class="card" id="chart-speedup"><h2>{html.escape(CHART_TITLES["speedup"])}</h2>'
        f'{speedup_svg(charts.speedup)}</div>',
        f'<div class="card" id="chart-grid"><h2>{html.escape(CHART_TITLES["grid"])}</h2>'
        f'<p class="muted">click a cell to list its runs</p>{grid_svg(g, cell_index)}</div>',
        f'<div class="card" id="chart-first_correct"><h2>{html.escape(CHART_TITLES["first_correct"])}</h2>'
        f'{first_correct_svg(charts.first_correct)}</div>',
        "</div></section>",
        f'<section><h2>Per model</h2><div class="card">{_aggregates_html(selection.kept, selection)}</div></section>',
        verify_section(verify, verify_source) if verify is not None else "",
        '<section id="runs-section"><h2>Runs</h2><div class="controls">'
        '<input id="f-text" type="search" placeholder="filter: path, problem, model, persona, outcome, flags" size=50>'
        '<select id="f-outcome"><option value="">any outcome</option><option>passed</option><option>failed</option>'
        '<option>incomplete</option></select><select id="f-model"><option value="">any model</option></select>'
        '<span id="cell-chip" class="chip" hidden>cell: <span id="cell-label"></span> '
        '<button id="cell-clear" type="button">×</button></span><span id="shown" class="muted"></span></div>'
        '<p class="muted narrow-note n1">a narrow window: format and persona are hidden (wider shows them)</p>'
        '<p class="muted narrow-note n2">a narrow window: format, persona, wall, tokens and turns are hidden</p>'
        '<p class="muted narrow-note n3">a narrow window: only the trace, outcome, speedup, hack classes and flags'
        ' are shown</p>'
        '<div class="tablewrap"><table id="runs"><thead><tr id="runs-head"></tr></thead><tbody id="runs-body">'
        '</tbody></table></div></section>',
        '<section><div id="detail" hidden></div></section>',
    ]
    if issues:
        items = "".join(f"<li>{html.escape(one_line(i.path))}: {html.escape(one_line(i.message))}</li>" for i in issues)
        parts.append(f'<section><h2>Problems in the tree</h2><ul class="muted">{items}</ul></section>')
    parts.append("</main>")
    parts.append(f'<script type="application/json" id="ktui-data">{_json(_table_data(runs, charts)).decode()}</script>')
    parts.extend(f'<script type="application/octet-stream" id="d{i}">{d}</script>' for i, d in enumerate(details))
    parts.append(f'<script nonce="{nonce}">{JS}</script></body></html>')
    page = "".join(parts)
    t3 = time.perf_counter()
    return page, {"runs": len(runs), "scan_and_details_s": t1 - t0, "charts_s": t2 - t1, "page_s": t3 - t2,
                  "total_s": t3 - t0, "bytes": len(page.encode()), "issues": list(idx.issues)}


def no_runs_reason(root: str | Path, issues: list[Any]) -> str:
    """Why a tree gave no run to report, in one line: how many files were not traces, the first."""
    bad = [i for i in issues if i.severity != "info"]
    notes = [i for i in issues if i.severity == "info"]
    if not bad and not notes:
        return f"{one_line(str(root))}: no traces found (nothing to report; no page written)"
    first = (bad or notes)[0]
    said = f"{one_line(first.path)}: {one_line(first.message, 200)}"
    if len(bad) > 1:
        said = f"{count(len(bad), 'file')} are not traces (first: {said})"
    return f"{one_line(str(root))}: no runs to report, no page written: {said}"


def report_command(root: str | Path, output: str | Path, *, use_cache: bool = True, jobs: int | None = None,
                   quiet: bool = False, exclude: tuple[str, ...] = (), labels_file: str | None = None,
                   verify_file: str | None = None) -> int:
    verify = None
    if verify_file:
        from ktui.repro.results import ResultError
        from ktui.repro.verify.record import read_report

        try:
            verify = read_report(verify_file)
        except ResultError as exc:  # not a verify report: say which field, write nothing
            print(f"ktui: {one_line(verify_file)}: not a ktui verify --json report ({one_line(exc)})", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"ktui: {one_line(verify_file)}: {one_line(exc.strerror or exc)}", file=sys.stderr)
            return 2
    page, stats = build_report(root, use_cache=use_cache, jobs=jobs, exclude=exclude, labels_file=labels_file,
                               verify=verify, verify_source=verify_file or "")
    if not stats["runs"]:  # no 0-run page: one line that says why, and a non-zero exit
        print(f"ktui: {no_runs_reason(root, stats['issues'])}", file=sys.stderr)
        return 1
    out = Path(output)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        print(f"ktui: cannot write {one_line(str(out))}: {one_line(exc.strerror or exc)}", file=sys.stderr)
        tmp.unlink(missing_ok=True)
        return 2
    if not quiet:
        print(f"wrote {one_line(str(out))}: {count(stats['runs'], 'run')}, {stats['bytes'] / 1e6:.1f} MB in "
              f"{stats['total_s']:.1f} s", file=sys.stderr)
    return 0 if stats["runs"] else 1
