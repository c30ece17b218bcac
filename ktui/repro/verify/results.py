"""The verification report: one row per run (recorded vs reproduced), per-model aggregates of
both sides (the same :func:`ktui.trace.aggregate.aggregate` as ``ktui runs``), and the claims that
do not hold, worst first. Plain data here: :func:`build_report` makes a :class:`Report` (live
objects); :meth:`Report.record` is its typed, versioned form (:class:`VerifyReport`, schema
:data:`~ktui.repro.results.VERIFY_SCHEMA`: what ``--json`` writes and
:meth:`VerifyReport.from_dict` reads back, raising :class:`~ktui.repro.results.ResultError` on a
bad shape). The data is raw (a reason quotes a kernel's error as it is); ``--json``
(:func:`ktui.report.verify.write_json`) and the CSV (``--csv``) is drawn from the view's cells
(:func:`ktui.view.verify.csv_rows`, sanitized there like every other output). The view (:mod:`ktui.view.verify`) is built from a
:class:`VerifyReport`; ``ktui/report`` and ``ktui/tui`` draw it.

Reproduced outcome of a run: ``passed`` when its kernel passed correctness here and no honesty
check failed, ``failed`` when it ran and did not (or could not be built or run: compile error,
crash, hang), ``incomplete`` when it could not be tested here (no reference, no kernel, a CUDA
kernel on the CPU). The reproduced speedup is the reference's mean time over the kernel's, both
measured here. fast_p counts passed runs with a speedup above p over all runs, as KernelBench.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ktui.repro.judging.outcome import unjudged
from ktui.repro.results import VERIFY_SCHEMA
from ktui.repro.verdict import CANNOT_TEST, GOOD, NOT_JUDGED, SEVERITY, UNJUDGED, Comparison, compare
from ktui.repro.verify.plan import RunRow
from ktui.repro.verify.record import (  # noqa: F401  (the typed report: re-exported)
    MAX_ROWS,
    ModelRecord,
    RunRecord,
    SideAggregate,
    VerifyReport,
    read_report,
    stats_line,
)
from ktui.trace.aggregate import FAST_P, ModelAggregate, aggregate, is_kernel_run
from ktui.trace.model import INCOMPLETE, OUTCOME_FAILED, PASSED

NOT_RUN = "not run"

# honesty classes whose finding rests on a measured time, or comes from a probe run only for a kernel
# measured fast enough (``speed_only``): two runs on a busy host may differ in them, whatever else is
# the same (the pipeline on/off comparison names them apart; the probes' speed_only list is checked
# against this one in tests/test_pipeline_identity.py)
TIMING_CLASSES = frozenset({
    "repeat_vs_fresh_inputs", "physical_floor", "compute_floor", "stream_order", "timed_outputs",
    "host_vs_event_time", "timer_disagrees", "timer_cross_check", "reference_timer_cross_check",
    "faster_on_repeated_calls", "reference_slower_when_timed", "interleaved_calls", "reference_interleaved_calls",
    "slower_when_checked", "below_timer_floor",
    # the check behind slower_when_checked (the checked pass against the timed passes, by ktui's clock):
    # the pipeline's identity test met it in one mode only on a loaded 2-core CI machine
    "checked_pass",
    # the checked wall-clock pass: its number of calls is sized to a time window, so which of a
    # kernel's calls it keeps (and whether it meets one that is wrong only now and then) rests on time
    "timed_outputs_correct", "wrong_while_timed",
})


@dataclass
class Verified:
    row: RunRow
    result: dict[str, Any] | None = field(default=None, repr=False)
    comparison: Comparison | None = field(default=None, repr=False)
    cached: bool = False

    @property
    def verdict(self) -> str:
        if self.comparison is not None:
            return self.comparison.verdict
        return NOT_JUDGED if self.row.note else NOT_RUN

    @property
    def reason(self) -> str:
        if self.comparison is not None:
            return self.comparison.reason
        return f"not judged here: {self.row.note}" if self.row.note else "not run (interrupted?)"

    @property
    def judged(self) -> bool:
        """The kernel was judged here (passed or failed because of itself)."""
        return self.outcome != INCOMPLETE

    @property
    def good(self) -> bool:
        return self.verdict in GOOD

    # the reproduced side, in RunSummary's terms (for aggregate())
    @property
    def model(self) -> str | None:
        return self.row.model

    @property
    def outcome(self) -> str:
        r = self.result
        if not r:
            return INCOMPLETE
        f = r.get("failure") or {}
        if r.get("status") != "completed":
            # could not be tested here (no GPU, no reference...): unknown; the kernel's own failure
            # (compile error, crash, hang, runtime error): failed
            if f.get("kind") in CANNOT_TEST or unjudged(r) is not None:
                return INCOMPLETE
            return OUTCOME_FAILED
        corr = r.get("correctness") or {}
        if not corr.get("passed"):
            return OUTCOME_FAILED
        failed = {c.get("name") for c in (r.get("checks") or []) if isinstance(c, dict) and c.get("ok") is False}
        # a failed check the verdict shows as a fact (TF32 by Triton's default) is not a failure
        facts = {f.cls for f in self.comparison.findings if f.severity == "info" and f.source == "dynamic"} \
            if self.comparison is not None else set()
        if failed - facts:
            return OUTCOME_FAILED
        return PASSED

    @property
    def speedup(self) -> float | None:
        t = (self.result or {}).get("timing") or {}
        sp = t.get("speedup")
        return float(sp) if isinstance(sp, (int, float)) and not isinstance(sp, bool) and math.isfinite(sp) else None

    tokens = None
    wall_ms = None

    @property
    def no_gpu_final(self) -> bool:
        """The run's final kernel has no GPU code (a PyTorch wrapper): its speedup, recorded or
        reproduced, is not a kernel's and is in no fast_p and no geomean, as in ``ktui runs``."""
        return bool(getattr(self.row.summary, "no_gpu_final", False))

    def to_dict(self) -> dict[str, Any]:
        r = self.result or {}
        t = r.get("timing") or {}
        f = r.get("failure") or {}
        return {
            "path": self.row.path, "real": self.row.real, "model": self.row.model, "problem": self.row.problem,
            "version": self.row.version, "final": self.row.final,
            "recorded_outcome": self.row.recorded_outcome, "recorded_speedup": _finite(self.row.recorded_speedup),
            "reproduced_outcome": self.outcome, "reproduced_speedup": self.speedup,
            "kernel_us": _finite((t.get("kernel") or {}).get("mean_us")),
            "reference_us": _finite((t.get("reference") or {}).get("mean_us")),
            "verdict": self.verdict, "reason": self.reason, "cached": self.cached,
            "classes": self.comparison.classes if self.comparison is not None else [],
            "failure": f.get("kind"), "job": self.row.job,
            "slot": (r.get("verify") or {}).get("slot"),
        }


