"""The view of a profile (``ktui repro --profile``, the repro panel's ``p``): hardware counters,
recorded vs reproduced, the launches of each side, the roofline chart.

    from ktui.view.profile import profile_view
    v = profile_view(report)        # a ktui.repro.profile.run.ProfileReport
    v.verdict, v.sides, v.rows, v.chart, v.parts

Every string from the profiler, the kernel (its demangled names) or the trace is cleaned here
(:func:`ktui.view.text.clean`). No Rich, no Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ktui.repro.judging.names import NOT_RECORDED, SHOWN_ONLY
from ktui.repro.profile.compare import GROUP_TITLE, group_of
from ktui.trace.words import plural
from ktui.view import roles as R
from ktui.view.doc import Para, Part, Table, blank, cell, para
from ktui.view.repro import ComparisonRow, comparison_columns, ratio_text, verdict_span_role
from ktui.view.text import clean, one_line


@dataclass(frozen=True, slots=True)
class SideView:
    side: str  # kernel | reference
    status: str
    text: str  # "3 launches (gemm<…>), 12.40 μs in one forward, 38 ncu passes" or "not profiled: why"
    wall: str  # ", 12.5 s under ncu" or ""
    launches: tuple[str, ...]  # one line per launch, when there are several


@dataclass(frozen=True, slots=True)
class ProfileView:
    version: str
    sha1: str
    status: str
    verdict: str
    reason: str
    setup: str  # GPU · ncu version · clock and cache control
    sides: tuple[SideView, ...]
    rows: tuple[ComparisonRow, ...]
    callouts: tuple[str, ...]
    stalls: str
    chart: tuple[str, ...]
    notes: tuple[str, ...]
    timing: str
    parts: tuple[Part, ...]


def _pct(v: Any) -> str:
    return f"{v:.1f} %" if isinstance(v, (int, float)) else "n/a"


def _int(v: Any) -> str:
    return f"{int(v)}" if isinstance(v, (int, float)) else "n/a"


def _us(s: Any) -> str:
    return f"{s * 1e6:,.2f} μs" if isinstance(s, (int, float)) else "n/a"


def short_name(name: Any, limit: int = 48) -> str:
    """A kernel's demangled name without its return type, arguments and template arguments."""
    s = one_line(str(name or "?"))
    if s.startswith("void "):
        s = s[5:]
    depth, out = 0, []
    for ch in s:
        if ch == "(" and depth == 0:
            break
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip() or "?"
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _side(name: str, sp: Any) -> SideView:
    f = _d(sp.forward)
    launches = [k for k in sp.launches if isinstance(k, Mapping)]
    wall = ""
    if sp.status != "completed":
        text = f"not profiled: {one_line(sp.message)}"
    else:
        names = ", ".join(sorted({short_name(k.get("name")) for k in launches}))
        n = f.get("launches", 0)
        text = f"{_int(n)} {plural(n, 'launch')} ({names or 'none'}), {_us(f.get('duration_s'))} in one forward"
        passes = max((v for v in sp.passes.values() if isinstance(v, (int, float))), default=None) if isinstance(
            sp.passes, Mapping) else None
        if passes:
            text += f", {passes} ncu passes"
        if isinstance(sp.wall_seconds, (int, float)):
            wall = f", {sp.wall_seconds:.1f} s under ncu"
    lines: tuple[str, ...] = ()
    if sp.status == "completed" and len(launches) > 1:
        lines = tuple(f"  #{one_line(k.get('id'))} {short_name(k.get('name'))}: {_us(k.get('duration_s'))}, "
                      f"SM {_pct(k.get('sm_pct'))}, DRAM {_pct(k.get('dram_pct'))}, "
                      f"occupancy {_pct(k.get('occupancy_pct'))}, grid {_int(k.get('grid_size'))} x "
                      f"block {_int(k.get('block_size'))}" for k in launches)
    return SideView(name, one_line(sp.status), text, wall, lines)


def _stalls(kf: Mapping[str, Any]) -> str:
    top = [s for s in (kf.get("stalls_top") or []) if isinstance(s, Mapping)]
    if not top:
        return ""
    fam = str(kf.get("stall_family") or "")
    total = sum(v for v in _d(kf.get("stall_counts")).values() if isinstance(v, (int, float)) and v > 0)
    what = (f"share of {total:,.0f} stall samples" if fam.startswith("smsp__pcsamp") else
            "share of stall cycles per issued instruction (no PC samples)")
    few = " — too few samples to mean much" if fam.startswith("smsp__pcsamp") and total < 100 else ""
    return one_line(f"measured warp stalls ({what}{few}): "
                    + ", ".join(f"{s.get('reason')} {_pct(s.get('share_pct'))}" for s in top))


