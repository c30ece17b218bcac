"""A log-log roofline drawn with Unicode braille dots: plain text lines, no markup.

Used by ``ktui repro --profile`` (printed as is), the app's repro panel (inside a Static) and
``--json`` (``roofline.chart``). x: arithmetic intensity (FLOP/byte); y: FLOP/s. The roof is
the DRAM slope up to the FP32 ridge point, then the FP32 ceiling; the non-tensor FP16 ceiling
is dotted when ncu reported it. Points: ``K`` the kernel, ``R`` the reference (``*`` when they
share a cell); a point with no FLOP at all cannot sit on a log axis and is drawn on the floor
(its legend line says so).
"""

from __future__ import annotations

import math
from typing import Any

_BRAILLE = 0x2800
# dot bit for (column 0/1, row 0..3) inside a braille cell
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
MARKS = {"kernel": "K", "reference": "R"}


def si(x: float | None, unit: str = "") -> str:
    """1.2e12 -> '1.2T' (+unit)."""
    if x is None:
        return "n/a"
    if x == 0:
        return f"0{unit}"
    for f, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m")):
        if abs(x) >= f:
            v = x / f
            s = f"{v:.3g}" if v < 100 else f"{v:.0f}"
            return f"{s}{p}{unit}"
    return f"{x:.2g}{unit}"


def _dec(x: float) -> str:
    if x >= 1:
        return f"{x:g}" if x < 1e4 else f"1e{int(round(math.log10(x)))}"
    return f"{x:g}"


def _range(values: list[float], lo_default: float, hi_default: float) -> tuple[float, float]:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    lo = min(vals + [lo_default])
    hi = max(vals + [hi_default])
    lo_e, hi_e = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if hi_e - lo_e < 2:
        hi_e = lo_e + 2
    return 10.0 ** lo_e, 10.0 ** hi_e