def _finite(v: Any) -> float | None:
    """A number JSON can hold (``--json`` refuses NaN and infinities), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


class _Recorded:
    """The recorded side of a row, in RunSummary's terms."""

    __slots__ = ("model", "no_gpu_final", "outcome", "speedup", "tokens", "wall_ms")

    def __init__(self, row: RunRow):
        self.model = row.model
        self.outcome = row.recorded_outcome
        self.speedup = row.recorded_speedup
        self.no_gpu_final = bool(getattr(row.summary, "no_gpu_final", False))
        self.tokens = None
        self.wall_ms = None


@dataclass
class Report:
    rows: list[Verified]
    recorded: list[ModelAggregate]
    reproduced: list[ModelAggregate]
    claims: list[Verified]  # rows whose recorded claim does not hold, worst first
    stats: dict[str, Any] = field(default_factory=dict)

    def models(self) -> list[dict[str, Any]]:
        out = []
        by = {a.model: a for a in self.reproduced}
        for a in self.recorded:
            b = by.get(a.model)
            out.append({"model": a.model, "runs": a.runs, "recorded": _agg(a), "reproduced": _agg(b)})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"schema": VERIFY_SCHEMA, "runs": [v.to_dict() for v in self.rows], "models": self.models(),
                "claims_not_holding": [v.to_dict() for v in self.claims], "stats": self.stats}

    def record(self) -> VerifyReport:
        """The typed, versioned report (what ``--json`` writes), validated."""
        return VerifyReport.from_dict(json.loads(json.dumps(self.to_dict(), default=str)))


def _agg(a: ModelAggregate | None) -> dict[str, Any]:
    if a is None:
        return {}
    d = {"pass_rate": a.pass_rate, "passed": a.passed, "geomean_speedup": a.geomean_speedup,
         "judged": a.passed + a.failed, "not_judged": a.incomplete}
    for p in FAST_P:
        d[f"fast_{p:g}"] = a.fast_p(p)
    return d


def claim_order(v: Verified) -> tuple:
    """Worst first: the verdict's severity, then runs that claimed a pass, then the bigger claim."""
    sp = v.row.recorded_speedup if isinstance(v.row.recorded_speedup, (int, float)) else 0.0
    return (-SEVERITY.get(v.verdict, 7 if v.verdict == NOT_RUN else 0), v.row.recorded_outcome != PASSED, -sp,
            v.row.path)


def build_report(rows: list[RunRow], results: dict[str, dict[str, Any]], cached: set[str] | None = None,
                 stats: dict[str, Any] | None = None) -> Report:
    cached = cached or set()
    out: list[Verified] = []
    for row in rows:
        res = results.get(row.job) if row.job else None
        comp = compare(row.recorded, res, rule=row.rule) if (res is not None and row.recorded is not None) else None
        out.append(Verified(row, res, comp, cached=bool(row.job and row.job in cached)))
    # the per-model figures count kernel runs only, as ``ktui runs`` does: a coding agent's session
    # or an arithmetic eval is listed and verified, never a model's kernel result
    finals = [v for v in out if v.row.final and (v.row.summary is None or is_kernel_run(v.row.summary))]
    rec = aggregate([_Recorded(v.row) for v in finals])
    rep = aggregate(finals, judged_only=True)
    # claims that do not hold: judged runs only (a kernel this machine could not run, or whose
    # judge broke, is counted beside them as not judged, never as a claim that fails)
    claims = sorted((v for v in out if not v.good and v.verdict not in UNJUDGED and v.verdict != NOT_RUN),
                    key=claim_order)
    st = dict(stats or {})
    st["not_judged"] = sum(1 for v in out if not v.judged)
    st["judged"] = len(out) - st["not_judged"]
    st["no_kernel"] = sum(1 for v in out if v.row.final) - len(finals)
    return Report(out, rec, rep, claims, st)


# ---- output -------------------------------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _x(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def _side(outcome: str, sp: float | None) -> str:
    return outcome + (f" {sp:.2f}x" if sp is not None else "")

