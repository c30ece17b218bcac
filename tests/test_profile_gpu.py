"""`ktui repro --profile` for real: Nsight Compute on a CUDA GPU (marked gpu; skipped without a GPU
or without ncu).

    pytest -m gpu tests/test_profile_gpu.py

$KTUI_PROFILE_JSON=FILE keeps the seed v4 profile's --json output there (scripts/gpu/profile.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SEED_TRACE as SEED
from conftest import cuda_available

from ktui.repro.profile.ncu import find_ncu

REPO = Path(__file__).resolve().parents[1]


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(find_ncu() is None, reason="needs Nsight Compute (ncu)"),
              pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")]

REFERENCE = '''
import torch
import torch.nn as nn

N = {n}


class Model(nn.Module):
    def forward(self, {args}):
        return {ref}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''

KERNEL = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, {args}):
        return {new}
'''


def _side(kind: str):
    from ktui.repro.profile.run import ProfileOptions, profile_side
    from ktui.repro.profile.summary import summarize

    if kind == "memory":  # 64 MB fp32 x * 2.0
        fmt = {"n": 16 * 2**20, "args": "x", "ref": "x * 2.0", "new": "x * 2.0",
               "inputs": "torch.randn(N, device='cuda')"}
    else:  # 4096^3 fp32 matmul on the FMA pipe (TF32 off)
        fmt = {"n": 4096, "args": "a, b", "ref": "a @ b", "new": "a @ b",
               "inputs": "torch.randn(N, N, device='cuda'), torch.randn(N, N, device='cuda')"}
    ref = REFERENCE.format(**fmt)
    code = KERNEL.format(**fmt)
    req = {"kernel_code": code, "kernel_sha1": "0" * 40, "kernel_label": kind, "reference_source": ref,
           "reference_origin": "test", "device": "cuda", "method": "cuda_event", "trials": 1,
           "correctness_trials": 1}
    sp = profile_side("kernel", req, find_ncu(), ProfileOptions(timeout=240))
    assert sp.status == "completed", sp.message
    return sp, summarize_check(sp, summarize)


def summarize_check(sp, summarize):
    assert sp.launches and sp.forward["launches"] >= 1
    assert sp.passes and max(sp.passes.values()) >= 1
    return sp.forward


def test_seed_v4_profile_cli_json(tmp_path):
    env = dict(os.environ, KTUI_CACHE_DIR=os.environ.get("KTUI_CACHE_DIR", str(tmp_path / "cache")))
    out = subprocess.run([sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile", "--json"],
                         capture_output=True, text=True, env=env, timeout=540, cwd=REPO)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    d = json.loads(out.stdout)
    keep = os.environ.get("KTUI_PROFILE_JSON")
    if keep:
        Path(keep).write_text(out.stdout, encoding="utf-8")
    assert d["status"] == "completed", d.get("message")
    assert d["clock_control"] == "none"
    keys = {r["key"] for r in d["rows"]}
    for k in ("profile.sol.sol_score", "profile.sol.dram_util_pct", "profile.roofline.occupancy_pct",
              "profile.roofline.ld_sectors_per_req", "profile.warp_stalls.long_scoreboard",
              "profile.warp_stalls.short_scoreboard"):
        assert k in keys
    row = {r["key"]: r for r in d["rows"]}
    assert row["profile.roofline.block_size"]["reproduced"] == 256
    assert row["profile.roofline.ld_sectors_per_req"]["verdict"] == "reproduced"
    assert any("impossible" in c for c in d["callouts"])
    assert d["roofline"]["chart"] and d["roofline"]["ridge"]["fp32"] > 1
    assert d["sides"]["reference"]["status"] == "completed"


def test_memory_bound_kernel():
    sp, f = _side("memory")
    assert f["classification"]["bound"] == "memory", f["classification"]
    assert f["dram_pct"] > 40 and f["dram_gbs"] > 1000
    assert f["peak_dram_gbs"] > f["dram_gbs"]
    assert f["ai_fp32"] < f["ridge_fp32"]
    top = f["stalls_top"]
    assert top and sum(s["share_pct"] for s in top) <= 100.0 + 1e-6


def test_compute_bound_kernel():
    sp, f = _side("compute")
    assert f["classification"]["bound"] == "compute", f["classification"]
    assert f["sm_pct"] > 60
    assert f["ai"] > f["ridge_fp32"]
    assert f["flop"]["fp32"] + (f["flop"].get("tensor") or 0) == pytest.approx(2 * 4096**3, rel=0.02)
