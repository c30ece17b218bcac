"""The sweep charts of the runs screen, drawn with Unicode (braille curves, block strips, boxes).

The numbers come from :mod:`ktui.view.charts`, computed by the screen in a worker thread; this
module only lays them out for a size. ``render_chart(kind, charts, width, height, cursor)`` is a
pure function from the chart data to a ``rich.text.Text`` (tested directly and through
snapshots); :class:`SweepChartView` shows one chart at a time and, on the grid, moves a cell
cursor (arrows / hjkl) and posts :class:`SweepChartView.CellSelected` on ``enter``.

Model names and problem titles are trace text: they go through ``clean`` (ktui.view.text) (one line, control
characters visible) and are appended as plain text, never markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget

from ktui.trace.words import count
from ktui.view.charts import (
    CHART_TITLES,
    COMPILED,
    CORRECT,
    FAILED,
    FASTER,
    FIRST_CORRECT_METRICS,
    LEVELS,
    Axis,
    BoxStats,
    GridChart,
    SweepCharts,
    first_correct_axis,
    fit_log_ticks,
    fmt_num,
    fmt_x,
    lin_ticks,
    not_reached_line,
    pct,
)
from ktui.view.text import clean

PALETTE = ("dodger_blue1", "dark_orange", "green3", "magenta2", "cyan2", "yellow2", "red1", "medium_purple1",
           "spring_green2", "hot_pink", "wheat1", "grey70")
LEVEL_STYLE = {FAILED: "bold white on red3", COMPILED: "bold black on dark_orange", CORRECT: "bold white on blue3",
               FASTER: "bold black on green3"}
LEVEL_TEXT = {FAILED: "fail", COMPILED: "comp", CORRECT: "ok"}


def _name(s: object, width: int) -> str:
    t = clean(s).replace("\n", " ")
    if cell_len(t) > width:
        t = set_cell_size(t, max(0, width - 1)) + "…"
    return set_cell_size(t, width)


def _model_name(s: object, width: int, names: Sequence[object] = ()) -> str:
    """A model's name in ``width`` cells: when it does not fit, its last part whole after ``…/``
    (``…/claude-opus-4.8``: cut at the end, three OpenRouter models read ``openrouter/anthropic/…``,
    ``openrouter/google/gem…``, ``openrouter/openai/gpt…``), unless another of ``names`` ends in
    the same part; else cut at the end as before."""
    t = clean(s).replace("\n", " ")
    head, sep, last = t.rpartition("/")
    if sep and head and cell_len(t) > width and 0 < cell_len(last) <= width - 2 \
            and sum(1 for n in names if clean(n).rpartition("/")[2] == last) <= 1:
        return set_cell_size("…/" + last, width)
    return _name(t, width)


def color_of(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


# ---- a braille canvas -----------------------------------------------------------------------------
_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col]


class Braille:
    """``w`` x ``h`` cells of 2 x 4 dots; a cell takes the colour of the last dot set in it."""

    def __init__(self, w: int, h: int) -> None:
        self.w, self.h = max(1, w), max(1, h)
        self.bits = [[0] * self.w for _ in range(self.h)]
        self.color: list[list[str | None]] = [[None] * self.w for _ in range(self.h)]

    def dot(self, x: int, y: int, color: str) -> None:
        if 0 <= x < 2 * self.w and 0 <= y < 4 * self.h:
            cx, cy = x // 2, y // 4
            self.bits[cy][cx] |= _BITS[y % 4][x % 2]
            self.color[cy][cx] = color

    def line(self, x0: int, y0: int, x1: int, y1: int, color: str, dash: bool = False) -> None:
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(n + 1):
            if dash and (i // 2) % 2:
                continue
            self.dot(round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n), color)

    def row(self, cy: int) -> list[tuple[str, str | None]]:
        return [(chr(0x2800 + b) if b else " ", c) for b, c in zip(self.bits[cy], self.color[cy], strict=False)]


def _tick_label(v: float) -> str:
    return f"{v:g}x" if v < 1000 else f"{v:.0e}x"


def _axis(lo: float, hi: float, width: int, log: bool = True, unit: str = "x", pad: int = 0) -> tuple[str, str]:
    """The x axis under a plot ``width`` cells wide: a rule with tick marks, and the labels."""
    rule = ["─"] * width
    labels = [" "] * (width + 8)
    axis = Axis(lo, hi, log)
    if log:  # too many: keep the powers of ten and 2x
        ticks = fit_log_ticks(lo, hi, width // 6, keep=("1", "2"))
    else:
        ticks = lin_ticks(lo, hi, max(2, width // 10))
    last_end = -2
    for t in ticks:
        c = axis.index(t, width)
        lab = _tick_label(t) if unit == "x" else fmt_num(t, unit)
        start = max(0, min(c - len(lab) // 2, width - len(lab)))
        if start <= last_end + 1:
            continue
        rule[c] = "┬"
        for i, ch in enumerate(lab):
            labels[start + i] = ch
        last_end = start + len(lab) - 1
    return " " * pad + "".join(rule), " " * pad + "".join(labels[:width]).rstrip()


# ---- the charts ------------------------------------------------------------------------------------
def _titled(kind: str, charts: SweepCharts, width: int) -> Text:
    """A chart's text so far: its title line."""
    t = Text(no_wrap=True, overflow="crop", end="")
    t.append(_name(f"{CHART_TITLES[kind]} · {count(charts.runs, 'run')}", width).rstrip(), style="bold")
    t.append("\n")
    return t


