"""Building the view model from a :class:`~ktui.trace.model.Run` (pure: no I/O, no Rich)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ktui.trace import facts
from ktui.trace.diffing import diff_stats
from ktui.trace.metrics import GROUP_TITLES
from ktui.trace.model import OK, Flag, KernelVersion, Run, ToolCall, Turn
from ktui.trace.words import count
from ktui.view import fmt
from ktui.view import roles as R
from ktui.view.model import (
    CODE,
    HEADING,
    LINES,
    OUTPUT,
    PROSE,
    Block,
    CallView,
    Fact,
    FlagView,
    HeaderView,
    KernelUseView,
    KernelView,
    Line,
    MetricGroup,
    MetricRow,
    MetricsView,
    RunView,
    Span,
    TerminalView,
    TurnView,
)
from ktui.view.text import clean, compact_json, one_line, pretty_json, redact

Stats = Callable[[KernelVersion, KernelVersion], "tuple[int, int] | None"]

FOLD_LINES = 40  # a longer block (tool output, prompt, message, arguments) is folded ...
FOLD_KEEP = 12  # ... to this many lines
AGENT_MESSAGE_KINDS = ("agent_message", "assistant_message", "message")  # already in the turn's text

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
    "final_unevaluated": "final kernel not evaluated in the trace",
    "backend_error": "backend error",
    "dangling_call": "ended during a tool call",
    "still_writing": "still being written",
    "bad_lines": "lines with problems",
}

_STATS_CACHE: dict[tuple[str, str], tuple[int, int]] = {}


def cached_stats(a: KernelVersion, b: KernelVersion, *, compute: bool = True) -> tuple[int, int] | None:
    """``(added, removed)`` lines from ``a`` to ``b``, cached by sha1 pair; None when unknown
    (``compute=False`` only looks in the cache; code not in the trace is never diffed)."""
    if not a.code or not b.code:
        return None
    key = (a.sha1, b.sha1)
    got = _STATS_CACHE.get(key)
    if got is None and compute:
        if len(_STATS_CACHE) > 4096:
            _STATS_CACHE.clear()
        got = _STATS_CACHE[key] = diff_stats(a.code, b.code)
    return got


QUICK_DIFF_CHARS = 60_000  # kernels this small (both together) are diffed on the spot


def lookup_stats(a: KernelVersion, b: KernelVersion) -> tuple[int, int] | None:
    """:func:`cached_stats` for a UI thread: computed only for small kernels (a few ms), else
    from the cache (a worker fills it)."""
    small = len(a.code or "") + len(b.code or "") <= QUICK_DIFF_CHARS
    return cached_stats(a, b, compute=small)


# ---- small pieces ---------------------------------------------------------------------------------
def S(text: object, role: str = "") -> Span:
    return Span(clean(text), role)


def heading(role: str, *spans: Span, anchor: str = "") -> Block:
    return Block(HEADING, lines=(tuple(spans),), role=role, anchor=anchor)


def lines_block(*lines: Line, indent: int = 0, anchor: str = "", role: str = "") -> Block:
    return Block(LINES, lines=tuple(lines), indent=indent, anchor=anchor, role=role)


def _fold(text: str) -> int:
    return FOLD_KEEP if text.count("\n") + 1 > FOLD_LINES else 0


LONG_LINE = 2000  # a longer line of a foldable block is broken into lines of this many characters


def _broken(t: str) -> str:
    """``t`` with every line over :data:`LONG_LINE` characters broken into lines of that length:
    a block folds by its lines, so a message of one 10 MB line was never folded (``ktui show``
    printed 11 MB and took 1.1 GB of memory without ``--full``; the app drew 100,000 lines for
    the turn). A terminal wraps such a line anyway; the text is unchanged but for the breaks."""
    if len(t) <= LONG_LINE or max(map(len, t.split("\n"))) <= LONG_LINE:
        return t
    out: list[str] = []
    for line in t.split("\n"):
        out.extend([line[i:i + LONG_LINE] for i in range(0, len(line), LONG_LINE)] or [""])
    return "\n".join(out)


def prose(text: str, role: str = R.PROSE, indent: int = 0, anchor: str = "") -> Block:
    t = _broken(clean(text))
    return Block(PROSE, text=t, role=role, indent=indent, fold=_fold(t), anchor=anchor)


def output(text: str, *, failed: bool, indent: int = 2) -> Block:
    t = _broken(clean(text))
    return Block(OUTPUT, text=t, role=R.OUTPUT, indent=indent, fold=_fold(t), error_lines=failed)


def code(text: str, lang: str, *, numbers: bool = False, indent: int = 0, fold: bool = True,
         kernel: int | None = None, anchor: str = "") -> Block:
    t = _broken(clean(text)) if fold else clean(text)
    return Block(CODE, text=t, lang=lang, numbers=numbers, indent=indent, fold=_fold(t) if fold else 0,
                 kernel=kernel, anchor=anchor)


ERR_LINE = re.compile(r"error|exception|traceback|failed|mismatch|not match|illegal|abort|fatal", re.I)


def is_error_line(line: str) -> bool:
    return ERR_LINE.search(line) is not None


def previous_version(run: Run, k: KernelVersion) -> KernelVersion | None:
    return run.kernels[k.number - 2] if 2 <= k.number <= len(run.kernels) + 1 else None


def is_first_use(k: KernelVersion, call: ToolCall) -> bool:
    return not k.uses or k.uses[0].call_index == call.index


def kernel_of(run: Run, call: ToolCall) -> KernelVersion | None:
    return run.kernel(call.kernel) if call.kernel is not None else None


# ---- header ---------------------------------------------------------------------------------------
def header_view(run: Run) -> HeaderView:
    p = run.problem
    m = run.metrics
    calls = len(run.agent_calls)
    failed = facts.failed_calls(run)
    rt_note = ""
    if m is not None and m.runtime_us is not None:
        rt = m.get("timing.runtime")
        if rt is not None and rt.note:
            rt_note = f"recorded {one_line(rt.recorded)} under \"μs\": really ms"
    measured = m is not None and (m.runtime_us is not None or m.speedup is not None)
    fk = run.final_kernel
    tokens = run.tokens_total or None
    backend = " ".join(clean(x) for x in (p.backend, p.precision) if x) or clean(run.backend) or fmt.NONE
    h: dict[str, Any] = dict(
        title=one_line(p.title), dataset_variant=one_line(p.dataset_variant or ""),
        model=one_line(run.model or ""), persona=one_line(run.persona or ""), outcome=run.outcome,
        variant=run.variant, end=run.terminal_state, file=one_line(Path(run.path).name), backend=one_line(backend),
        turns=len(run.turns), max_turns=run.max_turns, turns_text=fmt.turns_label(len(run.turns), run.max_turns),
        calls=calls, failed_calls=failed, tokens=tokens, tokens_text=fmt.num(tokens),
        wall_text=fmt.wall_label(run.variant, run.wall_ms),
        llm_text=fmt.secs(run.llm_ms) if run.llm_ms is not None else "",
        tools_text=fmt.secs(run.tool_ms) if run.tool_ms is not None else "",
        kernels=len(run.kernels), started_text=fmt.iso(run.started_ms),
        runtime_text=fmt.us(m.runtime_us) if m else fmt.NONE, runtime_note=rt_note,
        ref_runtime_text=fmt.us(m.ref_runtime_us) if m else fmt.NONE,
        speedup=m.speedup if m else None, speedup_text=fmt.ratio(m.speedup) if m else fmt.NONE,
        correct=m.correct if m else None, final_kernel=fk.label if fk is not None else "", measured=measured,
        final_score_text=fmt.score(run.final_score) if run.final_score is not None else "",
        scores=tuple((one_line(k), fmt.score(v)) for k, v in run.scores.items()),
    )
    failed_text = f" ({failed} failed)" if failed else ""
    fl = [
        Fact("outcome", "outcome", h["outcome"], R.outcome_role(run.outcome)),
        Fact("model", "model", h["model"] or fmt.NONE, R.MODEL),
        Fact("turns", "turns / max", h["turns_text"], R.STRONG),
        Fact("calls", "tool calls", f"{calls}{failed_text}", R.STRONG),
        Fact("tokens", "tokens (total)", h["tokens_text"], R.STRONG),
        Fact("wall", "wall clock", h["wall_text"], R.STRONG),
        Fact("backend", "backend", h["backend"]),
        Fact("variant", "variant", run.variant),
        Fact("runtime", "runtime", h["runtime_text"] + (f" ({rt_note})" if rt_note else ""),
             R.WARN if rt_note else R.STRONG),
        Fact("ref_runtime", "ref runtime", h["ref_runtime_text"]),
        Fact("speedup", "speedup", h["speedup_text"], R.GOOD if (h["speedup"] or 0) > 1 else R.STRONG),
        Fact("started", "started", h["started_text"]),
        Fact("persona", "persona", h["persona"] or fmt.NONE),
        Fact("end", "end", h["end"]),
        Fact("kernels", "kernels", str(h["kernels"])),
        Fact("file", "file", h["file"], R.FAINT),
    ]
    return HeaderView(**h, facts=tuple(fl))


# ---- flags ----------------------------------------------------------------------------------------
def _category(f: Flag) -> str:
    if f.code in facts.STATE_FLAG_MESSAGES or (f.code == "speedup_excessive" and f.metric is None):
        return "state"
    if f.src_line is not None or f.since is not None:
        return "finding"
    if f.metric:
        return "metric"
    if f.kernel is not None:
        return "kernel"
    return "harness"


def phrase(code: str) -> str:
    """A few words for a flag code (the same for every flag of that code)."""
    return FLAG_PHRASES.get(code) or one_line(code, 50).replace("_", " ")


def flag_view(run: Run, f: Flag) -> FlagView:
    turn = f.turn
    ref = f.since or f.kernel
    if turn is None and ref is not None:
        k = run.kernel(ref)
        turn = k.first_turn if k is not None else None
    if turn is None and f.line is not None:
        turn = run.turn_of_line(f.line)
    ev = ((f"line {f.src_line}: " if f.src_line is not None else "") + f.evidence,) if f.evidence else ()
    if ev and f.evidence.strip() in f.message:  # the message already quotes it
        ev = ()
    return FlagView(code=one_line(f.code), severity=f.severity if f.severity in ("error", "warning", "info") else
                    "warning", category=_category(f), message=one_line(f.message), phrase=phrase(f.code),
                    kernel=f.kernel, line=f.line, turn=turn, evidence=tuple(one_line(x, 300) for x in ev),
                    metric=f.metric, since=f.since, src_line=f.src_line)


# ---- metrics --------------------------------------------------------------------------------------
def metrics_view(run: Run) -> MetricsView | None:
    m = run.metrics
    if m is None or not m.groups:
        return None
    flagged: dict[str, list[str]] = {}
    for f in run.flags:
        if f.metric:
            flagged.setdefault(f.metric, []).append(one_line(f.message))
    groups = []
    for g, ms in m.groups.items():
        rows = []
        for x in ms:
            rec = ""
            if x.recorded is not None and x.recorded != x.value:
                rec = compact_json(x.recorded, 60)
                if x.recorded_key:
                    rec += f" ({one_line(x.recorded_key)})"
            rows.append(MetricRow(one_line(x.key), one_line(x.label), fmt.metric_value(x), rec,
                                  one_line(x.note or ""), tuple(flagged.get(x.key, ()))))
        groups.append(MetricGroup(one_line(g), one_line(GROUP_TITLES.get(g, g)), tuple(rows)))
    return MetricsView(one_line(m.source), tuple(groups))


# ---- kernels --------------------------------------------------------------------------------------
def kernel_views(run: Run, stats: Stats) -> tuple[KernelView, ...]:
    fk = run.final_kernel
    out = []
    for k in run.kernels:
        prev = previous_version(run, k)
        out.append(KernelView(
            number=k.number, label=k.label, sha1=k.sha1, n_lines=k.line_count, chars=len(k.code or ""),
            first_turn=k.first_turn, first_call=k.uses[0].call_index if k.uses else None, turns=tuple(k.turns),
            delta=stats(prev, k) if prev is not None else None, attachment=one_line(k.attachment or ""),
            from_final_answer=k.from_final_answer, is_final=fk is not None and fk.number == k.number,
            uses=tuple(KernelUseView(u.turn, one_line(u.tool), u.status, u.call_index) for u in k.uses)))
    return tuple(out)


# ---- the transcript -------------------------------------------------------------------------------
def _message_blocks(line: int, kind: str, actor: str | None, text: str) -> list[Block]:
    who = one_line(actor or "?")
    head = heading(R.MESSAGE, Span(" message ← ", R.MUTED), Span(who, R.ACTOR), Span(f"  {one_line(kind)}", R.FAINT),
                   Span(f"  line {line} ", R.FAINT), anchor=f"message-{line}")
    return [head, prose(redact(text), R.MESSAGE, indent=2)]


def preamble_blocks(run: Run, actors: int | None = None) -> list[Block]:
    """System prompts and tool lists of every actor (of the first ``actors`` of them, and a line
    saying how many more there are: a file of many concatenated runs spawns thousands)."""
    out: list[Block] = []
    shown = run.actors if actors is None else run.actors[:actors]
    for a in shown:
        if a.system_prompt:
            out.append(heading(R.NOTE, Span(" system prompt · ", R.MUTED), Span(one_line(a.id), R.ACTOR),
                               Span(f"  ({one_line(a.model)})" if a.model else "", R.FAINT),
                               anchor=f"system-{one_line(a.id)}"))
            out.append(prose(redact(a.system_prompt), R.PROSE, indent=2))
        if a.tools:
            names = [one_line(t.get("name") if isinstance(t, dict) else t) for t in a.tools]
            out.append(lines_block((Span("tools · ", R.LABEL), Span(one_line(a.id), R.ACTOR),
                                    Span(f" ({len(names)}): ", R.LABEL), Span(", ".join(names), R.VALUE)), indent=2))
    if len(shown) < len(run.actors):
        more = len(run.actors) - len(shown)
        out.append(lines_block((Span(f"… {count(more, 'more actor')}' system prompts and tools (ktui show prints them all)",
                                     R.FAINT),)))
    return out


def _args_blocks(run: Run, c: ToolCall, stats: Stats) -> list[Block]:
    out: list[Block] = []
    args = c.args if isinstance(c.args, dict) else {"args": c.args}
    other = {k: v for k, v in args.items() if k != "kernel_code" or c.kernel_code is None}
    k = kernel_of(run, c)
    if other:
        out.append(code(pretty_json(other), "json", indent=2))
    elif not args:
        out.append(lines_block((Span("  (no arguments)", R.FAINT),)))
    if c.kernel_code is not None and k is None:
        out.append(code(c.kernel_code, "python", numbers=True, fold=False))
    if k is not None:
        prev = previous_version(run, k)
        first = is_first_use(k, c)
        spans = [Span("  kernel_code  ", R.LABEL), Span(k.label, R.KERNEL)]
        if k.attachment and not k.code:
            spans.append(Span(f"  code not in the trace: {one_line(k.attachment)}", R.WARN))
        elif first:
            spans.append(Span(f"  new · {count(k.line_count, 'line')}", R.MUTED))
            st = stats(prev, k) if prev is not None else None
            if prev is not None and st is not None:
                spans += [Span(f" · vs {prev.label} ", R.MUTED), Span(f"+{st[0]}", "diff.added"), Span(" "),
                          Span(f"-{st[1]}", "diff.removed")]
        else:
            first_turn = "?" if k.first_turn is None else k.first_turn
            spans += [Span(f"  same as {k.label}", R.STRONG),
                      Span(f" (first at turn {first_turn}) · {count(k.line_count, 'line')} · identical re-submission", R.MUTED)]
        out.append(lines_block(tuple(spans), anchor=f"kernel-{c.index}"))
        if first and k.code:
            out.append(code(k.code, "python", numbers=True, kernel=k.number))
    return out


_EFFECT_SKIP = {"summary", "ok", "tool", "ref_arch_src", "source_kernel_src", "details"}


def _contained(v: str, shown: list[str]) -> bool:
    v = v.strip()
    return bool(v) and any(v in s for s in shown)


def _leaves(v: object, out: list[str], depth: int = 0) -> bool:
    """Collect the scalar leaves of ``v`` as text; False when it is too big or deep to check."""
    if len(out) > 200 or depth > 8:
        return False
    if isinstance(v, dict):
        return all(_leaves(x, out, depth + 1) for x in v.values())
    if isinstance(v, (list, tuple)):
        return all(_leaves(x, out, depth + 1) for x in v)
    if isinstance(v, bool) or v is None:
        return True
    out.append(compact_json(v, 10_000))
    return True


def _already_shown(v: object, shown: list[str]) -> bool:
    """Whether every scalar in ``v`` already appears in the text shown (the summary, the error)."""
    if isinstance(v, str):
        return _contained(clean(v), shown)
    leaves: list[str] = []
    return _leaves(v, leaves) and bool(leaves) and all(_contained(x, shown) for x in leaves)


def result_blocks(c: ToolCall) -> list[Block]:
    res = c.result
    st = c.status
    head = [Span(" result ← ", R.MUTED), S(c.name, R.STRONG), Span("  "),
            Span(f"{R.STATUS_ICON.get(st, '?')} {R.STATUS_LABEL.get(st, st)}", R.status_role(st))]
    if c.duration_ms is not None:
        head.append(Span(f"  {fmt.secs(c.duration_ms)}", R.FAINT))
    if res is not None:
        head.append(Span(f"  line {res.line} ", R.FAINT))
    out = [heading(R.status_role(st), *head, anchor=f"result-{c.index}")]
    if res is None:
        out.append(lines_block((Span("  no result in the trace: the run ended while this call was running",
                                     R.WARN),)))
        return out
    failed = res.status != OK
    summary = clean(res.summary or "")
    shown: list[str] = [summary]
    err = clean(res.error_text) if failed else ""
    if err.strip() and not _contained(err, shown):
        out.append(lines_block(*[(Span("error: " if i == 0 else "       ", R.ERROR), Span(x, R.ERROR))
                                 for i, x in enumerate(err.splitlines())], indent=2))
        shown.append(err)
    if summary.strip():
        out.append(output(summary, failed=failed))
    eff = res.effect or {}
    details = eff.get("details")
    details = details if isinstance(details, dict) else {}
    rows: list[Line] = []
    long_fields: list[tuple[str, str]] = []
    for key, v in list(eff.items()) + [(f"details.{k}", v) for k, v in details.items()]:
        if key in _EFFECT_SKIP or v is None or v == "" or v == [] or v == {}:
            continue
        if _already_shown(v, shown):
            continue
        if isinstance(v, str):
            cv = clean(v)
            if len(cv) > 200 or "\n" in cv:
                long_fields.append((one_line(key), cv))
                shown.append(cv)
                continue
        rows.append((Span(f"{one_line(key)}  ", R.LABEL), Span(compact_json(v), R.VALUE)))
    if rows:
        out.append(lines_block(*rows, indent=2))
    for key, v in long_fields:
        out.append(lines_block((Span(key, R.LABEL),), indent=2))
        out.append(output(v, failed=failed, indent=4))
    if res.meta:
        meta = [(Span(f"{one_line(k)}  ", R.LABEL), Span(compact_json(v), R.VALUE)) for k, v in res.meta.items()
                if not _already_shown(v, shown)]
        if meta:
            out.append(lines_block((Span("[meta]", R.LABEL),), *meta, indent=2))
    return out


def call_blocks(run: Run, c: ToolCall, stats: Stats) -> list[Block]:
    out = [heading(R.CALL, Span(" call → ", R.MUTED), S(c.name, R.CALL), Span(f"  #{c.index}  line {c.line} ", R.FAINT),
                   anchor=f"call-{c.index}")]
    out += _args_blocks(run, c, stats)
    out += result_blocks(c)
    if c.diffs:
        out.append(lines_block((Span("  state_diff", R.LABEL),)))
        out.append(code(pretty_json(c.diffs if len(c.diffs) > 1 else c.diffs[0]), "json", indent=4))
    return out


def call_view(run: Run, c: ToolCall) -> CallView:
    k = kernel_of(run, c)
    return CallView(c.index, one_line(c.name), c.status, c.line,
                    fmt.secs(c.duration_ms) if c.duration_ms is not None else "", k.label if k else "")


def _title_block(run: Run, t: Turn, calls: list[CallView]) -> Block:
    line = [Span(f"turn {t.index}", R.TITLE), Span("  "),
            Span(f"{R.STATUS_ICON.get(t.status, '?')} {R.STATUS_LABEL.get(t.status, t.status)}",
                 R.status_role(t.status)),
            Span("   " + fmt.turn_timing_label(t), R.MUTED)]
    tok = fmt.tokens_label(t)
    if tok:
        line.append(Span("  ·  " + tok, R.MUTED))
    if t.is_final:
        line.append(Span("  ·  FINAL", R.FINAL))
    if t.actor and len(run.actors) > 1:
        line.append(Span(f"  ·  {one_line(t.actor)}", R.ACTOR))
    line.append(Span(f"  ·  trace lines {t.first_line}-{t.last_line}", R.FAINT))
    rows: list[Line] = [tuple(line)]
    for cv in calls:
        row = [Span("  "), Span(R.STATUS_ICON.get(cv.status, "?") + " ", R.status_role(cv.status)),
               Span(cv.name, R.STRONG)]
        if cv.kernel:
            row.append(Span(f"  {cv.kernel}", R.KERNEL))
        if cv.duration_text:
            row.append(Span(f"  {cv.duration_text}", R.FAINT))
        if cv.status != OK:
            row.append(Span(f"  {R.STATUS_LABEL.get(cv.status, cv.status)}", R.status_role(cv.status)))
        rows.append(tuple(row))
    return lines_block(*rows, anchor="top")


def messages_by_turn(run: Run) -> tuple[list[tuple[int, str, str | None, str]], dict[int, list]]:
    """Messages that are not the agents' own turn text (user, harness, other roles): those
    before the first turn, and the rest by the turn they lead into (or the last turn).

    Computed once per state of the run (:meth:`Run.lookup`): one sort of the turns and a binary
    search per message, not a walk over the turns per message on every key."""
    return run.lookup("messages_by_turn", _messages_by_turn)


def _messages_by_turn(run: Run) -> tuple[list[tuple[int, str, str | None, str]], dict[int, list]]:
    before: list = []
    by: dict[int, list] = {}
    turns = sorted(run.turns, key=lambda t: t.first_line)
    # the turn a message leads into: the first turn (by first line) that ends at or after it.
    # ``reach[i]``, the largest last line of turns[:i + 1], never decreases, so that turn is the
    # first ``i`` with ``reach[i] >= line``: a bisection
    reach: list[int] = []
    for t in turns:
        reach.append(t.last_line if not reach else max(reach[-1], t.last_line))
    for m in run.messages:
        line, kind = m[0], m[1]
        if kind in AGENT_MESSAGE_KINDS:
            continue
        if not turns or line < turns[0].first_line:
            before.append(m)
            continue
        i = bisect.bisect_left(reach, line)
        target = turns[i].index if i < len(turns) else turns[-1].index
        by.setdefault(target, []).append(m)
    return before, by


def first_turn(run: Run) -> Turn | None:
    """The turn that starts first in the file (the run's preamble leads it); kept per run state."""
    return run.lookup("first_turn", lambda r: min(r.turns, key=lambda t: t.first_line) if r.turns else None)


def turn_view(run: Run, t: Turn, *, stats: Stats | None = None, preamble: bool = False,
              messages: list | None = None, preamble_actors: int | None = None) -> TurnView:
    """One turn's view. ``preamble``: put the run's preamble first (turn 0), with the prompts of
    the first ``preamble_actors`` actors (default: all). ``messages``: the other actors'
    messages leading into this turn (default: computed)."""
    stats = stats or cached_stats
    calls = [call_view(run, c) for c in t.calls]
    blocks: list[Block] = [_title_block(run, t, calls)]
    if preamble:
        blocks += preamble_blocks(run, preamble_actors)
        before, _ = messages_by_turn(run)
        for m in before:
            blocks += _message_blocks(*m)
    if messages is None:
        messages = messages_by_turn(run)[1].get(t.index, [])
    for m in messages:
        blocks += _message_blocks(*m)
    if t.reasoning:
        blocks.append(heading(R.REASONING, Span(" reasoning ", R.HEADING), anchor="reasoning"))
        blocks.append(prose(t.reasoning, R.REASONING))
    if t.text:
        blocks.append(heading(R.PROSE, Span(" text ", R.HEADING), anchor="text"))
        blocks.append(prose(t.text, R.PROSE))
    if not t.calls and not t.reasoning and not t.text:
        blocks.append(lines_block((Span("(this turn has no text and no tool calls)", R.FAINT),)))
    for c in t.calls:
        blocks += call_blocks(run, c, stats)
    return TurnView(index=t.index, actor=one_line(t.actor or ""), status=t.status, is_final=t.is_final,
                    first_line=t.first_line, last_line=t.last_line, timing_text=fmt.turn_timing_label(t),
                    tokens_text=fmt.tokens_label(t), calls=tuple(calls), blocks=tuple(blocks))


def build_view(run: Run, *, stats: Stats | None = None) -> RunView:
    """The whole run's view. ``stats`` gives kernel diff sizes (default: computed and cached;
    pass :func:`lookup_stats` on a UI thread)."""
    stats = stats or cached_stats
    before, by = messages_by_turn(run)
    turns = []
    for t in run.turns:
        turns.append(turn_view(run, t, stats=stats, messages=by.get(t.index, [])))
    pre = preamble_blocks(run)
    for m in before:
        pre += _message_blocks(*m)
    flags = tuple(flag_view(run, f) for f in facts.all_flags(run))
    return RunView(
        path=one_line(run.path), header=header_view(run), flags=flags, flag_codes=tuple(one_line(c) for c in facts.flag_codes(run)),
        problems=tuple(one_line(str(p)) for p in run.problems), incomplete=run.incomplete,
        metrics=metrics_view(run), preamble=tuple(pre), turns=tuple(turns),
        terminal=tuple(TerminalView(one_line(x.kind), clean(redact(x.text)), x.line) for x in run.terminal),
        kernels=kernel_views(run, stats))
