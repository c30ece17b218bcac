"""The replay app, driven headless with Textual's Pilot (App.run_test)."""

from __future__ import annotations

import asyncio
import glob
import json
import re
from pathlib import Path

import pytest
from apphelp import collect_errors, wait_ready

from ktui.trace import load
from ktui.tui.app import KtuiApp, replay_app
from ktui.tui.screens.help import HelpScreen
from ktui.tui.screens.replay import ReplayScreen
from ktui.tui.widgets.docview import DocView, LinesBlock, PairsBlock, TextLines
from ktui.tui.widgets.turnlist import TurnList

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
FIXTURES = sorted(glob.glob(str(REPO.parent / "shared" / "fixtures" / "**" / "*.jsonl"), recursive=True))
SIZE = (160, 48)

needs_seed = pytest.mark.skipif(not SEED.is_file(), reason="bundled seed trace missing")


# ---- helpers ----------------------------------------------------------------------------------
def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


def doc_rows(screen: ReplayScreen, doc_id: str) -> list[str]:
    return screen.query_one(f"#{doc_id}", DocView).plain_rows()


def diff_sign_lines(doc: DocView) -> tuple[list[str], list[str]]:
    """(removed, added) code lines of the unified diff blocks in a document."""
    removed: list[str] = []
    added: list[str] = []
    pat = re.compile(r"^\s*\d*\s+\d*\s([+-])(.*)$")
    for b in doc.blocks:
        if isinstance(b, LinesBlock) and isinstance(b.source, TextLines):
            for i in range(len(b.source)):
                m = pat.match(b.source.plain(i))
                if m and not b.source.plain(i).startswith("@@"):
                    (added if m.group(1) == "+" else removed).append(m.group(2).strip())
    return removed, added


# ---- the acceptance on the seed trace -------------------------------------------------------
@needs_seed
def test_seed_acceptance():
    async def go():
        app = replay_app(SEED)
        errors = collect_errors(app)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            text = screen_text(app)
            # header, turn list and turn 0 visible at once
            assert "L1 P27 27_permutation_all_to_all.py" in text
            assert "grok-4.3" in text and "9 / 12" in text and "34,544" in text and "1146.3s" in text
            assert "31.2 μs" in text and "1.23x" in text and "⚑" in text
            for i, tool in enumerate(["get_gpu_specs", "compile_kernel", "run_correctness"]):
                assert re.search(rf"\b{i}\s+\S\s+{tool}", text)
            assert "turn 0" in text and "The task is to replace the forward computation" in text
            # n lands on turn 2 with its error on screen
            await pilot.press("n")
            await pilot.pause()
            assert s.turn_index == 2
            assert "Expected a 'cuda' device type for generator but found 'cpu'" in screen_text(app)
            # Kernels pane: v1-v4, and v3 -> v4 is the three int -> int64_t lines
            await pilot.press("tab")
            await pilot.pause()
            assert s.active_pane == "kernels"
            text = screen_text(app)
            for v in ("v1", "v2", "v3", "v4"):
                assert re.search(rf"\b{v}\s+[0-9a-f]{{10}}", text), v
            await pilot.press("G", "d")
            await pilot.pause()
            assert s.kernel_number == 4 and s.opts.diff
            doc = s.query_one("#kernel-doc", DocView)
            assert "diff v3 → v4" in "\n".join(doc.plain_rows())
            removed, added = diff_sign_lines(doc)
            assert len(removed) == 3 and len(added) == 3
            assert [a.replace("int64_t", "int") for a in added] == removed
            assert all("int64_t" in a for a in added) and not any("int64_t" in r for r in removed)
        assert errors == []

    asyncio.run(go())


@needs_seed
def test_navigation_keys():
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            seen = []
            for key in ["j", "j", "k", "down", "G", "up", "g", "n", "n", "n", "N", "end", "home"]:
                await pilot.press(key)
                await pilot.pause()
                seen.append(s.turn_index)
            assert seen == [1, 2, 1, 2, 8, 7, 0, 2, 4, 4, 2, 8, 0]
            assert s.query_one(TurnList).cursor_row == 0
            # tab cycles the panes, shift+tab back, digits jump
            panes = []
            for key in ["tab", "tab", "tab", "tab", "tab", "shift+tab", "3", "1"]:
                await pilot.press(key)
                await pilot.pause()
                panes.append(s.active_pane)
            assert panes == ["kernels", "metrics", "reference", "events", "turn", "events", "metrics", "turn"]

    asyncio.run(go())


