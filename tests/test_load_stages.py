"""The replay app draws a big trace from its first lines and fills in the rest while the user reads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from apphelp import wait_ready

import ktui.trace.reader as reader
from ktui.trace.builder import Builder
from ktui.trace.reader import load, load_stages
from ktui.tui.app import replay_app
from ktui.tui.widgets.header import RunHeader
from ktui.tui.widgets.turnlist import TurnList
from tests.conftest import SEED_TRACE
from tests.test_scaling import trace


@pytest.fixture
def big(tmp_path):
    p = tmp_path / "staged.jsonl"
    p.write_bytes(trace(400, answers_every=50, actors=2))
    return p


def _facts(run):
    return (len(run.turns), len(run.calls), len(run.kernels), len(run.messages), len(run.events), run.outcome,
            run.terminal_state, [(f.code, f.message) for f in run.flags], run.size_bytes,
            [(t.first_line, t.last_line, t.status) for t in run.turns])


def test_two_stages_then_the_same_run_as_load(big):
    stages = list(load_stages(big, stage_turns=20, min_bytes=0))
    assert [c for _, c in stages] == [False, True]
    first, whole = stages[0][0], stages[1][0]
    assert 20 < len(first.turns) < len(whole.turns)
    assert first.size_bytes < whole.size_bytes == big.stat().st_size
    assert _facts(whole) == _facts(load(big))
    # the first stage is a copy: reading on did not change it
    assert len(first.turns) < 30 and first.turns[0] is not whole.turns[0]


def test_a_small_file_comes_whole_in_one_stage(big):
    stages = list(load_stages(big))  # under STAGE_MIN_BYTES
    assert [c for _, c in stages] == [True]
    assert _facts(stages[0][0]) == _facts(load(big))


@pytest.mark.parametrize("content", [b"", b"not json\n", b'{"tick": 1}'])
def test_odd_files_come_whole(tmp_path, content):
    p = tmp_path / "odd.jsonl"
    p.write_bytes(content)
    stages = list(load_stages(p, min_bytes=0))
    assert stages[-1][1] and [str(x) for x in stages[-1][0].problems] == [str(x) for x in load(p).problems]


def test_the_app_draws_the_first_turns_then_the_whole_run_keeping_the_place(big, monkeypatch):
    monkeypatch.setattr(reader, "STAGE_MIN_BYTES", 0)
    monkeypatch.setattr(reader, "STAGE_TURNS", 30)
    hold = threading.Event()
    finish = Builder.finish

    def held(self, final=True, **kw):
        if final:
            hold.wait(20)  # the whole run waits until the test has looked at the first stage
        return finish(self, final, **kw)

    monkeypatch.setattr(Builder, "finish", held)

    async def go():
        app = replay_app(big)
        async with app.run_test(size=(160, 48)) as pilot:
            s = await wait_ready(app, pilot)
            assert s.ready and s.partial and not s.complete
            tl = s.query_one(TurnList)
            assert 30 < tl.row_count < 40
            assert "loading the rest of the file" in str(s.query_one(RunHeader).render())
            await pilot.press("j", "j", "j")
            assert s.turn_index == 3
            hold.set()
            for _ in range(500):
                await pilot.pause(0.02)
                if s.complete:
                    break
            assert s.complete and not s.partial
            assert tl.row_count == 400 and len(s.run.turns) == 400
            assert s.turn_index == 3 and tl.cursor_row == 3  # the user's place is kept
            assert "loading the rest" not in str(s.query_one(RunHeader).render())
            await pilot.press("G")
            assert s.turn_index == 399

    asyncio.run(go())


def test_the_app_shows_the_first_actors_prompts_and_says_how_many_more(tmp_path):
    """A file of many concatenated runs spawns an actor per run: turn 0 in the app shows the first
    prompts and a line for the rest (laying out thousands froze the screen); ktui show prints all."""
    import orjson

    from ktui.tui.widgets.documents import PREAMBLE_ACTORS, turn_view
    from ktui.view.build import build_view

    lines = []
    for i in range(40):
        note = {"kind": "agent_spawned", "actor_id": f"agent{i}", "model": "m", "system_prompt": f"prompt of {i}",
                "tools": ["compile_kernel"]}
        lines.append(orjson.dumps({"tick": i, "ts_ms": i, "actor": None,
                                   "payload": {"kind": "system", "note": orjson.dumps(note).decode()}}))
    p = tmp_path / "many.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n" + trace(3))
    run = load(p)
    assert len(run.actors) == 40
    shown = "\n".join(turn_view(run, run.turns[0]).plain_lines(expanded=True))
    assert f"prompt of {PREAMBLE_ACTORS - 1}" in shown and f"prompt of {PREAMBLE_ACTORS}" not in shown
    assert f"{40 - PREAMBLE_ACTORS} more actors' system prompts" in shown
    full = build_view(run)
    everything = "\n".join(x for b in full.preamble for x in b.plain_lines(expanded=True))
    assert "prompt of 39" in everything and "more actors" not in everything


def test_findings_added_later_keep_the_flags_a_result_file_added():
    """with_findings (the app's worker) gives what a full load gives, a result file's flags kept
    at the end (attach appends them after the builder's flags)."""
    from ktui.trace.flags import with_findings
    from ktui.trace.model import Flag

    hack = Path(__file__).parent / "fixtures" / "hacks" / "hack_cuda_graph_replay.jsonl"
    full, lean = load(hack), load(hack, findings=False)
    extra = Flag("result_disagrees", "the trace says passed, reward.json says failed", "error")
    full.flags.append(extra)
    lean.flags.append(extra)
    assert [(f.code, f.message) for f in with_findings(lean)] == [(f.code, f.message) for f in full.flags]
    assert with_findings(lean)[-1] is extra


def test_the_app_reaches_its_first_paint_without_the_findings_module():
    """Compiling the static checks' patterns took ~0.2 s of every start: the replay screen and
    its load do without them (the worker imports them after the first paint)."""
    import subprocess
    import sys

    code = ("import sys, ktui.tui.app, ktui.tui.screens.replay\n"
            "from ktui.trace.reader import load_stages\n"
            f"list(load_stages({str(SEED_TRACE)!r}, findings=False, min_bytes=0, stage_turns=2))\n"
            "print('ktui.trace.findings' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
