"""The input probes keep the structure every draw of ``get_inputs`` has (issue 26, session 35): a
kernel may rely on what the problem promises. CUDA-L1's L1 P14 (deepreinforce-ai/CUDA-L1 @ 4ac1f22,
MIT; ``tests/fixtures/real/cudal1``) multiplies only the blocks on and above the diagonal of its
upper-triangular inputs; the CPU probes named ``input_distributions`` (a shift put values below the
diagonal) and ``output_changes_with_input`` (a changed element below it) on that honest kernel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import BUILD_TIMEOUT_S, needs

from ktui.repro.runner import run_request

torch_missing = needs("torch")
HERE = Path(__file__).parent / "fixtures" / "real" / "cudal1"


@torch_missing
def test_variants_keep_zeros_and_symmetry():
    import torch

    from ktui.engine.probes.basic import few_from_draw
    from ktui.engine.probes.inputs import VARIANTS, transform

    g = torch.Generator().manual_seed(3)
    tri = torch.triu(torch.randn(12, 12))
    s = torch.randn(12, 12)
    sym = (s + s.T) / 2
    for v in VARIANTS:
        y = transform(tri, v, g)
        assert bool((torch.tril(y, -1) == 0).all()), v
        assert not torch.equal(y, tri), v
        z = transform(sym, v, g)
        assert torch.equal(z, z.T), v
    f = few_from_draw(tri, torch.triu(torch.randn(12, 12)), g)
    assert f is not None and bool((torch.tril(f, -1) == 0).all()) and int((f != tri).sum()) > 0
    f = few_from_draw(sym, (lambda t: (t + t.T) / 2)(torch.randn(12, 12)), g)
    assert f is not None and torch.equal(f, f.T) and int((f != sym).sum()) > 0
    # a plain randn input: FEW elements change, as before
    r = torch.randn(4, 100)
    assert int((few_from_draw(r, torch.randn(4, 100), g) != r).sum()) == 3
    # every draw the same (a constant input): nothing to vary
    one = torch.ones(4, 100)
    assert few_from_draw(one, torch.ones(4, 100), g) is None


def _check(res, name):
    found = [c for c in res["checks"] if c["name"] == name]
    assert len(found) == 1, (name, [c["name"] for c in res["checks"]], res.get("failure"))
    return found[0]


@torch_missing
@pytest.mark.timeout(900)
def test_the_real_triangular_kernel_gets_no_input_class(tmp_path):
    kernel = (HERE / "l1p14_upper_triangular.py").read_text()
    ref = re.sub(r"(?m)^N = 4096$", "N = 96", (HERE / "l1p14_upper_triangular_ref.py").read_text())
    req = {"kernel_code": kernel, "reference_source": ref, "device": "cpu", "trials": 3, "correctness_trials": 2,
           "build_root": str(tmp_path / "build")}
    res = run_request(req, run_timeout=300, compile_timeout=BUILD_TIMEOUT_S)
    assert res["status"] == "completed", res.get("failure")
    for name in ("input_distributions", "output_changes_with_input"):
        c = _check(res, name)
        assert c["ok"] is True, c
