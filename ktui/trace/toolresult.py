"""A tool call's result (:class:`ToolResult`) and the results of a run's calls kept by column
(:class:`ResultTable`, issue 25: a result read back from the file costs a few bytes of columns,
not an object and two boxed integers; its :class:`ToolResult` is made on access)."""

from __future__ import annotations

import re
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any

# Tool call status
OK = "ok"  # the tool ran and reported success
FAILED = "failed"  # the tool ran and reported failure (e.g. "run_correctness FAILED")
ERROR = "error"  # the dispatcher failed (exception, blocked, timeout): is_error
MISSING = "missing"  # no result in the trace (dangling call)

_HIDDEN = {"hidden": True}  # a field serializers leave out (ktui.trace.serialize)
_CASE_ERR = re.compile(r"^\s*\[([^\]]+)\]\s*(.+)$", re.M)  # "[case 3] error" lines of a correctness run


@dataclass(slots=True, eq=False, init=False)
class ToolResult:
    """A tool's result. Its text and structured fields are either kept or, for a long line of a
    file, read back on demand (``_ref``, :mod:`ktui.trace.lazy`): the same values either way."""

    line: int
    ts_ms: int | None
    status: str  # OK | FAILED | ERROR
    _summary: str | None = None  # the human text (without the [meta] trailer); None: read back
    _effect: dict[str, Any] | None = None  # structured effect object (V0/V1)
    _meta: dict[str, Any] | None = None  # parsed "[meta] {...}" trailer (KTBench)
    is_error: bool = False
    _ref: Any = field(default=None, metadata=_HIDDEN)  # the ktui.trace.lazy.LineSource its line is read back from
    _call: str = field(default="", metadata=_HIDDEN)  # the call's name (what its summary is derived with)
    _brief: str | None = field(default=None, metadata=_HIDDEN)  # what a kernel use shows, kept
    _case_errors: list[str] | None = field(default=None, metadata=_HIDDEN)

    def __init__(self, line: int, ts_ms: int | None, status: str, summary: str = "",
                 effect: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                 is_error: bool = False) -> None:
        self.line, self.ts_ms, self.status = line, ts_ms, status
        self._summary, self._effect, self._meta, self.is_error = summary, effect, meta, is_error
        self._ref, self._call, self._brief, self._case_errors = None, "", None, None

    @classmethod
    def read_back(cls, line: int, ts_ms: int | None, status: str, is_error: bool, ref: Any, call: str) -> ToolResult:
        r = cls(line, ts_ms, status, is_error=is_error)
        r._summary, r._ref, r._call = None, ref, call
        return r

    def _fields(self) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
        if self._ref is None:
            return self._summary or "", self._effect, self._meta
        return self._ref.result(self.line, self._call)

    @property
    def summary(self) -> str:
        return self._summary if self._ref is None else self._fields()[0]  # type: ignore[return-value]

    @property
    def effect(self) -> dict[str, Any] | None:
        return self._effect if self._ref is None else self._fields()[1]

    @property
    def meta(self) -> dict[str, Any] | None:
        return self._meta if self._ref is None else self._fields()[2]

    @property
    def error_text(self) -> str:
        """The most specific error message available, '' when none."""
        summary, eff, meta = self._fields()
        return error_text(self.status, summary, eff, meta)

    @property
    def brief(self) -> str:
        """What a kernel use of this result says: the error, or the summary's first line."""
        if self._brief is None:
            self._brief = brief_text(self.status, *self._fields())
        return self._brief

    @property
    def case_errors(self) -> list[str]:
        """The per-case errors a failed correctness run lists (``[case] error`` lines)."""
        if self._case_errors is None:
            self._case_errors = case_errors(self.summary)
        return self._case_errors


def error_text(status: str, summary: str, eff: dict[str, Any] | None, meta: dict[str, Any] | None) -> str:
    """:attr:`ToolResult.error_text` of a result with these fields."""
    eff = eff or {}
    det = eff.get("details")
    det = det if isinstance(det, dict) else {}
    for key in ("runtime_error", "compile_error", "correctness_issue"):
        v = det.get(key)
        if v:
            return str(v)
    if isinstance(eff.get("error"), str) and eff["error"]:
        return eff["error"]  # type: ignore[no-any-return]
    if meta and isinstance(meta.get("error"), str):
        return meta["error"]  # type: ignore[no-any-return]
    if status != OK:
        lines = [ln for ln in summary.splitlines() if ln.strip()]
        return "\n".join(lines[1:4]) if len(lines) > 1 else (lines[0] if lines else "")
    return ""


