"""Three outcomes, never two: judged (pass / fail), not judged here (no GPU, no reference, no
toolchain, ktui's own budget ran out: which, and how to get it judged), harness error. Only judged
runs count in pass rates and "claims that do not hold"; the others are counted beside them."""

from __future__ import annotations

import io

import pytest

from ktui.engine.defaults import machine_scale
from ktui.repro import cache
from ktui.repro.judging.outcome import BUDGET, NO_GPU, NO_REFERENCE, NO_TOOLCHAIN, SIZE, unjudged
from ktui.repro.reproduced import from_result
from ktui.repro.verdict import HARNESS_ERROR, NOT_JUDGED, NOT_REPRODUCIBLE, compare
from ktui.repro.verify.plan import RunRow
from ktui.repro.verify.results import build_report
from ktui.trace.model import INCOMPLETE, OUTCOME_FAILED, PASSED

CPU_ENV = {"device": "cpu", "torch": "2.13.0", "cuda": None, "cpu": "x86_64"}
GPU_ENV = {"device": "cuda:0", "gpu": "NVIDIA H200", "cuda": "12.8"}


def failed(kind: str, message: str, stage: str = "build", env: dict | None = None) -> dict:
    return {"status": "failed", "failure": {"stage": stage, "kind": kind, "message": message, "trial": None},
            "environment": env, "checks": [], "notes": [], "stages": {}}


def passed(speedup: float = 2.0) -> dict:
    return {"status": "completed", "environment": CPU_ENV, "correctness": {"passed": True, "trials": 5,
                                                                          "trials_passed": 5},
            "timing": {"speedup": speedup, "kernel": {"mean_us": 10.0}, "reference": {"mean_us": 20.0}},
            "checks": [], "notes": []}


NOT_JUDGED_CASES = {
    # a CUDA extension built on a CPU-only machine: torch's own words
    "load_inline on CPU": (failed("import_error", "OSError: CUDA_HOME environment variable is not set. Please set it "
                                  "to your CUDA install root.", env=CPU_ENV), NO_GPU),
    "triton on CPU": (failed("runtime_error", "RuntimeError: 0 active drivers ([]). There should only be one.",
                             stage="correctness", env=CPU_ENV), NO_GPU),
    ".cuda() on CPU": (failed("runtime_error", "AssertionError: Torch not compiled with CUDA enabled",
                              stage="correctness", env=CPU_ENV), NO_GPU),
    "asked for a GPU": (failed("unsupported", "no CUDA device available (torch 2.13.0, CPU-only build)",
                               stage="startup"), NO_GPU),
    "no reference": (failed("no_reference", "no reference for this problem", stage="reference"), NO_REFERENCE),
    "build budget": (failed("timeout", "timed out after 90 s during build (worker killed)"), BUDGET),
    "trial budget": (failed("timeout", "timed out after 600 s during timing trial 3 (worker killed)",
                            stage="timing", env=GPU_ENV), BUDGET),
    "no nvcc on a GPU machine": (failed("compile_error", "error: CUDA_HOME environment variable is not set",
                                        env=GPU_ENV), NO_TOOLCHAIN),
    "no compiler": (failed("import_error", "RuntimeError: Ninja is required to load C++ extensions",
                           env=GPU_ENV), NO_TOOLCHAIN),
    # seen on the H200: KernelBench L1 problems whose inputs are 6 GB (the sandbox passes 2 GiB a value)
    "inputs over the value limit": (failed("harness_error", "[Errno 27] File too large", stage="reference",
                                           env=GPU_ENV), SIZE),
    # seen on the H200: Triton's launcher stub (its own C file) did not compile with the machine's gcc
    "triton's launcher": (failed("runtime_error", "Command '['/opt/gcc/bin/gcc', '/tmp/x/cuda_utils.c', '-O3', "
                                 "'-shared', '-fPIC']' returned non-zero exit status 1.", stage="correctness",
                                 env=GPU_ENV), NO_TOOLCHAIN),
    # seen on the H200: a KernelBench Triton kernel recorded passing under Triton 2 imports triton.ops
    # (gone in Triton 3); and a name a newer torch moved
    "a toolchain part this version lacks": (failed("import_error", "No module named 'triton.ops'", stage="build",
                                                   env=GPU_ENV), NO_TOOLCHAIN),
    "a name this torch lacks": (failed("import_error", "ImportError: cannot import name 'fused_op' from "
                                       "'torch._inductor.kernel' (/opt/torch/...)", stage="build", env=GPU_ENV),
                                NO_TOOLCHAIN),
}


@pytest.mark.parametrize("name", sorted(NOT_JUDGED_CASES))
def test_machine_facts_are_not_judged_here_and_say_how_to_judge(name):
    result, why = NOT_JUDGED_CASES[name]
    u = unjudged(result)
    assert u is not None and u.verdict == NOT_JUDGED and u.why == why, u
    assert "not judged here" in u.reason and "to judge it" in u.reason and u.how
    assert from_result(result) == (None, None)  # the runs charts: no outcome, not a failure
    assert not cache.cacheable(result)  # never cached as the kernel's failure


