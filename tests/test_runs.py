"""``ktui runs``: the headless table (--print, csv, json) and the runs screen."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT
from test_index import make_sweep, mini_trace

from ktui.cli import main
from ktui.report.runs import runs_print
from ktui.tui.app import KtuiApp
from ktui.tui.screens.runs import RunsScreen
from ktui.tui.widgets.runs_table import RunsTable

FIXTURE_FILES = sorted(FIXTURES.rglob("*.jsonl")) if FIXTURES.is_dir() else []
needs_fixtures = pytest.mark.skipif(not FIXTURE_FILES, reason="../shared/fixtures not present")
SIZE = (160, 48)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


# ---- headless ---------------------------------------------------------------------------------
@needs_fixtures
def test_print_lists_every_fixture_once_with_outcome_and_model():
    res = CliRunner().invoke(main, ["runs", str(FIXTURES), "--print"], env={"COLUMNS": "320"})
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    lines = res.output.splitlines()
    for p in FIXTURE_FILES:
        rel = str(p.relative_to(FIXTURES))
        rows = [ln for ln in lines if ln.startswith(rel + " ")]
        assert len(rows) == 1, rel
        assert any(o in rows[0] for o in ("passed", "failed", "incomplete"))
    assert "runs.jsonl" not in res.output
    assert f"{len(FIXTURE_FILES)} runs in" in res.output
    assert "claude-sonnet-4-5" in res.output and "openai/gpt-5.5-priority" in res.output
    assert "per model" in res.output and "fast_1.5" in res.output


@needs_fixtures
@pytest.mark.parametrize("cols", [100, 160])
def test_print_picks_columns_by_priority(cols):
    """At 100 and 160 columns: no line longer; the trace (cut in the middle), outcome, speedup, hack
    classes and flags always there, in that order; what is left out is named (it was squeezed to
    'r…  pas…  pass r…' at 100, and wider than 160)."""
    res = CliRunner().invoke(main, ["runs", str(FIXTURES), "--print"], env={"COLUMNS": str(cols)})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(x) for x in lines) <= cols
    head = lines[0].split()
    assert head[0] == "trace" and "hack" in head and "flags" in head
    assert head.index("outcome") < head.index("speedup") < head.index("hack") < head.index("flags")
    interleaved = next(x for x in lines if x.startswith("ktbench") and "nterleaved.jsonl" in x)
    assert "dummy_kernel" in interleaved and "no_gpu_code" in interleaved
    assert any(x.startswith("not shown at ") for x in lines) or cols > 160
    agg = lines[lines.index("per model") + 1].split()
    assert agg[:4] == ["model", "runs", "passed", "pass"] and "fast_1.5" in agg
    if cols == 160:
        assert "model" in head and "openai/gpt-5.5-priority" in res.output


def test_csv_rows_are_written_as_the_index_finds_them(tmp_path, monkeypatch):
    """``ktui runs DIR --format csv | head`` sees the first rows before the scan is over: each row
    is written (and the first flushed) as the index yields it, not after the whole tree."""
    import ktui.report.runs as runs_mod

    out = io.StringIO()
    flushed: list[str] = []
    out.flush = lambda: flushed.append(out.getvalue())  # type: ignore[method-assign]
    real = runs_mod.SweepIndex

    class Watched(real):  # type: ignore[misc, valid-type]
        def summaries(self, given=None):
            for i, s in enumerate(super().summaries(given)):
                if i == 1:  # the second row is not known yet: the first must be out already
                    assert flushed and s.path not in flushed[0] and len(flushed[0].splitlines()) == 2
                yield s

    monkeypatch.setattr(runs_mod, "SweepIndex", Watched)
    d = tmp_path / "sweep"
    d.mkdir()
    for i in range(3):
        (d / f"run{i}.jsonl").write_text(mini_trace(f"m{i}", passed=True, speedup=1.0 + i, tokens_in=1, tokens_out=1,
                                                    wall_ms=1000, tag=str(i)))
    assert runs_print(d, fmt="csv", use_cache=False, out=out) == 0
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["path"] for r in rows] == ["run0.jsonl", "run1.jsonl", "run2.jsonl"]


@needs_fixtures
def test_csv_and_json(tmp_path):
    out = io.StringIO()
    assert runs_print(FIXTURES, fmt="csv", use_cache=False, out=out) == 0
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(rows) == len(FIXTURE_FILES)
    by = {r["path"]: r for r in rows}
    mock = by["ensemble/v0_popcorn_mock_single_problem.jsonl"]
    assert (mock["model"], mock["outcome"], mock["speedup"], mock["turns"]) == ("claude-sonnet-4-5", "passed",
                                                                                 "2.4", "2")
    assert by["ktbench/v1_softmax_a100_to_h100.jsonl"]["tokens"] == "12627"
    assert by["ktbench/v2_eval_chzr6_marker_kernel.jsonl"]["wall_s"] == ""  # synthetic timestamps
    out = io.StringIO()
    assert runs_print(FIXTURES, fmt="json", use_cache=False, out=out) == 0
    body = json.loads(out.getvalue())
    assert len(body["runs"]) == len(FIXTURE_FILES)
    assert {a["model"] for a in body["aggregates"]} >= {"gpt-5.5", "all runs"}
    total = next(a for a in body["aggregates"] if a["model"] == "all runs")
    # the ensemble site sample has no kernel: listed, not counted per model
    assert total["runs"] == len(FIXTURE_FILES) - 1 and total["passed"] == 1 and body["runs_without_kernel"] == 1
    assert "rep1-model" in {r["model"] for r in body["runs"]}
    assert "rep1-model" not in {a["model"] for a in body["aggregates"]}
    # the one passed run's final kernel has no GPU code (a torch wrapper): its 2.40x is in no fast_p
    assert total["fast_2"] == 0.0 and total["correct_without_gpu_code"] == 1


def test_empty_and_missing_directories(tmp_path):
    res = CliRunner().invoke(main, ["runs", str(tmp_path), "--print"])
    assert res.exit_code == 1 and "no trace files" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["runs", str(tmp_path / "nope"), "--print"])
    assert res.exit_code == 2 and "no such directory" in res.output


@needs_fixtures
def test_bad_tree_is_reported_not_fatal(tmp_path):
    sw = make_sweep(tmp_path)
    (sw / "hand" / "garbage.jsonl").write_bytes(b"\xff\xfe\x00 not json\n")
    (sw / "hand" / "empty.jsonl").write_bytes(b"")
    res = CliRunner().invoke(main, ["runs", str(sw), "--print", "--no-cache"])
    assert res.exit_code == 0 and "Traceback" not in res.output
    out = res.output
    assert "9 runs in" in out  # the garbage and the empty file are not traces: not counted
    assert "error: hand/garbage.jsonl: not a trace: no readable events" in out
    assert "error: hand/empty.jsonl: empty file: no events" in out
    assert "broken symlink" in out and "already scanned" in out and "same content as" in out
    assert "l1_p28_grok-4.3_normal (status failed) has no trace file" in out


def test_untrusted_strings_in_the_table(tmp_path):
    (tmp_path / "evil.jsonl").write_text(mini_trace("[bold]x\u001b[31m[/]", passed=True, speedup=1.0,
                                                    tokens_in=1, tokens_out=1, wall_ms=10))
    out = io.StringIO()
    assert runs_print(tmp_path, use_cache=False, out=out) == 0
    assert "[bold]x␛[31m[/]" in out.getvalue() and "\x1b" not in out.getvalue()


# ---- the screen --------------------------------------------------------------------------------
def runs_app(root, **kw) -> KtuiApp:
    return KtuiApp(lambda: RunsScreen(root, use_cache=False, **kw))


async def _scanned(pilot) -> None:
    for _ in range(300):
        await pilot.pause(0.02)
        if getattr(pilot.app.screen, "scan_done", False):
            break
    await pilot.pause()


@needs_fixtures
def test_screen_filters_sorts_marks_and_compares():
    asyncio.run(_screen_flow())


async def _screen_flow():
    app = runs_app(FIXTURES)
    async with app.run_test(size=SIZE) as pilot:
        await _scanned(pilot)
        scr = app.screen
        table = scr.query_one(RunsTable)
        assert len(table.rows) == len(FIXTURE_FILES) == len(table.view)
        await pilot.press("o")  # outcome: passed
        assert [table.rows[i].model for i in table.view] == ["claude-sonnet-4-5"]
        await pilot.press("o", "o", "o")  # back to all
        assert len(table.view) == len(FIXTURE_FILES)
        await pilot.press("slash", *"gpt 5.5", "enter")
        assert sorted(table.rows[i].model for i in table.view) == ["gpt-5.5", "gpt-5.5", "openai/gpt-5.5-priority",
                                                                   "openai/gpt-5.5-priority"]
        assert table.has_focus
        await pilot.press("x")
        assert len(table.view) == len(FIXTURE_FILES)
        await pilot.press("M")  # the first model in order
        assert {table.rows[i].model for i in table.view} == {"claude-sonnet-4-5"}
        await pilot.press("x")
        # sort by turns (> cycles columns: trace, model, outcome, speedup, hacks, flags, problem, turns)
        await pilot.press(*[">"] * 9, "<")
        assert table.sort_key == "turns"
        turns = [table.rows[i].turns for i in table.view]
        assert turns == sorted(turns)
        await pilot.press("I")
        assert [table.rows[i].turns for i in table.view] == sorted(turns, reverse=True)
        # one mark is not enough; two are
        await pilot.press("home", "m", "c")
        assert app.screen is scr
        await pilot.press("m", "c")
        await pilot.pause()
        assert type(app.screen).__name__ == "CompareScreen"
        assert len(app.screen.paths) == 2
        await pilot.press("escape")
        assert app.screen is scr
        await pilot.press("u")
        assert not table.marked
        await pilot.press("i")
        assert type(app.screen).__name__ == "IssuesScreen"
        await pilot.press("escape", "z")
        assert scr.has_class("no-agg")


@needs_fixtures
def test_enter_opens_the_replay_screen():
    asyncio.run(_enter_replay())


async def _enter_replay():
    app = runs_app(FIXTURES)
    async with app.run_test(size=SIZE) as pilot:
        await _scanned(pilot)
        table = app.screen.query_one(RunsTable)
        want = table.current.real
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ReplayScreen"
        assert Path(app.screen.path).resolve() == Path(want).resolve()


@needs_fixtures
def test_screen_on_a_bad_tree(tmp_path):
    asyncio.run(_bad_tree(tmp_path))


async def _bad_tree(tmp_path):
    sw = make_sweep(tmp_path)
    os.symlink(sw, sw / "hand" / "again")  # another loop
    app = runs_app(sw)
    async with app.run_test(size=SIZE) as pilot:
        await _scanned(pilot)
        scr = app.screen
        assert len(scr.query_one(RunsTable).rows) == 9
        assert any("broken symlink" in i.message for i in scr.issues)
        top = str(scr.query_one("#runs-top").render())
        assert "9 runs" in top and "problem" in top


async def _no_focus_pause(pilot) -> None:
    await _scanned(pilot)


@needs_fixtures
@pytest.mark.parametrize("keys,name", [((), "fixtures"), ((">", ">", ">", "m", "j", "m", "o", "o", "o"),
                                                         "sorted_marked")])
def test_runs_snapshots(snap_compare, monkeypatch, keys, name):
    monkeypatch.chdir(ROOT)  # the root is shown as typed: keep it the same everywhere
    assert snap_compare(runs_app(Path("../shared/fixtures")), press=keys, terminal_size=SIZE,
                        run_before=_no_focus_pause)


def test_hack_classes_have_their_own_column():
    """The final kernel's hack classes in a column of their own (bold red); the flags column
    keeps the run's other flags, so no flag is shown twice or lost."""
    from ktui.report.runs import COLUMNS, cell, cell_text, sort_value
    from ktui.trace.index import summarize

    hacks = ROOT / "tests" / "fixtures" / "hacks"
    s = summarize(str(hacks / "hack_timer_patch.jsonl"))
    assert "timer_patch" in s.hacks and set(s.hacks) <= set(s.flags)
    assert [k for k, _, _ in COLUMNS].index("hacks") < [k for k, _, _ in COLUMNS].index("flags")
    assert cell(s, "hacks").split(", ") == s.hacks
    rest = cell(s, "flags").split(", ")
    assert not set(rest) & set(s.hacks) and set(rest) | set(s.hacks) == set(s.flags)
    assert "bold red" in str(cell_text(s, "hacks").spans[0].style)
    honest = summarize(str(hacks / "honest_relu_torch.jsonl"))
    assert honest.hacks == [] and cell(honest, "hacks") == ""
    assert sort_value(s, "hacks") > sort_value(honest, "hacks")
    res = CliRunner().invoke(main, ["runs", str(hacks), "--print"])
    assert res.exit_code == 0 and "hack classes" in res.output.splitlines()[0]


