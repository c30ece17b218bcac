"""The documents a :class:`~ktui.tui.widgets.docview.DocView` shows: line sources, blocks
(:class:`LinesBlock`, :class:`RenderBlock`, :class:`PairsBlock`), a :class:`Match`, and the
arithmetic of folding and cropping lines by cells. Pure: no widget, no I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich._wrap import divide_line
from rich.cells import cell_len, get_character_cell_size
from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

MATCH_STYLE = Style(bgcolor="#5f5f00", color="bright_white")
CURRENT_STYLE = Style(bgcolor="#d7af00", color="black", bold=True)
GUTTER_STYLE = Style(color="grey42")


class LineSource:
    """Logical lines: a length, the plain text of a line and its styled ``Text``."""

    def __len__(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def plain(self, i: int) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def text(self, i: int) -> Text:  # pragma: no cover - interface
        raise NotImplementedError


class TextLines(LineSource):
    """Ready-made ``Text`` lines."""

    def __init__(self, lines: Sequence[Text]):
        self._lines = list(lines)

    def __len__(self) -> int:
        return len(self._lines)

    def plain(self, i: int) -> str:
        return self._lines[i].plain

    def text(self, i: int) -> Text:
        return self._lines[i]


class PlainLines(LineSource):
    """Lines of a (clean) string, styled by an optional ``style_for(line) -> Style | None``."""

    def __init__(self, s: str, style: Style | str = "", style_for: Callable[[str], Style | None] | None = None):
        self._lines = s.splitlines() or [""]
        self._style = style
        self._style_for = style_for

    def __len__(self) -> int:
        return len(self._lines)

    def plain(self, i: int) -> str:
        return self._lines[i]

    def text(self, i: int) -> Text:
        line = self._lines[i]
        st = self._style_for(line) if self._style_for else None
        return Text(line, style=st or self._style, end="")


class Block:
    anchor: str | None = None


@dataclass(eq=False)
class LinesBlock(Block):
    source: LineSource
    numbers: bool = False  # line-number gutter
    first_number: int = 1
    indent: int = 0
    anchor: str | None = None
    wrap: bool = False  # False: hard fold (code); True: break at spaces (prose)
    hang: int = 0  # hanging indent of continuation rows (folded lines only)


@dataclass(eq=False)
class RenderBlock(Block):
    renderable: RenderableType
    anchor: str | None = None
    # rendered lines by width (a document kept by the screen is laid out again for free)
    cache: dict[int, list[Text]] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PairsBlock(Block):
    """Side-by-side rows (a split diff): each half folded at half the width."""

    pairs: list[tuple[Text, Text]]
    anchor: str | None = None
    hang: int = 0


SEPARATOR = Style(color="grey30")


def text_block(*parts: Text | str, anchor: str | None = None, indent: int = 0) -> LinesBlock:
    """A few Text lines (strings become unstyled Text), word-wrapped."""
    lines = [p if isinstance(p, Text) else Text(p, end="") for p in parts]
    return LinesBlock(TextLines(lines), indent=indent, anchor=anchor, wrap=True)


def blank() -> LinesBlock:
    return text_block("")


def fold_offsets(s: str, width: int, hang: int = 0) -> list[int]:
    """Character offsets where ``s`` is cut to fit ``width`` cells per row (hard wrap).

    Rows after the first are ``hang`` cells narrower (they get a hanging indent).
    """
    width = max(1, width)
    rest = max(1, width - hang)
    if s.isascii():
        if len(s) <= width:
            return []
        return list(range(width, len(s), rest))
    out: list[int] = []
    used = 0
    limit = width
    for i, ch in enumerate(s):
        w = get_character_cell_size(ch)
        if used + w > limit and used:
            out.append(i)
            used = 0
            limit = rest
        used += w
    return out


def break_offsets(s: str, width: int, wrap: bool, hang: int = 0) -> list[int]:
    """Where a line is cut into rows: at spaces when ``wrap`` (long words still folded), else anywhere."""
    if not wrap:
        return fold_offsets(s, width, hang)
    return divide_line(s, max(1, width), fold=True)


def line_prefix(b: LinesBlock, avail: int) -> list[int]:
    """Cumulative row counts of a block's lines at ``avail`` cells (cached on the source: a
    kernel shown again at the same width costs nothing)."""
    src = b.source
    key = (avail, b.wrap, b.hang)
    cache = getattr(src, "_prefix_cache", None)
    if cache is None:
        cache = {}
        try:
            src._prefix_cache = cache  # type: ignore[attr-defined]
        except AttributeError:
            pass
    got = cache.get(key)
    if got is not None:
        return got
    n = len(src)
    prefix = [0] * (n + 1)
    acc = 0
    plain = src.plain
    for i in range(n):
        s = plain(i)
        if len(s) <= avail and s.isascii():
            acc += 1
        else:
            acc += len(break_offsets(s, avail, b.wrap, b.hang)) + 1
        prefix[i + 1] = acc
    if len(cache) > 8:
        cache.clear()
    cache[key] = prefix
    return prefix


@dataclass(slots=True)
class Match:
    block: int
    line: int
    start: int
    end: int


def widest(lines: Sequence[str]) -> int:
    """The widest line, in cells."""
    best = 0
    for s in lines:
        n = len(s) if s.isascii() else cell_len(s)
        if n > best:
            best = n
    return best


def _source_widest(src: LineSource) -> int:
    got = getattr(src, "_widest_cache", None)
    if got is None:
        got = widest([src.plain(i) for i in range(len(src))])
        try:
            src._widest_cache = got  # type: ignore[attr-defined]
        except AttributeError:
            pass
    return got


def crop_cells(t: Text, start: int, width: int) -> Text:
    """Cells ``start`` .. ``start + width`` of ``t`` (styles kept)."""
    if width <= 0:
        return Text(end="")
    plain = t.plain
    if plain.isascii():
        return t[start:start + width]
    # wide characters: walk the cells
    i, cells = 0, 0
    while i < len(plain) and cells + get_character_cell_size(plain[i]) <= start:
        cells += get_character_cell_size(plain[i])
        i += 1
    j, used = i, 0
    while j < len(plain) and used + get_character_cell_size(plain[j]) <= width:
        used += get_character_cell_size(plain[j])
        j += 1
    return t[i:j]


