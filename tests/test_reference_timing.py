"""The reference's timing, measured once per problem and device (issue 23): the first judge of a
problem records every measurement it makes of the reference; the next judges of the problem replay
them instead of timing the reference again, unless anything the timing depends on changed (the
device's description, the settings, the inputs, the code). Only the judge reads and writes the
entries: a candidate can neither see nor change them.

The unit tests drive the judge's reference-timing mixin with a fake judge (no processes); the
slow ones run the real judge on the CPU and count the requests the reference worker received
(the reference timing ops), never seconds."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
import threading
import time

import pytest
from conftest import needs
from standins import RELU_REFERENCE as REF

from ktui.engine import refcache, reftime
from ktui.engine.refcache import ReferenceTimingCache, timing_key
from ktui.repro.judging import reference_time_cached

torch_missing = needs("torch")


# ---- the mixin on a fake judge ----------------------------------------------------------------------
class FakeJob:
    ref_cache = None
    correctness_trials = 2
    method = "cuda_event"
    trials = 5
    warmup = 1
    target_rse = 0.01
    time_cap_s = 1.0
    adaptive = True
    seed = 42
    reference_source = "REF"
    kernel_sha1 = "k" * 40


class FakeJudge(reftime.RefTimingStages):
    """What the mixin calls on the judge, with counters instead of workers."""

    def __init__(self, root, reference_wall=10.0):
        self.job = FakeJob()
        self.job.ref_cache = str(root)
        self.refcache = object()
        self.input_seed = 1234
        self.device_kind = "cpu"
        self.device_str = "cpu"
        self.ref = type("W", (), {"setup_env": {"torch": "x", "threads": 2}})()
        self.result = {"notes": [], "sandbox": {}}
        self._ref_digests = {"t": "dt", "c1": "d1", "c2": "d2"}
        self.ops = []
        self.stops = 0
        self.reference_wall = reference_wall
        self.wall_raw_us = self.wall_unsure_us = 0.0

    def trial(self, *a):
        pass

    # the live measurements (what the reference worker would do)
    def _time_side(self, w, label, cap_s=None, method=None):
        self.ops.append(("time", label, method))
        return {"batches": 1, "stopped": "stable", "method_used": "host"}, [9.0, 10.0, 11.0]

    def _wall(self, w, slots, label, check=False):
        self.ops.append(("wall", label, tuple(slots)))
        self.wall_raw_us, self.wall_unsure_us = self.reference_wall + 1, 0.5
        return [self.reference_wall] * 5, 64, None

    def _noise_us(self, w):
        self.ops.append(("noise",))
        return 3.0

    def _stop_candidate(self):
        self.stops += 1
        self._stopped = ("pids",)

    def timing_stage(self, method=None, confirm=False):
        """The reference side of one timing stage, in the order the clock stage asks for it."""
        timing = {}
        self._rt = None
        self._rt_prepare()
        self._rt_open()
        self._stop_for = timing  # the first window: the candidate is stopped unless replaying
        if not self._rt_replaying():
            self._stop_candidate()
        data, samples = self._ref_time("reference", method=method)
        per, fw, _ = self._ref_wall(["t"], "reference")
        noise = self._ref_noise()
        if confirm:  # a disagreement re-measured (a decision on reference values only)
            self._side_time("reference", "reference", cap_s=0.25)
            self._side_wall("reference", ["t"], "reference")
        mix, _f, _ = self._ref_wall(["t", "c1", "c2"], "reference interleaved")
        self._stop_for, self._stopped = None, None
        timing["reference"] = {"mean_us": sum(samples) / len(samples)}
        self._rt_finish(timing, True)
        return timing, (samples, per, fw, noise, mix, self.wall_unsure_us)


def test_the_second_judge_replays_what_the_first_measured(tmp_path):
    a = FakeJudge(tmp_path)
    ta, va = a.timing_stage()
    assert ta["reference_timing"]["source"] == "measured" and ta["reference_timing"]["stored"] is True
    assert [o[0] for o in a.ops] == ["time", "wall", "noise", "wall"] and a.stops == 1
    b = FakeJudge(tmp_path, reference_wall=99.0)  # anything it measured would differ
    tb, vb = b.timing_stage()
    assert b.ops == [] and b.stops == 0  # the reference was not timed, the candidate not stopped
    assert vb == va  # every value as measured the first time (the unsure figure too)
    rt = tb["reference_timing"]
    assert rt["source"] == "cache" and rt["replayed"] == rt["of"] == 4 and 0 <= rt["age_s"] < 60
    assert any("not timed again" in n for n in b.result["notes"])


def test_anything_the_timing_depends_on_measures_again(tmp_path, monkeypatch):
    FakeJudge(tmp_path).timing_stage()
    variants = []
    j = FakeJudge(tmp_path)
    j.job.trials = 7  # a timing setting
    variants.append(j)
    j = FakeJudge(tmp_path)
    j._ref_digests = dict(j._ref_digests, c2="other")  # other inputs
    variants.append(j)
    j = FakeJudge(tmp_path)
    j.ref.setup_env = {"torch": "x", "threads": 1}  # the reference worker's thread count
    variants.append(j)
    j = FakeJudge(tmp_path)
    j.input_seed = 4321
    variants.append(j)
    for j in variants:
        t, _ = j.timing_stage()
        assert t["reference_timing"]["source"] == "measured" and j.ops, t
    monkeypatch.setattr(reftime, "cpu_state", lambda: {"model": "another CPU", "cpus": 64})
    other = FakeJudge(tmp_path)
    t, _ = other.timing_stage()
    assert t["reference_timing"]["source"] == "measured" and other.ops  # another device: timed again
    again = FakeJudge(tmp_path)
    t, _ = again.timing_stage()
    assert t["reference_timing"]["source"] == "cache" and again.ops == []  # ...and kept for that device


def test_a_replay_that_stops_matching_goes_on_live_and_stops_the_candidate(tmp_path):
    FakeJudge(tmp_path).timing_stage()
    j = FakeJudge(tmp_path)
    t, _ = j.timing_stage(confirm=True)  # a measurement the recorded path did not make
    assert [o[0] for o in j.ops] == ["time", "wall", "wall"]  # from the first that differs, live
    assert j.stops == 1  # a live reference measurement always has the candidate stopped
    assert t["reference_timing"]["source"] == "measured" and "stopped matching" in t["reference_timing"]["why_not_cached"]
    k = FakeJudge(tmp_path)  # the entry was not replaced by the mixed run
    t, _ = k.timing_stage()
    assert t["reference_timing"]["source"] == "cache" and k.ops == []


def test_another_method_at_the_first_measurement_is_measured_live(tmp_path):
    FakeJudge(tmp_path).timing_stage()
    j = FakeJudge(tmp_path)
    t, _ = j.timing_stage(method="cuda_event_fallback")
    assert len(j.ops) == 4 and j.stops == 1 and t["reference_timing"]["source"] == "measured"


def test_no_shared_seed_no_cache(tmp_path):
    j = FakeJudge(tmp_path)
    j.refcache = None
    t, _ = j.timing_stage()
    assert t["reference_timing"]["why_not_cached"].startswith("no shared input seed") and len(j.ops) == 4
    assert not (tmp_path / "timing").exists()


def test_damaged_old_or_foreign_entries_are_not_replayed(tmp_path):
    a = FakeJudge(tmp_path)
    a.timing_stage()
    [path] = list((tmp_path / "timing").rglob("*.json"))
    good = json.loads(path.read_text())

    def measured_with(entry):
        path.write_text(json.dumps(entry))
        j = FakeJudge(tmp_path)
        t, _ = j.timing_stage()
        return t["reference_timing"]["source"] == "measured" and len(j.ops) == 4, t["reference_timing"]

    bad = json.loads(json.dumps(good))
    bad["records"][0]["value"]["samples"] = [1.0, -5.0]  # a negative sample
    assert measured_with(bad)[0]
    bad = json.loads(json.dumps(good))
    bad["records"][1]["value"]["per"] = "x"
    assert measured_with(bad)[0]
    bad = json.loads(json.dumps(good))
    bad["measured_at"] = time.time() - 2 * refcache.TIMING_MAX_AGE_S
    ok, rt = measured_with(bad)
    assert ok and "older than" in rt["why_not_cached"]
    bad = json.loads(json.dumps(good))
    bad["key"] = "0" * 40  # an entry written for another key
    assert measured_with(bad)[0]
    j = FakeJudge(tmp_path)
    path.write_text("{not json")
    t, _ = j.timing_stage()
    assert t["reference_timing"]["source"] == "measured" and "unreadable" in t["reference_timing"]["why_not_cached"]


def test_a_second_judge_waits_for_the_one_measuring_now(tmp_path):
    """Two judges of one problem at once (the pipeline, or two sweeps): the second waits on the
    entry's lock while the first measures and stores, then replays; it never times the reference."""
    parts = {"p": 1}
    first = ReferenceTimingCache(str(tmp_path), parts)
    assert first.load() is None and first.lock(5)
    got: dict = {}
    told: list = []

    def second():
        c = ReferenceTimingCache(str(tmp_path), parts)
        got["locked"] = c.lock(30, on_wait=lambda: told.append(1))
        got["entry"] = c.load()
        c.unlock()

    th = threading.Thread(target=second)
    th.start()
    time.sleep(0.2)
    assert "locked" not in got  # still waiting
    rec = [{"sig": ["noise", "reference"], "value": {"us": 1.0}}]
    assert first.store(rec) is not None
    first.unlock()
    th.join(30)
    assert got["locked"] and got["entry"]["records"] == rec
    assert told == [1]  # said once that it waits
    assert ReferenceTimingCache(str(tmp_path), parts).lock(0.1, on_wait=lambda: got.update(free=True))
    assert "free" not in got  # a free lock: nothing to say
    assert timing_key({"a": 1}) != timing_key({"a": 2})