@needs_fixtures
def test_empty_filter_model_cycle_and_na_last():
    """A filter that leaves nothing says so (it was a blank table); M visits only the models with
    runs under the other filters; sorting up or down puts the runs with no value (—, n/a) last."""
    asyncio.run(_filters_flow())


async def _filters_flow():
    app = runs_app(FIXTURES)
    async with app.run_test(size=(100, 30)) as pilot:
        await _scanned(pilot)
        scr = app.screen
        table = scr.query_one(RunsTable)
        await pilot.press("slash", *"zzqq", "enter")
        assert table.view == []
        line = table.render_line(1).text
        assert "no run matches text 'zzqq'" in line and "x clears" in line
        await pilot.press("x", "o")  # outcome: passed: one model has runs
        assert scr.models_under_filter() == ["claude-sonnet-4-5"]
        await pilot.press("M")
        assert scr.model_filter == "claude-sonnet-4-5" and len(table.view) == 1
        await pilot.press("M")  # no other model has a passed run: back to all models
        assert scr.model_filter is None
        await pilot.press("x")
        for reverse in (False, True):
            table.sort_key, table.sort_reverse = "speedup", reverse
            scr._apply_sort()
            speedups = [table.rows[i].speedup for i in table.view]
            assert speedups[0] is not None and speedups[1:] == [None] * (len(speedups) - 1), speedups
        table.sort_key, table.sort_reverse = "tokens", False
        scr._apply_sort()
        tokens = [table.rows[i].tokens for i in table.view]
        assert tokens[0] is not None and tokens[-1] is None


