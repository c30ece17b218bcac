"""The task of a first user message, where a harness frames it (OpenHands without native function
calling puts a worked example before the task)."""

from __future__ import annotations

import re

# OpenHands (its fn_call_converter, for models without native function calling) puts a worked
# example before the task in the first user message and frames the task itself with these lines
_TASK_START = re.compile(r"^-{5,}\s*NEW TASK DESCRIPTION\s*-{5,}\s*$", re.M)
_TASK_END = re.compile(r"^-{5,}\s*END OF NEW TASK DESCRIPTION\s*-{5,}\s*$", re.M)


def task_of(text: str) -> str:
    """The task of a first user message: the framed NEW TASK DESCRIPTION when there is one (the
    example before it is not the task), else the message."""
    m = _TASK_START.search(text[:1 << 20])
    if m is None:
        return text
    e = _TASK_END.search(text, m.end())
    task = text[m.end(): e.start() if e else len(text)].strip("\n")
    return task if task.strip() else text

