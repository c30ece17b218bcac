"""The app at 100x30 and 160x48: snapshots of what a user sees on a small and a large terminal,
and the layout rules behind them (narrow turn list, split diffs falling back to unified, cut
code lines scrolled sideways, the header's flags line, readable aggregates).

Update with ``pytest tests/test_tui_layout.py --snapshot-update``, then
``python tests/test_tui_screenshots.py`` copies the images to ``screenshots/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from apphelp import settle, wait_ready

from ktui.tui.app import KtuiApp, replay_app
from ktui.tui.screens.compare import CompareScreen
from ktui.tui.screens.replay import SPLIT_MIN_WIDTH
from ktui.tui.screens.runs import RunsScreen
from ktui.tui.widgets.docview import DocView, PairsBlock
from ktui.tui.widgets.turnlist import TurnList

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
OTHER = REPO / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"
FIXTURES = REPO.parent / "shared" / "fixtures"
SMALL, LARGE = (100, 30), (160, 48)

pytestmark = pytest.mark.skipif(not SEED.is_file(), reason="bundled seed trace missing")


def replay_keys(*keys: str, typed: str = ""):
    async def run_before(pilot) -> None:
        app = pilot.app
        await wait_ready(app, pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        if typed:
            await pilot.press("slash", *typed)
        await settle(pilot)

    return run_before


async def runs_ready(pilot) -> None:
    for _ in range(300):
        await pilot.pause(0.02)
        if getattr(pilot.app.screen, "scan_done", False):
            break
    await settle(pilot)


async def compare_ready(pilot) -> None:
    for _ in range(200):
        await pilot.pause(0.02)
        if getattr(pilot.app.screen, "loaded", False):
            break
    await pilot.press("2")
    await settle(pilot)


CASES = {
    # (app factory, size, run_before)
    "replay_100x30": (lambda: replay_app(SEED), SMALL, replay_keys()),
    "replay_search_typing_100x30": (lambda: replay_app(SEED), SMALL, replay_keys(typed="generator")),
    "replay_search_typing_160x48": (lambda: replay_app(SEED), LARGE, replay_keys(typed="generator")),
    "replay_split_fallback_100x30": (lambda: replay_app(SEED), SMALL, replay_keys("2", "G", "s")),
    "replay_zen_100x30": (lambda: replay_app(SEED), SMALL, replay_keys("j", "z")),
    "replay_cut_lines_160x48": (lambda: replay_app(SEED), LARGE, replay_keys("j", "L", "L")),
    "compare_kernels_100x30": (lambda: KtuiApp(lambda: CompareScreen([SEED, OTHER])), SMALL, compare_ready),
}


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_layout_snapshots(snap_compare, name):
    factory, size, before = CASES[name]
    assert snap_compare(factory(), terminal_size=size, run_before=before)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures not available")
@pytest.mark.parametrize("name", ["runs_100x30"], ids=["runs_100x30"])
def test_layout_snapshots_runs(snap_compare, monkeypatch, name):
    monkeypatch.chdir(REPO)  # the root is shown as typed
    app = KtuiApp(lambda: RunsScreen(Path("../shared/fixtures"), use_cache=False))
    assert snap_compare(app, terminal_size=SMALL, run_before=runs_ready)


# ---- the rules behind the pictures ------------------------------------------------------------------
def rows(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["100x30", "160x48"])
def test_header_flags_line_and_turn_list_fit(size):
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=size) as pilot:
            s = await wait_ready(app, pilot)
            await settle(pilot)
            text = "\n".join(rows(app))
            assert "⚑" in text  # the flags line of the header is on screen
            tl = s.query_one(TurnList)
            assert tl.outer_size.width <= (46 if size == LARGE else 30)
            for line in rows(app)[tl.region.y + 1: tl.region.y + 10]:  # every turn's tools readable
                assert "…" not in line[: tl.region.width]
            await pilot.press("z")
            await pilot.pause()
            assert not tl.display and s.query_one("#panes").size.width >= size[0] - 1
            await pilot.press("z", "minus", "minus")
            await pilot.pause()
            assert tl.display and tl.outer_size.width < (46 if size == LARGE else 30)

    asyncio.run(go())


def test_split_diff_falls_back_to_unified_when_narrow_and_returns_when_wide():
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SMALL) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("2", "G", "s")
            await settle(pilot)
            kdoc = s.query_one("#kernel-doc", DocView)
            assert s.query_one("#panes").size.width < SPLIT_MIN_WIDTH
            assert not any(isinstance(b, PairsBlock) for b in kdoc.blocks)
            assert any("+" in r[:8] or "-" in r[:8] for r in kdoc.plain_rows())  # a unified diff
            await pilot.resize_terminal(160, 48)
            await settle(pilot)
            assert any(isinstance(b, PairsBlock) for b in kdoc.blocks)

    asyncio.run(go())


def test_code_lines_are_cut_and_scroll_sideways_and_W_folds_them():
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=LARGE) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("j")
            await settle(pilot)
            doc = s.query_one("#turn-doc", DocView)

            def screen_line(needle: str) -> str:
                return next(r for r in rows(app) if needle in r)

            line = screen_line("__global__ void permute_kernel")
            assert line.rstrip().endswith("›")  # cut at the edge, not folded mid-identifier
            assert "__restri│ct__" not in "\n".join(rows(app))
            await pilot.press("L", "L")
            await pilot.pause()
            assert doc.hscroll == 16
            moved = screen_line("permute_kernel(const float*")
            assert "__global__" not in moved and moved.split("│", 1)[1].lstrip().startswith("9 permute_kernel")
            await pilot.press("H", "H", "W")
            await pilot.pause()
            assert doc.wrap_code and doc.hscroll == 0
            assert not screen_line("__global__ void permute_kernel").rstrip().endswith("›")

    asyncio.run(go())


@pytest.mark.skipif(not OTHER.is_file(), reason="compare fixture missing")
def test_compare_split_diff_needs_room():
    async def go():
        app = KtuiApp(lambda: CompareScreen([SEED, OTHER]))
        async with app.run_test(size=(80, 24)) as pilot:  # under 90 columns: halves of 40 would not read
            await compare_ready(pilot)
            s = app.screen
            await pilot.press("s")
            await settle(pilot)
            view = s.query_one("#compare-diff", DocView)
            assert s.split and not any(isinstance(b, PairsBlock) for b in view.blocks)
            await pilot.resize_terminal(160, 48)
            await settle(pilot)
            assert any(isinstance(b, PairsBlock) for b in view.blocks)

    asyncio.run(go())


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures missing")
def test_per_model_headers_are_whole_at_100_columns(monkeypatch, tmp_path):
    """At 100 columns the per-model table scrolls sideways (H / L); it never squeezes its headers
    to "r…", "pa…" (it did: the table was measured to the screen's width)."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))

    async def go():
        app = KtuiApp(lambda: RunsScreen(FIXTURES, use_cache=False))
        async with app.run_test(size=SMALL) as pilot:
            await runs_ready(pilot)
            text = "\n".join(rows(app))
            head = next(ln for ln in text.splitlines() if ln.lstrip().startswith("model ") and "pass rate" in ln)
            assert " runs  passed  pass rate  fast_0  fast_1  fast_1.5  fast_2" in head
            assert "…" not in head
            for _ in range(6):
                await pilot.press("L")
            await settle(pilot)
            text = "\n".join(rows(app))
            assert "tokens / run" in text  # scrolled into view, whole

    asyncio.run(go())
