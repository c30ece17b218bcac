"""Counts in words for the engine's messages: ``1 process``, ``2 processes``, never
``process(es)``. The same rule as :func:`ktui.trace.words.count` (the engine imports nothing else of
ktui: this is its copy, held to the domain's by ``tests/test_plurals.py``)."""

from __future__ import annotations

from typing import Any

_IRREGULAR = {"index": "indexes", "child": "children", "person": "people"}


def plural(n: Any, noun: str, many: str | None = None) -> str:
    """``noun`` as it agrees with ``n``: itself for 1, else ``many`` (default: the usual English
    plural of its last word)."""
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
    """``n`` and ``noun`` agreeing: ``1 run``, ``0 runs``, ``1,204 runs``."""
    shown = f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else str(n)
    return f"{shown} {plural(n, noun, many)}"
