"""A JIT kernel's cache kept across its own worker lives (issue 23, item 3).

Triton compiles a kernel at its first call (and, under ``@triton.autotune``, benchmarks every config):
in a fresh worker, every time. The worker points ``TRITON_CACHE_DIR`` into the kernel's own build
folder and asks Triton to keep autotuning timings there (``TRITON_CACHE_AUTOTUNING=1``; Triton 3.6's
``knobs.autotuning.cache``, read in ``triton/runtime/autotuner.py`` as the kernel is decorated). The
judge copies that folder into the kernel's cached build right after the warm-up call, before any
judged input reached the kernel, with the candidate stopped; the next judge of the same kernel
starts from it. What the kernel writes there once it saw judged inputs never reaches the cache.

The Triton kernel is simulated on the CPU: the warm-up path is chosen by the source (a line
``from triton import ...``, here in a docstring), and the kernel writes into ``$TRITON_CACHE_DIR``
as Triton would (a launcher ``.so``, a JSON record).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ktui.engine import buildcache  # noqa: E402
from ktui.repro.api import ReproOptions, reproduce  # noqa: E402
from ktui.trace import load  # noqa: E402

REF = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 3.0

def get_inputs():
    return [torch.randn(32, 64)]
'''
KERNEL = '''"""Written for the CPU.
from triton import language  (the warm-up path without a GPU)
"""
import json
import os

import torch

_calls = [0]


class ModelNew(torch.nn.Module):
    def forward(self, x):
        _calls[0] += 1
        root = os.environ.get("TRITON_CACHE_DIR") or "/nonexistent"
        d = os.path.join(root, "KT3NBV6Q2LXUSYFUUJ5ZGPM4R7FCWYXMDP6BOYUXWJ4E7QSGYVKQ")  # an entry, as Triton names one
        seen = sorted(os.listdir(root)) if os.path.isdir(root) else []
        os.makedirs(d, exist_ok=True)
        if _calls[0] == 1:  # the first call: what a JIT compiles
            with open(os.path.join(d, "__triton_launcher.so"), "wb") as fh:
                fh.write(b"compiled")
            with open(os.path.join(d, "first.json"), "w") as fh:
                json.dump({"dir": root, "autotuning": os.environ.get("TRITON_CACHE_AUTOTUNING"), "seen": seen}, fh)
        else:  # later calls saw judged inputs: nothing of this may reach the cache
            with open(os.path.join(d, "later_%d.json" % _calls[0]), "w") as fh:
                fh.write(json.dumps(x.flatten()[:4].tolist()))
        return torch.relu(x) * 3.0
'''


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "KernelBench" / "level1").mkdir(parents=True)
    (tmp_path / "KernelBench" / "level1" / "1_relu.py").write_text(REF)
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    p = run_dir / "level_1_problem_1_sample_0_kernel.py"
    p.write_text(KERNEL)
    return p


def test_the_jit_cache_is_kept_for_the_kernels_next_worker_life(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    run = load(str(_folder(tmp_path)))
    opts = ReproOptions(device="cpu", trials=2, timeout=120, compile_timeout=300, fresh=True)

    first = reproduce(run, run.final_kernel, opts).result
    assert first["status"] == "completed", first.get("failure")
    jc = first["build"]["jit_cache"]
    assert jc["stored"] is True and jc["fetched"] is False, jc
    cached = Path(first["build"]["dir"]) / buildcache.JIT_CACHE
    kept = sorted(str(p.relative_to(cached)) for p in cached.rglob("*") if p.is_file())
    # the warm-up call's files only: nothing written once the kernel saw a judged input
    assert [k.split("/")[-1] for k in kept] == ["__triton_launcher.so", "first.json"], kept
    entry = cached / kept[0].split("/")[0]
    rec = json.loads((entry / "first.json").read_text())
    assert rec["autotuning"] == "1"  # the env reached the worker
    assert rec["dir"].endswith("/" + buildcache.JIT_CACHE) and rec["seen"] == []

    second = reproduce(run, run.final_kernel, opts).result
    assert second["status"] == "completed", second.get("failure")
    jc2 = second["build"]["jit_cache"]
    assert jc2["fetched"] is True and jc2["stored"] is False, jc2  # started from the first life's cache
    assert sorted(str(p.relative_to(cached)) for p in cached.rglob("*") if p.is_file()) == kept  # never added to


def test_publish_jit_adds_the_folder_beside_a_cached_extension(tmp_path):
    key = "0123456789abcdef"
    work, cache = tmp_path / "work", tmp_path / "cache" / key
    ext = work / "ext_k0123456789"
    ext.mkdir(parents=True)
    (ext / "ext_k0123456789.so").write_bytes(b"x")
    assert buildcache.publish(str(work), str(cache))["stored"]  # the extension, cached at the build
    assert buildcache.publish_jit(str(work), str(cache)) == {"stored": False, "why": "nothing compiled"}
    entry = work / "triton" / "ABCDEFGHIJKLMNOP"
    entry.mkdir(parents=True)
    (entry / "k.cubin").write_bytes(b"c")
    (entry / "lock").write_bytes(b"")
    (entry / "planted.py").write_text("print(1)")  # not one of Triton's kinds
    (ext / "later.o").write_bytes(b"o")  # the extension's folder is not published again
    assert buildcache.publish_jit(str(work), str(cache))["stored"]
    assert sorted(p.name for p in (cache / "triton" / "ABCDEFGHIJKLMNOP").iterdir()) == ["k.cubin"]
    assert sorted(p.name for p in (cache / "ext_k0123456789").iterdir()) == ["ext_k0123456789.so"]
    assert buildcache.publish_jit(str(work), str(cache)) == {"stored": False, "why": "already cached"}
    assert not [p for p in cache.iterdir() if p.name.startswith(".incoming")]
