"""Figures over several runs: per-model aggregates of a sweep, and the rows of a comparison.

Pure functions over :class:`~ktui.trace.index.RunSummary` and :class:`~ktui.trace.model.Run`;
no Textual, no torch, no formatting (the report and the app format the raw values).

fast_p follows KernelBench: the fraction of *all* runs whose result is correct and whose speedup
over the reference is greater than p. A run counts as correct when its outcome is ``passed``;
a correct run with no recorded speedup counts in no fast_p (its speedup is unknown), which is
why fast_0 can be below the pass rate.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ktui.trace import facts
from ktui.trace.model import ERROR, FAILED, OK, OUTCOME_FAILED, PASSED, V2, Run
from ktui.trace.words import count

FAST_P: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)
UNKNOWN_MODEL = "(unknown)"
ALL_MODELS = "all runs"
OUTCOME_RANK = {PASSED: 2, OUTCOME_FAILED: 1}  # anything else (incomplete): 0


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(logs) / len(logs)) if logs else None


# ---- per-model aggregates ----------------------------------------------------------------------
@dataclass(slots=True)
class ModelAggregate:
    model: str
    runs: int = 0
    passed: int = 0
    failed: int = 0
    incomplete: int = 0
    fast: dict[float, int] = field(default_factory=dict)  # p -> runs correct with speedup > p
    speedups: list[float] = field(default_factory=list)  # of correct runs
    tokens_sum: int = 0
    tokens_n: int = 0  # runs that record tokens
    wall_ms_sum: int = 0
    wall_n: int = 0  # runs with a real wall time
    no_gpu: int = 0  # correct runs whose final kernel has no GPU code: their speedup is in no fast_p
    #: rates over judged runs only (passed + failed): re-execution results, where "incomplete" means
    #: "not judged here" (no GPU, no reference ...) and says nothing about the kernel
    judged_only: bool = False

    @property
    def denominator(self) -> int:
        return (self.passed + self.failed) if self.judged_only else self.runs

    @property
    def pass_rate(self) -> float | None:
        n = self.denominator
        return self.passed / n if n else None

    def fast_p(self, p: float) -> float | None:
        n = self.denominator
        return self.fast.get(p, 0) / n if n else None

    @property
    def geomean_speedup(self) -> float | None:
        return geomean(self.speedups)

    @property
    def tokens_per_run(self) -> float | None:
        return self.tokens_sum / self.tokens_n if self.tokens_n else None

    @property
    def wall_ms_per_run(self) -> float | None:
        return self.wall_ms_sum / self.wall_n if self.wall_n else None

    def add(self, run: Any) -> None:
        """Count one run (a RunSummary, or anything with the same attributes)."""
        self.runs += 1
        outcome = getattr(run, "outcome", None)
        if outcome == PASSED:
            self.passed += 1
        elif outcome == OUTCOME_FAILED:
            self.failed += 1
        else:
            self.incomplete += 1
        sp = _finite(getattr(run, "speedup", None))
        if outcome == PASSED and getattr(run, "no_gpu_final", False):
            self.no_gpu += 1  # a PyTorch wrapper's "speedup" is not a kernel's: in no fast_p, no geomean
            sp = None
        if outcome == PASSED and sp is not None:
            for p in FAST_P:
                if sp > p:
                    self.fast[p] = self.fast.get(p, 0) + 1
            if sp > 0:
                self.speedups.append(sp)
        tok = getattr(run, "tokens", None)
        if isinstance(tok, int) and not isinstance(tok, bool):
            self.tokens_sum += tok
            self.tokens_n += 1
        wall = getattr(run, "wall_ms", None)
        if isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall >= 0:
            self.wall_ms_sum += int(wall)
            self.wall_n += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "runs": self.runs, "passed": self.passed, "failed": self.failed,
            "incomplete": self.incomplete, "pass_rate": self.pass_rate,
            **{f"fast_{p:g}": self.fast_p(p) for p in FAST_P},
            "geomean_speedup": self.geomean_speedup, "correct_with_speedup": len(self.speedups),
            "correct_without_gpu_code": self.no_gpu,
            "tokens_per_run": self.tokens_per_run,
            "wall_s_per_run": None if self.wall_ms_per_run is None else self.wall_ms_per_run / 1000,
        }


def is_kernel_run(run: Any) -> bool:
    """Is ``run`` a GPU-kernel task (what the aggregates and charts are about)? A run with a kernel
    version, or one that compiled something, or an ensemble run of a named problem (a backend that
    failed before any code is still a kernel task), or a kernel harness's result for a named problem
    that records no kernel (``result-file``: the run timed out or submitted nothing; the sweep's
    own tables count it as a failure). A coding agent's session, a SWE-bench task or an Inspect
    arithmetic eval is not: it is listed, never counted as a model's kernel result."""
    if not hasattr(run, "final_sha1"):  # not a RunSummary (a verify row...): counted as it is
        return True
    if run.final_sha1 or getattr(run, "compiled", False) or getattr(run, "speedup", None) is not None:
        return True
    return getattr(run, "format", "") in ("ensemble", "result-file") and bool(getattr(run, "problem_key", ""))


