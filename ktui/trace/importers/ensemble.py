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
    """An event envelope: a ``payload`` object with a ``kind`` (of any type: a broken ensemble
    line is still an ensemble line, reported by the reader), or ``tick`` / ``ts_ms`` beside a payload."""
    if "payload" not in obj:
        return False
    p = obj["payload"]
    return (isinstance(p, dict) and "kind" in p) or "tick" in obj or "ts_ms" in obj


def load(path: str, data: bytes | None = None, keep_events: bool = True) -> Run:
    from ktui.trace import reader

    if data is not None:
        return reader.load_bytes(data, path, format=NAME)
    return reader.load(path, keep_events=keep_events, format=NAME)
