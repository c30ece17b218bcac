"""Typed, versioned results: a reproduction (the cache entry) and the judge's result inside it.

The judge (``ktui/engine``, a separate process) answers with JSON; what ktui keeps of it is a
:class:`Reproduction` (``kernel_sha1``, ``key``, the public request, the options and the
:class:`JudgeResult`), written to the result cache under schema :data:`SCHEMA` (the cache file's
``"v"``). Reading is validating: :meth:`Reproduction.from_dict` builds the typed object or raises
:class:`ResultError` saying which field is wrong, and the cache treats such an entry as absent (it
is run again). ``strict=False`` checks only the types of what is there (readers that use what they
find, e.g. the sweep charts), ``strict=True`` also that a verdict can be made from it.

The types keep the dict they were read from (``raw``) and write it back unchanged
(:meth:`to_dict`), so the JSON on disk is the one ktui has always written; fields the judge adds
later pass through. The profile and the verify report carry their own schema versions
(:data:`PROFILE_SCHEMA`, :data:`VERIFY_SCHEMA`) in their ``--json`` output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SCHEMA = 2  # the result cache's entries ("v" in the file)
PROFILE_SCHEMA = 1  # ktui repro --profile --json
VERIFY_SCHEMA = 1  # ktui verify --json
CACHED_STATUSES = ("completed", "failed")
_DICT_PARTS = ("environment", "build", "timing", "memory", "launches", "failure", "correctness")
_SIDE_STATS = ("mean_us", "median_us", "min_us", "max_us", "std_us")


class ResultError(ValueError):
    """A result that is not of its type (``where``: the field, dotted)."""

    def __init__(self, where: str, what: str):
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _mapping(d: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(d, dict):
        raise ResultError(where, f"expected an object, got {type(d).__name__}")
    return d


def _opt_mapping(d: Mapping[str, Any], k: str, where: str) -> Mapping[str, Any] | None:
    v = d.get(k)
    return None if v is None else _mapping(v, f"{where}.{k}")


@dataclass(frozen=True, slots=True)
class Failure:
    kind: str
    message: str
    stage: str = ""

    @classmethod
    def from_dict(cls, d: Any, where: str = "failure") -> Failure:
        d = _mapping(d, where)
        for k in ("kind", "message"):
            if not isinstance(d.get(k), str):
                raise ResultError(f"{where}.{k}", "expected a string")
        if not isinstance(d.get("stage", ""), str):
            raise ResultError(f"{where}.stage", "expected a string")
        return cls(d["kind"], d["message"], d.get("stage", ""))


@dataclass(frozen=True, slots=True)
class Correctness:
    passed: bool
    trials: int | None = None
    trials_passed: int | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    held_out_passed: bool | None = None  # None: no held-out inputs were tried

    @classmethod
    def from_dict(cls, d: Any, strict: bool = True, where: str = "correctness") -> Correctness:
        d = _mapping(d, where)
        if not isinstance(d.get("passed"), bool):
            raise ResultError(f"{where}.passed", "expected true or false")
        for k in ("trials", "trials_passed"):
            if (strict or k in d) and not _int(d.get(k)):
                raise ResultError(f"{where}.{k}", "expected an integer")
        for k in ("max_abs_error", "max_rel_error"):
            if (strict or k in d) and not _num(d.get(k)):
                raise ResultError(f"{where}.{k}", "expected a number")
        h = d.get("held_out")
        if h is not None and (not isinstance(h, dict) or not isinstance(h.get("passed"), bool)):
            raise ResultError(f"{where}.held_out", "expected an object with passed: true or false")
        return cls(d["passed"], d.get("trials"), d.get("trials_passed"), d.get("max_abs_error"),
                   d.get("max_rel_error"), h["passed"] if h is not None else None)


@dataclass(frozen=True, slots=True)
class SideTiming:
    mean_us: float | None = None
    median_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    std_us: float | None = None

    @classmethod
    def from_dict(cls, d: Any, strict: bool = True, where: str = "timing") -> SideTiming:
        d = _mapping(d, where)
        for k in _SIDE_STATS:
            if (strict or k in d) and not _num(d.get(k)):
                raise ResultError(f"{where}.{k}", "expected a number")
        return cls(*(d.get(k) for k in _SIDE_STATS))


@dataclass(frozen=True, slots=True)
class Timing:
    kernel: SideTiming | None = None
    reference: SideTiming | None = None
    speedup: float | None = None  # as the judge wrote it (not checked: readers check it)

    @classmethod
    def from_dict(cls, d: Any, strict: bool = True, where: str = "timing") -> Timing:
        d = _mapping(d, where)
        sides = [None if d.get(s) is None else SideTiming.from_dict(d[s], strict, f"{where}.{s}")
                 for s in ("kernel", "reference")]
        sp = d.get("speedup")
        return cls(sides[0], sides[1], sp if _num(sp) else None)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool | None = None  # None: not applicable here
    detail: str = ""

    @classmethod
    def from_dict(cls, d: Any, where: str = "checks") -> Check:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise ResultError(where, "expected an object with a name")
        ok = d.get("ok")
        detail = d.get("detail")
        return cls(d["name"], ok if isinstance(ok, bool) else None, detail if isinstance(detail, str) else "")


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """The judge's answer for one kernel (what ``ktui/engine`` returns), validated."""

    status: str
    failure: Failure | None = None
    correctness: Correctness | None = None
    timing: Timing | None = None
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @classmethod
    def from_dict(cls, d: Any, strict: bool = True, statuses: tuple[str, ...] = CACHED_STATUSES,
                  where: str = "result") -> JudgeResult:
        d = _mapping(d, where)
        status = d.get("status")
        if status not in statuses:
            raise ResultError(f"{where}.status", f"expected one of {', '.join(statuses)}, got {status!r}")
        for k, t in (("checks", list), ("notes", list), ("findings", list), ("stages", dict)):
            if k in d and not isinstance(d[k], t):
                raise ResultError(f"{where}.{k}", f"expected {'a list' if t is list else 'an object'}")
        checks = tuple(Check.from_dict(c, f"{where}.checks[{i}]") for i, c in enumerate(d.get("checks") or []))
        notes = d.get("notes") or []
        if any(not isinstance(n, str) for n in notes):
            raise ResultError(f"{where}.notes", "expected strings")
        for k in _DICT_PARTS:
            _opt_mapping(d, k, where)
        failure = None
        if status == "failed":
            failure = Failure.from_dict(d.get("failure"), f"{where}.failure")
        corr = d.get("correctness")
        correctness = None if corr is None else Correctness.from_dict(corr, strict, f"{where}.correctness")
        t = d.get("timing")
        timing = None if t is None else Timing.from_dict(t, strict, f"{where}.timing")
        b = d.get("build")
        if b is not None and not isinstance(b.get("extensions", []), list):
            raise ResultError(f"{where}.build.extensions", "expected a list")
        return cls(status, failure, correctness, timing, checks, tuple(notes), d)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True, slots=True)
class Reproduction:
    """One cached reproduction: a kernel (``kernel_sha1``), the settings it ran under (``key``,
    ``request``, ``options``) and the judge's result."""

    kernel_sha1: str
    key: str
    result: JudgeResult
    request: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    schema = SCHEMA

    @classmethod
    def from_dict(cls, d: Any, strict: bool = True) -> Reproduction:
        d = _mapping(d, "entry")
        for k in ("kernel_sha1", "key"):
            if not isinstance(d.get(k), str):
                raise ResultError(k, "expected a string")
        for k in ("request", "options"):
            if k in d and not isinstance(d[k], dict):
                raise ResultError(k, "expected an object")
        result = JudgeResult.from_dict(d.get("result"), strict)
        return cls(d["kernel_sha1"], d["key"], result, d.get("request") or {}, d.get("options") or {}, d)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)
