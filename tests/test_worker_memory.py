"""The workers' host-memory limit: a reference over it is the problem's size against ktui's limit
(not judged here, and how to get it judged), never a broken judge; KTUI_WORKER_MEMORY_GB raises
(or lowers) it, carried in the engine job's ``memory_limit``, capped by the host's memory."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ktui import settings
from ktui.engine import sandbox
from ktui.engine.job import Job as EngineJob
from ktui.repro import cache
from ktui.repro.api import ReproOptions, make_request
from ktui.repro.judging.outcome import HOST_MEMORY, unjudged
from ktui.repro.verdict import HARNESS_ERROR, NOT_JUDGED
from ktui.repro.verify.plan import Job as PlanJob

GIB = 1 << 30
GPU_ENV = {"device": "cuda:0", "gpu": "NVIDIA H200", "cuda": "12.8"}


def failed(kind: str, message: str, stage: str = "correctness") -> dict:
    return {"status": "failed", "failure": {"stage": stage, "kind": kind, "message": message, "trial": 1},
            "environment": GPU_ENV, "checks": [], "notes": [], "stages": {}}


# the engine's words (workers.py _death) for a reference worker the sandbox's watchdog ended, as on the H200
OVER = ("the reference used 16.1 GiB of host memory (limit 16.0 GiB; memfds and shared memory 3.2 GiB of it) "
        "during correctness trial 1 (worker ended)")


def test_a_reference_over_the_host_memory_limit_is_not_judged_here_and_says_how():
    u = unjudged(failed("reference_error", OVER))
    assert u is not None and u.verdict == NOT_JUDGED and u.why == HOST_MEMORY, u
    assert "16.1 GiB" in u.reason and "KTUI_WORKER_MEMORY_GB" in u.reason and "to judge it" in u.reason
    assert "harness error" not in u.reason
    assert not cache.cacheable(failed("reference_error", OVER))  # judged again once the limit is raised


def test_other_reference_failures_stay_harness_errors_and_the_kernel_over_the_limit_stays_judged():
    for msg in ("boom", "the reference raised MemoryError", "the reference's worker sent an output that is not a "
                "tensor: used 16.1 GiB of host memory (limit 16.0 GiB"):
        u = unjudged(failed("reference_error", msg))
        assert u is not None and u.verdict == HARNESS_ERROR, msg
    # the candidate's own breach is the kernel's (a kind of its own, judged)
    assert unjudged(failed("memory_limit", OVER.replace("reference", "candidate"))) is None


@pytest.mark.parametrize("value,expected", [("48", 48 * GIB), ("0.5", GIB // 2), (" 20 ", 20 * GIB), ("", None),
                                            ("0", None), ("-3", None), ("inf", None), ("nan", None), ("lots", None)])
def test_the_setting(value, expected, tmp_path):
    s = settings.Settings.from_env({"HOME": str(tmp_path), "KTUI_WORKER_MEMORY_GB": value})
    assert s.worker_memory_bytes == expected


def _kv():
    return SimpleNamespace(code="def f(x):\n    return x\n", sha1="ab" * 20, label="v1")


def test_the_setting_reaches_the_engine_job(monkeypatch):
    monkeypatch.setenv("KTUI_WORKER_MEMORY_GB", "40")
    req = make_request(_kv(), ReproOptions(device="cpu"), "REF", "test")
    assert req["memory_limit"] == 40 * GIB
    assert EngineJob.from_request(req).memory_limit == 40 * GIB
    pj = PlanJob(key="k", kernel_sha1="ab" * 20, reference_sha1=None, kernel_code="x = 1\n", reference_source="R",
                 reference_origin="test", label="v1", trace="t", result_key="r")
    preq = pj.request(ReproOptions(device="cpu"), "/tmp/b")
    assert preq["memory_limit"] == 40 * GIB
    assert EngineJob.from_request(preq).memory_limit == 40 * GIB
    monkeypatch.delenv("KTUI_WORKER_MEMORY_GB")
    assert "memory_limit" not in make_request(_kv(), ReproOptions(device="cpu"), "REF", "test")
    assert "memory_limit" not in pj.request(ReproOptions(device="cpu"), "/tmp/b")
    assert EngineJob.from_request(make_request(_kv(), ReproOptions(device="cpu"), "REF", "t")).memory_limit is None


def test_the_limit_is_capped_by_the_host_memory(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "host_memory", lambda: (100 * GIB, 128 * GIB))
    assert sandbox.worker_memory_limit(40 * GIB) == 40 * GIB
    assert sandbox.worker_memory_limit(500 * GIB) == 96 * GIB  # three quarters of the host
    assert sandbox.worker_memory_limit(None) == sandbox.default_memory_limit()
    assert sandbox.worker_memory_limit("junk") == sandbox.default_memory_limit()
    assert sandbox.worker_memory_limit(-5) == sandbox.default_memory_limit()
    assert sandbox.Spec(str(tmp_path), memory_limit=500 * GIB).memory_limit == 96 * GIB
    assert sandbox.Spec(str(tmp_path), memory_limit=40 * GIB).memory_limit == 40 * GIB
    assert sandbox.Spec(str(tmp_path)).memory_limit == sandbox.default_memory_limit()


def test_the_confirmation_says_the_limit_the_worker_will_get(monkeypatch):
    monkeypatch.setattr(sandbox, "host_memory", lambda: (100 * GIB, 128 * GIB))
    assert any("host memory 40 GiB" in w for w in sandbox.planned("cpu", 40 * GIB))
    assert any("host memory 96 GiB" in w for w in sandbox.planned("cpu", 900 * GIB))
