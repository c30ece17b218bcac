"""A result document, renderer-neutral: paragraphs and tables of clean, role-tagged spans.

The views of a reproduction, a profile and a verify report (:mod:`ktui.view.results`) are laid
out as a sequence of :data:`Part` -- a :class:`Para` (one styled line, wrapped or kept on one
line) or a :class:`Table` (columns with widths, priorities and roles, rows of cells). Every
string in them went through :func:`ktui.view.text.clean` when the view was built; renderers
never sanitize again, they only draw: ``ktui/report`` as text (Rich) and as HTML (escaped),
``ktui/tui`` as widgets.

Column priorities: a renderer with less room than a table needs leaves out the columns of the
highest ``priority`` number first (:func:`fit_columns`), then shrinks what it kept, the widest
first, down to each column's ``min_width``; a column with ``min_room`` is only shown where the
room is at least that wide. No Rich, no Textual.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from ktui.view.model import Line, Span, plain

LEFT, RIGHT = "left", "right"


@dataclass(frozen=True, slots=True)
class Para:
    """One line of a document: ``spans`` on a paragraph ``role``. ``wrap=False``: a record that
    stays on one line whatever the width (grep finds it whole); ``crop``: a line of a chart,
    cut at the width rather than wrapped. An empty ``spans`` is a blank line."""

    spans: Line = ()
    role: str = ""
    wrap: bool = True
    crop: bool = False

    @property
    def text(self) -> str:
        return plain(self.spans)


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    header: str
    justify: str = LEFT
    wrap: bool = True  # a long cell goes on more lines; False: one line, cut with "…"
    fold: bool = True  # (wrapped) a word longer than the column is folded; False: cut with "…"
    squeeze: bool = False  # one line where it fits, but a renderer short of room may wrap it on words
    narrows: int | None = None  # when it narrows, as a column of this priority (default: its own)
    min_width: int | None = None
    max_width: int | None = None
    role: str = ""  # the role of every cell in the column (a span's own role adds to it)
    priority: int = 0  # 0 is kept longest; a narrow renderer leaves out the highest first
    min_room: int = 0  # shown only where the room is at least this wide (0: always)


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of cells (each a :class:`Para`: spans on a cell role) under ``columns``. ``gap``: blanks between columns;
    ``edge``: a blank before the first and after the last column too."""

    key: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Para, ...], ...]
    title: str = ""
    header_role: str = "strong"
    gap: int = 2
    edge: bool = False
    trailing: int = 1  # blanks after the last column (what the text renderer has always printed)

    def column(self, key: str) -> Column:
        return next(c for c in self.columns if c.key == key)

    def cells(self, key: str) -> list[str]:
        """The plain text of one column's cells, top to bottom."""
        i = next(i for i, c in enumerate(self.columns) if c.key == key)
        return [r[i].text for r in self.rows]


Part = Para | Table


def blank() -> Para:
    return Para(())


def para(*pieces: str | tuple[str, str], role: str = "", wrap: bool = True, crop: bool = False) -> Para:
    """A paragraph from pieces: a clean string (no role of its own) or a ``(text, role)`` pair."""
    spans = tuple(Span(p) if isinstance(p, str) else Span(p[0], p[1]) for p in pieces if (p if isinstance(p, str)
                                                                                            else p[0]))
    return Para(spans, role, wrap, crop)


def cell(*pieces: str | tuple[str, str], role: str = "") -> Para:
    """A table cell from pieces (as :func:`para`); ``role``: the whole cell's."""
    return para(*pieces, role=role)


def plain_lines(parts: tuple[Part, ...]) -> list[str]:
    """The document's text, one string per paragraph and per table row (cells joined by two
    blanks): what tests and search read, not a layout."""
    out: list[str] = []
    for p in parts:
        if isinstance(p, Para):
            out.append(p.text)
        else:
            if p.title:
                out.append(p.title)
            out.append("  ".join(c.header for c in p.columns))
            out.extend("  ".join(c.text for c in row) for row in p.rows)
    return out


# ---- layout helpers for renderers that lay tables out themselves (the app's widgets) ---------------
def cell_width(s: str) -> int:
    """Terminal cells of a clean string: East Asian wide characters take two, combining marks none."""
    if s.isascii():
        return len(s)
    n = 0
    for ch in s:
        if unicodedata.combining(ch):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def natural_widths(table: Table) -> dict[str, int]:
    """Each column as wide as its widest cell (and its header), within its min and max widths."""
    out: dict[str, int] = {}
    for i, c in enumerate(table.columns):
        w = max([cell_width(c.header)] + [cell_width(r[i].text) for r in table.rows])
        if c.max_width:
            w = min(w, max(c.max_width, cell_width(c.header) if not c.wrap else 0))
        out[c.key] = max(w, c.min_width or 0)
    return out


