"""Counting the Python steps a piece of code takes (not its time): for scaling tests.

:class:`Steps` is a ``sys.settrace`` tracer that counts every line executed in ktui's own code
(a loop iteration is a line event too: CPython reports a jump back to a line) and every call of
a Python function anywhere (rich, textual, a ``key=`` lambda of ``sorted``). With a ``budget`` it
raises :class:`OverBudget` as soon as the count passes it, so a quadratic step over 100,000
turns fails in a fraction of a second instead of running for hours.

What it cannot see: loops inside C (``x in a_list``, ``sorted`` of plain ints, ``str.join``).
"""

from __future__ import annotations

import sys
from pathlib import Path

KTUI = str(Path(__file__).resolve().parents[1] / "ktui")


class OverBudget(BaseException):  # not an Exception: ktui's "never raise on data" guards must not eat it
    pass


class Steps:
    def __init__(self, budget: int | None = None, what: str = "") -> None:
        self.n = 0
        self.budget = budget
        self.what = what
        self._mine: dict[object, bool] = {}

    def _line(self, frame, event, arg):
        if event == "line":
            self.n += 1
            if self.budget is not None and self.n > self.budget:
                raise OverBudget(f"{self.what}: more than {self.budget:,} steps (at {frame.f_code.co_name}, "
                                 f"{frame.f_code.co_filename}:{frame.f_lineno})")
        return self._line

    def _call(self, frame, event, arg):
        if event != "call":
            return None
        self.n += 1
        code = frame.f_code
        mine = self._mine.get(code)
        if mine is None:
            mine = self._mine[code] = code.co_filename.startswith(KTUI)
        if self.budget is not None and self.n > self.budget:
            raise OverBudget(f"{self.what}: more than {self.budget:,} steps (calling {code.co_name})")
        return self._line if mine else None

    def __enter__(self) -> Steps:
        self._old = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._old)


def count(fn, *args, budget: int | None = None, what: str = "", **kw):
    """``(result, steps)`` of ``fn(*args, **kw)``."""
    with Steps(budget, what) as s:
        out = fn(*args, **kw)
    return out, s.n
