"""The runs and search screens' workers reach the UI thread by typed messages
(ktui/tui/screens/sweep_messages.py), as the replay, compare and repro screens' do: no screen calls
back through ``App.call_from_thread``."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

SCREENS = Path(__file__).resolve().parent.parent / "ktui" / "tui" / "screens"


def test_no_screen_calls_back_from_a_thread():
    users = sorted(p.name for p in SCREENS.rglob("*.py") if re.search(r"\.call_from_thread\(", p.read_text()))
    assert users == []


def test_the_scan_and_the_search_post_their_results_as_messages(tmp_path, monkeypatch):
    """The screens' handlers get the workers' messages (recorded as they are handled, on the UI
    thread), and what the screens show is what the messages carried."""
    import threading

    from ktui.tui.app import KtuiApp
    from ktui.tui.screens.runs import RunsScreen
    from ktui.tui.screens.search import SearchScreen
    from tests.test_search import _with_text

    for name in ("a", "b", "c"):  # three different traces (the index reads identical ones once)
        _with_text(tmp_path / name / "trace.jsonl", f"run {name}: an illegal memory access" if name != "a" else "fine")
    seen: list[tuple[str, object]] = []
    ui = []

    def record(cls, name):
        handler = getattr(cls, name)

        def wrapped(self, message):
            seen.append((type(message).__name__, message))
            ui.append(threading.current_thread() is threading.main_thread())
            return handler(self, message)
        monkeypatch.setattr(cls, name, wrapped)

    for name in ("on_runs_batch", "on_runs_scanned"):
        record(RunsScreen, name)
    for name in ("on_search_progress", "on_search_hits", "on_search_finished"):
        record(SearchScreen, name)

    async def flow():
        app = KtuiApp(lambda: RunsScreen(tmp_path, use_cache=False))
        async with app.run_test(size=(100, 30)) as pilot:
            runs = app.screen
            for _ in range(300):
                await pilot.pause(0.02)
                if runs.scan_done:
                    break
            assert runs.scan_done and runs.scanned == 3
            batches = [m for n, m in seen if n == "RunsBatch"]
            rows = runs.query_one("RunsTable").rows
            assert batches and [r for m in batches for r in m.batch] == rows  # the table is what was posted
            assert [n for n, _ in seen][-1] == "RunsScanned"
            seen.clear()
            await pilot.press("F")
            await pilot.pause()
            scr = app.screen
            await pilot.press(*"illegal memory", "enter")
            for _ in range(300):
                await pilot.pause(0.02)
                if scr.stats is not None:
                    break
            names = [n for n, _ in seen]
            assert "SearchHits" in names and names[-1] == "SearchFinished", names
            posted = [h for n, m in seen if n == "SearchHits" for h in m.batch]
            assert posted and posted == scr.hits  # what the screen shows is what the worker posted
            assert sorted(Path(h.real).parent.name for h in posted) == ["b", "c"]
            assert all(m.matcher is scr.matcher for n, m in seen if n != "SearchProgress")
            assert ui and all(ui)

    asyncio.run(flow())
