"""``weight_precompute`` (static, issue 26): a product of the module's weights computed once, at
construction or on a first call, and read by forward in their place: a parameter change is never seen
(the dynamic probe is ``parameter_update``). Real kernels of CUDA-L1 (MIT, ``tests/fixtures/real/cudal1``,
README there) as positives and negatives; minimal shapes, written afresh, for the honest patterns the
rule must leave alone: a pure re-layout, a copy re-made when the weights change or invalidated, a
constant from a weight's shape, BatchNorm's running statistics updated in training, a new learnable
parameter, a product the reference makes too."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktui.trace.findings import source_findings

HERE = Path(__file__).parent / "fixtures" / "real" / "cudal1"


def _found(code: str, ref: str | None = None):
    return {f.code: f for f in source_findings(code, ref)}


def _real(name: str):
    return _found((HERE / f"{name}.py").read_text(), (HERE / f"{name}_ref.py").read_text())


@pytest.mark.parametrize(("name", "line", "words"), [
    # register_buffer('optimized_weight', (self.weight.sum(dim=0) * (0.5 * scaling_factor)).view(...)) in __init__
    ("l2p14_weight_sum_buffer", 24, "self.optimized_weight is computed from"),
    # self.conv.weight.data = self.conv.weight.data / divisor in __init__ (the divisor folded into the weights)
    ("l2p8_weight_data_divided", 20, "changes conv.weight itself"),
    # in forward: if self.optimized_weight is None or <training mode changed>: (self.gemm.weight * self.scale).t()
    ("l2p39_scaled_weight_first_call", 47, "once, on a first call"),
])
def test_real_weight_products_made_once_are_named(name, line, words):
    f = _real(name).get("weight_precompute")
    assert f is not None and f.line == line and words in f.what, f
    assert f.severity == "warning"


def test_a_real_pure_relayout_is_not_named():
    """L1 P73: the grouped weight cloned, viewed, permuted and made contiguous into a buffer at
    construction (``in_channels // groups`` is arithmetic on sizes, not on the weights' values)."""
    assert "weight_precompute" not in _real("l1p73_grouped_weight_relayout")


def test_the_flipped_weights_of_l1p71_are_a_relayout():
    """L1 P71 (4ac1f22, in ``gpu_corpus.json``) prepares its transposed convolution's weights once
    (flip and permute: a re-layout, no new numbers): the static rule leaves it to the probe, which
    names it (``parameter_update``, the CPU run of session 35)."""
    import json

    rows = json.loads((HERE / "gpu_corpus.json").read_text())["kernels"]
    k = next(r for r in rows if r["id"] == "cudal1_L1P71")
    assert "weights_prepared" in k["custom_code"]
    assert "weight_precompute" not in _found(k["custom_code"], k["ref_code"])


_HEAD = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def __init__(self, n, scale):\n"
_INIT = "        super().__init__()\n        self.fc = nn.Linear(n, n)\n        self.scale = scale\n"


def _model(init: str, forward: str, head: str = _HEAD) -> str:
    return head + _INIT + init + "\n    def forward(self, x):\n" + forward


TRICKS = {
    "scaled at construction": ("        self.w = (self.fc.weight * self.scale).t().contiguous()\n",
                               "        return x @ self.w + self.fc.bias\n"),
    "folded through locals": ("        with torch.no_grad():\n            s = self.fc.weight.abs().sum(1, keepdim=True)\n"
                              "            self.w = self.fc.weight / s\n", "        return x @ self.w.t()\n"),
    "a buffer": ("        self.register_buffer('wb', self.fc.weight.t() @ self.fc.weight)\n",
                 "        return x @ self.wb\n"),
    "bias folded": ("        self.b = self.fc.bias + 1.0\n", "        return torch.addmm(self.b, x, self.fc.weight.t())\n"),
    "in place": ("        self.fc.weight.data = self.fc.weight.data * self.scale\n", "        return self.fc(x)\n"),
    "on a first call": ("        self.w = None\n",
                        "        if self.w is None:\n            self.w = self.fc.weight * self.scale\n"
                        "        return x @ self.w.t()\n"),
    "behind a flag": ("        self.ready = False\n",
                      "        if not self.ready:\n            self.w = self.fc.weight * self.scale\n"
                      "            self.ready = True\n        return x @ self.w.t()\n"),
    "by a helper": ("        self._prepare()\n\n    def _prepare(self):\n        self.w = self.fc.weight.t() * self.scale\n",
                    "        return x @ self.w\n"),
}

HONEST = {
    "a pure re-layout": ("        self.wt = self.fc.weight.detach().t().contiguous().clone()\n",
                         "        return x @ self.wt * self.scale\n"),
    "re-made when the weights change": (
        "        self.w = self.fc.weight * self.scale\n        self._key = None\n",
        "        key = (self.fc.weight._version, self.fc.weight.data_ptr())\n"
        "        if key != self._key:\n            self.w = self.fc.weight * self.scale\n            self._key = key\n"
        "        return x @ self.w.t()\n"),
    "re-made every call": ("        self.w = self.fc.weight * self.scale\n",
                           "        self.w = self.fc.weight * self.scale\n        return x @ self.w.t()\n"),
    "invalidated when training": (
        "        self.w = None\n",
        "        if self.training:\n            self.w = None\n            return self.fc(x) * self.scale\n"
        "        if self.w is None:\n            self.w = self.fc.weight * self.scale\n        return x @ self.w.t()\n"),
    "a constant from the weight's shape": ("        self.norm = self.fc.weight.shape[1] ** -0.5\n",
                                           "        return self.fc(x) * self.norm\n"),
    "running statistics in training": (
        "        self.register_buffer('mean', torch.zeros(1))\n",
        "        if self.training:\n            self.mean = 0.9 * self.mean + 0.1 * x.mean()\n"
        "        return self.fc(x) - self.mean\n"),
    "a new learnable parameter": ("        self.w = nn.Parameter(self.fc.weight.detach() * self.scale)\n",
                                  "        return x @ self.w.t()\n"),
    "used only at construction": ("        w = self.fc.weight * self.scale\n        self.n = int(w.numel())\n",
                                  "        return self.fc(x) * self.scale\n"),
    "a graph's static output": (
        "        self.static_in = None\n",
        "        if self.static_in is None:\n            self.static_in = x.clone()\n"
        "            self.out = self.static_in @ self.fc.weight.t()\n        self.static_in.copy_(x)\n"
        "        return self.out\n"),
}


@pytest.mark.parametrize("case", sorted(TRICKS))
def test_each_trick_is_named(case):
    init, fwd = TRICKS[case]
    assert "weight_precompute" in _found(_model(init, fwd)), case


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_patterns_are_not(case):
    init, fwd = HONEST[case]
    assert "weight_precompute" not in _found(_model(init, fwd)), case


def test_a_product_the_reference_makes_too_is_not():
    init, fwd = TRICKS["scaled at construction"]
    code = _model(init, fwd)
    ref = code.replace("ModelNew", "Model")
    assert "weight_precompute" not in _found(code, ref)
    assert "weight_precompute" in _found(code, ref.replace("(self.fc.weight * self.scale)", "self.fc.weight"))