def kernel_runs(runs: Iterable[Any]) -> tuple[list[Any], int]:
    """(the kernel runs of ``runs``, how many others were left out)."""
    kept, other = [], 0
    for r in runs:
        if is_kernel_run(r):
            kept.append(r)
        else:
            other += 1
    return kept, other


def non_kernel_note(n: int) -> str:
    """The line that says runs were left out of the per-model table ('' for none)."""
    return "" if not n else f"{count(n, 'run')} with no kernel: listed, not counted per model or in the charts"


def model_aggregates(runs: Iterable[Any]) -> tuple[list[ModelAggregate], int]:
    """The per-model table of a sweep (``runs``, the app's runs screen, the report): the
    aggregates of its GPU-kernel runs only, and how many other runs were left out (a coding
    session in the same folder is not a model's kernel result: it was counted as a model)."""
    kept, other = kernel_runs(runs)
    return aggregate(kept), other


def aggregate(runs: Iterable[Any], key: Callable[[Any], str | None] | None = None,
              total: bool = True, judged_only: bool = False) -> list[ModelAggregate]:
    """Aggregates per model (sorted by model name), then one over all runs when ``total``.
    ``judged_only``: rates over passed + failed runs (re-execution results: an incomplete run was
    not judged here, which says nothing about its kernel)."""
    keyf = key or (lambda r: getattr(r, "model", None))
    by: dict[str, ModelAggregate] = {}
    everything = ModelAggregate(ALL_MODELS, judged_only=judged_only)
    for r in runs:
        k = keyf(r) or UNKNOWN_MODEL
        agg = by.get(k)
        if agg is None:
            agg = by[k] = ModelAggregate(k, judged_only=judged_only)
        agg.add(r)
        everything.add(r)
    out = [by[k] for k in sorted(by, key=lambda s: (s == UNKNOWN_MODEL, s.lower()))]
    if total and everything.runs:
        out.append(everything)
    return out


# ---- leaving runs out of the aggregates ---------------------------------------------------------------
EXCLUDE_HELP = ("hacks (runs with hack classes), flags (runs with other flags), labelled (runs with any label), "
                "hack:CLASS, flag:CODE, label:NAME")


