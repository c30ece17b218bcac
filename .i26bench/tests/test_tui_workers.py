"""Slow work (diffs) is built in worker threads: the UI thread only shows the result."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import ktui.tui.screens.compare as compare_mod
import ktui.tui.screens.replay as replay_mod
from ktui.tui.app import KtuiApp, replay_app
from ktui.tui.screens.compare import CompareScreen
from ktui.tui.screens.replay import ReplayScreen
from ktui.tui.widgets.docview import DocView

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
OTHER = REPO / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"

pytestmark = pytest.mark.skipif(not (SEED.is_file() and OTHER.is_file()), reason="fixtures missing")


class Slow:
    """Wraps a document builder: records the thread it ran on and holds it until released."""

    def __init__(self, fn):
        self.fn = fn
        self.threads: list[threading.Thread] = []
        self.release = threading.Event()

    def __call__(self, *a, **kw):
        self.threads.append(threading.current_thread())
        self.release.wait(10)
        return self.fn(*a, **kw)


async def until(pilot, cond, timeout=5.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        await pilot.pause(0.02)
        if cond():
            return True
    return False


def test_turn_and_kernel_diffs_are_built_in_workers(monkeypatch):
    slow_turn = Slow(replay_mod.turn_document)
    slow_kernel = Slow(replay_mod.kernel_document)
    monkeypatch.setattr(replay_mod, "turn_document", slow_turn)
    monkeypatch.setattr(replay_mod, "kernel_document", slow_kernel)
    slow_turn.release.set()  # documents without a diff are built at once, on the UI thread

    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=(160, 48)) as pilot:
            assert await until(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.ready)
            s = app.screen
            await pilot.press(*"jjjjj")
            slow_turn.release.clear()
            slow_turn.threads.clear()
            doc = s.query_one("#turn-doc", DocView)
            before = doc.generation
            await pilot.press("d")  # turn 5's kernel as a diff: slow
            await pilot.pause(0.2)
            assert slow_turn.threads and slow_turn.threads[0] is not threading.main_thread()
            assert doc.generation == before  # not shown yet; the UI went on
            await pilot.press("3")  # keys still work while the diff is being built
            await pilot.pause()
            assert s.active_pane == "metrics"
            await pilot.press("1")
            slow_turn.release.set()
            assert await until(pilot, lambda: doc.generation > before)
            assert any(r.lstrip().startswith(("+", "-")) or " +" in r for r in doc.plain_rows())
            # the Kernels pane: the diff of v3 -> v4
            slow_kernel.threads.clear()
            await pilot.press("2", "G")
            assert await until(pilot, lambda: bool(slow_kernel.threads))
            assert all(t is not threading.main_thread() for t in slow_kernel.threads)
            slow_kernel.release.set()
            kdoc = s.query_one("#kernel-doc", DocView)
            assert await until(pilot, lambda: any("v3" in r and "v4" in r for r in kdoc.plain_rows()[:6]))

    asyncio.run(go())


def test_compare_kernel_diff_is_built_in_a_worker(monkeypatch):
    slow = Slow(compare_mod.diff_blocks)
    monkeypatch.setattr(compare_mod, "diff_blocks", slow)

    async def go():
        app = KtuiApp(lambda: CompareScreen([SEED, OTHER]))
        async with app.run_test(size=(160, 48)) as pilot:
            assert await until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded)
            s = app.screen
            assert await until(pilot, lambda: bool(slow.threads))
            assert slow.threads[0] is not threading.main_thread()
            await pilot.press("2")
            await pilot.pause()
            view = s.query_one("#compare-diff", DocView)
            assert view.total_rows == 0
            slow.release.set()
            assert await until(pilot, lambda: view.total_rows > 0)
            bar = str(s.query_one("#compare-kernels-bar").render())
            assert "+" in bar.splitlines()[0]  # the diff sizes, once known

    asyncio.run(go())


HACK = REPO / "tests" / "fixtures" / "hacks" / "hack_cuda_graph_replay.jsonl"


def test_static_findings_are_computed_in_a_worker_after_the_first_paint(monkeypatch):
    """The load leaves the kernels' static findings out (an AST walk per version); a worker adds
    them after the run is shown, and the header then names them."""
    import ktui.trace.flags as flags_mod
    from ktui.trace import load
    from ktui.tui.widgets.header import RunHeader

    full = load(HACK)
    lean = load(HACK, findings=False)
    assert lean.findings_pending and not full.findings_pending
    assert {f.code for f in full.flags} - {f.code for f in lean.flags} >= {"cuda_graph"}
    assert [(f.code, f.message) for f in flags_mod.with_findings(lean)] == [(f.code, f.message) for f in full.flags]

    slow = Slow(flags_mod.run_findings)
    monkeypatch.setattr(flags_mod, "run_findings", slow)

    async def go():
        app = replay_app(HACK)
        async with app.run_test(size=(160, 48)) as pilot:
            assert await until(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.ready)
            s = app.screen
            header = s.query_one(RunHeader)
            shown = lambda: str(header.render())  # noqa: E731
            assert "reading the kernels' code" in shown()  # shown before the findings are known
            assert s.run.findings_pending
            assert await until(pilot, lambda: bool([t for t in slow.threads if t is not threading.main_thread()]))
            slow.release.set()
            assert await until(pilot, lambda: not s.run.findings_pending)
            assert all(t is not threading.main_thread() for t in slow.threads)
            assert any(f.code == "cuda_graph" for f in s.run.flags)
            assert await until(pilot, lambda: "reading the kernels' code" not in shown())

    asyncio.run(go())
