"""Formatting helpers shared by the text reports and the app (pure strings, no I/O)."""

from __future__ import annotations

import datetime as _dt

from ktui.trace.model import Metric, Run

STATUS_ICON = {"ok": "✓", "failed": "✗", "error": "!", "missing": "…", "none": "·"}
STATUS_STYLE = {"ok": "green", "failed": "red", "error": "bold red", "missing": "yellow", "none": "dim"}
OUTCOME_STYLE = {"passed": "bold green", "failed": "bold red", "incomplete": "yellow"}


def secs(ms: int | float | None, digits: int = 1) -> str:
    return "—" if ms is None else f"{ms / 1000:.{digits}f}s"


def us(v: float | None) -> str:
    """A GPU time in microseconds, with a sensible unit."""
    if v is None:
        return "—"
    if v >= 1000:
        return f"{v / 1000:.3g} ms"
    if v >= 1:
        return f"{v:.3g} μs" if v < 100 else f"{v:.0f} μs"
    return f"{v:.3g} μs"


def num(v: float | int | None) -> str:
    if v is None:
        return "—"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.0f}" if float(v).is_integer() and abs(v) >= 1 else f"{v:.3g}"


def iso(ms: int | None) -> str:
    if ms is None:
        return "—"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def metric_value(m: Metric) -> str:
    v = m.value
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if m.unit == "us":
        return us(float(v))
    if m.unit == "%":
        return f"{v:.1f}%"
    if m.unit == "x":
        return f"{v:.2f}x"
    if m.unit == "MB":
        return f"{v:.2f} MB"
    if m.unit == "B":
        return f"{v:,.0f} B"
    if m.unit == "GB/s":
        return f"{v:,.2f} GB/s"
    if m.unit == "TFLOP/s":
        return f"{v:,.2f} TFLOP/s"
    if isinstance(v, float) and v != 0 and (abs(v) < 1e-2 or abs(v) >= 1e6):
        return f"{v:.3e}"
    return num(v) + (f" {m.unit}" if m.unit else "")


def turns_label(run: Run) -> str:
    return f"{len(run.turns)} / {run.max_turns}" if run.max_turns else str(len(run.turns))


def wall_label(run: Run) -> str:
    if run.variant == "V2":
        return "n/a (synthetic timestamps)"
    return secs(run.wall_ms)


def turn_timing_label(t) -> str:
    """'76.1s turn · 2.7s LLM · 73.4s tools' (or what the variant allows)."""
    parts = []
    if t.wall_ms is not None:
        parts.append(f"{secs(t.wall_ms)} turn")
    if t.llm_ms is not None:
        parts.append(f"{secs(t.llm_ms)} LLM")
    if t.tool_ms is not None:
        parts.append(f"{secs(t.tool_ms)} tools")
    if not t.timing_reliable and t.wall_ms is not None:
        parts[-1] += " (model + tools)"
    return " · ".join(parts) if parts else "no timing"


def tokens_label(t) -> str:
    if t.tokens_in is None and t.tokens_out is None:
        return ""
    s = f"tokens in={num(t.tokens_in)} · out={num(t.tokens_out)}"
    if t.tokens_reasoning:
        s += f" · reasoning={num(t.tokens_reasoning)}"
    return s + f" · total={num(t.tokens_total)}"
