"""Counts and times in words, one rule for every layer above the engine (the domain's notes, the
service's summaries, the views, the text commands, the app): ``1 run``, ``2 runs``, never
``1 runs`` or ``1 run(s)``; a recorded time outside what a clock can measure is "no valid time",
never ``inf`` or ``1e+305 ms``. Pure strings; never raises."""

from __future__ import annotations

import math
from typing import Any

#: a GPU time at or over this (a day, in microseconds) is no measurement: a harness's sentinel for
#: "no time" (1e308, inf) or a unit gone wrong
MAX_TIME_US = 86_400e6
NO_VALID_TIME = "no valid time"

_IRREGULAR = {"index": "indexes", "child": "children", "person": "people"}


def plural(n: Any, noun: str, many: str | None = None) -> str:
    """``noun`` as it agrees with ``n``: itself for 1, else ``many`` (default: the usual English
    plural of its last word: ``run`` -> ``runs``, ``match`` -> ``matches``, ``tool call`` ->
    ``tool calls``)."""
    if n == 1:
        return noun
    if many is not None:
        return many
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        last = _IRREGULAR[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif len(last) > 1 and last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def count(n: Any, noun: str, many: str | None = None) -> str:
    """``n`` and ``noun`` agreeing: ``1 run``, ``0 runs``, ``1,204 runs`` (an int with thousands
    separators; anything else as it prints)."""
    shown = f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else str(n)
    return f"{shown} {plural(n, noun, many)}"


def finite(v: Any) -> float | None:
    """``v`` as a finite float, or None (bools, strings, inf, nan and ints too large for a float are
    not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def valid_time_us(v: Any) -> float | None:
    """A recorded or measured time in microseconds as a float when a clock could have measured it
    (finite, not negative, under :data:`MAX_TIME_US`), else None."""
    f = finite(v)
    return f if f is not None and 0 <= f < MAX_TIME_US else None
