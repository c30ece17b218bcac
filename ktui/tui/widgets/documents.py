"""Builders from the trace model to DocView documents (lists of blocks). Pure: no I/O.

Every string that comes from a trace goes through :func:`clean` (sanitize + tab expansion) and
into ``rich.text.Text`` or Rich's Markdown parser -- never into console markup.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.markdown import Markdown
from rich.rule import Rule
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ktui.report import fmt
from ktui.report.render_diff import clean, split_text_pairs, stats_text, unified_text_lines
from ktui.trace import diffing
from ktui.trace.model import ERROR, FAILED, MISSING, OK, Event, KernelVersion, Run, ToolCall, Turn
from ktui.trace.text import redact
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

try:
    from ktui.trace.metrics import GROUP_TITLES
except ImportError:  # pragma: no cover
    GROUP_TITLES = {}

ERR_LINE = re.compile(r"error|exception|traceback|failed|mismatch|not match|illegal|abort|fatal", re.I)
S_ERR = Style(color="red", bold=True)
S_DIM = Style(color="grey62")
S_HEAD = "bold"
MARKDOWN_LIMIT = 20_000  # longer reasoning / prompts are shown as plain text (fast)
BAD = (FAILED, ERROR, MISSING)


@dataclass
class ViewOptions:
    diff: bool = False  # kernel arguments as a diff against the previous version
    split: bool = False  # diffs side by side


def T(s: object, style: str | Style = "") -> Text:
    return Text(clean(s), style=style, end="")


def status_text(status: str) -> Text:
    icon = fmt.STATUS_ICON.get(status, "?")
    label = {OK: "ok", FAILED: "failed", ERROR: "error", MISSING: "no result", "none": "no calls"}.get(status, status)
    return Text(f"{icon} {label}", style=fmt.STATUS_STYLE.get(status, ""), end="")


def heading(title: Text | str, style: str = "blue", anchor: str | None = None) -> RenderBlock:
    t = title if isinstance(title, Text) else Text(title)
    return RenderBlock(Rule(t, align="left", style=style, characters="─"), anchor=anchor)


def markdown_block(s: str, anchor: str | None = None) -> Block:
    s = clean(s)
    if len(s) > MARKDOWN_LIMIT:
        return LinesBlock(PlainLines(s), anchor=anchor, wrap=True)
    return RenderBlock(Markdown(s, hyperlinks=False, code_theme="monokai"), anchor=anchor)


def _err_style(line: str) -> Style | None:
    return S_ERR if ERR_LINE.search(line) else None


def output_block(s: str, *, failed: bool, indent: int = 2) -> LinesBlock:
    """A tool's text output; on failure the error lines stand out."""
    return LinesBlock(PlainLines(clean(s), style_for=_err_style if failed else None), indent=indent, wrap=True)


def kv_table(rows: Sequence[tuple[str, object]], key_style: str = "grey62") -> Table:
    t = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False)
    t.add_column(style=key_style, no_wrap=True)
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(T(k), v if isinstance(v, Text) else T(v))
    return t


