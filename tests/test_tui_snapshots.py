"""SVG snapshots of the replay app's main views on the seed trace, at 160x48.

Update with ``pytest tests/test_tui_snapshots.py --snapshot-update``; the same SVGs are copied to
``screenshots/replay_*.svg`` by ``python tests/test_tui_screenshots.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelp import settle, wait_ready

from ktui.tui.app import replay_app

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
SIZE = (160, 48)

pytestmark = pytest.mark.skipif(not SEED.is_file(), reason="bundled seed trace missing")


def keys_then_settle(*keys: str, search: str | None = None):
    async def run_before(pilot) -> None:
        app = pilot.app
        s = await wait_ready(app, pilot)
        for key in keys:
            await pilot.press(key)
        if search is not None:
            await pilot.press("slash")
            s.query_one("#search-input").value = search
            await pilot.press("enter")
            for _ in range(100):
                await pilot.pause(0.02)
                if s._regex is not None:
                    break
        await settle(pilot)

    return run_before


def test_replay_turn0(snap_compare):
    """Header, turn list and turn 0 at once."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle())


def test_replay_failed_turn(snap_compare):
    """`n`: the first failed turn, its error on the first lines."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle("n"))


def test_replay_turn_diff(snap_compare):
    """Turn 5 with `d`: the new kernel as a diff against the previous version."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE,
                        run_before=keys_then_settle("j", "j", "j", "j", "j", "d"))


def test_replay_kernels_diff(snap_compare):
    """Kernels pane: v1-v4, the v3 -> v4 diff (unified)."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle("2", "G", "d"))


def test_replay_kernels_split(snap_compare):
    """Kernels pane: the v3 -> v4 diff side by side with intra-line highlights."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle("2", "G", "s"))


def test_replay_metrics(snap_compare):
    """Metrics pane: units corrected, every flag beside its metric."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle("3"))


def test_replay_search(snap_compare):
    """`/int64_t`: matches highlighted, the current one brighter, counts in the search bar."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle(search="int64_t"))


def test_replay_events(snap_compare):
    """Events pane: the raw lines of turn 2, with line numbers."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle("n", "5"))


def test_replay_help(snap_compare):
    """`?`: every key."""
    assert snap_compare(replay_app(SEED), terminal_size=SIZE, run_before=keys_then_settle("question_mark"))
