"""A verify report, typed and versioned: what ``ktui verify --json`` writes (schema
:data:`~ktui.repro.results.VERIFY_SCHEMA`) and :meth:`VerifyReport.from_dict` reads back, raising
:class:`~ktui.repro.results.ResultError` (naming the field) on a bad shape. A live report
(:class:`ktui.repro.verify.results.Report`) gives its own with ``Report.record()``.

Imports no engine, no planner: the view (:mod:`ktui.view.verify`) is built from these types.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ktui.repro.judging.names import GOOD
from ktui.repro.results import VERIFY_SCHEMA, ResultError
from ktui.trace.aggregate import FAST_P
from ktui.trace.model import INCOMPLETE
from ktui.trace.words import count

MAX_ROWS = 1_000_000  # a report with more runs than this is not one ktui wrote


def _fail(where: str, what: str) -> ResultError:
    return ResultError(where, what)


def _str(d: Mapping[str, Any], k: str, where: str, optional: bool = False) -> str | None:
    v = d.get(k)
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise _fail(f"{where}.{k}", "expected a string" + (" or null" if optional else ""))
    return v


def _bool(d: Mapping[str, Any], k: str, where: str) -> bool:
    v = d.get(k)
    if not isinstance(v, bool):
        raise _fail(f"{where}.{k}", "expected true or false")
    return v


def _number(d: Mapping[str, Any], k: str, where: str) -> float | None:
    """A finite number or null (NaN and infinities are refused: ``--json`` never writes them)."""
    v = d.get(k)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _fail(f"{where}.{k}", "expected a finite number or null")
    return float(v)


def _count(d: Mapping[str, Any], k: str, where: str) -> int:
    v = d.get(k)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _fail(f"{where}.{k}", "expected a count (an integer, 0 or more)")
    return v


def _list(d: Mapping[str, Any], k: str, where: str) -> list[Any]:
    v = d.get(k)
    if not isinstance(v, list):
        raise _fail(f"{where}.{k}", "expected a list")
    if len(v) > MAX_ROWS:
        raise _fail(f"{where}.{k}", f"more than {MAX_ROWS:,} entries")
    return v


def _obj(v: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(v, dict):
        raise _fail(where, f"expected an object, got {type(v).__name__}")
    return v


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of a verify report: what it recorded, what reproduced here, the verdict."""

    path: str
    real: str
    model: str | None
    problem: str
    version: str | None
    final: bool
    recorded_outcome: str
    recorded_speedup: float | None
    reproduced_outcome: str
    reproduced_speedup: float | None
    kernel_us: float | None
    reference_us: float | None
    verdict: str
    reason: str
    cached: bool
    classes: tuple[str, ...] = ()
    failure: str | None = None
    job: str | None = None
    slot: str | None = None

    @classmethod
    def from_dict(cls, d: Any, where: str = "runs") -> RunRecord:
        d = _obj(d, where)
        kw: dict[str, Any] = {}
        for k in ("path", "real"):  # in the fields' order: the first wrong field is the one named
            kw[k] = _str(d, k, where)
        kw["model"] = _str(d, "model", where, True)
        kw["problem"] = _str(d, "problem", where)
        kw["version"] = _str(d, "version", where, True)
        kw["final"] = _bool(d, "final", where)
        kw["recorded_outcome"] = _str(d, "recorded_outcome", where)
        kw["recorded_speedup"] = _number(d, "recorded_speedup", where)
        kw["reproduced_outcome"] = _str(d, "reproduced_outcome", where)
        for k in ("reproduced_speedup", "kernel_us", "reference_us"):
            kw[k] = _number(d, k, where)
        kw["verdict"], kw["reason"] = _str(d, "verdict", where), _str(d, "reason", where)
        kw["cached"] = _bool(d, "cached", where)
        classes = _list(d, "classes", where)
        if any(not isinstance(c, str) for c in classes):
            raise _fail(f"{where}.classes", "expected strings")
        kw["classes"] = tuple(classes)
        kw["failure"], kw["job"] = _str(d, "failure", where, True), _str(d, "job", where, True)
        slot = d.get("slot")
        if slot is not None and (isinstance(slot, bool) or not isinstance(slot, (str, int))):
            raise _fail(f"{where}.slot", "expected a string, an integer or null")
        kw["slot"] = None if slot is None else str(slot)
        return cls(**kw)

    @property
    def good(self) -> bool:
        return self.verdict in GOOD


