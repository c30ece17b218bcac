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


def name_key(name: str) -> tuple[str, str]:
    """A directory entry's place among its siblings: the order of :func:`natural_key`, as one
    string (a sort compares two of them in one step, where two tuples of parts took a Python
    comparison a part: most of the cost of sorting 10,000 names), then the name itself (``Run1``
    and ``run1``, ``a01`` and ``a1`` are equal by value: their character order decides, so that
    the order never depends on the order the file system lists them in).

    The string is the name case folded with each number written as NUL, its length and its
    digits without leading zeros: no name holds a NUL, so a number sorts before any text at the
    same place (as in ``natural_key``), and numbers by length, then digit by digit, by value."""
    parts = _DIGITS.split(name.lower())
    if len(parts) > 1:
        parts[1::2] = [f"\0{chr(len(d))}{d}" for d in map(str, map(int, parts[1::2]))]
    return "".join(parts), name
