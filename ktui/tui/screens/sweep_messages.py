"""Messages from the runs and search screens' worker threads (as the replay, compare and repro
screens have theirs): a worker posts one of these to its screen (``post_message`` is safe from
a thread, and a no-op once the screen is gone), and the screen's handler changes the widgets on
the UI thread. Nothing here calls back through ``App.call_from_thread``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from ktui.trace.index import RunSummary, ScanIssue
from ktui.trace.search import Hit, Matcher, SearchStats


# ---- the runs screen --------------------------------------------------------------------------------
@dataclass
class RunsBatch(Message):
    """Summaries read by the scan since the last batch, and how far it is."""

    batch: list[RunSummary]
    done: int
    hits: int  # summaries from the index's cache
    total: int | None


@dataclass
class RunsScanned(Message):
    """The scan is over."""

    issues: list[ScanIssue]
    done: int
    hits: int


@dataclass
class ChartsReady(Message):
    """The charts of the runs shown when they were asked for."""

    charts: Any  # ktui.view.charts' sweep charts
    rows: list[RunSummary]


# ---- the search screen ------------------------------------------------------------------------------
@dataclass
class SearchProgress(Message):
    matcher: Matcher
    searched: int
    files: int
    hits: int


@dataclass
class SearchHits(Message):
    matcher: Matcher  # the search they belong to (a newer search drops them)
    batch: list[Hit]


@dataclass
class SearchFinished(Message):
    matcher: Matcher
    stats: SearchStats
    capped: bool  # stopped at the row limit
