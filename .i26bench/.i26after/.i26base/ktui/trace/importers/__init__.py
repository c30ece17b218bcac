"""Importers: every trace format ktui reads, into the one :class:`~ktui.trace.model.Run` model.

The front door: :func:`load` reads any format, handing ensemble JSONL to :mod:`ktui.trace.reader`
(which streams, follows and stages it) and every other format to its importer through the
registry (:mod:`ktui.trace.importers.registry`: detection, the formats, ``load_other`` and
``ImportFollower``, which the reader uses without importing this module or being imported by the
registry). The contract an importer module fits: :mod:`ktui.trace.importers.contract`.

    from ktui.trace.importers import load, detect
    run = load("session.jsonl")           # any format
    detect("trajectory.json").name         # "harbor-atif"
"""

from __future__ import annotations

import os

from ktui.trace.importers.contract import Importer
from ktui.trace.importers.registry import (
    BY_NAME,
    ENV,
    FORMATS,
    IMPORTERS,
    INTERNAL,
    Detection,
    ImportFollower,
    choose,
    describe,
    detect,
    forced,
    load_other,
    names,
    not_a_trace,
)
from ktui.trace.importers.registry import load_as as _load_imported
from ktui.trace.model import Run


def load(path: str | os.PathLike[str], fmt: str | None = None, *, data: bytes | None = None,
         keep_events: bool = True) -> Run:
    """Read any trace into a Run. Never raises on bad data."""
    path = os.fspath(path)
    det = choose(path if data is None else None, data, fmt)
    return load_as(path, det, data=data, keep_events=keep_events)


def load_as(path: str, det: Detection, *, data: bytes | None = None, keep_events: bool = True) -> Run:
    """Read with the detected importer (ensemble: the reader), then attach the harness's result
    files (ktui.trace.results)."""
    if not _streamed(det.name):
        return _load_imported(path, det, data=data)
    from ktui.trace import reader
    from ktui.trace.results import attach

    if data is not None:
        run = reader.load_bytes(data, path, format=det.name)
    else:
        run = reader.load(path, keep_events=keep_events, format=det.name)
    return attach(run)


def _streamed(name: str) -> bool:
    return any(i.streamed for i in IMPORTERS if i.name == name)


__all__ = ["BY_NAME", "ENV", "FORMATS", "IMPORTERS", "INTERNAL", "Detection", "Importer", "ImportFollower", "choose",
           "describe", "detect", "forced", "load", "load_as", "load_other", "names", "not_a_trace"]
