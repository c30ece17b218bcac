"""Static honesty findings on kernel source: what the code does that a reward hack would do.

Each finding names a class (``timer_patch``, ``threads``, ``ptr_cache`` ...), says in one line
what the code does, and points at the source line that does it. :func:`run_findings` pins
every finding to the kernel version and the turn where it first appears ("introduced at turn 6
in v3"), so a reader sees when an agent started to cheat.

The analysis reads the Python with :mod:`ast` (names resolved through the file's imports, so
``import time as t; t.perf_counter = f`` is found and a string that mentions ``perf_counter``
is not) and the embedded CUDA/C++ (the string literals) with small regexes. Source that does
not parse falls back to a few textual checks. No function here raises on any input: kernel
code is untrusted and may be anything.

Modules: :mod:`.model` (the classes and the finding types), :mod:`.names` (what is looked for),
:mod:`.analysis` (a pass, the native sources, the textual fallback), :mod:`.pybase`,
:mod:`.dataflow` and :mod:`.python` (the Python analysis); the entry points are here.

No torch, Textual or Rich here (the trace domain).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache

from ktui.trace.findings.analysis import _Analysis, _TextAnalysis
from ktui.trace.findings.astwalk import children_kept
from ktui.trace.findings.fallbacks import GHOST_WORDS
from ktui.trace.findings.model import CLASSES, ERROR, INFO, MAX_AST_CHARS, WARNING, Finding, SourceFinding
from ktui.trace.findings.names import _GPU_MARKERS, _REF_HALF
from ktui.trace.findings.python import _PyAnalysis

__all__ = ["CLASSES", "ERROR", "INFO", "MAX_AST_CHARS", "WARNING", "Finding", "SourceFinding", "run_findings",
           "source_findings"]


# ---- entry points -----------------------------------------------------------------------------------

def _reduced(precision: str | None) -> bool:
    """A harness precision below fp32 (``fp16``, ``bf16``, ``float8``...): the harness casts the
    reference and its inputs to it, so a kernel computing in it is not downgrading anything."""
    return isinstance(precision, str) and _REF_HALF.search(precision) is not None


def _analyse(code: str, reference: str | None, precision: str | None = None) -> list[SourceFinding]:
    with children_kept():  # the checks walk the tree thousands of times (findings.astwalk)
        return _analysed(code, reference, precision)


def _analysed(code: str, reference: str | None, precision: str | None = None) -> list[SourceFinding]:
    tree = None
    if len(code) <= MAX_AST_CHARS:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            tree = None  # not Python (or too deeply nested): the textual checks below
    a: _Analysis
    if tree is not None:
        py = a = _PyAnalysis(code, reference, tree)
        try:
            py.run()
            py.precision()
        except RecursionError:  # a pathologically nested tree: start over with the textual checks
            text = a = _TextAnalysis(code, reference)
            text.run()
    else:
        text = a = _TextAnalysis(code, reference)
        text.run()
    out = a.out
    if _reduced(precision):  # the harness runs it in reduced precision: neither a downgrade nor a ghost branch
        out = [f for f in out if f.code != "precision_downgrade" and GHOST_WORDS not in f.what]
    if not any(m in code for m in _GPU_MARKERS):
        out.insert(0, SourceFinding("no_gpu_code", ERROR, "no custom GPU code (no load_inline, __global__, <<<, "
                                    "Triton jit)", None, ""))
    order = list(CLASSES)
    out.sort(key=lambda f: (order.index(f.code) if f.code in order else len(order), f.line or 0))
    return out


@lru_cache(maxsize=512)
def source_findings(code: str, reference: str | None = None, precision: str | None = None) -> tuple[SourceFinding, ...]:
    """Every finding in one kernel source (``reference``: the problem's reference source, which
    precision and shape checks compare against; ``precision``: the precision the harness runs the
    problem in when it is not the reference's own, e.g. KernelBench's ``precision: fp16``). Never raises."""
    if not isinstance(code, str):
        return ()
    ref = reference if isinstance(reference, str) else None
    return tuple(_analyse(code, ref, precision if isinstance(precision, str) else None))


def run_findings(kernels: Iterable[object], reference: str | None = None,
                 precision: str | None = None) -> list[Finding]:
    """Findings of every kernel version, each pinned to the version (and its first turn) that
    introduced it: the first of the unbroken run of versions up to this one that has the class.

    ``kernels``: :class:`ktui.trace.model.KernelVersion` objects in version order (anything with
    ``number``, ``code``, ``first_turn`` and ``attachment``)."""
    out: list[Finding] = []
    streak: dict[str, tuple[int, int | None]] = {}  # class -> (version, turn) that started its streak
    for kv in kernels:
        code = getattr(kv, "code", None)
        number = getattr(kv, "number", 0)
        if getattr(kv, "attachment", None) or not isinstance(code, str):
            continue
        found = source_findings(code, reference, precision)
        classes = {f.code for f in found}
        streak = {c: v for c, v in streak.items() if c in classes}
        for f in found:
            since, turn = streak.setdefault(f.code, (number, getattr(kv, "first_turn", None)))
            out.append(Finding(f.code, f.severity, f.what, number, since, turn, f.line, f.evidence))
    return out

