"""ktui.repro without compiling anything: verdict logic, error matching, cache keys, the
worker protocol and the runner's isolation with Python-level kernels (CPU, a few seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import BUILD_TIMEOUT_S, needs

from ktui.repro import cache
from ktui.repro.api import ReproError, ReproOptions, select_kernels
from ktui.repro.recorded import find_reference, recorded_for
from ktui.repro.runner import WarmWorker, run_request, scrubbed_env
from ktui.repro.verdict import (
    CORRECTNESS_DISAGREES,
    DIFFERS,
    NOT_JUDGED,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    SAME_FAILURE,
    SUSPICIOUS,
    UNIT_ERROR,
    compare,
    error_class,
    normalize_error,
    same_error,
)

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
FIX = REPO / "tests" / "fixtures" / "repro"

torch_missing = needs("torch")

REF = '''
import torch, torch.nn as nn
from kernelbench.distributed_collectives import default_device, get_rank, get_world_size, is_distributed_run
B, N = 4, 32
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
def get_inputs():
    assert get_rank() == 0 and get_world_size() == 1 and not is_distributed_run()
    assert __file__.endswith("reference.py")
    return [torch.randn(popcorn_pri.jitter_int(B), N, device=default_device())]
def get_init_inputs():
    return []
'''
OK = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        print("kernel chatter on stdout")
        return torch.clamp(x, min=0) * 2.0
'''


def seed_run():
    from ktui.trace import load

    return load(str(SEED))


def fake_result(*, passed=True, k_us=33.0, r_us=37.0, failure=None, checks=(), gpu="NVIDIA H200"):
    res = {
        "status": "failed" if failure else "completed",
        "failure": failure,
        "environment": {"gpu": gpu, "device": "cuda:0", "torch": "2.11", "cuda": "13.0", "arch": "sm_90"},
        "build": {"seconds": 40.0, "cached": False},
        "checks": list(checks),
        "notes": [],
    }
    if not failure:
        res["correctness"] = {"passed": passed, "trials": 5, "trials_passed": 5 if passed else 2,
                              "held_out": {"seed": 1, "passed": passed, "reason": None, "max_abs_error": 0.0},
                              "max_abs_error": 0.0, "mean_abs_error": 0.0, "max_rel_error": 0.0,
                              "mean_rel_error": 0.0, "atol": 1e-4, "rtol": 1e-4, "dtype": "float32",
                              "mismatch": None if passed else "values differ"}
        if passed:
            res["timing"] = {"method": "cuda_event", "method_used": "cuda_event", "trials": 100,
                             "kernel": {"mean_us": k_us, "median_us": k_us, "std_us": 0.3, "min_us": k_us - 1,
                                        "max_us": k_us + 2, "cv": 0.01, "n": 100},
                             "reference": {"mean_us": r_us, "median_us": r_us, "std_us": 0.3, "min_us": r_us - 1,
                                           "max_us": r_us + 2, "cv": 0.01, "n": 100},
                             "speedup": r_us / k_us}
    return res


# ---- verdicts on the seed trace (recorded side from the real reader) -------------------------

def test_seed_v4_unit_error_verdict():
    run = seed_run()
    kv = run.kernel("v4")
    rec = recorded_for(run, kv)
    assert rec.submitted and rec.correctness.passed and rec.hardware == "NVIDIA H100 80GB HBM3"
    comp = compare(rec, fake_result(k_us=33.0, r_us=37.5))
    rows = {r.key: r for r in comp.rows}
    assert rows["correctness"].verdict == REPRODUCED
    assert rows["timing.runtime"].verdict == UNIT_ERROR
    assert rows["timing.ref_runtime"].verdict == UNIT_ERROR
    assert 900 < rows["timing.runtime"].ratio < 1200
    assert comp.verdict == UNIT_ERROR
    assert "ms stored as μs" in comp.reason
    assert any("H100" in n and "H200" in n for n in comp.notes)
    assert "SOL" in comp.not_measured


def test_seed_v4_speedup_and_corrected_times():
    run = seed_run()
    rec = recorded_for(run, run.kernel("v4"))
    comp = compare(rec, fake_result(k_us=31.0, r_us=38.0))
    rows = {r.key: r for r in comp.rows}
    assert "as ms (31.20 μs) it reproduces" in rows["timing.runtime"].note
    assert rows["timing.speedup"].verdict == REPRODUCED  # 1.226 vs 1.2308
    comp = compare(rec, fake_result(k_us=33.0, r_us=33.5))
    assert {r.key: r for r in comp.rows}["timing.speedup"].verdict == DIFFERS


def test_seed_failures_same_way_and_differently():
    run = seed_run()
    v2, v3 = recorded_for(run, run.kernel("v2")), recorded_for(run, run.kernel("v3"))
    gen = {"stage": "correctness", "kind": "runtime_error", "trial": 1,
           "message": "Expected a 'cuda' device type for generator but found 'cpu'"}
    assert compare(v2, fake_result(failure=gen)).verdict == SAME_FAILURE
    dtype = {"stage": "correctness", "kind": "runtime_error", "trial": 1,
             "message": "expected scalar type Int but found Long"}
    c3 = compare(v3, fake_result(failure=dtype))
    assert c3.verdict == SAME_FAILURE and "turn 4" in c3.reason
    assert compare(v3, fake_result(failure=gen)).verdict == DIFFERS
    crash = {"stage": "correctness", "kind": "crash", "trial": 2,
             "message": "kernel crashed: SIGSEGV (segmentation fault) during correctness trial 2"}
    v4 = recorded_for(run, run.kernel("v4"))
    c4 = compare(v4, fake_result(failure=crash))
    assert c4.verdict == NOT_REPRODUCIBLE and "SIGSEGV" in c4.reason and "recorded a pass" in c4.reason


def test_correctness_disagrees_both_ways_and_suspicious():
    run = seed_run()
    v4 = recorded_for(run, run.kernel("v4"))
    assert compare(v4, fake_result(passed=False)).verdict == CORRECTNESS_DISAGREES
    v2 = recorded_for(run, run.kernel("v2"))
    c = compare(v2, fake_result(passed=True))
    assert c.verdict == CORRECTNESS_DISAGREES and "passes here" in c.reason
    flag = {"name": "output_changes_with_input", "ok": False, "detail": "cached"}
    c = compare(v4, fake_result(k_us=31.0, r_us=38.0, checks=[flag]))
    assert c.verdict == SUSPICIOUS and "output_changes_with_input" in c.reason


def test_cannot_test_is_not_judged_here():
    run = seed_run()
    v4 = recorded_for(run, run.kernel("v4"))
    f = {"stage": "build", "kind": "unsupported", "message": "this kernel has CUDA/Triton code and needs a CUDA GPU"}
    c = compare(v4, fake_result(failure=f))
    assert c.verdict == NOT_JUDGED and "not judged here (no GPU)" in c.reason and "--device cuda" in c.reason


def test_error_normalization():
    assert same_error("/tmp/x/main.cpp:11:33: error: 'scale_factor' was not declared in this scope",
                      "error: ‘scale_factor’ was not declared in this scope")
    assert same_error("RuntimeError: expected scalar type Int but found Long",
                      "expected scalar type Int but found Long")
    assert not same_error("expected scalar type Int but found Long",
                          "Expected a 'cuda' device type for generator but found 'cpu'")
    assert normalize_error("RuntimeError: bad at 0x7ffe12 line 42") == "bad at # line #"


def test_failures_worded_differently_are_one_class():
    # a real Harbor verifier (kb_verifier.py) and ktui's judge word a missing ModelNew differently
    harbor = ("AttributeError: module 'kb_sol' has no attribute 'ModelNew'\nTraceback (most recent call last):\n"
              "  File \"/app/kb_verifier.py\", line 183, in grade\n    ModelNew = genmod.ModelNew")
    assert same_error(harbor, "the kernel code defines no ModelNew (nor a Model class of its own)")
    assert same_error("ImportError: cannot import name 'ModelNew' from 'solution'", "the kernel code defines no ModelNew")
    assert same_error("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB",
                      "RuntimeError: CUDA error: out of memory")
    assert same_error("CUDA error: an illegal memory access was encountered",
                      "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered")
    # different classes, or one text naming two, stay different
    assert not same_error(harbor, "CUDA error: an illegal memory access was encountered")
    assert not same_error("CUDA out of memory", "an illegal memory access was encountered")
    assert error_class("out of memory after an illegal memory access") is None
    assert error_class("a kernel that prints ModelNew") is None


def test_selection_and_reference():
    run = seed_run()
    assert [k.label for k in select_kernels(run)] == ["v4"]
    assert [k.label for k in select_kernels(run, turn=4)] == ["v3"]
    assert [k.label for k in select_kernels(run, version="v2")] == ["v2"]
    assert len(select_kernels(run, all_=True)) == 4
    with pytest.raises(ReproError, match="no kernel version 'v9'"):
        select_kernels(run, version="v9")
    with pytest.raises(ReproError, match="turn 0 uses no kernel"):
        select_kernels(run, turn=0)
    src, origin = find_reference(run)
    assert "popcorn_pri.jitter_int" in src and "line 4" in origin
    with pytest.raises(ReproError):
        ReproOptions(method="nope")


def test_cache_keys_and_root(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_root() == tmp_path / "c"
    k1 = cache.result_key(kernel_sha1="a", reference_sha1="b", device=None, method="cuda_event", trials=100)
    k2 = cache.result_key(kernel_sha1="a", reference_sha1="b", device=None, method="cuda_event", trials=50)
    k3 = cache.result_key(kernel_sha1="a", reference_sha1="b", device="cuda:1", method="cuda_event", trials=100)
    assert len({k1, k2, k3}) == 3  # (no device and the device it resolves to share a key: test_one_cache.py)
    cache.store({"kernel_sha1": "a", "key": k1, "result": {"status": "completed"}})
    assert cache.load("a", k1)["result"]["status"] == "completed"
    assert cache.load("a", k2) is None
    assert len(cache.entries_for("a")) == 1
    monkeypatch.delenv("KTUI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_root() == tmp_path / "x" / "ktui" / "repro"
    assert not cache.cacheable({"status": "failed", "failure": {"kind": "timeout"}})
    assert cache.cacheable({"status": "failed", "failure": {"kind": "crash"}})


def test_scrubbed_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("HF_TOKEN", "hf-x")
    monkeypatch.setenv("MY_SECRET", "s")
    monkeypatch.setenv("KTUI_HARMLESS", "1")
    env = scrubbed_env()
    assert "OPENAI_API_KEY" not in env and "HF_TOKEN" not in env and "MY_SECRET" not in env
    assert env["KTUI_HARMLESS"] == "1"
    assert str(REPO) in env["PYTHONPATH"].split(os.pathsep)


def test_harness_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import ktui.engine, ktui.repro.api, ktui.report.repro, ktui.repro.export\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ---- the worker, with Python-level kernels (no compile) --------------------------------------

def _req(kernel: str, tmp_path: Path, **kw) -> dict:
    r = {"kernel_code": kernel, "reference_source": REF, "device": "cpu", "trials": 3, "correctness_trials": 3,
         "build_root": str(tmp_path / "build")}
    r.update(kw)
    return r


@torch_missing
def test_worker_protocol_and_isolation(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_TEST_API_KEY", "do-not-leak")
    kernel = OK + '''
import os, tempfile
class ModelNew(ModelNew):
    def __init__(self):
        super().__init__()
        if "KTUI_TEST_API_KEY" in os.environ:
            raise RuntimeError("a secret is visible to the kernel")
        if "ktui-repro-" not in os.getcwd():
            raise RuntimeError("not in a temporary directory: " + os.getcwd())
        open("scratch.txt", "w").write("x")
'''
    events = []
    res = run_request(_req(kernel, tmp_path), on_progress=events.append, run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
    assert res["status"] == "completed", res.get("failure")
    assert res["correctness"]["passed"] and res["correctness"]["held_out"]["passed"]
    assert res["timing"]["method_used"] == "host" and res["timing"]["kernel"]["n"] >= 3
    assert {c["name"] for c in res["checks"]} >= {"inputs_not_mutated", "output_changes_with_input",
                                                    "plain_output", "no_eq_override"}
    assert all(c["ok"] is not False for c in res["checks"])
    stages = [p.stage for p in events if p.state == "start"]
    assert stages[:4] == ["startup", "build", "reference", "correctness"]
    assert events[-1].fraction > 0.9
    assert not (REPO / "scratch.txt").exists()


@torch_missing
@pytest.mark.parametrize("body,kind,words", [
    ("import os\n        os._exit(7)", "exit", "exited with status 7 during correctness trial 1"),
    ("import ctypes\n        ctypes.string_at(0)", "crash", "kernel crashed: SIGSEGV"),
    ("import sys\n        sys.exit(3)", "exit", "called sys.exit(3)"),
    ("raise MemoryError('boom')", "runtime_error", "boom"),
])
def test_worker_failures_in_words(tmp_path, body, kind, words):
    kernel = f'''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        {body}
'''
    res = run_request(_req(kernel, tmp_path), run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
    assert res["status"] == "failed"
    assert res["failure"]["kind"] == kind
    assert words in res["failure"]["message"]
    assert res["failure"]["stage"] == "correctness"


@torch_missing
def test_worker_timeout_and_cancel(tmp_path):
    hang = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            pass
'''
    t0 = time.monotonic()
    res = run_request(_req(hang, tmp_path), run_timeout=3, compile_timeout=BUILD_TIMEOUT_S)
    assert res["failure"]["kind"] == "timeout"
    assert "timed out after 3 s during correctness trial 1" in res["failure"]["message"]
    assert time.monotonic() - t0 < 60
    cancel = threading.Event()

    def on_progress(p):  # cancel once the kernel is running (and hanging)
        if p.stage == "correctness" and p.state == "trial":
            threading.Timer(1.0, cancel.set).start()

    res = run_request(_req(hang, tmp_path), cancel=cancel, on_progress=on_progress, run_timeout=120,
                      compile_timeout=BUILD_TIMEOUT_S)
    assert res["status"] == "cancelled" and "correctness" in res["failure"]["message"]


@torch_missing
def test_cpu_device_refuses_cuda_kernels(tmp_path):
    run = seed_run()
    res = run_request(_req(run.kernel("v4").code, tmp_path), run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
    assert res["failure"]["kind"] == "unsupported" and "needs a CUDA GPU" in res["failure"]["message"]


@torch_missing
def test_every_request_gets_fresh_processes(tmp_path):
    # a kernel's patches never reach the next kernel: no warm process runs two kernels' code
    patcher = OK + """
