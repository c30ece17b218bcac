"""The one place numbers, times and durations become text (pure strings; never raises).

Every view (``show``, the app, ``compare``, ``runs``, the HTML report) formats with these, so a
value reads the same everywhere. Values of any size or type are accepted: what cannot be
formatted as a number is shown as text, a timestamp outside the calendar as ``ts <ms> (out of
range)``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ktui.trace.model import Metric
from ktui.trace.words import NO_VALID_TIME, finite, valid_time_us
from ktui.view.text import clean, int_text

NONE = "—"


_real = finite  # ``v`` as a finite float, or None (bools, strings, inf, nan and huge ints are not)


def _odd(v: Any) -> str:
    """Text for a value that is not a finite number."""
    if isinstance(v, int) and not isinstance(v, bool):
        return int_text(v)
    return clean(v)


def secs(ms: Any, digits: int = 1) -> str:
    """A duration in milliseconds as seconds: ``76.1s``."""
    if ms is None:
        return NONE
    f = _real(ms)
    if f is None:
        return _odd(ms)
    s = f / 1000
    if abs(s) >= 1e9:
        return f"{s:.3g}s"
    return f"{s:.{digits}f}s"


def us(v: Any) -> str:
    """A GPU time in microseconds, with a sensible unit; a number no clock could have measured
    (inf, nan, negative, a day or more: a harness's "no time" sentinel such as 1e308) is
    "no valid time" (:func:`ktui.trace.words.valid_time_us`)."""
    if v is None:
        return NONE
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _odd(v)
    f = valid_time_us(v)
    if f is None:
        return NO_VALID_TIME
    if f >= 1e6:
        return f"{f / 1e6:.3g} s"
    if f >= 1000:
        return f"{f / 1000:.3g} ms"
    if f >= 100:
        return f"{f:.0f} μs"
    return f"{f:.3g} μs"


def num(v: Any) -> str:
    """A count or amount: ``34,544``; e-notation beyond 1e15."""
    if v is None:
        return NONE
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) < 10**15 else int_text(v) if abs(v) >= 10**19 else f"{float(v):.3e}"
    f = _real(v)
    if f is None:
        return _odd(v)
    if abs(f) >= 1e15:
        return f"{f:.3e}"
    return f"{f:,.0f}" if f.is_integer() and abs(f) >= 1 else f"{f:.3g}"


def ratio(v: Any) -> str:
    """A speedup: ``2.31x``."""
    if v is None:
        return NONE
    f = _real(v)
    if f is None:
        return _odd(v)
    return f"{f:.3g}x" if abs(f) >= 1e6 else f"{f:.2f}x"


def score(v: Any) -> str:
    """A grader score: ``0.5``."""
    if v is None:
        return NONE
    f = _real(v)
    return _odd(v) if f is None else f"{f:g}"


def pct(v: Any) -> str:
    """A fraction as a percentage: ``40%``."""
    f = _real(v)
    return NONE if f is None else f"{f * 100:.0f}%"


def iso(ms: Any) -> str:
    """A ``ts_ms`` as UTC ``2026-05-01T12:00:00Z``; any value accepted."""
    if ms is None:
        return NONE
    f = _real(ms)
    if f is None:
        return f"ts {_odd(ms)} (not a time)"
    try:
        return _dt.datetime.fromtimestamp(f / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError, OSError):
        return f"ts {num(ms)} (out of range)"


def metric_value(m: Metric) -> str:
    v = m.value
    if v is None:
        return NONE
    if isinstance(v, str):
        return clean(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if m.unit == "us":
        return us(v)
    f = _real(v)
    if f is None:
        return _odd(v)
    if m.unit == "%":
        return f"{f:.1f}%" if abs(f) < 1e9 else f"{f:.3e}%"
    if m.unit == "x":
        return ratio(f)
    if abs(f) >= 1e15:
        return f"{f:.3e}" + (f" {clean(m.unit)}" if m.unit else "")
    if m.unit == "MB":
        return f"{f:.2f} MB"
    if m.unit == "B":
        return f"{f:,.0f} B"
    if m.unit == "GB/s":
        return f"{f:,.2f} GB/s"
    if m.unit == "TFLOP/s":
        return f"{f:,.2f} TFLOP/s"
    if isinstance(v, float) and f != 0 and abs(f) < 1e-2:
        return f"{f:.3e}"
    return num(v) + (f" {clean(m.unit)}" if m.unit else "")


def turns_label(turns: int, max_turns: Any) -> str:
    """``9 / 12`` (or ``9`` without a limit)."""
    return f"{turns} / {num(max_turns)}" if max_turns else str(turns)


def wall_label(variant: str, wall_ms: Any) -> str:
    """The run's wall clock; V2 timestamps are synthetic."""
    if variant == "V2":
        return "n/a (synthetic timestamps)"
    return secs(wall_ms)


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
    """'tokens in=1,203 · out=88 · total=1,291'; 'tokens —' when the turn records no count (none,
    or only zeros: a log that writes 0 for "not counted", as the header's — says)."""
    if not any((t.tokens_in, t.tokens_out, getattr(t, "tokens_reasoning", None))):
        return f"tokens {NONE}"
    s = f"tokens in={num(t.tokens_in)} · out={num(t.tokens_out)}"
    if t.tokens_reasoning:
        s += f" · reasoning={num(t.tokens_reasoning)}"
    return s + f" · total={num(t.tokens_total)}"