@needs_fixtures
@pytest.mark.parametrize("size", [(100, 30), (160, 48)], ids=["100x30", "160x48"])
def test_app_shows_the_important_columns_and_reproduced_without_scrolling(size):
    """speedup, hack classes and flags on screen at 100x30; after `v` the reproduced column comes
    right after the flags, on screen too (it was the last column: 12 presses of L at 100)."""
    async def go():
        app = runs_app(FIXTURES)
        async with app.run_test(size=size) as pilot:
            await _scanned(pilot)
            table = app.screen.query_one(RunsTable)

            def on_screen() -> list[str]:
                w, x, out = table.fitted_widths(), 2, []
                for k, _, _ in table.columns():
                    x += w[k] + 2
                    if x - 2 <= table.size.width:
                        out.append(k)
                return out

            shown = on_screen()
            assert shown[:1] == ["path"] and {"outcome", "speedup", "hacks", "flags"} <= set(shown), shown
            table.set_reproduced({s.real: "reproduced" for s in table.rows})
            await pilot.pause()
            shown = on_screen()
            assert "reproduced" in shown and {"speedup", "hacks", "flags"} <= set(shown), shown
            row = table.render_line(1).text
            assert "reproduced" in row and "2.40x" in table.render_line(1 + [r.speedup for r in (
                table.rows[i] for i in table.view)].index(2.4)).text
            if size == (160, 48):
                assert "model" in shown

    asyncio.run(go())


