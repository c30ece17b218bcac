"""The turn list: one row per turn (index, status, tools, duration, tokens).

A Line-API ScrollView: only the rows on screen are rendered (each drawn once, when it first
comes into view), so 500 or 50,000 turns cost the same to draw. Narrower than its 46 columns it
drops the tokens column, then the time, then shortens the tools. Failed turns
stand out (red, ✗). Rows are updated in place when a followed trace grows. A click posts
:class:`TurnList.Clicked`; keys are handled by the screen.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ktui.report import fmt
from ktui.report.render_diff import clean
from ktui.trace.model import ERROR, FAILED, MISSING, Turn

BAD = (FAILED, ERROR, MISSING)
# (title, width, justify)
COLUMNS = (("#", 4, "right"), ("", 1, "left"), ("tools", 18, "left"), ("time", 7, "right"),
           ("tokens", 7, "right"))
HEADER_STYLE = Style(color="grey62", bold=True)
CURSOR_STYLE = Style(bgcolor="#1f4f7a")
CURSOR_BAD_STYLE = Style(bgcolor="#6b1d25")


def short_tokens(n: int | None) -> str:
    if not n:
        return "—"
    if n >= 100_000:
        return f"{n / 1000:.0f}k"
    if n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:,}"


def tools_label(t: Turn, width: int = 18) -> str:
    names = [c.name for c in t.calls]
    if not names:
        return "(text only)" if (t.text or t.reasoning) else "—"
    s = ", ".join(clean(n) for n in names)
    if len(s) <= width:
        return s
    first = clean(names[0])
    more = f" +{len(names) - 1}" if len(names) > 1 else ""
    keep = width - len(more) - 1
    return first[:keep] + "…" + more


def _pad(s: str, width: int, justify: str) -> str:
    if len(s) > width:
        s = s[: width - 1] + "…"
    return s.rjust(width) if justify == "right" else s.ljust(width)


def fit_columns(width: int) -> tuple[tuple[str, int, str], ...]:
    """The columns that fit ``width`` cells: tokens go first, then time, then tools narrows."""
    full = sum(w + 1 for _, w, _ in COLUMNS) + 1
    cols = list(COLUMNS)
    if width >= full or width <= 0:
        return COLUMNS
    for drop in ("tokens", "time"):
        if sum(w + 1 for _, w, _ in cols) + 1 <= width:
            break
        cols = [c for c in cols if c[0] != drop]
    used = sum(w + 1 for name, w, _ in cols if name != "tools") + 1
    tools = max(6, min(18, width - used - 1))
    return tuple((name, tools if name == "tools" else w, j) for name, w, j in cols)


def row_text(t: Turn, columns: tuple[tuple[str, int, str], ...] = COLUMNS) -> Text:
    st = t.status
    bad = st in BAD
    base = "red" if bad else ""
    ms = t.wall_ms
    cells = {
        "#": (str(t.index), "bold red" if bad else "grey62"),
        "": (fmt.STATUS_ICON.get(st, "?"), fmt.STATUS_STYLE.get(st, "")),
        "tools": (None, base or ("bold magenta" if t.is_final else "")),
        "time": (fmt.secs(ms) if ms is not None else "—", base or "grey70"),
        "tokens": (short_tokens(t.tokens_total), base or "grey70"),
    }
    row = Text(" ", end="")
    for name, width, justify in columns:
        value, style = cells[name]
        if value is None:
            value = tools_label(t, width)
        row.append(_pad(value, width, justify), style or None)
        row.append(" ")
    return row


def header_text(columns: tuple[tuple[str, int, str], ...] = COLUMNS) -> Text:
    row = Text(" ", end="")
    for title, width, justify in columns:
        row.append(_pad(title, width, justify) + " ")
    return row


class TurnList(ScrollView, can_focus=False):
    """Turns of a run; ``cursor_row`` is the selected turn. Row 0 of the view is a header."""

    DEFAULT_CSS = """
    TurnList { width: 46; overflow-x: hidden; overflow-y: auto; }
    """

    @dataclass
    class Clicked(Message):
        """A row was clicked (the screen selects that turn)."""

        turn_list: TurnList
        index: int

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self._turns: list[Turn] = []
        self._bad: list[bool] = []
        self._sig: list[tuple] = []
        self._texts: dict[int, Text] = {}  # rows drawn so far at the current columns
        self._columns = COLUMNS
        self._header = header_text()
        self.cursor_row = 0

    # ---- data -----------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._turns)

    @staticmethod
    def _signature(t: Turn) -> tuple:
        return (t.status, len(t.calls), t.wall_ms, t.tokens_total, t.is_final, bool(t.text or t.reasoning))

    def set_turns(self, turns: list[Turn], *, reset: bool = False) -> None:
        """Show ``turns``: rows are drawn when they come into view; changed ones are drawn again.
        ``reset``: a different run (the followed file was replaced): start over."""
        changed = False
        if reset or len(turns) < len(self._turns):
            self._turns, self._bad, self._sig, self._texts = [], [], [], {}
            self.cursor_row = 0
            self.scroll_to(y=0, animate=False, immediate=True)
            changed = True
        old = len(self._turns)
        for t in turns[:old]:
            sig = self._signature(t)
            if sig != self._sig[t.index]:
                self._bad[t.index] = t.status in BAD
                self._sig[t.index] = sig
                self._texts.pop(t.index, None)
                changed = True
        self._turns = list(turns)
        for t in turns[old:]:
            self._bad.append(t.status in BAD)
            self._sig.append(self._signature(t))
            changed = True
        if changed:
            self._update_virtual_size()
            self.refresh()

    def _row(self, i: int) -> Text:
        got = self._texts.get(i)
        if got is None:
            if len(self._texts) > 4000:
                self._texts.clear()
            got = self._texts[i] = row_text(self._turns[i], self._columns)
        return got

    def _update_virtual_size(self) -> None:
        size = Size(self.size.width, len(self._turns) + 1)
        if size != self.virtual_size:
            self.virtual_size = size

    def on_resize(self) -> None:
        cols = fit_columns(self.scrollable_content_region.width or self.size.width)
        if cols != self._columns:
            self._columns, self._texts = cols, {}
            self._header = header_text(cols)
            self.refresh()
        self._update_virtual_size()

    # ---- cursor ---------------------------------------------------------------------------------
    def move_cursor(self, *, row: int, animate: bool = False) -> None:
        if not self._turns:
            return
        row = max(0, min(row, len(self._turns) - 1))
        old = self.cursor_row
        self.cursor_row = row
        self._refresh_row(old)
        self._refresh_row(row)
        self._scroll_cursor_into_view()

    def _refresh_row(self, row: int) -> None:
        y = row + 1 - round(self.scroll_y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _scroll_cursor_into_view(self) -> None:
        height = self.scrollable_content_region.height - 1  # below the header
        if height <= 0:
            return
        top = round(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False, immediate=True)

    # ---- rendering ------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            strip = Strip(self._header.render(self.app.console)).apply_style(base + HEADER_STYLE)
            return strip.crop_extend(0, width, base)
        row = round(self.scroll_y) + y - 1
        if row < 0 or row >= len(self._turns):
            return Strip.blank(width, base)
        text = self._row(row)
        if row == self.cursor_row:
            text = text.copy()
            text.stylize_before(CURSOR_BAD_STYLE if self._bad[row] else CURSOR_STYLE)
            text.pad_right(max(0, width - text.cell_len))
        strip = Strip(text.render(self.app.console)).apply_style(base)
        return strip.crop_extend(0, width, base)

    def on_click(self, event: events.Click) -> None:
        row = round(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= row < len(self._turns):
            self.post_message(self.Clicked(self, row))
