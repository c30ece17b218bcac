"""The `?` help screen: every key of the current screen."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def keys_table(rows: Sequence[tuple[str, str]]) -> Table:
    t = Table(box=None, show_header=False, padding=(0, 2, 0, 0), pad_edge=False)
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    for key, desc in rows:
        t.add_row(Text(key), Text(desc))
    return t


class HelpScreen(ModalScreen[None]):
    """Lists (keys, description) rows (a screen's key table, :func:`ktui.tui.keys.help_rows`);
    any of esc, q, ? closes it."""

    BINDINGS = [
        Binding("escape,q,question_mark", "close", "close"),
    ]

    def __init__(self, keys: Sequence[tuple[str, str]], title: str = "ktui · keys"):
        super().__init__()
        self._keys = list(keys)
        self._title = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(Text(self._title, style="bold"), id="help-title")
            yield Static(keys_table(self._keys), id="help-keys")
            yield Static(Text("All keys are also in the command palette (ctrl+p).  esc / q / ? closes this.",
                              style="grey62"), id="help-foot")

    def action_close(self) -> None:
        self.dismiss(None)
