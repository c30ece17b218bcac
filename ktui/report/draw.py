"""The result documents of the view (:mod:`ktui.view.doc`: a reproduction, a profile, a verify
report) drawn as Rich renderables for the text commands. The view's strings are clean already:
they become ``Text`` (never markup), styled by role (:data:`ktui.view.roles.ROLE_STYLES`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table as RichTable
from rich.text import Text

from ktui.view.doc import Para, Part, Table
from ktui.view.model import Line
from ktui.view.roles import style


def line_text(spans: Line, role: str = "") -> Text:
    """Spans on a base ``role`` (one span alone: the text in its style, as ``Text(s, style)``)."""
    if len(spans) == 1 and not role:
        return Text(spans[0].text, style=style(spans[0].role))
    t = Text(style=style(role))
    for s in spans:
        t.append(s.text, style=style(s.role) or None)
    return t


def para_text(p: Para) -> Text:
    return line_text(p.spans, p.role)


def rich_table(t: Table, room: int | None = None) -> RichTable:
    """The table as Rich lays it out (columns with a ``min_room`` over ``room`` left out)."""
    cols = [(i, c) for i, c in enumerate(t.columns) if not c.min_room or (room or 0) >= c.min_room]
    if t.trailing >= t.gap:
        table = RichTable(title=t.title or None, header_style=style(t.header_role), box=None, pad_edge=t.edge,
                          show_edge=False, padding=(0, t.gap, 0, 0), expand=False)
    else:
        table = RichTable(title=t.title or None, header_style=style(t.header_role), box=None, pad_edge=t.edge,
                          padding=(0, t.gap // 2), expand=False)
    for _, c in cols:
        table.add_column(c.header, justify=c.justify, no_wrap=not c.wrap,  # type: ignore[arg-type]
                         overflow="fold" if c.wrap and c.fold else "ellipsis", min_width=c.min_width,
                         max_width=c.max_width, style=style(c.role) or None)
    for row in t.rows:
        table.add_row(*(para_text(row[i]) for i, _ in cols))
    return table


def draw(console: Any, parts: tuple[Part, ...]) -> None:
    """Print a document on a Rich console (or anything with its ``print``)."""
    for p in parts:
        if isinstance(p, Table):
            console.print(rich_table(p, console.width))
        elif not p.spans:
            console.print()
        elif p.crop:
            console.print(para_text(p), overflow="crop", no_wrap=True)
        elif not p.wrap:
            console.print(para_text(p), soft_wrap=True)
        else:
            console.print(para_text(p))
