"""Result sidecars: what a harness itself recorded about a run, beside (or inside) the trace.

A sweep's truth is its harness's result files, not the agent's transcript: a Harbor trial's
``reward.json`` / ``reward.txt`` / ``verifier/`` / ``result.json``, a KernelBench run folder's
``eval_results.json``, an Inspect log's scores, an ensemble trace's grader ``FINAL SCORE``. One
registry (:func:`sidecars`) of readers, each recognising its file by content (keys and shapes,
the way the importers recognise traces), gives one :class:`Result` per run: the outcome, whether
the kernel was correct and compiled, speedups with the baseline each is over (``eager``,
``torch.compile``, ``reference``), the error text and the cheat flags the harness raised itself.

:func:`attach` is called once on every loaded (or skimmed) run, whatever its format: it names
the problem (:mod:`ktui.trace.results.naming`), finds the reference in the task prompt
(:mod:`ktui.trace.results.reference`), then reads the sidecars and makes them the run's outcome
and metrics. Where the trace's own verdict and the result file disagree, a ``result_disagrees``
flag says so (the result file wins: it is what the sweep counted).

No Textual, no Rich, no torch. Nothing here raises on data or writes anything.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from ktui.trace.model import INCOMPLETE, OUTCOME_FAILED, PASSED, Flag, Metric, Metrics, Run

MAX_SIDECAR_BYTES = 4 << 20  # a result file is small; anything larger is not one

# baselines a speedup can be over, as the views name them
EAGER = "eager"
COMPILE = "torch.compile"
REFERENCE = "reference"


@dataclass(slots=True)
class Result:
    """What a harness recorded about one run."""

    harness: str  # "harbor", "kernelbench", "inspect", "ensemble"
    source: str  # the file (and key) it came from, for the user
    outcome: str | None = None  # passed | failed | incomplete (None: the file does not say)
    rule: str = ""  # how the harness decides a pass, in words ("reward > 0")
    correct: bool | None = None
    compiled: bool | None = None
    reward: float | None = None
    speedups: dict[str, float] = field(default_factory=dict)  # baseline -> x
    primary: str | None = None  # the baseline the harness's pass rule is about
    runtime_us: float | None = None
    ref_runtime_us: float | None = None  # the reference's, as the harness timed it
    error: str = ""
    # the harness's own flags: (code, one line); harness_suspicious: it asks for a review (a speedup
    # it finds implausible, a cheat it suspects); harness_rejected: its anti-cheat check refused the kernel
    cheats: list[tuple[str, str]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # other fields worth showing (max_err, ...)
    task: str | None = None  # the task name the file gives
    model: str | None = None  # the model the file names

    @property
    def speedup(self) -> float | None:
        if self.primary and self.primary in self.speedups:
            return self.speedups[self.primary]
        return next(iter(self.speedups.values()), None)

    def speedups_text(self) -> str:
        return ", ".join(f"{v:.2f}x vs {k}" for k, v in self.speedups.items())

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]


def num(v: Any) -> float | None:
    """A finite number (bools are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def read_small(path: str) -> bytes | None:
    """A regular file's bytes when it is small enough to be a result file; None otherwise."""
    from ktui.trace.lines import read_capped

    try:
        st = os.stat(path)
        if not os.path.isfile(path) or st.st_size > MAX_SIDECAR_BYTES:
            return None
        with open(path, "rb") as f:
            return read_capped(f, MAX_SIDECAR_BYTES + 1)
    except OSError:
        return None


def read_json(path: str) -> Any:
    from ktui.trace.notes import JSONError, loads, loads_lenient

    raw = read_small(path)
    if raw is None:
        return None
    try:
        return loads(raw)
    except JSONError:  # ValueError and RecursionError among them
        pass
    try:  # NaN / Infinity (Python's json writes them for a zero time), a lone surrogate, bad UTF-8
        return loads_lenient(raw)
    except JSONError:
        return None


# ---- the registry ---------------------------------------------------------------------------------
def sidecars() -> list[tuple[str, Any]]:
    """The registry: (harness, reader) in the order they are tried; a reader's ``find(run)``
    returns a :class:`Result` or None."""
    from ktui.trace.results import harbor, inline, kernelbench, runfile

    # file sidecars first (they are what the sweep counted), then what the trace holds itself
    return [("harbor", harbor), ("kernelbench", kernelbench), ("result file", runfile), ("inspect", inline.INSPECT),
            ("ensemble", inline.ENSEMBLE)]



def find(run: Run) -> list[Result]:
    """Every result recorded for ``run`` (its sidecar files, then its own scores), best first."""
    out: list[Result] = []
    for _name, mod in sidecars():
        try:
            r = mod.find(run)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError):
            r = None
        if r is not None:
            out.append(r)
    return out


def is_sidecar(path: str) -> bool:
    """Whether a ``.json`` (or a Triton generation ``results.jsonl``) file the sweep walk meets is a
    result file (not a trace, not noise)."""
    from ktui.trace.results import harbor, kernelbench, runfile

    if harbor.is_result_file(path) or kernelbench.is_result_file(path) or kernelbench.is_lines_file(path):
        return True
    # a harness's verdict on a kernel with no kernel file named (a re-evaluation beside a run's result)
    return path.endswith(".json") and runfile.is_result_object(read_json(path))


