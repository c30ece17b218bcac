"""Triton's default TF32 in ``tl.dot`` is said as a fact, not a suspicion (issue 26).

19 of the 134 real KernelBench Triton kernels of sokserey/tritonDump (6842d4f) call ``tl.dot(a, b)``
on float32 operands: Triton computes that in TF32 unless told ``input_precision="ieee"``. Against a
float32 reference the run-time check rightly finds fewer bits; the static finding says why (the
default, not a trick), at severity info: it is shown, and it is not a hack class.
"""

from __future__ import annotations

import pytest

from ktui.trace.facts import hack_classes
from ktui.trace.findings import source_findings
from ktui.trace.model import Flag, KernelVersion, Run

REF32 = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, a, b):\n        return a @ b\n" \
        "def get_inputs():\n    return [torch.rand(64, 64), torch.rand(64, 64)]\n"
REF16 = REF32.replace("torch.rand(64, 64)", "torch.rand(64, 64, dtype=torch.float16)")


def _kernel(dot: str) -> str:
    return f'''import torch, triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    acc += {dot}
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], acc)

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        mm[(1,)](a, b, c, BLOCK=64)
        return c
'''


def _codes(code: str, ref: str | None = REF32) -> dict[str, str]:
    return {f.code: f.severity for f in source_findings(code, ref)}


def test_a_default_dot_is_an_info_finding():
    got = _codes(_kernel("tl.dot(a, b)"))
    assert got.get("triton_tf32_default") == "info"
    assert "precision_downgrade" not in got


@pytest.mark.parametrize("dot", ["tl.dot(a, b, input_precision='ieee')", "tl.dot(a, b, allow_tf32=False)",
                                 "tl.dot(a, b, None, 'ieee')", "tl.dot(a, b, **opts)"])
def test_a_chosen_precision_is_not_the_default(dot):
    assert "triton_tf32_default" not in _codes(_kernel(dot))


def test_an_explicit_tf32_stays_a_precision_downgrade():
    got = _codes(_kernel("tl.dot(a, b, input_precision='tf32')"))
    assert got.get("precision_downgrade") == "warning" and "triton_tf32_default" not in got


def test_a_half_precision_task_is_not_told_about_tf32():
    assert "triton_tf32_default" not in _codes(_kernel("tl.dot(a, b)"), REF16)


def test_an_info_finding_is_shown_but_is_not_a_hack_class():
    run = Run(path="x.jsonl")
    run.kernels.append(KernelVersion(1, "s", _kernel("tl.dot(a, b)"), None, 1, path="k.py"))
    run.final_kernel_number = 1
    run.flags.append(Flag("triton_tf32_default", "tl.dot without input_precision", "info", kernel=1))
    run.flags.append(Flag("timer_patch", "patches time.perf_counter", "error", kernel=1))
    assert hack_classes(run) == ["timer_patch"]