DROP_FIRST = 3  # columns of this priority number or more are left out before any column is narrowed


def _floor(table: Table, i: int, natural: int) -> int:
    """How narrow a column may get by wrapping: its ``min_width``, else its longest word (header
    and cells: words are not cut), else, one-line columns, its natural width."""
    c = table.columns[i]
    if c.min_width:
        return min(natural, c.min_width)
    if not (c.wrap or c.squeeze):
        return natural
    words = [c.header, *(r[i].text for r in table.rows)]
    longest = max((cell_width(w) for t in words for w in t.split()), default=1)
    return min(natural, max(longest, 4))


def fit_columns(table: Table, room: int) -> tuple[list[str], dict[str, int]]:
    """The columns of ``table`` that fit in ``room`` cells and their widths, by priority.

    1. columns whose ``min_room`` is over ``room`` are left out;
    2. while the kept columns do not fit as they are, those of priority :data:`DROP_FIRST` or
       more are left out, the highest number first;
    3. the wrapping columns narrow (their cells take more lines), the highest priority number
       (or ``narrows``) first and the widest of a priority first, down to their longest word;
    4. still too wide: columns of priority over 0 are left out, the highest number first;
    5. then the widest column is cut, one cell at a time (its cells end with "…").
    Returns (kept keys in table order, their widths)."""
    natural = natural_widths(table)
    index = {c.key: i for i, c in enumerate(table.columns)}
    cols = [c for c in table.columns if not c.min_room or room >= c.min_room]

    def total(w: dict[str, int]) -> int:
        return sum(w[c.key] for c in cols) + table.gap * max(0, len(cols) - 1) + (2 * table.gap if table.edge else 0)

    def drop(allowed: int) -> bool:
        cand = [i for i, c in enumerate(cols) if c.priority >= allowed]
        if not cand:
            return False
        cols.pop(max(cand, key=lambda i: (cols[i].priority, i)))
        return True

    while total(natural) > room and drop(DROP_FIRST):
        pass
    w = {c.key: natural[c.key] for c in cols}
    floors = {c.key: _floor(table, index[c.key], natural[c.key]) for c in cols}
    order = {c.key: c.priority if c.narrows is None else c.narrows for c in cols}
    for prio in sorted(set(order.values()), reverse=True):
        group = [c.key for c in cols if order[c.key] == prio]
        while total(w) > room:
            k = max((k for k in group if w[k] > floors[k]), key=lambda k: w[k], default=None)
            if k is None:
                break
            w[k] -= 1
    while total(w) > room and len(cols) > 1 and drop(1):
        pass
    w = {c.key: w[c.key] for c in cols}
    while total(w) > room:
        k = max((c.key for c in cols if w[c.key] > 1), key=lambda k: w[k], default=None)
        if k is None:
            break
        w[k] -= 1
    return [c.key for c in cols], w


def wrap_cell(text: str, width: int, wrap: bool = True) -> list[str]:
    """A cell's clean text in lines of at most ``width`` cells: words kept whole where they fit,
    a longer word folded; ``wrap=False``: one line, cut with "…"."""
    width = max(1, width)
    text = text.replace("\n", " ")
    if cell_width(text) <= width:
        return [text]
    if not wrap:
        return [_cut(text, width - 1) + "…"]
    lines: list[str] = []
    cur = ""
    for word in text.split(" "):
        cand = f"{cur} {word}" if cur else word
        if cell_width(cand) <= width:
            cur = cand
            continue
        if cur:
            lines.append(cur)
        while cell_width(word) > width:
            head = _cut(word, width)
            lines.append(head)
            word = word[len(head):]
        cur = word
    if cur or not lines:
        lines.append(cur)
    return lines


def _cut(s: str, width: int) -> str:
    """The longest head of ``s`` at most ``width`` cells wide (at least one character)."""
    n = 0
    for i, ch in enumerate(s):
        n += cell_width(ch)
        if n > width:
            return s[: max(1, i)]
    return s


def split_spans(spans: Line, lengths: list[int]) -> list[Line]:
    """``spans`` cut into consecutive pieces of ``lengths`` characters (a wrapped cell's lines
    keep their roles); the blank a wrap consumed between two lines is dropped."""
    out: list[Line] = []
    flat = [(ch, s.role) for s in spans for ch in s.text.replace("\n", " ")]
    pos = 0
    for n in lengths:
        piece = flat[pos: pos + n]
        pos += n
        if pos < len(flat) and flat[pos][0] == " ":
            pos += 1
        line: list[Span] = []
        for ch, role in piece:
            if line and line[-1].role == role:
                line[-1] = Span(line[-1].text + ch, role)
            else:
                line.append(Span(ch, role))
        out.append(tuple(line))
    return out
