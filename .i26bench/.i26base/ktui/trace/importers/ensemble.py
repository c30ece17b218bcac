"""The ensemble runtime's JSONL (PopcornBench, KTBench; variants V0-V3): the original format.

Every line is ``{tick, ts_ms, actor, payload: {kind, ...}}`` (see docs/ensemble-trace-format.md);
:mod:`ktui.trace.reader` and :mod:`ktui.trace.builder` read it, streaming (and follow it, and show
it in stages): it is the reader's own format (``STREAMED``), so this module only recognises it;
``ktui.trace.importers.load`` hands it to the reader.
"""

from __future__ import annotations

from typing import Any

NAME = "ensemble"
LABEL = "ensemble JSONL (PopcornBench / KTBench)"
LINE_BASED = True
STREAMED = True  # read by ktui.trace.reader, not by a load() of its own


def detect_line(obj: Any) -> bool:
    """An event envelope: a ``payload`` object with a ``kind`` (of any type: a broken ensemble
    line is still an ensemble line, reported by the reader), or ``tick`` / ``ts_ms`` beside a payload."""
    if "payload" not in obj:
        return False
    p = obj["payload"]
    return (isinstance(p, dict) and "kind" in p) or "tick" in obj or "ts_ms" in obj
