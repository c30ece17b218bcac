"""The key tables: one table per screen gives its bindings, help and palette; one key, one meaning."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from apphelp import wait_ready

from ktui.tui.keys import Key, action_name, check_table, help_rows
from ktui.tui.screens.base import KtuiScreen
from ktui.tui.screens.compare import CompareScreen
from ktui.tui.screens.replay import ReplayScreen
from ktui.tui.screens.repro_panel import ReproScreen
from ktui.tui.screens.runs import RunsScreen

SCREENS = [ReplayScreen, CompareScreen, RunsScreen]
# the screens' keys and those of the panels they open (the repro / profile panel over the replay screen)
ALL_KEYS = [*SCREENS, ReproScreen]
REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"


def test_the_same_key_means_the_same_thing_on_every_screen():
    meaning: dict[str, tuple[str, str]] = {}
    for screen in ALL_KEYS:
        for k in screen.key_table():
            for name in k.names:
                if name in meaning:
                    other, where = meaning[name]
                    assert other == k.meaning, (f"{name!r} is {other!r} on {where} but {k.meaning!r} "
                                                f"on {screen.__name__}")
                else:
                    meaning[name] = (k.meaning, screen.__name__)
    # the two clashes of the issue are gone
    assert meaning["b"][0] == "scroll_page" and meaning["s"][0] == "toggle_split"
    # `p` profiles (repro panel); the runs screen's charts are on `C`
    assert meaning["p"][0] == "profile" and meaning["C"][0] == "cycle_chart"
    assert meaning["r"][0] == "repro" and meaning["q"][0] == "quit" and meaning["enter"][0] == "go"


def test_the_repro_panel_binds_its_table():
    table = ReproScreen.key_table()
    assert {(b.key, b.action) for b in ReproScreen.BINDINGS} == {(k.keys, k.action) for k in table}
    for k in table:
        assert callable(getattr(ReproScreen, f"action_{action_name(k.action)}", None)), k
        assert k.help, k
    shown = {b.key: b.description for b in ReproScreen.BINDINGS if b.show}
    assert shown == {"escape": "cancel / close", "r": "re-run", "p": "profile (ncu)"}


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: s.__name__)
def test_bindings_are_the_table(screen):
    table = screen.key_table()
    bound = {(b.key, b.action) for b in screen.BINDINGS}
    rows = {(k.keys, k.action) for k in table}
    assert bound == rows
    for k in table:  # every row's action exists on the screen
        assert callable(getattr(screen, f"action_{action_name(k.action)}", None)), k
    # the help lists the table, every key reachable from a listed row
    listed = " ".join(label for label, _ in help_rows(table))
    for k in table:
        assert k.help or k.title, f"{k.keys}: neither help nor palette text"
    assert "?" in listed and "q" in listed and "esc" in listed


def test_a_key_bound_twice_in_one_table_is_refused():
    with pytest.raises(ValueError, match="bound to both"):
        check_table([Key("j", "next", "next"), Key("j,x", "other", "other")])

    with pytest.raises(ValueError):
        class Clash(KtuiScreen):  # noqa: F841 - the class statement itself must fail
            KEYS = [Key("c", "compare", "compare"), Key("c", "charts", "charts")]


def test_adding_a_key_is_one_table_row():
    class WithExport(RunsScreen):
        KEYS = [*RunsScreen.KEYS, Key("E", "export", "export the filtered runs", footer="export")]

        def action_export(self) -> None:
            self.exported = True

    assert any(b.key == "E" and b.action == "export" and b.show for b in WithExport.BINDINGS)
    assert ("E", "export the filtered runs") in help_rows(WithExport.key_table())
    assert not any(b.key == "E" for b in RunsScreen.BINDINGS)


@pytest.mark.skipif(not SEED.is_file(), reason="bundled seed trace missing")
def test_help_and_palette_come_from_the_table():
    from ktui.tui.app import replay_app
    from ktui.tui.screens.help import HelpScreen

    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=(160, 48)) as pilot:
            s = await wait_ready(app, pilot)
            titles = [c.title for c in app.get_system_commands(s)]
            for k in ReplayScreen.key_table():
                if k.palette and (k.title or k.help):
                    want = (k.title or k.help)
                    assert want[0].upper() + want[1:] in titles
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            strips = app.screen._compositor.render_strips()
            text = "\n".join("".join(seg.text for seg in strip) for strip in strips)
            for label, desc in help_rows(ReplayScreen.key_table()):
                assert desc[:40] in text and label in text, (label, desc)

    asyncio.run(go())
