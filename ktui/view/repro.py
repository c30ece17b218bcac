"""The view of a reproduction (``ktui repro``, the app's repro panel): recorded vs reproduced.

    from ktui.view.repro import repro_view
    v = repro_view(report)          # a ktui.repro.api.ReproReport
    v.verdict, v.rows[0].recorded, v.findings, v.notes
    v.parts                         # the document (ktui.view.doc), in the order it is shown

Built once from the service's result; every string from the trace, the kernel or the judge went
through :func:`ktui.view.text.clean` here (renderers draw it as it is). No Rich, no Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ktui.repro.judging.names import NOT_RECORDED, SHOWN_ONLY, UNJUDGED
from ktui.repro.judging.text import row_texts
from ktui.trace.words import count, plural
from ktui.view import roles as R
from ktui.view.doc import RIGHT, Column, Para, Part, Table, blank, cell, para
from ktui.view.text import clean, one_line

FAILURE_KINDS_SHOWN = ("compile_error", "import_error", "runtime_error", "cuda_error")  # their output's tail


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    label: str
    recorded: str
    reproduced: str
    ratio: str
    verdict: str
    note: str = ""
    footnote: int | None = None  # the note's number under the table


@dataclass(frozen=True, slots=True)
class FindingView:
    cls: str
    reason: str
    evidence: str
    where: str


@dataclass(frozen=True, slots=True)
class CheckView:
    name: str
    ok: bool | None


@dataclass(frozen=True, slots=True)
class ReproView:
    version: str
    sha1: str
    turns: tuple[int, ...]
    final: bool
    verdict: str
    reason: str
    reference: str
    environment: str
    sandbox: str
    inputs: str
    rows: tuple[ComparisonRow, ...]
    checks: tuple[CheckView, ...]
    findings: tuple[FindingView, ...]
    notes: tuple[str, ...]  # host-bound, not re-measured, the comparison's notes
    failure_tail: str  # the last lines of a kernel's error output
    timing: str  # "(cached result from …)" or "(ran in 12.3 s)"
    parts: tuple[Part, ...]


def ratio_text(r: float | None) -> str:
    return "" if r is None else (f"{r:,.0f}x" if abs(r) >= 100 else f"{r:.2f}x")


def verdict_span_role(verdict: str, default: str = R.STRONG) -> str:
    return R.verdict_role(verdict) if verdict in R.VERDICT_STYLES else default


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def sandbox_line(result: Mapping[str, Any]) -> str:
    words = _d(result.get("sandbox")).get("candidate") or []
    if not words or not isinstance(words, list):
        return ""
    return "sandbox (in force for the kernel): " + ", ".join(str(w) for w in words)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def environment_line(result: Mapping[str, Any]) -> str:
    env = _d(result.get("environment"))
    if not env and result.get("decided_by"):  # not judged here, from the kernel's source (ktui.repro.early)
        return "environment: none (no worker started: decided from the kernel's source)"
    if not env:
        return "environment: unknown (the worker did not start)"
    parts = []
    if env.get("gpu"):
        parts.append(str(env["gpu"]))
        parts.append(f"driver {env.get('driver') or '?'}")
    else:
        parts.append(f"CPU {env.get('cpu') or '?'} ({count(env.get('threads', '?'), 'thread')})")
    parts.append(f"torch {env.get('torch')}")
    parts.append(f"CUDA {env.get('cuda') or '-'}")
    parts.append(str(env.get("arch") or env.get("device")))
    t = _d(result.get("timing"))
    if t:
        m = t.get("method_used") or t.get("method")
        s = f"{m}, {count(t.get('trials'), 'trial')}"
        if t.get("l2_flush_mib"):
            s += f", L2 flush {t['l2_flush_mib']} MiB"
        cs = t.get("candidate_stopped")
        if isinstance(cs, Mapping) and cs.get("windows"):
            s += (f", the kernel's processes stopped while the reference was timed (they used "
                  f"{_num(cs.get('cpu_seconds')) or 0.0:.2f} s of CPU)")
        parts.append(s)
        fl = _d(t.get("floor"))
        busy, naive = _num(fl.get("busy_queue_us")), _num(fl.get("naive_us"))
        if busy is not None and naive is not None:
            parts.append(f"timer floor {busy:.2f} μs (naive {naive:.2f})")
    return " · ".join(parts)


def inputs_line(result: Mapping[str, Any]) -> str:
    seed = _d(result.get("seeds")).get("inputs")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return (f"inputs: drawn from seed {seed}, new for this run and unknown to the kernel "
                f"(--input-seed {seed} replays them)")
    return ""


def turns_text(turns: tuple[int, ...]) -> str:
    if not turns:
        return ""
    return f"{plural(len(turns), 'turn')} {turns[0]}" + (f"-{turns[-1]}" if len(turns) > 1 else "")


def finding_where(f: Any) -> str:
    where = f.source if f.source != "static" else ("code" + (f", line {f.line}" if f.line is not None else ""))
    if f.turn is not None:
        where += f"; turn {f.turn}" + (f" ({f.since})" if f.since else "")
    return where


def comparison_columns(value_width: int) -> tuple[Column, ...]:
    """metric / recorded / reproduced / ratio / verdict (a repro's or a profile's table; they differ
    in how wide a value may be). Priorities, for a narrow widget: the metric, its verdict and the
    two values, the ratio (said again in a differing row's note) first out; where the rest does
    not fit, the reproduced value and the verdict wrap (on words) before the recorded value."""
    return (Column("metric", "metric", wrap=False),
            Column("recorded", "recorded", max_width=value_width, priority=1),
            Column("reproduced", "reproduced", max_width=value_width, priority=2),
            Column("ratio", "ratio", justify=RIGHT, wrap=False, priority=3),
            Column("verdict", "verdict", wrap=False, squeeze=True, narrows=2))


def _rows(comp: Any) -> tuple[list[ComparisonRow], list[tuple[Any, ...]]]:
    rows: list[ComparisonRow] = []
    cells: list[tuple[Any, ...]] = []
    n = 0
    for r in comp.rows:
        rec, rep = (one_line(x) for x in row_texts(r))
        ratio, verdict, note = ratio_text(r.ratio), clean(r.verdict), one_line(r.note)
        if r.verdict == NOT_RECORDED and rec not in ("", "—"):
            # the trace did record it: nothing was compared (the kernel was not judged here, or
            # nothing of it was measured), which "not recorded" beside a recorded "pass" denied
            verdict = "not judged" if getattr(comp, "verdict", None) in UNJUDGED else "—"
        foot = None
        if r.note and r.verdict not in (NOT_RECORDED, SHOWN_ONLY):
            n += 1
            foot = n
        rows.append(ComparisonRow(one_line(r.label), rec, rep, ratio, verdict, note, foot))
        vcell = cell(verdict, *([(f" [{foot}]", R.ASIDE)] if foot else []), role=verdict_span_role(r.verdict, ""))
        cells.append((cell(one_line(r.label)), cell(rec), cell(rep), cell(ratio), vcell))
    return rows, cells


def findings_table(findings: tuple[FindingView, ...]) -> Table:
    cols = (Column("class", "honesty finding", wrap=False, role=R.FINDING),
            Column("what", "what the kernel does", max_width=52, priority=1, narrows=3),  # prose wraps before code
            Column("evidence", "evidence", max_width=34, role=R.ASIDE, priority=2),
            Column("found", "found", max_width=18, priority=1))
    rows = tuple((cell(f.cls), cell(f.reason), cell(f.evidence or "—"), cell(f.where)) for f in findings)
    return Table("findings", cols, rows, header_role=R.FINDING)


def repro_view(report: Any) -> ReproView:
    """The view of a ``ReproReport`` (``ktui.repro.api``)."""
    comp = report.comparison
    res: Mapping[str, Any] = report.result if isinstance(report.result, Mapping) else {}
    version, verdict = one_line(report.version), clean(comp.verdict)
    turns = tuple(t for t in report.turns if isinstance(t, int))
    final = bool(report.recorded is not None and report.recorded.submitted)
    parts: list[Part] = []
    head: list[str | tuple[str, str]] = [(version, R.STRONG), f" · sha1 {clean(report.sha1[:12])}"]
    if turns:
        head.append(f" · {turns_text(turns)}")
    if final:
        head.append(" · final submission")
    head += ["   ", (f" {verdict.upper()} ", verdict_span_role(comp.verdict))]
    parts.append(para(*head))
    reference = clean(f"reference: {report.reference_origin}") if report.reference_origin else ""
    environment, sandbox, inputs = clean(environment_line(res)), clean(sandbox_line(res)), inputs_line(res)
    parts += [para(x, role=R.ASIDE) for x in (reference, environment, sandbox, inputs) if x]

    rows, cells = _rows(comp)
    parts.append(Table("comparison", comparison_columns(34), tuple(cells)))
    parts += [para(f"  [{r.footnote}] {r.label}: {r.note}", role=R.ASIDE) for r in rows if r.footnote]

    checks = tuple(CheckView(one_line(c.get("name", "?")), c.get("ok") if isinstance(c.get("ok"), bool) else None)
                   for c in comp.checks if isinstance(c, Mapping))
    if checks:
        marks = {True: ("✓", R.CHECK_OK), False: ("✗", R.CHECK_FAILED), None: ("–", R.CHECK_NONE)}
        parts.append(para("checks: ", *((f"{marks[c.ok][0]} {c.name}  ", marks[c.ok][1]) for c in checks)))
    findings = tuple(FindingView(one_line(f.cls), one_line(f.reason), one_line(f.evidence), one_line(finding_where(f)))
                     for f in comp.findings)
    if findings:
        parts.append(findings_table(findings))
    notes: list[str] = []
    tm = _d(res.get("timing"))
    if isinstance(tm.get("host_bound"), Mapping):
        hb = clean(tm["host_bound"].get("reason", "host-bound"))
        notes.append(hb)
        parts.append(para(hb, role=R.HOST))
    if comp.not_measured:
        nm = one_line("not re-measured: " + ", ".join(str(x) for x in comp.not_measured)
                      + " (needs Nsight Compute: add --profile)")
        notes.append(nm)
        parts.append(para(nm, role=R.ASIDE))
    for n in comp.notes:
        notes.append(clean(n))
        parts.append(para(f"note: {clean(n)}", role=R.ASIDE))
    f = _d(res.get("failure"))
    tail = ""
    if f.get("detail") and f.get("kind") in FAILURE_KINDS_SHOWN:
        tail = clean("\n".join(str(f["detail"]).strip().splitlines()[-6:]))
        parts.append(para(tail, role=R.FAILURE))
    reason = clean(comp.reason)
    # a reason that opens with the verdict ("not judged here (no GPU): ...") says it once
    said = reason.startswith(verdict) and reason[len(verdict):len(verdict) + 1] in (" ", ":")
    parts.append(para("verdict: ", (verdict, verdict_span_role(comp.verdict)),
                      reason[len(verdict):] if said else f" — {reason}"))
    wall = _num(res.get("wall_seconds"))
    timing = ""
    if report.cached:
        timing = clean(f"(cached result from {report.created or 'an earlier run'}; --fresh re-runs it)")
    elif res.get("decided_by"):
        timing = "(nothing ran: decided from the kernel's source)"
    elif wall is not None:
        timing = f"(ran in {wall:.1f} s)"
    if timing:
        parts.append(para(timing, role=R.ASIDE))
    parts.append(blank())
    return ReproView(version, clean(report.sha1), turns, final, verdict, reason, reference, environment, sandbox,
                     inputs, tuple(rows), checks, findings, tuple(notes), tail, timing, tuple(parts))


def brief_para(report: Any) -> Para:
    """One version's result as one line (``ktui repro --brief``; grep-able, never wrapped):
    version, sha1, turns, verdict, reproduced correctness and speedup, honesty classes, reason."""
    comp = report.comparison
    res = report.result if isinstance(report.result, Mapping) else {}
    corr, tm = _d(res.get("correctness")), _d(res.get("timing"))
    sp = _num(tm.get("speedup"))
    here = ("passed" if corr.get("passed") else "failed") if corr else (
        str(_d(res.get("failure")).get("kind") or "not run"))
    if sp is not None:
        here += f" {sp:.2f}x"
    turns = ",".join(str(t) for t in report.turns) or "—"
    return para((one_line(report.version), R.STRONG), f"  sha1={clean(report.sha1[:12])}  turns={turns}  ",
                (one_line(comp.verdict), verdict_span_role(comp.verdict)),
                one_line(f"  here={here}  classes={','.join(comp.classes) or '—'}"
                         + ("  cached" if report.cached else "") + f"  {comp.reason}"), wrap=False)


def summary_table(reports: list[Any]) -> Table:
    """One row per version (``ktui repro --all``)."""
    cols = (Column("version", "version", fold=False), Column("turns", "turns", fold=False),
            Column("verdict", "verdict", fold=False),
            Column("classes", "classes", max_width=28, priority=2),
            Column("reason", "reason", max_width=80, priority=1))
    rows = tuple((cell(one_line(r.version)), cell(",".join(str(t) for t in r.turns)),
                  cell(one_line(r.verdict), role=verdict_span_role(r.verdict, "")),
                  cell(one_line(", ".join(r.comparison.classes) or "—")), cell(one_line(r.reason)))
                 for r in reports)
    return Table("summary", cols, rows, title="summary", edge=True)
