"""The replay screen's run-wide search: a worker counts the matches per turn; n / N step through them."""

from __future__ import annotations

import re

from textual import work

from ktui.trace.model import Run
from ktui.trace.words import count
from ktui.tui.screens.replay_parts import (
    PANE_IDS,
    SearchDone,
    count_matches,
    turn_search_text,
)
from ktui.tui.widgets.docview import DocView
from ktui.tui.widgets.searchbar import SearchBar
from ktui.tui.widgets.turnlist import TurnList


class ReplaySearch:
    """Mixed into :class:`~ktui.tui.screens.replay.ReplayScreen` (its state, its widgets)."""

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

    def _status(self) -> None:
        n = len(self._doc_matches)
        pos = self._match_pos + 1 if n else 0
        self.query_one(SearchBar).set_status(
            f"{pos}/{n} in turn {self.turn_index} · {count(len(self._search_turns), 'turn')} · {count(self._search_total, 'hit')}"
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

    # ---- actions: search ----------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one(SearchBar).open()
