"""Widgets for the result documents of the view (:mod:`ktui.view.doc`): a reproduction, a profile,
a verify report's aggregates, drawn in the app from the view model itself (no console, no ANSI).

- :class:`ResultDoc` -- a document: consecutive paragraphs in one ``Static`` (plain ``Text``, never
  markup), each table a :class:`ViewTable`. ``show(parts)`` replaces what it shows.
- :class:`ViewTable` -- a table laid out at the widget's own width, again on every resize: the
  columns chosen and narrowed by priority (:func:`ktui.view.doc.fit_columns`), cells wrapped on
  words; the columns left out are named on a line below it.

The strings are clean already (the view sanitized them once); roles become styles through
:func:`ktui.view.roles.style`.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from ktui.view.doc import (
    RIGHT,
    Para,
    Part,
    Table,
    cell_width,
    fit_columns,
    natural_widths,
    split_spans,
    wrap_cell,
)
from ktui.view.model import Line, Span
from ktui.view.roles import ASIDE, style


def _style(role: str) -> Style:
    s = style(role)
    return Style.parse(s) if s else Style()


def span_text(spans: Line, role: str = "") -> Text:
    """Spans on a base role as Rich ``Text`` (plain text: no markup is parsed)."""
    t = Text(style=_style(role))
    for s in spans:
        t.append(s.text, style=_style(s.role) if s.role else None)
    return t


def para_text(p: Para) -> Text:
    t = span_text(p.spans, p.role)
    if p.crop or not p.wrap:
        t.no_wrap, t.overflow = True, "crop" if p.crop else "ellipsis"
    return t


def _cut_cell(spans: Line, width: int) -> Line:
    """One line of at most ``width`` cells, ending with "…" when cut."""
    text = "".join(s.text for s in spans).replace("\n", " ")
    if cell_width(text) <= width:
        return split_spans(spans, [len(text)])[0]
    head = wrap_cell(text, width, wrap=False)[0][:-1]
    line = split_spans(spans, [len(head)])[0]
    return (*line, Span("…", line[-1].role if line else ""))


def table_lines(table: Table, width: int | None = None) -> tuple[list[Text], list[str]]:
    """The table's lines at ``width`` (None: its natural width) and the headers of the columns
    left out."""
    if width is None:
        keys, widths = [c.key for c in table.columns if not c.min_room], natural_widths(table)
    else:
        keys, widths = fit_columns(table, max(1, width))
    index = {c.key: i for i, c in enumerate(table.columns)}
    cols = [table.columns[index[k]] for k in keys]
    gap = " " * table.gap
    edge = gap if table.edge else ""
    header = Text(edge, style=_style(table.header_role))
    for j, c in enumerate(cols):
        h = _cut_cell((Span(c.header),), widths[c.key])
        pad = " " * (widths[c.key] - cell_width(h[0].text if h else ""))
        header.append((pad if c.justify == RIGHT else "") + "".join(s.text for s in h)
                      + ("" if c.justify == RIGHT else pad) + (gap if j < len(cols) - 1 else edge))
    out = [header]
    for row in table.rows:
        cells: list[list[Line]] = []
        for c in cols:
            cell = row[index[c.key]]
            w = widths[c.key]
            if c.wrap or c.squeeze:
                pieces = wrap_cell(cell.text, w, wrap=True)
                cells.append(split_spans(cell.spans, [len(p) for p in pieces]))
            else:
                cells.append([_cut_cell(cell.spans, w)])
        for n in range(max((len(x) for x in cells), default=1)):
            line = Text(edge)
            for j, c in enumerate(cols):
                piece = cells[j][n] if n < len(cells[j]) else ()
                cell = row[index[c.key]]
                base = _style(c.role) + _style(cell.role)
                pad = " " * (widths[c.key] - sum(cell_width(s.text) for s in piece))
                if c.justify == RIGHT:
                    line.append(pad)
                for s in piece:
                    line.append(s.text, style=base + _style(s.role))
                if c.justify != RIGHT:
                    line.append(pad, style=base if cell.role else None)
                line.append(gap if j < len(cols) - 1 else edge)
            out.append(line)
    # named below the table: the columns left out that have something to show
    left_out = [c.header for i, c in enumerate(table.columns) if c.key not in keys
                and (width is None or not c.min_room or width >= c.min_room) and any(r[i].text for r in table.rows)]
    return [ln.rstrip() or ln for ln in out], left_out


class ViewTable(Widget):
    """One table of a result document, laid out at the widget's width (see the module)."""

    DEFAULT_CSS = """
    ViewTable { height: auto; width: 1fr; }
    """

    def __init__(self, table: Table, **kw: Any) -> None:
        super().__init__(**kw)
        self.table = table
        self._cache: tuple[int, Text] | None = None

    def lines(self, width: int) -> Text:
        if self._cache is None or self._cache[0] != width:
            lines, left_out = table_lines(self.table, width)
            if left_out:
                lines.append(Text(f"({', '.join(left_out)}: in a wider window)", style=_style(ASIDE)))
            text = Text("\n").join(lines)
            text.no_wrap = True
            self._cache = (width, text)
        return self._cache[1]

    def render(self) -> Text:
        return self.lines(max(1, self.size.width))

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        return len(self.lines(max(1, width)).plain.split("\n"))

    @property
    def plain(self) -> str:
        return self.lines(max(1, self.size.width or 200)).plain


class ResultDoc(Vertical):
    """A result document (a reproduction, a profile) as widgets; ``show(parts)`` to fill it."""

    DEFAULT_CSS = """
    ResultDoc { height: auto; }
    ResultDoc > Static { height: auto; }
    """

    def __init__(self, parts: tuple[Part, ...] = (), **kw: Any) -> None:
        super().__init__(**kw)
        self.parts = parts

    def compose(self) -> ComposeResult:
        yield from widgets_for(self.parts)

    def show(self, parts: tuple[Part, ...]) -> None:
        self.parts = parts
        self.remove_children()
        self.mount_all(widgets_for(parts))

    @property
    def plain(self) -> str:
        """The text shown (tables at the widget's width), for tests and copying."""
        out = []
        for w in self.children:
            if isinstance(w, ViewTable):
                out.append(w.plain)
            elif isinstance(w, Static):
                out.append(str(getattr(w, "_ktui_text", "")))
        return "\n".join(out)


def widgets_for(parts: tuple[Part, ...]) -> list[Widget]:
    """Consecutive paragraphs of the same kind (wrapped, or kept on one line) share one Static."""
    out: list[Widget] = []
    run: list[Para] = []

    def flush() -> None:
        if run:
            text = Text("\n").join(para_text(p) for p in run)
            if run[0].crop or not run[0].wrap:
                text.no_wrap, text.overflow = True, "crop"
            st = Static(text)
            st._ktui_text = text.plain  # type: ignore[attr-defined]
            out.append(st)
            run.clear()

    for p in parts:
        if isinstance(p, Table):
            flush()
            out.append(ViewTable(p))
            continue
        if run and (run[0].crop or not run[0].wrap) != (p.crop or not p.wrap):
            flush()
        run.append(p)
    flush()
    return out
