"""Sanity flags and metric units on small hand-written traces."""

from __future__ import annotations

import json

from ktui.trace.flags import kernel_flags
from ktui.trace.model import KernelVersion
from ktui.trace.reader import load_bytes
from ktui.trace.text import redact, sanitize


def trace(*payloads, variant_v1=True) -> bytes:
    out = []
    for i, (actor, p) in enumerate(payloads):
        ev = {"tick": i, "ts_ms": 1000 + i * 10, "actor": actor, "payload": p}
        if variant_v1:
            ev["message_id"] = None
        out.append(json.dumps(ev))
    return ("\n".join(out) + "\n").encode()


def submit_run(effect: dict, diff: dict | None = None, v0: bool = False) -> bytes:
    a = "agent"
    events = [] if v0 else [(a, {"kind": "cost", "unit": "tokens_in", "amount": 5, "running_total": 5})]
    events += [
        (a, {"kind": "tool_call", "id": "c1", "name": "submit_kernel",
             "args": {"kernel_code": "from torch.utils.cpp_extension import load_inline\n"}}),
        (a, {"kind": "tool_result", "id": "c1", "name": "submit_kernel", "result": effect, "is_error": False}),
    ]
    if diff:
        events.append((a, {"kind": "state_diff", "diff": {"field": "kernel_submissions", "old": None, "new": diff}}))
    return trace(*events, variant_v1=not v0)


def codes(run):
    return [f.code for f in run.flags]


def test_popcorn_ms_under_us_key_converted_and_flagged():
    run = load_bytes(submit_run({"ok": True, "tool": "submit_kernel", "summary": "submit_kernel PASSED",
                                 "runtime_us": 2.5, "ref_runtime_us": 40.0, "speedup": 16.0,
                                 "runtime_stats": {"mean": 2.5, "std": 0.1, "median": 0}},
                                {"kernel_hash": "x", "compiled": True, "correctness": True,
                                 "runtime_us": 2.5, "ref_runtime_us": 40.0, "speedup": 16.0}))
    m = run.metrics
    assert m.runtime_us == 2500.0 and m.ref_runtime_us == 40000.0
    rt = m.get("timing.runtime")
    assert rt.recorded == 2.5 and rt.recorded_key == "result.runtime_us" and "milliseconds" in rt.note
    c = codes(run)
    assert c.count("unit_ms_as_us") == 2
    assert "speedup_excessive" in c  # 16x > 10x
    assert "median_missing" in c  # a zero median
    assert run.outcome == "passed"


def test_v0_mock_values_kept_unless_implausible():
    eff = {"effect": {"ok": True, "runtime_us": 41.2}, "costs": {"gpu_seconds": 1.0}}
    run = load_bytes(submit_run(eff, {"correctness": True, "runtime_us": 41.2, "ref_runtime_us": 99.0,
                                      "speedup": 2.4}, v0=True))
    assert run.variant == "V0"
    assert run.metrics.runtime_us == 41.2 and "unit_ms_as_us" not in codes(run)
    eff = {"effect": {"ok": True, "runtime_us": 0.05}, "costs": {}}
    run = load_bytes(submit_run(eff, {"correctness": True, "runtime_us": 0.05, "ref_runtime_us": 0.06}, v0=True))
    assert run.metrics.runtime_us == 50.0 and "unit_ms_as_us" in codes(run)


def test_ktbench_meta_ms_and_percentages():
    meta = {"problem_id": "p", "compiled": True, "correctness_rate": 1.0, "final_score": 0.5,
            "performance": {"runtime_mean_ms": 0.5, "ref_runtime_mean_ms": 1.0, "speedup_vs_ref": 2.0,
                            "peak_memory_bytes": 1024, "num_kernels": 2, "ref_num_kernels": 3}}
    summary = "submit_kernel PASSED: ok\n\n[meta] " + json.dumps(meta)
    run = load_bytes(submit_run({"ok": True, "tool": "submit_kernel", "summary": summary}))
    m = run.metrics
    assert m.runtime_us == 500.0 and m.ref_runtime_us == 1000.0 and m.speedup == 2.0 and m.correct
    assert m.get("timing.runtime").recorded_unit == "ms"
    assert "unit_ms_as_us" not in codes(run)
    assert run.agent_calls[0].result.summary == "submit_kernel PASSED: ok"


def test_pct_over_100():
    run = load_bytes(submit_run({"ok": True, "tool": "submit_kernel", "summary": "s", "runtime_us": 0.03,
                                 "roofline": {"occupancy_pct": 140.0, "dram_util_pct": 50.0}}))
    flags = [f for f in run.flags if f.code == "pct_over_100"]
    assert len(flags) == 1 and flags[0].metric == "roofline.occupancy_pct"


def kv(code: str) -> KernelVersion:
    return KernelVersion(number=1, sha1="x", code=code, first_turn=0, first_line=1)


def test_kernel_flags():
    real = '''
from torch.utils.cpp_extension import load_inline
src = """
__global__ void k(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * 2.0f; }
"""
class ModelNew(nn.Module):
    def forward(self, x):
        return mod.run(x)
'''
    assert kernel_flags(kv(real)) == []
    fallback = real.replace("return mod.run(x)", "return torch.matmul(x, x)")
    assert [f.code for f in kernel_flags(kv(fallback))] == ["torch_fallback"]
    assert [f.code for f in kernel_flags(kv("class ModelNew:\n    def forward(self, x):\n        return x * 2\n"))] == \
        ["no_gpu_code"]
    assert [f.code for f in kernel_flags(kv("class ModelNew:\n    def forward(self, x):\n        return x\n"))] == \
        ["no_gpu_code", "input_passthrough"]
    marker = real.replace("{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * 2.0f; }",
                          "{ }")
    assert "dummy_kernel" in [f.code for f in kernel_flags(kv(marker))]
    eq = real + "\nclass Out(dict):\n    def __eq__(self, other):\n        return True\n"
    assert "eq_override" in [f.code for f in kernel_flags(kv(eq))]
    stream = real.replace("return mod.run(x)", "s = torch.cuda.Stream()\n        return mod.run(x)")
    assert "side_stream" in [f.code for f in kernel_flags(kv(stream))]
    stub = KernelVersion(number=2, sha1="y", code="attachment://abc", first_turn=0, first_line=1,
                         attachment="attachment://abc")
    assert [f.code for f in kernel_flags(stub)] == ["code_unavailable"]


def test_redact_and_sanitize():
    assert redact("ensemble: backend=openai key=5HMCkL...") == "ensemble: backend=openai key=<redacted>"
    assert "sk-<redacted>" in redact("token sk-abcdefghijklmnop")
    s = sanitize("a\x1b[31mb\x07c\rd\te\nf")
    assert "\x1b" not in s and "\x07" not in s and "\r" not in s and "\t" in s and "\n" in s
