"""Follow mode: immutable snapshots from the follower thread; growth, truncation, replacement."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from apphelp import wait_ready

from ktui.trace import load
from ktui.trace.reader import Follower
from ktui.tui.app import replay_app
from ktui.tui.follow import feed, snapshot_run
from ktui.tui.widgets.turnlist import TurnList

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
OTHER = REPO / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"

pytestmark = pytest.mark.skipif(not (SEED.is_file() and OTHER.is_file()), reason="seed or compare fixture missing")


def seed_lines() -> list[str]:
    return SEED.read_text(encoding="utf-8").splitlines(keepends=True)


def first_turns(n: int) -> str:
    """The seed up to the end of turn ``n - 1``."""
    cut = load(SEED).turns[n - 1].last_line
    return "".join(seed_lines()[:cut])


# ---- the snapshots ------------------------------------------------------------------------------
def test_a_snapshot_does_not_change_when_the_follower_reads_on(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_text(first_turns(3), encoding="utf-8")
    f = Follower(path)
    snap = snapshot_run(f.run)
    before = (len(snap.turns), len(snap.events), len(snap.kernels), snap.outcome,
              [len(t.calls) for t in snap.turns], [c.result is not None for c in snap.calls])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(seed_lines()[load(SEED).turns[2].last_line:]))
    assert f.poll()
    assert len(f.run.turns) == 9 and len(f.run.events) > before[1]
    after = (len(snap.turns), len(snap.events), len(snap.kernels), snap.outcome,
             [len(t.calls) for t in snap.turns], [c.result is not None for c in snap.calls])
    assert after == before
    assert snap.turns[0] is not f.run.turns[0] and snap.events is not f.run.events
    assert [e.line for e in snap.events] == [e.line for e in f.run.events][: len(snap.events)]


class Script:
    """A fake ``sleep`` for :func:`feed`: each call performs the next file operation."""

    def __init__(self, *steps):
        self.steps = list(steps)

    def __call__(self, _seconds: float) -> None:
        if self.steps:
            self.steps.pop(0)()

    @property
    def done(self) -> bool:
        return not self.steps


def test_feed_growth_truncation_and_replacement(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_text(first_turns(2), encoding="utf-8")
    lines = seed_lines()

    def grow():
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(lines[load(SEED).turns[1].last_line:]))

    def rewrite_bigger():  # truncated and rewritten in place with more bytes than before
        path.write_bytes(OTHER.read_bytes())

    def replace():
        new = tmp_path / "new.jsonl"
        new.write_text(first_turns(1), encoding="utf-8")
        os.replace(new, path)

    def truncate():
        path.write_bytes(b"")

    def nothing():
        pass

    script = Script(grow, nothing, rewrite_bigger, replace, truncate, nothing)
    snaps = []
    for snap in feed(path, interval=0, cancelled=lambda: script.done, sleep=script):
        snaps.append(snap)
    gens = [s.generation for s in snaps]
    assert gens == sorted(gens) and len(set(gens)) == len(gens)
    # first, growth, (nothing: no snapshot), rewrite, replace, truncate
    assert [s.reset for s in snaps] == [False, False, True, True, True]
    assert [len(s.run.turns) for s in snaps] == [2, 9, 4, 1, 0]
    assert snaps[1].run.model == "grok-4.3" and snaps[2].run.model == "test-agent-b"
    assert snaps[3].run.model == "grok-4.3"
    # every snapshot kept its own content
    assert len(snaps[0].run.turns) == 2 and len(snaps[1].run.turns) == 9


# ---- the screen ---------------------------------------------------------------------------------
async def until(pilot, cond, timeout: float = 5.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        await pilot.pause(0.05)
        if cond():
            return True
    return False


def rows(app) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


def test_screen_swaps_snapshots_as_the_file_grows(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_text(first_turns(3), encoding="utf-8")

    async def go():
        app = replay_app(path, follow=True)
        async with app.run_test(size=(160, 48)) as pilot:
            s = await wait_ready(app, pilot)
            old = s.run
            assert len(old.turns) == 3
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("".join(seed_lines()[load(SEED).turns[2].last_line:]))
            assert await until(pilot, lambda: s.query_one(TurnList).row_count == 9)
            assert s.run is not old and len(old.turns) == 3  # the old snapshot was not touched
            assert s.turn_index == 0  # not at the end: the place is kept

    asyncio.run(go())


@pytest.mark.parametrize("how", ["truncate_and_rewrite", "replace"])
def test_screen_resets_when_the_file_is_truncated_or_replaced(tmp_path, how):
    path = tmp_path / "live.jsonl"
    path.write_text(SEED.read_text(encoding="utf-8"), encoding="utf-8")

    async def go():
        app = replay_app(path, follow=True)
        async with app.run_test(size=(160, 48)) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("slash", *"torch", "enter")
            assert await until(pilot, lambda: s._regex is not None)
            await pilot.press("G")
            await pilot.pause()
            assert s.turn_index == 8
            if how == "replace":
                new = tmp_path / "new.jsonl"
                new.write_bytes(OTHER.read_bytes())
                os.replace(new, path)
            else:
                with open(path, "wb") as fh:  # same inode, and longer than the seed
                    fh.write(OTHER.read_bytes() + b"\n" * (SEED.stat().st_size - OTHER.stat().st_size + 10))
            assert await until(pilot, lambda: s.run is not None and s.run.model == "test-agent-b")
            await pilot.pause(0.1)
            assert s.query_one(TurnList).row_count == len(s.run.turns) == 4
            assert s.turn_index == 0 and s._regex is None
            text = rows(app)
            assert "test-agent-b" in text and "grok-4.3" not in text
            await pilot.press("j")
            await pilot.pause()
            assert s.turn_index == 1

    asyncio.run(go())
