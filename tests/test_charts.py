"""The sweep charts: their numbers (worked out by hand, see chart_sweep.py), the reproduced curve,
the Unicode rendering, the runs screen's chart key and grid cells, and snapshots of each chart."""

from __future__ import annotations

import asyncio
import io
import json
import math
from pathlib import Path

import pytest
from chart_sweep import EVIL_MODEL, make_chart_sweep
from conftest import FIXTURES

from ktui.report.runs import runs_print
from ktui.trace.aggregate import FAST_P
from ktui.trace.index import RunSummary, scan
from ktui.tui.app import KtuiApp
from ktui.tui.screens.runs import RunsScreen
from ktui.tui.widgets.charts import SweepChartView, render_chart
from ktui.tui.widgets.runs_table import RunsTable
from ktui.view.charts import CHARTS, charts_dict, quantile, sweep_charts
from ktui.view.text import clean

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures not present")
pytestmark = needs_fixtures


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def sweep(tmp_path) -> Path:
    return make_chart_sweep(tmp_path)


def _runs(root: Path) -> list[RunSummary]:
    runs, issues = scan(root, use_cache=False)
    assert not [i for i in issues if i.severity == "error"]
    return runs


# ---- the numbers, by hand ---------------------------------------------------------------------------
def test_fast_p_by_hand(sweep):
    c = sweep_charts(_runs(sweep))
    assert c.runs == 13 - 1  # the fixture with no kernel (an ensemble site sample) is not charted
    rec = {cv.model: cv for cv in c.fast_p.curves if cv.kind == "recorded"}
    assert not [cv for cv in c.fast_p.curves if cv.kind != "recorded"]  # nothing verified yet
    # grok-4.3: seed 1.2308 (passed), P28 0.8 (passed), P29 failed -> of 3 runs
    g = rec["grok-4.3"]
    assert g.runs == 3 and g.speedups == [0.8, 1.2308]
    assert [g.at(p) for p in FAST_P] == pytest.approx([2 / 3, 1 / 3, 0, 0])
    assert g.at(0.79) == pytest.approx(2 / 3) and g.at(0.8) == pytest.approx(1 / 3)  # strictly greater than p
    # test-agent-b: 1.0817 and 3.0 passed, 0.9 failed (its speedup does not count)
    b = rec["test-agent-b"]
    assert b.runs == 3 and b.speedups == [1.0817, 3.0]
    assert [b.at(p) for p in FAST_P] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 1 / 3])
    # its 2.4x is a torch wrapper's (the final kernel has no GPU code): on no curve
    assert rec["claude-sonnet-4-5"].speedups == [] and rec["claude-sonnet-4-5"].at(0.0) == 0.0
    for m in ("gpt-5.5", "openai/gpt-5.5-priority"):
        assert rec[m].runs == 2 and rec[m].speedups == [] and rec[m].at(0) == 0
    # the axis: from half the smallest speedup (0.8 / 2) to the largest (3.0), log-scaled
    assert (c.fast_p.lo, c.fast_p.hi) == pytest.approx((0.4, 3.0))
    steps = b.steps(c.fast_p.lo, c.fast_p.hi)
    assert steps == [(0.4, pytest.approx(2 / 3)), (1.0817, pytest.approx(1 / 3)), (3.0, 0.0)]