def parse_exclude(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """``hacks,flags,label:hack`` -> the exclusions; ValueError names a bad one."""
    if not spec:
        return ()
    items = spec.split(",") if isinstance(spec, str) else [x for part in spec for x in part.split(",")]
    out: list[str] = []
    for raw in items:
        e = raw.strip()
        if not e:
            continue
        low = e.lower()
        if low in ("hack", "hacks"):
            e = "hacks"
        elif low in ("flag", "flags"):
            e = "flags"
        elif low in ("label", "labels", "labelled", "labeled"):
            e = "labelled"
        elif not (low.startswith(("hack:", "flag:", "label:")) and len(e.split(":", 1)[1]) > 0):
            raise ValueError(f"--exclude {e!r}: one of {EXCLUDE_HELP}")
        if e not in out:
            out.append(e)
    return tuple(out)


def exclusion_reason(run: Any, exclude: Sequence[str]) -> str | None:
    """Why ``run`` is left out of the aggregates (the first exclusion it meets), or None."""
    hacks = list(getattr(run, "hacks", None) or [])
    flags = [f for f in getattr(run, "flags", None) or [] if f not in hacks]
    labels = [lab.split("@", 1)[0] for lab in getattr(run, "labels", None) or []]
    for e in exclude:
        if e == "hacks" and hacks:
            return "hack classes"
        if e == "flags" and flags:
            return "flags"
        if e == "labelled" and labels:
            return "labels"
        kind, _, name = e.partition(":")
        if kind == "hack" and name in hacks:
            return f"hack {name}"
        if kind == "flag" and name in (getattr(run, "flags", None) or []):
            return f"flag {name}"
        if kind == "label" and name in labels:
            return f"label {name}"
    return None


@dataclass
class Selection:
    """The runs the aggregates count, and what they leave out (always said, even when nothing)."""

    kept: list[Any]
    excluded: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()

    def line(self, no_kernel: int = 0) -> str:
        """What the aggregates count, of how many runs, and what they leave out: the runs the
        exclusion leaves out and ``no_kernel``, the kept runs with no kernel (listed, never counted
        per model: :func:`model_aggregates`)."""
        n = len(self.kept) + self.excluded
        counted = len(self.kept) - no_kernel
        head = f"aggregates count all {count(n, 'run')}" if counted == n else f"aggregates count {counted} of {count(n, 'run')}"
        left: list[str] = []
        if self.exclude:
            why = ", ".join(f"{k} {v}" for k, v in self.reasons.items())
            left.append(f"{self.excluded} excluded" + (f" ({why})" if why else "") + f" by --exclude {','.join(self.exclude)}")
        if no_kernel:
            left.append(f"{no_kernel} with no kernel not counted (listed)")
        return head + "; " + ("; ".join(left) if left else "0 excluded")

    def to_dict(self, no_kernel: int = 0) -> dict[str, Any]:
        return {"counted": len(self.kept) - no_kernel, "excluded": self.excluded, "without_kernel": no_kernel,
                "reasons": dict(self.reasons), "exclude": list(self.exclude)}


def select(runs: Iterable[Any], exclude: Sequence[str] = ()) -> Selection:
    sel = Selection([], exclude=tuple(exclude))
    for r in runs:
        why = exclusion_reason(r, exclude) if exclude else None
        if why is None:
            sel.kept.append(r)
        else:
            sel.excluded += 1
            sel.reasons[why] = sel.reasons.get(why, 0) + 1
    return sel


# ---- comparing runs ------------------------------------------------------------------------------
HIGHER = "higher"
LOWER = "lower"


@dataclass(slots=True)
class CompareRow:
    """One row of the comparison: a label and one raw value per run.

    ``fmt`` tells the renderer how to show a value: "text", "int", "ms" (milliseconds of wall
    time), "us" (GPU microseconds), "x" (a ratio), "outcome", "turn", "flags" (a list of codes),
    "turns" (a (turns, max) pair). ``best`` holds the indices of the runs with the better value
    when the row has a direction (``better`` = "higher" / "lower").
    """

    key: str
    label: str
    values: list[Any]
    fmt: str = "text"
    better: str | None = None
    best: set[int] = field(default_factory=set)
    indent: int = 0
    note: str = ""


def _calls_by_name(run: Run) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in run.agent_calls:
        out[c.name] = out.get(c.name, 0) + 1
    return out


def _wall(run: Run) -> int | None:
    return None if run.variant == V2 else run.wall_ms


def _llm(run: Run) -> int | None:
    return None if run.variant == V2 else run.llm_ms


def _tool(run: Run) -> int | None:
    return None if run.variant == V2 else run.tool_ms


def _rt(run: Run) -> float | None:
    return run.metrics.runtime_us if run.metrics else None


def _sp(run: Run) -> float | None:
    return run.metrics.speedup if run.metrics else None


def problem_label(run: Run) -> str:
    p = run.problem
    return p.title if (p.level is not None or p.problem_id is not None or p.name) else "unknown problem"


def same_problem_key(run: Run) -> str:
    p = run.problem
    if p.level is not None and p.problem_id is not None:
        return f"L{p.level}/P{p.problem_id}"
    if p.problem_id is not None:
        return str(p.problem_id)
    return (p.name or "").strip().lower()


def reference_hash(run: Run) -> str | None:
    """The problem's reference source, hashed with trailing spaces and blank edges ignored: runs of
    different harnesses (a Wafer rollout, an ensemble trace) name a problem differently but carry the
    same KernelBench reference."""
    src = run.problem.reference_source
    if not isinstance(src, str) or not src.strip():
        return None
    norm = "\n".join(ln.rstrip() for ln in src.strip().splitlines())
    return hashlib.sha1(norm.encode("utf-8", "replace")).hexdigest()


def problem_warning(runs: Sequence[Run]) -> str | None:
    """A one-line warning when the runs are not all on the same problem (by level / id or name, or
    else by reference hash), else None."""
    keys = [same_problem_key(r) for r in runs]
    if len(set(keys)) <= 1 and keys and keys[0]:
        return None
    refs = [reference_hash(r) for r in runs]
    if refs and all(refs) and len(set(refs)) == 1:
        return None
    if len(set(keys)) <= 1:
        return "the problem of these runs is unknown: they may not be comparable"
    labels = ", ".join(f"#{i + 1} {problem_label(r)}" for i, r in enumerate(runs))
    return f"these runs are not on the same problem ({labels})"


def _mark_best(row: CompareRow, pool: set[int] | None = None) -> None:
    """Mark the best values of a row with a direction. With a ``pool`` (cost rows), only runs in
    it compete, and at least two must have a value."""
    if row.better is None:
        return
    maybe = [(i, _finite(v)) for i, v in enumerate(row.values) if pool is None or i in pool]
    cand = [(i, v) for i, v in maybe if v is not None]
    if not cand or (pool is not None and len(cand) < 2):
        return
    target = (max if row.better == HIGHER else min)(v for _, v in cand)
    best = {i for i, v in cand if v == target}
    row.best = best if len(best) < len(row.values) else set()  # all equal: nothing stands out


def compare_rows(runs: Sequence[Run]) -> list[CompareRow]:
    """The comparison summary: one row per figure, one value per run, the better ones marked.

    Cost rows (turns, calls, tokens, times) are compared among the runs that reached the best
    outcome: a run that stopped early is cheap, not better.
    """
    n = len(runs)
    ranks = [OUTCOME_RANK.get(r.outcome, 0) for r in runs]
    top = max(ranks) if ranks else 0
    leaders = {i for i in range(n) if ranks[i] == top}
    rows: list[CompareRow] = []

    def row(key: str, label: str, values: list[Any], fmt: str = "text", better: str | None = None,
            cost: bool = False, indent: int = 0, note: str = "") -> CompareRow:
        r = CompareRow(key, label, values, fmt, better, indent=indent, note=note)
        if fmt == "turns":
            r.values = values
            scalar = CompareRow(key, label, [v[0] for v in values], better=better)
            _mark_best(scalar, leaders if cost else None)
            r.best = scalar.best
        else:
            _mark_best(r, leaders if cost else None)
        rows.append(r)
        return r

    row("problem", "problem", [problem_label(r) for r in runs])
    row("model", "model", [r.model for r in runs])
    row("persona", "persona", [r.persona for r in runs])
    row("outcome", "outcome", [r.outcome for r in runs], "outcome")
    outcome_row = rows[-1]
    if len(set(ranks)) > 1:
        outcome_row.best = leaders
    row("turns", "turns / max", [(len(r.turns), r.max_turns) for r in runs], "turns", LOWER, cost=True)
    row("calls", "tool calls", [len(r.agent_calls) for r in runs], "int")
    by_name = [_calls_by_name(r) for r in runs]
    names: list[str] = []
    for d in by_name:
        for k in d:
            if k not in names:
                names.append(k)
    for name in names:
        row(f"calls.{name}", name, [d.get(name, 0) for d in by_name], "int", indent=1)
    row("failed_calls", "failed calls", [facts.failed_calls(r) for r in runs], "int", LOWER, cost=True)
    row("tokens_in", "tokens in", [r.tokens_in if _has_tokens(r) else None for r in runs], "int", LOWER,
        cost=True)
    row("tokens_out", "tokens out", [r.tokens_out if _has_tokens(r) else None for r in runs], "int", LOWER,
        cost=True)
    row("wall", "wall time", [_wall(r) for r in runs], "ms", LOWER, cost=True)
    row("llm", "LLM time", [_llm(r) for r in runs], "ms", LOWER, cost=True)
    row("tool", "tool time", [_tool(r) for r in runs], "ms", LOWER, cost=True)
    row("kernels", "kernel versions", [len(r.kernels) for r in runs], "int")
    first = [r.first_correct_turn for r in runs]
    fc = row("first_correct", "first correct kernel", first, "turn", LOWER)
    if any(v is not None for v in first) and any(v is None for v in first):
        fc.best = {i for i, v in enumerate(first) if v == min(x for x in first if x is not None)}
    row("runtime", "runtime (recorded)", [_rt(r) for r in runs], "us", LOWER)
    row("speedup", "speedup", [_sp(r) for r in runs], "x", HIGHER)
    hacks = [facts.hack_classes(r) for r in runs]
    if any(hacks):  # the honesty classes of each run's final kernel (only when some run has one)
        hrow = row("hacks", "hack classes", hacks, "flags")
        hrow.best = {i for i, h in enumerate(hacks) if not h}
    flag_row = row("flags", "flags", [facts.flag_codes(r) for r in runs], "flags")
    counts = [len(v) for v in flag_row.values]
    if len(set(counts)) > 1:
        flag_row.best = {i for i, c in enumerate(counts) if c == min(counts)}
    return rows


def _has_tokens(run: Run) -> bool:
    return any(t.tokens_in is not None or t.tokens_out is not None for t in run.turns)


# ---- kernel progress per run -----------------------------------------------------------------------
@dataclass(slots=True)
class VersionProgress:
    number: int
    first_turn: int | None
    compiled: bool | None  # None: never compiled or checked
    correct: bool | None  # None: never checked
    runtime_us: float | None  # recorded (corrected) runtime, when this version was measured
    by_turn: dict[int, str] = field(default_factory=dict)  # turn -> worst status of its uses
    final: bool = False


_COMPILE_TOOLS = ("compile_kernel",)
_CORRECT_TOOLS = ("run_correctness", "submit_kernel")
_WORSE = {ERROR: 3, FAILED: 2, "missing": 1, OK: 0}


def kernel_progress(run: Run) -> list[VersionProgress]:
    """For each kernel version: compiled / correct / recorded runtime, and its status per turn."""
    final = run.final_kernel
    out: list[VersionProgress] = []
    for kv in run.kernels:
        compiled: bool | None = None
        correct: bool | None = None
        by_turn: dict[int, str] = {}
        for u in kv.uses:
            if u.tool in _COMPILE_TOOLS or u.tool in _CORRECT_TOOLS:
                if u.status == OK:
                    compiled = True
                elif u.tool in _COMPILE_TOOLS and u.status in (FAILED, ERROR) and compiled is None:
                    compiled = False
            if u.tool in _CORRECT_TOOLS:
                if u.status == OK:
                    correct = True
                elif u.status in (FAILED, ERROR) and correct is None:
                    correct = False
            if u.turn is not None and u.tool != "final_answer":
                prev = by_turn.get(u.turn)
                if prev is None or _WORSE.get(u.status, 0) > _WORSE.get(prev, 0):
                    by_turn[u.turn] = u.status
        is_final = final is not None and final.number == kv.number
        rt = run.metrics.runtime_us if (is_final and run.metrics is not None) else None
        out.append(VersionProgress(kv.number, kv.first_turn, compiled, correct, rt, by_turn, is_final))
    return out


def turn_of_version(run: Run, number: int) -> int | None:
    """The first turn that used kernel version ``number`` (for aligning runs by version)."""
    kv = run.kernel(number)
    if kv is None:
        return None
    turns = kv.turns
    return turns[0] if turns else kv.first_turn


def version_at_turn(run: Run, turn: int) -> int | None:
    """The kernel version the run was working on at ``turn`` (the latest one used so far)."""
    best: int | None = None
    for c in run.agent_calls:
        if c.turn is not None and c.turn <= turn and c.kernel is not None:
            best = c.kernel
    return best
