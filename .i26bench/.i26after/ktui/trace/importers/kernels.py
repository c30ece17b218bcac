"""Kernel code: what makes a file a kernel (markers, extensions), paths, the recovered file states
(:class:`Candidate`), fenced kernels in assistant text, the backend and HIP markers of a source.

Where the rest went (docs/architecture.md): following the files an agent writes,
:mod:`ktui.trace.importers.tracker` (``FileTracker``); verifier outcomes in tool outputs,
:mod:`ktui.trace.importers.evidence`; Codex ``apply_patch`` and unified-diff hunks,
:mod:`ktui.trace.importers.patches`. Pure functions over strings: nothing here runs trace code.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ktui.trace.model import ToolCall

KERNEL_MARKERS = ("ModelNew", "triton.jit", "__global__", "load_inline", "tl.program_id", "cuda.jit",
                  "RawKernel", "hipLaunchKernelGGL", "cpp_extension.load", "@cute.kernel", "tilelang")
KERNEL_EXTS = (".cu", ".cuh", ".hip", ".cl", ".metal")
MAX_CODE = 8 << 20  # a longer "file" is kept only as its first 8 MiB (and flagged partial)


def is_kernel_code(code: str) -> bool:
    return any(m in code for m in KERNEL_MARKERS)


def is_kernel_path(path: str | None) -> bool:
    return bool(path) and path.lower().endswith(KERNEL_EXTS)


def norm_path(path: str, cwd: str | None = None) -> str:
    p = path.strip().strip("'\"")
    if cwd and not p.startswith("/"):
        p = posixpath.join(cwd, p)
    return posixpath.normpath(p) if p else p


@dataclass(slots=True)
class Candidate:
    """One recovered file state, in call order."""

    path: str | None
    code: str
    origin: str
    call: ToolCall | None
    turn: int | None
    line: int
    partial: bool = False
    final_answer: bool = False
    unknown: bool = False  # changed in place by a command ktui cannot replay: content not known


# ---- fenced blocks -----------------------------------------------------------------------------
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)
_SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh", "text", "txt", "json", "diff", "output"}


def fenced_kernels(text: str) -> list[str]:
    """Fenced blocks (not shell) that define ModelNew or a Triton / CUDA / HIP kernel."""
    if not isinstance(text, str) or "```" not in text:
        return []
    out = []
    for m in _FENCE.finditer(text):
        lang, code = m.group(1).lower(), m.group(2)
        if lang in _SHELL_LANGS:
            continue
        if "ModelNew" in code or "triton.jit" in code or "__global__" in code:
            out.append(code)
    return out


_DEFINES_MODEL_NEW = re.compile(r"^\s*class\s+ModelNew\b|^\s*ModelNew\s*=", re.M)


def defines_model_new(code: str) -> bool:
    """The version defines ModelNew (a test script that imports and runs it does not)."""
    return bool(_DEFINES_MODEL_NEW.search(code or ""))


def backend_of(code: str) -> str | None:
    """The GPU language a kernel is written in, from its source."""
    if hip_markers(code):
        return "hip"
    if "triton.jit" in code or "import triton" in code:
        return "triton"
    if "__global__" in code or "load_inline" in code or "cuda.jit" in code or "RawKernel" in code:
        return "cuda"
    return None


# ---- platform --------------------------------------------------------------------------------------
_HIP = re.compile(r"hip/hip_runtime\.h|\bhipLaunchKernelGGL\b|\bhipMalloc\b|\bhipMemcpy\b|\bhipDeviceSynchronize\b|"
                  r"\bhipStream_t\b|\bhipcc\b|__HIP_PLATFORM_AMD__|\bhipError_t\b|\brocm\b|\bROCm\b")


def hip_markers(code: str) -> list[str]:
    """HIP-only constructs in a kernel's source (distinct, in order)."""
    seen: list[str] = []
    for m in _HIP.finditer(code or ""):
        if m.group(0) not in seen:
            seen.append(m.group(0))
    return seen
