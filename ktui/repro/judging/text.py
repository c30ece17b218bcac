"""The formatter: rows, findings and reasons in words. Judges decide; this module only writes.

Plain strings (no markup), raw: a string that came from a trace or a kernel (a check's name, a
probe's reason, an error message) is shortened here but not sanitized. The service sanitizes
nothing; whatever shows these words cleans them once on the way out (the views,
:mod:`ktui.view.repro` / :mod:`ktui.view.verify`, with :func:`ktui.view.text.clean`; ``--json``
with :func:`ktui.view.text.safe_data`)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from ktui.repro.judging.model import Comparison, FindingRow, Judgement, Row
from ktui.repro.judging.names import (
    BUILD,
    CORRECTNESS,
    CORRECTNESS_DISAGREES,
    DIFFERS,
    HELD_OUT,
    REPRODUCED,
    SAME_FAILURE,
    SUSPICIOUS,
    TIME,
    UNIT_ERROR,
    US,
)
from ktui.trace.words import NO_VALID_TIME, valid_time_us


def num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(float(v)) else None
    return None


def fmt(v: Any, unit: str = "") -> str:
    if unit == US and v is not None and not isinstance(v, str) and valid_time_us(v) is None:
        return NO_VALID_TIME  # inf, nan, negative, 1e308: no clock measured it
    n = num(v)
    if n is None:
        return "—" if v is None else str(v)
    if unit == US:
        s = f"{n:,.2f}" if abs(n) < 1e5 else f"{n:,.0f}"
    elif unit == "x":
        s = f"{n:.3g}"
    elif unit in ("MB", "MiB"):
        s = f"{n:,.2f}"
    elif float(n).is_integer() and abs(n) < 1e12:
        s = f"{int(n)}"
    elif abs(n) < 1e-3 and n != 0:
        s = f"{n:.2e}"
    else:
        s = f"{n:.4g}"
    return f"{s} {unit}".strip() if unit and unit != "x" else (s + "x" if unit == "x" else s)


def short(text: Any, limit: int = 160) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def outcome_text(oc: dict[str, Any] | None) -> str:
    if not oc:
        return "—"
    word = {"ok": "pass", "failed": "FAIL"}.get(oc.get("status"), oc.get("status"))
    turn = oc.get("turn")
    return f"{word} ({oc.get('tool')}, turn {turn})" if turn is not None else f"{word} ({oc.get('tool')})"


def correctness_text(c: dict[str, Any] | None) -> str:
    if not c:
        return "—"
    if c.get("failed"):
        return f"{c['failed']}: {short(c.get('message'))}"
    s = f"{'pass' if c.get('passed') else 'FAIL'} {c.get('trials_passed')}/{c.get('trials')}"
    held = c.get("held_out")
    if held is not None:
        s += f" + held-out {'pass' if held else 'FAIL'}"
    return s


def recorded_text(row: Row) -> str:
    if row.recorded_text is not None:
        return row.recorded_text
    if row.kind in (BUILD, CORRECTNESS):
        return outcome_text(row.recorded)
    if row.kind == TIME:
        rec, claimed, raw = num(row.recorded), num(row.claimed), num(row.recorded_raw)
        if rec is None:
            return "—"
        relabelled = claimed is not None and abs(claimed - rec) > 1e-6 * max(1.0, abs(rec))
        if relabelled and raw is not None and claimed == raw:
            return f"{raw:g} μs (as claimed)"
        return fmt(rec, US)
    return fmt(row.recorded, row.unit)


def reproduced_text(row: Row) -> str:
    if row.reproduced_text is not None:
        return row.reproduced_text
    v = row.reproduced
    if row.kind == BUILD:
        if not v:
            return "—"
        if v.get("built"):
            if v.get("fallback"):
                return "no: build failed, the kernel's fallback ran"
            return "yes (cached build)" if v.get("cached") else f"yes ({(v.get('seconds') or 0.0):.1f} s)"
        return f"no: {v.get('kind')}"
    if row.kind == CORRECTNESS:
        return correctness_text(v)
    if row.kind == HELD_OUT:
        return "—" if v is None else ("pass" if v else "FAIL")
    return fmt(v, row.unit)


def row_texts(row: Row) -> tuple[str, str]:
    """(recorded, reproduced) in words."""
    return recorded_text(row), reproduced_text(row)


def row_dict(row: Row) -> dict[str, Any]:
    """A row as JSON, with its values in words."""
    d = asdict(row)
    d["recorded_text"], d["reproduced_text"] = row_texts(row)
    return d


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as JSON (``ktui repro --json``)."""
    return {"verdict": c.verdict, "reason": c.reason, "rows": [row_dict(r) for r in c.rows],
            "findings": [f.to_dict() for f in c.findings], "classes": c.classes,
            "flags": list(c.flags), "checks": list(c.checks), "not_measured": list(c.not_measured),
            "notes": list(c.notes), "rule": c.rule}


def finding_text(f: FindingRow) -> str:
    """``ptr_cache (static, line 12, introduced at turn 1 in v2): keys a cache on data_ptr() — `key = ...```."""
    where = f.where()
    head = f"{f.cls} ({f.source}{', ' + where if where else ''})"
    tail = f" — {f.evidence}" if f.evidence else ""
    return f"{head}: {f.reason}{tail}"


def honesty_reason(findings: list[FindingRow], limit: int = 4) -> str:
    bits = [f"{f.cls}: {short(f.reason, 140)}" for f in findings[:limit]]
    if len(findings) > limit:
        bits.append(f"and {len(findings) - limit} more")
    return "honesty check failed: " + "; ".join(bits)


def reason(verdict: str, judgements: list[Judgement], findings: list[FindingRow]) -> str:
    """The one-line reason of a completed run's overall verdict."""
    rows = [r for j in judgements for r in j.rows]
    corr = next((j for j in judgements if j.aspect == "correctness"), None)
    if verdict == SUSPICIOUS:
        out = honesty_reason(findings)
        also = [r for r in rows if r.verdict in (UNIT_ERROR, DIFFERS)]
        if also:
            out += "; also " + "; ".join(f"{r.label}: {r.verdict}" for r in also[:3])
        return out
    hits = [r for r in rows if r.verdict == verdict]
    if verdict == UNIT_ERROR:
        text = "; ".join(f"{r.label}: {r.note}" for r in hits)
    elif verdict == CORRECTNESS_DISAGREES:
        text = "; ".join(r.note for r in hits if r.note) or "correctness differs from the record"
    elif verdict == DIFFERS:
        text = "; ".join(f"{r.label}: recorded {recorded_text(r)}, measured {reproduced_text(r)}"
                         + (f" ({r.note})" if r.note else "") for r in hits)
    elif verdict == SAME_FAILURE:
        text = "; ".join(r.note for r in hits if r.note) or "fails the same way as recorded"
    else:
        bits = []
        if corr is not None and corr.reason:
            bits.append(corr.reason)
        if any(r.key.startswith("timing.") and r.verdict == REPRODUCED for r in rows):
            bits.append("timings within noise")
        text = "; ".join(bits) or "as recorded"
    if findings:
        text += "; " + honesty_reason(findings).replace("honesty check failed: ", "honesty: ")
    return text
