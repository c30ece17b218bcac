"""A CUDA out-of-memory error is the kernel's only when the kernel's process itself needed the GPU;
when other work held the memory (in a sweep: the other kernels being judged beside it) it is "not
judged here (GPU memory)", never "not reproducible" and never a harness error. The messages below are
torch's, as an H200 sweep of real KernelBench and Harbor kernels printed them (2026-12-05)."""

from __future__ import annotations

import pytest

from ktui.repro.judging.model import NOT_JUDGED
from ktui.repro.judging.outcome import GPU_MEMORY, gpu_memory_held_by_others, unjudged

CAND = ("CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which "
        "318.69 MiB is free. Including non-PyTorch memory, this process has 32.11 GiB memory in use. Of the "
        "allocated memory 31.50 GiB is allocated by PyTorch, and 512.00 KiB is reserved by PyTorch but unallocated.")
REF = ("the reference failed (oom): CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity of "
       "139.80 GiB of which 1.63 GiB is free. Including non-PyTorch memory, this process has 30.70 GiB memory in "
       "use. Of the allocated memory 27.37 GiB is allocated by PyTorch, and 2.65 GiB is reserved")
OWN = ("CUDA out of memory. Tried to allocate 96.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which "
       "60.10 GiB is free. Including non-PyTorch memory, this process has 79.00 GiB memory in use.")


@pytest.mark.parametrize("kind,msg", [("oom", CAND), ("harness_error", REF)])
def test_memory_held_by_others_is_not_judged_here(kind, msg):
    res = {"status": "failed", "failure": {"kind": kind, "stage": "correctness", "message": msg}}
    u = unjudged(res)
    assert u is not None and u.verdict == NOT_JUDGED and u.why == GPU_MEMORY, u
    assert "held by other work" in u.message and "--no-pipeline" in u.how


def test_the_kernels_own_demand_is_its_failure():
    assert gpu_memory_held_by_others(OWN) is None
    res = {"status": "failed", "failure": {"kind": "oom", "stage": "correctness", "message": OWN}}
    assert unjudged(res) is None  # a judgement: the kernel asked for more than the GPU has


@pytest.mark.parametrize("msg", ["CUDA out of memory.", "out of memory: Tried to allocate x GiB", "",
                                 "Tried to allocate 1 GiB. total capacity of 0 GiB of which 0 GiB is free. "
                                 "this process has 0 GiB memory in use"])
def test_a_message_that_does_not_say_enough_is_left_as_it_was(msg):
    assert gpu_memory_held_by_others(msg) is None
