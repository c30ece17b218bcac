"""Labels and notes outside the traces: keyed by content (a moved trace keeps them), survive a
restart (a new process reads them), filter `ktui runs`, show in a column, export as a dataset;
the file is untrusted data; the trace is never written."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from ktui.cli import main
from ktui.trace import labels as L
from ktui.trace.index import SweepIndex, summarize
from tests.conftest import ROOT, SEED_TRACE, fixture_path


def _sweep(tmp_path: Path) -> Path:
    d = tmp_path / "sweep"
    (d / "a").mkdir(parents=True)
    (d / "b").mkdir(parents=True)
    shutil.copy(SEED_TRACE, d / "a" / "trace.jsonl")
    shutil.copy(fixture_path("ktbench/v2_eval_chzr6_marker_kernel.jsonl"), d / "b" / "trace.jsonl")
    return d


def _cli(*args: str):
    r = CliRunner().invoke(main, list(args))
    return r


def test_label_survives_a_restart_and_filters_runs(tmp_path):
    d = _sweep(tmp_path)
    before = hashlib.sha1((d / "b" / "trace.jsonl").read_bytes()).hexdigest()
    r = _cli("label", str(d / "b" / "trace.jsonl"), "reward-hack", "--note", "marker kernel, then torch.matmul")
    assert r.exit_code == 0, r.output
    assert hashlib.sha1((d / "b" / "trace.jsonl").read_bytes()).hexdigest() == before  # never written
    # a new process (a restart) reads the label from the data directory
    env = {**os.environ, "KTUI_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "ktui", "runs", str(d), "--format", "json", "--label", "reward-hack"],
                         capture_output=True, text=True, env=env, check=True).stdout
    runs = json.loads(out)["runs"]
    assert [(r["path"], r["labels"]) for r in runs] == [("b/trace.jsonl", ["reward-hack"])]
    out = subprocess.run([sys.executable, "-m", "ktui", "runs", str(d), "--print"], capture_output=True, text=True,
                         env={**env, "COLUMNS": "250"}, check=True).stdout
    assert "labels" in out.splitlines()[0] and "reward-hack" in out
    # no label: both runs; another label: none
    r = _cli("runs", str(d), "--format", "json", "--label", "honest", "--no-cache")
    assert json.loads(r.stdout)["runs"] == []


def test_a_moved_trace_keeps_its_labels_and_a_replaced_one_loses_them(tmp_path):
    d = _sweep(tmp_path)
    assert _cli("label", str(d / "a" / "trace.jsonl"), "honest").exit_code == 0
    moved = tmp_path / "elsewhere" / "renamed.jsonl"
    moved.parent.mkdir()
    shutil.move(str(d / "a" / "trace.jsonl"), moved)
    r = _cli("label", str(moved))
    assert r.exit_code == 0 and r.stdout.startswith("honest")
    shutil.copy(fixture_path("ensemble/v0_popcorn_mock_single_problem.jsonl"), d / "a" / "trace.jsonl")
    r = _cli("runs", str(d), "--format", "json", "--no-cache")
    assert {x["path"]: x["labels"] for x in json.loads(r.stdout)["runs"]} == {"a/trace.jsonl": [],
                                                                              "b/trace.jsonl": []}


def test_turn_and_version_labels_and_removal(tmp_path):
    d = _sweep(tmp_path)
    t = str(d / "b" / "trace.jsonl")
    assert _cli("label", t, "hack", "--version", "v7", "--note", "torch.matmul").exit_code == 0
    assert _cli("label", t, "oops", "--turn", "2").exit_code == 0
    r = _cli("label", t, "x", "--version", "v99")
    assert r.exit_code == 2 and "no kernel version" in r.stderr
    r = _cli("label", t, "x", "--turn", "99")
    assert r.exit_code == 2 and "no turn 99" in r.stderr
    r = _cli("label", t, "two words")
    assert r.exit_code == 2
    r = _cli("runs", str(d), "--format", "json", "--no-cache", "--label", "hack")
    (run,) = json.loads(r.stdout)["runs"]
    assert sorted(run["labels"]) == ["hack@v7", "oops@t2"]
    assert _cli("label", t, "oops", "--turn", "2", "--remove").exit_code == 0
    r = _cli("runs", str(d), "--format", "json", "--no-cache", "--label", "oops")
    assert json.loads(r.stdout)["runs"] == []


def test_export_csv_and_jsonl(tmp_path):
    d = _sweep(tmp_path)
    t = str(d / "b" / "trace.jsonl")
    _cli("label", t, "hack", "--version", "v7", "--note", "=cmd|' /C calc'!A0")
    _cli("label", str(d / "a" / "trace.jsonl"), "honest")
    r = _cli("labels", "export", str(d), "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert {(x["trace"], x["scope"], x["version"], x["label"]) for x in rows} == {
        ("b/trace.jsonl", "version", "v7", "hack"), ("a/trace.jsonl", "run", "", "honest")}
    hack = next(x for x in rows if x["label"] == "hack")
    assert hack["note"].startswith("'=")  # a spreadsheet would run it as a formula
    out = tmp_path / "out"
    out.mkdir()
    r = _cli("labels", "export", str(d), "--format", "jsonl", "-o", str(out))
    rows = [json.loads(x) for x in (out / "labels.jsonl").read_text().splitlines()]
    hack = next(x for x in rows if x["label"] == "hack")
    assert hack["code_version"] == "v7" and "torch.matmul" in hack["code"]
    honest = next(x for x in rows if x["label"] == "honest")
    assert honest["code_version"] == "v4"  # the run's final kernel


def test_sweep_file_beside_the_sweep_is_read(tmp_path):
    d = _sweep(tmp_path)
    r = _cli("label", str(d / "a" / "trace.jsonl"), "shared", "--labels", str(d / L.SWEEP_FILE))
    assert r.exit_code == 0
    assert not Path(L.default_file()).exists()
    r = _cli("runs", str(d), "--format", "json", "--no-cache", "--label", "shared")
    assert [x["path"] for x in json.loads(r.stdout)["runs"]] == ["a/trace.jsonl"]


def test_hostile_labels_file(tmp_path):
    d = _sweep(tmp_path)
    cid = L.content_id(d / "a" / "trace.jsonl")
    good = L.record(cid, "ok")
    lines = [
        "not json", json.dumps({**good, "label": "\x1b[31mred"}), json.dumps({**good, "id": "/etc/passwd"}),
        json.dumps({**good, "scope": "turn", "turn": "1; rm"}), "[" * 100000, json.dumps({**good, "v": 2}),
        json.dumps({**good, "note": ["x"]}), json.dumps(good),
    ]
    f = d / L.SWEEP_FILE
    f.write_text("\n".join(lines) + "\n")
    st = L.LabelStore.read([str(f)])
    assert [lab.label for lab in st.for_id(cid)] == ["ok"] and st.bad_lines == 7
    r = _cli("runs", str(d), "--print", "--no-cache")
    assert r.exit_code == 0 and "\x1b" not in r.stdout


def test_index_fingerprint_is_the_content_id_for_every_format(tmp_path):
    seen = set()
    fmts = ROOT / "tests" / "fixtures" / "formats"
    for p in [SEED_TRACE, *sorted(fmts.glob("*.json*")), *sorted(fmts.glob("*.traj"))]:
        s = summarize(str(p))
        if s.format == "none" or not s.fingerprint:
            continue
        seen.add(s.format)
        assert s.content_id == L.content_id(p), p
    assert len(seen) >= 3, seen  # ensemble and imported formats


def test_labels_in_the_index_are_not_cached(tmp_path, monkeypatch):
    d = _sweep(tmp_path)
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    assert [s.labels for s in SweepIndex(d).summaries()] == [[], []]
    _cli("label", str(d / "a" / "trace.jsonl"), "later")
    got = {s.path: s.labels for s in SweepIndex(d).summaries()}  # served from the index cache
    assert got == {"a/trace.jsonl": ["later"], "b/trace.jsonl": []}


# ---- the app: A in ktui runs and in the replay ---------------------------------------------------
def test_app_label_key_in_runs_and_replay(tmp_path):
    import asyncio

    from ktui.tui.app import KtuiApp
    from ktui.tui.screens.replay import ReplayScreen
    from ktui.tui.screens.runs import RunsScreen
    from ktui.tui.widgets.runs_table import RunsTable

    d = _sweep(tmp_path)

    async def runs_flow():
        app = KtuiApp(lambda: RunsScreen(d, use_cache=False))
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(200):
                await pilot.pause(0.02)
                if app.screen.scan_done:
                    break
            table = app.screen.query_one(RunsTable)
            assert "labels" not in [k for k, _, _ in table.columns()]
            want = table.current.path
            await pilot.press("A")
            await pilot.pause()
            await pilot.press(*"reward-hack times a cached output", "enter")
            await pilot.pause()
            assert table.current.labels == ["reward-hack"]
            assert "labels" in [k for k, _, _ in table.columns()]
            return want

    labelled = asyncio.run(runs_flow())
    store = L.LabelStore.read([L.default_file()])
    (lab,) = [x for labs in store.by_id.values() for x in labs]
    assert (lab.label, lab.note, lab.scope) == ("reward-hack", "times a cached output", "run")

    async def restart_flow():  # a new app: the label is read back, --label filters
        app = KtuiApp(lambda: RunsScreen(d, use_cache=False, labels=["reward-hack"]))
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(200):
                await pilot.pause(0.02)
                if app.screen.scan_done:
                    break
            table = app.screen.query_one(RunsTable)
            return [table.rows[i].path for i in table.view]

    assert asyncio.run(restart_flow()) == [labelled]

    trace = d / "a" / "trace.jsonl"

    async def replay_flow():
        app = KtuiApp(lambda: ReplayScreen(trace))
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(200):
                await pilot.pause(0.02)
                if app.screen.ready:
                    break
            await pilot.press("j", "j", "A")
            await pilot.pause()
            await pilot.press(*"oops wrong sign", "enter")
            await pilot.pause()
            await pilot.press("2", "A")  # the Kernels pane: the selected version
            await pilot.pause()
            await pilot.press(*"honest", "enter")
            await pilot.pause()
            await pilot.press("A")
            await pilot.pause()
            await pilot.press(*"run checked", "enter")
            await pilot.pause()

    asyncio.run(replay_flow())
    labs = L.LabelStore.read([L.default_file()]).for_id(L.content_id(trace))
    got = sorted((x.scope, x.turn, x.version, x.label, x.note) for x in labs)
    assert got[0][:4] == ("run", None, None, "checked")
    assert ("turn", 2, None, "oops", "wrong sign") in got
    assert any(g[0] == "version" and g[3] == "honest" and g[2].startswith("v") for g in got)


def test_report_shows_labels_and_the_excluded_count(tmp_path):
    from ktui.report.html import build_report

    d = _sweep(tmp_path)
    assert _cli("label", str(d / "b" / "trace.jsonl"), "reward-hack", "--version", "v7").exit_code == 0
    page, _stats = build_report(d, use_cache=False, exclude=("label:reward-hack",))
    data = json.loads(page.split('<script type="application/json" id="ktui-data">', 1)[1].split("</script>", 1)[0])
    keys = [c["key"] for c in data["columns"]]
    assert "labels" in keys
    by = {r["c"][0]: r["c"][keys.index("labels")] for r in data["rows"]}
    assert by == {"a/trace.jsonl": "", "b/trace.jsonl": "reward-hack@v7"}
    assert "aggregates count 1 of 2 runs; 1 excluded (label reward-hack 1)" in page
