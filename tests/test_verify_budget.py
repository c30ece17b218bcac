"""How `ktui verify` shares a machine's cores between a sweep's builds and the judges (issue 23).

On the H200 (16 cores, session 34) the pipeline on was slower than off: 15 builds at once, the
first ones with MAX_JOBS 16, 8, 5, 4... (each its share of the cores as it started, kept while
later builds piled up), beside two judges whose processes each ran torch's intra-op pool of one
thread per core. Now: cores are kept for the judges in flight, the builds' MAX_JOBS never add up
to more than the compilers budget, builds run two compilers each (fewer at once, each landing
sooner), a build runs one torch thread, and a judge on a GPU slot gets the threads the compilers
in flight leave, shared by the judges in flight."""

from __future__ import annotations

import threading
import time

import pytest

from ktui.repro.verify import steps


def test_the_budget_keeps_cores_for_the_judges():
    gib = 1 << 30
    assert steps.compilers_budget(cores=16, mem=128 * gib) == 16  # no judge: every core
    assert steps.compilers_budget(cores=16, mem=128 * gib, judges=2) == 12  # one GPU, pipeline on
    assert steps.compilers_budget(cores=16, mem=128 * gib, judges=1) == 14  # pipeline off
    assert steps.compilers_budget(cores=16, mem=128 * gib, judges=16) == 8  # half the cores at most
    assert steps.compilers_budget(cores=16, mem=6 * gib, judges=2) == 3  # the memory's limit
    assert steps.compilers_budget(cores=2, mem=8 * gib, judges=2) == 1
    assert steps.builders_for(12) == 6 and steps.builders_for(1) == 1


def test_max_jobs_never_add_up_past_the_budget():
    budget, builders = 12, 6
    # a long queue: every build its share among the builds that run beside it
    assert steps.max_jobs_for(budget, 1, waiting=30, used_by_others=0, builders=builders) == 2
    # builds starting one after another at a sweep's start: never more than the budget in all
    used = 0
    for i in range(builders):
        mj = steps.max_jobs_for(budget, i + 1, waiting=30 - i, used_by_others=used, builders=builders)
        used += mj
    assert used <= budget
    # the last build of the sweep, alone: what the others left
    assert steps.max_jobs_for(budget, 1, waiting=0, used_by_others=0, builders=builders) == 12
    assert steps.max_jobs_for(budget, 2, waiting=0, used_by_others=10, builders=builders) == 2
    assert steps.max_jobs_for(budget, 3, waiting=0, used_by_others=12, builders=builders) == 1  # at least one


def test_judge_threads_are_what_the_compilers_leave():
    assert steps.judge_threads(16, 2, 12) == 2
    assert steps.judge_threads(16, 2, 0) == 8  # builds done: the cores shared by the two judges
    assert steps.judge_threads(16, 1, 0) == 16
    assert steps.judge_threads(2, 2, 1) == 1


class _Job:
    def __init__(self, i):
        self.key = f"job{i}"
        self.label = f"v{i}"
        self.kernel_code = "from torch.utils.cpp_extension import load_inline"  # a build step
        self.kernel_sha1 = f"{i:040d}"
        self.result_key = f"rk{i}"
        self.trace = "t"
        self.reference_sha1 = None


