"""The run header: what the run was, at a glance (problem, model, outcome, counts, speed, flags).

It draws :class:`ktui.view.HeaderView` and the view's flag set: the same facts ``ktui show``,
``compare`` and ``runs`` print.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.widgets import Static

from ktui.trace import facts
from ktui.trace.model import Run
from ktui.trace.words import count
from ktui.view import HeaderView
from ktui.view import roles as R
from ktui.view.build import flag_view, header_view
from ktui.view.text import one_line


def _sep(t: Text) -> None:
    t.append("  ·  ", "grey42")


def _kv(t: Text, key: str, value: str | Text, style: str = "") -> None:
    t.append(key + " ", "grey62")
    if isinstance(value, Text):
        t.append_text(value)
    else:
        t.append(value, style)


def header_text(run: Run, *, following: bool = False, loading: bool = False) -> Text:
    h: HeaderView = header_view(run)
    t = Text(end="")
    # line 1: identity and outcome
    t.append(h.title, "bold")
    if h.dataset_variant:
        t.append(f" · {h.dataset_variant}", "grey62")
    t.append("   ")
    t.append(h.model or "unknown model", "bold cyan")
    if h.persona:
        t.append(f" ({h.persona})", "cyan")
    t.append("   ")
    t.append(f"{R.OUTCOME_ICON.get(h.outcome, '')} {h.outcome}", R.style(R.outcome_role(h.outcome)))
    t.append(f"   {h.variant} · end: {h.end}", "grey50")
    if following:
        t.append("   ● following", "bold green")
    if run.incomplete:
        t.append("   … still being written", "yellow")
    t.append(f"   {h.file}", "grey42")
    t.append("\n")
    # line 2: counts and time
    _kv(t, "turns", h.turns_text, "bold")
    _sep(t)
    _kv(t, "tool calls", str(h.calls), "bold")
    if h.failed_calls:
        t.append(f" ({h.failed_calls} failed)", "red")
    _sep(t)
    _kv(t, "tokens", h.tokens_text, "bold")
    _sep(t)
    _kv(t, "wall", h.wall_text, "bold")
    if h.llm_text:
        _sep(t)
        _kv(t, "LLM", h.llm_text)
    if h.tools_text:
        _sep(t)
        _kv(t, "tools", h.tools_text)
    _sep(t)
    _kv(t, "kernels", str(h.kernels))
    if run.started_ms is not None:
        _sep(t)
        _kv(t, "started", h.started_text, "grey70")
    t.append("\n")
    # line 3: the measured result
    if h.measured:
        val = Text(h.runtime_text, style="bold", end="")
        if h.runtime_note:
            val.append(f" ({h.runtime_note})", "yellow")
        _kv(t, "runtime", val)
        _sep(t)
        _kv(t, "ref", h.ref_runtime_text, "bold")
        _sep(t)
        _kv(t, "speedup", h.speedup_text, "bold green" if (h.speedup or 0) > 1 else "bold")
        if h.correct is not None:
            _sep(t)
            _kv(t, "correct", "yes" if h.correct else "no", "green" if h.correct else "red")
        if h.final_kernel:
            _sep(t)
            _kv(t, "final", h.final_kernel, "magenta")
    else:
        t.append("no measured submission", "grey62")
        if h.final_kernel:
            _sep(t)
            _kv(t, "last kernel", h.final_kernel, "magenta")
    if h.final_score_text:
        _sep(t)
        _kv(t, "final score", h.final_score_text, "bold")
    t.append("\n")
    # line 4: the flag set, visibly
    flags = [flag_view(run, f) for f in facts.all_flags(run)]
    if flags or run.problems:
        counts = Counter(f.code for f in flags)
        worst: dict[str, str] = {}
        for f in flags:
            if f.code not in worst or f.severity == "error":
                worst[f.code] = f.severity
        if flags:
            t.append(f"⚑ {count(len(counts), 'flag')}: ", "bold yellow")
        for i, (code, n) in enumerate(counts.items()):
            if i:
                t.append(" · ", "grey42")
            first = next(f for f in flags if f.code == code)
            t.append(first.phrase, R.style(R.severity_role(worst.get(code, "warning"))) or "yellow")
            if n > 1:
                t.append(f" ×{n}", "grey62")
        if run.problems and "bad_lines" not in counts:
            if flags:
                t.append("   ")
            t.append(f"✗ {count(len(run.problems), 'problem')} in the file: {one_line(str(run.problems[0]), 60)}", "bold red")
        t.append("   (3: Metrics)", "grey50")
    else:
        t.append("no sanity flags", "grey50")
    if run.findings_pending and not loading:
        t.append("   reading the kernels' code…", "grey62")  # the static findings: a worker adds them
    if loading:
        size = f" ({run.size_bytes / 1e6:,.0f} MB read)" if run.size_bytes >= 1e6 else ""
        t.append(f"   loading the rest of the file…{size}", "grey62")
    return t


class RunHeader(Static):
    """Shows :func:`header_text` for a run."""

    def show_run(self, run: Run, *, following: bool = False, loading: bool = False) -> None:
        self.update(header_text(run, following=following, loading=loading))

    def show_message(self, message: str, style: str = "") -> None:
        self.update(Text(message, style=style))
