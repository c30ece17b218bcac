"""DocView documents drawn from the view model (:mod:`ktui.view`). Pure: no I/O.

The view model holds clean strings and style roles; this module turns its blocks into DocView
blocks (roles become styles through :data:`ktui.view.roles.ROLE_STYLES`). What a document shows
is exactly :meth:`ktui.view.Block.plain_lines` of its blocks, which is what search counts.
Long blocks are folded (``ViewOptions.expand`` unfolds them all; a block with a search match in
its hidden part is shown unfolded).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.rule import Rule
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ktui.report.render_diff import split_text_pairs, stats_text, unified_text_lines
from ktui.report.rich_view import line_text
from ktui.trace import diffing, facts
from ktui.trace.model import Event, KernelVersion, Run, Turn
from ktui.trace.words import count
from ktui.tui.widgets.code import JSON, PY, code_lines
from ktui.tui.widgets.docview import (
    Block,
    LinesBlock,
    PairsBlock,
    PlainLines,
    RenderBlock,
    TextLines,
    blank,
    text_block,
)
from ktui.view import build as vb
from ktui.view import fmt
from ktui.view import model as vm
from ktui.view import roles as R
from ktui.view.build import is_first_use, kernel_of, previous_version  # noqa: F401  (re-exported)
from ktui.view.text import clean, one_line, pretty_json, redact

S_ERR = Style(color="red", bold=True)
EVENT_PRETTY_LIMIT = 200_000  # raw lines longer than this are shown as they are
FOLD_HINT = "e: expand all"
PREAMBLE_ACTORS = 12  # system prompts shown above the first turn (a file of concatenated runs has thousands)


@dataclass
class ViewOptions:
    diff: bool = False  # kernel arguments as a diff against the previous version
    split: bool = False  # diffs side by side
    expand: bool = False  # every long block unfolded
    search: re.Pattern[str] | None = None  # blocks with a match in their folded part are unfolded

    def key(self) -> tuple:
        return (self.diff, self.split, self.expand, self.search.pattern if self.search is not None else None)


def T(s: object, style: str | Style = "") -> Text:
    return Text(clean(s), style=style, end="")


def heading(title: Text | str, style: str = "blue", anchor: str | None = None) -> RenderBlock:
    t = title if isinstance(title, Text) else Text(title)
    return RenderBlock(Rule(t, align="left", style=style, characters="─"), anchor=anchor)


def kernel_stats(a: KernelVersion | None, b: KernelVersion | None, *, compute: bool = True) -> tuple[int, int] | None:
    """``(added, removed)`` lines from ``a`` to ``b`` (cached); ``compute=False`` only looks in the cache."""
    if a is None or b is None:
        return None
    return vb.cached_stats(a, b, compute=compute)


def n_lines(code: str | None) -> int:
    return len(diffing.split_lines(code))


# ---- view blocks -> DocView blocks ----------------------------------------------------------------
def _unfolded(b: vm.Block, opts: ViewOptions) -> bool:
    if opts.expand or not b.folded_by_default:
        return True
    if opts.search is None:
        return False
    hidden = b.plain_lines(expanded=True)[b.fold:]
    return any(opts.search.search(s) for s in hidden)


def _err_style(line: str) -> Style | None:
    return S_ERR if vb.is_error_line(line) else None


def convert(b: vm.Block, opts: ViewOptions) -> list[Block]:
    """One view block as DocView blocks."""
    anchor = b.anchor or None
    if b.kind == vm.HEADING:
        return [heading(line_text(b.lines[0], end=""), R.RULE_STYLES.get(b.role, "grey50"), anchor=anchor)]
    full = _unfolded(b, opts)
    tail = [] if full else [LinesBlock(TextLines([line_text(b.fold_line(FOLD_HINT), end="")]), indent=b.indent)]
    if b.kind == vm.LINES:
        lines = b.lines if full else b.lines[: b.fold]
        return [LinesBlock(TextLines([line_text(x, end="") for x in lines]), indent=b.indent, anchor=anchor,
                           wrap=True), *tail]
    text = b.text if full else "\n".join(b.text_lines[: b.fold])
    if b.kind == vm.CODE:
        src = code_lines(text, JSON if b.lang == "json" else PY) if b.lang else PlainLines(text)
        return [LinesBlock(src, numbers=b.numbers, indent=b.indent, anchor=anchor), *tail]
    if b.kind == vm.OUTPUT:
        src = PlainLines(text, style_for=_err_style if b.error_lines else None)
    else:
        src = PlainLines(text, style=R.style(b.role))
    return [LinesBlock(src, indent=b.indent, anchor=anchor, wrap=True), *tail]


def convert_all(blocks: Sequence[vm.Block], opts: ViewOptions) -> list[Block]:
    out: list[Block] = []
    for b in blocks:
        out += convert(b, opts)
    return out


# ---- kernels --------------------------------------------------------------------------------------
def diff_blocks(a: KernelVersion, b: KernelVersion, split: bool, context: int | None = 3) -> list[Block]:
    if (a.attachment and not a.code) or (b.attachment and not b.code):
        return [text_block(T("code not in the trace (attachment stub): no diff", "yellow"))]
    width = len(str(max(n_lines(a.code), n_lines(b.code), 1)))
    ca, cb = code_lines(a.code or ""), code_lines(b.code or "")

    def hl_old(n: int) -> Text:
        return ca.text(n - 1) if 0 < n <= len(ca) else Text("")

    def hl_new(n: int) -> Text:
        return cb.text(n - 1) if 0 < n <= len(cb) else Text("")

    if split:
        pairs = split_text_pairs(a.code, b.code, context=context, hl_old=hl_old, hl_new=hl_new)
        if not pairs:
            return [text_block(Text("(identical lines)", style="dim"))]
        return [PairsBlock(pairs, hang=width + 1)]
    lines = unified_text_lines(a.code, b.code, context=context, hl_old=hl_old, hl_new=hl_new)
    if not lines:
        return [text_block(Text("(identical lines)", style="dim"))]
    return [LinesBlock(TextLines(lines), hang=2 * width + 3)]


def code_block(k: KernelVersion, anchor: str | None = None) -> Block:
    if k.attachment and not k.code:
        return text_block(T(f"code not in the trace: {k.attachment}", "yellow"), anchor=anchor)
    return LinesBlock(code_lines(k.code or ""), numbers=True, anchor=anchor)


def kernel_version_title(run: Run, k: KernelVersion) -> Text:
    t = Text(end="")
    t.append(f"{k.label}", "bold magenta")
    first = "—" if k.first_turn is None else k.first_turn
    t.append(f"  sha1 {k.sha1[:12]}  ·  {count(n_lines(k.code), 'line')}  ·  first turn {first}", "grey62")
    prev = previous_version(run, k)
    st = kernel_stats(prev, k)
    if prev is not None and st is not None:
        t.append(f"  ·  vs {prev.label} ", "grey62")
        t.append_text(stats_text(*st))
    if k.from_final_answer:
        t.append("  ·  from the final answer message", "grey62")
    return t


# ---- the turn -------------------------------------------------------------------------------------
def _first_turn(run: Run) -> Turn | None:
    return vb.first_turn(run)


def turn_view(run: Run, t: Turn) -> vm.TurnView:
    """The view of one turn, as the app shows it (the run's preamble leads the first turn)."""
    return vb.turn_view(run, t, stats=vb.lookup_stats, preamble=t is _first_turn(run), preamble_actors=PREAMBLE_ACTORS)


def turn_document(run: Run, t: Turn, opts: ViewOptions) -> list[Block]:
    tv = turn_view(run, t)
    blocks: list[Block] = []
    for b in tv.blocks:
        if b.kind == vm.CODE and b.kernel is not None and opts.diff:
            k = run.kernel(b.kernel)
            prev = previous_version(run, k) if k is not None else None
            if k is not None and prev is not None:
                label = Text(f"  diff {prev.label} → {k.label}", style="grey62", end="")
                label.append("   d: full code", "grey42")
                blocks.append(text_block(label))
                blocks.extend(diff_blocks(prev, k, opts.split))
                continue
        blocks += convert(b, opts)
    blocks.extend(note_blocks(run, t))
    if t.index == len(run.turns) - 1:
        blocks.extend(terminal_blocks(run))
    return blocks


def note_blocks(run: Run, t: Turn) -> list[Block]:
    """The system notes in the middle of the run that lead into turn ``t`` (a persona's fallback,
    a retried backend, an actor spawned late: :func:`ktui.trace.search.notes_in_turns`), where
    the sweep search finds them."""
    from ktui.trace.search import notes_in_turns

    notes = notes_in_turns(run).get(t.index)
    if not notes:
        return []
    blocks: list[Block] = [blank(), heading(Text(" system notes ", style="bold"), "grey50")]
    for line, texts in notes[:100]:
        blocks.append(text_block(T(f"  line {line}", "grey62")))
        for k, text in enumerate(texts[:50]):  # the note; a JSON body's strings under it, unescaped
            blocks.append(LinesBlock(PlainLines(clean(redact(text[:20_000]))), wrap=True, indent=4 if k == 0 else 6))
    return blocks


def terminal_blocks(run: Run) -> list[Block]:
    if not run.terminal and not run.incomplete:
        return []
    blocks: list[Block] = [blank(), heading(Text(" run ended ", style="bold"), "grey50")]
    for term in run.terminal:
        blocks.append(LinesBlock(TextLines([line_text((vm.Span(f"  {one_line(term.kind)}  ", R.STRONG),
                                                       vm.Span(one_line(redact(term.text)), R.MUTED),
                                                       vm.Span(f"  (line {term.line})", R.FAINT)), end="")]),
                                 wrap=True))
    if run.scores:
        rows = [(vm.Span(f"  {one_line(k)}  ", R.LABEL), vm.Span(fmt.score(x))) for k, x in run.scores.items()]
        blocks.append(LinesBlock(TextLines([line_text(r, end="") for r in rows])))
    if run.incomplete:
        blocks.append(text_block(Text("  … the last line is incomplete: the trace is still being written",
                                      style="yellow")))
    return blocks


def empty_run_document(run: Run, opts: ViewOptions | None = None) -> list[Block]:
    """For traces with no turns: what there is (problems, prompts, messages, notes, how it ended)."""
    opts = opts or ViewOptions()
    blocks: list[Block] = [text_block(Text("This run has no turns.", style="bold yellow"))]
    if run.problems:
        blocks.append(heading(Text(" problems in the file ", style="bold"), "red"))
        for p in run.problems[:200]:
            blocks.append(text_block(T(f"  line {p.line}: {p.message}", "red")))
    pre = vb.preamble_blocks(run)
    before, _ = vb.messages_by_turn(run)
    for m in before[:200]:
        pre += vb._message_blocks(*m)
    blocks += convert_all(pre, opts)
    if run.notes:
        blocks.append(heading(Text(" system notes ", style="bold"), "grey50"))
        for line, text in run.notes[:100]:
            blocks.append(text_block(T(f"  line {line}", "grey62")))
            blocks += convert(vb.output(redact(text[:20_000]), failed=False, indent=4), opts)
    blocks.extend(terminal_blocks(run))
    return blocks


# ---- other panes ----------------------------------------------------------------------------------
def flag_lines(f: vm.FlagView) -> list[Text]:
    t = Text(end="")
    t.append("⚑ ", R.style(R.severity_role(f.severity)))
    t.append(f.code, "bold")
    t.append(f"  [{f.category}]", "grey50")
    t.append("  ")
    t.append(f.message)
    if f.where:
        t.append(f"  ({f.where})", "grey50")
    return [t] + [Text(f"    {ev}", style="grey62", end="") for ev in f.evidence]


def metrics_document(run: Run) -> list[Block]:
    blocks: list[Block] = []
    mv = vb.metrics_view(run)
    if mv is None:
        blocks.append(text_block(Text("No metrics recorded in this trace (no measured submission).",
                                      style="grey62")))
    else:
        blocks.append(text_block(Text(f"final submission · {mv.source}", style="bold", end="")))
        for g in mv.groups:
            blocks.append(heading(Text(f" {g.title} ", style="bold"), "blue", anchor=f"group-{g.key}"))
            tbl = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False, show_header=True, header_style="grey62")
            tbl.add_column("metric", no_wrap=True)
            tbl.add_column("value", justify="right", no_wrap=True)
            # in a narrow pane the recorded text folds so that the notes keep a readable width
            tbl.add_column("recorded", style="grey62", overflow="fold")
            tbl.add_column("flag / note", overflow="fold", min_width=16)
            for x in g.rows:
                note = Text(end="")
                for msg in x.flags:
                    note.append("⚑ ", "yellow")
                    note.append(msg, "yellow")
                    note.append("  ")
                if x.note and not x.flags:
                    note.append(x.note, "grey62")
                tbl.add_row(Text(x.label), Text(x.value_text, style="bold yellow" if x.flags else ""),
                            Text(x.recorded_text), note)
            blocks.append(RenderBlock(tbl))
    if run.scores or run.final_score is not None:
        blocks.append(heading(Text(" grader scores ", style="bold"), "blue"))
        rows = [(one_line(k), fmt.score(x)) for k, x in run.scores.items()]
        if run.final_score is not None:
            rows.append(("final score", fmt.score(run.final_score)))
        blocks.append(LinesBlock(TextLines([Text.assemble((f"{k}  ", "grey62"), s, end="") for k, s in rows])))
    flags = [vb.flag_view(run, f) for f in facts.all_flags(run)]
    blocks.append(heading(Text(f" flags ({len(flags)}) ", style="bold"), "yellow", anchor="flags"))
    if not flags:
        blocks.append(text_block(Text("no sanity flags", style="grey62")))
    for f in flags:
        blocks.append(LinesBlock(TextLines(flag_lines(f)), wrap=True))
    if run.problems:
        blocks.append(heading(Text(f" problems in the file ({len(run.problems)}) ", style="bold"), "red"))
        for p in run.problems[:500]:
            blocks.append(text_block(T(f"line {p.line}: {p.message}  {p.excerpt}", "red")))
    return blocks


