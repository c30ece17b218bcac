"""The fingerprints of ktui's checked wall-clock pass (ktui.engine.compare.fingerprint,
fingerprint_rule, fingerprints_wrong), without a worker: the rule never fails an output that the
comparison passes (outputs at the edge of the tolerance, of every dtype the comparison knows),
and it fails the outputs a kernel returns when it skips the work (zeros, another input's output,
a cut or padded one, none)."""

from __future__ import annotations

import pytest
from conftest import needs

pytestmark = needs("torch")


def _rows(outputs):
    import torch

    from ktui.engine.compare import fingerprint

    rows = []
    for o in outputs:
        fp, n = fingerprint(o)
        sa = fp.tolist() if fp is not None else [float("nan"), float("nan")]
        rows.append(sa + [float(n)])
    return torch.tensor(rows, dtype=torch.float64)


def _edge(r, sign, input_dtype=None):
    """An output every element of which is just inside the comparison's tolerance of ``r``."""
    import torch

    from ktui.engine.compare import effective_tolerance

    atol, rtol = effective_tolerance(r.dtype, input_dtype)
    if r.dtype.is_complex:
        rr = r.to(torch.complex128)
        unit = torch.where(rr.abs() > 0, rr / rr.abs().clamp_min(1e-300), torch.ones_like(rr))
        return rr + sign * 0.999 * (atol + rtol * rr.abs()) * unit
    rr = r.to(torch.float64)
    d = torch.sign(rr).where(rr != 0, torch.ones_like(rr))
    return rr + sign * 0.999 * (atol + rtol * rr.abs()) * d


CASES = ["float32", "float16", "bfloat16", "float64", "complex64", "fp16-inputs"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_outputs_the_comparison_passes_pass_the_fingerprint_rule(case, sign):
    import torch

    from ktui.engine.compare import compare_outputs, fingerprint_rule, fingerprints_wrong

    g = torch.Generator().manual_seed(7)
    dtype = {"fp16-inputs": torch.float32}.get(case) or getattr(torch, case)
    in_dtype = torch.float16 if case == "fp16-inputs" else None
    base = torch.randn(96, 40, generator=g, dtype=torch.float64) * 30
    r = base.to(dtype) if not dtype.is_complex else torch.complex(base, base.flip(0)).to(dtype)
    n = _edge(r, sign, in_dtype)
    assert compare_outputs(r, n, input_dtype=in_dtype)["passed"]
    rule = fingerprint_rule(r, in_dtype)
    # as a tensor, as one leaf of a tuple with a number and an integer tensor, and with the
    # same error everywhere in every call
    idx = torch.arange(5)
    assert fingerprints_wrong(_rows([n, n]), rule) == []
    rule2 = fingerprint_rule((r, 3, idx), in_dtype)
    assert fingerprints_wrong(_rows([(n, 3, idx)] * 3), rule2) == []


def test_the_cosine_metric_and_exact_outputs():
    import torch

    from ktui.engine.compare import compare_outputs, fingerprint_rule, fingerprints_wrong

    g = torch.Generator().manual_seed(3)
    r = torch.randn(500, generator=g)
    # relative L1 0.049 of the reference's, all of it on one side: passes the 0.05 metric
    n = r + 0.049 * r.abs().sum() / r.numel() * torch.sign(r)
    assert compare_outputs(r, n, cosine=(0.99, 0.05))["passed"]
    assert fingerprints_wrong(_rows([n]), fingerprint_rule(r, cosine=(0.99, 0.05))) == []
    ints = torch.randint(-9, 9, (64,), generator=g)
    assert fingerprints_wrong(_rows([ints.clone()]), fingerprint_rule(ints)) == []
    off = ints.clone()
    off[0] += 1
    assert fingerprints_wrong(_rows([off]), fingerprint_rule(ints)) == [0]
    b = ints > 0
    assert fingerprints_wrong(_rows([b.clone(), ~b]), fingerprint_rule(b)) == [1]


def test_what_a_kernel_returns_when_it_skips_the_work_is_wrong():
    import torch

    from ktui.engine.compare import fingerprint_rule, fingerprints_wrong

    g = torch.Generator().manual_seed(11)
    x, other = torch.randn(32, 64, generator=g), torch.randn(32, 64, generator=g)
    r = torch.relu(x) * 2
    rule = fingerprint_rule(r)
    bad = [torch.zeros_like(r), torch.empty(0), torch.relu(other) * 2, r[:31], torch.cat((r, r[:1])), x,
           torch.full_like(r, float("nan")), None, r.half() * 1.01]
    good = [r.clone(), r.double()]
    rows = _rows(good + bad)
    assert fingerprints_wrong(rows, rule) == list(range(len(good), len(good) + len(bad)))


def test_a_reference_with_nan_asks_for_nan():
    import torch

    from ktui.engine.compare import fingerprint_rule, fingerprints_wrong

    r = torch.tensor([1.0, float("nan"), 2.0])
    rule = fingerprint_rule(r)
    assert fingerprints_wrong(_rows([r.clone(), torch.tensor([1.0, 0.0, 2.0])]), rule) == [1]


def test_the_harness_rule_widens_the_fingerprint_rule_as_it_widens_the_comparison():
    """A float32 output at the edge of a harness's 1e-2 rule (KernelBench's older one: a TF32
    matmul's error) passes the comparison with that floor, so its fingerprints pass too; without
    the floor (fp32's 1e-4) the same output is wrong by both (seen on the H200: real KernelBench
    Triton kernels said to be "wrong while timed" after passing correctness)."""
    import torch

    from ktui.engine.compare import compare_outputs, fingerprint_rule, fingerprints_wrong

    g = torch.Generator().manual_seed(11)
    r = torch.rand(256, 64, generator=g) * 2048  # large positive outputs, like a matmul of rand inputs
    n = (r.to(torch.float64) * (1 + 0.9e-2)).to(torch.float32)  # every element off by 0.9 %
    floor = (1e-2, 1e-2)
    assert compare_outputs(r, n, floor=floor)["passed"]
    assert fingerprints_wrong(_rows([n, n]), fingerprint_rule(r, floor=floor)) == []
    assert not compare_outputs(r, n)["passed"]
    assert fingerprints_wrong(_rows([n]), fingerprint_rule(r)) == [0]
