"""What the builder derives from events: problem facts, result status, timing, kernel
versions, terminal state, outcome. Pure functions over the model."""

from __future__ import annotations

import bisect
import hashlib
import re
from functools import lru_cache
from typing import Any

from ktui.trace.flags import compute_flags
from ktui.trace.metrics import final_metrics
from ktui.trace.model import (
    ERROR,
    FAILED,
    INCOMPLETE,
    OK,
    OUTCOME_FAILED,
    PASSED,
    UNKNOWN,
    V0,
    V1,
    V2,
    V3,
    KernelUse,
    KernelVersion,
    Problem,
    Run,
    Terminal,
)
from ktui.trace.text import shorten

# ---- problem ---------------------------------------------------------------------------------
_PROMPT_PROBLEM = re.compile(r"\*\*Problem:\*\*\s*(.+)")


def problem_from_prompt(problem: Problem, prompt: str) -> None:
    m = _PROMPT_PROBLEM.search(prompt[:4000])
    if m and not problem.name:
        problem.name = m.group(1).strip()


def problem_from_slug(problem: Problem, slug: str) -> None:
    pid = slug.rstrip("/").rsplit("/", 1)[-1]
    if problem.problem_id is None:
        problem.problem_id = pid


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None


def problem_from_fetch(problem: Problem, effect: dict[str, Any], line: int) -> None:
    lvl = _int(effect.get("level"))
    if lvl is not None:
        problem.level = lvl
    pid = effect.get("problem_id")
    if isinstance(pid, (int, str)) and not isinstance(pid, bool):
        problem.problem_id = _int(pid) if _int(pid) is not None else pid
    if isinstance(effect.get("name"), str):
        problem.name = effect["name"]
    src = effect.get("ref_arch_src")
    if isinstance(src, str) and src.strip():
        problem.reference_source = src
        problem.reference_origin = f"fetch_problem result ref_arch_src (line {line})"
    for key, attr in (("backend", "backend"), ("precision", "precision"), ("variant", "dataset_variant")):
        if isinstance(effect.get(key), str):
            setattr(problem, attr, effect[key])
    if isinstance(effect.get("source_kernel_src"), str):
        problem.source_kernel = effect["source_kernel_src"]


# ---- tool results ----------------------------------------------------------------------------
_VERDICT = re.compile(r"^\s*[\w.-]+\s+(PASSED|FAILED|RECORDED|SKIPPED|ERROR)\b")


def result_status(name: str, effect: dict[str, Any] | None, summary: str,
                  meta: dict[str, Any] | None, is_error: bool) -> str:
    if is_error:
        return ERROR
    if effect is not None and isinstance(effect.get("ok"), bool):
        return OK if effect["ok"] else FAILED
    m = _VERDICT.match(summary)
    if m:
        return FAILED if m.group(1) in ("FAILED", "ERROR") else OK
    if meta:
        for key in ("passed", "compiled", "correctness"):
            if meta.get(key) is False:
                return FAILED
        if meta.get("error"):
            return FAILED
    return OK


def effect_summary(name: str, effect: dict[str, Any]) -> str:
    """A one-line summary for effects that carry none (fetch_problem, generic worlds)."""
    if name == "fetch_problem" or "ref_arch_src" in effect:
        bits = [f"level {effect.get('level')}", f"problem {effect.get('problem_id')}"]
        if effect.get("name"):
            bits.append(str(effect["name"]))
        if isinstance(effect.get("ref_arch_src"), str):
            bits.append(f"reference {len(effect['ref_arch_src']):,} chars")
        return f"{name}: " + ", ".join(bits)
    if isinstance(effect.get("error"), str):
        return f"{name} error: {effect['error']}"
    if isinstance(effect.get("device_name"), str):
        return f"{name}: {effect['device_name']}"
    short = {k: v for k, v in effect.items() if isinstance(v, (str, int, float, bool)) and k != "ok"}
    data = effect.get("data")
    body = shorten(repr(data), 200) if data is not None else ", ".join(f"{k}={v}" for k, v in short.items())
    state = "ok" if effect.get("ok", True) else "failed"
    return f"{name} {state}" + (f": {body}" if body else "")


# ---- timing ----------------------------------------------------------------------------------
def turn_timing(run: Run, prev_ts: dict[int, int | None]) -> None:
    lines = run.events.lines
    for t in run.turns:
        t.llm_ms = t.tool_ms = t.wall_ms = None
        if run.variant == V2:
            t.timing_reliable = False
            continue
        if run.variant == V3:
            t.timing_reliable = False
            end = t.end_ms
            if not t.calls and lines:  # a final answer: measure up to the next event
                i = bisect.bisect_right(lines, t.last_line)
                if i < len(run.events) and run.events[i].ts_ms is not None:
                    end = run.events[i].ts_ms
            if end is not None and t.start_ms is not None:
                t.wall_ms = end - t.start_ms
            continue
        t.timing_reliable = True
        before = prev_ts.get(t.index)
        if before is not None and t.start_ms is not None:
            t.llm_ms = max(0, t.start_ms - before)
        durs = [c.duration_ms for c in t.calls if c.duration_ms is not None]
        t.tool_ms = sum(durs) if durs else (0 if t.calls else None)
        if t.end_ms is not None:
            base = before if before is not None else t.start_ms
            if base is not None:
                t.wall_ms = t.end_ms - base


