"""Results a trace holds itself: an Inspect log's scores, an ensemble grader's ``FINAL SCORE``.

These are read by the importers already (they set the run's scores and outcome); here they are
listed as the run's :class:`~ktui.trace.results.Result` too, so that every view can say where a
run's outcome came from, whatever the harness.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.results import Result


class _Inline:
    def __init__(self, harness: str, formats: tuple[str, ...], what: str) -> None:
        self.harness, self.formats, self.what = harness, formats, what

    def find(self, run: Any) -> Result | None:
        if run.format not in self.formats:
            return None
        if run.final_score is None and not run.scores:
            return None
        where = next((t for t in run.terminal if t.kind in ("final_score", "score", "grader")), None)
        src = self.what + (f" (line {where.line})" if where is not None and where.line else "")
        m = run.metrics
        r = Result(self.harness, src, outcome=run.outcome, correct=m.correct if m is not None else None)
        if run.final_score is not None:
            r.reward = run.final_score
        for k, v in list(run.scores.items())[:12]:
            r.values[k] = v
        if m is not None and m.speedup is not None:
            r.speedups["reference"] = m.speedup
        return r


INSPECT = _Inline("inspect", ("inspect",), "the log's scores")
ENSEMBLE = _Inline("ensemble", ("ensemble",), "the grader's FINAL SCORE")