def test_speedups_grid_and_first_correct_by_hand(sweep):
    c = sweep_charts(_runs(sweep))
    sp = {r.model: r for r in c.speedup.rows}
    assert sp["grok-4.3"].geomean == pytest.approx(math.sqrt(1.2308 * 0.8))
    assert sp["test-agent-b"].geomean == pytest.approx(math.sqrt(1.0817 * 3.0))
    assert sp["gpt-5.5"].geomean is None and sp["gpt-5.5"].speedups == []
    g = c.grid
    assert g.problems[:5] == ["L1/P19", "L1/P27", "L1/P28", "L1/P29", "L1/P30"]
    assert "(no problem)" not in g.problems and "rep1-model" not in g.models  # the run with no kernel
    assert (g.cell("grok-4.3", "L1/P27").level, g.cell("grok-4.3", "L1/P27").speedup) == ("faster", 1.2308)
    assert (g.cell("grok-4.3", "L1/P28").level, g.cell("grok-4.3", "L1/P28").speedup) == ("correct", 0.8)
    assert (g.cell("grok-4.3", "L1/P29").level, g.cell("grok-4.3", "L1/P29").speedup) == ("failed", None)
    b28 = g.cell("test-agent-b", "L1/P28")  # two runs: 3.0x passed and a failed one: the best wins
    assert (b28.level, b28.speedup, len(b28.runs)) == ("faster", 3.0, 2)
    assert g.cell("gpt-5.5", "online softmax (cuda a100 → cuda h100)").level == "compiled"
    assert g.cell("gpt-5.5", "swiglu forward: triton → cuda h100").level == "failed"
    assert g.cell("grok-4.3", "L1/P19") is None
    # the torch wrapper (no GPU code) passed: correct, its 2.4x not shown as a kernel's speedup
    assert (g.cell("claude-sonnet-4-5", "L1/P19").level, g.cell("claude-sonnet-4-5", "L1/P19").speedup) == (
        "correct", None)
    assert g.counts() == {"failed": 3, "compiled": 2, "correct": 2, "faster": 4}
    fc = {r.model: r for r in c.first_correct.rows}
    grok = fc["grok-4.3"]  # seed: first correct at turn 6 (7 turns), 23,456 tokens, 939.082 s; P28: 1, 1,200, 4.998 s
    assert (grok.runs, grok.reached) == (3, 2)
    assert grok.stats["turns"].values == [1, 7] and grok.stats["turns"].median == 4
    assert grok.stats["tokens"].values == [1200, 23456]
    assert grok.stats["wall_s"].values == pytest.approx([4.998, 939.082])
    b = fc["test-agent-b"]  # agent-b trace: turn 2, 7,328 tokens, 298.9 s; P28: 1, 600, 1.998 s
    assert b.stats["turns"].values == [1, 3] and b.stats["tokens"].values == [600, 7328]
    claude = fc["claude-sonnet-4-5"]  # the mock fixture: correct at turn 1, no tokens recorded, 50 ms
    assert claude.stats["turns"].values == [2] and claude.stats["tokens"] is None
    assert claude.stats["wall_s"].values == pytest.approx([0.05])
    assert fc["gpt-5.5"].reached == 0 and fc["gpt-5.5"].stats["turns"] is None
    assert quantile([1, 2, 3, 4], 0.25) == pytest.approx(1.75)


def test_charts_match_runs_json_on_the_fixtures():
    """`ktui runs ../shared/fixtures --format json`: every number behind the charts is in it."""
    out = io.StringIO()
    assert runs_print(FIXTURES, fmt="json", use_cache=False, out=out) == 0
    body = json.loads(out.getvalue())
    charts = body["charts"]
    aggs = {a["model"]: a for a in body["aggregates"]}
    runs = [RunSummary.from_dict(d) for d in body["runs"]]
    assert charts == json.loads(json.dumps(charts_dict(sweep_charts(runs))))
    for cv in charts["fast_p"]["curves"]:
        for p in FAST_P:
            assert cv[f"fast_{p:g}"] == pytest.approx(aggs[cv["model"]][f"fast_{p:g}"])
    for row in charts["speedup"]["rows"]:
        assert row["geomean"] == aggs[row["model"]]["geomean_speedup"]
        assert len(row["speedups"]) == aggs[row["model"]]["correct_with_speedup"]
    cells = {(c["model"], c["problem"]): c for c in charts["grid"]["cells"]}
    # the mock's final kernel is a torch wrapper with no GPU code: correct, not "faster" at 2.4x
    assert (cells[("claude-sonnet-4-5", "L1/P19")]["level"], cells[("claude-sonnet-4-5", "L1/P19")]["speedup"]) == (
        "correct", None)
    assert sum(len(c["runs"]) for c in cells.values()) == len(runs) - 1 == 5  # not the one with no kernel
    assert body["runs_without_kernel"] == 1 and "rep1-model" not in aggs