def _jsonish(v: object, limit: int = 400) -> str:
    if isinstance(v, str):
        s = v
    else:
        try:
            s = json.dumps(v, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            s = repr(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


# ---- kernels --------------------------------------------------------------------------------
def kernel_of(run: Run, call: ToolCall) -> KernelVersion | None:
    if call.kernel is None:
        return None
    return run.kernel(call.kernel)


def previous_version(run: Run, k: KernelVersion) -> KernelVersion | None:
    return run.kernels[k.number - 2] if k.number >= 2 and len(run.kernels) >= k.number - 1 else None


_STATS: dict[tuple[str, str], tuple[int, int]] = {}


def kernel_stats(a: KernelVersion | None, b: KernelVersion | None, *, compute: bool = True) -> tuple[int, int] | None:
    """``(added, removed)`` lines from ``a`` to ``b``, cached by sha1 pair; None when unknown.

    ``compute=False`` only looks in the cache (the screen fills it in a worker).
    """
    if a is None or b is None or not a.code or not b.code:
        return None
    key = (a.sha1, b.sha1)
    got = _STATS.get(key)
    if got is None and compute:
        got = _STATS[key] = diffing.diff_stats(a.code, b.code)
    return got


def is_first_use(k: KernelVersion, call: ToolCall) -> bool:
    if not k.uses:
        return True
    return k.uses[0].call_index == call.index


def n_lines(code: str | None) -> int:
    return len(diffing.split_lines(code))


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
    t.append(f"  sha1 {k.sha1[:12]}  ·  {n_lines(k.code)} lines  ·  first turn {k.first_turn}", "grey62")
    prev = previous_version(run, k)
    st = kernel_stats(prev, k)
    if prev is not None and st is not None:
        t.append(f"  ·  vs {prev.label} ", "grey62")
        t.append_text(stats_text(*st))
    if k.from_final_answer:
        t.append("  ·  from the final answer message", "grey62")
    return t


# ---- turn view ------------------------------------------------------------------------------
def turn_title(run: Run, t: Turn) -> list[Text]:
    line = Text(end="")
    line.append(f"turn {t.index}", "bold")
    line.append("  ")
    line.append_text(status_text(t.status))
    line.append("   " + fmt.turn_timing_label(t), "grey62")
    tok = fmt.tokens_label(t)
    if tok:
        line.append("  ·  " + tok, "grey62")
    if t.is_final:
        line.append("  ·  FINAL", "bold magenta")
    if t.actor and len(run.actors) > 1:
        line.append(f"  ·  {clean(t.actor)}", "cyan")
    line.append(f"  ·  trace lines {t.first_line}-{t.last_line}", "grey50")
    out = [line]
    # one line per call: what happened, the error right here (no scrolling to find it)
    for c in t.calls:
        row = Text("  ", end="")
        st = c.status
        row.append(fmt.STATUS_ICON.get(st, "?") + " ", fmt.STATUS_STYLE.get(st, ""))
        row.append(clean(c.name), "bold")
        k = kernel_of(run, c)
        if k is not None:
            row.append(f"  {k.label}", "magenta")
        if c.duration_ms is not None:
            row.append(f"  {fmt.secs(c.duration_ms)}", "grey50")
        if c.result is None:
            row.append("  no result in the trace (the run ended while it ran)", "yellow")
        elif st != OK:
            err = c.result.error_text or c.result.summary
            first = clean(err).strip().splitlines()[0] if clean(err).strip() else ""
            row.append("  — ", "grey50")
            row.append(first[:300], "bold red")
        else:
            first = clean(c.result.summary).strip().splitlines()
            if first:
                row.append("  — " + first[0][:160], "grey62")
        out.append(row)
    return out


def call_blocks(run: Run, c: ToolCall, opts: ViewOptions) -> list[Block]:
    blocks: list[Block] = []
    head = Text(end="")
    head.append(" call → ", "grey62")
    head.append(clean(c.name), "bold cyan")
    head.append(f"  #{c.index}  line {c.line} ", "grey50")
    blocks.append(heading(head, "cyan", anchor=f"call-{c.index}"))
    args = c.args if isinstance(c.args, dict) else {"args": c.args}
    other = {k: v for k, v in args.items() if k != "kernel_code" or c.kernel_code is None}
    k = kernel_of(run, c)
    if other:
        s = json.dumps(other, indent=2, ensure_ascii=False, default=str)
        blocks.append(LinesBlock(code_lines(s, JSON), indent=2))
    elif not args:
        blocks.append(text_block(Text("  (no arguments)", style="grey50")))
    if c.kernel_code is not None and k is None:
        blocks.append(LinesBlock(code_lines(c.kernel_code, PY), numbers=True))
    if k is not None:
        prev = previous_version(run, k)
        first = is_first_use(k, c)
        info = Text("  kernel_code  ", end="", style="grey62")
        info.append(k.label, "bold magenta")
        if first:
            info.append(f"  new · {n_lines(k.code)} lines", "grey62")
            st = kernel_stats(prev, k)
            if prev is not None and st is not None:
                info.append(f" · vs {prev.label} ", "grey62")
                info.append_text(stats_text(*st))
        else:
            info.append(f"  same as {k.label}", "bold")
            info.append(f" (first at turn {k.first_turn}) · {n_lines(k.code)} lines · identical re-submission",
                        "grey62")
        if first and prev is not None:
            info.append("   [d] " + ("full code" if opts.diff else f"diff vs {prev.label}"), "grey42")
        blocks.append(text_block(info))
        if first:
            if opts.diff and prev is not None:
                blocks.extend(diff_blocks(prev, k, opts.split))
            else:
                blocks.append(code_block(k))
    blocks.extend(result_blocks(c))
    if c.diffs:
        blocks.append(text_block(Text("  state_diff", style="grey62")))
        s = json.dumps(c.diffs if len(c.diffs) > 1 else c.diffs[0], indent=2, ensure_ascii=False, default=str)
        blocks.append(LinesBlock(code_lines(s, JSON), indent=4))
    return blocks


_EFFECT_SKIP = {"summary", "ok", "tool", "ref_arch_src", "source_kernel_src", "details"}


def result_blocks(c: ToolCall) -> list[Block]:
    res = c.result
    head = Text(end="")
    head.append(" result ← ", "grey62")
    head.append(clean(c.name), "bold")
    head.append("  ")
    head.append_text(status_text(c.status))
    if c.duration_ms is not None:
        head.append(f"  {fmt.secs(c.duration_ms)}", "grey50")
    if res is not None:
        head.append(f"  line {res.line} ", "grey50")
    style = {OK: "green", FAILED: "red", ERROR: "red", MISSING: "yellow"}.get(c.status, "grey50")
    blocks: list[Block] = [heading(head, style, anchor=f"result-{c.index}")]
    if res is None:
        blocks.append(text_block(Text("  no result in the trace: the run ended while this call was running",
                                      style="yellow")))
        return blocks
    failed = res.status != OK
    err = res.error_text if failed else ""
    if err:
        et = Text("error: ", style="bold red", end="")
        et.append(clean(err), "bold red")
        blocks.append(LinesBlock(TextLines([et]), indent=2, wrap=True))
    summary = res.summary or ""
    if summary.strip() and clean(summary).strip() != clean(err).strip():
        blocks.append(output_block(summary, failed=failed))
    eff = res.effect or {}
    rows: list[tuple[str, object]] = []
    long_fields: list[tuple[str, str]] = []
    details = eff.get("details") if isinstance(eff.get("details"), dict) else {}
    for key, v in list(eff.items()) + [(f"details.{k}", v) for k, v in details.items()]:
        if key in _EFFECT_SKIP or v in (None, "", [], {}):
            continue
        if isinstance(v, str) and (len(v) > 200 or "\n" in v):
            long_fields.append((key, v))
            continue
        rows.append((key, _jsonish(v)))
    if rows:
        blocks.append(RenderBlock(_indent_table(kv_table(rows))))
    for key, v in long_fields:
        blocks.append(text_block(T(f"  {key}", "grey62")))
        blocks.append(output_block(v, failed=failed, indent=4))
    if res.meta:
        blocks.append(text_block(Text("  [meta]", style="grey62")))
        blocks.append(RenderBlock(_indent_table(kv_table([(k, _jsonish(v)) for k, v in res.meta.items()]))))
    return blocks


def _indent_table(t: Table) -> Table:
    from rich.padding import Padding

    return Padding(t, (0, 0, 0, 2))  # type: ignore[return-value]


def terminal_blocks(run: Run) -> list[Block]:
    if not run.terminal and not run.problems and not run.incomplete:
        return []
    blocks: list[Block] = [blank(), heading(Text(" run ended ", style="bold"), "grey50")]
    for term in run.terminal:
        t = Text(f"  {term.kind}  ", style="bold", end="")
        t.append(clean(redact(term.text)), "grey70")
        t.append(f"  (line {term.line})", "grey50")
        blocks.append(LinesBlock(TextLines([t])))
    if run.scores:
        blocks.append(RenderBlock(_indent_table(kv_table([(k, f"{v:g}") for k, v in run.scores.items()]))))
    if run.incomplete:
        blocks.append(text_block(Text("  … the last line is incomplete: the trace is still being written",
                                      style="yellow")))
    return blocks


def turn_document(run: Run, t: Turn, opts: ViewOptions) -> list[Block]:
    blocks: list[Block] = [text_block(*turn_title(run, t), anchor="top")]
    if t.reasoning:
        blocks.append(heading(Text(" reasoning ", style="bold"), "magenta", anchor="reasoning"))
        blocks.append(markdown_block(t.reasoning))
    if t.text:
        blocks.append(heading(Text(" text ", style="bold"), "blue", anchor="text"))
        blocks.append(markdown_block(t.text))
    if not t.calls and not t.reasoning and not t.text:
        blocks.append(text_block(Text("(this turn has no text and no tool calls)", style="grey50")))
    for c in t.calls:
        blocks.extend(call_blocks(run, c, opts))
    if t.index == len(run.turns) - 1:
        blocks.extend(terminal_blocks(run))
    return blocks


def empty_run_document(run: Run) -> list[Block]:
    """For traces with no turns: what there is (notes, messages, how it ended, problems)."""
    blocks: list[Block] = [text_block(Text("This run has no turns.", style="bold yellow"))]
    if run.problems:
        blocks.append(heading(Text(" problems in the file ", style="bold"), "red"))
        for p in run.problems[:200]:
            blocks.append(text_block(T(f"  line {p.line}: {p.message}", "red")))
    msgs = [(line, kind, actor, text) for line, kind, actor, text in run.messages]
    if msgs:
        blocks.append(heading(Text(" messages ", style="bold"), "blue"))
        for line, kind, actor, text in msgs[:50]:
            blocks.append(text_block(T(f"  line {line} · {kind} · {actor or '-'}", "grey62")))
            blocks.append(output_block(redact(text[:20_000]), failed=False, indent=4))
    if run.notes:
        blocks.append(heading(Text(" system notes ", style="bold"), "grey50"))
        for line, text in run.notes[:100]:
            blocks.append(text_block(T(f"  line {line}", "grey62")))
            blocks.append(output_block(redact(text[:20_000]), failed=False, indent=4))
    blocks.extend(terminal_blocks(run))
    return blocks


# ---- other panes ----------------------------------------------------------------------------
def metrics_document(run: Run) -> list[Block]:
    blocks: list[Block] = []
    m = run.metrics
    flagged: dict[str, list] = {}
    for f in run.flags:
        if f.metric:
            flagged.setdefault(f.metric, []).append(f)
    if m is None or not m.groups:
        blocks.append(text_block(Text("No metrics recorded in this trace (no measured submission).",
                                      style="grey62")))
    else:
        blocks.append(text_block(T(f"final submission · {m.source}", "bold")))
        for group, ms in m.groups.items():
            blocks.append(heading(Text(f" {GROUP_TITLES.get(group, group)} ", style="bold"), "blue",
                                  anchor=f"group-{group}"))
            tbl = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False, show_header=True, header_style="grey62")
            tbl.add_column("metric", no_wrap=True)
            tbl.add_column("value", justify="right", no_wrap=True)
            tbl.add_column("recorded", style="grey62", no_wrap=True)
            tbl.add_column("flag / note", overflow="fold")
            for x in ms:
                fl = flagged.get(x.key, [])
                val = Text(fmt.metric_value(x), style="bold yellow" if fl else "")
                rec = ""
                if x.recorded is not None and x.recorded != x.value:
                    rec = _jsonish(x.recorded, 60)
                    if x.recorded_key:
                        rec += f" ({x.recorded_key})"
                note = Text(end="")
                for f in fl:
                    note.append("⚑ ", "yellow")
                    note.append(clean(f.message), "yellow")
                    note.append("  ")
                if x.note and not fl:
                    note.append(clean(x.note), "grey62")
                tbl.add_row(T(x.label), val, T(rec), note)
            blocks.append(RenderBlock(tbl))
    if run.scores or run.final_score is not None:
        blocks.append(heading(Text(" grader scores ", style="bold"), "blue"))
        rows = [(k, f"{v:g}") for k, v in run.scores.items()]
        if run.final_score is not None:
            rows.append(("final score", f"{run.final_score:g}"))
        blocks.append(RenderBlock(kv_table(rows)))
    blocks.append(heading(Text(f" flags ({len(run.flags)}) ", style="bold"), "yellow", anchor="flags"))
    if not run.flags:
        blocks.append(text_block(Text("no sanity flags", style="grey62")))
    sev_style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    for f in run.flags:
        t = Text(end="")
        t.append("⚑ ", sev_style.get(f.severity, ""))
        t.append(clean(f.code), "bold")
        t.append("  ")
        t.append(clean(f.message))
        where = []
        if f.kernel is not None:
            where.append(f"v{f.kernel}")
        if f.line is not None:
            where.append(f"line {f.line}")
        if where:
            t.append("  (" + ", ".join(where) + ")", "grey50")
        blocks.append(LinesBlock(TextLines([t])))
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
        blocks.append(markdown_block(p.prompt))
    if not blocks:
        blocks.append(text_block(Text("This trace carries no reference source or task prompt.", style="grey62")))
        if p.level is not None and p.problem_id is not None:
            blocks.append(text_block(T(
                f"KernelBench level {p.level} problem {p.problem_id}: the reference is in "
                f"kernelbench/level{p.level}/*/{p.problem_id}_*.py", "grey62")))
    return blocks


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
        bits.append(f"{ev.length:,} bytes @ {ev.offset:,}")
        h.append("  " + " · ".join(bits), "grey50")
        blocks.append(LinesBlock(TextLines([h])))
        s = clean(raw)
        if len(s) <= 4000:
            blocks.append(LinesBlock(code_lines(s, JSON), indent=2))
        else:
            blocks.append(LinesBlock(PlainLines(s), indent=2))
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
        uses.append(" " + fmt.STATUS_ICON.get(u.status, "?"), fmt.STATUS_STYLE.get(u.status, ""))
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