def roofline_chart(roof: dict[str, Any], width: int = 60, height: int = 14) -> list[str]:
    """The chart as lines of text (``width`` plot columns plus an axis gutter)."""
    bw = roof.get("peak_dram_bps")
    peaks = roof.get("peak_flops") or {}
    p32 = peaks.get("fp32")
    points = list(roof.get("points") or [])
    if not bw or not p32:
        return ["(no roofline: ncu reported no peak DRAM bandwidth or FP32 peak for this device)"]
    width, height = max(20, int(width)), max(6, int(height))
    r32 = p32 / bw
    ais = [p["ai"] for p in points if p.get("ai")]
    xlo, xhi = _range(ais + [r32 / 100.0, r32 * 20.0], r32 / 100.0, r32 * 20.0)
    p16 = peaks.get("fp16")
    pt = peaks.get("tensor")
    ys = [p["flops"] for p in points if p.get("flops")]
    ytop = max([p32, p16 or 0.0, pt or 0.0] + ys)
    ylo, yhi = _range(ys + [bw * xlo, ytop * 1.05], bw * xlo, ytop * 1.05)
    ylo = max(ylo, yhi / 1e8)
    cols, rows = 2 * width, 4 * height
    lx0, lx1, ly0, ly1 = math.log10(xlo), math.log10(xhi), math.log10(ylo), math.log10(yhi)

    def xpix(x: float) -> int:
        return min(cols - 1, max(0, int((math.log10(x) - lx0) / (lx1 - lx0) * (cols - 1) + 0.5)))

    def ypix(y: float) -> int | None:  # 0 = top row
        if y <= 0:
            return None
        f = (math.log10(y) - ly0) / (ly1 - ly0)
        if f < 0 or f > 1:
            return None
        return min(rows - 1, max(0, int((1 - f) * (rows - 1) + 0.5)))

    dots = [[0] * width for _ in range(height)]

    def dot(cx: int, cy: int) -> None:
        dots[cy // 4][cx // 2] |= _BITS[cx % 2][cy % 4]

    prev = None
    for cx in range(cols):
        x = 10 ** (lx0 + (lx1 - lx0) * cx / (cols - 1))
        cy = ypix(min(p32, bw * x))
        if cy is not None:
            dot(cx, cy)
            if prev is not None:  # fill steep parts of the slope
                for yy in range(min(prev, cy) + 1, max(prev, cy)):
                    dot(cx, yy)
            prev = cy
        for extra, every in ((p16, 3), (pt, 2)):
            if extra and extra > p32 and cx % every == 0 and bw * x > p32:
                cye = ypix(min(extra, bw * x))
                if cye is not None:
                    dot(cx, cye)
    grid = [[chr(_BRAILLE + b) if b else " " for b in row] for row in dots]
    # the ridge: a tick on the floor row
    rx = xpix(r32) // 2
    if grid[height - 1][rx] == " ":
        grid[height - 1][rx] = "┊"
    floor_note = False
    placed: dict[tuple[int, int], str] = {}
    for p in points:
        mark = MARKS.get(p.get("name", ""), "?")
        ai, fl = p.get("ai"), p.get("flops")
        if ai and fl and ypix(fl) is not None:
            cell = (ypix(fl) // 4, xpix(ai) // 2)
        else:
            # no FLOP (or off the chart): on the floor, at its intensity if it has one, else the left edge
            cell = (height - 1, xpix(ai) // 2 if ai else 0)
            floor_note = True
        placed[cell] = "*" if cell in placed and placed[cell] != mark else mark
    for (cy, cx), mark in placed.items():
        grid[cy][cx] = mark
    # y labels: decades
    labels = {}
    for e in range(int(round(ly0)), int(round(ly1)) + 1):
        cy = ypix(10.0 ** e)
        if cy is not None:
            labels[cy // 4] = si(10.0 ** e)
    gutter = max(len(v) for v in labels.values()) + 1 if labels else 6
    out = ["FLOP/s"]
    for i, row in enumerate(grid):
        out.append(f"{labels.get(i, ''):>{gutter - 1}} │" + "".join(row))
    out.append(" " * gutter + "└" + "─" * width)
    axis = [" "] * (width + 8)
    e = math.floor(lx0)
    while 10.0 ** e <= xhi * 1.0001:
        if 10.0 ** e >= xlo * 0.9999:
            cx = xpix(10.0 ** e) // 2
            s = _dec(10.0 ** e)
            if all(c == " " for c in axis[max(0, cx - 1): cx + len(s) + 1]):
                axis[cx: cx + len(s)] = list(s)
        e += 1
    out.append(" " * (gutter + 1) + "".join(axis).rstrip() + "  FLOP/byte")
    legend = (f"roof: DRAM {si(bw, 'B/s')} · FP32 {si(p32, 'FLOP/s')}"
              + (f" · FP16 {si(p16, 'FLOP/s')} (dotted)" if p16 and p16 > p32 else "")
              + (f" · tensor {si(pt, 'FLOP/s')} (dotted, dense FP16/BF16)" if pt and pt > p32 else "")
              + f" · ridge ┊ {r32:.3g} FLOP/B")
    out.append(legend)
    for p in points:
        mark = MARKS.get(p.get("name", ""), "?")
        if p.get("flop") == 0 or (p.get("flop") is not None and not p.get("flops")):
            where = f"no FLOP (drawn on the floor), {si(p.get('dram_bps'), 'B/s')} DRAM"
        elif p.get("ai") is None:
            where = "n/a (no FLOP or DRAM counters)" + (" (drawn on the floor)" if floor_note else "")
        else:
            where = (f"AI {p['ai']:.3g} FLOP/B, {si(p.get('flops'), 'FLOP/s')}"
                     + (f" = {p['pct_of_roof']:.2g} % of the {p.get('precision', 'fp32')} roof there"
                        if p.get("pct_of_roof") is not None else ""))
        out.append(f"{mark} {p.get('name')}: {where} — {p.get('words')}")
    return out