def test_kernel_failures_stay_judged():
    for r in (failed("compile_error", "main.cu(12): error: identifier \"tile\" is undefined", env=GPU_ENV),
              failed("crash", "kernel crashed: SIGSEGV during correctness trial 1", stage="correctness", env=CPU_ENV),
              failed("runtime_error", "IndexError: index 5 is out of bounds", stage="correctness", env=CPU_ENV),
              failed("runtime_error", "CUDA error: an illegal memory access was encountered", stage="correctness",
                     env=GPU_ENV),
              # the kernel's own module or a package of its own, not the toolchain's
              failed("import_error", "No module named 'fused_gelu_ext'", stage="build", env=GPU_ENV),
              failed("import_error", "No module named 'tritonx.ops'", stage="build", env=GPU_ENV),
              failed("import_error", "cannot import name 'helper' from 'mykernels'", stage="build", env=GPU_ENV)):
        assert unjudged(r) is None, r["failure"]
        assert from_result(r) == (False, None)
    assert unjudged(passed()) is None


def test_judge_side_failures_are_harness_errors():
    for kind in ("reference_error", "worker_error", "harness_error"):
        u = unjudged(failed(kind, "boom", stage="reference"))
        assert u is not None and u.verdict == HARNESS_ERROR and "not the kernel" in u.reason


class _Rec:
    """The least of a Recorded for compare(): no metrics, a recorded pass."""

    metrics: list = []
    compile = None
    correctness = None
    failure = None
    hardware = None
    findings: list = []

    def metric(self, key):
        return None


def _row(path: str, job: str | None, model: str = "m", note: str = "") -> RunRow:
    return RunRow(path=path, real="/" + path, model=model, problem="p", version="v1", final=True,
                  recorded_outcome=PASSED, recorded_speedup=2.0, note=note, job=job, recorded=_Rec())


def test_cpu_machine_verifying_a_cuda_sweep_leaves_the_pass_rate_alone():
    rows = [_row("a.jsonl", "j1"), _row("b.jsonl", "j2"), _row("c.jsonl", "j3"),
            _row("d.jsonl", None, note="no reference for this problem")]
    results = {"j1": passed(), "j2": NOT_JUDGED_CASES["load_inline on CPU"][0],
               "j3": NOT_JUDGED_CASES["build budget"][0]}
    rep = build_report(rows, results)
    by = {v.row.path: v for v in rep.rows}
    assert by["a.jsonl"].outcome == PASSED
    for p in ("b.jsonl", "c.jsonl", "d.jsonl"):
        assert by[p].outcome == INCOMPLETE and by[p].verdict == NOT_JUDGED, (p, by[p].verdict, by[p].reason)
    assert rep.claims == []  # nothing judged failed: no claim fails
    assert rep.stats["not_judged"] == 3 and rep.stats["judged"] == 1
    m = {d["model"]: d for d in rep.models()}["m"]["reproduced"]
    assert m["pass_rate"] == 1.0 and m["judged"] == 1 and m["not_judged"] == 3
    # a kernel that really fails still counts, and is a claim that does not hold
    rep2 = build_report(rows[:2], {"j1": passed(), "j2": failed("crash", "SIGSEGV", stage="correctness",
                                                                env=CPU_ENV)})
    assert [v.row.path for v in rep2.claims] == ["b.jsonl"] and rep2.claims[0].outcome == OUTCOME_FAILED
    assert {d["model"]: d for d in rep2.models()}["m"]["reproduced"]["pass_rate"] == 0.5


def test_verify_report_shows_not_judged_beside_the_claims():
    from rich.console import Console

    from ktui.report.verify import render

    rows = [_row("a.jsonl", "j1"), _row("b.jsonl", "j2")]
    rep = build_report(rows, {"j1": passed(), "j2": NOT_JUDGED_CASES["triton on CPU"][0]})
    out = io.StringIO()
    render(Console(file=out, width=200, color_system=None), rep)
    text = out.getvalue()
    assert "not judged here" in text and "1 run not judged here" in text
    assert "NOT REPRODUCIBLE" not in text.upper().replace("NOT JUDGED", "")
    assert "claims that do not hold" not in text  # the one judged run holds
    assert "1 (1 not)" in text  # the model table: judged (not judged)


def test_compare_names_not_judged_instead_of_not_reproducible():
    c = compare(_Rec(), NOT_JUDGED_CASES["load_inline on CPU"][0], static=[])
    assert c.verdict == NOT_JUDGED and c.verdict != NOT_REPRODUCIBLE
    assert "no GPU" in c.reason and "--device cuda" in c.reason


def test_budgets_scale_with_the_machine(monkeypatch):
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (7.0, 7.0, 7.0))
    assert machine_scale() == 4.0  # a loaded 2-core machine
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert machine_scale() == 1.0


def test_stats_line_counts_not_judged_beside_the_rest():
    from ktui.repro.verify.results import stats_line

    line = stats_line({"runs": 3, "kernels": 3, "built": 1, "timed": 1, "failed": 1, "not_judged": 1})
    assert "1 did not complete" in line and "1 run not judged here" in line and " failed" not in line


@pytest.mark.timeout(600)
def test_a_cuda_kernel_with_no_device_asked_on_a_cpu_machine_is_not_judged_here(tmp_path, monkeypatch):
    """`ktui repro TRACE` (no --device: cuda if available, else cpu) of an honest CUDA kernel on a
    machine without a GPU: the kernel's build says it needs CUDA; that is "not judged here", never
    the kernel's own failure (it was 'not reproducible': the judge took the unresolved device for
    a GPU run and refused the worker's 'unsupported')."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    from pathlib import Path

    from ktui.repro.api import ReproOptions, reproduce
    from ktui.trace import load

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    run = load(str(Path(__file__).resolve().parents[1] / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"))
    rep = reproduce(run, run.final_kernel, ReproOptions(device=None, trials=5, timeout=120.0, fresh=True))
    assert rep.comparison.verdict == NOT_JUDGED, (rep.comparison.verdict, rep.comparison.reason)
    assert "only the judge assigns" not in rep.comparison.reason
