"""The sweep search screen (``F`` in ``ktui runs``): every hit of a pattern as a row.

Type a pattern, ``enter`` searches (a worker runs :func:`ktui.trace.search.search` over the
sweep and posts hits as it finds them); the rows are run, turn, field and excerpt. On a row,
``enter`` opens the replay at the hit's turn with the pattern already searched. ``/`` goes back
to the pattern, ``escape`` closes the screen (a running search stops).

A pattern that starts with ``re:`` is a regular expression; anything else is literal text
(smart case, like ``ktui search``). Trace text reaches the table only as sanitized plain text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from ktui.trace.search import Hit, Matcher, PatternError, SearchStats, search
from ktui.trace.words import count
from ktui.tui.keys import Key
from ktui.tui.screens.base import KtuiScreen
from ktui.tui.screens.sweep_messages import SearchFinished, SearchHits, SearchProgress
from ktui.view.text import one_line

MAX_ROWS = 5000  # hits shown in the app (a search past this stops and says so)
FLUSH = 25  # hits per batch posted to the table


def matcher_for(text: str) -> Matcher:
    """``re:PATTERN`` is a regex, anything else literal text."""
    if text.startswith("re:"):
        return Matcher(text[3:], regex=True)
    return Matcher(text)


def _middle(s: str, n: int) -> str:
    """``s`` cut to ``n`` characters from the middle (both ends of a trace path say something)."""
    if len(s) <= n:
        return s
    keep = n - 1
    return s[: keep // 2] + "…" + s[len(s) - (keep - keep // 2):]


def _middle_path(s: str, n: int) -> str:
    """A trace path whose file name other runs share, cut to ``n`` characters: the name kept (cut
    in its own middle past half the room), the folders cut in their middle so that the end of the
    last one stays. Runs laid out as ``<cell>/<uuid>/trace.jsonl`` differ only there: cut in the
    middle of the whole path every hit read ``l1_p10_…trace.jsonl``. (A name no other run has
    is cut like any path, :func:`_middle`: its end tells the runs apart.)"""
    head, sep, name = s.rpartition("/")
    if len(s) <= n or not sep:
        return _middle(s, n)
    max_name = max(8, n // 2)  # a name other runs share says little: the folders get half
    name_part = name if len(name) <= max_name else _middle(name, max_name)
    room = n - len(name_part) - 1
    if room < 5:
        return _middle(s, n)
    if len(head) > room:
        keep = room - 1
        head = head[: keep // 3] + "…" + head[len(head) - (keep - keep // 3):]
    return head + "/" + name_part


class SearchScreen(KtuiScreen):
    CONTENT = "#search-hits"
    HELP_TITLE = "ktui runs · search the sweep · keys"
    DEFAULT_CSS = """
    SearchScreen { layout: vertical; }
    #search-pattern { height: 1; border: none; padding: 0 1; }
    #search-pattern:focus { border: none; background: $boost; }
    #search-state { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    #search-hits { height: 1fr; }
    """
    KEYS = [
        Key("j,down", "next", "next / previous hit", label="j k / ↓ ↑", title="next hit"),
        Key("k,up", "prev", "", title="previous hit"),
        Key("enter", "go", "open the replay at the hit's turn", footer="open"),
        Key("slash", "search", "edit the pattern (re:PATTERN for a regex); enter searches", footer="pattern"),
        Key("escape", "back", "back to the runs (a running search stops)"),
    ]

    def __init__(self, root: str | Path, *, pattern: str = "", name: str | None = None,
                 names: Mapping[str, int] | None = None) -> None:
        super().__init__(name=name)
        self.root = Path(root)
        self.names = names or {}  # runs of the sweep by trace file name: a shared one is cut first
        self.initial = pattern
        self.hits: list[Hit] = []
        self.matcher: Matcher | None = None
        self.stats: SearchStats | None = None
        self.searching = False

    def compose(self) -> ComposeResult:
        yield Input(value=self.initial, placeholder="search every transcript, call, result and kernel "
                    "(re:PATTERN for a regex), enter", id="search-pattern")
        yield Static("", id="search-state")
        table = DataTable(id="search-hits", cursor_type="row", zebra_stripes=False)
        table.add_columns("run", "turn", "field", "excerpt")
        yield table
        yield Footer()

    def on_mount(self) -> None:  # KtuiScreen.on_mount runs too (Textual calls each class's handler)
        self._state(f"search {self.root}")
        if self.initial:
            self.start(self.initial)

    def focus_content(self) -> None:
        """The pattern until there is a search, then the hits."""
        if self.matcher is None:
            self.query_one("#search-pattern", Input).focus()
        else:
            self.query_one(DataTable).focus()

    # ---- searching ----------------------------------------------------------------------------
    def _state(self, text: str) -> None:
        self.query_one("#search-state", Static).update(Text(text))

    @on(Input.Submitted, "#search-pattern")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.start(event.value)

    def start(self, text: str) -> None:
        if not text.strip():
            self._state("type a pattern, then enter (re:PATTERN for a regex)")
            return
        try:
            matcher = matcher_for(text)
        except PatternError as exc:
            self._state(str(exc))
            self.notify(str(exc), severity="error", timeout=3, markup=False)
            return
        self.matcher = matcher
        self.hits = []
        self.query_one(DataTable).clear()
        self.searching = True
        self._state("searching…")
        self.focus_content()
        self._run(matcher)

    @work(thread=True, exclusive=True, group="sweep-search", exit_on_error=False, description="search the sweep")
    def _run(self, matcher: Matcher) -> None:
        worker = get_current_worker()
        st = SearchStats()
        batch: list[Hit] = []
        shown = 0

        def progress(s: SearchStats) -> None:
            self.post_message(SearchProgress(matcher, s.searched, s.files, s.hits))

        for h in search(self.root, matcher, stats=st, on_progress=progress, cancelled=lambda: worker.is_cancelled):
            if worker.is_cancelled:
                return
            batch.append(h)
            shown += 1
            if len(batch) >= FLUSH:
                self.post_message(SearchHits(matcher, batch))
                batch = []
            if shown >= MAX_ROWS:
                break
        if batch:
            self.post_message(SearchHits(matcher, batch))
        if not worker.is_cancelled:
            self.post_message(SearchFinished(matcher, st, shown >= MAX_ROWS))

    # ---- the worker's messages (handled on the UI thread) -----------------------------------------
    def on_search_progress(self, message: SearchProgress) -> None:
        message.stop()
        if self.searching and message.matcher is self.matcher:
            self._state(f"searching… {message.searched}/{count(message.files, 'trace')} · {count(message.hits, 'hit')}")

    def on_search_hits(self, message: SearchHits) -> None:
        message.stop()
        matcher, batch = message.matcher, message.batch
        if matcher is not self.matcher:
            return
        table = self.query_one(DataTable)
        width = self.size.width or 100
        run_w, before_w = max(16, width // 4), max(8, width // 8)
        for h in batch:
            self.hits.append(h)
            before = one_line(h.before)  # the hit is raw trace text: cleaned here, once
            before = before if len(before) <= before_w else "…" + before[len(before) - before_w + 1:]
            ex = Text(before)
            ex.append(one_line(h.match), style="bold reverse")
            ex.append(one_line(h.after))
            field = one_line(h.field + (f" {h.where}" if h.where else ""))
            run = one_line(h.run)
            shared = self.names.get(run.rpartition("/")[2], 0) > 1
            table.add_row(Text(_middle_path(run, run_w) if shared else _middle(run, run_w)), Text("seed" if h.turn is None else str(h.turn)),
                          Text(field), ex)

    def on_search_finished(self, message: SearchFinished) -> None:
        message.stop()
        matcher, st, capped = message.matcher, message.stats, message.capped
        if matcher is not self.matcher:
            return
        self.searching = False
        self.stats = st
        cap = f" (stopped at {MAX_ROWS}: narrow the pattern)" if capped else ""
        more = f" (+{st.more} more past the per-run limit)" if st.more else ""
        head = "no hits" if not self.hits else f"{count(len(self.hits), 'hit')} in {count(st.runs_hit, 'run')}"
        self._state(f"{head} · {count(st.files, 'trace')}, {st.parsed} parsed{more}{cap} · enter opens the hit's turn")

    # ---- keys -----------------------------------------------------------------------------------
    def action_next(self) -> None:
        self.query_one(DataTable).action_cursor_down()

    def action_prev(self) -> None:
        self.query_one(DataTable).action_cursor_up()

    def action_search(self) -> None:
        self.query_one("#search-pattern", Input).focus()

    def action_go(self) -> None:
        i = self.query_one(DataTable).cursor_row
        if not 0 <= i < len(self.hits):
            return
        self.open_hit(self.hits[i])

    @on(DataTable.RowSelected, "#search-hits")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_go()

    def open_hit(self, h: Hit) -> None:
        from ktui.tui.screens.replay import ReplayScreen

        self.app.push_screen(ReplayScreen(Path(h.real), turn=h.turn, search=self.matcher.rx if self.matcher else None))

    def action_back(self) -> None:
        if isinstance(self.focused, Input) and self.hits:
            self.focus_content()
            return
        self.workers.cancel_group(self, "sweep-search")
        self.app.pop_screen()