import torch
torch._ktui_patched_by_an_earlier_kernel = True
"""
    checker = OK + """
import torch
if hasattr(torch, "_ktui_patched_by_an_earlier_kernel"):
    raise RuntimeError("an earlier kernel's patch is still here")
"""
    bad = OK.replace("torch.clamp(x, min=0) * 2.0", "1 / 0")
    with WarmWorker() as w:
        r1 = w.run(_req(patcher, tmp_path), run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
        r2 = w.run(_req(checker, tmp_path), run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
        assert r1["status"] == r2["status"] == "completed", (r1.get("failure"), r2.get("failure"))
        assert not r1["warm"] and not r2["warm"] and w.requests == 2
        r3 = w.run(_req(bad, tmp_path), run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
        assert r3["failure"]["kind"] == "runtime_error" and "division by zero" in r3["failure"]["message"]
        r4 = w.run(_req(OK, tmp_path), run_timeout=60, compile_timeout=BUILD_TIMEOUT_S)
        assert r4["status"] == "completed"


@torch_missing
def test_build_timeout_clears_torch_lock(tmp_path):
    # a worker killed while compiling leaves torch's FileBaton 'lock' in its build folder: that
    # folder is a throwaway one (the judge's temp dir), so neither the lock nor the half-built
    # folder reaches the cache, and the next build of the same snapshot does not wait on it
    kernel = '''
import os, time
d = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "relu_ext_kdeadbeef")
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "lock"), "w").close()
time.sleep(120)
'''
    res = run_request(_req(kernel, tmp_path), run_timeout=60, compile_timeout=4)
    assert res["failure"]["kind"] == "timeout" and "during build" in res["failure"]["message"]
    locks = list((tmp_path / "build").glob("*/*/lock"))
    assert locks == []
    assert not list((tmp_path / "build").glob("*/relu_ext_kdeadbeef"))


def test_stale_lock_helper(tmp_path):
    from ktui.engine import _clear_stale_lock

    lock = tmp_path / "lock"
    lock.write_text("")
    _clear_stale_lock(str(tmp_path))
    assert lock.exists()  # fresh: another build may hold it
    os.utime(lock, (time.time() - 3600, time.time() - 3600))
    _clear_stale_lock(str(tmp_path))
    assert not lock.exists()


def test_compile_only_record_then_runtime_failure_reproduces():
    # seed v1 was only compiled in the trace: failing later here is news, not a contradiction
    run = seed_run()
    v1 = recorded_for(run, run.kernel("v1"))
    gen = {"stage": "correctness", "kind": "runtime_error", "trial": 1,
           "message": "Expected a 'cuda' device type for generator but found 'cpu'"}
    c = compare(v1, fake_result(failure=gen))
    assert c.verdict == REPRODUCED and "never ran it" in c.reason


def test_sandbox_words_name_the_mounts_left_writable_and_the_pid_namespace():
    """A mount the prologue could not make read-only is named (which one matters); a worker
    knows its PID namespace by identity, not by its PID (under ncu it is not PID 1 or 2)."""
    from ktui.engine import sandbox

    words = sandbox.describe({"mounts": True, "pid_namespace": True,
                              "read_only_failed": ["/mnt/scratch: Operation not permitted"]}, True)
    assert "read-only filesystem except its temp dir (1 mount left writable: /mnt/scratch)" in words
    many = sandbox.describe({"mounts": True, "read_only_failed": [f"/m{i}: EPERM" for i in range(5)]}, True)
    assert any(w.endswith("(5 mounts left writable: /m0, /m1, /m2, ...)") for w in many)
    assert "PID namespace FAILED" in many
    here = os.readlink("/proc/self/ns/pid")
    assert sandbox.in_own_pid_namespace({"host_pidns": here}) is False
    assert sandbox.in_own_pid_namespace({"host_pidns": "pid:[1]"}) is True
    assert sandbox.Spec(str(Path("/tmp")), device="cpu").inner()["host_pidns"] == here


@needs("torch")
def test_input_seed_is_new_each_run_and_replayable(tmp_path):
    """`ktui repro` judges on inputs from a new secret seed each run, says which afterwards, and
    `--input-seed N` replays exactly those inputs (it implies --fresh: a cached result was judged
    on others)."""
    import json

    trace = str(REPO / "tests" / "fixtures" / "hacks" / "honest_relu_torch.jsonl")
    env = dict(os.environ, KTUI_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))

    def go(*extra):
        out = subprocess.run([sys.executable, "-m", "ktui", "repro", trace, "--device", "cpu", "--trials", "3",
                              *extra], capture_output=True, text=True, env=env, timeout=900)
        assert out.returncode in (0, 1), out.stderr
        return out.stdout

    a, b = (json.loads(go("--json", "--fresh"))["result"] for _ in range(2))
    assert a["seeds"]["inputs"] != b["seeds"]["inputs"] and a["seeds"]["init"] == b["seeds"]["init"] == 42
    assert a["correctness"]["seeds"] != b["correctness"]["seeds"]
    n = a["seeds"]["inputs"]
    c = json.loads(go("--json", "--input-seed", str(n)))["result"]
    assert c["seeds"]["inputs"] == n and c["correctness"]["seeds"] == a["correctness"]["seeds"]
    assert c["correctness"]["held_out"]["seed"] == a["correctness"]["held_out"]["seed"]
    text = go("--input-seed", str(n))
    assert f"--input-seed {n} replays them" in " ".join(text.split())


def test_timer_cross_check_never_agrees_with_a_clock_that_read_nothing():
    """`own timing 4.00 μs agrees with ktui's clock (0.00 μs ...)` was printed when every microsecond
    of the clock's window was a wait for a CPU: that is not checked, and not an agreement."""
    from ktui.engine.pipeline import agreeing_cross_check

    c = agreeing_cross_check(4.0, 0.0, 1000, 0.5)
    assert c["ok"] is None and "not cross-checked" in c["detail"] and "agrees" not in c["detail"]
    c = agreeing_cross_check(4.0, 3.9, 1000, 0.5)
    assert c["ok"] is True and "agrees with ktui's clock (3.90 μs" in c["detail"]
    c = agreeing_cross_check(900.0, 100.0, 1000, 0.5)
    assert c["ok"] is True and "agrees" not in c["detail"] and "above" in c["detail"]


def test_timer_cross_check_says_agrees_only_when_the_timings_are_close():
    """On a shared CPU 'own timing 33.83 μs (mean) agrees with ktui's clock (6.53 μs ...)' was
    printed: within the tolerance that makes a finding, but five times apart. It says how far."""
    from ktui.engine.pipeline import agreeing_cross_check

    c = agreeing_cross_check(33.83, 6.53, 4627, 4.0)
    assert c["ok"] is True and "agrees" not in c["detail"], c
    assert "5.2x above ktui's clock (6.53 μs" in c["detail"] and "hides nothing" in c["detail"]
    c = agreeing_cross_check(4.0, 12.0, 1000, 4.0)
    assert c["ok"] is True and "agrees" not in c["detail"] and "3.0x below" in c["detail"], c
    c = agreeing_cross_check(7.58, 6.53, 4627, 4.0)
    assert "agrees with ktui's clock (6.53 μs" in c["detail"]
