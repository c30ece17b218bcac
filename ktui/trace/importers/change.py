"""A file changed in place by a command (:mod:`ktui.trace.importers.inplace`): the path, and either
a function from the old content to the new one (``None``: the change cannot be replayed, the
file is "modified in place, content unknown"), or the whole new content."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Apply = Callable[[str], str]


@dataclass(slots=True)
class Change:
    path: str
    how: str  # "sed -i", "perl -pi", "python script", ...
    apply: Apply | None = None  # old content -> new content; None: the change cannot be replayed
    whole: str | None = None  # the new content, when the command writes it whole
