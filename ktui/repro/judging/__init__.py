"""Recorded vs reproduced: one judge per aspect (:mod:`.judges`), values in rows
(:mod:`.model`), words from a separate formatter (:mod:`.text`), combined by :func:`compare`.

Verdicts (worst first):

- ``not reproducible``: the snapshot could not be built or run here (compile error, crash,
  hang, runtime error), or could not be tested (no GPU, no reference);
- ``correctness disagrees``: the trace says it passed and it fails here, or the reverse;
- ``suspicious``: an honesty finding: from the code (a timer patch, a thread, a pointer cache
  ..., pinned to the turn that introduced it) or from a probe on re-execution (cached output,
  mutated inputs, work hidden on a side stream, an ``__eq__`` override, not a plain tensor...);
- ``unit error suspected``: a reproduced time is ~1000x (or ~1/1000) the value as the trace
  claims it (PopcornBench stores milliseconds in ``*_us`` fields);
- ``differs``: measured, but outside noise (or failing differently from the record);
- ``reproduced: fails the same way``: the trace recorded a failure, and it fails here with the
  same (normalized) error;
- ``reproduced``: within noise.

A verdict worse than ``suspicious`` still names the honesty classes found in its reason; a
failure on the judge's side (the reference or the harness broke) of a kernel with honesty
findings is ``suspicious``: the kernel, not the harness, is what the verdict is about.
Row-only verdicts: ``not recorded`` (the trace has no value) and ``shown only``.
"""

from __future__ import annotations

from typing import Any

from ktui.repro.judging import judges, text
from ktui.repro.judging.errors import normalize_error, same_error
from ktui.repro.judging.model import (
    CANCELLED,
    JUDGE_SIDE,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    SEVERITY,
    SUSPICIOUS,
    Comparison,
    FindingRow,
    Judgement,
    Row,
)

ASPECTS = (judges.judge_build, judges.judge_correctness, judges.judge_precision, judges.judge_timing,
           judges.judge_memory, judges.judge_launches, judges.judge_honesty)

__all__ = ["ASPECTS", "NOT_REPRODUCIBLE", "Comparison", "FindingRow", "Judgement", "Row", "compare", "normalize_error",
           "same_error"]


def _environment_notes(rec: Any, env: dict[str, Any]) -> list[str]:
    if rec.hardware and env.get("gpu") and rec.hardware.strip() != str(env.get("gpu")).strip():
        return [f"recorded on {rec.hardware}, reproduced on {env['gpu']}: timings are not expected to match exactly"]
    if rec.hardware and not env.get("gpu") and env:
        return [f"recorded on {rec.hardware}, reproduced on {env.get('device', 'cpu')}: timings are not comparable"]
    return []


def reference_time_cached(result: Any) -> str | None:
    """Words for a result whose reference time was not measured for this kernel but replayed from
    the judge's reference-timing cache (another kernel of the problem, same inputs and device
    state): said in the verdict with its age. None otherwise."""
    t = result.get("timing") if isinstance(result, dict) else None
    rt = t.get("reference_timing") if isinstance(t, dict) else None
    if not isinstance(rt, dict) or rt.get("source") != "cache":
        return None
    age = rt.get("age_s")
    if not isinstance(age, (int, float)) or isinstance(age, bool) or not age == age:
        return "reference time from the cache (age unknown)"
    a = max(0.0, float(age))
    words = f"{a:.0f} s" if a < 90 else (f"{a / 60:.0f} min" if a < 5400 else f"{a / 3600:.1f} h")
    return f"reference time from the cache, measured {words} earlier"


def compare(rec: Any, result: dict[str, Any], static: list[Any] | None = None,
            rule: dict[str, Any] | None = None) -> Comparison:
    """Recorded vs reproduced for one kernel version. ``static``: the version's static findings
    (:class:`ktui.trace.findings.Finding`); by default those the recorded side carries. ``rule``:
    the correctness rule it was judged by (``TaskRule.to_dict()``, kept in the request): said in
    the reason of every verdict that rests on the kernel's correctness."""
    comp = _compare(rec, result, static)
    cached = reference_time_cached(result)
    if cached:
        comp.reason += f"; {cached}"
    text_ = rule.get("text") if isinstance(rule, dict) else None
    if isinstance(text_, str) and text_:
        comp.rule = text_[:600]
        corr = result.get("correctness") if isinstance(result, dict) else None
        if isinstance(corr, dict) and corr and rule.get("status") in ("known", "unknown"):
            comp.reason += f"; correctness judged by {comp.rule}"
    return comp


def _compare(rec: Any, result: dict[str, Any], static: list[Any] | None) -> Comparison:
    result = result if isinstance(result, dict) else {}
    ev = judges.Evidence(rec, result, list(static if static is not None else getattr(rec, "findings", []) or []))
    js = [judge(ev) for judge in ASPECTS]
    rows = [r for j in js for r in j.rows]
    findings = [f for j in js for f in j.findings]
    # a finding of severity info (Triton's default TF32 in tl.dot) is a fact shown beside the verdict,
    # not a suspicion: it never makes a kernel "suspicious" nor heads the reason
    suspicions = [f for f in findings if f.severity != "info"]
    env = result.get("environment") if isinstance(result.get("environment"), dict) else {}
    notes = [str(n) for n in (result.get("notes") or [])] + _environment_notes(rec, env)
    notes += [n for j in js for n in j.notes]
    checks = [c for c in (result.get("checks") or []) if isinstance(c, dict)]
    flags = [c for c in checks if c.get("ok") is False]
    decided = next((j for j in js if j.verdict is not None), None)
    if decided is not None and decided.verdict == CANCELLED:
        return Comparison(verdict=CANCELLED, reason=decided.reason, rows=rows, findings=findings, checks=checks,
                          flags=flags, notes=notes)
    if decided is not None:  # the run failed: the judge of the failing aspect decides
        verdict, reason = decided.verdict, decided.reason
        kind = (ev.failure or {}).get("kind")
        if suspicions and kind in JUDGE_SIDE:
            verdict = SUSPICIOUS
            reason = text.honesty_reason(suspicions) + f"; then the run broke on the judge's side: {text.short(reason)}"
        elif suspicions:
            if SEVERITY.get(verdict, 0) < SEVERITY[SUSPICIOUS]:
                verdict = SUSPICIOUS
                reason = text.honesty_reason(suspicions) + f"; {text.short(reason)}"
            else:
                reason += "; " + text.honesty_reason(suspicions).replace("honesty check failed: ", "honesty: ")
        return Comparison(verdict=verdict, reason=reason, rows=rows, findings=findings, checks=checks, flags=flags,
                          not_measured=judges.not_measured(rec), notes=notes)
    compared = [r.verdict for r in rows if r.verdict in SEVERITY]
    worst = max(compared, key=lambda v: SEVERITY[v], default=REPRODUCED)
    if suspicions and SEVERITY[SUSPICIOUS] > SEVERITY[worst]:
        worst = SUSPICIOUS
    return Comparison(verdict=worst, reason=text.reason(worst, js, suspicions), rows=rows, findings=findings,
                      checks=checks, flags=flags, not_measured=judges.not_measured(rec), notes=notes)