# ---- kernel versions -------------------------------------------------------------------------
@lru_cache(maxsize=512)
def kernel_sha1(code: str) -> str:
    """PopcornBench's kernel identity. Cached: follow mode re-derives versions on every poll."""
    return hashlib.sha1(code.encode("utf-8", "replace")).hexdigest()


def kernel_versions(run: Run, final_answers: list[tuple[int, int | None, str]]) -> None:
    by_sha: dict[str, KernelVersion] = {}
    run.kernels = []

    def use(code, line: int, turn: int | None, use_: KernelUse, final_answer: bool = False,
            info: tuple[str, int, bool] | None = None) -> int:
        """``code``: the source, or the call whose kernel_code it is (``info`` known while reading)."""
        sha, lines, attached = info if info is not None else (kernel_sha1(code), None, None)
        kv = by_sha.get(sha)
        if kv is None:
            if attached is None:
                attached = code.strip().startswith("attachment://")
            kv = KernelVersion(number=len(run.kernels) + 1, sha1=sha, code=code, first_turn=turn,
                               first_line=line, from_final_answer=final_answer, lines=lines)
            if attached:
                kv.attachment = kv.code.strip()
            by_sha[sha] = kv
            run.kernels.append(kv)
        kv.uses.append(use_)
        return kv.number

    for c in run.calls:
        info = c.kernel_info
        if info is None:
            c.kernel = None
            continue
        summary = c.result_brief
        c.kernel = use(c if c.lazy else c.kernel_code, c.line, c.turn,
                       KernelUse(c.turn, c.index, c.name, c.status, summary), info=info)
    # a final answer's code matches the first version with the same stripped text: one dict
    # (built only when there are final answers), not a walk over the versions per answer
    by_text: dict[str, KernelVersion] = {}
    if final_answers:
        for k in run.kernels:
            by_text.setdefault(k.code.strip(), k)
    for line, turn, code in final_answers:
        stripped = code.strip()
        match = by_text.get(stripped)
        u = KernelUse(turn, -1, "final_answer", OK, "the model's final answer")
        if match is not None:
            match.uses.append(u)
        else:
            use(code, line, turn, u, final_answer=True)
            by_text.setdefault(stripped, run.kernels[-1])


# ---- metrics, outcome ------------------------------------------------------------------------
_PASS_KEYS = ("submission_passed", "submit_passed", "correct")


def metrics_and_outcome(run: Run) -> None:
    submit = next((c for c in reversed(run.calls) if c.name == "submit_kernel" and c.result), None)
    run.metrics = final_metrics(run, submit) if submit is not None else None
    s = run.scores
    if any(s.get(k, 0) >= 1 for k in _PASS_KEYS):
        run.outcome = PASSED
    elif "submitted" in s and s["submitted"] < 1:
        run.outcome = INCOMPLETE
    elif any(k in s for k in _PASS_KEYS):
        run.outcome = OUTCOME_FAILED
    elif run.final_score is not None or any(t.kind in ("score", "final_score") for t in run.terminal):
        if run.final_score and run.final_score > 0:
            run.outcome = PASSED
        elif submit is not None:
            run.outcome = OUTCOME_FAILED
        else:
            run.outcome = INCOMPLETE
    elif run.metrics is not None and run.metrics.correct is not None:
        run.outcome = PASSED if run.metrics.correct else OUTCOME_FAILED
    elif submit is not None:
        run.outcome = PASSED if submit.status == OK else OUTCOME_FAILED
    else:
        run.outcome = INCOMPLETE


def terminal_state(run: Run, final: bool) -> None:
    run.terminal = [t for t in run.terminal if t.kind not in ("dangling_call", "eof")]
    for c in run.calls:
        if not c.has_result and c.turn is not None:
            run.terminal.append(Terminal("dangling_call", f"{c.name} called at line {c.line} has no result",
                                         c.line))
    if not run.terminal and run.events:
        last = run.events[-1]
        what = "still being written" if run.incomplete else "no terminal note"
        run.terminal.append(Terminal("eof", f"trace ends at line {last.line}: {what}", last.line))


def flags(run: Run, *, findings: bool = True) -> None:
    run.flags = compute_flags(run, findings=findings)
    run.findings_pending = not findings


def variant(evidence: set[str], actors_seen: set[str | None], has_token_costs: bool) -> str:
    """The trace variant (format doc, section 4) from the markers the builder saw."""
    if V3 in evidence:
        return V3
    if V0 in evidence and V1 not in evidence:
        return V0
    if V1 in evidence:
        return V1
    if V2 in evidence:
        return V2
    if "assistant" in actors_seen and actors_seen <= {None, "assistant", "harness"}:
        return V2
    return V1 if has_token_costs else UNKNOWN


def agent_message_text(run: Run, msgs: dict[int, list[str]]) -> None:
    """A V1 turn's agent_message texts: reasoning first, then the visible text."""
    for idx, texts in msgs.items():
        t = run.turns[idx]
        if len(texts) >= 2:
            t.reasoning, t.text = texts[0], "\n\n".join(texts[1:])
        elif texts:
            m = texts[0]
            if t.calls or m.lstrip().startswith("**"):
                t.reasoning, t.text = m, None
            else:
                t.reasoning, t.text = None, m
