"""`ktui show`: a run rendered like its web page, in the terminal or as plain text.

Every string from the trace goes through :func:`ktui.trace.text.sanitize` into a
``rich.text.Text``: trace text is never parsed as markup.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ktui.report import fmt
from ktui.report.console import err_console, out_console
from ktui.trace import load
from ktui.trace.diffing import diff_stats
from ktui.trace.metrics import GROUP_TITLES
from ktui.trace.model import OK, Run, ToolCall, Turn
from ktui.trace.serialize import run_to_dict
from ktui.trace.text import redact, sanitize

RESULT_LIMIT = 40  # lines of tool output shown per result unless --full


def T(s: object, style: str = "") -> Text:
    """Untrusted text, made safe."""
    return Text(sanitize(s), style=style)


def header(run: Run) -> RenderableType:
    p = run.problem
    top = Text.assemble((f"{p.title}", "bold"), ("  ·  ", "dim"), (run.problem.dataset_variant or run.variant, "dim"))
    outcome = Text(run.outcome, fmt.OUTCOME_STYLE.get(run.outcome, ""))
    m = run.metrics
    cells = [
        ("outcome", outcome),
        ("model", T(run.model or "—")),
        ("turns / max", Text(fmt.turns_label(run))),
        ("tool calls", Text(str(len(run.agent_calls)))),
        ("tokens (total)", Text(fmt.num(run.tokens_total) if run.tokens_total else "—")),
        ("wall clock", Text(fmt.wall_label(run))),
        ("backend", T(" ".join(x for x in (p.backend, p.precision) if x) or run.backend or "—")),
        ("variant", Text(run.variant)),
        ("runtime", Text(fmt.us(m.runtime_us) if m else "—")),
        ("ref runtime", Text(fmt.us(m.ref_runtime_us) if m else "—")),
        ("speedup", Text(f"{m.speedup:.2f}x" if m and m.speedup is not None else "—")),
        ("started", Text(fmt.iso(run.started_ms))),
        ("persona", T(run.persona or "—")),
        ("end", T(run.terminal_state)),
        ("kernels", Text(str(len(run.kernels)))),
        ("file", T(Path(run.path).name)),
    ]
    if m is not None and m.runtime_us is not None:
        rt = m.get("timing.runtime")
        if rt is not None and rt.note:
            cells[8] = ("runtime", Text.assemble(fmt.us(m.runtime_us), (f" (recorded {rt.recorded:g} \"μs\" = ms)",
                                                                     "yellow")))
    items = [Text.assemble((f"{label} ", "dim"), val) for label, val in cells]
    grid = Columns(items, padding=(0, 3), equal=False)
    body: list[RenderableType] = [top, grid]
    if run.scores:
        body.append(Text.assemble(("scores  ", "dim"), T(", ".join(f"{k}={v:g}" for k, v in run.scores.items()))))
    return Panel(Group(*body), title="run", title_align="left", border_style="blue")


def flags_panel(run: Run) -> RenderableType | None:
    rows: list[RenderableType] = []
    style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    for f in run.flags:
        rows.append(Text.assemble(("⚑ ", style.get(f.severity, "")), (f"{f.code}: ", "bold"), T(f.message)))
    for pr in run.problems:
        rows.append(Text.assemble(("✗ ", "red"), (f"line {pr.line}: ", "bold"), T(pr.message),
                                  (f"  {pr.excerpt}" if pr.excerpt else "", "dim")))
    if run.incomplete:
        rows.append(Text("… the last line is incomplete (the trace is still being written)", "yellow"))
    if not rows:
        return None
    return Panel(Group(*rows), title="flags", title_align="left", border_style="yellow")


def metrics_panel(run: Run) -> RenderableType | None:
    m = run.metrics
    if m is None:
        return None
    flagged = {f.metric: f for f in run.flags if f.metric}
    tables = []
    for group, ms in m.groups.items():
        t = Table(title=GROUP_TITLES.get(group, group), title_justify="left", show_header=False,
                  box=None, padding=(0, 1), title_style="bold")
        t.add_column(style="dim")
        t.add_column(justify="right")
        t.add_column()
        for x in ms:
            f = flagged.get(x.key)
            val = Text(fmt.metric_value(x), style="yellow" if f else "")
            note = Text("⚑", "yellow") if f else Text("")
            if x.note and not f:
                note = T(x.note, "dim")
            t.add_row(Text(x.label), val, note)
        tables.append(t)
    return Panel(Columns(tables, padding=(1, 4)), title=f"final submission · {m.source}", title_align="left")


def _args_view(call: ToolCall, run: Run, full: bool, shown: set[int]) -> RenderableType:
    parts: list[RenderableType] = []
    other = {k: v for k, v in call.args.items() if k != "kernel_code"}
    if other:
        parts.append(T(json.dumps(other, indent=2, ensure_ascii=False, default=str), "cyan"))
    if call.kernel is not None:
        kv = run.kernels[call.kernel - 1]
        first = kv.number not in shown
        prev = run.kernels[kv.number - 2] if kv.number > 1 else None
        if first:
            if prev is not None:
                a, r = diff_stats(prev.code, kv.code)
                desc = f"kernel_code: {kv.label} (new, +{a} -{r} lines vs {prev.label}, {kv.line_count} lines)"
            else:
                desc = f"kernel_code: {kv.label} (new, {kv.line_count} lines)"
        else:
            desc = f"kernel_code: {kv.label} (same as {kv.label}, first used at turn {kv.first_turn})"
        parts.append(Text(desc, "magenta"))
        if full and first:
            parts.append(Syntax(sanitize(kv.code), "python", line_numbers=True, word_wrap=True,
                                theme="ansi_dark"))
        shown.add(kv.number)
    elif not call.args:
        parts.append(Text("{}", "dim"))
    return Group(*parts)


def _result_view(call: ToolCall, full: bool) -> RenderableType:
    res = call.result
    if res is None:
        return Text(f"result ← {call.name} (no result: the run ended while it was running)", "yellow")
    st = res.status
    head = Text.assemble(("result ← ", "dim"), (call.name, "bold"), " ",
                         (f"({'ok' if st == OK else 'fail' if st == 'failed' else st})", fmt.STATUS_STYLE.get(st, "")))
    if call.duration_ms is not None:
        head.append(f"  {fmt.secs(call.duration_ms)}", "dim")
    parts: list[RenderableType] = [head]
    lines = sanitize(res.summary).splitlines()
    if not full and len(lines) > RESULT_LIMIT:
        lines = lines[:RESULT_LIMIT] + [f"… {len(lines) - RESULT_LIMIT} more lines (use --full)"]
    body = Text()
    for ln in lines:
        low = ln.lower()
        style = "red" if ("error" in low or "failed" in low or "traceback" in low) and st != OK else ""
        body.append(ln + "\n", style)
    parts.append(body)
    err = res.error_text
    if err and st != OK and err not in res.summary:
        parts.append(Text.assemble(("error: ", "bold red"), T(err, "red")))
    if res.meta:
        meta = Table(show_header=False, box=None, padding=(0, 1))
        meta.add_column(style="dim")
        meta.add_column()
        for k, v in res.meta.items():
            meta.add_row(T(k), T(json.dumps(v, default=str)[:300]))
        parts.append(Text("[meta]", "dim"))
        parts.append(meta)
    return Group(*parts)


def turn_view(run: Run, t: Turn, full: bool, shown: set[int]) -> RenderableType:
    title = Text.assemble((f"turn {t.index}", "bold"), "  ", (fmt.turn_timing_label(t), "dim"))
    tok = fmt.tokens_label(t)
    if tok:
        title.append(" · " + tok, "dim")
    if t.is_final:
        title.append(" · FINAL", "bold magenta")
    parts: list[RenderableType] = [title]
    if t.reasoning:
        parts += [Text("reasoning", "bold dim"), T(t.reasoning, "italic")]
    if t.text:
        parts += [Text("text", "bold dim"), T(t.text)]
    for c in t.calls:
        parts.append(Text.assemble(("call → ", "dim"), (c.name, "bold cyan"), (f"  line {c.line}", "dim")))
        parts.append(_args_view(c, run, full, shown))
        parts.append(_result_view(c, full))
    icon = fmt.STATUS_ICON.get(t.status, "")
    return Panel(Group(*parts), title=Text(f"{icon} turn {t.index}", fmt.STATUS_STYLE.get(t.status, "")),
                 title_align="left", border_style=fmt.STATUS_STYLE.get(t.status, "dim"))


def kernels_table(run: Run) -> RenderableType | None:
    if not run.kernels:
        return None
    t = Table(title="kernel versions", title_justify="left", title_style="bold")
    for col in ("version", "sha1", "first turn", "turns", "lines", "vs previous", "used by"):
        t.add_column(col)
    for kv in run.kernels:
        prev = run.kernels[kv.number - 2] if kv.number > 1 else None
        if kv.attachment:
            delta = "code not in trace"
        elif prev is None:
            delta = "—"
        else:
            a, r = diff_stats(prev.code, kv.code)
            delta = f"+{a} -{r}"
        uses = Text()
        for u in kv.uses:
            uses.append(f"{u.tool}@{u.turn} ", fmt.STATUS_STYLE.get(u.status, ""))
        t.add_row(kv.label, kv.sha1[:12], str(kv.first_turn), ",".join(map(str, kv.turns)),
                  str(kv.line_count), delta, uses)
    return t


def render(run: Run, *, turn: int | None = None, full: bool = False) -> list[RenderableType]:
    out: list[RenderableType] = [header(run)]
    fp = flags_panel(run)
    if fp is not None:
        out.append(fp)
    shown: set[int] = set()
    if turn is not None:
        t = run.turns[turn]
        for kv in run.kernels:  # mark versions first used before this turn as already shown
            if kv.first_turn is not None and kv.first_turn < turn:
                shown.add(kv.number)
        out.append(turn_view(run, t, True, shown))
        return out
    mp = metrics_panel(run)
    if mp is not None:
        out.append(mp)
    if run.problem.reference_source:
        out.append(Rule(f"reference PyTorch source · {run.problem.reference_origin or ''}", align="left"))
        out.append(Syntax(sanitize(run.problem.reference_source), "python", theme="ansi_dark", word_wrap=True))
    elif run.problem.prompt:
        out.append(Rule("problem prompt", align="left"))
        lines = sanitize(run.problem.prompt).splitlines()
        out.append(Text("\n".join(lines[:30]) + (f"\n… {len(lines) - 30} more lines" if len(lines) > 30 else "")))
    if not run.turns:
        out.append(Text("no turns in this trace", "yellow"))
    for t in run.turns:
        out.append(turn_view(run, t, full, shown))
    for term in run.terminal:
        out.append(Text.assemble(("end: ", "bold"), (term.kind, "magenta"), " ", T(redact(term.text)[:400]),
                                 (f"  (line {term.line})", "dim")))
    kt = kernels_table(run)
    if kt is not None:
        out.append(kt)
    fk = run.final_kernel
    if fk is not None and not fk.attachment:
        out.append(Rule(f"final kernel {fk.label} ({fk.line_count} lines, {len(fk.code):,} chars)", align="left"))
        out.append(Syntax(sanitize(fk.code), "python", line_numbers=True, theme="ansi_dark", word_wrap=True))
    return out


def show_command(path: Path, *, turn: int | None = None, as_json: bool = False, full: bool = False) -> int:
    console = out_console()
    err = err_console()
    run = load(path)
    if not run.events:
        first = run.problems[0] if run.problems else None
        why = first.message if first and first.line == 0 else (
            f"not a trace: no readable events ({len(run.problems)} bad lines; first: line {first.line}: "
            f"{first.message})" if first else "no events")
        err.print(Text(f"ktui: {path}: {why}"))
        return 2
    if as_json:
        print(json.dumps(run_to_dict(run, turn=turn), indent=2, ensure_ascii=False, default=str))
        return 0
    if turn is not None and not (0 <= turn < len(run.turns)):
        err.print(Text(f"ktui: {path}: no turn {turn} (the run has {len(run.turns)} turns, 0-{len(run.turns) - 1})"))
        return 2
    for r in render(run, turn=turn, full=full):
        console.print(r)
    return 0
