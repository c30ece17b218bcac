"""The search bar: a regex input docked at the bottom, with a match counter."""

from __future__ import annotations

from textual import on
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

    DEFAULT_CSS = """
    SearchBar { height: 1; display: none; background: $boost; }
    SearchBar.-shown { display: block; }
    SearchBar > Label#search-slash { width: 2; color: $accent; text-style: bold; }
    SearchBar > SearchInput { width: 1fr; height: 1; border: none; padding: 0; }
    SearchBar > Label#search-status { width: auto; min-width: 12; color: $text-muted; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Label("/", id="search-slash")
        yield SearchInput(placeholder="regex over reasoning, code and results (smart case)  ·  enter: search",
                          id="search-input")
        yield Label("", id="search-status")

    @property
    def input(self) -> SearchInput:
        return self.query_one(SearchInput)

    def open(self) -> None:
        self.add_class("-shown")
        self.input.focus()

    def close(self) -> None:
        self.remove_class("-shown")

    @property
    def is_open(self) -> bool:
        return self.has_class("-shown")

    def set_status(self, text: str) -> None:
        self.query_one("#search-status", Label).update(text)

    @on(SearchInput.Cancelled)
    def _cancelled(self) -> None:
        self.screen.set_focus(None)
