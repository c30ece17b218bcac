"""ktui repro on a real NVIDIA GPU (marked `gpu`; skipped cleanly without CUDA).

    pytest -m gpu tests/test_repro_gpu.py

Uses $KTUI_CACHE_DIR when set (so builds from benchmarks/bench_repro.py are reused).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SEED_TRACE as SEED
from conftest import cuda_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def seed():
    from ktui.trace import load

    return load(str(SEED))


def _repro(run, version):
    from ktui.repro.api import ReproOptions, reproduce

    return reproduce(run, run.kernel(version), ReproOptions(device="cuda", trials=100, timeout=300))


def test_seed_v4_reproduces_with_unit_error(seed):
    from ktui.repro.verdict import REPRODUCED, UNIT_ERROR

    r = _repro(seed, "v4")
    assert r.result["status"] == "completed", r.result.get("failure")
    rows = {x.key: x for x in r.comparison.rows}
    assert rows["correctness"].verdict == REPRODUCED
    k = r.result["timing"]["kernel"]["mean_us"]
    ref = r.result["timing"]["reference"]["mean_us"]
    assert 5 < k < 200 and 5 < ref < 200, (k, ref)
    assert rows["timing.runtime"].verdict == UNIT_ERROR
    assert r.verdict == UNIT_ERROR
    assert r.result["environment"]["gpu"] and r.result["environment"]["driver"]
    assert r.result["memory"]["kernel_peak_mb"] > 0
    assert r.result["launches"]["num_kernels"] >= 1
    fl = r.result["timing"]["floor"]
    assert fl["busy_queue_us"] < fl["naive_us"]


def test_seed_v1_compiles_as_recorded(seed):
    from ktui.repro.verdict import REPRODUCED

    r = _repro(seed, "v1")  # only compiled in the trace; fails like v2 once run
    assert r.verdict == REPRODUCED and "never ran it" in r.reason


@pytest.mark.parametrize("version,needle", [("v2", "generator"), ("v3", "expected scalar type Int but found Long")])
def test_seed_failures_reproduce_the_same_way(seed, version, needle):
    from ktui.repro.verdict import SAME_FAILURE

    r = _repro(seed, version)
    assert r.verdict == SAME_FAILURE, (r.verdict, r.reason)
    assert needle in r.result["failure"]["message"]


def _run(code: str, tmp_path: Path) -> dict:
    from ktui.repro.runner import run_request

    ref = '''
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(1024, device="cuda")]
def get_init_inputs():
    return []
'''
    return run_request({"kernel_code": code, "reference_source": ref, "device": "cuda", "trials": 10,
                        "build_root": str(tmp_path / "build")}, run_timeout=120, compile_timeout=300)


def test_illegal_address_ends_the_worker_not_ktui(tmp_path):
    code = '''
import torch, torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def bad_store(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n)
    far = i.to(tl.int64) + (1 << 40)
    tl.store(y_ptr + far, x * 2, mask=i < n)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        bad_store[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
'''
    res = _run(code, tmp_path)
    assert res["status"] == "failed"
    f = res["failure"]
    assert f["kind"] in ("cuda_error", "crash"), f
    assert f["stage"] == "correctness"


def test_oom_is_reported(tmp_path):
    code = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        waste = torch.empty(1 << 45, dtype=torch.uint8, device=x.device)
        return x * 2
'''
    res = _run(code, tmp_path)
    assert res["failure"]["kind"] == "oom", res["failure"]
