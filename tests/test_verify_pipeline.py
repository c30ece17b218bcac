"""The pipeline per device (issue 23): while kernel k is timed, kernel k+1's judge starts; only the
timing windows have the device alone; host work (comparisons) never runs inside them; probes run in
the windows they declare and report their cost.

The engine tests use fake judges whose stages take the real device lock (ktui.engine.devicelock):
deterministic (events, not sleeps, decide the order). One test runs the real judge on the CPU."""

from __future__ import annotations

import textwrap
import threading
import time

import pytest
from conftest import needs
from standins import RELU_REFERENCE as REF

from ktui.engine.devicelock import ALONE, SHARED, DeviceWindows, busy_seconds

torch_missing = needs("torch")


def _overlap(a, b):
    return a[0] < b[1] and b[0] < a[1]


class FakeJudges:
    """A judge_fn for LocalEngine: startup (no device), correctness (shared), timing (alone), a
    comparison (host work, no device); every window and span recorded with its job."""

    def __init__(self, lock_dir, n, wait_for_next=True):
        self.lock_dir = str(lock_dir)
        self.n = n
        self.lock = threading.Lock()
        self.spans = []  # (job, what, kind, start, end)
        self.timing = threading.Event()  # set while some job is in its timing window
        self.next_started = threading.Event()  # a startup ran during the current timing window
        self.overlapped = 0
        self.wait_for_next = wait_for_next

    def _span(self, job, what, kind, t0):
        with self.lock:
            self.spans.append((job, what, kind, t0, time.monotonic()))

    def __call__(self, job, options, *, build_root, env_extra=None, cancel=None):
        i = int(job.key[3:])
        w = DeviceWindows(self.lock_dir, "cuda:0")
        try:
            t0 = time.monotonic()
            if self.wait_for_next and i > 0:
                assert self.timing.wait(20), "no kernel was being timed while this one started"
                self.overlapped += 1
                t0 = time.monotonic()  # the startup itself: inside the other kernel's timing window
                self.next_started.set()
            self._span(job.key, "startup", "none", t0)
            with w.window(SHARED, "correctness"):
                t0 = time.monotonic()
                time.sleep(0.01)
                self._span(job.key, "correctness", SHARED, t0)
            with w.window(ALONE, "timing"):
                t0 = time.monotonic()
                self.next_started.clear()
                self.timing.set()
                if self.wait_for_next and i < self.n - 1:
                    assert self.next_started.wait(20), "the next kernel did not start while this one was timed"
                self.timing.clear()
                self._span(job.key, "timing", ALONE, t0)
            t0 = time.monotonic()
            time.sleep(0.005)  # the judge's comparison of the checked outputs: after the window
            self._span(job.key, "compare", "none", t0)
            return {"status": "completed", "stages": {"timing": {"state": "done", "seconds": 0.5}},
                    "probes": {"fake_probe": {"device": "shared", "seconds": 0.25}}, "device_windows": w.records}
        finally:
            w.close()


class FakeJob:
    def __init__(self, i):
        self.key = f"job{i}"
        self.label = f"v{i}"
        self.kernel_code = "class ModelNew: pass"
        self.kernel_sha1 = f"{i:040d}"
        self.result_key = f"rk{i}"
        self.trace = "t"
        self.reference_sha1 = None


def _engine(tmp_path, fake, pipeline, monkeypatch):
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as eng_mod

    monkeypatch.setattr(eng_mod.Recorder, "finish", lambda self, job, result, slot, stopping:
                        self.results.__setitem__(job.key, result))
    eng = eng_mod.LocalEngine(ReproOptions(device="cpu"), slots=[eng_mod.Slot("gpu0", {}, gpu="0")], jobs=1,
                              build_root=str(tmp_path / "b"), judge_fn=fake, skip_trivial=True, pipeline=pipeline)
    return eng


