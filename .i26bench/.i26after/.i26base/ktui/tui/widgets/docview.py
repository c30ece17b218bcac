"""DocView: a scrolling document that renders only the rows on screen.

A document is a list of blocks:

- :class:`LinesBlock` -- logical lines from a :class:`LineSource` (code, tool output, raw
  events, diffs), folded at the view's width, optionally with a line-number gutter. Lines are
  styled lazily (only when they come into view), so a 2,000-line kernel or a 60 kB output line
  costs nothing until it is scrolled to.
- :class:`RenderBlock` -- any Rich renderable (Markdown, tables), rendered at the view's width
  when the layout is computed.

Code, tool output and diffs (blocks that would be hard-folded: ``LinesBlock(wrap=False)`` and
:class:`PairsBlock`) are not folded unless ``wrap_code`` is set: one row per line, cut at the
right edge (marked ``›``) and scrolled sideways with :meth:`DocView.scroll_sideways` (a line's
first ``hang`` cells, its line numbers, stay put). Prose always wraps.

The view keeps only arithmetic per line (fold counts), so moving to a new document is cheap.
A regex can be highlighted over every block; :meth:`DocView.find` lists the matches and
:meth:`DocView.scroll_to_match` brings one into view. Pure rendering: no I/O here.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich._wrap import divide_line
from rich.cells import cell_len, get_character_cell_size
from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ktui.tui.errors import report

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


class _Layout:
    __slots__ = ("width", "starts", "prefixes", "rendered", "total", "hmax")

    def __init__(self, width: int):
        self.width = width
        self.starts: list[int] = []  # first row of each block
        self.prefixes: list[list[int] | None] = []  # per LinesBlock: cumulative rows per line
        self.rendered: list[list[Text] | None] = []  # per RenderBlock: its lines at this width
        self.total = 0
        self.hmax = 0  # how far the uncut lines reach past the right edge (sideways scroll limit)


class _Identity(Sequence[int]):
    """``prefix[i] == i``: one row per line, without a list of n + 1 ints."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n + 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return list(range(self.n + 1))[i]
        if i < 0:
            i += self.n + 1
        if not 0 <= i <= self.n:
            raise IndexError(i)
        return i


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


MORE = Style(color="grey50", bold=True)


