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