@needs_seed
def test_turn_view_content_and_same_as():
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("j")
            await pilot.pause()
            rows = "\n".join(doc_rows(s, "turn-doc"))
            assert "kernel_code  v1  new · 55 lines" in rows
            assert "load_inline" in rows and "__global__ void permute_kernel" in rows
            await pilot.press("j", "j", "j")  # turn 4 re-submits v3
            await pilot.pause()
            rows = "\n".join(doc_rows(s, "turn-doc"))
            assert "same as v3" in rows and "expected scalar type Int but found Long" in rows
            assert "__global__ void permute_kernel" not in rows  # collapsed, not repeated
            # the CUDA inside load_inline is highlighted with the CUDA lexer
            from ktui.tui.widgets.code import CUDA, code_lines

            run = s.run
            cl = code_lines(run.kernels[0].code)
            assert CUDA in cl.kinds and cl.kinds[0] == "python"

    asyncio.run(go())


@needs_seed
def test_diff_toggles_in_turn_and_kernels_panes():
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            for _ in range(5):
                await pilot.press("j")
            await pilot.pause()
            assert s.turn_index == 5
            doc = s.query_one("#turn-doc", DocView)
            assert diff_sign_lines(doc) == ([], [])
            await pilot.press("d")
            await pilot.pause()
            removed, added = diff_sign_lines(doc)
            assert len(removed) == 3 and len(added) == 3
            await pilot.press("s")
            await pilot.pause()
            assert any(isinstance(b, PairsBlock) for b in doc.blocks)
            split_rows = "\n".join(doc.plain_rows())
            assert "int64_t p = perm[j];" in split_rows and "│" in split_rows
            await pilot.press("s")
            await pilot.pause()
            assert not any(isinstance(b, PairsBlock) for b in doc.blocks)
            await pilot.press("d")
            await pilot.pause()
            assert diff_sign_lines(doc) == ([], [])
            # any two versions: mark v1, select v4
            await pilot.press("2", "g", "m", "G")
            await pilot.pause()
            assert s.base_number == 1 and s.kernel_number == 4
            kdoc = s.query_one("#kernel-doc", DocView)
            assert "diff v1 → v4" in "\n".join(kdoc.plain_rows())
            await pilot.press("escape")
            await pilot.pause()
            assert s.base_number is None
            assert "diff v3 → v4" in "\n".join(kdoc.plain_rows())

    asyncio.run(go())


@needs_seed
def test_search_regex_highlight_and_match_navigation():
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("slash")
            await pilot.press(*"int64_t")
            await pilot.press("enter")
            for _ in range(50):
                await pilot.pause(0.02)
                if s._regex is not None:
                    break
            assert s.turn_index == 5  # v4 is first shown in full at turn 5
            doc = s.query_one("#turn-doc", DocView)
            assert len(s._doc_matches) == 3 and s._match_pos == 0
            status = str(s.query_one("#search-status").render())
            assert "1/3 in turn 5" in status
            await pilot.press("enter")
            assert s._match_pos == 1
            await pilot.press("shift+enter", "shift+enter")
            assert s._match_pos == 0 or s.turn_index == 5
            # the current match is highlighted in the rendered rows
            assert doc._current is not None
            # regex, smart case, across turns: "found" matches turns 2 and 4
            await pilot.press("slash")
            s.query_one("#search-input").value = r"but found '?(cpu|Long)"
            await pilot.press("enter")
            for _ in range(50):
                await pilot.pause(0.02)
                if s._search_turns == [2, 4]:
                    break
            assert s._search_turns == [2, 4]
            assert s.turn_index == 2
            in_turn_2 = len(s._doc_matches)
            assert in_turn_2 == 1  # the error, once (the call overview does not repeat it)
            assert s._search_total == 2  # what search counted is what the two documents show
            for _ in range(in_turn_2):
                await pilot.press("enter")
            await pilot.pause()
            assert s.turn_index == 4 and s._match_pos == 0
            await pilot.press("shift+enter")
            await pilot.pause()
            assert s.turn_index == 2 and s._match_pos == in_turn_2 - 1
            await pilot.press("escape")
            await pilot.pause()
            assert s._regex is None

    asyncio.run(go())


