"""The task of a first user message, where a harness frames it (OpenHands without native function
calling puts a worked example before the task; Cline wraps the task in ``<task>`` tags and sends the
environment's details after it)."""

from __future__ import annotations

import re

# OpenHands (its fn_call_converter, for models without native function calling) puts a worked
# example before the task in the first user message and frames the task itself with these lines
_TASK_START = re.compile(r"^-{5,}\s*NEW TASK DESCRIPTION\s*-{5,}\s*$", re.M)
_TASK_END = re.compile(r"^-{5,}\s*END OF NEW TASK DESCRIPTION\s*-{5,}\s*$", re.M)


_CLINE_TASK = re.compile(r"\A\s*<task>\n?(.*?)\n?</task>", re.S)


def task_of(text: str) -> str:
    """The task of a first user message: the framed NEW TASK DESCRIPTION when there is one (the
    example before it is not the task), Cline's ``<task>`` (the environment details after it are
    not), else the message."""
    c = _CLINE_TASK.match(text[:1 << 20])
    if c is not None and c.group(1).strip():
        return c.group(1)
    m = _TASK_START.search(text[:1 << 20])
    if m is None:
        return text
    e = _TASK_END.search(text, m.end())
    task = text[m.end(): e.start() if e else len(text)].strip("\n")
    return task if task.strip() else text

