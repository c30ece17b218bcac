"""The replay screen: step through a run turn by turn, watch the kernel evolve, follow a live trace.

Layout: the run header on top; the turn list on the left; on the right the panes
Turn / Kernels / Metrics / Reference / Events.

All file I/O (loading, following, reading raw event lines, writing a kernel) and the run-wide
search happen in thread workers; results come back as messages; worker errors are reported in
one place (:meth:`ReplayScreen.worker_failed`, then :func:`ktui.tui.errors.report`). Widgets only render.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Footer, TabbedContent, TabPane
from textual.worker import get_current_worker

from ktui.trace.model import ERROR, FAILED, MISSING, Event, KernelVersion, Run, Turn
from ktui.tui.follow import Snapshot, feed
from ktui.tui.keys import DOC_SCROLL_KEYS, Key, pane_keys
from ktui.tui.screens.base import KtuiScreen
from ktui.tui.widgets.documents import (
    ViewOptions,
    empty_run_document,
    events_document,
    kernel_document,
    kernel_stats,
    metrics_document,
    n_lines,
    raw_lines_text,
    reference_document,
    turn_document,
    turn_view,
)
from ktui.tui.widgets.docview import DocView, Match
from ktui.tui.widgets.header import RunHeader
from ktui.tui.widgets.kernels import KernelsPane
from ktui.tui.widgets.prompt import PromptScreen
from ktui.tui.widgets.searchbar import SearchBar, SearchInput
from ktui.tui.widgets.turnlist import TurnList

PANE_IDS = ("turn", "kernels", "metrics", "reference", "events")
BAD = (FAILED, ERROR, MISSING)
FOLLOW_INTERVAL = 0.25  # seconds between polls of a followed trace
SWITCH_INTERVAL = sys.getswitchinterval()
LOADING_SWITCH_INTERVAL = 0.0005  # seconds a thread holds the interpreter lock while the rest of a file is read
EVENTS_LIMIT = 2000  # raw events shown at once for traces without turns
SIDE_WIDTH, SIDE_NARROW, SIDE_MIN, SIDE_MAX = 46, 30, 16, 90  # the turn list's width: default, on
# terminals under 130 columns, bounds of - / +
SPLIT_MIN_WIDTH = 90  # a side-by-side diff below this pane width falls back to unified


# ---- messages from workers --------------------------------------------------------------------
@dataclass
class Loaded(Message):
    run: Run
    complete: bool = True  # False: the run of the file's first lines (the rest is being read)


@dataclass
class Followed(Message):
    """A snapshot from the follow worker (``feed``: which start of follow mode it belongs to)."""

    feed: int
    snapshot: Snapshot


@dataclass
class EventsRead(Message):
    key: int | None  # turn index (None: all events)
    events: list[Event]
    raws: list[str]


@dataclass
class SearchDone(Message):
    regex: re.Pattern[str]
    turns: list[int]  # turns with at least one match, in order
    total: int


@dataclass
class PagerText(Message):
    text: str  # the turn's raw lines, made safe


@dataclass
class StatsReady(Message):
    pass


@dataclass
class FindingsReady(Message):
    """The run's flags with the static findings of its kernel versions (computed in a worker)."""

    run: Run
    flags: list


@dataclass
class Written(Message):
    path: str
    label: str


# ---- search: over exactly what the turn document shows ---------------------------------------------
def turn_search_text(run: Run, t: Turn) -> Iterator[str]:
    """The lines of turn ``t`` as its document shows them (unfolded): each hit is counted once."""
    yield from turn_view(run, t).plain_lines(expanded=True)


def count_matches(regex: re.Pattern[str], lines: Iterable[str]) -> int:
    """Non-empty matches per line, as :meth:`DocView.find` counts them."""
    return sum(1 for s in lines for m in regex.finditer(s) if m.end() > m.start())


def compile_search(pattern: str) -> re.Pattern[str]:
    """Smart case: case-insensitive unless the pattern has an upper-case letter."""
    flags = re.MULTILINE
    if not any(ch.isupper() for ch in pattern):
        flags |= re.IGNORECASE
    return re.compile(pattern, flags)


def _suffix_first_turns(run: Run) -> list[float]:
    """``out[j]``: the smallest first turn of kernels[j:] (versions without one count as after
    every turn); it never decreases with ``j``."""
    out: list[float] = [0.0] * len(run.kernels)
    low = float("inf")
    for j in range(len(run.kernels) - 1, -1, -1):
        ft = run.kernels[j].first_turn
        low = min(low, ft if ft is not None else float("inf"))
        out[j] = low
    return out


def latest_kernel_by_turn(run: Run, i: int) -> int | None:
    """The number of the last version (in version order) that first appeared at or before turn
    ``i``; None when none did. A bisection over a table built once per state of the run."""
    low = run.lookup("kernel_first_turns", _suffix_first_turns)
    j = bisect.bisect_right(low, i) - 1  # low[j] <= i < low[j + 1]: kernels[j] is that version
    return run.kernels[j].number if j >= 0 else None


