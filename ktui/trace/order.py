"""The order a reader expects of names: case folded, numbers by value (``run2`` before ``run10``,
``a1, a2, a10`` where character order gives ``a1, a10, a2``). One rule for the sweep index's
default row order (:mod:`ktui.trace.index.walk`) and the runs table's column sort
(:func:`ktui.report.runs.sort_value`)."""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """``text`` as it sorts for a reader: case folded, its numbers by value (``problem2`` before
    ``problem10``, where character order put ``level1_problem100`` first and ``problem1`` after
    ``problem19``)."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in _DIGITS.split(text.lower()) if part)


def name_key(name: str) -> tuple[list[str | int], str]:
    """A directory entry's place among its siblings: the order of :func:`natural_key` (the same
    order, in about a tenth of the time: the parts of the name split at its numbers, numbers at
    the odd places, so that two keys compare a text with a text and a number with a number),
    then the name itself (``Run1`` and ``run1``, ``a01`` and ``a1`` are equal by value: their
    character order decides, so that the order never depends on the order the file system
    lists them in)."""
    parts: list[str | int] = _DIGITS.split(name.lower())  # type: ignore[assignment]
    parts[1::2] = map(int, parts[1::2])  # type: ignore[arg-type]
    return parts, name