# ---- reproduced results -------------------------------------------------------------------------------
def _store_repro(sha: str, correct: bool, speedup: float | None, ref: str | None = None, key: str = "k" * 24) -> None:
    from ktui.repro import cache

    cache.store({"kernel_sha1": sha, "key": key, "request": {},
                 "result": {"status": "completed", "correctness": {"passed": correct}, "reference_sha1": ref,
                            "timing": {"speedup": speedup} if speedup else None}})


def test_reproduced_curve_from_the_repro_cache(sweep):
    from ktui.repro.reproduced import reproduced_results

    runs = _runs(sweep)
    by = {r.path: r for r in runs}
    seed, p28 = by["project/seed.jsonl"], by["hand/grok_p28.jsonl"]
    assert seed.final_sha1 and p28.final_sha1 and seed.final_sha1 != p28.final_sha1
    assert seed.reference_sha1 and p28.reference_sha1 is None  # the hand-written P28 trace holds no reference
    _store_repro(seed.final_sha1, True, 0.6, seed.reference_sha1)  # the seed's 1.23x does not hold: 0.6x
    _store_repro(p28.final_sha1, False, None, "1" * 40)  # P28's kernel judged against some reference...
    rep = reproduced_results(runs)
    assert set(rep) == {seed.real}  # ...is not P28's result: its own reference is unknown
    c = sweep_charts(runs, rep)
    curves = [(cv.model, cv.kind) for cv in c.fast_p.curves]
    assert ("grok-4.3", "reproduced") in curves and len(curves) == 7  # no rep1-model: it has no kernel
    r = next(cv for cv in c.fast_p.curves if cv.kind == "reproduced")
    assert (r.runs, r.speedups) == (1, [0.6])  # the one run verified, correct at 0.6x
    assert [r.at(p) for p in FAST_P] == [1.0, 0, 0, 0]
    assert c.fast_p.lo == pytest.approx(0.3)
    text = render_chart("fast_p", c, 100, 28).plain
    assert "grok-4.3 (reproduced)" in text and "╍╍" in text
    from ktui.report.svg import fast_p_svg

    svg = fast_p_svg(c.fast_p)
    assert svg.count('<g class="series"') == 7
    rep_g = svg[svg.index('data-kind="reproduced"'):]
    assert 'data-model="grok-4.3"' in svg[svg.rindex("<g", 0, svg.index('data-kind="reproduced"')):] and \
        "stroke-dasharray" in rep_g[: rep_g.index("</g>")]


def test_a_reproduction_against_another_reference_is_not_this_runs(sweep):
    # the same final kernel judged against another problem's reference (or an unknown one) says
    # nothing about this run: no reproduced entry for it in the charts
    from ktui.repro.reproduced import reproduced_results

    runs = _runs(sweep)
    seed = next(r for r in runs if r.path == "project/seed.jsonl")
    _store_repro(seed.final_sha1, True, 9.0, "0" * 40, key="a" * 24)
    _store_repro(seed.final_sha1, True, 9.0, None, key="b" * 24)
    assert seed.real not in reproduced_results(runs)
    _store_repro(seed.final_sha1, False, None, seed.reference_sha1, key="c" * 24)
    assert reproduced_results(runs)[seed.real].correct is False


# ---- rendering ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(100, 26), (158, 44), (40, 8)])
@pytest.mark.parametrize("kind", CHARTS)
def test_render_fits_and_shows_the_numbers(sweep, kind, size):
    c = sweep_charts(_runs(sweep))
    w, h = size
    t = render_chart(kind, c, w, h)
    lines = t.plain.split("\n")
    assert len(lines) <= h and max(len(ln) for ln in lines) <= w
    assert "\x1b" not in t.plain and EVIL_MODEL not in t.plain  # sanitized (ESC made visible) and shortened
    if size == (100, 26):
        want = {"fast_p": "fast_0 67%  fast_1 67%  fast_1.5 33%  fast_2 33%", "speedup": "gm   1.80x n 2/3",
                "grid": "failed 3", "first_correct": "median 4 2/3"}[kind]
        assert want in t.plain