@needs_seed
def test_copy_write_help_palette_and_repro_key(tmp_path, monkeypatch):
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("G", "y")
            await pilot.pause()
            assert app.clipboard == s.run.kernels[3].code
            await pilot.press("w")
            await pilot.pause()
            inp = app.screen.query_one("#prompt-input")
            inp.value = str(tmp_path / "final.py")
            await pilot.press("enter")
            for _ in range(50):
                await pilot.pause(0.02)
                if (tmp_path / "final.py").exists():
                    break
            assert (tmp_path / "final.py").read_text() == s.run.kernels[3].code
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert "next / previous failed turn" in screen_text(app)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is s
            titles = [c.title for c in app.get_system_commands(s)]
            assert any("failed turn" in t for t in titles) and any("Kernels pane" in t for t in titles)
            await pilot.press("r")  # the repro panel (asks before running model code), or a notice
            await pilot.pause(0.2)
            try:
                from ktui.tui.screens.repro_panel import ReproScreen
            except ImportError:
                ReproScreen = None
            if ReproScreen is not None:
                assert isinstance(app.screen, ReproScreen)
                await pilot.press("escape")
                await pilot.pause(0.2)
                assert app.screen is s

    asyncio.run(go())


# ---- follow mode ------------------------------------------------------------------------------------
def _split_seed(tmp_path: Path, upto_turn: int) -> tuple[Path, list[str]]:
    lines = SEED.read_text(encoding="utf-8").splitlines(keepends=True)
    run = load(SEED)
    cut = run.turns[upto_turn].last_line  # keep turns 0..upto_turn
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:cut]), encoding="utf-8")
    return path, lines[cut:]