def test_next_kernel_starts_while_one_is_timed_and_timing_is_alone(tmp_path, monkeypatch):
    fake = FakeJudges(tmp_path / "locks", 4)
    eng = _engine(tmp_path, fake, True, monkeypatch)
    eng.run(FakeJob(i) for i in range(4))
    assert eng.errors == [] and len(eng.results) == 4
    from ktui.repro.verify.engine import PROBE, STAGE

    # each stage's and each probe's cost is an event (``ktui verify --events``)
    probes = [e for e in eng.events if e.kind == PROBE]
    assert sorted(e.job for e in probes) == [f"job{i}" for i in range(4)]
    assert all(e.detail == "fake_probe" and e.seconds == 0.25 for e in probes)
    assert len([e for e in eng.events if e.kind == STAGE and e.detail == "timing"]) == 4
    assert fake.overlapped == 3  # kernels 1..3 each started while the one before was timed
    spans = fake.spans
    alone = [s for s in spans if s[2] == ALONE]
    assert len(alone) == 4
    # overlap: some job's startup fell inside another job's timing window (the pipeline at work)
    starts = [s for s in spans if s[1] == "startup"]
    assert any(s[0] != a[0] and a[3] <= s[3] <= a[4] for s in starts for a in alone)
    for a in alone:
        for s in spans:
            if s is a:
                continue
            if s[2] in (SHARED, ALONE):  # no other device work while one has the device alone
                assert not _overlap((a[3], a[4]), (s[3], s[4])), (a, s)
            if s[1] == "compare":  # and no host work of any judge inside a timing window
                assert not _overlap((a[3], a[4]), (s[3], s[4])) or s[0] != a[0], (a, s)
    # the judge's own comparisons never inside its own timing windows
    for a in alone:
        own = [s for s in spans if s[0] == a[0] and s[1] == "compare"]
        assert own and all(s[3] >= a[4] for s in own)


def test_pipeline_off_runs_one_judge_per_slot(tmp_path, monkeypatch):
    fake = FakeJudges(tmp_path / "locks", 3, wait_for_next=False)
    eng = _engine(tmp_path, fake, False, monkeypatch)
    eng.run(FakeJob(i) for i in range(3))
    assert eng.errors == []
    by_job = {}
    for job, _what, _kind, a, b in fake.spans:
        lo, hi = by_job.get(job, (a, b))
        by_job[job] = (min(lo, a), max(hi, b))
    spans = sorted(by_job.values())
    assert len(spans) == 3
    assert all(not _overlap(spans[i], spans[i + 1]) for i in range(len(spans) - 1))


def test_a_judge_waiting_to_be_alone_is_not_starved_by_shared_windows(tmp_path):
    """Writer first: once a judge waits to time, no new shared window starts (else two judges that
    hold the device shared in turn would keep the timing waiting for ever)."""
    lock_dir = str(tmp_path)
    a, b, c = (DeviceWindows(lock_dir, "cpu") for _ in range(3))
    order = []
    b_waiting = threading.Event()
    b.on_wait = lambda kind: b_waiting.set()
    a_ctx = a.window(SHARED, "a")
    a_ctx.__enter__()

    def run_b():
        with b.window(ALONE, "b"):
            order.append("b")

    def run_c():
        with c.window(SHARED, "c"):
            order.append("c")

    tb = threading.Thread(target=run_b)
    tb.start()
    assert b_waiting.wait(20)
    tc = threading.Thread(target=run_c)
    tc.start()
    a_ctx.__exit__(None, None, None)
    tb.join(20)
    tc.join(20)
    assert order == ["b", "c"]
    for w in (a, b, c):
        w.close()


def test_windows_upgrade_and_record(tmp_path):
    w = DeviceWindows(str(tmp_path), "cpu")
    with w.window(SHARED, "outer"):
        with w.window(ALONE, "inner"):
            assert w.mode == ALONE
        assert w.mode == SHARED
    assert [r["kind"] for r in w.records] == [ALONE, SHARED]
    assert busy_seconds(w.records) >= 0.0 and busy_seconds([]) == 0.0
    w.close()


WRONG = textwrap.dedent("""
    import torch, torch.nn as nn
    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 3.0
""")
RIGHT = textwrap.dedent("""
    import torch, torch.nn as nn
    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.relu(x)
""")


