"""What is decided about a kernel before any judge or worker starts: on a machine that judges on a
CPU, a kernel whose source needs CUDA (CUDA ``load_inline`` sources, ``__global__``, Triton) is
*not judged here (no GPU)*. One decision for ``ktui repro``, the app's ``r`` key
(:func:`ktui.repro.api.reproduce` and :func:`~ktui.repro.api.decided_report`) and ``ktui verify``
(the planner, :class:`ktui.repro.verify.plan.Planner`), with the engine's own rule and words
(:mod:`ktui.engine.kernelsrc`): the result is the one the judge's build refusal gives after starting
its workers. Nothing here imports torch.
"""

from __future__ import annotations

import os
from typing import Any

from ktui.engine import HARNESS_VERSION
from ktui.engine.kernelsrc import CPU_NEEDS_CUDA, needs_cuda

#: what the result says decided it (never a worker)
DECIDED_BY = "ktui, from the kernel's source (no worker started)"


def on_cpu(device: str | None) -> bool:
    """Whether a kernel asked for on ``device`` is judged on a CPU: ``--device cpu``, or no device asked
    for ("cuda if available") and no NVIDIA driver on this machine (``/dev/nvidiactl``). Where a
    driver is present the judge decides (it may still find no usable GPU and refuse the build)."""
    if device == "cpu":
        return True
    return device is None and not os.path.exists("/dev/nvidiactl")


def cpu_refusal(kernel_sha1: str, reference_sha1: str | None) -> dict[str, Any]:
    """The result the judge gives a CUDA / Triton kernel on a CPU-only run (its build refuses it:
    ``ktui.engine.roles``, same kind, stage and words, so the same verdict: not judged here, no GPU,
    and how to get it judged), made without starting a worker. Never cached (``cache.cacheable``
    refuses it: it says nothing about the kernel)."""
    return {"status": "failed",
            "failure": {"stage": "build", "kind": "unsupported", "message": CPU_NEEDS_CUDA, "trial": None,
                        "fatal": False, "detail": None},
            "device": "cpu", "harness_version": HARNESS_VERSION, "kernel_sha1": kernel_sha1,
            "reference_sha1": reference_sha1, "stages": {"build": {"state": "failed", "seconds": 0.0}},
            "checks": [], "notes": [], "findings": [], "correctness": None, "timing": None, "build": None,
            "wall_seconds": 0.0, "worker_ops": {}, "decided_by": DECIDED_BY}


def not_judged_here(code: str | None, *, cpu: bool) -> bool:
    """Whether a kernel is not judged here, from its source alone: on a CPU (``cpu``: see
    :func:`on_cpu`), a kernel whose source needs CUDA."""
    return cpu and needs_cuda(code)


def decide(code: str | None, kernel_sha1: str, reference_sha1: str | None, *, cpu: bool) -> dict[str, Any] | None:
    """The result known without a judge (:func:`not_judged_here`: the judge's own refusal), or None
    (the kernel has to be judged)."""
    if not_judged_here(code, cpu=cpu):
        return cpu_refusal(kernel_sha1, reference_sha1)
    return None