def test_the_engine_shares_the_cores(tmp_path, monkeypatch):
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as eng_mod

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MAX_JOBS", raising=False)
    monkeypatch.setattr(eng_mod.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(steps.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(steps, "mem_available", lambda: 128 << 30)
    monkeypatch.setattr(eng_mod.Recorder, "finish", lambda self, job, result, slot, stopping:
                        self.results.__setitem__(job.key, result))
    lock = threading.Lock()
    state = {"now": 0, "max": 0, "builds_at_once": 0, "max_builds": 0}
    build_envs, judge_envs = [], []

    def build_fn(job, options, *, build_root, env_extra=None, cancel=None):
        mj = int(env_extra["MAX_JOBS"])
        with lock:
            build_envs.append(dict(env_extra))
            state["now"] += mj
            state["builds_at_once"] += 1
            state["max"] = max(state["max"], state["now"])
            state["max_builds"] = max(state["max_builds"], state["builds_at_once"])
        time.sleep(0.05)
        with lock:
            state["now"] -= mj
            state["builds_at_once"] -= 1
        t = time.time()
        return steps.BuildResult(True, {}, 0.05, t, t, build={})

    def judge_fn(job, options, *, build_root, env_extra=None, cancel=None):
        with lock:
            judge_envs.append(dict(env_extra or {}))
        return {"status": "completed", "stages": {}}

    eng = eng_mod.LocalEngine(ReproOptions(device="cuda"), slots=[eng_mod.Slot("gpu0", {"CUDA_VISIBLE_DEVICES": "0"},
                                                                             gpu="0")],
                              build_root=str(tmp_path / "b"), build_fn=build_fn, judge_fn=judge_fn, pipeline=True)
    assert eng._budget == 12 and eng.jobs == 6
    eng.run(_Job(i) for i in range(20))
    assert eng.errors == [] and len(eng.results) == 20
    assert state["max"] <= 12, state  # never more compilers than the budget
    assert state["max_builds"] <= 6, state
    assert all(e["OMP_NUM_THREADS"] == "1" and e["KTUI_WORKER_NICE"] == steps.BUILD_NICE for e in build_envs)
    assert max(int(e["MAX_JOBS"]) for e in build_envs) <= 12
    threads = [int(e["OMP_NUM_THREADS"]) for e in judge_envs]
    assert len(threads) == 20 and all(1 <= t <= 8 for t in threads), threads  # 16 cores, two judges at most
    assert all(e["CUDA_VISIBLE_DEVICES"] == "0" for e in judge_envs)


def test_a_cpu_slot_keeps_the_threads_it_has(tmp_path, monkeypatch):
    # on the CPU the threads are the device's (its timings depend on them): not set by the engine
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as eng_mod

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    eng = eng_mod.LocalEngine(ReproOptions(device="cpu"), slots=[eng_mod.Slot("cpu0", {})],
                              build_root=str(tmp_path / "b"), judge_fn=lambda *a, **k: {})
    assert "OMP_NUM_THREADS" not in eng._judge_env(eng.slots[0])


@pytest.mark.parametrize("user", ["3"])
def test_the_users_settings_win(tmp_path, monkeypatch, user):
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as eng_mod

    monkeypatch.setenv("OMP_NUM_THREADS", user)
    eng = eng_mod.LocalEngine(ReproOptions(device="cuda"), slots=[eng_mod.Slot("gpu0", {}, gpu="0")],
                              build_root=str(tmp_path / "b"), judge_fn=lambda *a, **k: {})
    assert "OMP_NUM_THREADS" not in eng._judge_env(eng.slots[0])  # the judge inherits the user's
    assert "OMP_NUM_THREADS" not in steps.build_env()


def _bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_verify.py"
    spec = importlib.util.spec_from_file_location("bench_verify_for_budget_test", path)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_where_a_builds_time_goes():
    # the build step's judge result, as a real build-only run returns it (its stop at the reference)
    res = {"status": "failed", "failure": {"stage": "reference", "kind": "no_reference"},
           "stages": {"startup": {"state": "done", "seconds": 12.0}, "build": {"state": "done", "seconds": 40.0},
                      "reference": {"state": "failed", "seconds": 0.0}},
           "startup": {"import_torch_s": 6.0, "device_init_s": 3.5},
           "worker_seconds": {"candidate": {"hello": 8.0, "setup": 4.0, "build": 39.0}}}
    build = {"cached": False, "cache": {"stored": True, "seconds": 0.5},
             "extensions": [{"name": "e", "seconds": 38.0, "steps": [{"output": "e.cuda.o", "seconds": 25.0},
                                                                     {"output": "main.o", "seconds": 9.0},
                                                                     {"output": "e.so", "seconds": 1.0}]}]}
    br = steps.BuildResult(True, res, 55.0, 0.0, 55.0, build=build)
    ph = steps.build_phases(br)
    assert ph["stages"] == {"startup": 12.0, "build": 40.0, "reference": 0.0}
    assert ph["startup"] == {"import_torch_s": 6.0, "device_init_s": 3.5} and ph["publish_s"] == 0.5
    assert ph["worker_seconds"]["build"] == 39.0
    rec = {"seconds": 55.0, "cached": False, "max_jobs": 2, "extensions": build["extensions"], **ph}
    f = _bench().build_figures({"k": rec, "old": {"seconds": 9.0, "cached": True, "max_jobs": 1}})
    p = f["phases_s"]
    assert p["builds"] == 1 and p["judge process (wall less its stages)"] == 3.0
    assert p["worker startup stage"] == 12.0 and p["  of which torch import"] == 6.0
    assert p["ninja steps"] == 35.0 and p["load_inline less ninja"] == 3.0
    assert p["copy into the build cache"] == 0.5 and p["build stage, rest (module run)"] == 1.5
    assert f["max_jobs"] == {"1": 1, "2": 1} and f["outside_ninja_s"] == 20.0


def test_the_benchmark_counts_the_slots_time_once_and_the_waits_apart():
    ev = {"timings": {
        "a": {"stages": {"timing": {"seconds": 2.0}, "checks": {"seconds": 10.0}}, "verify": {"started": 0.0, "ended": 14.0},
              "device_windows": [{"kind": "shared", "start": 1.0, "end": 2.0, "waited_s": 4.0}],
              "probes": {"p": {"seconds": 5.0, "waited_s": 4.0}}},
        "b": {"stages": {"timing": {"seconds": 2.0}, "checks": {"seconds": 6.0}}, "verify": {"started": 4.0, "ended": 20.0},
              "device_windows": [], "probes": {"p": {"seconds": 1.0, "waited_s": 0.0}}}}}
    f = _bench().pipeline_figures({"runs": []}, ev, 30.0)
    assert f["slot_busy_s"] == 20.0 and f["slot_per_kernel_past_timing_s"] == 8.0  # 20 s / 2 kernels - 2 s
    assert f["device_waits_s"] == 4.0 and f["slot_beyond_timing_own_s"]["max"] == 4.0 and f["slot_beyond_timing_s"]["max"] == 8.0
    assert f["probe_waits_s"] == {"p": 4.0}


TRITON_KERNEL = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_scale_kernel(a_ptr, b_ptr, c_ptr, N, M, BLOCK_M: tl.constexpr):
    pass
'''  # the head of KernelBench's triton_runs/level1_triton/kernels/level1_problem12_triton.py (MIT)


def test_a_triton_kernel_has_nothing_to_build_ahead():
    # Triton compiles at the first call (the judge's warm-up): a build step only imported torch
    assert not steps.needs_build(TRITON_KERNEL)
    assert not steps.needs_build("import torch\n@torch.jit.script\ndef f(x): return x\n")
    assert steps.needs_build(TRITON_KERNEL + "from torch.utils.cpp_extension import load_inline\n")
    assert steps.needs_build("import cupy\n")
    assert steps.needs_build("from torch.utils.cpp_extension import load_inline\n")


def test_the_engine_sends_a_triton_kernel_straight_to_its_slot(tmp_path, monkeypatch):
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as eng_mod

    monkeypatch.setattr(eng_mod.Recorder, "finish", lambda self, job, result, slot, stopping:
                        self.results.__setitem__(job.key, result))
    built = []

    def build_fn(job, options, **kw):
        built.append(job.key)
        t = time.time()
        return steps.BuildResult(True, {}, 0.0, t, t, build={})

    jobs = [_Job(0), _Job(1)]
    jobs[1].kernel_code = TRITON_KERNEL
    eng = eng_mod.LocalEngine(ReproOptions(device="cuda"), slots=[eng_mod.Slot("gpu0", {}, gpu="0")],
                              build_root=str(tmp_path / "b"), build_fn=build_fn,
                              judge_fn=lambda *a, **k: {"status": "completed"}, pipeline=False)
    eng.run(iter(jobs))
    assert built == ["job0"] and set(eng.results) == {"job0", "job1"}
    assert eng.rec.builds["job1"] == {"seconds": 0.0, "skipped": True, "ok": True}
