"""Can a kernel version be re-executed here at all? Checks made before anything is built.

``repro_precheck(kv, device)`` returns a one-line reason when it cannot, else None:

- a HIP (AMD ROCm) kernel (``hip/hip_runtime.h``, ``hipLaunchKernelGGL``, ``hipcc``...) cannot
  run on an NVIDIA GPU (nor on a CPU): say so rather than fail at compile;
- a partial version (an edit whose base content is not in the trace) is not a whole program.

Pure string checks: no torch, nothing executed.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers.kernels import hip_markers


def repro_precheck(kv: Any, device: str | None = None) -> str | None:
    code = getattr(kv, "code", "") or ""
    label = getattr(kv, "label", "this kernel")
    if getattr(kv, "partial", False):
        return (f"{label} is a partial version ({getattr(kv, 'origin', '') or 'its file content is not all in the trace'}): "
                "it is not a whole program and cannot be re-executed")
    hip = hip_markers(code)
    if hip:
        where = "a CPU" if device == "cpu" else "an NVIDIA GPU"
        return (f"{label} is a HIP (AMD ROCm) kernel ({', '.join(hip[:3])}): a HIP kernel cannot run on {where}; "
                "re-execute it on an AMD GPU with a ROCm build of PyTorch")
    return None