# ---- applying a result ------------------------------------------------------------------------------
def attach(run: Run) -> Run:
    """Name the problem, find the reference in the prompt, apply the run's result files."""
    from ktui.trace.results import naming, reference

    if getattr(run, "_results_attached", False):  # an ensemble trace read through the importers
        return run
    run._results_attached = True  # type: ignore[attr-defined]
    try:
        reference.from_prompt(run)
    except (ValueError, TypeError, AttributeError, RecursionError):
        pass
    results = find(run)
    try:
        naming.name_problem(run, results)
    except (ValueError, TypeError, AttributeError):
        pass
    run.results = results
    if results and results[0].harness not in ("inspect", "ensemble"):
        apply(run, results[0])
    return run


def apply(run: Run, r: Result) -> None:
    """Make a sidecar file's verdict the run's outcome and metrics; flag a disagreement."""
    traced = run.outcome
    traced_correct = run.metrics.correct if run.metrics is not None else None
    if r.outcome is not None:
        run.outcome = r.outcome
    if r.model and not run.model:  # a trace that names no model (Claude Code's "<synthetic>" message)
        run.model = r.model
    m = run.metrics if run.metrics is not None else Metrics()
    old_source = m.source
    m.source = f"{r.source} ({r.harness})"
    if r.correct is not None:
        m.correct = r.correct
    sp = r.speedup
    if sp is not None:
        m.speedup = sp
    elif r.outcome is not None:
        m.speedup = None  # the trace's figure is not what the harness measured
    if r.runtime_us is not None:
        m.runtime_us = r.runtime_us
    if r.ref_runtime_us is not None:
        m.ref_runtime_us = r.ref_runtime_us
    rows = [Metric("result.source", "result file", r.source, "")]
    if r.rule:
        rows.append(Metric("result.rule", "pass rule", r.rule, ""))
    if r.reward is not None:
        rows.append(Metric("result.reward", "reward", r.reward, ""))
    if r.correct is not None:
        rows.append(Metric("result.correct", "correct", "yes" if r.correct else "no", ""))
    if r.compiled is not None:
        rows.append(Metric("result.compiled", "compiled", "yes" if r.compiled else "no", ""))
    for base, v in r.speedups.items():
        rows.append(Metric(f"result.speedup.{base}", f"speedup vs {base}", v, "x"))
    if r.runtime_us is not None:
        rows.append(Metric("result.runtime", "runtime", r.runtime_us, "us"))
    if r.ref_runtime_us is not None:
        rows.append(Metric("result.ref_runtime", "reference runtime", r.ref_runtime_us, "us"))
    for k, v in r.values.items():
        rows.append(Metric(f"result.{k}", k.replace("_", " "), v, ""))
    if r.error:
        rows.append(Metric("result.error", "error", r.error[:500], ""))
    if old_source:
        rows.append(Metric("result.trace_source", "the trace's own result", old_source, ""))
    m.groups = {"result": rows, **{k: v for k, v in m.groups.items() if k != "result"}}
    run.metrics = m
    for code, c in r.cheats:
        sev = "info" if code == "harness_rejected" else "warning"
        run.flags.append(Flag(code, f"{r.harness} flagged this run: {c} ({r.source})", sev))
    _other_code(run, r)
    # the trace's own verdict against the file's
    if r.outcome in (PASSED, OUTCOME_FAILED) and traced in (PASSED, OUTCOME_FAILED) and traced != r.outcome:
        run.flags.append(Flag("result_disagrees", f"the trace says {traced}, {r.source} says {r.outcome}",
                              "warning"))
    elif r.correct is not None and traced_correct is not None and traced_correct != r.correct:
        run.flags.append(Flag("result_disagrees",
                              f"the trace's last check says correct={'yes' if traced_correct else 'no'}, "
                              f"{r.source} says correct={'yes' if r.correct else 'no'}", "warning"))


def _other_code(run: Run, r: Result) -> None:
    """Flag a result file whose error cannot be about the final version the trace holds
    (:mod:`ktui.trace.results.evaluated`): the harness evaluated code that is not in the trace."""
    from ktui.trace.results.evaluated import evaluated_other_code, names_syntax_error

    if r.correct or not names_syntax_error(r.error):
        return
    try:
        fk = run.final_kernel
        other = evaluated_other_code(r.error, fk.code if fk is not None else None)
    except (OSError, ValueError, AttributeError):
        return
    if other:
        run.flags.append(Flag("result_other_code", f"{r.source}: {other} ({fk.label if fk else ''})", "warning"))


def outcome_of(passed: bool | None) -> str:
    return INCOMPLETE if passed is None else PASSED if passed else OUTCOME_FAILED


__all__ = ["COMPILE", "EAGER", "REFERENCE", "Result", "apply", "attach", "find", "is_sidecar",
           "num", "outcome_of", "read_json", "read_small", "sidecars"]