@dataclass(frozen=True, slots=True)
class SideAggregate:
    """One side (recorded or reproduced) of a model's aggregates."""

    pass_rate: float | None
    passed: int
    judged: int
    not_judged: int
    geomean_speedup: float | None
    fast: tuple[tuple[float, float | None], ...]  # (p, fast_p) for p in FAST_P

    def fast_p(self, p: float) -> float | None:
        return dict(self.fast).get(p)

    @classmethod
    def from_dict(cls, d: Any, where: str) -> SideAggregate | None:
        d = _obj(d, where)
        if not d:
            return None  # a model with no run on this side
        fast = tuple((p, _number(d, f"fast_{p:g}", where)) for p in FAST_P)
        for k, v in (("pass_rate", d.get("pass_rate")), *((f"fast_{p:g}", f) for p, f in fast)):
            if v is not None and not 0.0 <= v <= 1.0:
                raise _fail(f"{where}.{k}", "expected a fraction (0 to 1) or null")
        return cls(_number(d, "pass_rate", where), _count(d, "passed", where), _count(d, "judged", where),
                   _count(d, "not_judged", where), _number(d, "geomean_speedup", where), fast)


@dataclass(frozen=True, slots=True)
class ModelRecord:
    model: str
    runs: int
    recorded: SideAggregate | None
    reproduced: SideAggregate | None

    @classmethod
    def from_dict(cls, d: Any, where: str = "models") -> ModelRecord:
        d = _obj(d, where)
        return cls(_str(d, "model", where) or "", _count(d, "runs", where),
                   SideAggregate.from_dict(d.get("recorded"), f"{where}.recorded"),
                   SideAggregate.from_dict(d.get("reproduced"), f"{where}.reproduced"))


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """A verify report, typed (``ktui verify --json``, schema :data:`VERIFY_SCHEMA`). Read it with
    :meth:`from_dict` (a :class:`ResultError` names the field that is wrong); :meth:`to_dict`
    gives back the dict it was read from."""

    runs: tuple[RunRecord, ...]
    models: tuple[ModelRecord, ...]
    claims: tuple[RunRecord, ...]  # runs whose recorded claim does not hold, worst first
    stats: Mapping[str, Any]  # counts and figures of the sweep (numbers, strings, booleans)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    schema = VERIFY_SCHEMA

    @classmethod
    def from_dict(cls, d: Any) -> VerifyReport:
        d = _obj(d, "report")
        if d.get("schema") != VERIFY_SCHEMA:
            raise _fail("schema", f"expected a verify report of schema {VERIFY_SCHEMA}, got {d.get('schema')!r}")
        runs = tuple(RunRecord.from_dict(x, f"runs[{i}]") for i, x in enumerate(_list(d, "runs", "report")))
        models = tuple(ModelRecord.from_dict(x, f"models[{i}]") for i, x in enumerate(_list(d, "models", "report")))
        claims = tuple(RunRecord.from_dict(x, f"claims_not_holding[{i}]")
                       for i, x in enumerate(_list(d, "claims_not_holding", "report")))
        stats = _obj(d.get("stats", {}), "stats")
        for k, v in stats.items():
            if not isinstance(k, str) or not (v is None or isinstance(v, (str, bool, int))
                                              or (isinstance(v, float) and math.isfinite(v))):
                raise _fail(f"stats.{k}", "expected a number, a string, true/false or null")
        for k in ("judged", "not_judged", "runs"):
            if k in stats and (isinstance(stats[k], bool) or not isinstance(stats[k], int) or stats[k] < 0):
                raise _fail(f"stats.{k}", "expected a count (an integer, 0 or more)")
        return cls(runs, models, claims, dict(stats), d)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)

    @property
    def judged(self) -> int:
        v = self.stats.get("judged")
        return v if isinstance(v, int) else sum(1 for r in self.runs if r.reproduced_outcome != INCOMPLETE)

    @property
    def not_judged(self) -> int:
        v = self.stats.get("not_judged")
        return v if isinstance(v, int) else sum(1 for r in self.runs if r.reproduced_outcome == INCOMPLETE)


def read_report(path: str) -> VerifyReport:
    """A verify report from a ``--json`` file; :class:`ResultError` when it is not one, ``OSError``
    when it cannot be read."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        try:
            d = json.load(fh)
        except (ValueError, RecursionError) as exc:
            raise _fail("report", f"not JSON ({str(exc)[:120]})") from None
    return VerifyReport.from_dict(d)



def stats_line(s: dict[str, Any]) -> str:
    parts = [count(s.get('runs', 0), 'run'), count(s.get('kernels', 0), 'distinct kernel')]
    if s.get("duplicates"):
        parts.append(f"{count(s['duplicates'], 'duplicate')} shared")
    parts.append(f"{s.get('cached', 0)} from the cache")
    parts.append(f"{s.get('built', 0)} built, {s.get('timed', 0)} timed, {s.get('failed', 0)} did not complete")
    if s.get("not_judged"):
        parts.append(f"{count(s['not_judged'], 'run')} not judged here")
    if s.get("no_kernel"):
        parts.append(f"{count(s['no_kernel'], 'run')} with no kernel not counted per model")
    if s.get("cancelled"):
        parts.append(f"{s['cancelled']} cancelled")
    if s.get("wall_s") is not None:
        parts.append(f"{s['wall_s']:.1f} s on {s.get('engine', '?')} ({count(s.get('slots', '?'), 'slot')}, "
                     f"{count(s.get('jobs', '?'), 'build job')})")
    return " · ".join(parts)
