"""Recorded vs reproduced for the hardware-counter rows of a run page.

One row per metric the trace recorded under ``sol``, ``roofline`` and ``warp_stalls`` (in the
trace's order), then the measured top-5 stall reasons the page did not name, and a few
measured figures the page lacks (``not recorded``). Verdicts follow the timing rows
(:mod:`ktui.repro.verdict`): ``reproduced`` within tolerance, ``differs`` outside it,
``not recorded`` when the trace has no value or ncu did not report one (shown as "n/a": never
invented), ``shown only`` for what cannot be compared. Tolerances per kind are in
:data:`ktui.repro.profile.metrics.PAGE_METRICS`.

Values that cannot be true (a share of stall samples above 100 %, a percentage outside
0-100, a SOL score of 4e-4 for a kernel that reaches its bandwidth) are called out with the
measured value beside them: in the row's note and in ``callouts``.
"""

from __future__ import annotations

from typing import Any

from ktui.repro.profile import metrics as M
from ktui.repro.profile.metrics import PAGE_METRICS, PageMetric
from ktui.repro.verdict import DIFFERS, NOT_RECORDED, REPRODUCED, SHOWN_ONLY, Row, fmt

GROUP_ORDER = ("sol", "roofline", "warp_stalls")
GROUP_TITLE = {"sol": "SOL", "roofline": "roofline / occupancy", "warp_stalls": "warp stalls"}
PCT_REL = 0.10  # a percentage also reproduces within 10 % of itself (large values)
EXTRA = (  # measured figures worth a row even when the page lacks them
    ("roofline", "duration_us", "kernel duration (sum)", "duration_us", "μs"),
    ("roofline", "grid_size", "grid size", "grid_size", ""),
    ("roofline", "fp16_tflops", "fp16 tflops", "fp16_tflops", "TFLOP/s"),
    ("roofline", "tensor_tflops", "tensor tflops", "tensor_tflops", "TFLOP/s"),
)


