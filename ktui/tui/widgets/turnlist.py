"""The turn list: one row per turn (index, status, tools, duration, tokens).

A DataTable: it renders only the rows on screen, so 500 or 5,000 turns cost the same to draw.
Failed turns stand out (red row, ✗). Rows are updated in place when a followed trace grows.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ktui.report import fmt
from ktui.report.render_diff import clean
from ktui.trace.model import ERROR, FAILED, MISSING, Turn

BAD = (FAILED, ERROR, MISSING)
COLUMNS = (("#", "idx", 3), ("", "st", 1), ("tools", "tools", 17), ("time", "time", 7), ("tokens", "tok", 6))


def short_tokens(n: int | None) -> str:
    if not n:
        return "—"
    if n >= 100_000:
        return f"{n / 1000:.0f}k"
    if n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:,}"


def tools_label(t: Turn, width: int = 17) -> str:
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


def row_cells(t: Turn) -> tuple[Text, ...]:
    st = t.status
    bad = st in BAD
    base = "red" if bad else ""
    icon = fmt.STATUS_ICON.get(st, "?")
    ms = t.wall_ms
    time = fmt.secs(ms) if ms is not None else "—"
    return (
        Text(str(t.index), style="bold red" if bad else "grey62", justify="right"),
        Text(icon, style=fmt.STATUS_STYLE.get(st, "")),
        Text(tools_label(t), style=base or ("bold magenta" if t.is_final else "")),
        Text(time, style=base or "grey70", justify="right"),
        Text(short_tokens(t.tokens_total), style=base or "grey70", justify="right"),
    )


class TurnList(DataTable):
    """Turns of a run; the cursor row is the selected turn."""

    DEFAULT_CSS = """
    TurnList { width: 46; }
    """

    def __init__(self, **kw):
        super().__init__(cursor_type="row", zebra_stripes=False, show_cursor=True, **kw)
        self.can_focus = False
        self._sig: list[tuple] = []

    def on_mount(self) -> None:
        for label, key, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    @staticmethod
    def _signature(t: Turn) -> tuple:
        return (t.status, len(t.calls), t.wall_ms, t.tokens_total, t.is_final, bool(t.text or t.reasoning))

    def set_turns(self, turns: list[Turn]) -> None:
        """Show ``turns``: adds new rows and updates changed ones (cheap when little changed)."""
        if len(turns) < len(self._sig):  # the file was replaced: start over
            self.clear()
            self._sig = []
        for t in turns[: len(self._sig)]:
            sig = self._signature(t)
            if sig != self._sig[t.index]:
                for (_, key, _), cell in zip(COLUMNS, row_cells(t), strict=True):
                    self.update_cell(str(t.index), key, cell)
                self._sig[t.index] = sig
        for t in turns[len(self._sig):]:
            self.add_row(*row_cells(t), key=str(t.index))
            self._sig.append(self._signature(t))
