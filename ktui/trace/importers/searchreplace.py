"""SEARCH / REPLACE diffs as Cline, Roo Code and Aider-style tools write them (split out of
common.py, which re-exports it: its 600-line limit)."""

from __future__ import annotations

import re
from typing import Any

_SR_START = re.compile(r"^(-{3,}|<{3,}) ?SEARCH\s*$")
_SR_MID = re.compile(r"^={3,}\s*$")
_SR_END = re.compile(r"^(?:\+{3,}|>{3,}) ?REPLACE\s*$")
_SR_LINE_HINT = re.compile(r"^:(?:start|end)_line:\s*\d+\s*$")
_SR_HEAD_END = re.compile(r"^-{3,}\s*$")


def search_replace_blocks(diff: Any) -> list[tuple[str, str]]:
    """The (search, replace) pairs of a SEARCH / REPLACE diff (Cline's ``replace_in_file``:
    ``------- SEARCH`` / ``=======`` / ``+++++++ REPLACE``; the older ``<<<<<<< SEARCH`` /
    ``>>>>>>> REPLACE``, where Roo Code's ``apply_diff`` puts ``:start_line:N`` and a ``-------``
    line before the search text); [] when it is not one (or a block is not closed)."""
    if not isinstance(diff, str) or "SEARCH" not in diff or len(diff) > (8 << 20):
        return []
    out: list[tuple[str, str]] = []
    state = 0  # 0 outside, 1 in SEARCH, 2 in REPLACE
    head = False  # at the start of a <<<<<<< SEARCH block: Roo's line hints may come
    old: list[str] = []
    new: list[str] = []
    for ln in diff.split("\n"):
        if state == 0:
            m = _SR_START.match(ln)
            if m:
                state, old, new, head = 1, [], [], m.group(1).startswith("<")
        elif state == 1 and head and _SR_LINE_HINT.match(ln):
            continue
        elif state == 1 and head and old == [] and _SR_HEAD_END.match(ln):
            head = False
        elif state == 1 and _SR_MID.match(ln):
            state = 2
        elif state == 2 and _SR_END.match(ln):
            out.append(("\n".join(old), "\n".join(new)))
            state = 0
        elif state == 1:
            head = False
            old.append(ln)
        elif state == 2:
            new.append(ln)
    return [] if state != 0 else out
