"""``ktui compare``: the seed run against the compare test trace (another run of L1 P27).

The test trace (tests/fixtures/compare/popcorn_l1_p27_test-agent-b.jsonl, written by
make_test_trace.py next to it) is a hand-made run: 4 turns, v1 fails correctness at turn 1, v2
passes at turn 2 and is submitted at turn 3 with a 1.0817x speedup (0.0355 "us" = 35.5 us).
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT, SEED_TRACE

from ktui.cli import main
from ktui.report.compare import compare_print, value_text
from ktui.trace import load
from ktui.trace.aggregate import (
    HIGHER,
    LOWER,
    compare_rows,
    kernel_progress,
    problem_warning,
    turn_of_version,
    version_at_turn,
)
from ktui.tui.app import KtuiApp
from ktui.tui.screens.compare import CompareScreen

TEST_TRACE = ROOT / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"
SIZE = (160, 48)


@pytest.fixture(scope="module")
def runs():
    return [load(SEED_TRACE), load(TEST_TRACE)]


def rows_by_key(runs):
    return {r.key: r for r in compare_rows(runs)}


# ---- the test trace ---------------------------------------------------------------------------------
def test_the_test_trace_says_what_it_is():
    first = [json.loads(x) for x in TEST_TRACE.read_text().splitlines()[:3]]
    notes = [e["payload"].get("note", "") for e in first]
    assert any(n.startswith("ktui test trace:") and "Not a real model run" in n for n in notes)


def test_the_test_trace_is_up_to_date():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_test_trace", TEST_TRACE.parent / "make_test_trace.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.build() == TEST_TRACE.read_text(encoding="utf-8")


def test_test_trace_by_hand(runs):
    t = runs[1]
    assert t.variant == "V1" and not t.problems
    assert t.problem.title == "L1 P27 27_permutation_all_to_all.py"
    assert (t.model, t.persona, t.outcome, t.max_turns) == ("test-agent-b", "terse", "passed", 12)
    assert [len(x.calls) for x in t.turns] == [1, 1, 1, 1]
    assert [c.status for c in t.agent_calls] == ["ok", "failed", "ok", "ok"]
    assert [k.label for k in t.kernels] == ["v1", "v2"]
    assert t.first_correct_turn == 2
    assert (t.tokens_in, t.tokens_out) == (1406 + 2010 + 2480 + 3105, 512 + 40 + 560 + 520)
    assert t.metrics.runtime_us == pytest.approx(35.5) and t.metrics.speedup == pytest.approx(1.0817)


# ---- the summary rows ---------------------------------------------------------------------------------
def test_summary_rows_and_the_better_values(runs):
    r = rows_by_key(runs)
    assert problem_warning(runs) is None
    assert r["problem"].values == ["L1 P27 27_permutation_all_to_all.py"] * 2
    assert r["model"].values == ["grok-4.3", "test-agent-b"]
    assert r["outcome"].values == ["passed", "passed"] and r["outcome"].best == set()
    assert r["turns"].values == [(9, 12), (4, 12)] and r["turns"].best == {1}
    assert r["calls"].values == [9, 4] and r["calls"].better is None
    assert r["calls.compile_kernel"].values == [3, 1]
    assert r["calls.run_correctness"].values == [3, 2]
    assert r["calls.get_gpu_specs"].values == [1, 0]
    assert r["failed_calls"].values == [2, 1] and r["failed_calls"].best == {1}
    assert r["tokens_in"].values == [30608, 9001] and r["tokens_in"].best == {1}
    assert r["tokens_out"].values == [3441, 1632] and r["tokens_out"].best == {1}
    assert r["wall"].values == [1_146_300, 481_906] and r["wall"].best == {1}
    assert r["llm"].better == LOWER and r["llm"].best == {1}
    assert r["kernels"].values == [4, 2] and r["kernels"].best == set()
    assert r["first_correct"].values == [6, 2] and r["first_correct"].best == {1}
    assert r["runtime"].values == pytest.approx([31.2, 35.5]) and r["runtime"].best == {0}
    assert r["speedup"].better == HIGHER and r["speedup"].best == {0}
    assert r["flags"].best == {1}  # no pct_over_100 in the test trace
    assert value_text(r["wall"], 0) == "1146.3s"
    assert value_text(r["runtime"], 0) == "31.2 μs"
    assert value_text(r["speedup"], 1) == "1.08x"


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures not present")
def test_different_problems_warn_and_costs_compare_only_the_best_outcome():
    runs = [load(SEED_TRACE), load(FIXTURES / "ktbench" / "v1_softmax_a100_to_h100.jsonl")]
    warn = problem_warning(runs)
    assert warn and "not on the same problem" in warn and "Online Softmax" in warn
    r = rows_by_key(runs)
    assert r["outcome"].best == {0}
    # the softmax run stopped early: it is cheaper, not better; only one run reached "passed"
    assert r["tokens_in"].best == set() and r["wall"].best == set()
    assert r["speedup"].best == {0}
    assert r["first_correct"].best == {0} and value_text(r["first_correct"], 1) == "never"


def test_kernel_progress_and_alignment(runs):
    seed, test = runs
    p = kernel_progress(seed)
    assert [(v.number, v.first_turn, v.compiled, v.correct, v.final) for v in p] == [
        (1, 1, True, None, False), (2, 2, None, False, False), (3, 3, True, False, False), (4, 5, True, True, True)]
    assert p[3].runtime_us == pytest.approx(31.2)
    assert p[2].by_turn == {3: "ok", 4: "failed"}
    q = kernel_progress(test)
    assert [(v.number, v.compiled, v.correct) for v in q] == [(1, True, False), (2, True, True)]
    assert q[0].by_turn == {0: "ok", 1: "failed"}
    assert [turn_of_version(seed, k) for k in (1, 2, 3, 4, 5)] == [1, 2, 3, 5, None]
    assert [version_at_turn(test, t) for t in range(4)] == [1, 1, 2, 2]
    assert version_at_turn(seed, 0) is None


# ---- --print ------------------------------------------------------------------------------------------
def test_compare_print_plain(runs, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    out = io.StringIO()
    assert compare_print([SEED_TRACE, TEST_TRACE], out=out) == 0
    text = out.getvalue()
    assert "#1 grok-4.3 · popcorn_l1_p27_grok-4.3.jsonl" in text
    assert "#2 test-agent-b · popcorn_l1_p27_test-agent-b.jsonl" in text
    assert "warning" not in text
    lines = {ln.split("  ")[0]: ln for ln in text.splitlines() if ln and not ln.startswith(" ")}
    assert "4 / 12 *" in lines["turns / max"] and "9 / 12 *" not in lines["turns / max"]
    assert "1.23x *" in lines["speedup"] and "1.08x *" not in lines["speedup"]
    assert "31.2 μs *" in lines["runtime (recorded)"]
    assert "turn 2 *" in lines["first correct kernel"]
    # the final-kernel diff, as diff -u
    assert "--- #1 grok-4.3 v4 (3cc3c4f9ad)" in text
    assert "+++ #2 test-agent-b v2 (" in text
    assert "-__global__ void permute_kernel(" in text
    assert "+__global__ void gather_cols(" in text
    assert "[" not in lines["model"]  # no markup leaks


def test_compare_cli(tmp_path):
    res = CliRunner().invoke(main, ["compare", str(SEED_TRACE), str(TEST_TRACE), "--print"])
    assert res.exit_code == 0, res.output
    assert "final kernel: #1 → #2" in res.output
    res = CliRunner().invoke(main, ["compare", str(SEED_TRACE), "--print"])
    assert res.exit_code == 2 and "at least two" in res.output
    res = CliRunner().invoke(main, ["compare", str(SEED_TRACE), str(tmp_path / "nope.jsonl"), "--print"])
    assert res.exit_code == 2 and "no such file" in res.output
    assert "Traceback" not in res.output


def test_compare_print_untrusted_text(tmp_path):
    evil = tmp_path / "evil.jsonl"
    lines = TEST_TRACE.read_text().splitlines()
    lines = [ln.replace('"model":"test-agent-b"', '"model":"[bold red]evil\\u001b[31m[/]"')
             .replace('\\"model\\": \\"test-agent-b\\"', '\\"model\\": \\"[bold red]evil\\\\u001b[31m[/]\\"')
             for ln in lines]
    evil.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    assert compare_print([SEED_TRACE, evil], out=out) == 0
    text = out.getvalue()
    assert "[bold red]evil␛[31m[/]" in text
    assert "\x1b" not in text


# ---- the screen ---------------------------------------------------------------------------------------
def compare_app(*paths: Path) -> KtuiApp:
    return KtuiApp(lambda: CompareScreen(list(paths)))


async def _loaded(pilot) -> None:
    for _ in range(100):
        await pilot.pause(0.02)
        if getattr(pilot.app.screen, "loaded", False):
            break
    await pilot.pause()


def test_turns_step_together_then_apart():
    asyncio.run(_turns_step_together_then_apart())


async def _turns_step_together_then_apart():
    app = compare_app(SEED_TRACE, TEST_TRACE)
    async with app.run_test(size=SIZE) as pilot:
        await _loaded(pilot)
        scr = app.screen
        assert isinstance(scr, CompareScreen) and len(scr.runs) == 2
        await pilot.press("3", "j", "j")
        assert scr.pane == "turns" and scr.positions == [2, 2]
        await pilot.press("G")
        assert scr.positions == [8, 8]  # the longer run's last turn; the other shows "no turn 8"
        await pilot.press("g", "t", "l", "j")
        assert not scr.linked and scr.active_col == 1 and scr.positions == [0, 1]
        await pilot.press("t")
        assert scr.linked and scr.positions == [1, 1]
        await pilot.press("a")  # align by kernel version: both at v1
        assert scr.align == "version" and scr.positions == [1, 1]
        await pilot.press("j")
        assert scr.positions == [2, 2]
        title = app.screen.query_one("#compare-col-title-1").render()
        assert "v2 · first used at turn 2" in str(title)


def test_kernel_choice_and_panes():
    asyncio.run(_kernel_choice_and_panes())


async def _kernel_choice_and_panes():
    app = compare_app(SEED_TRACE, TEST_TRACE)
    async with app.run_test(size=SIZE) as pilot:
        await _loaded(pilot)
        scr = app.screen
        await pilot.press("2")
        assert scr.pane == "kernels" and (scr.left_version, scr.right_version) == (None, None)
        await pilot.press("h", "j")  # the left side; its final is v4: next wraps to v1
        assert scr.left_version == 1 and scr.right_version is None
        await pilot.press("l", "k")  # the right side, previous version
        assert scr.right_version == 1
        assert "▸ #2" in str(scr.query_one("#compare-kernels-bar").render())
        await pilot.press("G")
        assert scr.right_version == len(scr.runs[1].kernels)
        await pilot.press("x", "s")
        assert (scr.left_version, scr.right_version, scr.split) == (None, None, True)
        await pilot.press("tab")
        assert scr.pane == "turns"
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"


@pytest.mark.parametrize("keys,name", [((), "summary"), (("2",), "kernels"), (("3", "j", "j"), "turns"),
                                       (("4",), "progress")])
def test_compare_snapshots(snap_compare, keys, name):
    assert snap_compare(compare_app(SEED_TRACE, TEST_TRACE), press=keys, terminal_size=SIZE, run_before=_loaded)


def test_the_app_explains_the_star():
    """`*` marks the better value of a row: --print said so, the app did not."""
    from textual.widgets import Static

    async def go():
        app = compare_app(SEED_TRACE, TEST_TRACE)
        async with app.run_test(size=(100, 30)) as pilot:
            await _loaded(pilot)
            summary = app.screen.query_one("#compare-summary", Static)
            text = "".join(seg.text for seg in app.console.render(summary.content, app.console.options))
            assert " *" in text and "* the better value of its row" in text

    asyncio.run(go())


def test_runs_with_one_file_name_are_told_apart_by_their_folders(tmp_path):
    """Six runs of a Harbor job compared: every column was titled "#N model · trajectory.json"
    (two runs of one model read the same). The title names the folders that differ."""
    text = SEED_TRACE.read_text(encoding="utf-8")
    paths = []
    for model in ("GPT-5.5", "Opus-4.8"):
        for sample in ("sample1", "sample2"):
            d = tmp_path / model / sample / "fp8_microscale__llama3_8b_down"
            d.mkdir(parents=True)
            (d / "trajectory.jsonl").write_text(text, encoding="utf-8")
            paths.append(str(d / "trajectory.jsonl"))
    res = CliRunner().invoke(main, ["compare", *paths, "--print"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    head = " ".join(res.output.split("problem")[0].split())
    for model in ("GPT-5.5", "Opus-4.8"):
        for sample in ("sample1", "sample2"):
            assert f"{model}/{sample}" in head, head
    assert "trajectory.jsonl" not in head and "fp8_microscale" not in head, head


def test_the_title_names_every_run_at_100_columns(tmp_path):
    """Three runs at 100x30: the one-line title was cut after "#2 test-agent-b ·" (the third run
    not named at all); it wraps onto the lines it needs now."""
    third = tmp_path / "third.jsonl"
    third.write_text(SEED_TRACE.read_text(encoding="utf-8").replace("grok-4.3", "grok-third"), encoding="utf-8")

    async def go():
        app = compare_app(SEED_TRACE, TEST_TRACE, third)
        async with app.run_test(size=(100, 30)) as pilot:
            await _loaded(pilot)
            await pilot.pause()
            shown = _screen_text(app)
            assert "#3 grok-third" in shown, shown[:600]

    asyncio.run(go())


def _screen_text(app) -> str:
    from textual.widgets import Static

    title = app.screen.query_one("#compare-title", Static)
    strips = title.render_lines(title.content_region.reset_offset)  # what the title draws, line by line
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)
