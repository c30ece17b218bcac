"""The sweep charts as SVG for the HTML report (``ktui report``), from :mod:`ktui.view.charts`.

Each function returns one ``<svg>`` element as a string. Every piece of trace text (model names,
problem titles) goes through :func:`ktui.view.text.one_line` and :func:`html.escape`; numbers
are formatted here. One ``<g class="series">`` per plotted series (a model's curve, strip, grid
row or box), so a test can count them; grid cells carry ``data-cell`` (their index in the
report's cell list) for the page's click-to-filter.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from ktui.trace.words import count
from ktui.view.charts import (
    FIRST_CORRECT_METRICS,
    LEVELS,
    Axis,
    FastPChart,
    FirstCorrectChart,
    GridChart,
    SpeedupChart,
    first_correct_axis,
    fit_log_ticks,
    fmt_num,
    fmt_x,
    lin_ticks,
    model_label,
    not_reached_line,
    pct,
)
from ktui.view.text import one_line

PALETTE = ("#3b8eea", "#f28e2b", "#2ca02c", "#d62fd6", "#17becf", "#c9b600", "#e03c31", "#9467bd",
           "#3fd59a", "#ff6fb0", "#c7a97c", "#999999")
LEVEL_FILL = {"failed": "#c0392b", "compiled": "#e67e22", "correct": "#2f5bd3", "faster": "#27ae60"}


def color_of(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def esc(s: object, limit: int = 0) -> str:
    return html.escape(one_line(s, limit), quote=True)


def model_esc(name: object, names: Sequence[object], limit: int = 28) -> str:
    """A model's name in a chart's label column (:func:`ktui.view.charts.model_label`), escaped."""
    text = one_line(name)
    short = model_label(text, limit, [one_line(n) for n in names])
    return html.escape(short, quote=True) if short else esc(text, limit)


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


_FLOOR = 1e-12  # log axes: smaller values are drawn as this one


class _Scale:
    """An :class:`~ktui.view.charts.Axis` drawn from x0 to x1 (pixels)."""

    def __init__(self, axis: Axis, x0: float, x1: float) -> None:
        self.axis, self.x0, self.x1 = axis, x0, x1

    def __call__(self, v: float) -> float:
        return self.x0 + self.axis.fraction(v) * (self.x1 - self.x0)


def _svg(cls: str, w: int, h: int, body: list[str], label: str) -> str:
    return (f'<svg class="chart {cls}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
            f'aria-label="{html.escape(label)}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _x_axis(scale, ticks: list[float], y: float, label, out: list[str]) -> None:
    out.append(f'<line class="axis" x1="{_n(scale.x0)}" y1="{_n(y)}" x2="{_n(scale.x1)}" y2="{_n(y)}"/>')
    last = -1e9
    for t in ticks:
        x = scale(t)
        if x - last < 34:
            continue
        last = x
        out.append(f'<line class="tick" x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x)}" y2="{_n(y + 4)}"/>'
                   f'<text class="tl" x="{_n(x)}" y="{_n(y + 16)}" text-anchor="middle">{html.escape(label(t))}</text>')


def _xticks(lo: float, hi: float) -> list[float]:
    return fit_log_ticks(lo, hi, 14)


# ---- fast_p -----------------------------------------------------------------------------------------
def fast_p_svg(fp: FastPChart) -> str:
    W, H, L, R, T, B = 860, 340, 52, 20, 14, 44
    sx = _Scale(Axis(fp.lo, fp.hi, floor=_FLOOR), L, W - R)

    def sy(v: float) -> float:
        return T + (1 - v) * (H - T - B)

    out: list[str] = []
    for v in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line class="grid" x1="{L}" y1="{_n(sy(v))}" x2="{W - R}" y2="{_n(sy(v))}"/>'
                   f'<text class="tl" x="{L - 6}" y="{_n(sy(v) + 4)}" text-anchor="end">{pct(v)}</text>')
    if fp.lo < 1 < fp.hi:
        out.append(f'<line class="one" x1="{_n(sx(1))}" y1="{T}" x2="{_n(sx(1))}" y2="{H - B}"/>')
    _x_axis(sx, _xticks(fp.lo, fp.hi), H - B, lambda t: f"{t:g}x", out)
    out.append(f'<text class="al" x="{(L + W - R) // 2}" y="{H - 6}" text-anchor="middle">p (speedup threshold, log scale)</text>')
    colors: dict[str, str] = {}
    for c in fp.curves:
        colors.setdefault(c.model, color_of(len(colors)))
    for c in fp.curves:
        pts = c.steps(fp.lo, fp.hi)
        d = [f"M{_n(sx(pts[0][0]))},{_n(sy(pts[0][1]))}"]
        for (_p0, _v0), (p1, v1) in zip(pts, pts[1:], strict=False):
            d.append(f"H{_n(sx(p1))}V{_n(sy(v1))}")
        dash = ' stroke-dasharray="6 4"' if c.kind != "recorded" else ""
        th = ", ".join(f"fast_{p:g} {pct(v)}" for p, v in fp.thresholds(c).items())
        out.append(f'<g class="series" data-model="{esc(c.model)}" data-kind="{c.kind}">'
                   f'<title>{esc(c.label)}: {th} (of {c.runs})</title>'
                   f'<path d="{"".join(d)}" stroke="{colors[c.model]}" stroke-width="2.5" fill="none"{dash}/></g>')
    return _svg("fast-p", W, H, out, "fast_p over p per model")


# ---- speedup distribution ----------------------------------------------------------------------------
def speedup_svg(sc: SpeedupChart) -> str:
    rows = sc.rows
    L, R, T, RH = 200, 150, 10, 30
    W = 860
    H = T + RH * max(1, len(rows)) + 40
    sx = _Scale(Axis(sc.lo, sc.hi, floor=_FLOOR), L, W - R)
    out: list[str] = []
    if sc.lo < 1 < sc.hi:
        out.append(f'<line class="one" x1="{_n(sx(1))}" y1="{T}" x2="{_n(sx(1))}" y2="{H - 40}"/>')
    for i, r in enumerate(rows):
        y = T + RH * i + RH / 2
        col = color_of(i)
        g = [f'<g class="series" data-model="{esc(r.model)}">',
             f'<text class="ml" x="{L - 8}" y="{_n(y + 4)}" text-anchor="end">{model_esc(r.model, [x.model for x in sc.rows])}</text>',
             f'<line class="grid" x1="{L}" y1="{_n(y)}" x2="{W - R}" y2="{_n(y)}"/>']
        for j, v in enumerate(r.speedups):
            jy = y + ((j * 7) % 11 - 5)
            g.append(f'<circle cx="{_n(sx(v))}" cy="{_n(jy)}" r="4" fill="{col}" fill-opacity="0.75">'
                     f'<title>{fmt_x(v)}</title></circle>')
        if r.geomean is not None:
            gx = sx(r.geomean)
            g.append(f'<line class="gm" x1="{_n(gx)}" y1="{_n(y - 11)}" x2="{_n(gx)}" y2="{_n(y + 11)}">'
                     f'<title>geomean {fmt_x(r.geomean)}</title></line>')
        g.append(f'<text class="tl" x="{W - R + 8}" y="{_n(y + 4)}">gm {fmt_x(r.geomean)} · {len(r.speedups)}/{r.runs}</text>')
        g.append("</g>")
        out.append("".join(g))
    _x_axis(sx, _xticks(sc.lo, sc.hi), H - 40, lambda t: f"{t:g}x", out)
    out.append(f'<text class="al" x="{(L + W - R) // 2}" y="{H - 6}" text-anchor="middle">speedup of correct runs '
               '(log scale); the bar is the geometric mean</text>')
    return _svg("speedup", W, H, out, "speedup distribution per model")


# ---- grid -----------------------------------------------------------------------------------------------
def grid_svg(g: GridChart, cell_index: dict[tuple[str, str], int]) -> str:
    CW, CH, L, T = 64, 26, 200, 120
    # a problem's label leans right from the top of its column (-40 degrees): the chart is as wide
    # as the last one reaches (12 px text: about 7.2 px a character), not 20 px past the columns
    reach = max((CW * j + CW / 2 + 4 + math.cos(math.radians(40)) * 7.2 * len(one_line(k, 22))
                 for j, k in enumerate(g.problems)), default=0.0)
    W = L + max(CW * max(1, len(g.problems)) + 20, math.ceil(reach) + 8)
    H = T + CH * max(1, len(g.models)) + 40
    out: list[str] = []
    for j, k in enumerate(g.problems):
        x = L + CW * j + CW / 2
        out.append(f'<text class="pl" transform="translate({_n(x + 4)},{T - 6}) rotate(-40)">'
                   f'<title>{esc(g.titles.get(k, k))}</title>{esc(k, 22)}</text>')
    for i, m in enumerate(g.models):
        y = T + CH * i
        row = [f'<g class="series" data-model="{esc(m)}">',
               f'<text class="ml" x="{L - 8}" y="{_n(y + CH / 2 + 4)}" text-anchor="end">{model_esc(m, g.models)}</text>']
        for j, k in enumerate(g.problems):
            c = g.cell(m, k)
            x = L + CW * j
            if c is None:
                row.append(f'<rect class="empty" x="{x + 1}" y="{y + 1}" width="{CW - 2}" height="{CH - 2}"/>')
                continue
            label = fmt_x(c.speedup) if c.speedup is not None else c.level
            row.append(f'<g class="cell lv-{c.level}" data-cell="{cell_index[(m, k)]}" tabindex="0">'
                       f'<title>{esc(m)} × {esc(g.titles.get(k, k))}: {c.level}, best {fmt_x(c.speedup)}, '
                       f'{count(len(c.runs), "run")}</title>'
                       f'<rect x="{x + 1}" y="{y + 1}" width="{CW - 2}" height="{CH - 2}" rx="3" '
                       f'fill="{LEVEL_FILL[c.level]}"/>'
                       f'<text x="{_n(x + CW / 2)}" y="{_n(y + CH / 2 + 4)}" text-anchor="middle">{label}</text></g>')
        row.append("</g>")
        out.append("".join(row))
    counts = g.counts()
    x = L
    for lv in LEVELS:
        out.append(f'<rect x="{x}" y="{H - 28}" width="14" height="14" fill="{LEVEL_FILL[lv]}"/>'
                   f'<text class="tl" x="{x + 18}" y="{H - 16}">{lv} {counts[lv]}</text>')
        x += 120
    return _svg("grid", W, H, out, "best outcome per model and problem")


# ---- first correct ---------------------------------------------------------------------------------------
def first_correct_svg(fc: FirstCorrectChart) -> str:
    rows = [(i, r) for i, r in enumerate(fc.rows) if r.reached]
    never = not_reached_line(fc.rows)
    W, L, R, RH = 860, 200, 150, 24
    panel = 30 + RH * max(1, len(rows)) + 26
    H = panel * len(FIRST_CORRECT_METRICS) + (24 if never else 0) + 6
    out: list[str] = []
    for pi, (mk, label, unit) in enumerate(FIRST_CORRECT_METRICS):
        top = pi * panel
        lo, hi, log = first_correct_axis(fc, mk)
        sx = _Scale(Axis(lo, hi, log, floor=_FLOOR), L, W - R)
        out.append(f'<text class="ct" x="10" y="{top + 18}">{label} to the first correct kernel'
                   f'{" (log scale)" if log else ""}</text>')
        for n, (i, r) in enumerate(rows):
            y = top + 30 + RH * n + RH / 2
            col = color_of(i)
            s = r.stats.get(mk)
            g = [f'<g class="series" data-model="{esc(r.model)}" data-metric="{mk}">',
                 f'<text class="ml" x="{L - 8}" y="{_n(y + 4)}" text-anchor="end">{model_esc(r.model, [x.model for x in fc.rows])}</text>']
            if s is None:
                g.append(f'<text class="tl" x="{L}" y="{_n(y + 4)}">not recorded ({r.reached}/{r.runs} correct)</text>')
            else:
                a, q1, md, q3, b = (sx(v) for v in (s.lo, s.q1, s.median, s.q3, s.hi))
                g.append(f'<line x1="{_n(a)}" y1="{_n(y)}" x2="{_n(b)}" y2="{_n(y)}" stroke="{col}" stroke-width="1.5"/>'
                         f'<rect x="{_n(q1)}" y="{_n(y - 7)}" width="{_n(max(2, q3 - q1))}" height="14" fill="{col}" '
                         f'fill-opacity="0.6" stroke="{col}"/>'
                         f'<line class="gm" x1="{_n(md)}" y1="{_n(y - 9)}" x2="{_n(md)}" y2="{_n(y + 9)}"/>')
                for v in s.values:
                    g.append(f'<circle cx="{_n(sx(v))}" cy="{_n(y)}" r="2.5" fill="#fff" fill-opacity="0.8">'
                             f'<title>{fmt_num(v, unit)}</title></circle>')
                g.append(f'<text class="tl" x="{W - R + 8}" y="{_n(y + 4)}">median {fmt_num(s.median, unit)} · '
                         f'{r.reached}/{r.runs}</text>')
            g.append("</g>")
            out.append("".join(g))
        ay = top + 30 + RH * max(1, len(rows)) + 4
        ticks = _xticks(lo, hi) if log else lin_ticks(lo, hi, 8)
        _x_axis(sx, ticks, ay, lambda t, u=unit: fmt_num(t, u), out)
    if never:
        out.append(f'<text class="tl" x="10" y="{H - 8}">{html.escape(never)}</text>')
    return _svg("first-correct", W, H, out, "turns, tokens and wall time to the first correct kernel")