def _run_folders(root: Path, n: int = 6) -> None:
    """A sweep in the layout harnesses write: one folder a run, the trace under the same name in
    each (``<cell>_s<seed>/<uuid>/trace.jsonl``), long enough to be cut at 100 columns."""
    for i in range(n):
        d = root / f"l1_p10_some-long-model-name_careful_s{1000 + i}" / f"{i:04d}c0ffee{i:08d}"
        d.mkdir(parents=True)
        (d / "trace.jsonl").write_text(mini_trace("m", passed=True, speedup=1.0 + i, tokens_in=1, tokens_out=1,
                                                  wall_ms=10, tag=f"k{i}") + "\n", encoding="utf-8")


def test_cut_trace_names_stay_distinct_when_the_file_name_is_shared(tmp_path):
    """At 100 columns every row of such a sweep read 'l1_p1…trace.jsonl': the shared file name took
    the room of the folder that tells runs apart. It gives its room back (text table and app)."""
    _run_folders(tmp_path)
    res = CliRunner().invoke(main, ["runs", str(tmp_path), "--print"], env={"COLUMNS": "70"})
    assert res.exit_code == 0, res.output
    rows = [x.split()[0] for x in res.output.splitlines() if x.startswith("l1_")]
    assert len(rows) == 6 and len(set(rows)) == 6, rows
    assert all(r.endswith("/…") for r in rows), rows

    async def go():
        app = runs_app(tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await _scanned(pilot)
            table = app.screen.query_one(RunsTable)
            table.set_reproduced({s.real: "not judged here" for s in table.rows})
            await pilot.pause()
            w = table.fitted_widths()["path"]
            cells = [table.render_line(1 + i).text[2:2 + w] for i in range(6)]
            assert w < len("l1_p10_some-long-model-name_careful_s1000/0000c0ffee00000000/trace.jsonl")
            assert len(set(cells)) == 6, cells

    asyncio.run(go())


def test_cut_trace_names_stay_distinct_when_runs_differ_in_a_middle_folder(tmp_path):
    """A Harbor job (model/sample/task/trajectory.json): at 100 columns one middle cut read
    'GPT-5.5…lama3_8b_down/…' for sample1 and sample2 of a task alike (the real .i21data sweep: 3
    rows the same). The longest folder names are cut, each in its middle, so every row differs
    (text table and app)."""
    n = 0
    for model in ("GPT-5.5", "Gemini-3.5-flash"):
        for sample in ("sample1", "sample2", "sample3"):
            d = tmp_path / model / sample / "fp8_microscale__llama3_8b_down"
            d.mkdir(parents=True)
            (d / "trace.jsonl").write_text(mini_trace("m", passed=True, speedup=1.0, tokens_in=1, tokens_out=1,
                                                      wall_ms=10, tag=f"k{n}") + "\n", encoding="utf-8")
            n += 1
    res = CliRunner().invoke(main, ["runs", str(tmp_path), "--print", "--no-cache"], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    rows = [x.split()[0] for x in res.output.splitlines() if x.startswith(("GPT", "Gem"))]
    assert len(rows) == n and len(set(rows)) == n, rows

    async def go():
        app = runs_app(tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await _scanned(pilot)
            table = app.screen.query_one(RunsTable)
            w = table.fitted_widths()["path"]
            cells = [table.render_line(1 + i).text[2:2 + w] for i in range(n)]
            assert w < len("Gemini-3.5-flash/sample1/fp8_microscale__llama3_8b_down/…")
            assert len(set(cells)) == n, cells

    asyncio.run(go())


def test_a_file_name_only_one_row_has_stays_when_cut():
    from ktui.report.runs import fit_middle, name_counts

    paths = ["a/very/long/folder/name/of/a/sweep/x_unique.jsonl", "b/very/long/folder/name/of/a/sweep/t.jsonl",
             "c/very/long/folder/name/of/a/sweep/t.jsonl"]
    counts = name_counts(paths)
    assert fit_middle(paths[0], 30, counts).endswith("x_unique.jsonl")
    assert fit_middle(paths[1], 30, counts).endswith("/…") and len(fit_middle(paths[1], 30, counts)) == 30
    assert fit_middle("short/t.jsonl", 30, counts) == "short/t.jsonl"  # what fits is never cut


@needs_fixtures
def test_the_sorted_column_shows_its_direction_at_100_columns():
    """Sorted by speedup at 100x30 the header read 'speedu…': the column's width had no room for
    its ' ▲', so the direction was cut off. The header shows it whole, both ways."""
    async def go():
        app = runs_app(FIXTURES)
        async with app.run_test(size=(100, 30)) as pilot:
            await _scanned(pilot)
            table = app.screen.query_one(RunsTable)
            for _ in range(len(table.all_columns()) + 1):
                if table.sort_key == "speedup":
                    break
                await pilot.press(">")
                await pilot.pause()
            assert table.sort_key == "speedup"
            assert "speedup ▲" in table.render_line(0).text, table.render_line(0).text
            await pilot.press("I")
            await pilot.pause()
            assert "speedup ▼" in table.render_line(0).text, table.render_line(0).text

    asyncio.run(go())


def test_the_summary_counts_cached_files_not_runs(tmp_path):
    """A Harbor sweep holds a reward.json beside each trajectory.json: the app's header read
    "60 runs · 120 cached" and the text summary "60 run(s) …, 120 from the index cache", as if
    there were 120 runs. They are files."""
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "trace.jsonl").write_text(mini_trace("m", passed=True, speedup=1.5, tokens_in=1, tokens_out=1,
                                                             wall_ms=10, tag="k") + "\n", encoding="utf-8")
    (tmp_path / "r1" / "reward.json").write_text('{"reward": 1.0}', encoding="utf-8")
    env = {"COLUMNS": "100", "KTUI_CACHE_DIR": str(tmp_path / "cache")}
    CliRunner().invoke(main, ["runs", str(tmp_path), "--print"], env=env)
    res = CliRunner().invoke(main, ["runs", str(tmp_path), "--print"], env=env)
    assert res.exit_code == 0 and "1 run in" in res.output, res.output
    assert "2 files read from the index cache" in " ".join(res.output.split()), res.output


def test_at_100_columns_the_trace_keeps_more_room_than_the_other_cut_columns():
    """A Harbor job at 100 columns (model/sampleN/problem/trajectory.json, hack classes and flags
    as wide as 40 and 48): every column was cut to the same 23 cells, the trace reading
    ``GPT-5.5/sam…e1/fp8…wn/…`` (neither the sample nor the problem legible). The trace now keeps
    about 1.5x the room of hack classes and flags, and its sample and problem's start show."""
    from ktui.report.runs import fit_columns, fit_middle, name_counts

    natural = {"path": 57, "outcome": 10, "speedup": 9, "hacks": 40, "flags": 48, "model": 28, "problem": 40,
               "turns": 5, "tokens": 8, "wall": 7, "persona": 11, "format": 11}
    kept, w = fit_columns(list(natural), natural, 98)
    assert kept == ["path", "outcome", "speedup", "hacks", "flags"]
    assert sum(w[k] + 2 for k in kept) <= 98
    assert w["path"] >= 1.4 * max(w["hacks"], w["flags"]) and min(w["hacks"], w["flags"]) >= 16, w
    paths = [f"GPT-5.5/sample{i}/fp8_microscale__llama3_8b_down/trajectory.json" for i in (1, 2)]
    shown = fit_middle(paths[0], w["path"], name_counts(paths))
    assert shown.startswith("GPT-5.5/sample1/fp8_") and len(shown) <= w["path"], shown
    kept, w = fit_columns(list(natural), natural, 158)  # room enough: the trace whole
    assert w["path"] == 57 and "model" in kept


def test_sorting_by_trace_or_problem_puts_numbers_in_their_order():
    """KernelBench's Triton runs (level1_problem1 ... level1_problem100): sorted by trace they read
    problem100, problem10, problem11 ... problem19, problem1, problem20 (character order)."""
    from ktui.report.runs import sorted_runs
    from ktui.trace.index import RunSummary

    names = ["level1_problem100_triton.py", "level1_problem10_triton.py", "level1_problem1_triton.py",
             "level1_problem2_triton.py", "Level2_problem1_triton.py", "level1_problem19_triton.py"]
    rows = [RunSummary(path=f"level1_triton/{n}", real=f"/x/{n}", size=1, mtime_ns=0) for n in names]
    order = [rows[i].path.split("/")[1] for i in sorted_runs(range(len(rows)), rows, "path")]
    assert order == ["level1_problem1_triton.py", "level1_problem2_triton.py", "level1_problem10_triton.py",
                     "level1_problem19_triton.py", "level1_problem100_triton.py", "Level2_problem1_triton.py"]
    back = [rows[i].path.split("/")[1] for i in sorted_runs(range(len(rows)), rows, "path", reverse=True)]
    assert back == order[::-1]


def test_the_no_gpu_code_note_agrees_with_its_count():
    """'1 correct run whose final kernel has no GPU code: counted as passed, their speedup ...'"""
    from ktui.report.runs import no_gpu_note
    from ktui.trace.aggregate import ModelAggregate

    one, two = ModelAggregate("all runs"), ModelAggregate("all runs")
    one.no_gpu, two.no_gpu = 1, 2
    assert no_gpu_note([one]).startswith("1 correct run whose final kernel has no GPU code: counted as passed, its "
                                         "speedup in no fast_p")
    assert "2 correct runs whose final kernel has no GPU code: counted as passed, their speedup" in no_gpu_note([two])
    assert no_gpu_note([ModelAggregate("all runs")]) == ""
