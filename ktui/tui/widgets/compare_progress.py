"""The compare screen's progress view: per run, each kernel version's fate over the turns.

For every kernel version: the first turn it appeared, whether it compiled and passed
correctness, its recorded runtime (corrected units) and a strip with one cell per turn (``●``
in the colour of the version's worst result at that turn, ``·`` when it was not used), then a
sparkline of tokens per turn. Pure renderables (Rich ``Table`` / ``Text``, never markup).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ktui.report.fmt import STATUS_STYLE, us
from ktui.report.render_diff import clean
from ktui.trace.aggregate import kernel_progress
from ktui.trace.model import Run
from ktui.trace.words import count

SPARK = "▁▂▃▄▅▆▇█"
MAX_STRIP = 120  # turns drawn in a strip; longer runs are cut with a note


def sparkline(values: Sequence[float | None]) -> Text:
    """One block character per value (``·`` for unknown), scaled to the largest."""
    nums = [v for v in values if v is not None]
    top = max(nums) if nums else 0
    t = Text(end="")
    for v in values:
        if v is None or top <= 0:
            t.append("·", "grey50")
        else:
            t.append(SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))], "cyan")
    return t


def _yes_no(v: bool | None, yes: str = "yes", no: str = "no") -> Text:
    if v is None:
        return Text("—", style="grey50")
    return Text(yes, style="green") if v else Text(no, style="red")


def turn_strip(by_turn: dict[int, str], n_turns: int) -> Text:
    t = Text(end="")
    for i in range(min(n_turns, MAX_STRIP)):
        st = by_turn.get(i)
        if st is None:
            t.append("·", "grey35")
        else:
            t.append("●", STATUS_STYLE.get(st, ""))
    if n_turns > MAX_STRIP:
        t.append(f" …+{n_turns - MAX_STRIP}", "grey50")
    return t


def turn_ruler(n_turns: int) -> Text:
    """Turn numbers every 5 turns, aligned with the strip."""
    n = min(n_turns, MAX_STRIP)
    cells = [" "] * n
    for i in range(0, n, 5):
        label = str(i)
        for k, ch in enumerate(label):
            if i + k < n:
                cells[i + k] = ch
    return Text("".join(cells), style="grey50", end="")


def run_progress(run: Run, index: int) -> RenderableType:
    n = len(run.turns)
    title = Text()
    title.append(f"#{index + 1} {clean(run.model or '?')}", "bold")
    title.append(f"   {count(len(run.kernels), 'kernel version')} · {count(n, 'turn')}", "grey62")
    if run.first_correct_turn is not None:
        title.append(f" · first correct at turn {run.first_correct_turn}", "green")
    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 2, 0, 0), header_style="grey62")
    table.add_column("version", no_wrap=True)
    table.add_column("first turn", justify="right", no_wrap=True)
    table.add_column("compiled", no_wrap=True)
    table.add_column("correct", no_wrap=True)
    table.add_column("runtime", justify="right", no_wrap=True)
    table.add_column(Text("turns ") + turn_ruler(n), no_wrap=True)
    for v in kernel_progress(run):
        label = Text(f"v{v.number}", style="bold magenta")
        if v.final:
            label.append(" final", "bold")
        table.add_row(label, "—" if v.first_turn is None else str(v.first_turn),
                      _yes_no(v.compiled), _yes_no(v.correct),
                      Text(us(v.runtime_us) if v.runtime_us is not None else "—"),
                      Text("      ") + turn_strip(v.by_turn, n))
    tokens = [t.tokens_total for t in run.turns]
    parts: list[RenderableType] = [title]
    if run.kernels:
        parts.append(table)
    else:
        parts.append(Text("  no kernel versions in this run", style="grey50"))
    if any(v is not None for v in tokens):
        line = Text("  tokens per turn  ", style="grey62")
        line.append_text(sparkline(tokens[:MAX_STRIP]))
        top = max(v for v in tokens if v is not None)
        line.append(f"  (max {top:,})", "grey50")
        parts.append(line)
    return Group(*parts)


def progress_view(runs: Sequence[Run]) -> RenderableType:
    items: list[RenderableType] = []
    for i, r in enumerate(runs):
        if i:
            items.append(Text(""))
        items.append(run_progress(r, i))
    legend = Text("\n● ", style="green")
    legend.append("ok  ", "grey62")
    legend.append("●", STATUS_STYLE.get("failed", "red"))
    legend.append(" failed  ", "grey62")
    legend.append("●", STATUS_STYLE.get("error", "red"))
    legend.append(" error  ", "grey62")
    legend.append("●", STATUS_STYLE.get("missing", "yellow"))
    legend.append(" no result  · not used at that turn", "grey62")
    items.append(legend)
    return Group(*items)
