"""One result cache for `ktui repro`, the app's `r`, `ktui verify` and the report: the same
kernel judged with the same settings is found by every one of them, whatever device spelling
each used (--device cpu, no device on a CPU machine, cuda:0 and cuda). Before, the key held the
device as typed: `ktui repro --device cpu` then `r` in the app (no device) ran the kernel again."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import needs

from ktui.repro import cache

REPO = Path(__file__).resolve().parents[1]
SWEEP = REPO / "tests" / "fixtures" / "verify" / "sweep"
CPU_ENV = {"python": "3.11", "machine": "x86_64", "torch": "2.13.0+cpu", "gpus": [], "cuda_visible_devices": None}
GPU_ENV = {**CPU_ENV, "torch": "2.13.0", "gpus": ["NVIDIA H200, 570.1"]}


def _key(device, env):
    return cache.result_key(kernel_sha1="k", reference_sha1="r", device=device, method="cuda_event", trials=100,
                            env=env)


def test_device_spellings_share_a_key():
    assert _key(None, CPU_ENV) == _key("cpu", CPU_ENV) == _key("auto", CPU_ENV)
    assert _key(None, GPU_ENV) == _key("cuda", GPU_ENV) == _key("cuda:0", GPU_ENV)
    assert _key(None, GPU_ENV) != _key("cpu", GPU_ENV)  # a GPU machine: no device means the GPU
    assert _key("cuda:1", GPU_ENV) != _key("cuda", GPU_ENV)
    # a CPU build of torch on a GPU machine runs "no device" on the CPU
    cpu_build = {**GPU_ENV, "torch": "2.13.0+cpu"}
    assert _key(None, cpu_build) == _key("cpu", cpu_build)
    # a ROCm build: its GPUs are not listed, so "no device" is not known to be the CPU
    rocm = {**CPU_ENV, "torch": "2.13.0+rocm6.2"}
    assert _key(None, rocm) != _key("cpu", rocm)


def test_an_entry_run_elsewhere_is_not_an_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))
    key = cache.result_key(kernel_sha1="ab", reference_sha1="r", device="cuda", method="cuda_event", trials=100)
    cache.store({"kernel_sha1": "ab", "key": key, "result": {"status": "completed", "environment": {"device": "cpu"}}})
    assert cache.load("ab", key) is not None
    assert cache.load("ab", key, "cuda") is None  # keyed cuda, ran on the CPU
    assert cache.load("ab", key, "cpu") is not None


@needs("torch")
def test_repro_then_app_then_verify_use_one_result(tmp_path, monkeypatch):
    """`ktui repro --device cpu` judges the kernel; the app's lookup (ReproOptions(): no device) and
    `ktui verify` (no --device) find that result instead of running the kernel again."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "env_fingerprint", lambda: CPU_ENV)  # this machine as a CPU machine
    trace = SWEEP / "model-a" / "fast.jsonl"
    r = CliRunner().invoke(main_cli(), ["repro", str(trace), "--device", "cpu", "--json", "--timeout", "120"])
    assert r.exit_code in (0, 1), r.output
    first = json.loads(r.stdout)
    assert first["cached"] is False and first["result"]["status"] == "completed"

    from ktui.repro.api import ReproOptions, cached_report, reproduce
    from ktui.trace import load

    run = load(str(trace))
    kv = run.final_kernel
    rep = cached_report(run, kv, ReproOptions())  # what the app's `r` looks up first
    assert rep is not None and rep.cached and rep.key == first["cache_key"]

    def no_run(*a, **k):
        raise AssertionError("ran the kernel again instead of using the cached result")

    monkeypatch.setattr("ktui.repro.api.run_request", no_run)
    again = reproduce(run, kv, ReproOptions())
    assert again.cached and again.result == first["result"]

    from ktui.repro.verify.plan import Planner

    planner = Planner([str(trace)], ReproOptions())
    assert list(planner) == []  # nothing to run: the result is in the cache
    assert len(planner.cached) == 1


def main_cli():
    from ktui.cli import main

    return main


def test_verify_of_a_cuda_trace_on_a_cpu_machine_leaves_the_pass_rate_alone():
    """The seed trace's CUDA kernel cannot be judged on a CPU: the run is not judged, neither
    passed nor failed; the model's reproduced pass rate is not 0 % but has no figure."""
    from ktui.repro.verify.plan import RunRow
    from ktui.repro.verify.results import build_report

    row = RunRow(path="t.jsonl", real="/t.jsonl", model="grok-4.3", problem="p", version="v4", final=True,
                 recorded_outcome="passed", recorded_speedup=1.23, job="j")
    judged = RunRow(path="u.jsonl", real="/u.jsonl", model="other", problem="p", version="v1", final=True,
                    recorded_outcome="passed", recorded_speedup=1.5, job="k")
    cannot = {"status": "failed", "failure": {"kind": "unsupported", "stage": "build",
                                              "message": "this kernel has CUDA code and needs a CUDA GPU"}}
    ok = {"status": "completed", "correctness": {"passed": True}, "timing": {"speedup": 1.4}}
    rep = build_report([row, judged], {"j": cannot, "k": ok})
    models = {m["model"]: m for m in rep.models()}
    g = models["grok-4.3"]
    assert g["recorded"]["pass_rate"] == 1.0
    assert g["reproduced"]["judged"] == 0 and g["reproduced"]["pass_rate"] is None  # no figure, not 0 %
    assert models["other"]["reproduced"]["pass_rate"] == 1.0
    total = models["all runs"]
    assert total["reproduced"]["judged"] == 1 and total["reproduced"]["pass_rate"] == 1.0
