"""The run header: what the run was, at a glance (problem, model, outcome, counts, speed, flags)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from ktui.report import fmt
from ktui.report.render_diff import clean
from ktui.trace.model import Run

SEV_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


FLAG_PHRASES = {
    "unit_ms_as_us": "runtime_us holds ms (corrected)",
    "runtime_below_1us": "runtime < 1 μs",
    "median_missing": "median missing",
    "pct_over_100": "% over 100",
    "speedup_excessive": "speedup > 10x",
    "no_gpu_code": "no custom GPU code",
    "torch_fallback": "falls back to torch ops",
    "dummy_kernel": "dummy __global__ kernel",
    "eq_override": "__eq__ override",
    "side_stream": "own CUDA stream",
    "harness_identical_failures": "harness failure (same for every case)",
    "identical_case_failures": "identical case failures",
    "code_unavailable": "kernel code not in trace",
}


def flag_phrase(code: str, message: str) -> str:
    if code in FLAG_PHRASES:
        return FLAG_PHRASES[code]
    msg = clean(message)
    return msg if len(msg) <= 50 else msg[:49] + "…"


def _sep(t: Text) -> None:
    t.append("  ·  ", "grey42")


def _kv(t: Text, key: str, value: str | Text, style: str = "") -> None:
    t.append(key + " ", "grey62")
    if isinstance(value, Text):
        t.append_text(value)
    else:
        t.append(value, style)


def header_text(run: Run, *, following: bool = False, loading: bool = False) -> Text:
    p = run.problem
    t = Text(end="")
    # line 1: identity and outcome
    t.append(clean(p.title), "bold")
    variant = p.dataset_variant or ""
    if variant:
        t.append(f" · {clean(variant)}", "grey62")
    t.append("   ")
    t.append(clean(run.model or "unknown model"), "bold cyan")
    if run.persona:
        t.append(f" ({clean(run.persona)})", "cyan")
    t.append("   ")
    outcome_icon = {"passed": "✓", "failed": "✗", "incomplete": "…"}.get(run.outcome, "")
    t.append(f"{outcome_icon} {run.outcome}", fmt.OUTCOME_STYLE.get(run.outcome, ""))
    t.append(f"   {run.variant} · end: {run.terminal_state}", "grey50")
    if following:
        t.append("   ● following", "bold green")
    if run.incomplete:
        t.append("   … still being written", "yellow")
    t.append(f"   {clean(Path(run.path).name)}", "grey42")
    t.append("\n")
    # line 2: counts and time
    _kv(t, "turns", fmt.turns_label(run), "bold")
    _sep(t)
    calls = run.agent_calls
    failed = sum(1 for c in calls if c.status != "ok")
    _kv(t, "tool calls", str(len(calls)), "bold")
    if failed:
        t.append(f" ({failed} not ok)", "red")
    _sep(t)
    _kv(t, "tokens", fmt.num(run.tokens_total) if run.tokens_total else "—", "bold")
    _sep(t)
    _kv(t, "wall", fmt.wall_label(run), "bold")
    if run.llm_ms is not None:
        _sep(t)
        _kv(t, "LLM", fmt.secs(run.llm_ms))
    if run.tool_ms is not None:
        _sep(t)
        _kv(t, "tools", fmt.secs(run.tool_ms))
    _sep(t)
    _kv(t, "kernels", str(len(run.kernels)))
    if run.started_ms is not None:
        _sep(t)
        _kv(t, "started", fmt.iso(run.started_ms), "grey70")
    t.append("\n")
    # line 3: the measured result
    m = run.metrics
    if m is not None and (m.runtime_us is not None or m.speedup is not None):
        rt = m.get("timing.runtime")
        val = Text(fmt.us(m.runtime_us), style="bold", end="")
        if rt is not None and rt.note:
            val.append(f" (recorded {rt.recorded!s} as \"μs\": really ms)", "yellow")
        _kv(t, "runtime", val)
        _sep(t)
        _kv(t, "ref", fmt.us(m.ref_runtime_us), "bold")
        _sep(t)
        sp = f"{m.speedup:.2f}x" if m.speedup is not None else "—"
        _kv(t, "speedup", sp, "bold green" if (m.speedup or 0) > 1 else "bold")
        if m.correct is not None:
            _sep(t)
            _kv(t, "correct", "yes" if m.correct else "no", "green" if m.correct else "red")
        fk = run.final_kernel
        if fk is not None:
            _sep(t)
            _kv(t, "final", fk.label, "magenta")
    else:
        t.append("no measured submission", "grey62")
        fk = run.final_kernel
        if fk is not None:
            _sep(t)
            _kv(t, "last kernel", fk.label, "magenta")
    if run.final_score is not None:
        _sep(t)
        _kv(t, "final score", f"{run.final_score:g}", "bold")
    t.append("\n")
    # line 4: flags, visibly
    if run.flags or run.problems:
        counts = Counter(f.code for f in run.flags)
        worst = {}
        for f in run.flags:
            if f.code not in worst or f.severity == "error":
                worst[f.code] = f.severity
        if run.flags:
            t.append(f"⚑ {len(run.flags)} flag{'s' if len(run.flags) != 1 else ''}: ", "bold yellow")
        for i, (code, n) in enumerate(counts.items()):
            if i:
                t.append(" · ", "grey42")
            sev = SEV_STYLE.get(worst.get(code, "warning"), "yellow")
            first = next(f for f in run.flags if f.code == code)
            t.append(flag_phrase(code, first.message), sev)
            if n > 1:
                t.append(f" ×{n}", "grey62")
        if run.problems:
            if run.flags:
                t.append("   ")
            t.append(f"✗ {len(run.problems)} problem(s) in the file (line {run.problems[0].line}: "
                     f"{clean(run.problems[0].message)[:60]})", "bold red")
        t.append("   (3: Metrics)", "grey50")
    else:
        t.append("no sanity flags", "grey50")
    if loading:
        t.append("   loading…", "grey62")
    return t


class RunHeader(Static):
    """Shows :func:`header_text` for a run."""

    def show_run(self, run: Run, *, following: bool = False) -> None:
        self.update(header_text(run, following=following))

    def show_message(self, message: str, style: str = "") -> None:
        self.update(Text(message, style=style))
