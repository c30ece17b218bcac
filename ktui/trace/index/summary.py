"""What the runs table shows about one trace (:class:`RunSummary`), the tree's issues, the files found."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field, fields
from typing import Any

from ktui.trace.model import INCOMPLETE, UNKNOWN, V2


@dataclass(slots=True)
class RunSummary:
    """What the runs table shows about one trace, without loading it."""

    path: str  # as found under the scanned root (relative to it when possible)
    real: str = ""  # the real path: identity, cache key, what `replay` opens
    size: int = 0
    mtime_ns: int = 0
    variant: str = UNKNOWN
    format: str = "ensemble"  # the importer that reads it; "none": a .json file that is not a trace
    problem: str = ""  # display title ("L1 P27 27_permutation_all_to_all.py")
    problem_key: str = ""  # what "same problem" compares
    model: str | None = None
    persona: str | None = None
    scenario: str | None = None
    outcome: str = INCOMPLETE
    terminal: str = "eof"
    turns: int = 0
    max_turns: int | None = None
    tool_calls: int = 0  # agent calls (seeded calls excluded)
    failed_calls: int = 0  # of them, not ok (ktui.trace.facts.is_failed)
    not_trace: str = ""  # why the file is not a trace at all (ktui.trace.facts.not_a_trace); not listed then
    tokens: int | None = None  # tokens in + out + reasoning (None: the trace records none)
    started_ms: int | None = None
    ended_ms: int | None = None
    speedup: float | None = None
    runtime_us: float | None = None  # corrected to microseconds
    ref_runtime_us: float | None = None
    correct: bool | None = None
    final_score: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # flag codes (see ktui.trace.flags), deduplicated
    hacks: list[str] = field(default_factory=list)  # honesty classes of the final kernel (ktui.trace.findings)
    labels: list[str] = field(default_factory=list)  # the user's labels (ktui.trace.labels), set at every scan
    no_gpu_final: bool = False  # the final kernel has no custom GPU code (its speedup is not a kernel's)
    problems: list[str] = field(default_factory=list)  # "line N: message" for lines that did not parse
    incomplete: bool = False  # ends in a partial line (still being written)
    record: str | None = None  # status of a runs.jsonl record for this run ("ok", "failed", ...)
    compiled: bool = False  # some kernel of the run compiled (a compile or correctness check got that far)
    first_correct_turn: int | None = None  # Run.first_correct_turn (0-based)
    tokens_to_correct: int | None = None  # tokens of the turns up to and including that turn
    wall_ms_to_correct: int | None = None  # first ts_ms to the result of that first correct check
    final_sha1: str | None = None  # sha1 of the final kernel's code, when the trace holds it
    reference_sha1: str | None = None  # sha1 of the reference the trace holds (a reproduction must match it)
    result: str = ""  # the harness's result file the outcome comes from ("reward.json (harbor)")
    result_error: str = ""  # its error text, first line
    speedups: dict[str, float] = field(default_factory=dict)  # baseline ("eager", "torch.compile", ...) -> x
    speedup_base: str = ""  # the baseline of ``speedup`` when a result file gave it
    fingerprint: str = ""  # duplicate detection: the content's hash (KernelBench samples: with their path)
    content_key: str = ""  # labels' key when it is not "fp1:" + fingerprint (KernelBench samples)
    record_sig: str = ""
    key: str = ""  # the run's key inside its file (a file of many runs: ``path#key``, ktui.trace.address)
    parts: list[dict[str, Any]] = field(default_factory=list)  # a file of many runs: each run's row (to_dict)

    @property
    def wall_ms(self) -> int | None:
        """First to last ``ts_ms``; None when unknown or synthetic (V2)."""
        if self.variant == V2 or self.started_ms is None or self.ended_ms is None:
            return None
        return self.ended_ms - self.started_ms

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def to_dict(self) -> dict[str, Any]:
        d = dict(zip(_FIELDS, _ALL_FIELDS(self), strict=True))  # every field read at C speed (a row a file, 10,000 a sweep)
        d["scores"], d["flags"], d["problems"] = dict(self.scores), list(self.flags), list(self.problems)
        d["hacks"], d["speedups"], d["labels"] = list(self.hacks), dict(self.speedups), list(self.labels)
        d["parts"] = list(self.parts)
        return d

    def to_tuple(self) -> tuple[Any, ...]:
        """Every field in order (a forked helper's answer, ``marshal``-ed: no checks on the way back,
        it never left ktui)."""
        return _ALL_FIELDS(self)  # type: ignore[no-any-return]

    @classmethod
    def from_tuple(cls, values: tuple[Any, ...]) -> RunSummary:
        """The inverse of :meth:`to_tuple`; ``TypeError`` when the count of fields differs."""
        if len(values) != len(_FIELDS):
            raise TypeError("a row of another shape")
        return cls(*values)

    @property
    def content_id(self) -> str:
        """The identity labels are keyed by (:func:`ktui.trace.labels.content_id`)."""
        if self.content_key:
            return self.content_key
        return f"fp1:{self.fingerprint}" if self.fingerprint else ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSummary:
        """A summary from its cached form; ``TypeError`` when a field has the wrong type (a cache
        entry is data from disk: it is checked, never trusted)."""
        kw = {k: v for k, v in d.items() if k in _FIELD_SET}
        for k, v in kw.items():
            if not _TYPE_OK[k](v):
                raise TypeError(f"cache entry: {k} has the wrong type ({type(v).__name__})")
        if "path" not in kw:
            raise TypeError("cache entry: no path")
        return cls(**kw)


_FIELDS = tuple(f.name for f in fields(RunSummary))
_FIELD_SET = frozenset(_FIELDS)
_ALL_FIELDS = operator.attrgetter(*_FIELDS)  # a row's fields as a tuple, in _FIELDS' order


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and (not isinstance(v, float) or math.isfinite(v))


def _opt(check):
    return lambda v: v is None or check(v)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _scores(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _is_num(x) for k, x in v.items())


def _type_check(name: str, annotation: str):
    if name in ("scores", "speedups"):
        return _scores
    if name in ("flags", "problems", "hacks", "labels"):
        return _str_list
    if name == "parts":
        return lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v)
    base = annotation.replace(" | None", "")
    check = {"str": lambda v: isinstance(v, str), "int": _is_int, "float": _is_num,
             "bool": lambda v: isinstance(v, bool)}[base]
    return _opt(check) if "None" in annotation else check


_TYPE_OK = {f.name: _type_check(f.name, str(f.type)) for f in fields(RunSummary)}


@dataclass(slots=True)
class ScanIssue:
    path: str
    message: str
    severity: str = "warning"  # "error" | "warning" | "info"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class TraceFile:
    path: str  # as found
    real: str
    size: int
    mtime_ns: int
    is_link: bool = False
    found: str = ""  # the path where it was found (records are looked up from there)


def problem_key(level: Any, problem_id: Any, name: str | None) -> str:
    if level is not None and problem_id is not None:
        return f"L{level}/P{problem_id}"
    if problem_id is not None:
        return str(problem_id)
    return (name or "").strip().lower()
