"""Reproduced outcomes of a sweep's runs, for the runs charts (``ktui runs``, ``ktui report``).

:func:`reproduced_results` is the one place the charts read re-execution results from; ``ktui
verify`` writes them (through the judge, into the repro cache) and may extend this lookup. Today a
run's result is the newest cached reproduction of its final kernel (by the code's sha1) judged
against the run's own reference (by its sha1; any other settings): ``correct`` from its
correctness stage, ``speedup`` from its timing. A run whose final kernel or reference is unknown,
or that was never re-executed, has no entry.

Reads JSON files only: no torch, no Textual (the app calls it from a worker thread).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ktui.repro import cache
from ktui.repro.judging.outcome import unjudged


@dataclass(frozen=True, slots=True)
class Reproduced:
    correct: bool | None
    speedup: float | None
    source: str = ""  # the cache entry's key


def from_result(result: dict[str, Any]) -> tuple[bool | None, float | None]:
    """(correct, speedup) of one harness result dict."""
    status = result.get("status")
    if unjudged(result) is not None:
        return None, None  # not judged here (no GPU, no reference, budget): says nothing about the kernel
    corr = result.get("correctness") if isinstance(result.get("correctness"), dict) else None
    timing = result.get("timing") if isinstance(result.get("timing"), dict) else None
    if status == "completed":
        correct = bool(corr.get("passed")) if corr is not None else None
    elif status == "failed" and cache.cacheable(result):
        correct = False  # the kernel itself failed (build, import, crash)
    else:
        return None, None
    sp = timing.get("speedup") if timing else None
    if isinstance(sp, bool) or not isinstance(sp, (int, float)) or not math.isfinite(sp) or sp <= 0:
        sp = None
    return correct, (float(sp) if correct and sp is not None else None)


def reproduced_results(runs: Iterable[Any]) -> dict[str, Reproduced]:
    """``real`` path -> :class:`Reproduced` for the runs whose final kernel has a cached result."""
    out: dict[str, Reproduced] = {}
    by_sha: dict[tuple[str, str], Reproduced | None] = {}
    for r in runs:
        sha = getattr(r, "final_sha1", None)
        real = getattr(r, "real", None)
        ref = getattr(r, "reference_sha1", None)
        if not sha or not real or not ref:
            continue  # no reference in the trace: no result can be said to be this run's
        k = (sha, ref)
        if k not in by_sha:
            by_sha[k] = None
            for ent in cache.entries_for(sha, reference_sha1=ref):
                res = ent.get("result")
                if not isinstance(res, dict):
                    continue
                correct, sp = from_result(res)
                if correct is None:
                    continue
                by_sha[k] = Reproduced(correct, sp, str(ent.get("key", "")))
                break
        if by_sha[k] is not None:
            out[real] = by_sha[k]
    return out
