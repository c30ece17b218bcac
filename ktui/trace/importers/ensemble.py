"""The ensemble runtime's JSONL (PopcornBench, KTBench; variants V0-V3): the original format.

Every line is ``{tick, ts_ms, actor, payload: {kind, ...}}`` (see docs/ensemble-trace-format.md);
:mod:`ktui.trace.reader` and :mod:`ktui.trace.builder` read it, streaming.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.model import Run

NAME = "ensemble"
LABEL = "ensemble JSONL (PopcornBench / KTBench)"
LINE_BASED = True


def detect_line(obj: Any) -> bool:
    """An event envelope: a ``payload`` object with a string ``kind``."""
    p = obj.get("payload")
    return isinstance(p, dict) and isinstance(p.get("kind"), str) and \
        ("tick" in obj or "ts_ms" in obj or "actor" in obj or "kind" in p)


def load(path: str, data: bytes | None = None, keep_events: bool = True) -> Run:
    from ktui.trace import reader

    if data is not None:
        return reader.load_bytes(data, path, format=NAME)
    return reader.load(path, keep_events=keep_events, format=NAME)