def test_the_verdict_says_the_reference_time_was_cached_and_its_age():
    assert reference_time_cached({"timing": {"reference_timing": {"source": "measured"}}}) is None
    assert reference_time_cached({"timing": None}) is None and reference_time_cached("x") is None
    words = reference_time_cached({"timing": {"reference_timing": {"source": "cache", "age_s": 150.0}}})
    assert words == "reference time from the cache, measured 2 min earlier"
    assert "age unknown" in reference_time_cached({"timing": {"reference_timing": {"source": "cache", "age_s": "x"}}})


# ---- the real judge on the CPU ----------------------------------------------------------------------
RELU = textwrap.dedent("""
    import torch, torch.nn as nn
    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.relu(x)
""")
CLAMP = RELU.replace("torch.relu(x)", "torch.clamp(x, min=0)")
# a kernel that is right, and from inside its forward (the timed calls too) tries to read the
# reference-timing entries (it raises if it can see one: it would then fail) and to change them or
# plant its own (what would make the next kernel's speedup its choice)
HOSTILE = textwrap.dedent("""
    import glob, json, os, torch, torch.nn as nn
    ROOT = {root!r}
    class ModelNew(nn.Module):
        def forward(self, x):
            seen = glob.glob(os.path.join(ROOT, "**", "*"), recursive=True)
            if seen:
                raise RuntimeError("the reference cache is visible: " + seen[0])
            for p in [os.path.join(ROOT, "timing", "planted.json")] + seen:
                try:
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    with open(p, "w") as fh:
                        json.dump({{"records": [], "measured_at": 0}}, fh)
                except OSError:
                    pass
            return torch.relu(x)
""")