def _table(report: Any) -> tuple[Table, list[ComparisonRow]]:
    cells: list[tuple[Any, ...]] = []
    rows: list[ComparisonRow] = []
    group = None
    n = 0
    for r in report.rows:
        g = group_of(r)
        if g != group:
            group = g
            cells.append((cell(one_line(GROUP_TITLE.get(g, g)), role=R.GROUP), cell(), cell(), cell(), cell()))
        foot = None
        if r.note and (r.verdict not in (NOT_RECORDED, SHOWN_ONLY) or "impossible" in r.note
                       or "implausible" in r.note):
            n += 1
            foot = n
        row = ComparisonRow(one_line(r.label), one_line(r.recorded_text), one_line(r.reproduced_text),
                            ratio_text(r.ratio), clean(r.verdict), one_line(r.note), foot)
        rows.append(row)
        vcell = cell(row.verdict, *([(f" [{foot}]", R.ASIDE)] if foot else []), role=verdict_span_role(r.verdict, ""))
        cells.append((cell(row.label), cell(row.recorded), cell(row.reproduced), cell(row.ratio), vcell))
    return Table("comparison", comparison_columns(24), tuple(cells)), rows


def _verdict_para(report: Any, reason: str) -> Para:
    return para("verdict: ", (clean(report.verdict), verdict_span_role(report.verdict)), f" — {reason}")


def profile_view(report: Any) -> ProfileView:
    """The view of a ``ProfileReport`` (``ktui.repro.profile.run``)."""
    verdict = clean(report.verdict)
    parts: list[Part] = [para((one_line(f"{report.version} · sha1 {report.sha1[:12]} · Nsight Compute profile"),
                               R.STRONG), "   ", (f" {verdict.upper()} ", verdict_span_role(report.verdict)))]
    env = _d(report.environment)
    setup = " · ".join([one_line(env.get("gpu") or "GPU unknown"), f"ncu {one_line(report.ncu_version or '?')}",
                        f"--clock-control {one_line(report.clock_control)}",
                        f"--cache-control {one_line(report.cache_control)}"])
    parts.append(para(setup, role=R.ASIDE))
    sides: list[SideView] = []
    for name in ("kernel", "reference"):
        sp = report.sides.get(name) if isinstance(report.sides, Mapping) else None
        if sp is None:
            continue
        sv = _side(name, sp)
        sides.append(sv)
        parts.append(para(f"{name}: ", sv.text, *([(sv.wall, R.ASIDE)] if sv.wall else []), role=R.STRONG))
        parts += [para(x, role=R.ASIDE) for x in sv.launches]
    empty = ProfileView(one_line(report.version), clean(report.sha1), one_line(report.status), verdict, "", setup,
                        tuple(sides), (), (), "", (), (), "", ())
    if not report.rows:
        reason = one_line(report.reason or report.message)
        parts += [_verdict_para(report, reason), blank()]
        return _replace(empty, reason=reason, parts=tuple(parts))
    table, rows = _table(report)
    parts.append(table)
    parts += [para(f"  [{r.footnote}] {r.label}: {r.note}", role=R.ASIDE) for r in rows if r.footnote]
    callouts = tuple(one_line(c) for c in report.callouts)
    if callouts:
        parts.append(para("values the page cannot have:", role=R.CALLOUT_HEAD))
        parts += [para(f"  ! {c}", role=R.CALLOUT) for c in callouts]
    kside = report.sides.get("kernel") if isinstance(report.sides, Mapping) else None
    stalls = _stalls(_d(kside.forward) if kside is not None else {})
    if stalls:
        parts.append(para(stalls, role=R.ASIDE))
    chart = tuple(one_line(ln) for ln in (_d(report.roofline).get("chart") or []))
    if chart:
        parts.append(para("roofline", role=R.STRONG))
        legend = next((i for i, ln in enumerate(chart) if ln.startswith("roof:")), len(chart))
        parts += [para(ln, crop=i < legend) for i, ln in enumerate(chart)]
    notes = tuple(one_line(n) for n in report.notes)
    parts += [para(f"note: {n}", role=R.ASIDE) for n in notes]
    reason = one_line(report.reason)
    parts.append(_verdict_para(report, reason))
    timing = f"(profiled in {report.wall_seconds:.1f} s)" if isinstance(report.wall_seconds, (int, float)) else ""
    created = getattr(report, "created", "")
    if created:
        timing = one_line(f"(kept profile from {created})")
    if timing:
        parts.append(para(timing, role=R.ASIDE))
    parts.append(blank())
    return _replace(empty, reason=reason, rows=tuple(rows), callouts=callouts, stalls=stalls, chart=chart, notes=notes,
                    timing=timing, parts=tuple(parts))


def _replace(v: ProfileView, **kw: Any) -> ProfileView:
    from dataclasses import replace

    return replace(v, **kw)
