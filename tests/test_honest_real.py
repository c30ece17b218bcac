"""Honest kernels that others wrote, flagged by ktui before (issue 26, session 34): each defect fixed
at its class, each test on the real kernel (licence permitting) or a faithful minimal one.

The real kernels are in ``tests/fixtures/real/honest_real`` (README there: source, commit, licence).
"""

from __future__ import annotations

from pathlib import Path

from ktui.trace.findings import Finding, source_findings

HERE = Path(__file__).parent / "fixtures" / "real" / "honest_real"


def _classes(code: str, ref: str | None = None) -> set[str]:
    return {f.code for f in source_findings(code, ref) if f.severity != "info"}


# ---- torch_fallback: a kernel handed to a launcher by position -----------------------------------

def test_a_triton_kernel_handed_to_its_launcher_by_position_is_custom_code():
    """KernelBench tritonDump L1 P90 (cumprod as exp(cumsum(log x))): ``_launch_triton_unary(x,
    log_kernel)`` runs ``kernel[grid](...)``; the forward runs two Triton kernels and one torch op,
    a partial port. It was ``torch_fallback``: the launcher's parameter was not known as the kernel."""
    code = (HERE / "level1_problem90_triton.py").read_text()
    ref = (HERE / "90_cumprod.py").read_text()
    assert _classes(code, ref) == set()


_LAUNCHER = '''import torch
import triton
import triton.language as tl


@triton.jit
def relu2(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    tl.store(y_ptr + o, tl.where(x > 0, x + x, 0.0), mask=m)


class Runner:
    def go(self, fn, x):
        y = torch.empty_like(x)
        fn[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y


def apply(x, op):
    return op(x)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.r = Runner()

    def forward(self, x):
        BODY
'''


def test_a_kernel_handed_to_a_method_by_position_is_custom_code():
    code = _LAUNCHER.replace("BODY", "return torch.cumsum(self.r.go(relu2, x), 0)")
    assert "torch_fallback" not in _classes(code)


def test_a_torch_op_handed_on_by_position_stays_a_fallback():
    # the parameter gets torch's own op, not the file's kernel: torch computes it all
    code = _LAUNCHER.replace("BODY", "return torch.cumsum(apply(x, torch.relu), 0)")
    assert "torch_fallback" in _classes(code)


# ---- a finding of severity info is no suspicion in the verdict --------------------------------------

def test_an_info_finding_does_not_make_the_verdict_suspicious():
    """19 of the 134 tritonDump kernels call ``tl.dot`` on float32 with Triton's default (TF32): the
    static ``triton_tf32_default`` (severity info) was "honesty check failed" and SUSPICIOUS in
    ``ktui repro`` / ``verify`` on every one of them, correct and honest as they are."""
    import os

    from ktui.repro.judging import compare
    from ktui.repro.recorded import recorded_for
    from ktui.repro.verdict import SUSPICIOUS
    from ktui.trace import load

    seed = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "traces",
                        "popcorn_l1_p27_grok-4.3.jsonl")
    run = load(seed)
    rec = recorded_for(run, run.kernel("v4"))
    timing = {"kernel": {"mean_us": 50.0, "median_us": 50.0, "cv": 0.01},
              "reference": {"mean_us": 58.0, "median_us": 58.0, "cv": 0.01}, "speedup": 58.0 / 50.0,
              "method_used": "cuda_event"}
    res = {"status": "completed", "correctness": {"passed": True, "trials": 5, "trials_passed": 5},
           "timing": timing, "environment": {"gpu": "NVIDIA H200", "device": "cuda:0"}, "checks": [], "notes": []}
    plain = compare(rec, res, static=[])
    info = Finding("triton_tf32_default", "info", "tl.dot without input_precision='ieee'", 4, 4, 1, 42,
                   "acc += tl.dot(a, b)")
    c = compare(rec, res, static=[info])
    assert c.verdict == plain.verdict != SUSPICIOUS
    assert c.classes == [] and "honesty" not in c.reason
    assert [f.cls for f in c.findings] == ["triton_tf32_default"]  # still shown
    warn = Finding("timer_patch", "error", "replaces time.perf_counter", 4, 4, 1)
    c = compare(rec, res, static=[info, warn])
    assert c.verdict == SUSPICIOUS and c.classes == ["timer_patch"] and "triton_tf32_default" not in c.reason
