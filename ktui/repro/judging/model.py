"""The verdict's data: verdict names, rows that hold values (never pre-rendered text), finding
rows, one aspect's judgement and the whole comparison. No torch, no Rich."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ktui.repro.judging.names import (  # noqa: F401 - re-exported: the verdict's names live in names.py
    BUILD,
    CANCELLED,
    CANNOT_TEST,
    CORRECTNESS,
    CORRECTNESS_DISAGREES,
    DIFFERS,
    GOOD,
    HARNESS_ERROR,
    HELD_OUT,
    JUDGE_SIDE,
    MAX_TIME_TOL,
    MEM_TOL,
    NOT_JUDGED,
    NOT_RECORDED,
    NOT_REPRODUCIBLE,
    RATIO_TOL,
    REPRODUCED,
    SAME_FAILURE,
    SEVERITY,
    SHOWN_ONLY,
    SUSPICIOUS,
    TIME,
    TIME_TOL,
    UNIT_ERROR,
    UNIT_HI,
    UNIT_LO,
    UNJUDGED,
    US,
    VALUE,
)


@dataclass
class Row:
    """One compared metric. ``recorded`` / ``reproduced`` are values (numbers, booleans, or for
    the build and correctness rows small dicts); :mod:`ktui.repro.judging.text` renders them
    (``row_texts``, and ``row_dict`` / ``comparison_dict`` for JSON: the data imports no words)."""

    key: str
    label: str
    recorded: Any = None  # canonical value (times in us), or the recorded outcome (build/correctness)
    recorded_raw: Any = None  # as written in the trace
    reproduced: Any = None
    unit: str = ""
    kind: str = VALUE
    ratio: float | None = None  # reproduced / recorded (as the trace claims it)
    verdict: str = NOT_RECORDED
    note: str = ""
    claimed: float | None = None  # time rows: the recorded value in μs as the trace's field name claims it
    # words for a value the formatter cannot render (left None by the judges; the profile sets them)
    recorded_text: str | None = None
    reproduced_text: str | None = None


@dataclass
class FindingRow:
    """One honesty finding: its class, what the kernel does, the evidence and where it came from."""

    cls: str  # a class of ktui.trace.findings.CLASSES, or a dynamic probe's class
    title: str  # the class in words
    reason: str  # what the kernel does
    evidence: str = ""  # the source line, or the measured values
    source: str = "static"  # "static" (the code) | "dynamic" (a probe on re-execution)
    severity: str = "error"
    turn: int | None = None  # static: the turn that introduced it
    since: str | None = None  # static: the version that introduced it ("v3")
    line: int | None = None  # static: the line in the kernel source

    def where(self) -> str:
        bits = []
        if self.line is not None:
            bits.append(f"line {self.line}")
        if self.turn is not None:
            bits.append(f"introduced at turn {self.turn}" + (f" in {self.since}" if self.since else ""))
        return ", ".join(bits)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["class"] = d.pop("cls")
        return d


@dataclass
class Judgement:
    """What one aspect's judge found: its rows, its findings, and (for the aspect that decides a
    failed run) the verdict and reason it imposes."""

    aspect: str
    rows: list[Row] = field(default_factory=list)
    findings: list[FindingRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdict: str | None = None  # set only when this aspect decides the overall verdict
    reason: str = ""


@dataclass
class Comparison:
    verdict: str
    reason: str
    rows: list[Row] = field(default_factory=list)
    findings: list[FindingRow] = field(default_factory=list)  # honesty findings, static and dynamic
    flags: list[dict[str, Any]] = field(default_factory=list)  # failed honesty checks
    checks: list[dict[str, Any]] = field(default_factory=list)
    not_measured: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rule: str = ""  # the correctness rule it was judged by, and where it comes from (empty: not known then)

    @property
    def good(self) -> bool:
        return self.verdict in GOOD

    @property
    def classes(self) -> list[str]:
        """The honesty classes found, once each, in order (a finding of severity info, a fact such as
        Triton's default TF32, is shown but is not a class)."""
        out: list[str] = []
        for f in self.findings:
            if f.cls not in out and f.severity != "info":
                out.append(f.cls)
        return out
