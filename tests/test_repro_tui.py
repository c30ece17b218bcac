"""The replay app's repro panel (ktui/tui/screens/repro_panel.py) with Python-level CPU test traces:
confirmation, progress, the result table, cancel with escape, cached results on reopening."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import needs

pytest.importorskip("textual")
pytestmark = [needs("torch"), pytest.mark.usefixtures("shared_build_cache")]

from textual.app import App  # noqa: E402

from ktui.repro.api import ReproOptions  # noqa: E402
from ktui.tui.screens.repro_panel import ReproScreen, cached_verdict, shared_worker  # noqa: E402

FIX = Path(__file__).resolve().parent / "fixtures" / "repro"


def load(name: str):
    from ktui.trace import load as _load

    return _load(str(FIX / f"{name}.jsonl"))


class Host(App):
    def __init__(self, screen):
        super().__init__()
        self._screen = screen
        self.result = "unset"

    def on_mount(self) -> None:
        def done(value):
            self.result = value

        self.push_screen(self._screen, done)

    def on_unmount(self) -> None:
        w = getattr(self, "_ktui_repro_worker", None)
        if w is not None:
            w.close()


async def wait_for(pilot, cond, timeout=90.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if cond():
            return True
        await pilot.pause(0.1)
    return False


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_confirm_run_result_then_cached(cache):
    run = load("cpu_run")
    kv = run.kernel("v2")
    opts = ReproOptions(device="cpu", trials=5, timeout=60)

    async def go():
        screen = ReproScreen(run, kv, opts)
        app = Host(screen)
        async with app.run_test(size=(140, 50)) as pilot:
            assert await wait_for(pilot, lambda: screen.state != "looking", timeout=20)  # the cache lookup
            assert screen.state == "confirm"
            await pilot.press("y", "n")  # not the panel's keys (copy / next failed elsewhere): nothing happens
            assert screen.state == "confirm"
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: screen.state == "done")
            assert screen.report is not None
            assert screen.report.verdict == "reproduced: fails the same way"
            text = screen.query_one("#repro-result").plain  # the result's widgets, from its view
            assert "fails the same way" in text and "torch" in text
            assert shared_worker(app).requests == 1
            await pilot.press("escape")
            await pilot.pause()
            assert app.result is screen.report

    asyncio.run(go())
    assert cached_verdict(run, kv) == "reproduced: fails the same way"

    async def reopen():
        screen = ReproScreen(run, kv, opts)
        app = Host(screen)
        async with app.run_test(size=(140, 50)) as pilot:
            assert await wait_for(pilot, lambda: screen.state != "looking", timeout=20)
            assert screen.state == "done" and screen.report.cached  # no confirmation, no run

    asyncio.run(reopen())


def test_escape_cancels_a_running_kernel(cache):
    run = load("cpu_hang")
    kv = run.kernel("v1")
    opts = ReproOptions(device="cpu", trials=5, timeout=120)

    async def go():
        screen = ReproScreen(run, kv, opts, confirm=False)
        app = Host(screen)
        async with app.run_test(size=(140, 50)) as pilot:
            assert await wait_for(pilot, lambda: "correctness" in str(screen.query_one("#repro-status").render()))
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: screen.state == "done", timeout=30)
            assert screen.report.verdict == "cancelled"
            assert "cancelled during correctness" in screen.report.reason

    asyncio.run(go())


def test_r_in_the_replay_app_opens_the_panel(cache):
    replay = pytest.importorskip("ktui.tui.screens.replay")
    from ktui.tui.app import KtuiApp

    async def go():
        app = KtuiApp(start=lambda: replay.ReplayScreen(str(FIX / "cpu_run.jsonl")))
        async with app.run_test(size=(160, 50)) as pilot:
            assert await wait_for(pilot, lambda: getattr(app.screen, "run", None) is not None, timeout=30)
            await pilot.press("r")
            assert await wait_for(pilot, lambda: isinstance(app.screen, ReproScreen), timeout=10)
            assert await wait_for(pilot, lambda: app.screen.state != "looking", timeout=20)
            assert app.screen.state == "confirm"  # first run in this app: asks before executing code
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, ReproScreen), timeout=10)

    asyncio.run(go())


def test_the_cache_lookup_runs_off_the_ui_thread(cache, monkeypatch):
    """known_report probes the environment (nvidia-smi, seconds): the panel must not wait on it."""
    import threading

    import ktui.tui.screens.repro_panel as panel

    run = load("cpu_run")
    kv = run.kernel("v2")
    release = threading.Event()
    threads = []

    def slow_lookup(*a, **kw):
        threads.append(threading.current_thread())
        release.wait(10)
        return None

    monkeypatch.setattr(panel, "known_report", slow_lookup)

    async def go():
        screen = ReproScreen(run, kv, ReproOptions(device="cpu"))
        app = Host(screen)
        async with app.run_test(size=(140, 50)) as pilot:
            await pilot.pause(0.2)
            assert screen.state == "looking"  # drawn and responsive while the lookup is pending
            assert "looking for a cached result" in str(screen.query_one("#repro-status").render())
            release.set()
            assert await wait_for(pilot, lambda: screen.state == "confirm", timeout=10)
            assert threads and threads[0] is not threading.main_thread()

    asyncio.run(go())


def test_a_failing_lookup_is_reported_and_the_panel_still_offers_a_run(cache, monkeypatch):
    import ktui.tui.screens.repro_panel as panel

    run = load("cpu_run")
    kv = run.kernel("v2")
    seen = []

    def broken(*a, **kw):
        raise RuntimeError("cache index unreadable")

    monkeypatch.setattr(panel, "known_report", broken)

    async def go():
        screen = ReproScreen(run, kv, ReproOptions(device="cpu"))
        app = Host(screen)
        orig = app.notify
        app.notify = lambda message, *a, **kw: (seen.append((message, kw.get("severity"))), orig(message, *a, **kw))
        async with app.run_test(size=(140, 50)) as pilot:
            assert await wait_for(pilot, lambda: screen.state == "confirm", timeout=10)
            assert any("cache index unreadable" in m and sev == "error" for m, sev in seen)

    asyncio.run(go())


def test_q_in_the_panel_quits_and_kills_a_running_kernel(cache):
    run = load("cpu_hang")
    kv = run.kernel("v1")
    opts = ReproOptions(device="cpu", trials=5, timeout=120)
    exits = []

    async def go():
        screen = ReproScreen(run, kv, opts, confirm=False)
        app = Host(screen)
        app.exit = lambda *a, **k: exits.append(screen._cancel.is_set())  # record, keep the app to watch
        async with app.run_test(size=(140, 50)) as pilot:
            assert await wait_for(pilot, lambda: "correctness" in str(screen.query_one("#repro-status").render()))
            await pilot.press("q")
            assert await wait_for(pilot, lambda: screen.state == "done", timeout=30)
            assert screen.report.verdict == "cancelled"  # the worker was killed

    asyncio.run(go())
    assert exits == [True]  # q quits (the app's exit), after the worker's cancel was set


def test_the_report_is_laid_out_at_the_panels_width(cache):
    """At 100x30 the table is laid out at the body's own width (columns by priority: none wraps
    the recorded value), and again at the new width on a resize."""
    from ktui.tui.widgets.resultview import ViewTable

    run = load("cpu_run")
    kv = run.kernel("v2")
    opts = ReproOptions(device="cpu", trials=5, timeout=60)

    def widest(screen):
        t = screen.query_one(ViewTable)
        return max(len(line) for line in t.render().plain.splitlines()), t.size.width

    async def go():
        screen = ReproScreen(run, kv, opts, confirm=False)
        app = Host(screen)
        async with app.run_test(size=(100, 30)) as pilot:
            assert await wait_for(pilot, lambda: screen.state == "done")
            await pilot.pause()
            await pilot.pause()
            narrow, room = widest(screen)
            body = screen.query_one("#repro-body")
            assert narrow <= room <= body.scrollable_content_region.width, (narrow, room)
            await pilot.resize_terminal(160, 48)
            await pilot.pause()
            await pilot.pause()
            wide, room2 = widest(screen)
            assert room < room2 and wide <= room2

    asyncio.run(go())


# ---- snapshots of the panel at 100x30 and 160x48 (a stored result: deterministic) -----------------
PANEL_RESULT = FIX / "panel_result_cpu_run_v3.json"


def _panel_app(monkeypatch):
    """The panel showing a stored CPU result of cpu_run v3 (ktui repro's own output, its timings
    frozen in tests/fixtures/repro/panel_result_cpu_run_v3.json): nothing runs."""
    import json

    import ktui.tui.screens.repro_panel as P
    from ktui.repro.api import _report

    run = load("cpu_run")
    kv = run.kernel("v3")
    entry = json.loads(PANEL_RESULT.read_text())
    monkeypatch.setattr(P, "known_report", lambda *_a, **_k: _report(run, kv, entry, cached=True))
    return Host(ReproScreen(run, kv, ReproOptions(device="cpu", trials=5), confirm=False))


@pytest.mark.parametrize("size", [(100, 30), (160, 48)], ids=["100x30", "160x48"])
def test_panel_snapshot(snap_compare, monkeypatch, cache, size):
    async def settle(pilot):
        screen = pilot.app.screen
        for _ in range(200):
            if getattr(screen, "state", "") == "done":
                break
            await pilot.pause(0.05)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(_panel_app(monkeypatch), terminal_size=size, run_before=settle)
