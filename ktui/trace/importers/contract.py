"""The importer contract: what a module under ``ktui/trace/importers`` gives the registry.

An importer reads one trace format into a :class:`~ktui.trace.model.Run`. It has a ``NAME`` (the
``--format`` name), a ``LABEL`` (in words) and at least one of two shapes:

* line-based (``LINE_BASED = True``): ``detect_line(obj) -> bool`` says whether one parsed JSON
  line is of the format, ``load(path, data=None) -> Run`` reads the whole file (or ``data``);
* single-object: ``detect_object(obj) -> bool`` says whether a parsed whole-file object is of the
  format, ``load_object(obj, path) -> Run`` reads it;

and optionally ``load_zip(path, data=None) -> Run`` (an archive of the format). A line-based format
of text that is not JSON (Aider's Markdown transcript) adds ``detect_text(lines) -> bool``: whether
the file's first non-blank lines (bytes) are of the format; its ``detect_line`` matches nothing.

A single-object format whose file holds many runs (one results file a configuration, each
problem a run) adds ``runs_in(obj) -> list[str]``: the keys of the runs the object holds, in
order, and ``load_run(obj, path, key) -> Run``: one of them. Each run is then addressed
``PATH#KEY`` (:mod:`ktui.trace.address`), and every command that takes a trace takes one; the
file as a whole is not a run (``load_object`` reads it as a short account of what it holds). One line-based
format is the reader's own (ensemble JSONL, ``STREAMED = True``): :mod:`ktui.trace.reader` streams
it, so its module gives no ``load`` (the reader uses the registry, and nothing the registry
imports imports the reader). Detection looks at
parsed structure only (keys and shapes, never the file name) and never raises; loading never
raises on bad data (the registry turns a slip into a problem on the run). Following a live file
is the registry's (``ImportFollower``: the file is read again when it changes), so an importer
has nothing to give for it.

:meth:`Importer.of` checks a module against this when the registry is built (a module that does
not fit raises ``TypeError`` naming what is missing), and the registry calls the importer's
typed fields, never ``getattr`` on the module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from ktui.trace.model import Run


class LineImporter(Protocol):
    NAME: str
    LABEL: str
    LINE_BASED: bool

    def detect_line(self, obj: Any) -> bool: ...

    def load(self, path: str, data: bytes | None = None) -> Run: ...


class ObjectImporter(Protocol):
    NAME: str
    LABEL: str

    def detect_object(self, obj: Any) -> bool: ...

    def load_object(self, obj: Any, path: str) -> Run: ...


@dataclass(frozen=True, slots=True)
class Importer:
    """One registered format: its name, its label and what it offers (None: not this shape)."""

    name: str
    label: str
    line_based: bool
    detect_line: Callable[[Any], bool] | None = None
    load_lines: Callable[..., Run] | None = None  # load(path, data=None)
    detect_object: Callable[[Any], bool] | None = None
    load_object: Callable[[Any, str], Run] | None = None
    load_zip: Callable[..., Run] | None = None  # load_zip(path, data=None)
    runs_in: Callable[[Any], list[str]] | None = None  # a file of many runs: their keys
    load_run: Callable[[Any, str, str], Run] | None = None  # load_run(obj, path, key)
    detect_text: Callable[[list[bytes]], bool] | None = None  # a text (not JSON) log: its first lines
    module: ModuleType | None = None
    streamed: bool = False  # the reader's own format (ensemble): read by ktui.trace.reader

    @classmethod
    def of(cls, module: ModuleType, name: str | None = None) -> Importer:
        def fn(attr: str) -> Callable[..., Any] | None:
            f = getattr(module, attr, None)
            return f if callable(f) else None

        mname = getattr(module, "__name__", "?")
        missing = [a for a in ("NAME", "LABEL") if not isinstance(getattr(module, a, None), str)]
        line_based = bool(getattr(module, "LINE_BASED", False))
        streamed = line_based and getattr(module, "STREAMED", False) is True
        if line_based:
            missing += [a for a in ("detect_line", "load") if fn(a) is None and not (a == "load" and streamed)]
        elif fn("detect_object") is None or fn("load_object") is None:
            missing += [a for a in ("detect_object", "load_object") if fn(a) is None]
        if (fn("detect_object") is None) != (fn("load_object") is None):  # half a single-object shape
            missing += [a for a in ("detect_object", "load_object") if fn(a) is None and a not in missing]
        if (fn("runs_in") is None) != (fn("load_run") is None):  # half a many-runs shape
            missing += [a for a in ("runs_in", "load_run") if fn(a) is None]
        if fn("runs_in") is not None and line_based:
            missing.append("detect_object (runs in one file: a single-object format)")
        if missing:
            raise TypeError(f"importer {mname} does not fit the contract: no {', '.join(missing)}")
        return cls(name=name or module.NAME, label=module.LABEL, line_based=line_based,
                   detect_line=fn("detect_line"), load_lines=fn("load") if line_based else None,
                   detect_object=fn("detect_object"), load_object=fn("load_object"), load_zip=fn("load_zip"),
                   runs_in=fn("runs_in"), load_run=fn("load_run"), detect_text=fn("detect_text"), module=module,
                   streamed=streamed)
