"""The sweep walk's cost per file, counted (not timed), and the equivalence of its shortcuts.

A sweep of 10,000 cells has a top ``runs.jsonl`` of 10,000 rows and three entries a cell; the walk
and the records were 0.8-0.9 s of a cold ``ktui runs`` on it, all in the scanning process before
and between the rows. Two shortcuts: a row's target is ``normpath(base)`` + its one-component name
(``records._joined``; normpath was called once a row) and a path's shown form is a slice of the
root's prefix (``walk._display`` was called once a file and once a directory)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ktui.trace.index import discover
from ktui.trace.index import records as records_mod
from ktui.trace.index import walk as walk_mod
from ktui.trace.index.records import Records, _joined

SEED = Path(__file__).resolve().parents[1] / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"


def _sweep(root: Path, cells: int) -> Path:
    """popcornbench's run_sweep.py layout: ``runs.jsonl`` on top (a row per cell, by slug), and in
    each cell its own ``runs.jsonl`` (a row per run, by run_id), ``<uuid>/trace.jsonl`` and the
    flat link to it."""
    sweep = root / "sweep"
    sweep.mkdir()
    data = SEED.read_bytes()
    top = []
    for i in range(cells):
        slug = f"l1_p{i}_m_normal_s{i}"
        cell = sweep / slug
        (cell / f"u{i:04d}").mkdir(parents=True)
        (cell / f"u{i:04d}" / "trace.jsonl").write_bytes(data + b'{"tick":0,"ts_ms":%d,"actor":null,"payload":{"kind":"system","note":"run %d"}}\n' % (i, i))
        (cell / "popcorn_single_problem.jsonl").symlink_to(f"u{i:04d}/trace.jsonl")
        (cell / "runs.jsonl").write_text(json.dumps({"run_id": f"u{i:04d}", "scenario": "popcorn.single_problem",
                                                     "trace_path": f"u{i:04d}/trace.jsonl"}) + "\n")
        top.append(json.dumps({"slug": slug, "status": "failed" if i % 3 == 0 else "ok", "model": f"m{i % 4}",
                               "level": 1, "problem_id": i}))
    (sweep / "runs.jsonl").write_text("\n".join(top) + "\n")
    return sweep


@pytest.mark.parametrize("base", ["/a/b", "/a/b/", "/", "//", "//a", "a", "a/b/", "./a", "../a/./b", ".", "", "a//b",
                                  "/a/../b", "..", "/.."])
@pytest.mark.parametrize("name", ["x", "run-1", "...", ".x", "x.", "a b", "ü", "x\\y"])
def test_joined_is_normpath_of_join(base, name):
    assert _joined(os.path.normpath(base), name) == os.path.normpath(os.path.join(base, name))


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "/abs", "a/", "/"])
def test_joined_leaves_the_other_names_to_normpath(name):
    assert _joined("/a", name) is None


def test_records_of_a_runs_jsonl_normalise_its_directory_once(tmp_path, monkeypatch):
    sweep = _sweep(tmp_path, 3)
    top = sweep / "runs.jsonl"
    top.write_text("\n".join(json.dumps({"slug": f"cell{i}", "status": "ok"}) for i in range(500)) + "\n")
    calls = []
    real = os.path.normpath
    monkeypatch.setattr(records_mod.os.path, "normpath", lambda p: calls.append(p) or real(p))
    recs = Records()
    recs.read(str(top), [], "runs.jsonl")
    assert len(recs.by_target) == 500
    assert len(calls) <= 2, f"normpath once a row: {len(calls)} calls for 500 rows"
    monkeypatch.undo()
    assert sorted(recs.by_target) == sorted(os.path.normpath(os.path.join(str(sweep), f"cell{i}")) for i in range(500))
    assert all(r.target == k for k, r in recs.by_target.items())


def test_the_walk_shows_paths_without_a_call_per_file(tmp_path, monkeypatch):
    sweep = _sweep(tmp_path, 12)
    calls = []
    real = walk_mod._display
    monkeypatch.setattr(walk_mod, "_display", lambda p, r: calls.append(p) or real(p, r))
    files = discover(sweep, [], Records())
    assert len(files) == 12
    assert len(calls) <= 1, f"_display once a file or directory: {len(calls)} calls for 12 cells"


@pytest.mark.parametrize("form", ["abs", "rel", "dot-slash", "trailing"])
def test_the_walk_and_records_give_what_the_long_way_gives(tmp_path, monkeypatch, form):
    """Every file, shown path, real path, record and lookup the same as with the shortcuts replaced
    by the calls they stand for (``_display``, ``normpath(join)``), for the root given four ways."""
    sweep = _sweep(tmp_path, 6)
    (sweep / "l1_p2_m_normal_s2" / "meta.json").write_text(json.dumps({"model": "from-meta"}))
    (sweep / "odd").mkdir()
    (sweep / "odd" / "runs.jsonl").write_text("\n".join([
        json.dumps({"slug": "a/b", "status": "ok"}), json.dumps({"slug": "..", "status": "ok"}),
        json.dumps({"run_id": "", "status": "ok"}), json.dumps({"trace_path": "x/y/trace.jsonl", "status": "ok"}),
        "not json", json.dumps({"slug": ".", "status": "ok"})]) + "\n")
    monkeypatch.chdir(tmp_path)
    root = {"abs": str(sweep), "rel": "sweep", "dot-slash": "./sweep", "trailing": "sweep/"}[form]

    def run():
        issues: list = []
        recs = Records()
        files = discover(root, issues, recs)
        return ([(f.path, f.real, f.size, f.is_link, f.found) for f in files],
                [(i.path, i.message) for i in issues],
                sorted((k, r.source, r.target) for k, r in recs.by_target.items()),
                [[r.source for r in recs.lookup(f)] for f in files])

    fast = run()
    monkeypatch.setattr(records_mod, "_joined", lambda nbase, name: None)
    prefix_free = walk_mod.iter_traces

    def long_way(root_, issues, records=None):
        for tf in prefix_free(root_, issues, records):
            assert tf.path == walk_mod._display(tf.found, os.fspath(root_))
            yield tf
    monkeypatch.setattr(walk_mod, "iter_traces", long_way)
    slow = run()
    assert fast == slow
    assert len(fast[0]) == 6 and len(fast[2]) >= 6 + 1 + 1
