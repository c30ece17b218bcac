"""The per-model aggregates panel of the runs screen: its tables at their natural width."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from textual.widgets import Static


def tables_width(console: Console, renderable: Any) -> int:
    """The natural width of the widest table in ``renderable`` (a table or a group of them), 0 for none."""
    if isinstance(renderable, Group):
        return max((tables_width(console, r) for r in renderable.renderables), default=0)
    if isinstance(renderable, Table):
        return Measurement.get(console, console.options.update_width(10_000), renderable).maximum
    return 0


def show(panel: Static, renderable: Any) -> None:
    """Show ``renderable`` in ``panel`` at least as wide as its tables: a narrow screen scrolls
    them sideways (H / L), it never squeezes their headers to "r…", "pa…"."""
    want = tables_width(panel.app.console, renderable) + panel.styles.gutter.width
    have = panel.styles.min_width
    if have is None or want > int(have.value):  # grows only: a style set lays the screen out again (costly
        panel.styles.min_width = want  # at every batch of a 10,000-run scan)
    panel.update(renderable)
