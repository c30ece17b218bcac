"""What the repro panel's workers tell the panel (Textual messages, posted from their threads):
a cached result looked up, progress, a reproduction or a profile done, a failure in words."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class ReproLookedUp(Message):
    """The cache lookup finished: the cached report, or None."""

    def __init__(self, report: Any) -> None:
        super().__init__()
        self.report = report


class ReproProgress(Message):
    """A stage of a reproduction or a profile (a ``ktui.repro.runner.Progress``)."""

    def __init__(self, progress: Any) -> None:
        super().__init__()
        self.progress = progress


class ReproDone(Message):
    """A reproduction finished (a ``ReproReport``)."""

    def __init__(self, report: Any) -> None:
        super().__init__()
        self.report = report


class ProfileDone(Message):
    """A profile finished (a ``ProfileReport``)."""

    def __init__(self, report: Any) -> None:
        super().__init__()
        self.report = report


class ReproFailed(Message):
    """A reproduction or a profile could not run: why, in words."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message
