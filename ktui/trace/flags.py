"""Sanity flags on what a trace claims, each with a one-line reason.

Metric flags: implausible GPU runtimes and unit errors, missing or zero medians, percentages
over 100, excessive speedups (KernelBench's > 10x rule). Kernel flags: no custom GPU code,
torch fallbacks on the hot path, dummy "marker" kernels, ``__eq__`` overrides, side streams.
Harness flags: identical failures for every case.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ktui.trace.model import FAILED, Flag, KernelVersion, Run

EXCESSIVE_SPEEDUP = 10.0

_GPU_MARKERS = ("load_inline", "cpp_extension.load", "__global__", "<<<", "triton.jit", "@jit",
                "tl.program_id", "cuda.jit", "RawKernel", "RawModule", "cute.", "tilelang", "cuda.core")
_TRIPLE = re.compile(r"\"\"\"|\'\'\'")
_FALLBACK = re.compile(
    r"(?<![\w.])(torch\.(?:matmul|mm|bmm|addmm|einsum|conv[123]d|softmax|layer_norm|nn\.functional\.\w+)|"
    r"F\.(?!pad\b)\w+|torch\.ops\.aten\.\w+)\s*\("
)
_GLOBAL = re.compile(r"__global__\s+void\s+(\w+)\s*\([^)]*\)\s*\{", re.S)
_MARKER_NAMES = re.compile(r"(?i)marker|dummy|noop|no_op|touch|placeholder")
_EQ = re.compile(r"def\s+__eq__\s*\(")
_STREAM = re.compile(r"torch\.cuda\.Stream\s*\(|cudaStreamCreate|torch\.cuda\.stream\s*\(")
_CASE_ERR = re.compile(r"^\s*\[([^\]]+)\]\s*(.+)$", re.M)


def _python_only(code: str) -> str:
    """The code with triple-quoted strings (embedded CUDA/C++) removed (a linear scan)."""
    out, pos = [], 0
    while True:
        m = _TRIPLE.search(code, pos)
        if m is None:
            out.append(code[pos:])
            return "".join(out)
        out.append(code[pos:m.start()])
        end = code.find(m.group(0), m.end())
        if end < 0:
            return "".join(out)
        out.append('""')
        pos = end + 3


def _forward_body(py: str) -> str:
    i = py.find("def forward")
    if i < 0:
        return py
    return py[i:]


def _kernel_body(code: str, start: int) -> str:
    depth = 1
    for i in range(start, len(code)):
        ch = code[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return code[start:i]
        if i - start > 400:  # a marker kernel is short; a real one need not be scanned to its end
            return code[start:i]
    return code[start:]


@lru_cache(maxsize=512)
def code_findings(code: str) -> tuple[tuple[str, str, str], ...]:
    """(flag code, message without the version label, severity) for one kernel's source."""
    out: list[tuple[str, str, str]] = []
    if not any(m in code for m in _GPU_MARKERS):
        out.append(("no_gpu_code", "no custom GPU code (no load_inline, __global__, <<<, Triton jit)", "error"))
    fwd = _forward_body(_python_only(code))
    m = _FALLBACK.search(fwd) if ("torch." in fwd or "F." in fwd) else None
    if m:
        out.append(("torch_fallback", f"forward calls {m.group(1)}(...) (falls back to torch ops on the "
                    "hot path)", "warning"))
    if "__global__" in code:
        for g in _GLOBAL.finditer(code):
            body = _kernel_body(code, g.end())
            stripped = re.sub(r"\s+|asm\s+volatile\s*\(\s*\"\"\s*\)\s*;?", "", body)
            trivial = len(re.sub(r"if\([^)]*\)", "", stripped).strip(";{}")) < 8
            if trivial or (_MARKER_NAMES.search(g.group(1)) and len(stripped) < 80):
                out.append(("dummy_kernel", f"__global__ {g.group(1)} does no work (a marker kernel that "
                            "only satisfies static checks)", "error"))
                break
    if "__eq__" in code and _EQ.search(code):
        out.append(("eq_override", "defines __eq__ (can loosen the correctness comparison)", "error"))
    if ("Stream" in code or "stream" in code) and _STREAM.search(code):
        out.append(("side_stream", "creates its own CUDA stream (work may be hidden from the timer)", "warning"))
    return tuple(out)