class DocView(ScrollView, can_focus=False):
    """Shows a list of blocks; renders only visible rows."""

    DEFAULT_CSS = """
    DocView {
        overflow-x: hidden;
        overflow-y: scroll;
        height: 1fr;
    }
    """

    def __init__(self, blocks: Sequence[Block] = (), *, name: str | None = None, id: str | None = None,
                 classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self._blocks: list[Block] = list(blocks)
        self._layout: _Layout | None = None
        self._pieces: dict[tuple[int, int], list[Text]] = {}
        self._strips: dict[int, Strip] = {}  # document row -> rendered row (current layout)
        self._base_style: Style | None = None
        self._regex: re.Pattern[str] | None = None
        self._current: Match | None = None
        self.generation = 0  # bumps with every new document (lets tests/benches wait for it)
        self.wrap_code = False  # fold code, output and diffs at the width (else: cut, scroll sideways)
        self.hscroll = 0  # cells scrolled sideways (uncut lines only)

    # ---- document ---------------------------------------------------------------------------
    @property
    def blocks(self) -> list[Block]:
        return self._blocks

    def set_document(self, blocks: Sequence[Block], *, keep_scroll: bool = False) -> None:
        self._blocks = list(blocks)
        self._current = None
        self.generation += 1
        self._relayout()
        if not keep_scroll:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def set_highlight(self, regex: re.Pattern[str] | None, current: Match | None = None) -> None:
        self._regex = regex
        self._current = current
        self._pieces.clear()
        self._strips.clear()
        self.refresh()

    def set_wrap(self, wrap: bool) -> None:
        """Fold code and diffs at the width (True) or cut them and scroll sideways (False)."""
        if wrap == self.wrap_code:
            return
        top = self.locate(round(self.scroll_y))
        self.wrap_code = wrap
        self.hscroll = 0
        self._relayout()
        if top is not None:  # keep the line at the top in view
            row = self.row_of(top[0], top[1])
            if row is not None:
                self.scroll_to(y=row, animate=False, immediate=True)
        self.refresh()

    def scroll_sideways(self, delta: int) -> None:
        lay = self._layout
        limit = lay.hmax if lay is not None else 0
        new = max(0, min(limit, self.hscroll + delta))
        if new != self.hscroll:
            self.hscroll = new
            self._strips.clear()
            self.refresh()

    def on_mouse_scroll_right(self, event) -> None:
        self.scroll_sideways(4)
        event.stop()

    def on_mouse_scroll_left(self, event) -> None:
        self.scroll_sideways(-4)
        event.stop()

    def _cut(self, b: Block) -> bool:
        """Lines of ``b`` are cut at the edge (one row each) rather than folded."""
        if self.wrap_code:
            return False
        return isinstance(b, PairsBlock) or (isinstance(b, LinesBlock) and not b.wrap)

    def notify_style_update(self) -> None:
        self._base_style = None
        self._strips.clear()
        super().notify_style_update()

    # ---- layout -----------------------------------------------------------------------------
    def _content_width(self) -> int:
        w = self.scrollable_content_region.width
        return w if w > 0 else 0

    def _relayout(self) -> None:
        self._pieces.clear()
        self._strips.clear()
        width = self._content_width()
        if width <= 0:
            self._layout = None
            return
        self._layout = self._compute_layout(width)
        self._set_virtual_size(Size(width, self._layout.total))

    def _set_virtual_size(self, size: Size) -> None:
        """Like ``self.virtual_size = size`` but without a screen-wide layout pass (the view's own
        size does not depend on its content; the scrollbar is always shown)."""
        if size == self.virtual_size:
            return
        if not self.is_mounted:
            self.virtual_size = size
            return
        self.set_reactive(ScrollView.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    def _gutter(self, block: LinesBlock) -> int:
        if not block.numbers:
            return 0
        return len(str(block.first_number + max(0, len(block.source) - 1))) + 1

    def _compute_layout(self, width: int) -> _Layout:
        lay = _Layout(width)
        row = 0
        console = self.app.console
        for b in self._blocks:
            lay.starts.append(row)
            if isinstance(b, LinesBlock) and self._cut(b):
                avail = max(1, width - self._gutter(b) - b.indent)
                prefix = _Identity(len(b.source))
                lay.prefixes.append(prefix)  # type: ignore[arg-type]
                lay.rendered.append(None)
                lay.hmax = max(lay.hmax, _source_widest(b.source) - avail + 1)
                row += len(b.source)
            elif isinstance(b, PairsBlock) and self._cut(b):
                lw, rw = self._halves(width)
                lay.prefixes.append(_Identity(len(b.pairs)))  # type: ignore[arg-type]
                lay.rendered.append(None)
                if b.pairs:
                    lay.hmax = max(lay.hmax, widest([lt.plain for lt, _ in b.pairs]) - lw + 1,
                                   widest([rt.plain for _, rt in b.pairs]) - rw + 1)
                row += len(b.pairs)
            elif isinstance(b, LinesBlock):
                avail = max(1, width - self._gutter(b) - b.indent)
                prefix = line_prefix(b, avail)
                lay.prefixes.append(prefix)
                lay.rendered.append(None)
                row += prefix[-1]
            elif isinstance(b, PairsBlock):
                lw, rw = self._halves(width)
                prefix = [0] * (len(b.pairs) + 1)
                acc = 0
                for i, (left, right) in enumerate(b.pairs):
                    acc += max(len(fold_offsets(left.plain, lw, b.hang)),
                               len(fold_offsets(right.plain, rw, b.hang))) + 1
                    prefix[i + 1] = acc
                lay.prefixes.append(prefix)
                lay.rendered.append(None)
                row += acc
            elif isinstance(b, RenderBlock) and width in b.cache:
                lines = b.cache[width]
                lay.prefixes.append(None)
                lay.rendered.append(lines)
                row += len(lines)
            elif isinstance(b, RenderBlock):
                opts = console.options.update_width(width).update(height=None)
                lines = []
                try:
                    seg_lines = console.render_lines(b.renderable, opts, pad=False)
                except Exception as exc:  # noqa: BLE001 - one block, not the app: reported, shown as such
                    message = report(self, "render", exc)
                    seg_lines = [[Segment(f"(cannot render this block: {message})")]]
                for segs in seg_lines:
                    t = Text(end="")
                    for seg in segs:
                        if seg.control:
                            continue
                        t.append(seg.text, seg.style)
                    t.rstrip()
                    lines.append(t)
                if len(b.cache) > 4:
                    b.cache.clear()
                b.cache[width] = lines
                lay.prefixes.append(None)
                lay.rendered.append(lines)
                row += len(lines)
            else:  # pragma: no cover
                lay.prefixes.append(None)
                lay.rendered.append([])
        lay.total = row
        lay.hmax = max(0, lay.hmax)
        if self.hscroll > lay.hmax:
            self.hscroll = lay.hmax
        return lay

    @staticmethod
    def _halves(width: int) -> tuple[int, int]:
        lw = max(1, (width - 1) // 2)
        return lw, max(1, width - lw - 1)

    def on_resize(self) -> None:
        if self._layout is None or self._layout.width != self._content_width():
            self._relayout()
            self.refresh()

    @property
    def total_rows(self) -> int:
        return self._layout.total if self._layout else 0

    # ---- lines ------------------------------------------------------------------------------
    def _line_text(self, bi: int, li: int) -> Text:
        b = self._blocks[bi]
        lay = self._layout
        assert lay is not None
        if isinstance(b, LinesBlock):
            t = b.source.text(li)
            plain = t.plain
        else:
            rendered = lay.rendered[bi] or []
            t = rendered[li]
            plain = t.plain
        if self._regex is not None and plain:
            hits = [(m.start(), m.end()) for m in self._regex.finditer(plain) if m.end() > m.start()]
            if hits:
                t = t.copy()
                cur = self._current
                for s, e in hits:
                    is_cur = cur is not None and cur.block == bi and cur.line == li and cur.start == s
                    t.stylize(CURRENT_STYLE if is_cur else MATCH_STYLE, s, e)
        return t

    def _line_pieces(self, bi: int, li: int) -> list[Text]:
        key = (bi, li)
        got = self._pieces.get(key)
        if got is not None:
            return got
        lay = self._layout
        assert lay is not None
        b = self._blocks[bi]
        t = self._line_text(bi, li)
        if isinstance(b, LinesBlock) and self._cut(b):
            pieces = [t]
        elif isinstance(b, LinesBlock):
            avail = max(1, lay.width - self._gutter(b) - b.indent)
            offs = break_offsets(t.plain, avail, b.wrap, b.hang)
            pieces = list(t.divide(offs)) if offs else [t]
            if b.hang and len(pieces) > 1:
                pad = " " * b.hang
                pieces = [pieces[0]] + [Text(pad, end="") + p for p in pieces[1:]]
        else:
            pieces = [t]
        if len(self._pieces) > 4000:
            self._pieces.clear()
        self._pieces[key] = pieces
        return pieces

    def _pair_pieces(self, bi: int, li: int, lw: int, rw: int) -> tuple[list[Text], list[Text]]:
        key = (bi, -1 - li)
        got = self._pieces.get(key)
        if got is None:
            b = self._blocks[bi]
            assert isinstance(b, PairsBlock)
            left, right = b.pairs[li]
            if self._cut(b):
                got = [left, None, right]  # type: ignore[list-item]
                self._pieces[key] = got
                return [left], [right]
            lo, ro = fold_offsets(left.plain, lw, b.hang), fold_offsets(right.plain, rw, b.hang)
            lp = list(left.divide(lo)) if lo else [left]
            rp = list(right.divide(ro)) if ro else [right]
            if b.hang:
                pad = " " * b.hang
                lp = lp[:1] + [Text(pad, end="") + p for p in lp[1:]]
                rp = rp[:1] + [Text(pad, end="") + p for p in rp[1:]]
            got = [*lp, None, *rp]  # type: ignore[list-item]
            self._pieces[key] = got
        cut = got.index(None)  # type: ignore[arg-type]
        return got[:cut], got[cut + 1:]

    def locate(self, row: int) -> tuple[int, int, int] | None:
        """(block, line, piece) shown at document row ``row``."""
        lay = self._layout
        if lay is None or row < 0 or row >= lay.total:
            return None
        bi = bisect_right(lay.starts, row) - 1
        # skip empty blocks that share a start row
        while bi + 1 < len(lay.starts) and lay.starts[bi + 1] <= row:
            bi += 1
        local = row - lay.starts[bi]
        prefix = lay.prefixes[bi]
        if prefix is None:
            return bi, local, 0
        li = bisect_right(prefix, local) - 1
        return bi, li, local - prefix[li]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self._base_style
        if base is None:
            base = self._base_style = self.rich_style
        if self._layout is None or self._layout.width != self._content_width():
            return Strip.blank(width, base)
        _, scroll_y = self.scroll_offset
        doc_row = scroll_y + y
        cached = self._strips.get(doc_row)
        if cached is not None and cached.cell_length == width:
            return cached
        strip = self._render_row(doc_row, width, base)
        if len(self._strips) > 2000:
            self._strips.clear()
        self._strips[doc_row] = strip
        return strip

    def _render_row(self, doc_row: int, width: int, base: Style) -> Strip:
        loc = self.locate(doc_row)
        if loc is None:
            return Strip.blank(width, base)
        bi, li, k = loc
        b = self._blocks[bi]
        row = Text(style=base, end="")
        if isinstance(b, LinesBlock):
            gw = self._gutter(b)
            if gw:
                no = f"{b.first_number + li}" if k == 0 else ""
                row.append(no.rjust(gw - 1) + " ", GUTTER_STYLE)
            if b.indent:
                row.append(" " * b.indent)
        if isinstance(b, PairsBlock):
            lw, rw = self._halves(self._layout.width)
            left, right = self._pair_pieces(bi, li, lw, rw)
            lp = left[k].copy() if k < len(left) else Text()
            if self._cut(b):
                lp = self._cut_line(lp, b.hang, lw)
            lp.pad_right(lw - lp.cell_len)
            row.append_text(lp)
            row.append("│", SEPARATOR)
            if k < len(right):
                row.append_text(self._cut_line(right[k], b.hang, rw) if self._cut(b) else right[k])
        else:
            pieces = self._line_pieces(bi, li)
            if k < len(pieces):
                if self._cut(b):
                    avail = max(1, self._layout.width - self._gutter(b) - b.indent)  # type: ignore[union-attr]
                    row.append_text(self._cut_line(pieces[k], getattr(b, "hang", 0), avail))
                else:
                    row.append_text(pieces[k])
        # Text.render drops the Text's own style when it has no spans: apply the base underneath
        strip = Strip(row.render(self.app.console)).apply_style(base)
        return strip.crop_extend(0, width, base)

    def _cut_line(self, t: Text, hang: int, width: int) -> Text:
        """The visible part of an uncut line: its first ``hang`` cells, then the rest scrolled by
        ``hscroll``; a ``›`` in the last cell when more follows."""
        hang = min(hang, max(0, width - 1))
        total = t.cell_len
        if total <= width and self.hscroll == 0:
            return t
        head = crop_cells(t, 0, hang) if hang else Text(end="")
        room = width - hang
        body = crop_cells(t, hang + self.hscroll, room) if total > hang else Text(end="")
        out = head + body
        if hang + self.hscroll + room < total:  # cut at the right edge
            out = crop_cells(out, 0, width - 1)
            out.append("›", MORE)
        return out

    # ---- search -----------------------------------------------------------------------------
    def find(self, regex: re.Pattern[str]) -> list[Match]:
        """Every non-empty match of ``regex`` in the document, in order."""
        if self._layout is None:
            return []
        out: list[Match] = []
        for bi, b in enumerate(self._blocks):
            if isinstance(b, LinesBlock):
                src = b.source
                for li in range(len(src)):
                    for m in regex.finditer(src.plain(li)):
                        if m.end() > m.start():
                            out.append(Match(bi, li, m.start(), m.end()))
            else:
                for li, t in enumerate(self._layout.rendered[bi] or []):
                    for m in regex.finditer(t.plain):
                        if m.end() > m.start():
                            out.append(Match(bi, li, m.start(), m.end()))
        return out

    def row_of(self, bi: int, li: int, offset: int = 0) -> int | None:
        lay = self._layout
        if lay is None or bi >= len(self._blocks):
            return None
        start = lay.starts[bi]
        prefix = lay.prefixes[bi]
        if prefix is None:
            return start + li
        b = self._blocks[bi]
        if not isinstance(b, LinesBlock) or self._cut(b):
            return start + prefix[li]
        avail = max(1, lay.width - self._gutter(b) - b.indent)
        sub = sum(1 for o in break_offsets(b.source.plain(li), avail, b.wrap, b.hang) if o <= offset)
        return start + prefix[li] + sub

    def scroll_to_row(self, row: int, *, center: bool = True) -> None:
        h = self.scrollable_content_region.height or self.size.height
        y = max(0, row - (h // 3 if center else 0))
        self.scroll_to(y=y, animate=False, immediate=True)

    def scroll_to_match(self, m: Match) -> None:
        row = self.row_of(m.block, m.line, m.start)
        if row is not None:
            self.scroll_to_row(row)
        b = self._blocks[m.block] if m.block < len(self._blocks) else None
        lay = self._layout
        if b is not None and lay is not None and isinstance(b, LinesBlock) and self._cut(b):
            avail = max(1, lay.width - self._gutter(b) - b.indent) - b.hang
            start, end = m.start - b.hang, m.end - b.hang
            if start < self.hscroll or end > self.hscroll + avail - 1:  # bring the match into view
                self.hscroll = max(0, min(lay.hmax, start - avail // 3))
                self._strips.clear()
                self.refresh()

    def scroll_to_anchor(self, anchor: str) -> bool:
        for bi, b in enumerate(self._blocks):
            if b.anchor == anchor:
                row = self.row_of(bi, 0)
                if row is not None:
                    self.scroll_to_row(row, center=False)
                    return True
        return False

    def plain_rows(self) -> list[str]:
        """Every document row as plain text (tests and debugging)."""
        lay = self._layout
        if lay is None:
            return []
        out = []
        for r in range(lay.total):
            loc = self.locate(r)
            if loc is None:
                continue
            bi, li, k = loc
            if isinstance(self._blocks[bi], PairsBlock):
                lw, rw = self._halves(lay.width)
                left, right = self._pair_pieces(bi, li, lw, rw)
                lt = left[k].plain if k < len(left) else ""
                out.append(lt.ljust(lw) + "│" + (right[k].plain if k < len(right) else ""))
                continue
            pieces = self._line_pieces(bi, li)
            out.append(pieces[k].plain if k < len(pieces) else "")
        return out