async def _wait(pilot, cond, timeout=3.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        await pilot.pause(0.05)
        if cond():
            return loop.time()
    return None


@needs_seed
def test_follow_new_turns_appear_and_cursor_follows_at_end(tmp_path):
    path, rest = _split_seed(tmp_path, 2)

    async def go():
        app = replay_app(path, follow=True)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            assert len(s.run.turns) == 3
            await pilot.press("G")
            await pilot.pause()
            assert s.turn_index == 2
            assert "following" in screen_text(app)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            with open(path, "a", encoding="utf-8") as f:
                f.write("".join(rest[:7]))  # turn 3
            t = await _wait(pilot, lambda: s.query_one(TurnList).row_count == 4)
            assert t is not None and t - t0 < 1.0, "new turn not shown within a second"
            assert s.turn_index == 3  # was at the end: stays at the end
            assert "Error because generator device" in "\n".join(doc_rows(s, "turn-doc"))
            # a half-written line is held back until its newline arrives
            nxt = rest[7:]
            with open(path, "a", encoding="utf-8") as f:
                f.write("".join(nxt[:6]) + nxt[6][:40])
            await pilot.pause(0.6)
            assert s.query_one(TurnList).row_count == 5
            calls_before = len(s.run.turns[4].calls)
            with open(path, "a", encoding="utf-8") as f:
                f.write(nxt[6][40:])
            await _wait(pilot, lambda: len(s.run.turns[4].calls) > calls_before or
                        s.run.turns[4].calls[-1].result is not None)
            assert s.run.turns[4].calls[-1].result is not None
            assert s.turn_index == 4

    asyncio.run(go())


@needs_seed
def test_follow_keeps_cursor_when_not_at_end_and_f_toggles(tmp_path):
    path, rest = _split_seed(tmp_path, 3)

    async def go():
        app = replay_app(path)  # opened without --follow
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("j")
            await pilot.pause()
            assert s.turn_index == 1
            await pilot.press("f")
            await _wait(pilot, lambda: s._feed_gen >= 1)
            with open(path, "a", encoding="utf-8") as f:
                f.write("".join(rest))
            ok = await _wait(pilot, lambda: s.query_one(TurnList).row_count == 9)
            assert ok is not None
            assert s.turn_index == 1  # the user's place is kept
            await pilot.press("f")
            assert not s.follow

    asyncio.run(go())


# ---- every fixture opens; nasty text is shown literally -----------------------------------------------
@pytest.mark.parametrize("path", FIXTURES, ids=[Path(p).name for p in FIXTURES])
def test_every_fixture_opens_and_walks(path):
    async def go():
        app = replay_app(path)
        errors = collect_errors(app)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            n = len(s.run.turns)
            for _ in range(max(1, n)):
                await pilot.press("j")
            await pilot.press("d", "s")
            for pane in "2345":
                await pilot.press(pane, "j", "k")
            await pilot.pause(0.2)
            text = screen_text(app)
            assert text.strip()
            if n == 0:
                await pilot.press("1")
                await pilot.pause()
                assert "This run has no turns." in "\n".join(doc_rows(s, "turn-doc"))
        assert errors == []

    asyncio.run(go())


HOSTILE = "[bold]not bold[/] [red]x[/red] \x1b[31mANSI red\x1b[0m bell\x07 cr\rend [link=http://x]l[/link]"


def _hostile_trace(tmp_path: Path) -> Path:
    ev = []

    def add(kind, actor="agent", **payload):
        ev.append({"tick": len(ev), "ts_ms": 1_700_000_000_000 + 1000 * len(ev), "actor": actor,
                   "message_id": "msg-" + "0" * 32 if kind in ("user_message", "agent_message") else None,
                   "payload": {"kind": kind, **payload}})

    add("system", None, note=json.dumps({"kind": "agent_spawned", "actor_id": "agent", "model": "m[bold]x",
                                         "tools": ["compile_kernel"], "system_prompt": "", "params": {}}))
    add("user_message", "user", text="go")
    add("cost", unit="tokens_in", amount=10.0, running_total=10.0)
    add("cost", unit="tokens_out", amount=5.0, running_total=5.0)
    add("agent_message", text="**Title** " + HOSTILE)
    add("agent_message", text="visible " + HOSTILE)
    add("tool_call", id="c1", name="compile_kernel", args={"kernel_code": "x = '" + HOSTILE + "'\n"}, seed=False)
    add("tool_result", id="c1", name="compile_kernel",
        result={"ok": False, "tool": "compile_kernel", "summary": "compile_kernel FAILED: " + HOSTILE,
                "stdout": "error: " + HOSTILE * 3},
        is_error=False, seed=False)
    p = tmp_path / "hostile.jsonl"
    p.write_text("\n".join(json.dumps(e) for e in ev) + "\n", encoding="utf-8")
    return p


def test_untrusted_text_is_shown_literally(tmp_path):
    path = _hostile_trace(tmp_path)

    async def go():
        app = replay_app(path)
        errors = collect_errors(app)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            rows = "\n".join(doc_rows(s, "turn-doc"))
            assert "[bold]not bold[/]" in rows and "[red]x[/red]" in rows
            assert "␛[31mANSI red" in rows and "\x1b" not in rows and "\x07" not in rows
            text = screen_text(app)
            assert "\x1b" not in text and "\r" not in text
            assert "m[bold]x" in text  # the model name in the header
            # no style leaks: in the (unstyled) visible text, "[bold]" makes nothing bold
            checked = 0
            for strip in app.screen._compositor.render_strips():
                line = "".join(seg.text for seg in strip)
                if "visible [bold]" not in line:
                    continue
                for seg in strip:
                    if "not bold" in seg.text or "ANSI red" in seg.text:
                        checked += 1
                        assert not (seg.style and (seg.style.bold or seg.style.link))
            assert checked
            for pane in "2345":
                await pilot.press(pane)
            await pilot.pause(0.2)
            assert "\x1b" not in screen_text(app)
        assert errors == []

    asyncio.run(go())


def test_app_accepts_any_start_screen():
    from textual.screen import Screen
    from textual.widgets import Static

    class Hello(Screen):
        def compose(self):
            yield Static("hello screen")

    async def go():
        app = KtuiApp(lambda: Hello())
        async with app.run_test(size=(40, 5)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, Hello)
            if SEED.is_file():
                app.open_replay(SEED)
                s = await wait_ready(app, pilot)
                await pilot.press("escape")  # back to the screen it was opened from
                await pilot.pause()
                assert isinstance(app.screen, Hello) and s is not app.screen

    asyncio.run(go())


def test_missing_file_is_reported_not_raised(tmp_path):
    p = tmp_path / "gone.jsonl"
    p.write_text("", encoding="utf-8")

    async def go():
        app = replay_app(p)
        errors = collect_errors(app)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            p.unlink()
            await pilot.press("f", "j", "5")
            await pilot.pause(0.5)
            assert app.is_running and app.return_code is None  # no crash
            assert s.run is not None and any("empty file" in x.message or "cannot read" in x.message
                                             for x in s.run.problems)
            assert re.search(r"\b1 problem in the file", screen_text(app)) and not errors  # said in the header, not raised
        assert app.return_code in (0, None)

    asyncio.run(go())


def _bench_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_tui", REPO / "benchmarks" / "bench_tui.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_big_trace_renders_only_visible_rows(tmp_path):
    """500 turns with 400-line kernels: per frame, only the rows on screen are rendered."""
    path = _bench_module().synthetic_trace(tmp_path / "big.jsonl", turns=500, kernel_lines=400)
    from ktui.tui.widgets.docview import DocView as DV
    from ktui.tui.widgets.turnlist import TurnList as TL

    counts = {"turns": 0, "doc": 0}
    orig_tl, orig_dv = TL.render_line, DV.render_line

    def tl_line(self, y):
        counts["turns"] += 1
        return orig_tl(self, y)

    def dv_line(self, y):
        counts["doc"] += 1
        return orig_dv(self, y)

    async def go():
        app = replay_app(path)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            assert s.query_one(TurnList).row_count == 500
            await pilot.pause(0.2)
            TL.render_line, DV.render_line = tl_line, dv_line
            try:
                for key in ["G", "k", "n", "d", "g"]:
                    counts["turns"] = counts["doc"] = 0
                    await pilot.press(key)
                    await pilot.pause(0.1)
                    assert counts["turns"] <= 2 * SIZE[1], (key, counts)
                    assert counts["doc"] <= 2 * SIZE[1], (key, counts)
            finally:
                TL.render_line, DV.render_line = orig_tl, orig_dv
            assert s.turn_index == 0

    asyncio.run(go())


@needs_seed
def test_n_and_shift_n_step_matches_while_a_search_is_in_force():
    """shift+enter never reaches the app inside tmux: N is the previous match there (n the next),
    and the help says so; without a search n / N still go to the failed turns."""
    async def go():
        app = replay_app(SEED)
        async with app.run_test(size=SIZE) as pilot:
            s = await wait_ready(app, pilot)
            await pilot.press("slash", *"int64_t", "enter")
            for _ in range(50):
                await pilot.pause(0.02)
                if s._regex is not None:
                    break
            assert s.turn_index == 5 and s._match_pos == 0
            await pilot.press("n", "n")
            assert s._match_pos == 2 and s.turn_index == 5
            await pilot.press("N")
            assert s._match_pos == 1 and s.turn_index == 5
            assert "n / N" in str(s.query_one("#search-status").render())
            await pilot.press("escape")
            await pilot.pause()
            assert s._regex is None
            await pilot.press("g", "n")  # no search: the first failed turn
            await pilot.pause()
            from ktui.tui.screens.replay import neighbour_failed_turn

            assert s.turn_index == neighbour_failed_turn(s.run, 0, 1)

    asyncio.run(go())
    from ktui.tui.screens.replay import ReplayScreen

    helps = [k.help for k in ReplayScreen.KEYS if k.keys == "n"]
    assert any("previous match" in h for h in helps)