def brief_text(status: str, summary: str, eff: dict[str, Any] | None, meta: dict[str, Any] | None) -> str:
    """:attr:`ToolResult.brief` of a result with these fields (the builder's, without making the
    result): one string per distinct text, as most are a few status lines, repeated."""
    return sys.intern(error_text(status, summary, eff, meta) if status != OK else summary.split("\n", 1)[0])


def case_errors(summary: str) -> list[str]:
    """:attr:`ToolResult.case_errors` of a result with this summary."""
    return [sys.intern(m.group(2).strip()) for m in _CASE_ERR.finditer(summary)]


_NONE = -(2**63)  # ts_ms: none


class ResultTable:
    """The results of one run's calls that are read back from the file (``LineSource``), by
    column and indexed by their call's index: line, time, status, is_error and brief (22 bytes
    a result), what a kernel use says and a failed correctness run's case errors where known
    while reading. A :class:`ToolResult` equal to the one it replaces is made on each access
    (:attr:`ToolCall.result <ktui.trace.model.ToolCall.result>`)."""

    __slots__ = ("src", "_line", "_ts", "_status", "_error", "_names", "_ix", "_brief", "_cases")

    def __init__(self, src: Any) -> None:
        self.src = src  # the run's ktui.trace.lazy.LineSource
        self._line = array("q")
        self._ts = array("q")
        self._status = array("B")
        self._error = array("B")
        self._names: list[str | None] = [None]  # statuses and briefs, one string each
        self._ix: dict[str | None, int] = {None: 0}
        self._brief = array("I")  # index into _names (0: none): a few distinct texts, repeated
        self._cases: dict[int, list[str]] = {}

    def put(self, index: int, line: int, ts_ms: int | None, status: str, is_error: bool,
            brief: str | None = None, case_errors: list[str] | None = None) -> bool:
        """Keep the result of call ``index``; False (nothing kept) when a value does not fit the
        columns: the caller keeps a :class:`ToolResult` for it."""
        if (type(index) is not int or index < 0 or type(line) is not int or not 0 <= line < 2**63
                or not (ts_ms is None or (type(ts_ms) is int and _NONE < ts_ms < 2**63))
                or type(status) is not str or type(is_error) is not bool):
            return False
        ix = self._ix
        k = ix.get(status)
        if k is None:
            k = self._name(status)
        if k > 255:
            return False
        b = 0 if brief is None else ix.get(brief)
        if b is None:
            b = self._name(brief)
        n = len(self._line)
        if index == n:  # the common case: the result of the last call
            self._line.append(line)
            self._ts.append(_NONE if ts_ms is None else ts_ms)
            self._status.append(k)
            self._error.append(is_error)
            self._brief.append(b)
        else:
            if index > n:  # rows of calls without a result (yet) in between: zeros, never read
                pad = [0] * (index + 1 - n)
                for col in (self._line, self._ts, self._status, self._error, self._brief):
                    col.extend(pad)
            self._line[index], self._ts[index] = line, _NONE if ts_ms is None else ts_ms
            self._status[index], self._error[index], self._brief[index] = k, is_error, b
        if case_errors is not None:
            self._cases[index] = case_errors
        return True

    def _name(self, s: str | None) -> int:
        i = self._ix.get(s)
        if i is None:
            i = self._ix[s] = len(self._names)
            self._names.append(s)
        return i

    def status(self, index: int) -> str:
        return self._names[self._status[index]]  # type: ignore[return-value]

    def brief(self, index: int) -> str | None:
        """What a kernel use of call ``index``'s result says, when it was kept while reading."""
        return self._names[self._brief[index]]

    def ts_ms(self, index: int) -> int | None:
        ts = self._ts[index]
        return None if ts == _NONE else ts

    def get(self, index: int, call_name: str) -> ToolResult:
        r = ToolResult.read_back(self._line[index], self.ts_ms(index), self.status(index),
                                 bool(self._error[index]), self.src, call_name)
        r._brief, r._case_errors = self._names[self._brief[index]], self._cases.get(index)
        return r