def _n(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _value(fwd: dict[str, Any], key: str) -> Any:
    if key == "duration_us":
        d = _n(fwd.get("duration_s"))
        return d * 1e6 if d is not None else None
    if key == "bound":
        return (fwd.get("classification") or {}).get("bound")
    return fwd.get(key)


def _text(v: Any, unit: str) -> str:
    if v is None:
        return "n/a"
    if unit == "%" and isinstance(v, (int, float)):
        return f"{v:.1f} %" if abs(v) >= 0.1 or v == 0 else f"{v:.2g} %"
    if unit == "B" and isinstance(v, (int, float)):
        return f"{int(v)} B" if float(v).is_integer() else f"{v:.0f} B"
    if unit in ("GB/s", "TFLOP/s", "FLOP/B", "μs") and isinstance(v, (int, float)):
        s = f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return f"{s} {unit}"
    return fmt(v, unit) if unit else fmt(v)


def _compare(pm: PageMetric, rec: float, rep: float) -> bool:
    if pm.compare == "exact":
        return rec == rep
    if pm.compare == "pct":
        return abs(rep - rec) <= max(pm.tol, PCT_REL * abs(rec))
    return abs(rep - rec) <= pm.tol * max(abs(rec), 1e-12)


def _row(pm: PageMetric, m: Any, fwd: dict[str, Any]) -> Row:
    key = f"profile.{pm.group}.{pm.field}"
    rep = _value(fwd, pm.value)
    row = Row(key=key, label=pm.label, unit=pm.unit, reproduced=rep, reproduced_text=_text(rep, pm.unit))
    rec_raw = m.value if m is not None else None
    if pm.compare == "text":
        row.recorded_raw = rec_raw
        row.recorded_text = "—" if rec_raw is None else str(rec_raw)
        rec_s = str(rec_raw).strip().lower() if rec_raw is not None else ""
        rep_s = str(rep).strip().lower() if rep is not None else ""
        if not rec_s or rec_s in ("unknown", "none", "null", "n/a"):
            row.verdict = NOT_RECORDED
            if rec_s:
                row.note = f"the page says {rec_raw!s}"
        elif not rep_s:
            row.verdict = NOT_RECORDED
            row.note = "ncu reported nothing to decide it"
        else:
            row.verdict = REPRODUCED if (rec_s == rep_s or rec_s.startswith(rep_s) or rep_s in rec_s) else DIFFERS
        return row
    rec = _n(rec_raw)
    if rec is None:
        row.recorded_text = "—" if rec_raw is None else str(rec_raw)
        row.verdict = NOT_RECORDED
        return row
    row.recorded, row.recorded_raw, row.recorded_text = rec, m.recorded, _text(rec, pm.unit)
    rp = _n(rep)
    if rp is None:
        row.verdict = NOT_RECORDED
        row.note = "ncu did not report it here"
        return row
    row.ratio = rp / rec if rec else None
    row.verdict = REPRODUCED if _compare(pm, rec, rp) else DIFFERS
    if row.verdict == DIFFERS and pm.compare != "exact":
        row.note = f"outside ±{pm.tol:g} points" if pm.compare == "pct" else f"outside ±{pm.tol:.0%}"
    return row


def _stall_row(reason: str, m: Any, share: float | None) -> Row:
    label = reason.replace("_", " ")
    row = Row(key=f"profile.warp_stalls.{reason}", label=label, unit="%", reproduced=share,
              reproduced_text=_text(share, "%"))
    rec = _n(m.value) if m is not None else None
    if rec is None:
        row.verdict = NOT_RECORDED
        if m is None:
            row.note = "measured in the top 5; the page does not name it"
        return row
    row.recorded, row.recorded_raw, row.recorded_text = rec, m.recorded, _text(rec, "%")
    if share is None:
        row.verdict = DIFFERS if rec > M.STALL_TOL else REPRODUCED
        row.reproduced_text = "0 %"
        row.reproduced = 0.0
        row.note = "no stall samples for this reason here"
        return row
    row.ratio = share / rec if rec else None
    row.verdict = REPRODUCED if abs(share - rec) <= M.STALL_TOL else DIFFERS
    return row


def _call(row: Row, text: str, callouts: list[str]) -> None:
    row.note = (row.note + "; " if row.note else "") + text
    callouts.append(f"{row.label}: {text}")


def impossible(rows: list[Row], fwd: dict[str, Any]) -> list[str]:
    """Call out recorded values that cannot be true, with the measured value beside them."""
    callouts: list[str] = []
    stalls = [r for r in rows if r.key.startswith("profile.warp_stalls.") and r.recorded is not None]
    per_issue = fwd.get("stall_per_issue") or {}
    for r in stalls:
        if r.recorded > 100.0:
            reason = r.key.rsplit(".", 1)[-1]
            ratio = per_issue.get(reason, per_issue.get(reason.rstrip("s") if reason.endswith("instructions")
                                                        else reason + "s"))
            like = ("it looks like stall cycles per issued instruction x 100 (ncu's "
                    f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
                    + (f", measured here {ratio:.2f} -> {100 * ratio:,.0f} %)" if ratio is not None else ")"))
            _call(r, f"impossible: a share of stall samples is at most 100 %, the page says {r.recorded_text}; "
                     f"{like}; measured share of stall samples {r.reproduced_text}", callouts)
    total = sum(r.recorded for r in stalls)
    if stalls and total > 100.0 + 1e-6:
        callouts.append(f"warp stalls: the page's shares add up to {total:,.1f} % (at most 100 %); measured top "
                        f"{len(fwd.get('stalls_top') or [])} add up to "
                        f"{sum(s['share_pct'] for s in fwd.get('stalls_top') or []):.1f} %")
    for r in rows:
        if r.unit == "%" and r.recorded is not None and not r.key.startswith("profile.warp_stalls.") \
                and not 0.0 <= r.recorded <= 100.0:
            _call(r, f"impossible: a percentage outside 0-100; measured {r.reproduced_text}", callouts)
    sol = next((r for r in rows if r.key == "profile.sol.sol_score"), None)
    if sol is not None and sol.recorded is not None and not 0.0 <= sol.recorded <= 1.0:
        _call(sol, f"impossible: a SOL score is between 0 and 1; measured {sol.reproduced_text}", callouts)
    # "reaches its bandwidth": a near-zero recorded utilisation for a kernel that measures far above it
    dram = _n(fwd.get("dram_pct"))
    top = max([x for x in (_n(fwd.get("sm_pct")), _n(fwd.get("mem_pct")), dram) if x is not None], default=None)
    for r in rows:
        if r.recorded is None or r.reproduced is None or r.note.startswith("impossible"):
            continue
        field = r.key.rsplit(".", 1)[-1]
        if field == "sol_score" and top is not None and top >= 5.0 and r.recorded * 100 < top / 10:
            _call(r, f"implausible: a SOL of {r.recorded_text} for a kernel measured at {top:.1f} % of a peak "
                     f"(SOL {r.reproduced_text})", callouts)
        elif field in ("dram_util_pct",) and dram is not None and dram >= 5.0 and r.recorded < dram / 10:
            _call(r, f"implausible: {r.recorded_text} for a kernel measured at {dram:.1f} % of DRAM peak", callouts)
        elif field == "dram_bandwidth_gbs" and dram is not None and dram >= 5.0 and r.reproduced \
                and r.recorded < r.reproduced / 10:
            _call(r, f"implausible: {r.recorded_text} for a kernel measured at {r.reproduced_text} "
                     f"({dram:.1f} % of DRAM peak)", callouts)
    return callouts


def compare_profile(recorded: Any, fwd: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """(rows, callouts) for a kernel's forward summary against what the trace recorded.

    ``recorded`` is a :class:`ktui.repro.recorded.Recorded` (its ``metrics`` list is the
    trace's ``run.metrics`` when the version was submitted) or None."""
    metrics = list(getattr(recorded, "metrics", None) or [])
    rows: list[Row] = []
    seen: set[str] = set()
    by_group: dict[str, list[Any]] = {g: [] for g in GROUP_ORDER}
    for m in metrics:
        g = m.key.split(".", 1)[0]
        if g in by_group:
            by_group[g].append(m)
    shares = {s["reason"]: s["share_pct"] for s in fwd.get("stalls_top") or []}
    all_shares = {}
    total = sum(v for v in (fwd.get("stall_counts") or {}).values() if v > 0)
    if total:
        all_shares = {r: 100.0 * v / total for r, v in fwd["stall_counts"].items() if v > 0}
    def extras() -> None:
        for g, field, label, key, unit in EXTRA:
            if f"{g}.{field}" in seen or f"{g}.{field}" in recorded_keys:
                continue
            v = _value(fwd, key)
            rows.append(Row(key=f"profile.{g}.{field}", label=label, unit=unit, reproduced=v,
                            reproduced_text=_text(v, unit), verdict=NOT_RECORDED))
            seen.add(f"{g}.{field}")

    recorded_keys = {m.key for ms in by_group.values() for m in ms}
    for g in GROUP_ORDER:
        if g == "warp_stalls":
            extras()
        for m in by_group[g]:
            field = m.key.split(".", 1)[1]
            if g == "warp_stalls":
                rows.append(_stall_row(field, m, all_shares.get(field)))
                seen.add(f"warp_stalls.{field}")
                continue
            pm = M.page_metric(g, field)
            if pm is None:
                rows.append(Row(key=f"profile.{g}.{field}", label=m.label, recorded=m.value,
                                recorded_text="—" if m.value is None else str(m.value), verdict=SHOWN_ONLY,
                                note="no ncu mapping for this field"))
            else:
                rows.append(_row(pm, m, fwd))
            seen.add(f"{g}.{field}")
        if g == "warp_stalls":
            for reason, share in shares.items():
                if f"warp_stalls.{reason}" not in seen:
                    rows.append(_stall_row(reason, None, share))
                    seen.add(f"warp_stalls.{reason}")
    if not any(m for ms in by_group.values() for m in ms):
        # the trace recorded none of it: the measured page, every row "not recorded"
        for pm in PAGE_METRICS:
            if f"{pm.group}.{pm.field}" in seen:
                continue
            rows.append(_row(pm, None, fwd))
            seen.add(f"{pm.group}.{pm.field}")
    if not recorded_keys:
        rows.sort(key=lambda r: GROUP_ORDER.index(group_of(r)) if group_of(r) in GROUP_ORDER else 9)
    fp16 = next((r for r in rows if r.key == "profile.roofline.peak_fp16_tflops"), None)
    if fp16 is not None and fwd.get("peak_tensor_tflops"):
        fp16.note = (fp16.note + "; " if fp16.note else "") + (
            f"ktui's is the non-tensor (HFMA2) peak; the dense FP16/BF16 tensor peak here is "
            f"{fwd['peak_tensor_tflops']:,.0f} TFLOP/s (spec sheets often quote tensor with sparsity)")
    callouts = impossible(rows, fwd)
    return rows, callouts


def group_of(row: Row) -> str:
    parts = row.key.split(".")
    return parts[1] if len(parts) > 2 else ""
