"""Rich rendering of kernel diffs (from :mod:`ktui.trace.diffing`), for the terminal.

Used by ``ktui diff`` and by the replay app's Kernels pane; usable by anything that prints Rich.
Every string from a trace goes through :func:`clean` and becomes a ``rich.text.Text`` (never
markup), so ``[bold]``, ANSI escapes and control characters are shown literally.

- :func:`unified_text_lines` -> one ``Text`` per diff row (gutter with old/new line numbers).
- :func:`split_text_pairs` -> ``(left, right)`` ``Text`` per row, for a side-by-side view.
- :func:`render_unified` / :func:`render_split` -> a renderable for ``Console.print``.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ktui.trace import diffing
from ktui.trace.diffing import ADDED, CHANGED, DELETED, HUNK, INSERTED, REMOVED
from ktui.view.text import clean  # noqa: F401  (the one sanitizer; re-exported for the renderers)

# ---- styles ---------------------------------------------------------------------------------
S_GUTTER = Style(color="grey50")
S_HUNK = Style(color="cyan", bold=True)
S_ADD = Style(color="green")
S_DEL = Style(color="red")
S_ADD_BG = Style(color="green", bgcolor="#0f2d16")
S_DEL_BG = Style(color="red", bgcolor="#3a1216")
S_ADD_SPAN = Style(color="bright_white", bgcolor="#1f6f33", bold=True)
S_DEL_SPAN = Style(color="bright_white", bgcolor="#8b1f2a", bold=True)
S_EMPTY = Style(color="grey23")


def _num(n: int | None, width: int) -> str:
    return (str(n) if n is not None else "").rjust(width)


Highlighter = Callable[[int], Text]  # 1-based line number -> that line, syntax-highlighted


def _line(text: str, no: int | None, hl: Highlighter | None) -> Text:
    """The line as plain Text, or its highlighted form when a highlighter is given (same text)."""
    if hl is not None and no is not None:
        t = hl(no)
        if t.plain == text:
            return t.copy()
    return Text(text, end="")


def _body(text: str, style: Style, spans: tuple[tuple[int, int], ...], span_style: Style,
          no: int | None = None, hl: Highlighter | None = None) -> Text:
    if hl is not None and no is not None:
        t = _line(text, no, hl)
        t.stylize_before(Style(bgcolor=style.bgcolor))  # syntax colours on the change background
    else:
        t = Text(text, style=style, end="")
    for s, e in spans:
        t.stylize(span_style, s, e)
    return t


def number_width(rows) -> int:
    hi = 1
    for r in rows:
        for attr in ("old_no", "new_no", "left_no", "right_no"):
            v = getattr(r, attr, None)
            if v and v > hi:
                hi = v
    return len(str(hi))


def unified_text_lines(a: str | None, b: str | None, context: int | None = 3,
                       numbers: bool = True, hl_old: Highlighter | None = None,
                       hl_new: Highlighter | None = None) -> list[Text]:
    """One ``Text`` per unified-diff row of ``a`` -> ``b`` (empty list when identical).

    ``hl_old`` / ``hl_new`` optionally give syntax-highlighted lines of the cleaned texts.
    """
    rows = diffing.unified_lines(clean(a), clean(b), context=context)
    return unified_rows_to_text(rows, numbers=numbers, hl_old=hl_old, hl_new=hl_new)


def unified_rows_to_text(rows: list[diffing.DiffLine], numbers: bool = True,
                         hl_old: Highlighter | None = None, hl_new: Highlighter | None = None) -> list[Text]:
    w = number_width(rows)
    out: list[Text] = []
    for r in rows:
        if r.kind == HUNK:
            out.append(Text(r.text, style=S_HUNK, end=""))
            continue
        line = Text(end="")
        if numbers:
            line.append(f"{_num(r.old_no, w)} {_num(r.new_no, w)} ", S_GUTTER)
        if r.kind == ADDED:
            line.append("+", S_ADD)
            line.append_text(_body(r.text, S_ADD_BG, r.spans, S_ADD_SPAN, r.new_no, hl_new))
        elif r.kind == REMOVED:
            line.append("-", S_DEL)
            line.append_text(_body(r.text, S_DEL_BG, r.spans, S_DEL_SPAN, r.old_no, hl_old))
        else:
            line.append(" ")
            line.append_text(_line(r.text, r.new_no, hl_new))
        out.append(line)
    return out


def split_text_pairs(a: str | None, b: str | None, context: int | None = 3,
                     numbers: bool = True, hl_old: Highlighter | None = None,
                     hl_new: Highlighter | None = None) -> list[tuple[Text, Text]]:
    """``(left, right)`` Texts per side-by-side row of ``a`` -> ``b`` (empty when identical)."""
    rows = diffing.split_rows(clean(a), clean(b), context=context)
    return split_rows_to_text(rows, numbers=numbers, hl_old=hl_old, hl_new=hl_new)


def split_rows_to_text(rows: list[diffing.SplitRow], numbers: bool = True,
                       hl_old: Highlighter | None = None, hl_new: Highlighter | None = None,
                       ) -> list[tuple[Text, Text]]:
    w = number_width(rows)
    out: list[tuple[Text, Text]] = []
    for r in rows:
        if r.kind == HUNK:
            out.append((Text(r.text, style=S_HUNK, end=""), Text(r.text, style=S_HUNK, end="")))
            continue
        left = Text(end="")
        right = Text(end="")
        if numbers:
            left.append(f"{_num(r.left_no, w)} ", S_GUTTER)
            right.append(f"{_num(r.right_no, w)} ", S_GUTTER)
        if r.kind == CHANGED:
            left.append_text(_body(r.left or "", S_DEL_BG, r.left_spans, S_DEL_SPAN, r.left_no, hl_old))
            right.append_text(_body(r.right or "", S_ADD_BG, r.right_spans, S_ADD_SPAN, r.right_no, hl_new))
        elif r.kind == DELETED:
            left.append_text(_body(r.left or "", S_DEL_BG, (), S_DEL_SPAN, r.left_no, hl_old))
            right.append("", S_EMPTY)
        elif r.kind == INSERTED:
            left.append("", S_EMPTY)
            right.append_text(_body(r.right or "", S_ADD_BG, (), S_ADD_SPAN, r.right_no, hl_new))
        else:
            left.append_text(_line(r.left or "", r.left_no, hl_old))
            right.append_text(_line(r.right or "", r.right_no, hl_new))
        out.append((left, right))
    return out


def render_unified(a: str | None, b: str | None, context: int | None = 3) -> RenderableType:
    lines = unified_text_lines(a, b, context=context)
    if not lines:
        return Text("(identical)", style="dim")
    return Group(*lines)


def render_split(a: str | None, b: str | None, context: int | None = 3,
                 title_a: str = "", title_b: str = "", markers: bool = False) -> RenderableType:
    """Side by side. ``markers``: ``-`` / ``+`` before changed lines (they survive a pipe, colour does not)."""
    rows = diffing.split_rows(clean(a), clean(b), context=context)
    if not rows:
        return Text("(identical)", style="dim")
    pairs = split_rows_to_text(rows, numbers=False)
    if markers:
        marked = []
        for r, (left, right) in zip(rows, pairs, strict=True):
            lm = "-" if r.kind in (CHANGED, DELETED) else " "
            rm = "+" if r.kind in (CHANGED, INSERTED) else " "
            if r.kind == HUNK:
                lm = rm = ""
            marked.append((Text(lm, style=S_DEL, end="") + left, Text(rm, style=S_ADD, end="") + right))
        pairs = marked
    table = Table(box=None, show_header=bool(title_a or title_b), pad_edge=False, expand=True,
                  padding=(0, 1, 0, 0), show_edge=False)
    table.add_column("", justify="right", style=S_GUTTER, no_wrap=True)
    table.add_column(Text(clean(title_a), style="bold red"), ratio=1, overflow="fold")
    table.add_column("", justify="right", style=S_GUTTER, no_wrap=True)
    table.add_column(Text(clean(title_b), style="bold green"), ratio=1, overflow="fold")
    for r, (left, right) in zip(rows, pairs, strict=True):
        ln = "" if r.left_no is None else str(r.left_no)
        rn = "" if r.right_no is None else str(r.right_no)
        table.add_row(ln, left, rn, right)
    return table


def stats_text(added: int, removed: int) -> Text:
    """``+3 -3`` in green/red."""
    t = Text(end="")
    t.append(f"+{added}", S_ADD)
    t.append(" ")
    t.append(f"-{removed}", S_DEL)
    return t


__all__ = [
    "clean",
    "render_split",
    "render_unified",
    "split_rows_to_text",
    "split_text_pairs",
    "stats_text",
    "unified_rows_to_text",
    "unified_text_lines",
]