def test_render_with_no_runs():
    c = sweep_charts([])
    for kind in CHARTS:
        assert "no runs" in render_chart(kind, c, 100, 28).plain


# ---- the screen ------------------------------------------------------------------------------------------
async def _settled(pilot) -> None:
    app = pilot.app
    for _ in range(400):
        await pilot.pause(0.02)
        scr = app.screen
        if getattr(scr, "scan_done", False) and all(w.is_finished for w in app.workers):
            view = scr.query_one(SweepChartView)
            if scr.chart is None or view.charts is not None:
                break
    await pilot.pause(0.05)


def test_chart_key_cycles_follows_the_filter_and_grid_enter_opens_runs(sweep, monkeypatch):
    import threading

    import ktui.view.charts as vc

    threads = []
    real = vc.sweep_charts

    def spy(*a, **k):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(*a, **k)

    monkeypatch.setattr(vc, "sweep_charts", spy)
    asyncio.run(_screen_flow(sweep))
    assert threads and not any(threads)  # computed in workers, never on the UI thread


async def _screen_flow(sweep):
    app = KtuiApp(lambda: RunsScreen(sweep, use_cache=False))
    async with app.run_test(size=(100, 30)) as pilot:
        await _settled(pilot)
        scr = app.screen
        view = scr.query_one(SweepChartView)
        table = scr.query_one(RunsTable)
        seen = []
        for _ in CHARTS:
            await pilot.press("C")
            await _settled(pilot)
            seen.append(scr.chart)
            assert view.display and not table.display
        assert seen == list(CHARTS)
        await pilot.press("C")
        assert scr.chart is None and table.display
        await pilot.press("C")  # fast_p, then filter on the outcome: the charts follow it
        await _settled(pilot)
        assert view.charts.runs == 12  # 13 runs, one with no kernel
        await pilot.press("o")  # passed only
        await _settled(pilot)
        assert view.charts.runs == 6
        assert {cv.model for cv in view.charts.fast_p.curves} == {"grok-4.3", "test-agent-b", "claude-sonnet-4-5",
                                                                    EVIL_MODEL}
        await pilot.press("x", "C", "C")  # to the grid
        await _settled(pilot)
        assert scr.chart == "grid"
        g = view.charts.grid
        mi, pj = g.models.index("test-agent-b"), g.problems.index("L1/P28")
        for _ in range(mi):
            await pilot.press("down")
        for _ in range(pj):
            await pilot.press("right")
        assert view.cursor == (mi, pj)
        await pilot.press("enter")  # two runs: the table, filtered to them
        await pilot.pause(0.05)
        assert scr.chart is None
        assert sorted(table.rows[i].path for i in table.view) == ["hand/agentb_p28.jsonl",
                                                                  "hand/agentb_p28_again.jsonl"]
        await pilot.press("x")
        assert len(table.view) == 13
        await pilot.press("C", "C", "C")
        await _settled(pilot)
        view.cursor = (g.models.index("grok-4.3"), g.problems.index("L1/P27"))
        await pilot.press("enter")  # one run: the replay screen
        for _ in range(100):
            await pilot.pause(0.02)
            if type(app.screen).__name__ == "ReplayScreen":
                break
        assert type(app.screen).__name__ == "ReplayScreen"


# ---- snapshots: each chart at 160x48 and 100x30 ----------------------------------------------------------
def _snap_app(sweep: Path) -> KtuiApp:
    return KtuiApp(lambda: RunsScreen(Path(sweep.name), use_cache=False))


def _press_then_settle(n: int, *keys: str):
    async def run_before(pilot) -> None:
        await _settled(pilot)
        for _ in range(n):
            await pilot.press("C")
            await _settled(pilot)
        for k in keys:
            await pilot.press(k)
        await _settled(pilot)
        await pilot.wait_for_scheduled_animations()
        pilot.app.clear_notifications()
        await pilot.pause(0.05)

    return run_before


SNAP_CASES = [(kind, size) for kind in CHARTS for size in ((160, 48), (100, 30))]