@torch_missing
@pytest.mark.timeout(900)
def test_real_judge_windows_probe_costs_and_failing_kernels(tmp_path, monkeypatch):
    """The real judge on the CPU: the timing stage and the timed probes have the device alone and no
    comparison of the judge's runs inside those windows; every probe's cost is in the result and an
    event; a kernel that fails correctness gets its failing evidence (the on_failure probes) only."""
    from concurrent.futures import ThreadPoolExecutor

    from ktui.engine.pipeline import judge
    from ktui.engine.probes import NEEDS, ON_FAILURE, load_all

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    load_all()

    def one(code):
        events = []
        res = judge({"kernel_code": code, "reference_source": REF, "device": "cpu", "trials": 3,
                     "run_timeout": 300, "compile_timeout": 300, "lock_dir": str(tmp_path / "locks"),
                     "build_root": str(tmp_path / "cache" / "build")}, emit=events.append)
        return res, [e for e in events if e.get("event") == "probe"]

    with ThreadPoolExecutor(2) as pool:
        (good, good_ev), (bad, bad_ev) = pool.map(one, [RIGHT, WRONG])
    assert good["status"] == "completed" and good["correctness"]["passed"], good.get("failure")
    alone = [(w["start"], w["end"]) for w in good["device_windows"] if w["kind"] == ALONE]
    assert any(w["what"] == "timing" for w in good["device_windows"] if w["kind"] == ALONE)
    compares = good.get("compare_spans") or []
    assert compares  # the judge compared (correctness, the checked wall-clock pass, probes)
    assert not [c for c in compares for a in alone if _overlap(c, a)]
    assert set(good["probes"]) == {n for n in NEEDS} and all(
        isinstance(p["seconds"], float) and p["device"] in ("none", "shared", "alone") for p in good["probes"].values())
    assert {e["name"] for e in good_ev} == set(good["probes"]) and all("seconds" in e for e in good_ev)
    # the two judges' timing windows never overlapped each other's device work
    bad_dev = [(w["start"], w["end"]) for w in bad.get("device_windows") or [] if w["kind"] == ALONE]
    assert not [1 for a in alone for b in bad_dev if _overlap(a, b)]
    # the failing kernel: its evidence, nothing more (no timing, no other probe)
    assert bad["correctness"]["passed"] is False and bad["timing"] is None
    assert set(bad["probes"]) == set(ON_FAILURE) and {e["name"] for e in bad_ev} == set(ON_FAILURE)
    assert "timing" not in bad["stages"]


HOSTILE = textwrap.dedent("""
    import os, glob, torch, torch.nn as nn
    TARGET = {target!r}
    class ModelNew(nn.Module):
        def forward(self, x):
            # what a kernel would do to make a later kernel's reference answer its own: overwrite the
            # reference cache's entries, or plant new ones, then change its inputs in place
            for p in glob.glob(os.path.join(TARGET, "**", "*"), recursive=True):
                try:
                    if os.path.isfile(p):
                        torch.save({{"digest": "x", "outputs": [torch.zeros(64, 64)]}}, p)
                except Exception:
                    pass
            try:
                os.makedirs(TARGET, exist_ok=True)
                open(os.path.join(TARGET, "planted.pt"), "wb").write(b"x")
            except Exception:
                pass
            y = torch.relu(x) * 3.0
            x.zero_()
            return y
""")


