"""`ktui show`: a run rendered like its web page, in the terminal or as plain text.

It draws the view model (:func:`ktui.view.build_view`): every string in it is already clean and
becomes a ``rich.text.Text`` (never markup). Long blocks (tool outputs, prompts, messages) are
folded unless ``--full``; kernel code is printed in full with ``--full`` (the final kernel always).
"""

from __future__ import annotations

from pathlib import Path

from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ktui.report.console import err_console, out_console
from ktui.report.rich_view import THEME, line_text, renderable
from ktui.trace import facts, load
from ktui.trace.model import Run
from ktui.trace.serialize import run_to_dict
from ktui.trace.words import count
from ktui.view import RunView, TurnView, build_view
from ktui.view import roles as R
from ktui.view.model import CODE, Span
from ktui.view.text import clean, json_text, one_line


def header(v: RunView) -> RenderableType:
    h = v.header
    top = Text.assemble((h.title, "bold"), ("  ·  ", "dim"), (h.dataset_variant or h.variant, "dim"))
    items = [Text.assemble((f"{f.label} ", "dim"), (f.text, R.style(f.role))) for f in h.facts]
    body: list[RenderableType] = [top, Columns(items, padding=(0, 3), equal=False)]
    if h.scores:
        body.append(Text.assemble(("scores  ", "dim"), ", ".join(f"{k}={s}" for k, s in h.scores)))
    if h.final_score_text:
        body.append(Text.assemble(("final score  ", "dim"), h.final_score_text))
    return Panel(Group(*body), title="run", title_align="left", border_style="blue")


def flags_panel(v: RunView) -> RenderableType | None:
    rows: list[RenderableType] = []
    for f in v.flags:
        t = Text.assemble(("⚑ ", R.style(R.severity_role(f.severity))), (f"{f.code}: ", "bold"), f.message)
        if f.where:
            t.append(f"  ({f.where})", "dim")
        rows.append(t)
        for ev in f.evidence:
            rows.append(Text(f"    {ev}", "dim"))
    for pr in v.problems:
        rows.append(Text.assemble(("✗ ", "red"), pr))
    if not rows:
        return None
    return Panel(Group(*rows), title="flags", title_align="left", border_style="yellow")


def metrics_panel(v: RunView) -> RenderableType | None:
    m = v.metrics
    if m is None:
        return None
    tables = []
    for g in m.groups:
        t = Table(title=g.title, title_justify="left", show_header=False, box=None, padding=(0, 1),
                  title_style="bold")
        t.add_column(style="dim")
        t.add_column(justify="right")
        t.add_column()
        for x in m_rows(g):
            t.add_row(*x)
        tables.append(t)
    return Panel(Columns(tables, padding=(1, 4)), title=f"final submission · {m.source}", title_align="left")


def m_rows(g) -> list[tuple[Text, Text, Text]]:
    out = []
    for x in g.rows:
        val = Text(x.value_text, style="yellow" if x.flags else "")
        note = Text("⚑", "yellow") if x.flags else Text(x.note, "dim")
        out.append((Text(x.label), val, note))
    return out


def turn_panel(t: TurnView, full: bool) -> RenderableType:
    parts: list[RenderableType] = []
    for b in t.blocks:
        if b.kind == CODE and b.kernel is not None and not full:
            continue  # kernel code: with --full (the final kernel is printed at the end)
        parts.append(renderable(b, expanded=full))
    style = R.style(R.status_role(t.status)) or "dim"
    icon = R.STATUS_ICON.get(t.status, "")
    return Panel(Group(*parts), title=Text(f"{icon} turn {t.index}", style), title_align="left",
                 border_style=style)


def kernels_table(v: RunView) -> RenderableType | None:
    if not v.kernels:
        return None
    t = Table(title="kernel versions", title_justify="left", title_style="bold")
    for col in ("version", "sha1", "first turn", "turns", "lines", "vs previous", "used by"):
        t.add_column(col)
    for k in v.kernels:
        if k.attachment:
            delta = "code not in trace"
        elif k.delta is None:
            delta = "—"
        else:
            delta = f"+{k.delta[0]} -{k.delta[1]}"
        uses = Text()
        for u in k.uses:
            uses.append(f"{u.tool}@{'seed' if u.turn is None else u.turn} ", R.style(R.status_role(u.status)))
        t.add_row(k.label + (" (final)" if k.is_final else ""), k.sha1[:12],
                  "—" if k.first_turn is None else str(k.first_turn), ",".join(map(str, k.turns)),
                  str(k.n_lines), delta, uses)
    return t


def render(run: Run, *, turn: int | None = None, full: bool = False, view: RunView | None = None
           ) -> list[RenderableType]:
    v = view or build_view(run)
    out: list[RenderableType] = [header(v)]
    fp = flags_panel(v)
    if fp is not None:
        out.append(fp)
    if turn is not None:
        tv = next(x for x in v.turns if x.index == turn)
        if tv is min(v.turns, key=lambda x: x.first_line):
            out += [renderable(b, expanded=True) for b in v.preamble]
        out.append(turn_panel(tv, True))
        return out
    mp = metrics_panel(v)
    if mp is not None:
        out.append(mp)
    p = run.problem
    if p.reference_source:
        out.append(Rule(Text(f"reference PyTorch source · {one_line(p.reference_origin or '')}"), align="left"))
        out.append(Syntax(clean(p.reference_source), "python", theme=THEME, word_wrap=True))
    elif p.prompt:
        out.append(Rule("problem prompt", align="left"))
        lines = clean(p.prompt).splitlines()
        if not full and len(lines) > 30:
            lines = lines[:30] + [f"… {count(len(lines) - 30, 'more line')} (--full)"]
        out.append(Text("\n".join(lines)))
    out += [renderable(b, expanded=full) for b in v.preamble]
    if not v.turns:
        out.append(Text("no turns in this trace", "yellow"))
    for t in v.turns:
        out.append(turn_panel(t, full))
    for term in v.terminal:
        out.append(line_text((Span("end: ", R.STRONG), Span(term.kind, R.KERNEL), Span(" "),
                              Span(one_line(term.text, 400)), Span(f"  (line {term.line})", R.FAINT))))
    if v.incomplete:
        out.append(Text("… the last line is incomplete (the trace is still being written)", "yellow"))
    kt = kernels_table(v)
    if kt is not None:
        out.append(kt)
    fk = run.final_kernel
    if fk is not None and not fk.attachment:
        out.append(Rule(f"final kernel {fk.label} ({count(fk.line_count, 'line')}, {count(len(fk.code), 'char')})", align="left"))
        out.append(Syntax(clean(fk.code), "python", line_numbers=True, theme=THEME, word_wrap=True))
    return out


def show_command(path: Path, *, turn: int | None = None, as_json: bool = False, full: bool = False) -> int:
    err = err_console()
    run = load(path)
    why = facts.not_a_trace(run)
    if why:
        err.print(Text(f"ktui: {one_line(path)}: {one_line(why)}"))
        return 2
    if as_json:
        print(json_text(run_to_dict(run, turn=turn), indent=2))
        return 0
    if turn is not None and not any(t.index == turn for t in run.turns):
        err.print(Text(f"ktui: {one_line(path)}: no turn {turn} (the run has {count(len(run.turns), 'turn')}"
                       + (f", 0-{len(run.turns) - 1})" if run.turns else ")")))
        return 2
    view = build_view(run)
    console = out_console()
    for r in render(run, turn=turn, full=full, view=view):
        console.print(r)
    return 0