@pytest.mark.parametrize("kind,size", SNAP_CASES, ids=[f"{k}-{w}x{h}" for k, (w, h) in SNAP_CASES])
def test_chart_snapshot(snap_compare, sweep, monkeypatch, kind, size):
    monkeypatch.chdir(sweep.parent)  # the screen shows the root as given: keep it the same in every run
    n = CHARTS.index(kind) + 1
    keys = ("down", "down", "down", "right", "right") if kind == "grid" else ()
    assert snap_compare(_snap_app(sweep), terminal_size=size, run_before=_press_then_settle(n, *keys))


def test_screenshots_match_chart_snapshots():
    """screenshots/runs_chart_*.svg (shown in the README) are copies of the accepted 160x48 snapshots."""
    snaps = Path(__file__).resolve().parent / "__snapshots__" / "test_charts"
    shots = Path(__file__).resolve().parents[1] / "screenshots"
    for kind in CHARTS:
        snap = snaps / f"test_chart_snapshot[{kind}-160x48].svg"
        shot = shots / f"runs_chart_{kind}.svg"
        assert shot.is_file(), f"{shot} missing: copy {snap.name} there"
        assert shot.read_bytes() == snap.read_bytes(), f"{shot} differs from {snap.name}"


def _tick_value_at(labels: str, col: int) -> float:
    """The value at column ``col`` of a linear axis, from the label line's numbers (their centres)."""
    import re

    marks = [((m.start() + m.end() - 1) / 2, float(m.group(1)) * (1000 if m.group(2) == "k" else 1))
             for m in re.finditer(r"(\d+(?:\.\d+)?)(k|s)?", labels)]
    assert len(marks) >= 2, labels
    (c0, v0), (c1, v1) = marks[0], marks[-1]
    return v0 + (col - c0) * (v1 - v0) / (c1 - c0)


def test_first_correct_one_value_is_drawn_where_its_axis_says(sweep):
    """Every run reached a correct kernel in 0.05 s: the dot sits where the axis labels read 0.05 s
    (it was drawn in the middle of an axis from 0.05 to 1.05: at 0.55 s)."""
    from ktui.view.charts import FirstCorrectChart, FirstCorrectRow, box_stats, first_correct_axis

    c = sweep_charts(_runs(sweep))
    c.first_correct = FirstCorrectChart(
        [FirstCorrectRow("m", 1, 1, {"turns": box_stats([3.0]), "tokens": box_stats([1200.0]),
                                     "wall_s": box_stats([0.05])})],
        {"turns": (3.0, 3.0), "tokens": (1200.0, 1200.0), "wall_s": (0.05, 0.05)})
    lo, hi, log = first_correct_axis(c.first_correct, "wall_s")
    assert lo < 0.05 < hi and not log
    lines = render_chart("first_correct", c, 100, 30).plain.splitlines()
    at = next(i for i, s in enumerate(lines) if s.startswith("wall time"))
    dot = lines[at + 1].index("●")
    assert _tick_value_at(lines[at + 2], dot) == pytest.approx(0.05, abs=0.02)
    tok = next(i for i, s in enumerate(lines) if s.startswith("tokens"))
    assert _tick_value_at(lines[tok + 2], lines[tok + 1].index("●")) == pytest.approx(1200, rel=0.05)


@pytest.mark.parametrize("width", [100, 160])
def test_grid_labels_use_the_width_there_is(width):
    """Five problems at 100 columns: the labels were cut to 6 characters with 50 columns empty."""
    c = sweep_charts(_runs(FIXTURES))
    assert len(c.grid.problems) == 5
    lines = render_chart("grid", c, width, 30).plain.splitlines()
    head = lines[1]
    assert "bf16 gemm " in head and "online sof" in head and "L1/P19" in head
    assert max(len(x.rstrip()) for x in lines) <= width
    assert len(head) > width - 8  # the room is used
    if width == 160:
        assert "online softmax (cuda" in head