@torch_missing
@pytest.mark.timeout(900)
def test_reference_outputs_shared_and_out_of_a_candidates_reach(tmp_path, monkeypatch):
    """Kernels of one problem judged on one secret input seed get the reference's outputs from the
    reference cache after the first; a hostile kernel that tries to overwrite or plant entries
    changes nothing (the cache's directory is masked from every worker), is judged wrong itself,
    and the next honest kernel is judged against the reference's true outputs."""
    import hashlib

    from ktui.engine.pipeline import judge

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    refcache = str(tmp_path / "cache" / "refcache")

    def one(code):
        return judge({"kernel_code": code, "reference_source": REF, "device": "cpu", "trials": 3,
                      "run_timeout": 300, "compile_timeout": 300, "lock_dir": str(tmp_path / "locks"),
                      "build_root": str(tmp_path / "cache" / "build"), "checks": False,
                      "input_seed": 987654, "ref_cache": refcache})

    def snapshot():
        out = {}
        for p in sorted((tmp_path / "cache" / "refcache").rglob("*")):
            if p.is_file():
                out[str(p)] = hashlib.sha1(p.read_bytes()).hexdigest()
        return out

    first = one(RIGHT)
    assert first["correctness"]["passed"], first.get("failure")
    assert first["reference_cache"]["stored"] >= 7 and first["reference_cache"]["hits"] == 0
    before = snapshot()
    assert before
    bad = one(HOSTILE.format(target=refcache))
    assert bad["correctness"]["passed"] is False  # 3x relu: wrong against the cached reference outputs
    assert bad["reference_cache"]["hits"] >= 1
    assert snapshot() == before  # nothing overwritten, nothing planted
    again = one(RIGHT)
    assert again["correctness"]["passed"], again.get("failure")
    assert again["reference_cache"]["hits"] >= 7 and again["reference_cache"]["rejected"] == 0
    assert again["correctness"]["seeds"] == first["correctness"]["seeds"]


OOM_BY_OTHERS = ("CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 139.80 GiB of "
                 "which 318.69 MiB is free. Including non-PyTorch memory, this process has 32.11 GiB memory in use.")


def test_a_kernel_that_ran_out_of_memory_beside_others_is_judged_again_alone(tmp_path, monkeypatch):
    """H200, 2026-12-05: two kernels of real KernelBench sizes in flight on one GPU ran it out of
    memory; the one that asked last was called "not reproducible". Now such a result is judged
    again, once, with no other kernel's judge on the slot."""
    lock = threading.Lock()
    inflight, calls = set(), []
    started1, first0_done = threading.Event(), threading.Event()

    def fake(job, options, *, build_root, env_extra=None, cancel=None):
        with lock:
            inflight.add(job.key)
            calls.append((job.key, frozenset(inflight)))
            n0 = sum(1 for k, _ in calls if k == "job0")
        try:
            if job.key == "job1":
                started1.set()
                assert first0_done.wait(20)
                time.sleep(0.5)  # still in flight when job0's retry would start without the gate
                return {"status": "completed"}
            if n0 == 1:
                assert started1.wait(20)
                first0_done.set()
                return {"status": "failed", "failure": {"kind": "oom", "stage": "correctness",
                                                        "message": OOM_BY_OTHERS}}
            return {"status": "completed"}
        finally:
            with lock:
                inflight.discard(job.key)

    eng = _engine(tmp_path, fake, True, monkeypatch)
    eng.run(FakeJob(i) for i in range(2))
    assert eng.errors == []
    job0 = [others for k, others in calls if k == "job0"]
    assert len(job0) == 2  # the first ended while job1 was in flight (it waited for job1 to start)
    assert job0[1] == frozenset({"job0"}), calls  # the retry had the slot alone
    assert eng.results["job0"]["status"] == "completed"
    assert "retried_alone" in eng.results["job0"]["verify"]


def test_no_retry_without_the_pipeline_or_for_the_kernels_own_demand(tmp_path, monkeypatch):
    n = []
    own = OOM_BY_OTHERS.replace("this process has 32.11 GiB", "this process has 139.00 GiB")

    def fake(job, options, *, build_root, env_extra=None, cancel=None):
        n.append(job.key)
        msg = OOM_BY_OTHERS if job.key == "job0" else own
        return {"status": "failed", "failure": {"kind": "oom", "stage": "correctness", "message": msg}}

    eng = _engine(tmp_path, fake, False, monkeypatch)  # one kernel at a time: nothing else held it
    eng.run(FakeJob(i) for i in range(2))
    eng2 = _engine(tmp_path, fake, True, monkeypatch)
    eng2.run([FakeJob(1)])  # the kernel's own demand: a judgement, not retried
    assert sorted(n) == ["job0", "job1", "job1"]