def _names_width(names: Sequence[object], most: int = 22) -> int:
    """The column for model names (or labels): as wide as the widest, 6 to ``most`` cells."""
    return max(6, min(most, max((cell_len(clean(n)) for n in names), default=6)))


def render_fast_p(charts: SweepCharts, width: int, height: int) -> Text:
    fp = charts.fast_p
    t = _titled("fast_p", charts, width)
    if not fp.curves:
        t.append("no runs", style="dim")
        return t
    legend_max = max(1, min(len(fp.curves), (height - 1) // 3))
    ph = max(3, height - 1 - 2 - legend_max)
    ylab = 5
    pw = max(10, width - ylab - 1)
    cv = Braille(pw, ph)
    x_axis = Axis(fp.lo, fp.hi)

    def X(p: float) -> int:
        return x_axis.index(p, 2 * pw)

    def Y(v: float) -> int:
        return round((1 - v) * (4 * ph - 1))

    colors: dict[str, str] = {}
    for curve in fp.curves:
        if curve.model not in colors:
            colors[curve.model] = color_of(len(colors))
    # the reproduced curves first, so that the recorded ones stay on top where they coincide
    for curve in sorted(fp.curves, key=lambda c: c.kind == "recorded"):
        color = colors[curve.model]
        dash = curve.kind != "recorded"
        pts = curve.steps(fp.lo, fp.hi)
        for (p0, v0), (p1, v1) in zip(pts, pts[1:], strict=False):
            cv.line(X(p0), Y(v0), X(p1), Y(v0), color, dash)
            cv.line(X(p1), Y(v0), X(p1), Y(v1), color, dash)
    one = X(1.0) // 2 if fp.lo < 1 < fp.hi else None
    for cy in range(ph):
        frac = 1 - cy / max(1, ph - 1)
        lab = ""
        if cy == 0:
            lab = "100%"
        elif cy == ph - 1:
            lab = "0%"
        elif ph >= 7 and cy == (ph - 1) // 2:
            lab = f"{frac * 100:.0f}%"
        t.append(lab.rjust(ylab - 1) + " ┤" if lab else " " * (ylab - 1) + " │", style="dim")
        for cx, (ch, color) in enumerate(cv.row(cy)):
            if ch == " " and cx == one:
                t.append("┊", style="grey37")
            else:
                t.append(ch, style=color or "")
        t.append("\n")
    rule, labels = _axis(fp.lo, fp.hi, pw, pad=ylab + 1)
    t.append(rule + "\n", style="dim")
    t.append(_name(labels + "  p", width).rstrip() + "\n", style="dim")
    name_w = _names_width([c.label for c in fp.curves], 24)
    for i, curve in enumerate(fp.curves):
        if i >= legend_max:
            t.append(f"  … {len(fp.curves) - legend_max} more (the HTML report shows all)", style="dim")
            break
        t.append(" ━━ " if curve.kind == "recorded" else " ╍╍ ", style=colors[curve.model])
        t.append(_model_name(curve.label, name_w, [c.label for c in fp.curves]))
        th = fp.thresholds(curve)
        t.append("  " + "  ".join(f"fast_{p:g} {pct(v)}" for p, v in th.items()))
        t.append(f"  of {curve.runs}", style="dim")
        if i < min(len(fp.curves), legend_max) - 1:
            t.append("\n")
    return t


def render_speedup(charts: SweepCharts, width: int, height: int) -> Text:
    sc = charts.speedup
    t = _titled("speedup", charts, width)
    rows = sc.rows
    if not rows:
        t.append("no runs", style="dim")
        return t
    name_w = _names_width([r.model for r in rows])
    stat_w = 22
    sw = max(10, width - name_w - stat_w - 3)
    x_axis = Axis(sc.lo, sc.hi)

    def col(v: float) -> int:
        return x_axis.index(v, sw)

    bins_of = []
    for r in rows:
        b = [0] * sw
        for v in r.speedups:
            b[col(v)] += 1
        bins_of.append(b)
    top = max((max(b) for b in bins_of), default=1) or 1
    blocks = "▁▂▃▄▅▆▇█"
    room = height - 1 - 2
    gap = room >= 2 * len(rows)
    shown = rows if room >= len(rows) else rows[: max(1, room - 1)]
    one = col(1.0)
    for i, r in enumerate(shown):
        color = color_of(i)
        t.append(_model_name(r.model, name_w, [x.model for x in rows]) + " ", style=color)
        t.append("│", style="dim")
        gm = col(r.geomean) if r.geomean is not None else None
        for c in range(sw):
            n = bins_of[i][c]
            if c == gm:
                t.append("┃", style="bold yellow")
            elif n:
                t.append(blocks[min(7, max(0, math.ceil(n / top * 8) - 1))], style=color)
            elif c == one:
                t.append("┊", style="grey37")
            else:
                t.append("·" if gap else " ", style="grey23")
        t.append(" ")
        t.append(f"gm {fmt_x(r.geomean):>7}", style="bold yellow" if r.geomean else "dim")
        t.append(f" n {len(r.speedups)}/{r.runs}", style="dim")
        t.append("\n")
        if gap and i < len(shown) - 1:
            t.append("\n")
    if len(shown) < len(rows):
        t.append(f"  … {count(len(rows) - len(shown), 'more model')}\n", style="dim")
    rule, labels = _axis(sc.lo, sc.hi, sw, pad=name_w + 2)
    t.append(rule + "\n", style="dim")
    t.append(labels + "\n", style="dim")
    t.append(_name(f"bar height: correct runs per bin (max {top}) · ┃ geomean · ┊ 1x", width).rstrip(), style="dim")
    return t


CELL_W = 7  # a grid cell: "12.3x" and a blank; wider when every problem fits with room to spare
MAX_CELL_W = 32


def grid_window(grid: GridChart, width: int, height: int, cursor: tuple[int, int]) -> dict[str, Any]:
    """Which models and problems fit, scrolled so that the cursor is visible."""
    name_w = _names_width(grid.models)
    cell_w = CELL_W
    room = width - name_w - 1
    if grid.problems and room // len(grid.problems) > CELL_W:  # every problem fits: labels get the room
        longest = max(len(clean(k)) for k in grid.problems) + 1
        cell_w = max(CELL_W, min(longest, room // len(grid.problems), MAX_CELL_W))
    cols = max(1, room // cell_w)
    rows = max(1, height - 5)
    mi, pj = cursor
    col0 = 0 if pj < cols else pj - cols + 1
    row0 = 0 if mi < rows else mi - rows + 1
    return {"name_w": name_w, "cell_w": cell_w, "cols": cols, "rows": rows, "col0": col0, "row0": row0}


def _short_problem(key: str, w: int) -> str:
    k = clean(key).replace("\n", " ")
    if "/" in k and len(k) > w:
        k = k.split("/")[-1]
    return _name(k, w)


def render_grid(charts: SweepCharts, width: int, height: int, cursor: tuple[int, int] = (0, 0)) -> Text:
    g = charts.grid
    t = _titled("grid", charts, width)
    if not g.models:
        t.append("no runs", style="dim")
        return t
    win = grid_window(g, width, height, cursor)
    nw, cw = win["name_w"], win["cell_w"]
    probs = g.problems[win["col0"]: win["col0"] + win["cols"]]
    models = g.models[win["row0"]: win["row0"] + win["rows"]]
    t.append(" " * (nw + 1))
    # labels cut to the cell: numbered columns and a key below, full names (two problems read
    # "fused…" at 100 columns in a real Harbor sweep, with 20 empty lines under the grid)
    keyed = any("…" in _short_problem(k, cw - 1) and "…" not in clean(k) for k in probs)
    for j, k in enumerate(probs, start=win["col0"]):
        if not keyed:
            head = _short_problem(k, cw - 1)
        elif cw - 1 >= 10:  # room for a number and the start of the name
            head = _short_problem(f"#{j + 1} {clean(k)}", cw - 1)
        else:
            head = f"#{j + 1}".center(cw - 1)
        t.append(set_cell_size(head, cw - 1) + " ", style="bold")
    t.append("\n")
    for mi, m in enumerate(models, start=win["row0"]):
        t.append(_model_name(m, nw, models) + " ", style="bold" if mi == cursor[0] else "")
        for pj, k in enumerate(probs, start=win["col0"]):
            c = g.cell(m, k)
            here = (mi, pj) == tuple(cursor)
            if c is None:
                txt, st = "·".center(cw - 1), "grey37"
            else:
                txt = (fmt_x(c.speedup) if c.speedup is not None else LEVEL_TEXT.get(c.level, "")).center(cw - 1)
                st = LEVEL_STYLE[c.level]
            if here:
                st = (st + " reverse") if c is not None else "reverse"
            t.append(txt[: cw - 1], style=st)
            t.append(" ")
        t.append("\n")
    more = []
    if len(g.problems) > win["cols"]:
        more.append(f"problems {win['col0'] + 1}-{win['col0'] + len(probs)} of {len(g.problems)}")
    if len(g.models) > win["rows"]:
        more.append(f"models {win['row0'] + 1}-{win['row0'] + len(models)} of {len(g.models)}")
    counts = g.counts()
    for lv in LEVELS:
        t.append(f" {lv} {counts[lv]} ", style=LEVEL_STYLE[lv])
        t.append(" ")
    if more:
        t.append(" " + " · ".join(more), style="dim")
    t.append("\n")
    mi, pj = cursor
    if 0 <= mi < len(g.models) and 0 <= pj < len(g.problems):
        m, k = g.models[mi], g.problems[pj]
        c = g.cell(m, k)
        line = f"{clean(m)} × {clean(g.titles.get(k, k))}: "
        if c is None:
            line += "no runs"
        else:
            line += f"{c.level}, best speedup {fmt_x(c.speedup)}, {count(len(c.runs), 'run')} · enter opens"
        t.append(_name(line, width).rstrip(), style="dim")
    if keyed:
        _grid_key(t, g, probs, win["col0"], width, height)
    return t


def _grid_key(t: Text, g: GridChart, probs: list[str], col0: int, width: int, height: int) -> None:
    """The shown problems' full names by column number, as many lines as the height leaves."""
    room = height - t.plain.count("\n") - 2
    if room < 1:
        return
    entries = [f"#{j + 1} {clean(g.titles.get(k, k))}".replace("\n", " ") for j, k in enumerate(probs, start=col0)]
    lines: list[str] = []
    cur = ""
    for e in entries:
        e = _name(e, width - 1).rstrip()
        if cur and cell_len(cur) + 3 + cell_len(e) > width - 1:
            lines.append(cur)
            cur = e
        else:
            cur = f"{cur}   {e}" if cur else e
    if cur:
        lines.append(cur)
    if len(lines) > room:
        lines = lines[: max(0, room - 1)] + [f"… {count(len(lines) - room + 1, 'more line')} of problem names"]
    t.append("\n\n" + "\n".join(" " + x for x in lines), style="dim")


def _box_line(s: BoxStats, lo: float, hi: float, w: int, log: bool, color: str) -> Text:
    if log:
        lo, hi = max(lo, 1e-9), max(hi, 1e-9)
    axis = Axis(lo, hi, log)

    def col(v: float) -> int:
        return axis.index(v, w)

    cells = [" "] * w
    a, q1, md, q3, b = col(s.lo), col(s.q1), col(s.median), col(s.q3), col(s.hi)
    for c in range(a, b + 1):
        cells[c] = "─"
    for c in range(q1, q3 + 1):
        cells[c] = "█"
    cells[a], cells[b] = "├", "┤"
    if q1 == q3:
        cells[q1] = "█"
    if s.n == 1:
        cells = [" "] * w
    out = Text(end="")
    for c, ch in enumerate(cells):
        if c == md:
            out.append("●" if s.n == 1 else "┃", style="bold yellow")
        else:
            out.append(ch, style=color)
    return out


def render_first_correct(charts: SweepCharts, width: int, height: int) -> Text:
    fc = charts.first_correct
    t = _titled("first_correct", charts, width)
    rows = fc.rows
    if not rows:
        t.append("no runs", style="dim")
        return t
    name_w = _names_width([r.model for r in rows])
    stat_w = 24
    bw = max(10, width - name_w - stat_w - 3)
    reached = [(i, r) for i, r in enumerate(rows) if r.reached]
    never = not_reached_line(rows, 10_000)
    per = max(1, (height - 1 - (1 if never else 0)) // 3 - 2)  # model rows per metric
    for mk, label, unit in FIRST_CORRECT_METRICS:
        lo, hi, log = first_correct_axis(fc, mk)
        head = f"{label} to the first correct kernel" + (" (log scale)" if log else "")
        if len(reached) > per:
            head += f" · {per} of {count(len(reached), 'model')}"
        t.append(head + "\n", style="bold")
        if not reached:
            t.append("  no run reached a correct kernel\n", style="dim")
            continue
        for i, r in reached[:per]:
            color = color_of(i)
            t.append(_model_name(r.model, name_w, [x.model for x in rows]) + " ", style=color)
            t.append("│", style="dim")
            s = r.stats.get(mk)
            if s is None:
                t.append(" " * bw)
                t.append(" not recorded", style="dim")
                t.append(f" {r.reached}/{r.runs}\n", style="dim")
                continue
            t.append_text(_box_line(s, lo, hi, bw, log, color))
            t.append(f" median {fmt_num(s.median, unit)}", style="bold yellow")
            t.append(f" {r.reached}/{r.runs}\n", style="dim")
        rule, labels = _axis(lo, hi, bw, log=log, unit=unit or "n", pad=name_w + 2)
        t.append(labels + "\n", style="dim")
    if never:
        t.append(_name(never, width).rstrip(), style="dim")
    return t


RENDERERS = {"fast_p": render_fast_p, "speedup": render_speedup, "first_correct": render_first_correct}


def render_chart(kind: str, charts: SweepCharts, width: int, height: int, cursor: tuple[int, int] = (0, 0)) -> Text:
    """One chart laid out for ``width`` x ``height`` cells (lines cut to fit)."""
    if kind == "grid":
        t = render_grid(charts, width, height, cursor)
    else:
        t = RENDERERS[kind](charts, width, height)
    lines = t.split("\n", allow_blank=True)[:height]
    for ln in lines:
        ln.truncate(width, overflow="ellipsis")
    out = Text("\n", no_wrap=True, overflow="crop", end="").join(lines)
    return out


# ---- the widget ------------------------------------------------------------------------------------
class SweepChartView(Widget, can_focus=True):
    """One chart of the sweep; the screen sets ``charts`` (from a worker) and ``kind``."""

    DEFAULT_CSS = """
    SweepChartView { height: 1fr; padding: 0 1; background: $surface; }
    """
    BINDINGS = [
        Binding("up,k", "move(-1,0)", "Up", show=False),
        Binding("down,j", "move(1,0)", "Down", show=False),
        Binding("left,h", "move(0,-1)", "Left", show=False),
        Binding("right,l", "move(0,1)", "Right", show=False),
        Binding("enter", "open_cell", "Open cell", show=True),
    ]

    class CellSelected(Message):
        """``enter`` on a grid cell: its runs (summaries)."""

        def __init__(self, model: str, problem: str, runs: list[Any]) -> None:
            super().__init__()
            self.model, self.problem, self.runs = model, problem, runs

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.charts: SweepCharts | None = None
        self.runs: Sequence[Any] = ()
        self.kind = "fast_p"
        self.cursor = (0, 0)
        self.pending = False
        self._drawn: tuple[tuple, Text] | None = None

    def show(self, kind: str) -> None:
        self.kind = kind
        self.refresh()

    def set_charts(self, charts: SweepCharts, runs: Sequence[Any]) -> None:
        self.charts, self.runs, self.pending = charts, runs, False
        g = charts.grid
        self.cursor = (min(self.cursor[0], max(0, len(g.models) - 1)), min(self.cursor[1], max(0, len(g.problems) - 1)))
        self.refresh()

    def render(self) -> Text:
        w, h = self.content_region.width or self.size.width, self.content_region.height or self.size.height
        if self.charts is None:
            return Text("computing the charts…", style="dim")
        key = (id(self.charts), self.kind, w, h, self.cursor if self.kind == "grid" else None)
        if self._drawn is None or self._drawn[0] != key:  # redraws (focus, hover) reuse the layout
            self._drawn = (key, render_chart(self.kind, self.charts, max(20, w), max(6, h), self.cursor))
        return self._drawn[1]

    def action_move(self, dy: int, dx: int) -> None:
        if self.kind != "grid" or self.charts is None:
            return
        g = self.charts.grid
        mi = max(0, min(len(g.models) - 1, self.cursor[0] + dy))
        pj = max(0, min(len(g.problems) - 1, self.cursor[1] + dx))
        self.cursor = (mi, pj)
        self.refresh()

    def action_open_cell(self) -> None:
        if self.kind != "grid" or self.charts is None:
            return
        g = self.charts.grid
        mi, pj = self.cursor
        if not (0 <= mi < len(g.models) and 0 <= pj < len(g.problems)):
            return
        c = g.cell(g.models[mi], g.problems[pj])
        if c is None:
            self.notify("no runs in this cell", severity="warning")
            return
        self.post_message(self.CellSelected(c.model, c.problem, [self.runs[i] for i in c.runs]))