@pytest.mark.parametrize("width,height", [(100, 30), (160, 48)])
def test_cut_grid_labels_are_numbered_with_a_key(sweep, width, height):
    """At 100 columns the grid cut every problem to 5 characters: two of a real Harbor sweep's
    problems both read "fused…", with 20 empty lines under the grid. Cut labels are numbered and
    the full names follow the grid, so each column says which problem it is."""
    c = sweep_charts(_runs(sweep))
    lines = render_chart("grid", c, width, height).plain.splitlines()
    heads = lines[1].split("#")[1:]
    assert len(heads) == len(c.grid.problems) and len({h.split()[0] for h in heads}) == len(heads), lines[1]
    text = "\n".join(lines)
    for j, k in enumerate(c.grid.problems):
        assert f"#{j + 1} {clean(c.grid.titles.get(k, k))}" in text, (k, text)
    assert max(len(x.rstrip()) for x in lines) <= width and len(lines) <= height


def test_first_correct_says_which_models_have_correct_runs_without_a_turn():
    """A Harbor job (reward.json read at the end, no per-turn correctness): claude-opus-4.8 had 5
    correct runs of 20 and the chart said "no correct kernel: ... claude-opus-4.8 0/20"."""
    from ktui.report.svg import first_correct_svg
    from ktui.trace.index import RunSummary
    from ktui.view.charts import first_correct_chart, not_reached_line

    def run(i: int, model: str, correct: bool | None, turn: int | None) -> RunSummary:
        s = RunSummary(path=f"{model}/{i}/trajectory.json", real=f"/x/{model}/{i}", size=1, mtime_ns=0,
                       model=model, outcome="passed" if correct else "failed", correct=correct,
                       final_sha1="ab" * 20)
        s.first_correct_turn = turn
        return s

    runs = ([run(i, "opus", i < 5, None) for i in range(20)] + [run(i, "flash", False, None) for i in range(4)]
            + [run(i, "gpt", True, 2) for i in range(3)])
    fc = first_correct_chart(runs)
    line = not_reached_line(fc.rows)
    assert "no correct kernel: flash 0/4" in line and "correct, turn not recorded: opus 5/20" in line, line
    assert "opus 0/20" not in line
    assert "correct, turn not recorded: opus 5/20" in first_correct_svg(fc)


def test_chart_model_names_keep_their_last_part():
    """Three OpenRouter models in 22 cells read openrouter/anthropic/…, openrouter/google/gem…,
    openrouter/openai/gpt…: the model's own name cut away. Now …/claude-opus-4.8, unless two models
    end alike (then cut at the end as before)."""
    from ktui.tui.widgets.charts import _model_name

    names = ["openrouter/anthropic/claude-opus-4.8", "openrouter/google/gemini-3.5-flash", "openrouter/openai/gpt-5.5"]
    assert [_model_name(n, 22, names).rstrip() for n in names] == ["…/claude-opus-4.8", "…/gemini-3.5-flash",
                                                                    "…/gpt-5.5"]
    assert all(len(_model_name(n, 22, names)) == 22 for n in names)
    twins = ["openrouter/openai/gpt-5.5", "azure/openai/gpt-5.5"]
    assert [_model_name(n, 22, twins).rstrip() for n in twins] == ["openrouter/openai/gpt…", "azure/openai/gpt-5.5"]
    assert _model_name("grok-4.3", 22, ["grok-4.3"]).rstrip() == "grok-4.3"  # what fits is not cut


def test_report_chart_model_labels_keep_their_last_part():
    """The report's charts cut model labels at 28 characters from the end
    (openrouter/anthropic/claude…, openrouter/google/gemini-3.…); now …/claude-opus-4.8."""
    from ktui.report.svg import model_esc

    names = ["openrouter/anthropic/claude-opus-4.8", "openrouter/google/gemini-3.5-flash", "openrouter/openai/gpt-5.5"]
    assert [model_esc(n, names) for n in names] == ["…/claude-opus-4.8", "…/gemini-3.5-flash",
                                                    "openrouter/openai/gpt-5.5"]
    twins = ["openrouter/openai/gpt-5.5-priority-x", "azure-east-2/openai/gpt-5.5-priority-x"]
    assert [model_esc(n, twins) for n in twins] == ["openrouter/openai/gpt-5.5-p…", "azure-east-2/openai/gpt-5.5…"]
    assert model_esc("openrouter/<script>-model-name", []) == "…/&lt;script&gt;-model-name"  # escaped
