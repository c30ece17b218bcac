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

What a probe needs is declared (``device``, ``new_inputs``, ``fresh_process``) and its cost
reported: a ``probe`` event (name, seconds, what it needs) and ``result["probes"][name]``. A probe
whose ``device`` is "none" reads the result so far and holds no device; "shared" runs device work
that does not depend on being alone (another judge's correctness may run beside it); "alone" holds
the device shared too, and opens ``ctx.alone(what)`` around the calls whose time it measures (the
comparisons after them need no device: outside that window). ``on_failure`` probes are the only
ones that run for a kernel that failed correctness (its failing evidence: nothing else, no timing).

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
NEEDS: dict[str, dict] = {}  # name -> {"device": "none"|"shared"|"alone", "new_inputs": bool, "fresh_process": bool,
#                                        "speed_only": bool}
# a kernel measured at less than this fraction of the reference's speed gets no speed_only probe
SPEED_ONLY_BELOW = 0.9
DEVICE_KINDS = ("none", "shared", "alone")
_loaded = False


def judge_probe(name, order=50, on_failure=False, device="shared", new_inputs=True, fresh_process=False,
                speed_only=False):
    """``on_failure``: also run when correctness failed (timing and the other probes are then
    skipped): a probe that can say why the output is wrong (a thread still filling it).
    ``speed_only``: it looks only for speed that is not earned (results reused, work hidden from
    the timer, faster than physics, wrong answers while timed); a kernel measured here clearly
    slower than the reference earns nothing such a hack could buy, so the probe is not run for
    it (a check "not needed", never a pass or a flag).
    ``device``: "none" (it reads the result so far), "shared" (device work, not timed), "alone"
    (it measures time: see ``ctx.alone``); ``new_inputs``: it asks the reference for inputs of its
    own; ``fresh_process``: it needs a worker no other probe ran in (none does today: the ones
    that may leave the worker unusable run last, by ``order``)."""
    if device not in DEVICE_KINDS:
        raise ValueError(f"device must be one of {DEVICE_KINDS}")

    def deco(fn):
        if not any(n == name for n, _ in JUDGE_PROBES):
            NEEDS[name] = {"device": device, "new_inputs": bool(new_inputs), "fresh_process": bool(fresh_process),
                           "speed_only": bool(speed_only)}
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
    """The judge probes in order, each in the device window it declared; each one's cost in a
    ``probe`` event and in ``result["probes"]``. A kernel that failed correctness gets only the
    ``on_failure`` probes (its failing evidence); one measured clearly slower than the reference
    gets no ``speed_only`` probe (said in a check that is neither a pass nor a flag)."""
    import time

    from ..errors import StageFailure, one_line

    load_all()
    costs = ctx.result.setdefault("probes", {})
    judge = getattr(ctx, "judge", None)
    slower = _clearly_slower(ctx.result)
    for name, fn in JUDGE_PROBES:
        if correctness_failed and name not in ON_FAILURE:
            continue
        needs = NEEDS.get(name) or {"device": "shared", "new_inputs": True, "fresh_process": False,
                                    "speed_only": False}
        if slower is not None and needs.get("speed_only") and not correctness_failed:
            ctx.add_check(name, None, f"not needed: the kernel ran at {slower:.2f}x the reference's speed here; "
                                      "this check looks for speed that is not earned")
            costs[name] = dict(needs, seconds=0.0, state="not needed")
            if judge is not None and hasattr(judge, "emit"):
                judge.emit({"event": "probe", "name": name, "seconds": 0.0, "state": "not needed", **needs})
            continue
        kind = "none" if needs["device"] == "none" else "shared"
        window = judge.device(kind, f"probe {name}") if judge is not None and hasattr(judge, "device") else None
        wins = getattr(judge, "windows", None)
        waited0 = float(getattr(wins, "waited_s", 0.0) or 0.0)
        t0 = time.monotonic()
        state = "done"
        try:
            if window is None:
                fn(ctx)
            else:
                with window:
                    fn(ctx)
        except StageFailure as f:
            if f.fatal:
                state = "failed"
                raise
            state = "could not run"
            ctx.add_check(name, None, f"could not run: {one_line(f.message, 200)}")
        except BaseException:
            state = "failed"
            raise
        finally:
            secs = round(time.monotonic() - t0, 3)
            # the part of it spent waiting for the device (another judge's timing window): not its cost
            waited = round(max(0.0, float(getattr(wins, "waited_s", 0.0) or 0.0) - waited0), 3)
            costs[name] = dict(needs, seconds=secs, state=state, waited_s=waited)
            if state != "failed" and judge is not None and hasattr(judge, "drop_slots"):
                judge.drop_slots(prefix="p-")  # the probe's input sets: each one is a whole set on the device
            if judge is not None and hasattr(judge, "emit"):
                judge.emit({"event": "probe", "name": name, "seconds": secs, "state": state, "waited_s": waited,
                            **needs})


def _clearly_slower(result):
    """The kernel's measured speedup when it is below SPEED_ONLY_BELOW, else None. Only for CUDA
    timing that nothing has put in doubt: a timer the kernel tampered with, a time ktui's clock
    replaced, or any finding or failed check so far (a kernel that knows when it is timed can be
    slow in ktui's clock and fast in its harness's) gets the whole battery."""
    t = result.get("timing") or {}
    sp = t.get("speedup")
    if t.get("error") or t.get("kernel_invalid_samples") or not isinstance(sp, (int, float)) or isinstance(sp, bool):
        return None
    if t.get("method_used") in (None, "host") or (t.get("kernel") or {}).get("source"):
        return None
    if result.get("findings") or any(isinstance(c, dict) and c.get("ok") is False for c in result.get("checks") or []):
        return None
    return float(sp) if 0.0 < sp < SPEED_ONLY_BELOW else None


# worker probes must be registered in the worker too (roles.op_probe looks them up here)
load_all()
