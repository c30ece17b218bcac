"""One definition of the run-level facts every view shows: failed calls and the flag set.

``ktui show``, the replay app, ``ktui compare`` and ``ktui runs`` (through the sweep index) all
read these, so they cannot disagree. (The outcome is :attr:`Run.outcome`, set by the builder;
times are formatted by :mod:`ktui.view.fmt`.)

- A **failed call** is an agent call (seeded calls excluded) whose status is not ``ok``: the tool
  reported failure, the dispatcher failed, or no result was ever recorded (a dangling call).
- The **flag set** is every sanity flag of the run (metrics, every kernel version, harness) plus
  the flags of the run's state: ``backend_error`` / ``dangling_call`` (how it ended),
  ``still_writing`` (a partial last line), ``bad_lines`` (lines that did not parse) and
  ``speedup_excessive`` when the grader's scores say so. :func:`flag_codes` lists their codes
  once each, in order of first appearance.
"""

from __future__ import annotations

from ktui.trace.model import OK, Flag, Run, ToolCall
from ktui.trace.words import count


def not_a_trace(run: Run) -> str | None:
    """Why ``run`` is not a trace at all (one line, the same in every command), or None when it
    has events."""
    if len(run.events) or run.n_events:
        return None
    first = run.problems[0] if run.problems else None
    if first and first.line == 0:
        return first.message
    if first:
        return (f"not a trace: no readable events ({count(len(run.problems), 'bad line')}; first: line {first.line}: "
                f"{first.message})")
    return "not a trace: no events"

STATE_FLAG_MESSAGES = {
    "backend_error": "the model backend failed and ended the run",
    "dangling_call": "the run ended while a tool call was running (no result recorded)",
    "still_writing": "the last line is incomplete: the trace is still being written",
    "bad_lines": "some lines of the file did not parse or made no sense",
}


def is_failed(call: ToolCall) -> bool:
    """The one definition of a failed call: its status is anything but ``ok``."""
    return call.status != OK


def failed_calls(run: Run) -> int:
    """How many of the agent's calls failed (:func:`is_failed`)."""
    return sum(1 for c in run.agent_calls if is_failed(c))


def state_flags(run: Run) -> list[Flag]:
    """Flags of the run's state (how it ended, partial or bad lines, the grader's own flag)."""
    out: list[Flag] = []
    have = {f.code for f in run.flags}
    graded = [run.scores.get(k) for k in ("excessive_speedup_flagged", "excessive_speedup")]
    if "speedup_excessive" not in have and any(_at_least_one(v) for v in graded):
        out.append(Flag("speedup_excessive", "the grader flagged an excessive speedup", "warning"))
    state = run.terminal_state
    if state in ("backend_error", "dangling_call"):
        line = next((t.line for t in run.terminal if t.kind == state), None)
        out.append(Flag(state, STATE_FLAG_MESSAGES[state], "error" if state == "backend_error" else "warning",
                        line=line))
    if run.incomplete:
        out.append(Flag("still_writing", STATE_FLAG_MESSAGES["still_writing"], "info"))
    # imported formats: their warnings (an unpaired result, a second rollout) are not bad lines
    bad = [p for p in run.problems if (p.line > 0 or p.where) and (run.format == "ensemble" or p.severity == "error")]
    if bad:
        out.append(Flag("bad_lines", f"{count(len(bad), 'line')} with problems (first: line {bad[0].line})", "warning",
                        line=bad[0].line))
    return out


def hack_classes(run: Run) -> list[str]:
    """The honesty classes (:data:`ktui.trace.findings.CLASSES`) statically found in the run's
    final kernel, once each, in order ("no custom GPU code" is not one, nor a finding of severity
    info: a fact worth knowing, such as Triton's default TF32 in ``tl.dot``, not a suspicion)."""
    from ktui.trace.findings import CLASSES

    final = run.final_kernel
    out: list[str] = []
    for f in run.flags:
        if final is not None and f.kernel == final.number and f.code in CLASSES and f.code != "no_gpu_code" \
                and f.severity != "info" and f.code not in out:
            out.append(f.code)
    return out


def final_without_gpu_code(run: Run) -> bool:
    """The run's final kernel has no custom GPU code (a PyTorch wrapper): whatever speedup it
    records is not a kernel's."""
    final = run.final_kernel
    return final is not None and any(f.code == "no_gpu_code" and f.kernel == final.number for f in run.flags)


def _at_least_one(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1


def all_flags(run: Run) -> list[Flag]:
    """The flag set: the run's sanity flags, then its state flags."""
    return list(run.flags) + state_flags(run)


def flag_codes(run: Run) -> list[str]:
    """The codes of the flag set, once each, in order."""
    out: list[str] = []
    for f in all_flags(run):
        if f.code not in out:
            out.append(f.code)
    return out