def reference_document(run: Run) -> list[Block]:
    p = run.problem
    blocks: list[Block] = []
    if p.reference_source:
        origin = f" ({clean(p.reference_origin)})" if p.reference_origin else ""
        blocks.append(heading(Text(f" reference source{origin} ", style="bold"), "blue"))
        blocks.append(LinesBlock(code_lines(p.reference_source, PY), numbers=True))
    if p.source_kernel:
        blocks.append(heading(Text(" source kernel (translation problem) ", style="bold"), "blue"))
        blocks.append(LinesBlock(code_lines(p.source_kernel, PY), numbers=True))
    if p.prompt:
        blocks.append(heading(Text(" task prompt ", style="bold"), "blue"))
        blocks.append(LinesBlock(PlainLines(clean(p.prompt)), wrap=True))
    if not blocks:
        blocks.append(text_block(Text("This trace carries no reference source or task prompt.", style="grey62")))
        if p.level is not None and p.problem_id is not None:
            blocks.append(text_block(T(
                f"KernelBench level {p.level} problem {p.problem_id}: the reference is in "
                f"kernelbench/level{p.level}/*/{p.problem_id}_*.py", "grey62")))
    return blocks


def event_text(raw: str) -> str:
    """A raw event line as indented JSON (made safe); as it is when it is not JSON or too long."""
    if len(raw) > EVENT_PRETTY_LIMIT:
        return clean(raw)
    try:
        return pretty_json(json.loads(raw))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's limit
        return clean(raw)


