"""ktui.repro.results: the typed, versioned reproduction; the cache reads through its validation."""

from __future__ import annotations

import copy
import json

import pytest

from ktui.repro import cache
from ktui.repro.judging.model import Row
from ktui.repro.profile.run import ProfileReport, SideProfile
from ktui.repro.results import PROFILE_SCHEMA, SCHEMA, JudgeResult, Reproduction, ResultError

GOOD = {"kernel_sha1": "ab" * 20, "key": "k1", "request": {"device": "cpu"}, "options": {"trials": 3},
        "trace": "t.jsonl", "created": "2026", "future_field": {"kept": [1, 2]},
        "result": {"status": "completed", "environment": {"device": "cpu"},
                   "correctness": {"passed": True, "trials": 5, "trials_passed": 5, "max_abs_error": 0.0,
                                   "max_rel_error": 1e-7, "held_out": {"passed": True}},
                   "timing": {"kernel": {"mean_us": 3.0, "median_us": 3, "min_us": 2.5, "max_us": 4.0, "std_us": 0.1},
                              "reference": {"mean_us": 6.0, "median_us": 6, "min_us": 5, "max_us": 7, "std_us": 0.2},
                              "speedup": 2.0},
                   "checks": [{"name": "aliasing", "ok": True, "detail": "fine"}], "notes": ["n"],
                   "build": {"extensions": []}, "stages": {}}}


def test_a_good_entry_is_typed_and_written_back_unchanged():
    r = Reproduction.from_dict(copy.deepcopy(GOOD))
    assert r.schema == SCHEMA == cache.ENTRY_VERSION
    assert r.result.correctness.passed and r.result.correctness.held_out_passed is True
    assert r.result.timing.kernel.mean_us == 3.0 and r.result.timing.speedup == 2.0
    assert [c.name for c in r.result.checks] == ["aliasing"] and r.result.notes == ("n",)
    assert r.to_dict() == GOOD  # unknown fields pass through: the JSON on disk does not change


@pytest.mark.parametrize(("path", "value", "where"), [
    (("result", "status"), "cancelled", "result.status"),
    (("result", "correctness", "passed"), "yes", "result.correctness.passed"),
    (("result", "correctness", "trials"), True, "result.correctness.trials"),
    (("result", "correctness", "held_out"), {"passed": 1}, "result.correctness.held_out"),
    (("result", "timing", "kernel", "mean_us"), "fast", "result.timing.kernel.mean_us"),
    (("result", "timing", "reference"), [1], "result.timing.reference"),
    (("result", "checks"), [1], "result.checks[0]"),
    (("result", "checks"), {"name": "x"}, "result.checks"),
    (("result", "notes"), ["ok", 3], "result.notes"),
    (("result", "memory"), "lots", "result.memory"),
    (("result", "build", "extensions"), "x.so", "result.build.extensions"),
    (("request",), [], "request"),
    (("key",), 7, "key"),
])
def test_each_wrong_field_is_named(path, value, where):
    d = copy.deepcopy(GOOD)
    at = d
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    with pytest.raises(ResultError) as ei:
        Reproduction.from_dict(d)
    assert ei.value.where == where


def test_a_failure_needs_its_kind_and_message():
    d = copy.deepcopy(GOOD)
    d["result"] = {"status": "failed", "failure": {"kind": "crash"}}
    with pytest.raises(ResultError, match="failure.message"):
        Reproduction.from_dict(d)
    d["result"]["failure"] = {"kind": "crash", "message": "boom", "stage": "timing"}
    assert Reproduction.from_dict(d).result.failure.stage == "timing"
    for bad in (None, [], "x", 1):
        with pytest.raises(ResultError):
            Reproduction.from_dict(bad)


def test_strict_asks_for_what_a_verdict_needs():
    d = copy.deepcopy(GOOD)
    del d["result"]["correctness"]["trials"]
    del d["result"]["timing"]["kernel"]["std_us"]
    assert Reproduction.from_dict(d, strict=False).result.correctness.trials is None
    with pytest.raises(ResultError, match="trials"):
        Reproduction.from_dict(d, strict=True)
    assert JudgeResult.from_dict({"status": "cancelled"}, statuses=("cancelled",)).status == "cancelled"


def _write(p, entry):
    p.write_text(json.dumps({"v": cache.ENTRY_VERSION, "mac": cache._mac(cache._key(), entry), "entry": entry}))


def test_the_cache_reads_through_the_type(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))
    p = cache.store(copy.deepcopy(GOOD))
    assert cache.load(GOOD["kernel_sha1"], "k1")["future_field"] == {"kept": [1, 2]}
    loose = copy.deepcopy(GOOD)
    del loose["result"]["correctness"]["max_abs_error"]
    _write(p, loose)
    assert cache.load(GOOD["kernel_sha1"], "k1") is None  # strict: no verdict from it, run again
    assert len(cache.entries_for(GOOD["kernel_sha1"])) == 1  # not strict: the charts may use it
    assert cache.entries_for(GOOD["kernel_sha1"], strict=True) == []
    # an entry of another schema is absent
    p.write_text(json.dumps({"v": SCHEMA + 1, "mac": cache._mac(cache._key(), GOOD), "entry": GOOD}))
    assert cache.load(GOOD["kernel_sha1"], "k1") is None


def test_a_profile_report_round_trips_with_its_schema():
    rep = ProfileReport(trace="t", version="v2", sha1="s", status="completed", ncu="/x/ncu",
                        sides={"kernel": SideProfile("kernel", "completed", launches=[{"name": "k"}], passes={"a": 1})},
                        rows=[Row(key="dram", label="DRAM", recorded=50.0, reproduced=48.0, unit="%",
                                  verdict="reproduced")],
                        callouts=["c"], roofline={"x": 1}, notes=["n"])
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["schema"] == PROFILE_SCHEMA
    back = ProfileReport.from_dict(d)
    assert back == rep and back.to_dict() == rep.to_dict()
    for bad in ({**d, "schema": PROFILE_SCHEMA + 1}, {**d, "rows": [{"label": "no key"}]}, {**d, "notes": "n"},
                {**d, "sides": {"kernel": 3}}, [], None):
        with pytest.raises(ResultError):
            ProfileReport.from_dict(bad)
