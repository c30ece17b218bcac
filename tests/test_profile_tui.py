"""The repro panel's `p` key (ktui/tui/screens/profile_panel.py): confirmation first, then the profile; without
ncu the panel says so; a completed profile shows the rows and the roofline."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.app import App  # noqa: E402

from ktui.repro.api import ReproOptions  # noqa: E402
from ktui.tui.screens.repro_panel import ReproScreen  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"


class Host(App):
    def __init__(self, screen):
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._screen)


async def wait_for(pilot, cond, timeout=30.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if cond():
            return True
        await pilot.pause(0.05)
    return False


@pytest.fixture
def seed(tmp_path, monkeypatch):
    from ktui.trace import load

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    run = load(str(SEED))
    return run, run.kernel("v4")


# the panels below ask for --device cuda: the seed's v4 is a CUDA kernel, and on a machine that judges on
# a CPU (no device asked for and no NVIDIA driver) the panel says "not judged here (no GPU)" at once,
# asking nothing (ktui.repro.early); `p` is about the GPU's counters


def _body(screen) -> str:
    """What the body shows: the panel's own words, or a result drawn from its view."""
    from textual.widgets import Static

    body = screen.query_one("#repro-report", Static)
    return str(body.render()) if body.display else screen.query_one("#repro-result").plain


def _status(screen) -> str:
    from textual.widgets import Label

    return str(screen.query_one("#repro-status", Label).render())


def test_p_asks_first_then_says_ncu_is_missing(seed, monkeypatch):
    import ktui.repro.profile.ncu as N

    calls = []
    monkeypatch.setattr(N, "find_ncu", lambda: calls.append(1) or None)
    run, kv = seed

    async def go():
        screen = ReproScreen(run, kv, ReproOptions(device="cuda", timeout=30))
        async with Host(screen).run_test(size=(140, 50)) as pilot:
            await pilot.pause()
            assert screen.state == "confirm"  # the `r` confirmation
            await pilot.press("p")
            assert screen.state == "confirm" and screen._pending_profile
            assert "Nsight Compute" in _status(screen) and not calls  # nothing ran yet
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: screen.state == "done")
            assert calls == [1]
            # said once (it was in the status line and in the body: "ncu not found" twice)
            assert "cannot profile" in _status(screen) and "ncu" not in _status(screen)
            assert _body(screen).count(N.NOT_FOUND) == 1
            # confirmed once per app: `p` again runs at once
            await pilot.press("p")
            assert await wait_for(pilot, lambda: screen.state == "done" and len(calls) == 2)

    asyncio.run(go())


def test_p_shows_a_completed_profile(seed, monkeypatch):
    import ktui.repro.profile.run as R
    from tests.test_profile import _report

    run, kv = seed
    from ktui.repro.recorded import recorded_for

    rep = _report(recorded_for(run, kv))
    monkeypatch.setattr(R, "profile", lambda *a, **k: rep)

    async def go():
        screen = ReproScreen(run, kv, ReproOptions(device="cuda", timeout=30), confirm=True)
        async with Host(screen).run_test(size=(160, 60)) as pilot:
            await pilot.pause()
            assert screen.state == "confirm"
            screen.app._ktui_repro_confirmed = True  # as after an earlier confirmation
            await pilot.press("p")
            assert await wait_for(pilot, lambda: getattr(screen, "profile_report", None) is rep)
            body = _body(screen)
            assert "SOL score" in body and "long scoreboard" in body and "FLOP/byte" in body
            assert "impossible" in body and "latency-bound" in body
            assert "profile: differs" in _status(screen)

    asyncio.run(go())
