"""``ktui compare A B [C ...]``: runs side by side.

Panes (``1``-``4`` or ``tab``):

1. Summary: one column per run, one row per figure, the better value of each row in bold green
   (and marked ``*``), with a warning on top when the runs are not on the same problem;
2. Kernels: the final (or any chosen) kernels of two runs diffed against each other (``h`` /
   ``l`` choose a side, ``j`` / ``k`` step its version, ``x`` back to the finals);
3. Turns: the turns of the runs side by side, stepped together with ``j`` / ``k``; ``t``
   unties them (then ``j`` / ``k`` move the active column, ``h`` / ``l`` pick it); ``a``
   aligns them by turn index or by kernel version;
4. Progress: per run, each kernel version's compiled / correct / runtime over the turns.

The keys are the screen's table (``KEYS``); the runs are loaded in a thread worker; all
rendering reuses the replay app's documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Static, TabbedContent, TabPane

from ktui.report.compare import best_legend, distinct_names, run_title, summary_table
from ktui.report.render_diff import clean, stats_text
from ktui.trace.aggregate import compare_rows, problem_warning, turn_of_version, version_at_turn
from ktui.trace.model import KernelVersion, Run
from ktui.trace.words import count
from ktui.tui.keys import DOC_SCROLL_KEYS, Key, pane_keys
from ktui.tui.screens.base import KtuiScreen
from ktui.tui.widgets.compare_progress import progress_view
from ktui.tui.widgets.documents import ViewOptions, diff_blocks, kernel_stats, turn_document
from ktui.tui.widgets.docview import DocView, text_block

SPLIT_MIN_WIDTH = 90  # a side-by-side diff narrower than this is drawn unified (as in replay)


@dataclass
class RunsLoaded(Message):
    runs: list[Run]
    errors: list[str]


class CompareScreen(KtuiScreen):
    """Compare two or more traces (``paths``) or already loaded ``runs``."""
    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    #compare-title { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    #compare-warning { height: auto; padding: 0 1; color: $warning; text-style: bold; display: none; }
    #compare-warning.shown { display: block; }
    #compare-tabs { height: 1fr; }
    #compare-summary-scroll, #compare-progress-scroll { padding: 0 1; }
    #compare-kernels-bar, #compare-turns-bar { height: auto; padding: 0 1; background: $boost; }
    #compare-cols { height: 1fr; }
    .compare-col { width: 1fr; height: 1fr; border-left: vkey $panel-lighten-2; }
    .compare-col.active { border-left: vkey $accent; }
    .compare-col-title { height: 1; padding: 0 1; background: $panel; }
    .compare-col.active .compare-col-title { background: $accent 50%; }
    """
    PANES = (("summary", "Summary"), ("kernels", "Kernels"), ("turns", "Turns"), ("progress", "Progress"))
    TABS = "compare-tabs"
    HELP_TITLE = "ktui compare · keys"
    KEYS = [
        *pane_keys(PANES),
        Key("j,down", "next", "Turns: next / previous turn of every linked run; Kernels: next / previous "
            "version of the chosen side; else scroll", label="j k / ↓ ↑", footer="next", title="next turn"),
        Key("k,up", "prev", "", title="previous turn"),
        Key("g,home", "first", "Turns: first / last turn; Kernels: first / last version",
            label="g G / home end", title="first turn"),
        Key("G,end", "last", "", title="last turn"),
        Key("h,left", "column(-1)", "previous / next column (Turns: the active run; Kernels: the side)",
            label="h l / ← →", title="previous column"),
        Key("l,right", "column(1)", "", title="next column"),
        Key("t", "toggle_link", "Turns: tie / untie the runs (untied: j / k move the active column)",
            footer="tie"),
        Key("a", "toggle_align", "Turns: align by turn index / by kernel version", footer="align"),
        Key("left_square_bracket", "pair(-1)", "Kernels: which two runs are diffed (three or more)",
            label="[ / ]", title="previous pair of runs"),
        Key("right_square_bracket", "pair(1)", "", title="next pair of runs"),
        Key("x", "reset", "Kernels: back to the two final kernels"),
        Key("s", "toggle_split", "Kernels and Turns: unified / side-by-side diff", footer="split"),
        Key("d", "toggle_diff", "Turns: kernel arguments as a diff against the previous version"),
        *DOC_SCROLL_KEYS,
        Key("escape", "back", "back to the previous screen"),
    ]

    def __init__(self, paths: Sequence[str | Path] = (), *, runs: Sequence[Run] | None = None,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.paths = [Path(p) for p in paths]
        self.runs: list[Run] = list(runs) if runs is not None else []
        self.loaded = runs is not None
        # turns pane
        self.linked = True
        self.align = "turn"  # or "version"
        self.positions: list[int] = []
        self.active_col = 0
        # kernels pane
        self.left, self.right = 0, 1
        self.left_version: int | None = None  # None: the final kernel
        self.right_version: int | None = None
        self.split = False
        self.kernel_side = 1  # which side j / k step (h / l choose): 0 left, 1 right
        self.turn_opts = ViewOptions()

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(Text("ktui compare · loading…", style="bold"), id="compare-title")
        yield Static(id="compare-warning")
        with TabbedContent(initial="summary", id="compare-tabs"):
            with TabPane("Summary", id="summary"):
                with VerticalScroll(id="compare-summary-scroll"):
                    yield Static(id="compare-summary")
            with TabPane("Kernels", id="kernels"):
                yield Static(id="compare-kernels-bar")
                yield DocView(id="compare-diff")
            with TabPane("Turns", id="turns"):
                yield Static(id="compare-turns-bar")
                yield Horizontal(id="compare-cols")
            with TabPane("Progress", id="progress"):
                with VerticalScroll(id="compare-progress-scroll"):
                    yield Static(id="compare-progress")
        yield Footer()

    def on_mount(self) -> None:
        if self.loaded:
            self._show(self.runs, [])
        else:
            self.load()

    @work(thread=True, exclusive=True, group="compare-load")
    def load(self) -> None:
        from ktui.trace import load

        runs, errors = [], []
        for p in self.paths:
            try:
                runs.append(load(p))
            except Exception as exc:  # noqa: BLE001 - the reader should not raise; report if it does
                errors.append(f"{p}: {exc}")
        self.post_message(RunsLoaded(runs, errors))

    @on(RunsLoaded)
    def _loaded(self, msg: RunsLoaded) -> None:
        self._show(msg.runs, msg.errors)

    def _show(self, runs: list[Run], errors: list[str]) -> None:
        self.runs, self.loaded = runs, True
        for e in errors:
            self.notify(clean(e), severity="error", markup=False)
        title = Text(end="")
        title.append("ktui compare ", style="bold")
        title.append(f"{count(len(runs), 'run')}   ", style="grey62")
        names = distinct_names([str(r.path) for r in runs])
        for i, r in enumerate(runs):
            if i:
                title.append("  vs  ", "grey62")
            title.append(run_title(r, i, names[i]))
        self.query_one("#compare-title", Static).update(title)
        warn = problem_warning(runs) if runs else "no run could be read"
        w = self.query_one("#compare-warning", Static)
        if warn:
            w.update(Text(f"⚠ {warn}"))
            w.add_class("shown")
        self.query_one("#compare-summary", Static).update(
            Group(summary_table(runs, compare_rows(runs)), Text(""), best_legend()))
        self.query_one("#compare-progress", Static).update(progress_view(runs))
        self.positions = [0] * len(runs)
        cols = self.query_one("#compare-cols", Horizontal)
        for i in range(len(runs)):
            col = Vertical(Static(id=f"compare-col-title-{i}", classes="compare-col-title"),
                           DocView(id=f"compare-turn-{i}"), classes="compare-col", id=f"compare-col-{i}")
            cols.mount(col)
        self.call_after_refresh(self._refresh_turns)
        self._refresh_kernels()

    # ---- panes --------------------------------------------------------------------------------
    @property
    def pane(self) -> str:
        return self.active_pane

    # ---- turns side by side -------------------------------------------------------------------
    def _limit(self, i: int) -> int:
        """The largest position of run ``i`` in the current alignment."""
        r = self.runs[i]
        return max(0, len(r.turns) - 1) if self.align == "turn" else max(1, len(r.kernels))

    def _lowest(self) -> int:
        return 0 if self.align == "turn" else 1

    def _movers(self) -> list[int]:
        return list(range(len(self.runs))) if self.linked else [self.active_col]

    def action_next(self) -> None:
        self._step(1)

    def action_prev(self) -> None:
        self._step(-1)

    def action_first(self) -> None:
        self._step_to(0)

    def action_last(self) -> None:
        self._step_to(-1)

    def _step(self, delta: int) -> None:
        if self.pane == "kernels":
            self._step_version(delta)
            return
        if self.pane != "turns":
            self.action_scroll_lines(3 * delta)
            return
        if not self.runs:
            return
        movers = self._movers()
        top = max(self._limit(i) for i in movers)
        for i in movers:
            self.positions[i] = max(self._lowest(), min(top, self.positions[i] + delta))
        if self.linked:  # linked runs share one position
            p = self.positions[movers[0]]
            self.positions = [p] * len(self.runs)
        self._refresh_turns()

    def _step_to(self, where: int) -> None:
        if self.pane == "kernels":
            self._version_to(where)
            return
        if self.pane != "turns" or not self.runs:
            return
        movers = self._movers()
        target = self._lowest() if where == 0 else max(self._limit(i) for i in movers)
        for i in movers:
            self.positions[i] = target
        self._refresh_turns()

    def _scroller(self):
        target = {"summary": "#compare-summary-scroll", "progress": "#compare-progress-scroll",
                  "kernels": "#compare-diff"}.get(self.pane)
        if target:
            return self.query_one(target)
        if self.pane == "turns" and self.runs:
            col = self.active_col if not self.linked else 0
            return self.query_one(f"#compare-turn-{col}", DocView)
        return None

    def action_scroll_lines(self, n: int) -> None:
        w = self._scroller()
        if w is not None:
            w.scroll_relative(y=n, animate=False)

    def action_scroll_sideways(self, n: int) -> None:
        w = self._scroller()
        if isinstance(w, DocView):
            w.scroll_sideways(n)

    def action_toggle_wrap(self) -> None:
        for view in self.query(DocView):
            view.set_wrap(not view.wrap_code)

    def action_scroll_page(self, direction: int) -> None:
        w = self._scroller()
        if w is not None:
            w.scroll_relative(y=direction * max(1, w.scrollable_content_region.height - 2), animate=False)

    def action_toggle_link(self) -> None:
        self.linked = not self.linked
        if self.linked:
            p = self.positions[self.active_col] if self.positions else 0
            self.positions = [p] * len(self.runs)
        self._refresh_turns()
        self.notify("runs tied: j / k move every run" if self.linked
                    else "runs untied: j / k move the active column (h / l picks it)")

    def action_column(self, delta: int) -> None:
        if self.pane == "kernels":
            self.kernel_side = 1 if delta > 0 else 0
            self._refresh_kernels()
        elif self.runs:
            self.active_col = (self.active_col + delta) % len(self.runs)
            self._refresh_turns()

    def action_toggle_align(self) -> None:
        new: list[int] = []
        for i, r in enumerate(self.runs):
            p = self.positions[i]
            if self.align == "turn":
                new.append(version_at_turn(r, p) or 1)
            else:
                t = turn_of_version(r, p)
                new.append(t if t is not None else 0)
        self.align = "version" if self.align == "turn" else "turn"
        if self.linked and new:
            new = [new[self.active_col]] * len(new)
        self.positions = new
        self._refresh_turns()

    def _refresh_turns(self) -> None:
        if not self.runs:
            return
        bar = Text(end="")
        bar.append("aligned by ", "grey62")
        bar.append("turn index" if self.align == "turn" else "kernel version", "bold")
        bar.append("   ")
        bar.append("tied" if self.linked else "untied", "bold green" if self.linked else "bold yellow")
        bar.append("   j/k step · t tie · h/l column · a align", "grey50")
        self.query_one("#compare-turns-bar", Static).update(bar)
        for i, r in enumerate(self.runs):
            views = self.query(f"#compare-turn-{i}")
            if not views:  # the columns are mounted after the runs arrive: drawn then
                return
            title, blocks = self._turn_view(r, i)
            self.query_one(f"#compare-col-title-{i}", Static).update(title)
            target = f"compare-turn-{i}"
            if callable(blocks):  # a diff: built in a worker
                self.build_document(target, (self.align, self.positions[i], self.turn_opts.key(),
                                             self._turn_split()), blocks)
            else:
                self.drop_document(target)
                views.first(DocView).set_document(blocks)
            self.query_one(f"#compare-col-{i}").set_class(i == self.active_col and not self.linked, "active")

    def _turn_view(self, run: Run, i: int):
        p = self.positions[i]
        title = Text(no_wrap=True, overflow="ellipsis", end="")
        title.append(f"#{i + 1} {clean(run.model or '?')}", "bold")
        if self.align == "turn":
            turn = p if p < len(run.turns) else None
            label = f"turn {p}" if turn is not None else f"no turn {p}"
            v = version_at_turn(run, p) if turn is not None else None
            if v is not None:
                label += f" · working on v{v}"
        else:
            turn = turn_of_version(run, p)
            label = f"v{p} · first used at turn {turn}" if turn is not None else f"no v{p}"
        title.append(f"  {label}  ", "grey62")
        title.append(f"({count(len(run.turns), 'turn')}, {count(len(run.kernels), 'version')})", "grey50")
        if turn is None or turn >= len(run.turns):
            what = (f"this run has {count(len(run.turns), 'turn')}" if self.align == "turn"
                    else f"this run has {count(len(run.kernels), 'kernel version')}")
            return title, [text_block(Text(f"({what})", style="grey50"))]
        opts = replace(self.turn_opts, split=self._turn_split())
        if opts.diff:
            return title, partial(turn_document, run, run.turns[turn], opts)
        return title, turn_document(run, run.turns[turn], opts)

    def _turn_split(self) -> bool:
        """Side by side inside a run's column only when the column is wide enough."""
        cols = max(1, len(self.runs))
        return self.turn_opts.split and (self.size.width or 160) // cols >= SPLIT_MIN_WIDTH

    # ---- kernels ------------------------------------------------------------------------------
    def _kernel(self, run_index: int, number: int | None) -> KernelVersion | None:
        if not (0 <= run_index < len(self.runs)):
            return None
        r = self.runs[run_index]
        return r.final_kernel if number is None else r.kernel(number)

    def _side(self) -> tuple[str, Run | None]:
        side = "right" if self.kernel_side else "left"
        idx = self.right if self.kernel_side else self.left
        return side, (self.runs[idx] if len(self.runs) >= 2 else None)

    def _current_version(self, side: str, run: Run) -> int:
        cur = getattr(self, f"{side}_version")
        if cur is None:
            final = run.final_kernel
            cur = final.number if final else len(run.kernels)
        return cur

    def _step_version(self, delta: int) -> None:
        """The chosen side's next / previous kernel version (wrapping around)."""
        side, run = self._side()
        if run is None or not run.kernels:
            return
        cur = self._current_version(side, run)
        setattr(self, f"{side}_version", (cur - 1 + delta) % len(run.kernels) + 1)
        self._refresh_kernels()

    def _version_to(self, where: int) -> None:
        side, run = self._side()
        if run is None or not run.kernels:
            return
        setattr(self, f"{side}_version", 1 if where == 0 else len(run.kernels))
        self._refresh_kernels()

    def action_pair(self, delta: int) -> None:
        n = len(self.runs)
        if self.pane != "kernels" or n < 3:
            return
        pairs = [(a, b) for a in range(n) for b in range(n) if a < b]
        k = pairs.index((self.left, self.right)) if (self.left, self.right) in pairs else 0
        self.left, self.right = pairs[(k + delta) % len(pairs)]
        self.left_version = self.right_version = None
        self._refresh_kernels()

    def action_reset(self) -> None:
        self.left_version = self.right_version = None
        self._refresh_kernels()

    def action_toggle_split(self) -> None:
        if self.pane == "turns":
            self.turn_opts.split = not self.turn_opts.split
            self._refresh_turns()
            return
        if self.pane != "kernels":
            return
        self.split = not self.split
        self._refresh_kernels()

    def action_toggle_diff(self) -> None:
        if self.pane == "turns":
            self.turn_opts.diff = not self.turn_opts.diff
            self._refresh_turns()

    def _refresh_kernels(self, rebuild: bool = True) -> None:
        """The kernels bar, and (``rebuild``) the diff of the two chosen kernels, built in a worker."""
        bar = Text(end="")
        view = self.query_one("#compare-diff", DocView)
        if len(self.runs) < 2:
            self.query_one("#compare-kernels-bar", Static).update(Text("need two runs", style="grey50"))
            view.set_document([])
            return
        ka = self._kernel(self.left, self.left_version)
        kb = self._kernel(self.right, self.right_version)
        for side, (ri, k, chosen) in enumerate(((self.left, ka, self.left_version),
                                                (self.right, kb, self.right_version))):
            if side:
                bar.append("  →  ", "bold")
            r = self.runs[ri]
            chosen_side = side == self.kernel_side
            bar.append("▸ " if chosen_side else "  ", "bold cyan")
            bar.append(f"#{ri + 1} {clean(r.model or '?')} ", "bold underline" if chosen_side else "bold")
            if k is None:
                bar.append("no kernel", "yellow")
            else:
                bar.append(k.label, "bold magenta")
                bar.append(" (final)" if chosen is None or (r.final_kernel and r.final_kernel.number == k.number)
                           else "", "grey62")
                bar.append(f" {k.sha1[:10]}", "grey50")
        stats = kernel_stats(ka, kb, compute=False)  # computed with the diff, in the worker
        if stats is not None:
            bar.append("   ")
            bar.append_text(stats_text(*stats))
        bar.append("\n")
        bar.append("h/l side · j/k its version · g/G first/last · x finals · s split", "grey50")
        if len(self.runs) > 2:
            bar.append(" · [ ] other runs", "grey50")
        self.query_one("#compare-kernels-bar", Static).update(bar)
        if ka is None or kb is None:
            missing = [f"#{i + 1}" for i, k in ((self.left, ka), (self.right, kb)) if k is None]
            self.drop_document("compare-diff")
            view.set_document([text_block(Text(f"no kernel in {' and '.join(missing)}: nothing to diff",
                                               style="grey50"))])
            return
        if not rebuild:
            return
        split = self.split and (self.size.width or 160) >= SPLIT_MIN_WIDTH  # else unified: halves too narrow

        def build() -> list:
            kernel_stats(ka, kb)  # fills the cache the bar reads
            return diff_blocks(ka, kb, split)

        self.build_document("compare-diff", (ka.sha1, kb.sha1, split), build)

    def on_resize(self) -> None:
        if self.loaded and (self.split or self.turn_opts.split):
            self.call_after_refresh(self._refresh_kernels)
            self.call_after_refresh(self._refresh_turns)

    def document_built(self, target: str, key: object, blocks: list) -> None:
        super().document_built(target, key, blocks)
        if target == "compare-diff":  # its diff sizes are known now: the bar again
            self._refresh_kernels(rebuild=False)
