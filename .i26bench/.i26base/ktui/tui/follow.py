"""Follow mode without shared state: the follower thread hands the screen immutable snapshots.

:class:`ktui.trace.reader.Follower` updates one ``Run`` in place as lines arrive (and starts a
new one when the file is truncated or replaced). That object never leaves the follower's
thread: after each poll that changed something, :func:`feed` yields a :class:`Snapshot`, a copy
that later polls cannot touch, numbered by a generation that only grows. The screen swaps its
reference to the newest snapshot; it never takes a lock and never sees a half-updated run.

Copying is cheap where it matters: the event log (column arrays, the bulk of a big run) is
copied with a memcpy per column, and the rest of the model is a tree of small objects.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ktui.trace.model import Run, copy_events, snapshot_run  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class Snapshot:
    run: Run
    generation: int  # 1, 2, 3, ... per follower
    reset: bool  # the file was truncated or replaced: this run starts over


HEAD_BYTES = 4096  # how much of the file's start is compared between polls


def read_head(path: str | Path, n: int = HEAD_BYTES) -> bytes | None:
    """The first ``n`` bytes of a regular file (None: unreadable, or not a regular file)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return None


def feed(path: str | Path, *, interval: float, cancelled: Callable[[], bool],
         sleep: Callable[[float], None] = time.sleep) -> Iterator[Snapshot]:
    """Follow ``path``: the first snapshot at once, then one per poll that changed something,
    until ``cancelled()``. Runs in a worker thread; the Follower stays inside it.

    The run starts over (``reset``) when the file is truncated, replaced (another inode), or
    rewritten in place so that its first bytes differ, even if it grew past the old size
    between two polls (the Follower alone would read on from its old offset)."""
    from ktui.trace.reader import Follower

    f = Follower(path)
    head = read_head(path)
    gen = 1
    yield Snapshot(snapshot_run(f.run), gen, reset=False)
    while not cancelled():
        sleep(interval)
        if cancelled():
            return
        builder = f.builder
        now = read_head(path, len(head)) if head else None
        if head and now is not None and now != head:  # rewritten in place
            f = Follower(path)
            changed = True
        else:
            changed = f.poll()
        head = read_head(path) if head is None or len(head) < HEAD_BYTES or f.builder is not builder else head
        reset = f.builder is not builder
        if not changed and not reset:
            continue
        run = f.run if changed else f.builder.finish(final=False)  # truncated to nothing yet
        gen += 1
        yield Snapshot(snapshot_run(run), gen, reset=reset)
