"""Aggregates with a choice: runs with hack classes, flags or labels can be left out (the count
left out is always said); a correct run whose final kernel has no GPU code is in no fast_p."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest
from click.testing import CliRunner

from ktui.cli import main
from ktui.trace.aggregate import aggregate, parse_exclude, select
from tests.conftest import fixture_path


def _run(model="m", outcome="passed", speedup=2.4, hacks=(), flags=(), labels=(), no_gpu=False):
    return NS(model=model, outcome=outcome, speedup=speedup, hacks=list(hacks), flags=list(flags) + list(hacks),
              labels=list(labels), no_gpu_final=no_gpu, tokens=None, wall_ms=None)


def test_a_wrapper_without_gpu_code_is_in_no_fast_p():
    (a, _all) = aggregate([_run(no_gpu=True, flags=["no_gpu_code"])])
    assert a.pass_rate == 1.0 and a.fast_p(2.0) == 0.0 and a.fast_p(0.0) == 0.0
    assert a.geomean_speedup is None and a.no_gpu == 1
    (b, _all) = aggregate([_run()])
    assert b.fast_p(2.0) == 1.0


def test_fixture_wrapper_is_not_fast_2():
    root = fixture_path("ensemble").parent
    r = CliRunner().invoke(main, ["runs", str(root), "--format", "json", "--no-cache"])
    body = json.loads(r.stdout)
    claude = next(a for a in body["aggregates"] if a["model"] == "claude-sonnet-4-5")
    assert claude["pass_rate"] == 1.0 and claude["fast_2"] == 0.0 and claude["correct_without_gpu_code"] == 1
    run = next(x for x in body["runs"] if x["model"] == "claude-sonnet-4-5")
    assert run["no_gpu_final"] is True and run["speedup"] == 2.4  # the recorded value is still shown


def test_exclusions_and_their_count():
    runs = [_run(), _run(hacks=["timer_patch"]), _run(flags=["dangling_call"]), _run(labels=["hack@v3"]),
            _run(outcome="failed")]
    sel = select(runs, ())
    assert len(sel.kept) == 5 and sel.line() == "aggregates count all 5 runs; 0 excluded"
    # a kept run with no kernel is not counted per model: the line says so, and what is counted
    assert sel.line(1) == "aggregates count 4 of 5 runs; 1 with no kernel not counted (listed)"
    sel = select(runs, parse_exclude("hacks"))
    assert len(sel.kept) == 4 and sel.reasons == {"hack classes": 1} and "1 excluded" in sel.line()
    sel = select(runs, parse_exclude(["flags", "labelled"]))
    assert sel.excluded == 2 and sel.reasons == {"flags": 1, "labels": 1}
    sel = select(runs, parse_exclude("label:hack,hack:timer_patch"))
    assert sel.excluded == 2
    sel = select(runs, parse_exclude("flag:dangling_call"))
    assert sel.excluded == 1
    (m, _all) = aggregate(select(runs, parse_exclude("hacks,flags,labelled")).kept)
    assert (m.runs, m.passed) == (2, 1)
    with pytest.raises(ValueError):
        parse_exclude("bogus")


def test_cli_exclude_says_the_count(tmp_path):
    root = fixture_path("ensemble").parent
    r = CliRunner().invoke(main, ["runs", str(root), "--print", "--no-cache", "--exclude", "hacks"])
    assert r.exit_code == 0
    # 6 runs, 2 excluded, and of the 4 kept one has no kernel: 3 counted (it said "4 of 6")
    assert ("aggregates count 3 of 6 runs; 2 excluded (hack classes 2) by --exclude hacks; "
            "1 with no kernel not counted (listed)") in " ".join(r.stdout.split())
    r = CliRunner().invoke(main, ["runs", str(root), "--print", "--no-cache"])
    # 5 are counted per model (it said "aggregates count all 6 run(s)")
    assert "aggregates count 5 of 6 runs; 1 with no kernel not counted (listed)" in r.stdout
    assert "all 6" not in r.stdout
    r = CliRunner().invoke(main, ["runs", str(root), "--format", "json", "--no-cache", "--exclude", "flags"])
    body = json.loads(r.stdout)
    assert body["aggregates_selection"]["excluded"] == 5 and len(body["runs"]) == 6
    assert body["aggregates_selection"]["counted"] == 0 and body["aggregates_selection"]["without_kernel"] == 1
    assert body["aggregates"] == [] and body["runs_without_kernel"] == 1  # the one left has no kernel
    r = CliRunner().invoke(main, ["runs", str(root), "--print", "--exclude", "nope"])
    assert r.exit_code == 2 and "--exclude" in r.stderr
