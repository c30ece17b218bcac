"""What a run reads back from its file on demand instead of keeping (issue 25).

A trace of 1 GB is mostly tool arguments (kernel sources), tool results and long texts. The
:class:`~ktui.trace.builder.Builder` keeps, for an event whose line is at least
:data:`LAZY_MIN` bytes long, only where the line is (a :class:`Ref`: the file, byte offset and
length); the model's properties (``ToolCall.args``, ``ToolResult.summary``/``effect``/``meta``,
``KernelVersion.code``) read the line back, parse it and derive the same values the builder
derived while reading. A few lines parsed last are kept (:data:`CACHE_LINES`), so a screen that
reads one call's fields one after another parses its line once.

ktui never writes to the file. When the file changed since it was read (truncated, replaced),
a line that can no longer be read back yields a placeholder that says so, never another line's
content: the line must still decode to an event of the same kind.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

from ktui.trace.notes import JSONError, loads

LAZY_MIN = 1024  # lines at least this many bytes long are read back on demand (KTUI_LAZY_MIN overrides)
CACHE_LINES = 16  # parsed lines kept, most recently used first
BOM = b"\xef\xbb\xbf"


def lazy_min() -> int:
    v = os.environ.get("KTUI_LAZY_MIN", "")
    return int(v) if v.isdigit() else LAZY_MIN


def unavailable(line: int, why: str) -> str:
    return f"<line {line} could not be read back from the trace file: {why}>"


class LineSource:
    """One trace file, read back by byte offset. Shared by every :class:`Ref` of a run; a deep
    copy of a run shares it (it holds no state a copy could change)."""

    __slots__ = ("path", "_cache", "_ident", "_lock")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._cache: OrderedDict[int, Any] = OrderedDict()
        self._ident = _ident(self.path)
        self._lock = threading.Lock()  # the app reads from its UI thread and from search workers

    def __deepcopy__(self, memo) -> LineSource:
        return self

    def payload(self, offset: int, length: int, kind: str) -> dict[str, Any] | str:
        """The ``payload`` object of the line at ``offset``, or why it cannot be read (a str)."""
        with self._lock:
            got = self._cache.get(offset)
            if got is not None:
                self._cache.move_to_end(offset)
                return got
        got = self._read(offset, length, kind)
        if isinstance(got, dict):
            with self._lock:
                self._cache[offset] = got
                while len(self._cache) > CACHE_LINES:
                    self._cache.popitem(last=False)
        return got

    def _read(self, offset: int, length: int, kind: str) -> dict[str, Any] | str:
        from ktui.trace.reader import MAX_DEPTH, cap_depth, open_regular

        if _ident(self.path) != self._ident:
            why = "the file changed since it was read"
        else:
            why = ""
        try:
            with open_regular(self.path) as f:
                f.seek(offset)
                raw = f.read(length)
        except OSError as exc:
            return f"cannot read the file ({exc.strerror or exc})"
        if len(raw) < length:
            return "the file is shorter than when it was read"
        body = raw[:-1] if raw[-1:] == b"\r" else raw
        if offset == 0 and body[:3] == BOM:
            body = body[3:]
        try:
            obj = loads(body)
        except JSONError:
            try:
                obj = loads(body.decode("utf-8", "replace").encode("utf-8"))
            except JSONError:
                return why or "the line is no longer JSON"
        if length > MAX_DEPTH and body.count(b"[") + body.count(b"{") > MAX_DEPTH:
            obj = cap_depth(obj, MAX_DEPTH)
        p = obj.get("payload") if isinstance(obj, dict) else None
        if not isinstance(p, dict) or p.get("kind") != kind:
            return why or "the line holds another event now"
        return p


def _ident(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Ref:
    """Where one event's line is: enough to read it back (about 70 bytes)."""

    __slots__ = ("src", "offset", "length", "line", "kind")

    def __init__(self, src: LineSource, offset: int, length: int, line: int, kind: str) -> None:
        self.src, self.offset, self.length, self.line, self.kind = src, offset, length, line, kind

    def __deepcopy__(self, memo) -> Ref:
        return self  # immutable

    def payload(self) -> dict[str, Any] | str:
        return self.src.payload(self.offset, self.length, self.kind)

    def args(self) -> dict[str, Any]:
        """A tool call's arguments, as the builder normalized them."""
        p = self.payload()
        if isinstance(p, str):
            return {"unavailable": unavailable(self.line, p)}
        return call_args(p)

    def result(self, call_name: str) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
        """A tool result's ``(summary, effect, meta)``, as the builder derived them."""
        p = self.payload()
        if isinstance(p, str):
            return unavailable(self.line, p), None, None
        summary, effect, meta, _ = result_fields(call_name, p)
        return summary, effect, meta


def call_args(p: dict[str, Any]) -> dict[str, Any]:
    """A tool call payload's arguments: an object, else ``{"value": args}``."""
    args = p.get("args", {})
    return args if isinstance(args, dict) else {"value": args}


def result_fields(call_name: str, p: dict[str, Any]):
    """``(summary, effect, meta, costs)`` of a tool result payload (``costs``: a V0 envelope's
    costs object, else None): the one place that reads a result (the builder while reading,
    :class:`Ref` when read back)."""
    from ktui.trace import derive
    from ktui.trace.notes import split_meta

    effect: dict[str, Any] | None = None
    costs = None
    res = p.get("result", p.get("text"))
    if isinstance(res, dict):
        if isinstance(res.get("effect"), dict):  # V0 envelope
            effect = res["effect"]
            if isinstance(res.get("costs"), dict):
                costs = res["costs"]
        else:
            effect = res
        summary = effect.get("summary") if isinstance(effect.get("summary"), str) else None
        if summary is None:
            summary = derive.effect_summary(call_name, effect)
    elif isinstance(res, str):
        summary = res
    elif res is None:
        summary = ""
    else:
        summary = str(res)
    summary, meta = split_meta(summary)
    return summary, effect, meta, costs
