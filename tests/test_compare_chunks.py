"""The judge's comparison a chunk at a time (ktui.engine.compare.COMPARE_CHUNK): a KernelBench L1
output of 6-8 GiB in float32 needed tens of GiB of float64 temporaries at once. Chunked, every
verdict, reason and error figure is the one the whole tensor gave, also where NaN, inf or the
failing elements sit across chunk boundaries, with the cosine metric, for integer outputs and
tuples of outputs."""

from __future__ import annotations

import pytest
from conftest import needs

pytestmark = needs("torch")


def _cases():
    import torch

    g = torch.Generator().manual_seed(3)
    r = torch.randn(37, 29, generator=g)
    cases = {"equal": (r, r.clone()), "within": (r, r * (1 + 5e-5))}
    off = r.clone()
    off[20, 3] += 1.0  # one element wrong, in a later chunk
    cases["one wrong"] = (r, off)
    rn = r.clone()
    rn[0, 0], rn[30, 7] = float("nan"), float("inf")
    nn_ = rn.clone()
    cases["reference nan and inf matched"] = (rn, nn_)
    bad = rn.clone()
    bad[30, 7] = 1.0  # inf in the reference, finite here: an infinite error
    cases["inf missed"] = (rn, bad)
    nan_out = r.clone()
    nan_out[12, 12] = float("nan")
    cases["nan produced"] = (r, nan_out)
    ints = torch.randint(0, 9, (50,), generator=g)
    i2 = ints.clone()
    i2[49] += 1
    cases["integers"] = (ints, ints.clone())
    cases["integers off"] = (ints, i2)
    cases["tuple"] = ((r, ints), (r * (1 + 2e-5), ints.clone()))
    half = r.to(torch.float16)
    cases["fp16"] = (half, (half.float() * 1.004).half())
    return cases


@pytest.mark.parametrize("cosine", [None, (0.99, 0.05)])
def test_chunked_comparison_gives_what_the_whole_did(monkeypatch, cosine):
    from ktui.engine import compare

    for name, (ref, out) in _cases().items():
        whole = compare.compare_outputs(ref, out, cosine=cosine)
        for chunk in (1, 7, 64, 1000):
            monkeypatch.setattr(compare, "COMPARE_CHUNK", chunk)
            got = compare.compare_outputs(ref, out, cosine=cosine)
            assert got["passed"] == whole["passed"] and got["reason"] == whole["reason"], (name, chunk)
            for k in ("max_abs_error", "max_rel_error", "mean_abs_error", "mean_rel_error"):
                assert got[k] == pytest.approx(whole[k], rel=1e-9, abs=1e-12), (name, chunk, k)
            if cosine is not None and "cosine" in whole:
                assert got["cosine"] == pytest.approx(whole["cosine"], rel=1e-9, abs=1e-9), (name, chunk)
        monkeypatch.setattr(compare, "COMPARE_CHUNK", 1 << 22)
    # the figures themselves: one wrong element is found in whichever chunk it sits
    ref, out = _cases()["one wrong"]
    monkeypatch.setattr(compare, "COMPARE_CHUNK", 7)
    got = compare.compare_outputs(ref, out)
    assert not got["passed"] and got["max_abs_error"] == pytest.approx(1.0, rel=1e-5)


def test_the_cosine_metric_is_torchs():
    import torch

    from ktui.engine import compare

    g = torch.Generator().manual_seed(5)
    r = torch.randn(4000, generator=g, dtype=torch.float64)
    n = r + 0.3 * torch.randn(4000, generator=g, dtype=torch.float64)
    got = compare.compare_outputs(r, n, cosine=(0.99, 0.05))
    want = float(torch.nn.functional.cosine_similarity(n, r, dim=0))
    assert got["cosine"] == pytest.approx(want, rel=1e-9) and not got["passed"]
    assert got["reason"].startswith("cosine similarity")
