"""The search bar and keyboard focus of the replay app, driven as a user types (Textual Pilot).

Under Textual 8 a focused ``Input`` gets a tall border that, in a one-line bar, hid the typed
text; and after any modal closed, Textual's auto-focus handed the keys to the hidden search
input. These tests type real keys and read the rendered screen.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from apphelp import wait_ready

from ktui.tui.app import replay_app
from ktui.tui.screens.help import HelpScreen

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
SIZES = [(160, 48), (100, 30)]

pytestmark = pytest.mark.skipif(not SEED.is_file(), reason="bundled seed trace missing")


async def wait_for(pilot, cond, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        await pilot.pause(0.02)
        if cond():
            return
    raise AssertionError("condition not reached")


def rows(app) -> list[str]:
    strips = app.screen._compositor.render_strips()
    return ["".join(seg.text for seg in strip) for strip in strips]


def search_row(app) -> str:
    """The rendered line of the search bar (the one above the footer)."""
    bar = app.screen.query_one("#search")
    assert bar.display and bar.region.height == 1, "the search bar is not shown"
    return rows(app)[bar.region.y]


async def type_text(pilot, text: str) -> None:
    for ch in text:
        await pilot.press(ch)


async def search(pilot, s, text: str) -> None:
    """Open the search bar, type ``text``, run it and wait for it to be in force."""
    await pilot.press("slash")
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: s._regex is not None)


def drive(scenario, size=(160, 48)) -> None:
    """``await scenario(app, pilot, screen)`` in the replay app of the seed trace, once it is loaded."""
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=size) as pilot:
            await scenario(app, pilot, await wait_ready(app, pilot))

    asyncio.run(go())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_typed_search_text_is_visible_while_typing(size):
    async def scenario(app, pilot, s):
        await pilot.press("slash")
        await pilot.pause()
        typed = ""
        for ch in "generator":
            await pilot.press(ch)
            await pilot.pause()
            typed += ch
            line = search_row(app)
            assert line.startswith(f"/ {typed}"), repr(line)
            assert "▔" not in line and "▁" not in line  # no border drawn over the text

    drive(scenario, size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_escape_help_escape_then_j_moves_to_the_next_turn(size):
    async def scenario(app, pilot, s):
        await search(pilot, s, "generator")
        start = s.turn_index
        await pilot.press("escape")
        await pilot.pause()
        assert not s.query_one("#search").display
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is s
        assert s.focused is None or s.focused.id != "search-input"
        await pilot.press("j")
        await pilot.pause()
        assert s.turn_index == start + 1
        assert s.query_one("#search-input").value == "generator"  # the j went nowhere else
        footer = rows(app)[-1]
        assert "next failed" in footer and "help" in footer  # the screen's keys, not the input's

    drive(scenario, size)


def test_escape_while_typing_closes_the_bar_and_keys_reach_the_screen():
    async def scenario(app, pilot, s):
        await pilot.press("slash")
        await type_text(pilot, "gen")
        await pilot.press("escape")
        await pilot.pause()
        assert not s.query_one("#search").display
        assert s.focused is None
        await pilot.press("j", "j")
        await pilot.pause()
        assert s.turn_index == 2

    drive(scenario)


def test_escape_in_the_bar_keeps_a_search_in_force():
    async def scenario(app, pilot, s):
        await search(pilot, s, "generator")
        await pilot.press("slash")  # edit the search again, then change one's mind
        await pilot.press("backspace", "backspace")
        await pilot.press("escape")
        await pilot.pause()
        assert s._regex is not None and s.query_one("#search").display
        assert s.query_one("#search-input").value == "generator"
        assert s.focused is None
        turn = s.turn_index
        await pilot.press("enter")  # next match: the screen's binding again
        await pilot.pause()
        assert s.turn_index in s._search_turns and (s._match_pos > 0 or s.turn_index != turn)

    drive(scenario)


MODAL_KEYS = {"help": "question_mark", "prompt": "w", "palette": "ctrl+p", "repro": "r"}


@pytest.mark.parametrize("modal", list(MODAL_KEYS))
def test_focus_returns_to_the_content_after_a_modal(modal, tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))

    async def scenario(app, pilot, s):
        # a search was used and closed first: the hidden input is the widget focus would land on
        await search(pilot, s, "torch")
        await pilot.press("escape", "g")
        await pilot.pause()
        await pilot.press(MODAL_KEYS[modal])
        await wait_for(pilot, lambda: app.screen is not s)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is s)
        assert s.focused is None
        await pilot.press("j")
        await pilot.pause()
        assert s.turn_index == 1
        assert s.query_one("#search-input").value == "torch"

    drive(scenario)
