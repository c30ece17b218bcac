"""Honesty probes: the extension point of the repro pipeline.

Two kinds, both registered by decorator (modules of this package are imported by
:func:`load_all`, so a new file here is picked up without touching the pipeline):

- **judge probes** run in the judge (ktui code, no trace code) after correctness and timing,
  in registration order. Signature ``fn(ctx) -> None`` where ``ctx`` is a
  :class:`ktui.engine.pipeline.ProbeContext`: ``ctx.reference`` / ``ctx.candidate`` are
  the two worker handles (``call(op, args, fds) -> (data, fds)``), ``ctx.reference_io(seed, slot)``
  gets reference inputs and outputs (``ctx.candidate_inputs(seed, slot)`` also puts them into the
  candidate's slot), ``ctx.candidate_forward(inputs, slot)`` runs the kernel
  on them, ``ctx.compare(ref, out)`` is the judge's comparison, ``ctx.result`` the result so
  far. They report with ``ctx.add_check(name, ok, detail)`` (a row of ``result["checks"]``:
  ``ok`` False makes the verdict "suspicious") and ``ctx.add_finding(cls, reason, evidence)``
  (``result["findings"]``: ``{"class", "reason", "evidence"}``).
- **worker probes** run inside the candidate worker (where the kernel lives), asked for by a
  judge probe with ``ctx.candidate.call("probe", {"name": ..., "args": {...}})``. Signature
  ``fn(wctx, args, fds, out_fds) -> {"findings": [...], "data": {...}}`` where ``wctx`` is a
  :class:`ktui.engine.roles.Context` (``model``, ``module``, ``slots``, ``device``,
  ``prims``). Whatever they return is data from an untrusted process: the judge validates its
  shape (protocol.REPLY_SCHEMAS["probe"]) and must not believe a "no finding" from it.
  ``@worker_probe(name, role="reference")`` registers one for the reference worker instead
  (float64 runs, inputs at another size): asked for with ``ctx.reference.call("probe", ...)``.

Judge probes run in ``order`` (default 50), then registration order: one that may leave the
candidate worker unusable (a kernel crashing at another size) registers with a high order.

A probe that raises StageFailure with ``fatal=False`` is recorded as a check that "could not run".
This package must stay self-contained (stdlib, torch lazily, relative imports of ``..harness``):
``ktui export`` embeds it in the standalone script.
"""

from __future__ import annotations

import importlib
import pkgutil

JUDGE_PROBES: list[tuple[str, object]] = []
WORKER_PROBES: dict[str, object] = {}  # run in the candidate worker
REFERENCE_PROBES: dict[str, object] = {}  # run in the reference worker
_ORDER: dict[str, int] = {}
ON_FAILURE: set[str] = set()
_loaded = False


def judge_probe(name, order=50, on_failure=False):
    """``on_failure``: also run when correctness failed (timing and the other probes are then
    skipped): a probe that can say why the output is wrong (a thread still filling it)."""

    def deco(fn):
        if not any(n == name for n, _ in JUDGE_PROBES):
            JUDGE_PROBES.append((name, fn))
            _ORDER[name] = int(order)
            if on_failure:
                ON_FAILURE.add(name)
            JUDGE_PROBES.sort(key=lambda p: _ORDER.get(p[0], 50))  # stable: registration order within one order
        return fn
    return deco


def worker_probe(name, role="candidate"):
    def deco(fn):
        (REFERENCE_PROBES if role == "reference" else WORKER_PROBES)[name] = fn
        return fn
    return deco


def load_all():
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{mod.name}")


def run_judge_probes(ctx, correctness_failed=False):
    from ..errors import StageFailure, one_line

    load_all()
    for name, fn in JUDGE_PROBES:
        if correctness_failed and name not in ON_FAILURE:
            continue
        try:
            fn(ctx)
        except StageFailure as f:
            if f.fatal:
                raise
            ctx.add_check(name, None, f"could not run: {one_line(f.message, 200)}")


# worker probes must be registered in the worker too (roles.op_probe looks them up here)
load_all()