def raw_lines_text(events: Sequence[Event], raws: Sequence[str]) -> str:
    """The raw lines of ``events`` as a pager shows them: ``line N`` and the line, made safe (a
    pager such as ``less -R`` would act on escape sequences)."""
    return "".join(f"line {ev.line}\t{one_line(raw)}\n" for ev, raw in zip(events, raws, strict=False))


def events_document(events: Sequence[Event], raws: Sequence[str], title: str) -> list[Block]:
    blocks: list[Block] = [text_block(T(title, "bold"))]
    if not events:
        blocks.append(text_block(Text("(no events)", style="grey62")))
    for ev, raw in zip(events, raws, strict=False):
        h = Text(end="")
        h.append(f"line {ev.line}", "bold cyan")
        h.append(f"  {clean(ev.kind)}", "bold")
        bits = []
        if ev.actor:
            bits.append(f"actor {clean(ev.actor)}")
        if ev.tick is not None:
            bits.append(f"tick {ev.tick}")
        if ev.ts_ms is not None:
            bits.append(f"ts {ev.ts_ms}")
        bits.append(f"{count(ev.length, 'byte')} @ {ev.offset:,}")
        h.append("  " + " · ".join(bits), "grey50")
        blocks.append(LinesBlock(TextLines([h])))
        s = event_text(raw)
        if len(s) <= 40_000:
            blocks.append(LinesBlock(code_lines(s, JSON), indent=2, wrap=True))
        else:
            blocks.append(LinesBlock(PlainLines(s), indent=2, wrap=True))
    return blocks


