"""The search bar: a regex input docked at the bottom, with a match counter.

The input can take focus only while the bar is shown: a hidden input that keeps focus (or gets
it back when a modal closes) would swallow every key.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label


class SearchInput(Input):
    BINDINGS = [Binding("escape", "cancel", "close search", show=False)]

    class Cancelled(Message):
        pass

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())


class SearchBar(Horizontal):
    """Hidden until ``/``; the screen runs the search and reports the counts here."""

    # Input's own rules style it with a tall border when focused (``Input:focus``); in a one-line
    # bar that border takes the whole height and hides the typed text, so the focused state is
    # named here too.
    DEFAULT_CSS = """
    SearchBar { height: 1; display: none; background: $boost; }
    SearchBar.-shown { display: block; }
    SearchBar > Label#search-slash { width: 2; color: $accent; text-style: bold; }
    SearchBar > SearchInput, SearchBar > SearchInput:focus {
        width: 1fr; height: 1; border: none; padding: 0; background: $boost;
    }
    SearchBar > Label#search-status { width: auto; min-width: 12; color: $text-muted; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Label("/", id="search-slash")
        inp = SearchInput(placeholder="regex over reasoning, code and results (smart case)  ·  enter: search",
                          id="search-input")
        inp.can_focus = False
        yield inp
        yield Label("", id="search-status")

    @property
    def input(self) -> SearchInput:
        return self.query_one(SearchInput)

    def open(self) -> None:
        self.add_class("-shown")
        self.input.can_focus = True
        self.input.focus()

    def close(self) -> None:
        self.remove_class("-shown")
        self.input.can_focus = False
        if self.input.has_focus:
            self.screen.set_focus(None)

    @property
    def is_open(self) -> bool:
        return self.has_class("-shown")

    @property
    def typing(self) -> bool:
        return self.input.has_focus

    def set_status(self, text: str) -> None:
        self.query_one("#search-status", Label).update(text)
