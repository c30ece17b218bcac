"""``ktui runs DIR``: every run of a sweep in a sortable, filterable table, with per-model aggregates.

The table fills progressively: a thread worker skims the traces (:class:`ktui.trace.index.
SweepIndex`, served from the index cache when it can) and posts batches to the screen. Keys:

- ``/`` filter by text (path, problem, model, persona, outcome, hack classes, flags); ``escape`` back to the table
- ``o`` cycles the outcome filter, ``M`` the model filter, ``x`` clears the filters
- ``>`` / ``<`` sort by the next / previous column, ``I`` inverts the order (or click a header)
- ``m`` marks a run, ``c`` compares the marked runs (two or more), ``u`` clears the marks
- ``enter`` opens the run in the replay screen
- ``z`` hides or shows the per-model aggregates, ``i`` lists the problems found in the tree
- ``F`` searches every transcript of the sweep (:mod:`ktui.tui.screens.search`): hits as rows,
  ``enter`` opens the replay at the hit's turn
- ``v`` verifies the marked runs (or all shown): a "reproduced" column fills in (:mod:`ktui.tui.screens.verify_runs`)
- ``C`` cycles the charts of the filtered runs (fast_p, speedups, model x problem grid, first
  correct kernel) and back to the table; ``enter`` on a grid cell lists its runs (or opens the one)

The keys are the screen's table (``KEYS``: bindings, help and palette at once).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static
from textual.worker import get_current_worker

from ktui.report.runs import (
    COLUMNS,
    LABELS_COLUMN,
    aggregates_table,
    cell,
    has_label,
    issues_text,
    no_gpu_note,
    one_line,
    sorted_runs,
)
from ktui.trace.aggregate import kernel_runs, model_aggregates, select
from ktui.trace.index import RunSummary, ScanIssue, SweepIndex
from ktui.trace.labels import LabelStore, files_for
from ktui.trace.words import count
from ktui.tui.keys import PAGE_KEYS, Key
from ktui.tui.screens.base import KtuiScreen
from ktui.tui.screens.opening import open_compare, open_replay
from ktui.tui.screens.sweep_messages import ChartsReady, RunsBatch, RunsScanned
from ktui.tui.screens.verify_runs import VerifyCells, VerifyDone, request_verify, with_reproduced
from ktui.tui.screens.verify_runs import on_cells as _verify_cells
from ktui.tui.screens.verify_runs import on_done as _verify_done
from ktui.tui.screens.verify_runs import stop as stop_verify
from ktui.tui.widgets import aggregates as aggregates_panel
from ktui.tui.widgets.charts import SweepChartView
from ktui.tui.widgets.runs_table import RunsTable
from ktui.view.charts import CHARTS

OUTCOMES = ("all", "passed", "failed", "incomplete")
FLUSH_S = 0.1  # how often the worker posts a batch
AGG_EVERY_S = 0.5


class IssuesScreen(ModalScreen[None]):
    """The problems found while scanning the tree."""

    DEFAULT_CSS = """
    IssuesScreen { align: center middle; }
    IssuesScreen > VerticalScroll {
        width: 90%; height: 80%; border: round $warning; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,q,i", "dismiss", "Close")]

    def __init__(self, issues: list[ScanIssue]) -> None:
        super().__init__()
        self.issues = list(issues)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            lines = issues_text(self.issues) or [Text("no problems found", style="dim")]
            body = Text("\n").join(lines)
            yield Static(body, id="issues-body")

    def action_dismiss(self) -> None:
        self.dismiss(None)


class RunsScreen(KtuiScreen):
    CONTENT = "#runs-table"
    DEFAULT_CSS = """
    RunsScreen { layout: vertical; }
    #runs-top { height: 1; padding: 0 1; background: $panel; }
    #runs-filter-row { height: 1; }
    #runs-filter { width: 1fr; height: 1; border: none; padding: 0 1; }
    #runs-filter:focus { border: none; background: $boost; }
    #runs-filter-state { width: auto; height: 1; padding: 0 1; color: $text-muted; }
    #runs-agg-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    #runs-agg-scroll { height: auto; max-height: 12; overflow-x: auto; overflow-y: auto;
                       scrollbar-size-horizontal: 1; }
    #runs-agg { width: auto; height: auto; padding: 0 1; }
    RunsScreen.no-agg #runs-agg-scroll, RunsScreen.no-agg #runs-agg-title { display: none; }
    #runs-charts { display: none; }
    RunsScreen.charts #runs-charts { display: block; }
    RunsScreen.charts #runs-table, RunsScreen.charts #runs-agg-scroll, RunsScreen.charts #runs-agg-title {
        display: none;
    }
    """
    HELP_TITLE = "ktui runs · keys"
    KEYS = [
        Key("j,down", "next", "next / previous run", label="j k / ↓ ↑", title="next run"),
        Key("k,up", "prev", "", title="previous run"),
        Key("g,home", "first", "first / last run", label="g G / home end", title="first run"),
        Key("G,end", "last", "", title="last run"),
        *PAGE_KEYS,
        Key("enter", "go", "open the run in the replay screen", footer="open"),
        Key("m", "mark", "mark / unmark the run (to compare)", footer="mark"),
        Key("u", "unmark", "clear the marks"),
        Key("c", "compare", "compare the marked runs (two or more)", footer="compare"),
        Key("slash", "search", "filter by text (every word must match); esc back to the table", footer="filter"),
        Key("o", "cycle_outcome", "cycle the outcome filter: all, passed, failed, incomplete"),
        Key("M", "cycle_model", "cycle the model filter (the models with runs under the other filters)"),
        Key("x", "reset", "clear the filters"),
        Key("greater_than_sign", "sort(1)", "sort by the next / previous column (or click a header)",
            label="> / <", footer="sort", title="sort by the next column"),
        Key("less_than_sign", "sort(-1)", "", title="sort by the previous column"),
        Key("I", "reverse", "invert the sort order"),
        Key("z", "zen", "zen: hide / show the per-model aggregates"),
        Key("H", "scroll_sideways(-8)", "scroll the table and the aggregates left / right", label="H / L",
            title="scroll left"),
        Key("L", "scroll_sideways(8)", "", title="scroll right"),
        Key("C", "cycle_chart", "cycle the charts: fast_p, speedups, model × problem grid, first correct, table",
            footer="charts"),
        Key("i", "issues", "the problems found in the tree"),
        Key("F", "find", "search every transcript, call, result and kernel of the sweep (hits as rows; "
            "enter opens the replay at the hit's turn)"),
        Key("A", "label", "label the run, with a note (LABEL [note]; -LABEL removes): kept outside the trace, "
            "as `ktui label`"),
        Key("X", "cycle_exclude", "cycle what the aggregates and charts leave out: nothing, runs with hack classes, "
            "with flags, both, labelled runs, all three (the count left out is always shown)"),
        Key("v", "verify", "verify the marked runs (or all shown): re-run their kernels, fill in 'reproduced'"),
        Key("escape", "back", "back to the table; from the table, back to the previous screen"),
    ]

    def __init__(self, root: str | Path, *, use_cache: bool = True, name: str | None = None,
                 labels: Sequence[str] = (), exclude: Sequence[str] = (), labels_file: str | None = None) -> None:
        super().__init__(name=name)
        self.root = Path(root)
        self.use_cache = use_cache
        self.label_filter = [x for x in labels if x]  # only runs with one of these labels
        self.exclude: tuple[str, ...] = tuple(exclude)  # left out of the aggregates and charts (X cycles)
        self.labels_file = labels_file
        self.selection_line = ""
        self.text_filter = ""
        self.outcome_filter = "all"
        self.model_filter: str | None = None
        self.models: list[str] = []
        self.total: int | None = None
        self.scanned = 0
        self.scan_done = False
        self.cache_hits = 0
        self.issues: list[ScanIssue] = []
        self.first_row_at: float | None = None
        self.started_at = time.perf_counter()
        self.done_at: float | None = None
        self._last_agg = 0.0
        self._hay: list[str] = []  # per row: the lower-cased text the filter searches
        self.chart: str | None = None  # the chart shown instead of the table (ktui.view.charts.CHARTS)
        self.cell_filter: tuple[str, set[str]] | None = None  # (label, real paths) of a grid cell

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="runs-top")
        with Horizontal(id="runs-filter-row"):
            yield Input(placeholder="/ filter: path, problem, model, persona, outcome, hack classes, flags", id="runs-filter")
            yield Static(id="runs-filter-state")
        yield RunsTable(id="runs-table")
        yield Static("per model  · H / L scroll sideways", id="runs-agg-title")
        with ScrollableContainer(id="runs-agg-scroll", can_focus=False):
            yield Static(id="runs-agg")  # at the table's own width: narrow screens scroll, never squeeze
        yield SweepChartView(id="runs-charts")
        yield Footer()

    def on_mount(self) -> None:
        self._update_top()
        self._update_filter_state()
        self.scan()

    # ---- the background scan -------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="runs-scan")
    def scan(self) -> None:
        worker = get_current_worker()
        idx = SweepIndex(self.root, use_cache=self.use_cache, labels=self.label_store())
        batch: list[RunSummary] = []
        last = 0.0
        gen = idx.summaries()
        try:
            for s in gen:
                if worker.is_cancelled:
                    break
                batch.append(s)
                now = time.perf_counter()
                if now - last >= FLUSH_S or self.first_row_at is None:
                    self.post_message(RunsBatch(batch, idx.done, idx.cache_hits, idx.total))
                    batch, last = [], now
        finally:
            gen.close()
        if batch:
            self.post_message(RunsBatch(batch, idx.done, idx.cache_hits, idx.total))
        if not worker.is_cancelled:
            self.post_message(RunsScanned(list(idx.issues), idx.done, idx.cache_hits))

    def label_store(self) -> LabelStore:
        return LabelStore.read(files_for(self.root, [self.labels_file] if self.labels_file else []))

    # ---- the workers' messages (handled on the UI thread) -----------------------------------------
    def on_runs_batch(self, message: RunsBatch) -> None:
        message.stop()
        self._on_batch(message.batch, message.done, message.hits, message.total)

    def on_runs_scanned(self, message: RunsScanned) -> None:
        message.stop()
        self._on_done(message.issues, message.done, message.hits)

    def on_charts_ready(self, message: ChartsReady) -> None:
        message.stop()
        self.query_one(SweepChartView).set_charts(message.charts, message.rows)

    def _on_batch(self, batch: list[RunSummary], done: int, hits: int, total: int | None) -> None:
        table = self.query_one(RunsTable)
        new = table.add_rows(batch)
        self._hay.extend(self._hay_of(s) for s in batch)
        if self.first_row_at is None and batch:
            self.first_row_at = time.perf_counter()
        self.scanned, self.cache_hits, self.total = done, hits, total
        for s in batch:
            m = s.model or "(unknown)"
            if m not in self.models:
                self.models.append(m)
        keep = [i for i in new if self._matches(i, table.rows)]
        if keep:
            view = table.view + keep
            if table.sort_key:
                view = self._sorted(view)
            table.set_view(view)
        now = time.perf_counter()
        if now - self._last_agg >= AGG_EVERY_S:
            self._update_aggregates()
            self._last_agg = now
        self._update_top()

    def _on_done(self, issues: list[ScanIssue], done: int, hits: int) -> None:
        self.issues = issues
        self.scanned, self.cache_hits, self.total = done, hits, done
        self.scan_done = True
        self.done_at = time.perf_counter()
        self._update_aggregates()
        self._update_top()

    # ---- filtering and sorting -----------------------------------------------------------------
    @staticmethod
    def _hay_of(s: RunSummary) -> str:
        return " ".join(cell(s, k) for k, _, _ in [*COLUMNS, LABELS_COLUMN]).lower()

    def _matches(self, i: int, rows: list[RunSummary]) -> bool:
        s = rows[i]
        if self.label_filter and not has_label(s, self.label_filter):
            return False
        if self.outcome_filter != "all" and s.outcome != self.outcome_filter:
            return False
        if self.model_filter is not None and (s.model or "(unknown)") != self.model_filter:
            return False
        if self.cell_filter is not None and s.real not in self.cell_filter[1]:
            return False
        if self.text_filter:
            hay = self._hay[i]
            return all(w in hay for w in self.text_filter.lower().split())
        return True

    def _sorted(self, view: list[int]) -> list[int]:
        table = self.query_one(RunsTable)
        key = table.sort_key
        if key is None:
            return sorted(view)
        return sorted_runs(sorted(view), table.rows, key, table.sort_reverse)

    def refilter(self) -> None:
        table = self.query_one(RunsTable)
        view = [i for i in range(len(table.rows)) if self._matches(i, table.rows)]
        table.empty_text = self._empty_text()
        table.set_view(self._sorted(view))
        self._update_filter_state()
        self._update_aggregates()
        self._update_top()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "runs-filter":
            self.text_filter = event.value.strip()
            self.refilter()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.focus_content()

    def action_search(self) -> None:
        self.query_one("#runs-filter", Input).focus()

    def action_back(self) -> None:
        if self.chart is not None:
            self.show_chart(None)
        elif self.query_one(RunsTable).has_focus:
            self.leave()
        else:
            self.focus_content()

    # ---- moving in the table (the keys are the screen's: one table for bindings and help) ----
    def action_next(self) -> None:
        self.query_one(RunsTable).action_cursor(1)

    def action_prev(self) -> None:
        self.query_one(RunsTable).action_cursor(-1)

    def action_first(self) -> None:
        self.query_one(RunsTable).action_jump(0)

    def action_last(self) -> None:
        self.query_one(RunsTable).action_jump(-1)

    def action_scroll_page(self, direction: int) -> None:
        self.query_one(RunsTable).action_page(direction)

    def action_go(self) -> None:
        self.query_one(RunsTable).action_select()

    def action_label(self) -> None:
        from ktui.tui.labeling import label_run

        label_run(self, self.query_one(RunsTable))

    def action_find(self) -> None:
        from ktui.tui.screens.search import SearchScreen

        self.app.push_screen(SearchScreen(self.root, names=self.query_one(RunsTable).name_counts))

    def action_mark(self) -> None:
        self.query_one(RunsTable).action_mark()

    def action_scroll_sideways(self, n: int) -> None:
        for w in (self.query_one(RunsTable), self.query_one("#runs-agg-scroll")):
            w.scroll_relative(x=n, animate=False)

    def action_cycle_outcome(self) -> None:
        i = OUTCOMES.index(self.outcome_filter)
        self.outcome_filter = OUTCOMES[(i + 1) % len(OUTCOMES)]
        self.refilter()

    def _empty_text(self) -> str:
        """What the table says when the filters leave no run: which filters, and how to clear them."""
        why = []
        if self.text_filter:
            why.append(f"text {one_line(self.text_filter, 40)!r}")
        if self.outcome_filter != "all":
            why.append(f"outcome {self.outcome_filter}")
        if self.model_filter is not None:
            why.append(f"model {one_line(self.model_filter, 30)}")
        if self.cell_filter is not None:
            why.append(f"cell {one_line(self.cell_filter[0], 40)}")
        return f"no run matches {' · '.join(why) or 'the filters'} — x clears the filters"

    def models_under_filter(self) -> list[str]:
        """The models that have rows under the other filters (text, outcome, grid cell), in order."""
        table = self.query_one(RunsTable)
        saved, self.model_filter = self.model_filter, None
        try:
            have = {table.rows[i].model or "(unknown)" for i in range(len(table.rows)) if self._matches(i, table.rows)}
        finally:
            self.model_filter = saved
        return sorted((m for m in self.models if m in have), key=str.lower)

    def action_cycle_model(self) -> None:
        """The next model with runs under the other filters, then all models again."""
        models = self.models_under_filter()
        if not models:
            if self.model_filter is not None:
                self.model_filter = None
                self.refilter()
            return
        if self.model_filter is None:
            self.model_filter = models[0]
        else:
            i = models.index(self.model_filter) if self.model_filter in models else -1
            self.model_filter = models[i + 1] if i + 1 < len(models) else None
        self.refilter()

    def action_reset(self) -> None:
        self.outcome_filter, self.model_filter, self.cell_filter = "all", None, None
        self.query_one("#runs-filter", Input).value = ""
        self.text_filter = ""
        self.refilter()

    def action_sort(self, step: int) -> None:
        """Sort by the next (``step`` 1) or previous (-1) column."""
        table = self.query_one(RunsTable)
        keys = [k for k, _, _ in COLUMNS]
        i = keys.index(table.sort_key) if table.sort_key in keys else (-1 if step > 0 else 0)
        table.sort_key = keys[(i + step) % len(keys)]
        table.sort_reverse = False
        self._apply_sort()

    def action_reverse(self) -> None:
        table = self.query_one(RunsTable)
        if table.sort_key is None:
            table.sort_key = COLUMNS[0][0]
        table.sort_reverse = not table.sort_reverse
        self._apply_sort()

    def on_runs_table_header_clicked(self, event: RunsTable.HeaderClicked) -> None:
        table = self.query_one(RunsTable)
        if table.sort_key == event.key:
            table.sort_reverse = not table.sort_reverse
        else:
            table.sort_key, table.sort_reverse = event.key, False
        self._apply_sort()

    def _apply_sort(self) -> None:
        table = self.query_one(RunsTable)
        table.set_view(self._sorted(table.view), keep=table.current)
        self._update_filter_state()

    # ---- marks, compare, replay ---------------------------------------------------------------
    def on_runs_table_marks_changed(self, event: RunsTable.MarksChanged) -> None:
        self._update_filter_state()

    def action_unmark(self) -> None:
        self.query_one(RunsTable).clear_marks()

    def action_compare(self) -> None:
        marked = self.query_one(RunsTable).marked_runs
        if len(marked) < 2:
            self.notify("mark two or more runs with space, then press c", severity="warning")
            return
        open_compare(self, [Path(s.real) for s in marked])

    def on_runs_table_selected(self, event: RunsTable.Selected) -> None:
        open_replay(self, Path(event.summary.real))

    def action_verify(self) -> None:
        request_verify(self)

    def on_unmount(self) -> None:
        stop_verify(self)

    # ---- panels ---------------------------------------------------------------------------------
    def action_zen(self) -> None:
        self.toggle_class("no-agg")

    def action_issues(self) -> None:
        self.app.push_screen(IssuesScreen(self.issues))

    def _update_top(self) -> None:
        table = self.query_one(RunsTable)
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("ktui runs ", style="bold")
        t.append(one_line(str(self.root)))
        t.append("   ")
        if not self.scan_done:
            of = f" / {self.total:,}" if self.total is not None else " (still finding traces)"
            t.append(f"scanning {self.scanned:,}{of}", style="yellow")
        else:
            t.append(count(len(table.rows), "run"), style="green")
        if len(table.view) != len(table.rows):
            t.append(f" · showing {len(table.view):,}")
        if self.cache_hits:
            t.append(f" · {count(self.cache_hits, 'file')} from the cache", style="dim")  # not runs: "60 runs · 120 cached"
        n_err = sum(1 for i in self.issues if i.severity != "info")
        if n_err:
            t.append(f" · {count(n_err, 'problem')} (i)", style="red")
        elif self.issues:
            t.append(f" · {count(len(self.issues), 'note')} (i)", style="dim")
        self.query_one("#runs-top", Static).update(t)

    def _update_filter_state(self) -> None:
        table = self.query_one(RunsTable)
        t = Text(no_wrap=True)
        t.append("outcome: ", style="dim")
        t.append(self.outcome_filter, style="bold" if self.outcome_filter != "all" else "")
        t.append("  model: ", style="dim")
        t.append(one_line(self.model_filter, 24) if self.model_filter else "all",
                 style="bold" if self.model_filter else "")
        if self.label_filter:
            t.append("  label: ", style="dim")
            t.append(one_line(", ".join(self.label_filter), 24), style="bold")
        if table.sort_key:
            t.append("  sort: ", style="dim")
            t.append(table.sort_key + (" ▼" if table.sort_reverse else " ▲"))
        if table.marked:
            t.append(f"  marked: {len(table.marked)}", style="bold yellow")
        if self.cell_filter is not None:
            t.append("  cell: ", style="dim")
            t.append(one_line(self.cell_filter[0], 40), style="bold")
        self.query_one("#runs-filter-state", Static).update(t)

    def _counted(self) -> list[RunSummary]:
        """The shown runs the aggregates and charts count (``exclude`` leaves some out)."""
        table = self.query_one(RunsTable)
        sel = select([table.rows[i] for i in table.view], self.exclude)
        self.selection_line = sel.line(kernel_runs(sel.kept)[1]).replace(" by --exclude ", " · leaving out ")
        return sel.kept

    def on_verify_cells(self, message: VerifyCells) -> None:  # posted by the verify thread
        _verify_cells(self, message)

    def on_verify_done(self, message: VerifyDone) -> None:
        _verify_done(self, message)

    def _update_aggregates(self) -> None:
        kept = self._counted()
        aggs, other = model_aggregates(kept)
        body = Group(aggregates_table(aggs), Text(self.selection_line + " · X changes it", style="dim"))
        note = no_gpu_note(aggs)
        if note:
            body = Group(body, Text(note, style="dim"))
        aggregates_panel.show(self.query_one("#runs-agg", Static), with_reproduced(self, body))
        title = Text("per model  · H / L scroll sideways")
        if other:
            title.append(f"  · {count(other, 'run')} with no kernel not counted", style="dim")
        self.query_one("#runs-agg-title", Static).update(title)
        if self.chart is not None:
            self.compute_charts(kept)

    EXCLUDE_CYCLE: tuple[tuple[str, ...], ...] = ((), ("hacks",), ("flags",), ("hacks", "flags"), ("labelled",),
                                                  ("hacks", "flags", "labelled"))

    def action_cycle_exclude(self) -> None:
        order = list(self.EXCLUDE_CYCLE)
        if self.exclude not in order:
            order.insert(0, self.exclude)
        self.exclude = order[(order.index(self.exclude) + 1) % len(order)]
        self._update_aggregates()
        self.notify(self.selection_line, timeout=3, markup=False)

    # ---- charts ---------------------------------------------------------------------------------
    def action_cycle_chart(self) -> None:
        order = [*CHARTS, None]
        self.show_chart(order[(order.index(self.chart) + 1) % len(order)] if self.chart in order else CHARTS[0])

    def show_chart(self, kind: str | None) -> None:
        was = self.chart
        self.chart = kind
        self.set_class(kind is not None, "charts")
        view = self.query_one(SweepChartView)
        if kind is None:
            self.focus_content()
            return
        view.show(kind)
        view.focus()
        if was is None:
            self.compute_charts(self._counted())

    @work(thread=True, exclusive=True, group="runs-charts")
    def compute_charts(self, rows: list[RunSummary]) -> None:
        """The charts of the filtered runs (and reproduced results from the repro cache), off the UI thread."""
        from ktui.repro.reproduced import reproduced_results
        from ktui.view.charts import sweep_charts

        charts = sweep_charts(rows, reproduced_results(rows))
        if not get_current_worker().is_cancelled:
            self.post_message(ChartsReady(charts, rows))

    def on_sweep_chart_view_cell_selected(self, event: SweepChartView.CellSelected) -> None:
        if len(event.runs) == 1:
            open_replay(self, Path(event.runs[0].real))
            return
        self.cell_filter = (f"{event.model} × {event.problem}", {r.real for r in event.runs})
        self.show_chart(None)
        self.refilter()