def kernel_document(run: Run, k: KernelVersion | None, base: KernelVersion | None, *, diff: bool,
                    split: bool) -> list[Block]:
    """The Kernels pane's lower part: the code of ``k``, or its diff against ``base``/the previous."""
    if k is None:
        return [text_block(Text("No kernel versions in this trace.", style="grey62"))]
    blocks: list[Block] = [text_block(kernel_version_title(run, k))]
    uses = Text("used: ", style="grey62", end="")
    for i, u in enumerate(k.uses):
        if i:
            uses.append("  ")
        uses.append(f"turn {u.turn} " if u.turn is not None else "seed ", "grey70")
        uses.append(clean(u.tool), "bold")
        uses.append(" " + R.STATUS_ICON.get(u.status, "?"), R.style(R.status_role(u.status)))
        if i:
            uses.append(f" (same as {k.label})", "grey50")
    if not k.uses:
        uses.append("(never passed to a tool)", "grey50")
    blocks.append(LinesBlock(TextLines([uses])))
    against = base if base is not None else previous_version(run, k)
    if diff and against is not None and against is not k:
        label = Text(f"diff {against.label} → {k.label}", style="bold", end="")
        if base is not None:
            label.append("   (marked base; m on another version re-marks, esc clears)", "grey50")
        label.append("   unified" if not split else "   side by side", "grey50")
        blocks.append(heading(label, "magenta"))
        blocks.extend(diff_blocks(against, k, split))
    else:
        if diff and against is None:
            blocks.append(text_block(Text(f"{k.label} is the first version: nothing to diff against",
                                          style="grey62")))
        blocks.append(heading(Text(f" {k.label} source ", style="bold"), "magenta"))
        blocks.append(code_block(k))
    return blocks
