"""ATIF written as it goes: a JSON-lines trajectory (``*.atif.jsonl``).

An agent that streams its ATIF trajectory writes a header line ``{"__header__": true,
"schema_version": "ATIF-v1.x", "session_id", "agent", "created_at"}`` and then one ATIF step a
line (``{step_id, timestamp, source, message, tool_calls?, observation?, metrics?, extra?}``); the
whole ``*.atif.json`` may be written beside it at the end (OpenAgents' MechaCoder does both). A
copy can hold the steps only (a tail). The steps are read as the single-object ATIF trajectory is
(:mod:`ktui.trace.importers.harbor_atif`); "lines" are the steps' ordinals.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers import harbor_atif
from ktui.trace.importers.common import Assembler, object_lines
from ktui.trace.model import Run

NAME = "atif-jsonl"
LABEL = "ATIF trajectory as JSON lines (a header line, then one step a line)"
LINE_BASED = True
_SOURCES = ("user", "agent", "system")
_MAX_STEPS = 100_000


def _is_header(obj: dict) -> bool:
    sv = obj.get("schema_version")
    return obj.get("__header__") is True and isinstance(sv, str) and sv.upper().startswith("ATIF")


def _is_step(obj: dict) -> bool:
    return isinstance(obj.get("step_id"), int) and not isinstance(obj.get("step_id"), bool) and \
        obj.get("source") in _SOURCES and "timestamp" in obj and \
        any(k in obj for k in ("message", "tool_calls", "observation"))


def detect_line(obj: Any) -> bool:
    return isinstance(obj, dict) and (_is_header(obj) or _is_step(obj))


def load(path: str, data: bytes | None = None) -> Run:
    probe = Assembler(path, NAME)  # reads the lines and collects what is wrong with them
    header: dict = {}
    steps: list = []
    for no, _off, _raw, obj in object_lines(probe, path, data):
        if _is_header(obj) and not header and not steps:
            header = obj
        elif _is_step(obj) and len(steps) < _MAX_STEPS:
            steps.append(obj)
        elif _is_header(obj):
            probe.warn(no, "a second header line (ignored)")
        else:
            probe.warn(no, "a line that is neither the header nor an ATIF step (skipped)")
    whole = {k: v for k, v in header.items() if k != "__header__"}
    whole["steps"] = steps
    run = harbor_atif.load_object(whole, path)
    run.format = run.variant = NAME
    run.problems = probe.run.problems + run.problems
    run.incomplete = run.incomplete or probe.run.incomplete  # a last line still being written
    run.size_bytes = max(run.size_bytes, probe.run.size_bytes)
    if not header:
        run.notes.insert(0, (0, "no header line: the agent and schema are not known (a tail of the stream?)"))
    if len(steps) >= _MAX_STEPS:
        run.notes.append((0, f"only the first {_MAX_STEPS:,} steps were read"))
    return run