def neighbour_failed_turn(run: Run, i: int, direction: int) -> int | None:
    """The first failed turn after turn ``i`` (``direction`` 1) or the last one before it (-1);
    None when there is none. A bisection over the failed turns, found once per state of the run."""
    bad = run.lookup("failed_turns", lambda r: [t.index for t in r.turns if t.status in BAD])
    if direction > 0:
        j = bisect.bisect_right(bad, i)
        return bad[j] if j < len(bad) else None
    j = bisect.bisect_left(bad, i)
    return bad[j - 1] if j > 0 else None


class ReplayScreen(KtuiScreen):
    """Replay one trace. ``follow=True`` tails a trace that is still being written."""

    PANES = (("turn", "Turn"), ("kernels", "Kernels"), ("metrics", "Metrics"), ("reference", "Reference"),
             ("events", "Events"))
    TABS = "panes"
    HELP_TITLE = "ktui replay · keys"
    KEYS = [
        Key("j,down", "next", "next / previous turn (in Kernels: version)", label="j k / ↓ ↑", title="next turn"),
        Key("k,up", "prev", "", title="previous turn"),
        Key("g,home", "first", "first / last turn", label="g G / home end", title="first turn"),
        Key("G,end", "last", "", title="last turn"),
        Key("n", "next_failed", "next / previous failed turn; with a search in force, next / previous match",
            footer="next failed", label="n / N", title="next failed turn (or match)"),
        Key("N", "prev_failed", "", title="previous failed turn (or match)"),
        *pane_keys(PANES),
        Key("d", "toggle_diff", "diff on / off (the kernel against the previous version)", footer="diff"),
        Key("s", "toggle_split", "unified / side-by-side diff", footer="split"),
        Key("m", "mark", "Kernels: mark the selected version as the diff base (any two versions)"),
        Key("u", "unmark", "Kernels: clear the diff base"),
        Key("e", "toggle_fold", "expand / fold long blocks (outputs, prompts, code)"),
        Key("T", "pager", "the turn's raw trace lines in $PAGER"),
        Key("slash", "search", "search (regex over the turn's text, code and results)", footer="search"),
        Key("enter", "go", "next / previous match (N works in tmux, where shift+enter does not)",
            label="enter / shift+enter", title="next match"),
        Key("shift+enter", "prev_match", "", title="previous match"),
        Key("f", "toggle_follow", "follow mode (the trace is still being written)"),
        Key("y", "copy_kernel", "copy the selected kernel to the clipboard (OSC 52)"),
        Key("w", "write_kernel", "write the selected kernel to a file"),
        Key("r", "repro", "re-execute the selected kernel (repro panel)"),
        Key("A", "label", "label the turn (Kernels pane: the selected version; 'run LABEL': the run), with a note; "
            "kept outside the trace, as `ktui label`"),
        *DOC_SCROLL_KEYS,
        Key("z", "zen", "zen: hide / show the turn list", footer="zen"),
        Key("minus", "side_width(-4)", "narrower / wider turn list", label="- / +"),
        Key("plus,equals_sign", "side_width(4)", "", title="wider turn list"),
        Key("escape", "back", "close the search; clear the diff base; back to the previous screen"),
    ]

    def __init__(self, path: str | Path, *, follow: bool = False, name: str | None = None, turn: int | None = None,
                 search: re.Pattern[str] | None = None):
        super().__init__(name=name)
        self.path = Path(path)
        self._start = (turn, search)  # open at this turn, with this search run (a sweep search's hit)
        self.run: Run | None = None
        self.follow = follow
        self._feed = 0  # bumps each time follow mode starts: older feeds' snapshots are dropped
        self._feed_gen = 0  # the newest snapshot generation shown from the current feed
        self.turn_index = 0
        self.kernel_number: int | None = None
        self.base_number: int | None = None
        self.opts = ViewOptions()
        self._stale: set[str] = set(PANE_IDS)
        self._events_key: object = object()
        # search state
        self._regex: re.Pattern[str] | None = None
        self._search_turns: list[int] = []
        self._search_total = 0
        self._doc_matches: list[Match] = []
        self._match_pos = -1
        self.ready = False  # set once the run is shown (tests and benchmarks wait on it)
        self.partial = False  # the run shown is the file's first part; the rest is being read
        self.complete = False  # the whole file is read and shown
        self._gen = 0  # bumps whenever the run changes (follow): invalidates cached documents
        self._stats_gen = 0  # bumps when the kernel diff sizes are ready
        self._docs: OrderedDict[tuple, list] = OrderedDict()  # recent turn documents
        self._split_shown = False  # whether the last diff was drawn side by side
        self._side_set = False  # the user chose the turn list's width (- / +)
        self._turn_keep = False  # keep_scroll of the turn document being built in a worker
        self._pending_jump: tuple[int, list[int] | None] | None = None  # (direction, turns left) of a search jump

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunHeader(Text(f"loading {self.path.name}…", style="grey62"), id="header")
        with Horizontal(id="body"):
            yield TurnList(id="turns")
            with TabbedContent(id="panes", initial="turn"):
                with TabPane("1 Turn", id="turn"):
                    yield DocView(id="turn-doc")
                with TabPane("2 Kernels", id="kernels"):
                    yield KernelsPane(id="kernels-pane")
                with TabPane("3 Metrics", id="metrics"):
                    yield DocView(id="metrics-doc")
                with TabPane("4 Reference", id="reference"):
                    yield DocView(id="reference-doc")
                with TabPane("5 Events", id="events"):
                    yield DocView(id="events-doc")
        yield SearchBar(id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = str(self.path)
        self._fit_side()
        if self.follow:
            self._start_follow()
        else:
            self._load()

    # ---- workers ------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self) -> None:
        """A big file: its first turns are shown at once, the whole run when it is read; the
        static findings are computed after the first paint."""
        from ktui.trace.reader import load_stages

        try:
            for run, complete in load_stages(self.path, findings=False):
                self.post_message(Loaded(run, complete))
                if not complete:  # reading on holds the interpreter lock: hand it to the UI thread
                    # sooner (the default, 5 ms per hand-over and many a frame, makes keys sluggish)
                    sys.setswitchinterval(LOADING_SWITCH_INTERVAL)
        finally:
            sys.setswitchinterval(SWITCH_INTERVAL)

    def _start_follow(self) -> None:
        self._feed += 1
        self._feed_gen = 0
        self._follow(self._feed)

    @work(thread=True, exclusive=True, group="follow", exit_on_error=False, description="follow the trace")
    def _follow(self, feed_id: int) -> None:
        """The follower lives in this thread; the screen only ever gets immutable snapshots."""
        worker = get_current_worker()
        for snap in feed(self.path, interval=FOLLOW_INTERVAL, cancelled=lambda: worker.is_cancelled):
            self.post_message(Followed(feed_id, snap))

    @work(thread=True, exclusive=True, group="events", exit_on_error=False, description="read raw events")
    def _read_events(self, key: int | None, events: list[Event]) -> None:
        from ktui.trace.reader import read_raw_line

        raws = [read_raw_line(self.path, ev) for ev in events]
        self.post_message(EventsRead(key, events, raws))

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, regex: re.Pattern[str], run: Run) -> None:
        turns: list[int] = []
        total = 0
        for t in run.turns:
            n = count_matches(regex, turn_search_text(run, t))
            if n:
                turns.append(t.index)
                total += n
        self.post_message(SearchDone(regex, turns, total))

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False, description="kernel diff sizes")
    def _compute_stats(self, kernels: list[KernelVersion]) -> None:
        """Diff sizes of successive versions (the Kernels table's column), off the UI thread."""
        for prev, k in zip(kernels, kernels[1:], strict=False):
            kernel_stats(prev, k)
        self.post_message(StatsReady())

    @work(thread=True, exclusive=True, group="findings", exit_on_error=False, description="static findings")
    def _compute_findings(self, run: Run) -> None:
        """The static findings of every kernel version (an AST walk each), off the UI thread and
        after the first paint; the header and the Metrics pane show them when they arrive."""
        from ktui.trace.flags import with_findings

        self.post_message(FindingsReady(run, with_findings(run)))

    def on_findings_ready(self, msg: FindingsReady) -> None:
        run = msg.run
        run.flags = msg.flags
        run.findings_pending = False
        if run is not self.run:
            return  # a newer snapshot (follow mode) came meanwhile
        self.query_one(RunHeader).show_run(run, following=self.follow)
        if self.active_pane == "metrics":
            self._render_pane("metrics", keep_scroll=True)
        else:
            self._stale.add("metrics")

    def on_stats_ready(self, _msg: StatsReady) -> None:
        self._stats_gen += 1
        if self.active_pane == "kernels":
            self._render_pane("kernels", keep_scroll=True)
        else:
            self._stale.add("kernels")

    @work(thread=True, exclusive=False, group="write", exit_on_error=False, description="write a kernel")
    def _write(self, path: str, code: str, label: str) -> None:
        p = Path(path).expanduser()
        if p.exists():
            raise FileExistsError(f"{p} exists; not overwritten")
        p.write_text(code, encoding="utf-8")
        self.post_message(Written(str(p), label))

    def worker_failed(self, group: str, error: BaseException) -> None:
        if group == "load":
            self.query_one(RunHeader).show_message(f"cannot open {self.path}: {error}", "bold red")
        super().worker_failed(group, error)

    # ---- run display --------------------------------------------------------------------------
    def on_loaded(self, msg: Loaded) -> None:
        if self.follow and self._feed:  # follow mode started meanwhile: its snapshots win
            return
        self.partial = not msg.complete
        self._show_run(msg.run, first=self.run is None)
        if msg.complete:
            self.complete = True

    def on_followed(self, msg: Followed) -> None:
        snap = msg.snapshot
        if msg.feed != self._feed or not self.follow or snap.generation <= self._feed_gen:
            return  # an older feed, follow mode turned off, or an older snapshot
        self._feed_gen = snap.generation
        self.partial = False  # follow mode's snapshots replace a staged load
        if self.run is None:
            self._show_run(snap.run, first=True)
        elif snap.reset:
            self._reset_to(snap.run)
        else:
            self._grown(snap.run)

    def _show_run(self, run: Run, *, first: bool) -> None:
        self.run = run
        self._gen += 1
        self._stale = set(PANE_IDS)
        self._refresh_all(first=first)
        turn, regex = self._start
        if not self.partial and (turn is not None or regex is not None):  # once, on the whole run
            self._start = (None, None)
            if turn is not None:
                self._goto_turn(turn)
            if regex is not None:
                self.query_one(SearchBar).set_status("searching…")
                self._search(regex, run)
        self.ready = True
        freeze = getattr(self.app, "freeze_heap", None)
        if callable(freeze):
            self.call_after_refresh(freeze)

    def _reset_to(self, run: Run) -> None:
        """The followed file was truncated or replaced: its new content, from the start."""
        self.turn_index = 0
        self.kernel_number = None
        self.base_number = None
        self._docs.clear()
        if self._regex is not None:
            self._clear_search()
        self.query_one(TurnList).set_turns([], reset=True)
        self._show_run(run, first=True)
        self.notify("the file was truncated or replaced: showing its new content", timeout=3)

    def _refresh_all(self, first: bool = False) -> None:
        run = self.run
        if run is None:
            return
        if len(run.kernels) > 1 and not self.partial:  # after this frame: not competing with the first paint
            self.call_after_refresh(self._compute_stats, list(run.kernels))
        if run.findings_pending and not self.partial:
            self.call_after_refresh(self._compute_findings, run)
        self.query_one(RunHeader).show_run(run, following=self.follow, loading=self.partial)
        tl = self.query_one(TurnList)
        tl.set_turns(run.turns)
        if first:
            self.turn_index = 0
            if run.turns:
                tl.move_cursor(row=0)
        self._select_kernel_for_turn()
        self._render_active(keep_scroll=not first)

    def _grown(self, run: Run) -> None:
        """A newer snapshot of the followed run (it grew): keep the user's place, or stay at the end."""
        tl = self.query_one(TurnList)
        at_end = self.turn_index >= tl.row_count - 1
        old_rows = tl.row_count
        self.run = run
        self._gen += 1
        self.query_one(RunHeader).show_run(run, following=self.follow)
        tl.set_turns(run.turns)
        self._stale = set(PANE_IDS)
        if len(run.kernels) > 1:
            self._compute_stats(list(run.kernels))
        if run.turns and (at_end or old_rows == 0) and len(run.turns) > old_rows:
            self._goto_turn(len(run.turns) - 1)  # at the end: stay at the end
        else:
            self.turn_index = min(self.turn_index, max(0, len(run.turns) - 1))
            self._select_kernel_for_turn()
            self._render_active(keep_scroll=True)

    def _render_active(self, keep_scroll: bool = False) -> None:
        pane = self.active_pane
        self._render_pane(pane, keep_scroll=keep_scroll)

    def _render_pane(self, pane: str, keep_scroll: bool = False) -> None:
        run = self.run
        if run is None:
            return
        self._stale.discard(pane)
        if pane == "turn":
            self._render_turn(keep_scroll)
        elif pane == "kernels":
            self._render_kernels()
        elif pane == "metrics":
            self.query_one("#metrics-doc", DocView).set_document(metrics_document(run), keep_scroll=keep_scroll)
        elif pane == "reference":
            self.query_one("#reference-doc", DocView).set_document(reference_document(run),
                                                                   keep_scroll=keep_scroll)
        elif pane == "events":
            self._request_events()

    def _pane_width(self) -> int:
        w = self.query_one("#panes").size.width
        if w:
            return w
        side = 0 if self.has_class("-zen") else self.query_one(TurnList).outer_size.width or SIDE_WIDTH
        return max(0, self.size.width - side)

    def _split(self) -> bool:
        """Side by side when asked and there is room for it (else unified: two halves of 25
        columns read worse than one diff)."""
        return self.opts.split and self._pane_width() >= SPLIT_MIN_WIDTH

    def on_resize(self) -> None:
        self._fit_side()
        self.call_after_refresh(self._layout_changed)

    def _fit_side(self) -> None:
        """The turn list's default width: narrower on small terminals (until - / + set one)."""
        if self._side_set:
            return
        width = SIDE_WIDTH if self.size.width >= 130 else SIDE_NARROW
        self.query_one(TurnList).styles.width = width

    def _layout_changed(self) -> None:
        """The panes' width changed (terminal, zen, - / +): a split diff may no longer fit."""
        if not self.opts.split or self.run is None:
            return
        split = self._split()
        if split != self._split_shown:
            self._split_shown = split
            self._stale |= {"turn", "kernels"}
            self.call_after_refresh(self._render_active, True)

    def _render_kernels(self) -> None:
        """The version table at once; the document too, unless it is a diff (built in a worker)."""
        run = self.run
        assert run is not None
        kp = self.query_one(KernelsPane)
        kp.show_table(run, self.kernel_number, base=self.base_number, generation=(self._gen, self._stats_gen))
        k = run.kernel(self.kernel_number) if self.kernel_number else None
        b = run.kernel(self.base_number) if self.base_number else None
        split = self._split()
        build = partial(kernel_document, run, k, b, diff=self.opts.diff, split=split)
        if self.opts.diff and k is not None:
            key = (self._gen, k.number, b.number if b else None, split)
            if not (self.document_pending("kernel-doc") and self._doc_wanted["kernel-doc"] == key):
                self.build_document("kernel-doc", key, build)
        else:
            self.drop_document("kernel-doc")
            kp.show_document(build())

    def _render_turn(self, keep_scroll: bool = False) -> bool:
        """Show the selected turn; False when its document (a diff) is being built in a worker."""
        run = self.run
        assert run is not None
        doc = self.query_one("#turn-doc", DocView)
        if not run.turns:
            self.drop_document("turn-doc")
            doc.set_document(empty_run_document(run), keep_scroll=keep_scroll)
            return True
        i = min(self.turn_index, len(run.turns) - 1)
        opts = replace(self.opts, split=self._split())
        key = (i, opts.key(), self._gen)
        blocks = self._docs.get(key)
        if blocks is None and opts.diff:  # diffs: off the UI thread
            self._turn_keep = keep_scroll
            self.build_document("turn-doc", key, partial(turn_document, run, run.turns[i], opts))
            return False
        if blocks is None:
            blocks = turn_document(run, run.turns[i], opts)
            self._remember(key, blocks)
        else:
            self._docs.move_to_end(key)
        self.drop_document("turn-doc")
        self._show_turn_blocks(blocks, keep_scroll)
        return True

    def _remember(self, key: tuple, blocks: list) -> None:
        self._docs[key] = blocks
        while len(self._docs) > 32:
            self._docs.popitem(last=False)

    def _show_turn_blocks(self, blocks: list, keep_scroll: bool) -> None:
        doc = self.query_one("#turn-doc", DocView)
        doc.set_document(blocks, keep_scroll=keep_scroll)
        if self._regex is not None:
            self._doc_matches = doc.find(self._regex)
            self._match_pos = -1
            doc.set_highlight(self._regex)
        pending, self._pending_jump = self._pending_jump, None
        if pending is not None and self._regex is not None:  # a search jump waited for this turn
            direction, order = pending
            if self._doc_matches:
                self._match_pos = -1 if direction > 0 else len(self._doc_matches)
                self._step_match(direction)
            else:
                self._jump_turn_match(direction, order)

    def document_built(self, target: str, key: object, blocks: list) -> None:
        if target == "turn-doc":
            self._remember(key, blocks)  # type: ignore[arg-type]
            self._show_turn_blocks(blocks, self._turn_keep)
        elif target == "kernel-doc":
            self.query_one(KernelsPane).show_document(blocks)
        else:
            super().document_built(target, key, blocks)

    def _turn_events(self, run: Run) -> tuple[int | None, list[Event]]:
        """The current turn's events (all events, up to a limit, for a run without turns)."""
        if not run.turns:
            return None, run.events[:EVENTS_LIMIT]
        t = run.turns[min(self.turn_index, len(run.turns) - 1)]
        lines = run.events.lines
        return t.index, run.events[bisect.bisect_left(lines, t.first_line):bisect.bisect_right(lines, t.last_line)]

    def action_pager(self) -> None:
        if self.run is not None:
            self._read_for_pager(self._turn_events(self.run)[1])

    @work(thread=True, exclusive=True, group="pager", exit_on_error=False, description="read raw lines")
    def _read_for_pager(self, events: list[Event]) -> None:
        from ktui.trace.reader import read_raw_line

        self.post_message(PagerText(raw_lines_text(events, [read_raw_line(self.path, ev) for ev in events])))

    def on_pager_text(self, msg: PagerText) -> None:
        import os
        import shlex
        import subprocess

        from textual.app import SuspendNotSupported

        cmd = shlex.split(os.environ.get("PAGER") or "less")
        try:
            with self.app.suspend():
                subprocess.run(cmd, input=msg.text.encode("utf-8", "replace"), check=False)
        except SuspendNotSupported:
            self.notify("no terminal to hand over to $PAGER here", severity="warning", timeout=3)
        except OSError as exc:
            self.notify(f"$PAGER ({cmd[0] if cmd else ''}): {exc.strerror or exc}", severity="error", timeout=4)

    def _request_events(self) -> None:
        run = self.run
        if run is None:
            return
        if run.turns:
            i = min(self.turn_index, len(run.turns) - 1)
            key: int | None = i
            t = run.turns[i]
            lines = run.events.lines
            events = run.events[bisect.bisect_left(lines, t.first_line):bisect.bisect_right(lines, t.last_line)]
        else:
            key = None
            events = run.events[:EVENTS_LIMIT]
        self._events_key = key
        self._read_events(key, events)

    def on_events_read(self, msg: EventsRead) -> None:
        if msg.key != self._events_key:
            return  # the selection moved on
        if msg.key is None:
            title = f"all events ({len(msg.events)} shown)"
        else:
            title = f"raw events of turn {msg.key} ({len(msg.events)}), read from the file by offset"
        self.query_one("#events-doc", DocView).set_document(events_document(msg.events, msg.raws, title))

    # ---- selection ----------------------------------------------------------------------------
    @on(TurnList.Clicked)
    def _turn_clicked(self, event: TurnList.Clicked) -> None:
        """A row chosen with the mouse (keys select turns through :meth:`_goto_turn`)."""
        self._goto_turn(event.index)

    @on(DataTable.RowHighlighted, "#kernel-table")
    def _kernel_highlighted(self, event: DataTable.RowHighlighted) -> None:
        n = event.cursor_row + 1
        if self.run is None or n == self.kernel_number or not (1 <= n <= len(self.run.kernels)):
            return
        self.kernel_number = n
        if self.active_pane == "kernels":
            self._render_pane("kernels")

    def _select_kernel_for_turn(self) -> None:
        run = self.run
        if run is None or not run.kernels:
            self.kernel_number = None
            return
        if not run.turns:
            self.kernel_number = run.kernels[-1].number
            return
        i = min(self.turn_index, len(run.turns) - 1)
        t = run.turns[i]
        for c in reversed(t.calls):
            if c.kernel is not None:
                self.kernel_number = c.kernel
                return
        best = latest_kernel_by_turn(run, i)
        self.kernel_number = best or run.kernels[0].number

    def _goto_turn(self, i: int) -> None:
        """Select turn ``i``: the turn view is rebuilt right here, in the same frame as the cursor
        move (not on the DataTable's RowHighlighted round trip, which costs a frame)."""
        run = self.run
        if run is None or not run.turns:
            return
        i = max(0, min(i, len(run.turns) - 1))
        tl = self.query_one(TurnList)
        if i == self.turn_index and i == tl.cursor_row:
            if self.active_pane in self._stale:
                self._render_active(keep_scroll=True)
            return
        self._select_turn(i)
        tl.move_cursor(row=i)

    def _select_turn(self, i: int) -> None:
        self._pending_jump = None  # the user moved: a search jump waiting for a document is off
        self.turn_index = i
        self._select_kernel_for_turn()
        self._stale = set(PANE_IDS) - {"metrics", "reference"} | (self._stale & {"metrics", "reference"})
        self._render_active()

    def _goto_kernel(self, n: int) -> None:
        run = self.run
        if run is None or not run.kernels:
            return
        n = max(1, min(n, len(run.kernels)))
        self.kernel_number = n
        self._render_pane("kernels")

    @on(TabbedContent.TabActivated, "#panes")
    def _pane_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self.active_pane
        if pane in self._stale:
            self._render_pane(pane)

    # ---- actions: navigation ------------------------------------------------------------------
    def action_next(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel((self.kernel_number or 0) + 1)
        else:
            self._goto_turn(self.turn_index + 1)

    def action_prev(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel((self.kernel_number or 2) - 1)
        else:
            self._goto_turn(self.turn_index - 1)

    def action_first(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel(1)
        else:
            self._goto_turn(0)

    def action_last(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel(len(self.run.kernels) if self.run else 1)
        elif self.run is not None:
            self._goto_turn(len(self.run.turns) - 1)

    def action_next_failed(self) -> None:
        if self._regex is not None:  # a search in force: n / N step its matches (as in less and vim)
            self.action_next_match()
            return
        i = neighbour_failed_turn(self.run, self.turn_index, 1) if self.run is not None else None
        if i is not None:
            self._show_turn_pane()
            self._goto_turn(i)
        else:
            self.notify("no failed turn after this one", timeout=2)

    def action_prev_failed(self) -> None:
        if self._regex is not None:  # shift+enter never reaches the app in tmux: N does
            self.action_prev_match()
            return
        i = neighbour_failed_turn(self.run, self.turn_index, -1) if self.run is not None else None
        if i is not None:
            self._show_turn_pane()
            self._goto_turn(i)
        else:
            self.notify("no failed turn before this one", timeout=2)

    def _show_turn_pane(self) -> None:
        tc = self.query_one("#panes", TabbedContent)
        if tc.active != "turn":
            tc.active = "turn"

    def pane_shown(self, pane: str) -> None:
        if pane in self._stale:
            self._render_pane(pane)

    # ---- actions: layout ------------------------------------------------------------------------
    def action_zen(self) -> None:
        """Hide / show the turn list (the panes take the whole width)."""
        self.toggle_class("-zen")
        self.call_after_refresh(self._layout_changed)

    def action_side_width(self, delta: int) -> None:
        tl = self.query_one(TurnList)
        if self.has_class("-zen"):
            self.remove_class("-zen")
        width = tl.outer_size.width or SIDE_WIDTH
        self._side_set = True
        tl.styles.width = max(SIDE_MIN, min(SIDE_MAX, width + delta, max(SIDE_MIN, self.size.width - 40)))
        self.call_after_refresh(self._layout_changed)

    def _active_doc(self) -> DocView:
        pane = self.active_pane
        if pane == "kernels":
            return self.query_one("#kernel-doc", DocView)
        return self.query_one(f"#{pane}-doc", DocView)

    def action_scroll_page(self, direction: int) -> None:
        doc = self._active_doc()
        h = max(1, doc.scrollable_content_region.height - 2)
        doc.scroll_to(y=doc.scroll_y + direction * h, animate=False)

    def action_scroll_sideways(self, n: int) -> None:
        self._active_doc().scroll_sideways(n)

    def action_toggle_wrap(self) -> None:
        wrap = not self._active_doc().wrap_code
        for view in self.query(DocView):
            view.set_wrap(wrap)
        self.notify("long lines of code and diffs: " + ("folded" if wrap else "cut (H / L scroll sideways)"),
                    timeout=2)

    def action_scroll_lines(self, n: int) -> None:
        doc = self._active_doc()
        doc.scroll_to(y=doc.scroll_y + n, animate=False)

    # ---- actions: diffs -----------------------------------------------------------------------
    def action_toggle_diff(self) -> None:
        self.opts.diff = not self.opts.diff
        self._stale |= {"turn", "kernels"}
        self._render_active(keep_scroll=self.active_pane == "turn")

    def action_toggle_split(self) -> None:
        self.opts.split = not self.opts.split
        if not self.opts.diff:
            self.opts.diff = True
        self._split_shown = self._split()
        if self.opts.split and not self._split_shown:
            self.notify(f"side by side needs {SPLIT_MIN_WIDTH} columns for the diff: unified shown "
                        "(z hides the turn list, - narrows it)", timeout=4)
        self._stale |= {"turn", "kernels"}
        self._render_active(keep_scroll=self.active_pane == "turn")

    def action_toggle_fold(self) -> None:
        self.opts.expand = not self.opts.expand
        self._stale |= {"turn"}
        self._render_active(keep_scroll=self.active_pane == "turn")

    def action_mark(self) -> None:
        if self.run is None or self.kernel_number is None:
            return
        if self.active_pane != "kernels":
            self.action_pane("kernels")
        if self.base_number == self.kernel_number:
            self.action_unmark()
            return
        self.base_number = self.kernel_number
        self.opts.diff = True
        self.notify(f"diff base: v{self.base_number} (select another version to compare)", timeout=3)
        self._stale |= {"kernels"}
        self._render_pane("kernels")

    def action_unmark(self) -> None:
        if self.base_number is None:
            return
        self.base_number = None
        self.notify("diff base cleared: diffs are against the previous version", timeout=2)
        self._stale.add("kernels")
        self._render_active(keep_scroll=True)

    # ---- actions: search ----------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one(SearchBar).open()

    @on(SearchInput.Submitted, "#search-input")
    def _search_submitted(self, event: SearchInput.Submitted) -> None:
        pattern = event.value
        if not pattern:
            self._clear_search()
            return
        try:
            regex = compile_search(pattern)
        except re.error as exc:
            self.query_one(SearchBar).set_status("bad regex")
            self.notify(f"bad regex: {exc}", severity="error", timeout=3)
            return
        self.focus_content()
        self.query_one(SearchBar).set_status("searching…")
        if self.run is not None:
            self._search(regex, self.run)

    def on_search_done(self, msg: SearchDone) -> None:
        self._regex = msg.regex
        self.opts.search = msg.regex  # folded blocks with a hit are shown unfolded
        self._search_turns = msg.turns
        self._search_total = msg.total
        bar = self.query_one(SearchBar)
        if not msg.turns:
            bar.set_status("no match")
            self.query_one("#turn-doc", DocView).set_highlight(None)
            self._doc_matches = []
            return
        self._show_turn_pane()
        self._render_turn(keep_scroll=True)  # with the search set, folded blocks with a hit open
        if self.document_pending("turn-doc"):  # the turn's diff is still being built: go on then
            self._pending_jump = (1, None)
            return
        doc = self.query_one("#turn-doc", DocView)
        self._doc_matches = doc.find(msg.regex)
        doc.set_highlight(msg.regex)
        self._match_pos = -1
        if self.turn_index in msg.turns and self._doc_matches:
            self._step_match(1)
        else:
            self._jump_turn_match(1)

    def _clear_search(self) -> None:
        self._regex = None
        self.opts.search = None
        self._search_turns = []
        self._doc_matches = []
        self._match_pos = -1
        self.query_one("#turn-doc", DocView).set_highlight(None)
        bar = self.query_one(SearchBar)
        bar.set_status("")
        bar.close()
        self.focus_content()

    @on(SearchInput.Cancelled)
    def _search_cancelled(self) -> None:
        """``escape`` while typing: back to the content; the bar stays only for a search in force."""
        if self._regex is None:
            self._clear_search()
        else:
            self.query_one(SearchBar).input.value = self._regex.pattern
            self.focus_content()

    def _status(self) -> None:
        n = len(self._doc_matches)
        pos = self._match_pos + 1 if n else 0
        self.query_one(SearchBar).set_status(
            f"{pos}/{n} in turn {self.turn_index} · {len(self._search_turns)} turns · {self._search_total} hits"
            " · n / N")

    def _step_match(self, direction: int) -> None:
        doc = self.query_one("#turn-doc", DocView)
        n = len(self._doc_matches)
        nxt = self._match_pos + direction
        if 0 <= nxt < n:
            self._match_pos = nxt
            m = self._doc_matches[nxt]
            doc.set_highlight(self._regex, m)
            doc.scroll_to_match(m)
            self._status()
            return
        self._jump_turn_match(direction)

    def _jump_turn_match(self, direction: int, order: list[int] | None = None) -> None:
        """To the first (or last) match of the next (previous) turn with one; a turn whose document
        is built in a worker resumes the jump when it arrives (:meth:`_show_turn_blocks`)."""
        turns = self._search_turns
        if not turns or self.run is None:
            return
        if order is None:
            cur = self.turn_index
            order = [i for i in turns if i > cur] + [i for i in turns if i <= cur] if direction > 0 else \
                [i for i in reversed(turns) if i < cur] + [i for i in reversed(turns) if i >= cur]
        order = list(order)
        while order:
            i = order.pop(0)
            self.turn_index = i
            self._select_kernel_for_turn()
            self.query_one(TurnList).move_cursor(row=i)
            self._stale = set(PANE_IDS) - {"metrics", "reference", "turn"} | (self._stale & {"metrics", "reference"})
            self._pending_jump = None
            if not self._render_turn():
                self._pending_jump = (direction, order)
                return
            if self._doc_matches:
                self._match_pos = -1 if direction > 0 else len(self._doc_matches)
                self._step_match(direction)
                return
        self._status()

    def action_go(self) -> None:
        """enter: the next match of the search in force."""
        self.action_next_match()

    def action_next_match(self) -> None:
        if self._regex is None:
            return
        self._show_turn_pane()
        self._step_match(1)

    def action_prev_match(self) -> None:
        if self._regex is None:
            return
        self._show_turn_pane()
        self._step_match(-1)

    def action_back(self) -> None:
        bar = self.query_one(SearchBar)
        if bar.is_open or self._regex is not None:
            self._clear_search()
            return
        if self.base_number is not None:
            self.action_unmark()
            return
        self.leave()

    # ---- actions: follow, kernel export ---------------------------------------------------------
    def action_toggle_follow(self) -> None:
        if self.follow:
            self.follow = False
            self.workers.cancel_group(self, "follow")
            self.notify("follow mode off", timeout=1.5)
        else:
            self.follow = True
            self._start_follow()
            self.notify("following: new events appear as they are written", timeout=2)
        if self.run is not None:
            self.query_one(RunHeader).show_run(self.run, following=self.follow)

    def selected_kernel(self) -> KernelVersion | None:
        if self.run is None or self.kernel_number is None:
            return None
        return self.run.kernel(self.kernel_number)

    def action_copy_kernel(self) -> None:
        k = self.selected_kernel()
        if k is None or not k.code:
            self.notify("no kernel code to copy", severity="warning", timeout=2)
            return
        self.app.copy_to_clipboard(k.code)
        self.notify(f"copied {k.label} ({n_lines(k.code)} lines) to the clipboard (OSC 52)", timeout=3)

    def action_write_kernel(self) -> None:
        k = self.selected_kernel()
        if k is None or not k.code:
            self.notify("no kernel code to write", severity="warning", timeout=2)
            return
        default = f"kernel_{k.label}_{k.sha1[:8]}.py"

        def done(name: str | None) -> None:
            if name:
                self._write(name, k.code, k.label)

        self.app.push_screen(PromptScreen(f"write {k.label} to file:", default), done)

    def on_written(self, msg: Written) -> None:
        self.notify(f"wrote {msg.label} to {msg.path}", timeout=4)

    def action_label(self) -> None:
        from ktui.tui.labeling import Target, ask

        if self.run is None:
            return
        k = self.selected_kernel() if self.active_pane == "kernels" else None
        if k is not None:
            target = Target(self.path, "version", version=k.label, kernel_sha1=k.sha1)
        elif self.run.turns:
            target = Target(self.path, "turn", turn=self.turn_index)
        else:
            target = Target(self.path)
        ask(self, target, run_target=Target(self.path))

    def action_repro(self) -> None:
        if self.run is None:
            return
        from ktui.tui.screens.repro_panel import open_repro_panel  # loads the repro API only when asked

        k = self.selected_kernel()
        open_repro_panel(self, self.run, k.label if k else "final")
