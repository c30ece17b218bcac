"""Messages from the replay screen's workers, and the helpers of its search and turn moves (pure)."""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from textual.message import Message

from ktui.trace.model import ERROR, FAILED, MISSING, Event, Run, Turn
from ktui.tui.follow import Snapshot
from ktui.tui.widgets.doclines import LinesBlock
from ktui.tui.widgets.documents import (
    note_blocks,
    terminal_blocks,
    turn_view,
)

PANE_IDS = ("turn", "kernels", "metrics", "reference", "events")
BAD = (FAILED, ERROR, MISSING)
FOLLOW_INTERVAL = 0.25  # seconds between polls of a followed trace
SWITCH_INTERVAL = sys.getswitchinterval()
LOADING_SWITCH_INTERVAL = 0.0005  # seconds a thread holds the interpreter lock while the rest of a file is read
EVENTS_LIMIT = 2000  # raw events shown at once for traces without turns
SIDE_WIDTH, SIDE_NARROW, SIDE_MIN, SIDE_MAX = 46, 30, 16, 90  # the turn list's width: default, on
# terminals under 130 columns, bounds of - / +
SPLIT_MIN_WIDTH = 90  # a side-by-side diff below this pane width falls back to unified


# ---- messages from workers --------------------------------------------------------------------


@dataclass
class Loaded(Message):
    run: Run
    complete: bool = True  # False: the run of the file's first lines (the rest is being read)


@dataclass
class Followed(Message):
    """A snapshot from the follow worker (``feed``: which start of follow mode it belongs to)."""

    feed: int
    snapshot: Snapshot


@dataclass
class EventsRead(Message):
    key: int | None  # turn index (None: all events)
    events: list[Event]
    raws: list[str]


@dataclass
class SearchDone(Message):
    regex: re.Pattern[str]
    turns: list[int]  # turns with at least one match, in order
    total: int


@dataclass
class PagerText(Message):
    text: str  # the turn's raw lines, made safe


@dataclass
class StatsReady(Message):
    pass


@dataclass
class FindingsReady(Message):
    """The run's flags with the static findings of its kernel versions (computed in a worker)."""

    run: Run
    flags: list


@dataclass
class Written(Message):
    path: str
    label: str


def turn_search_text(run: Run, t: Turn) -> Iterator[str]:
    """The lines of turn ``t`` as its document shows them (unfolded): each hit is counted once.
    The last turn's document ends with how the run ended (:func:`terminal_blocks`): searched too
    (a sweep search finds a backend's error or a halt there, and opens this turn)."""
    yield from turn_view(run, t).plain_lines(expanded=True)
    for b in note_blocks(run, t):  # the notes in the middle of the run shown with this turn
        if isinstance(b, LinesBlock):
            yield from (b.source.plain(i) for i in range(len(b.source)))
    if t.index == len(run.turns) - 1:
        for b in terminal_blocks(run):
            if isinstance(b, LinesBlock):
                yield from (b.source.plain(i) for i in range(len(b.source)))


def count_matches(regex: re.Pattern[str], lines: Iterable[str]) -> int:
    """Non-empty matches per line, as :meth:`DocView.find` counts them."""
    return sum(1 for s in lines for m in regex.finditer(s) if m.end() > m.start())


def compile_search(pattern: str) -> re.Pattern[str]:
    """Smart case: case-insensitive unless the pattern has an upper-case letter."""
    flags = re.MULTILINE
    if not any(ch.isupper() for ch in pattern):
        flags |= re.IGNORECASE
    return re.compile(pattern, flags)


def _suffix_first_turns(run: Run) -> list[float]:
    """``out[j]``: the smallest first turn of kernels[j:] (versions without one count as after
    every turn); it never decreases with ``j``."""
    out: list[float] = [0.0] * len(run.kernels)
    low = float("inf")
    for j in range(len(run.kernels) - 1, -1, -1):
        ft = run.kernels[j].first_turn
        low = min(low, ft if ft is not None else float("inf"))
        out[j] = low
    return out


def latest_kernel_by_turn(run: Run, i: int) -> int | None:
    """The number of the last version (in version order) that first appeared at or before turn
    ``i``; None when none did. A bisection over a table built once per state of the run."""
    low = run.lookup("kernel_first_turns", _suffix_first_turns)
    j = bisect.bisect_right(low, i) - 1  # low[j] <= i < low[j + 1]: kernels[j] is that version
    return run.kernels[j].number if j >= 0 else None


def neighbour_failed_turn(run: Run, i: int, direction: int) -> int | None:
    """The first failed turn after turn ``i`` (``direction`` 1) or the last one before it (-1);
    None when there is none. A bisection over the failed turns, found once per state of the run."""
    bad = run.lookup("failed_turns", lambda r: [t.index for t in r.turns if t.status in BAD])
    if direction > 0:
        j = bisect.bisect_right(bad, i)
        return bad[j] if j < len(bad) else None
    j = bisect.bisect_left(bad, i)
    return bad[j - 1] if j > 0 else None