def _judge(tmp_path, code, refroot):
    from ktui.engine.pipeline import judge

    return judge({"kernel_code": code, "reference_source": REF, "device": "cpu", "trials": 3, "run_timeout": 300,
                  "compile_timeout": 300, "lock_dir": str(tmp_path / "locks"),
                  "build_root": str(tmp_path / "cache" / "build"), "checks": False, "input_seed": 24680,
                  "ref_cache": refroot})


def _ref_timing_ops(res):
    ops = (res.get("worker_ops") or {}).get("reference") or {}
    return ops.get("time", 0) + ops.get("wall", 0)


def _snapshot(root):
    return {str(p): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@torch_missing
@pytest.mark.timeout(900)
def test_real_judges_time_the_reference_once_and_a_candidate_cannot_reach_the_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "cache" / "refcache"
    first = _judge(tmp_path, RELU, str(root))
    assert first["status"] == "completed", first.get("failure")
    assert first["timing"]["reference_timing"]["source"] == "measured" and _ref_timing_ops(first) >= 2
    entries = list((root / "timing").rglob("*.json"))
    assert len(entries) == 1
    before = _snapshot(root / "timing")
    second = _judge(tmp_path, CLAMP, str(root))
    assert second["status"] == "completed", second.get("failure")
    assert _ref_timing_ops(second) == 0  # not one timing request to the reference
    assert second["timing"]["reference"] == first["timing"]["reference"]
    assert second["timing"]["reference_timing"]["source"] == "cache"
    assert "reference time from the cache, measured" in reference_time_cached(second)
    assert second["worker_ops"]["candidate"]["time"] >= 1  # the kernel itself is timed as always
    bad = _judge(tmp_path, HOSTILE.format(root=str(root)), str(root))
    assert bad["status"] == "completed" and bad["correctness"]["passed"], bad.get("failure")  # it saw nothing
    assert bad["timing"]["reference_timing"]["source"] == "cache" and _ref_timing_ops(bad) == 0
    assert _snapshot(root / "timing") == before  # nothing changed, nothing planted
    monkeypatch.setattr(reftime, "cpu_state", lambda: {"model": "another CPU model", "cpus": 96})
    other = _judge(tmp_path, CLAMP, str(root))
    assert other["timing"]["reference_timing"]["source"] == "measured" and _ref_timing_ops(other) >= 2
    assert len(list((root / "timing").rglob("*.json"))) == 2


@torch_missing
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("pipeline", [True, False], ids=["pipeline-on", "pipeline-off"])
def test_a_sweep_times_the_reference_once_and_a_rerun_not_again(tmp_path, monkeypatch, pipeline):
    """``ktui verify``'s engine with the real build and judge steps: two kernels of one problem time
    the reference once between them (the pipeline on: both judges at once), a re-run with a new
    kernel of the problem (a resumed or grown sweep: the problem's kept seed) not at all; the
    events (``--events``) say where each kernel's reference time came from."""
    from ktui.engine import sha1_text
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as eng_mod
    from ktui.repro.verify.plan import Job

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    opts = ReproOptions(device="cpu", trials=3, timeout=300.0)

    def job(code):
        k = sha1_text(code)
        return Job(key=k, kernel_sha1=k, reference_sha1=sha1_text(REF), kernel_code=code, reference_source=REF,
                   reference_origin="test", label="v1", trace="t", result_key="r" + k)

    def sweep(codes):
        eng = eng_mod.LocalEngine(opts, slots=[eng_mod.Slot("cpu0", {})], jobs=1, pipeline=pipeline)
        eng.run([job(c) for c in codes])
        assert eng.errors == [] and len(eng.results) == len(codes)
        for r in eng.results.values():
            assert r["status"] == "completed", r.get("failure")
        return eng

    eng = sweep([RELU, CLAMP])
    ops = sorted(_ref_timing_ops(r) for r in eng.results.values())
    assert ops[0] == 0 and ops[1] >= 2, ops  # one judge timed the reference, the other replayed it
    evs = [e for e in eng.events if e.kind == eng_mod.REFERENCE_TIME]
    assert sorted(e.detail.split(",")[0].split(" (")[0] for e in evs) == ["cache", "measured"]
    refs = {json.dumps(r["timing"]["reference"], sort_keys=True) for r in eng.results.values()}
    assert len(refs) == 1
    again = sweep([RELU.replace("torch.relu(x)", "x.clamp_min(0.0)")])
    [r] = again.results.values()
    assert _ref_timing_ops(r) == 0 and r["timing"]["reference_timing"]["source"] == "cache"
    assert json.dumps(r["timing"]["reference"], sort_keys=True) in refs
    assert os.listdir(tmp_path / "cache" / "refcache" / "seeds") == [sha1_text(REF) + ".json"]


def test_after_runs_once_the_window_is_given_up_before_the_outer_hold_is_taken_again(tmp_path):
    """The cache write (and the letting go of its lock) happens out of the timing window and before
    the judge waits for the device again: a second judge in its own window waiting on that lock
    must never wait for the first to get the device back (120 s lost on the CPU before this)."""
    from ktui.engine.devicelock import ALONE, SHARED, DeviceWindows

    w = DeviceWindows(str(tmp_path), "cpu")
    seen = []
    with w.window(SHARED, "outer"):
        with w.window(ALONE, "timing", after=lambda: seen.append(w.mode)):
            assert w.mode == ALONE
        assert w.mode == SHARED
    with w.window(ALONE, "a"):
        with w.window(ALONE, "nested", after=lambda: seen.append("nested")):
            pass
    assert seen == [None, "nested"]
    w.close()