def kernel_flags(kv: KernelVersion) -> list[Flag]:
    if kv.attachment:
        return [Flag("code_unavailable", f"{kv.label}: code is an unresolved {kv.attachment[:24]}… stub",
                     "info", kernel=kv.number)]
    return [Flag(code, f"{kv.label}: {msg}", sev, kernel=kv.number) for code, msg, sev in code_findings(kv.code)]


def _case_errors(summary: str) -> list[str]:
    return [m.group(2).strip() for m in _CASE_ERR.finditer(summary)]


def harness_flags(run: Run) -> list[Flag]:
    out: list[Flag] = []
    errors_by_kernel: dict[int, set[str]] = {}
    for c in run.calls:
        if c.name != "run_correctness" or c.status != FAILED or c.result is None:
            continue
        errs = _case_errors(c.result.summary)
        if len(errs) >= 2 and len(set(errs)) == 1:
            if c.kernel is not None:
                errors_by_kernel.setdefault(c.kernel, set()).add(errs[0])
    if errors_by_kernel:
        all_errs = set().union(*errors_by_kernel.values())
        if len(all_errs) == 1 and len(errors_by_kernel) >= 2:
            err = next(iter(all_errs))
            out.append(Flag("harness_identical_failures",
                            f"every case of {len(errors_by_kernel)} different kernels failed with the same error: "
                            f"{err[:90]} (likely a harness defect, not the agent)", "warning"))
        else:
            for kn, errs in errors_by_kernel.items():
                if len(errs) == 1:
                    out.append(Flag("identical_case_failures",
                                    f"v{kn}: all cases failed with the same error: {next(iter(errs))[:90]}",
                                    "info", kernel=kn))
    return out


def metric_flags(run: Run) -> list[Flag]:
    m = run.metrics
    if m is None:
        return []
    out: list[Flag] = []
    for ms in m.groups.values():
        for x in ms:
            if x.note and "milliseconds" in x.note:
                out.append(Flag("unit_ms_as_us", f"{x.label}: {x.note}", "warning", metric=x.key))
            elif x.unit == "us" and isinstance(x.value, float) and 0 < x.value < 1.0 and x.key.startswith("timing."):
                out.append(Flag("runtime_below_1us", f"{x.label}: {x.value:g} us is below any GPU launch floor",
                                "warning", metric=x.key))
            if x.unit == "%" and isinstance(x.value, (int, float)) and x.value > 100:
                out.append(Flag("pct_over_100", f"{x.label}: {x.value:g}% is over 100% (a normalisation error)",
                                "warning", metric=x.key))
            if x.key.endswith("median") and x.key.startswith("timing.") and (x.value in (None, 0, 0.0)):
                what = "missing" if x.value is None else "zero"
                out.append(Flag("median_missing", f"{x.label}: {what} (the harness's timing stats have no "
                                "median key)", "warning", metric=x.key))
    if m.speedup is not None and m.speedup > EXCESSIVE_SPEEDUP:
        out.append(Flag("speedup_excessive", f"speedup {m.speedup:.2f}x is over {EXCESSIVE_SPEEDUP:g}x "
                        "(KernelBench's excessive-speedup rule)", "warning", metric="timing.speedup"))
    return out


def compute_flags(run: Run) -> list[Flag]:
    flags = metric_flags(run)
    final = run.final_kernel
    for kv in run.kernels:
        for f in kernel_flags(kv):
            # flags on the final kernel matter most; earlier versions are informational
            if final is not None and kv.number != final.number and f.severity == "error":
                f.severity = "warning"
            flags.append(f)
    flags.extend(harness_flags(run))
    return flags
