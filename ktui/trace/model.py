"""The domain model of one agent run.

Pure dataclasses: no Textual, no torch. Every other part of ktui (show, replay, diff,
compare, runs, repro) reads a :class:`Run` built by :mod:`ktui.trace.reader`.

Conventions
- Turn indices are 0-based, like the PopcornBench page ("turn 0" .. "turn 8").
- Times: ``*_ms`` are wall-clock milliseconds from the trace's ``ts_ms``; GPU timings in
  :class:`Metrics` are microseconds (``*_us``) after unit correction, the recorded value and
  unit are kept beside them.
- ``line`` numbers are 1-based line numbers in the source file.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any

from ktui.trace import rows
from ktui.trace.eventlog import Event, EventLog, copy_events, turn_spans  # noqa: F401 - the model's names
from ktui.trace.toolresult import _HIDDEN, ERROR, FAILED, MISSING, OK, ResultTable, ToolResult  # noqa: F401 - the model's names

# Variants (see the format doc, section 4)
V0 = "V0"
V1 = "V1"
V2 = "V2"
V3 = "V3"
UNKNOWN = "unknown"

# Tool call status: OK, FAILED, ERROR, MISSING (ktui.trace.toolresult)

# Outcomes
PASSED = "passed"
INCOMPLETE = "incomplete"
OUTCOME_FAILED = "failed"


@dataclass(slots=True)
class TraceProblem:
    """Something wrong with the input, with where it is. Never an exception."""

    line: int
    message: str
    excerpt: str = ""
    severity: str = "error"  # "error" | "warning"
    where: str = ""  # a JSON path ("$.steps[3].tool_calls") in single-object formats

    def __str__(self) -> str:
        ex = f"  [{self.excerpt}]" if self.excerpt else ""
        if self.where:
            where = f"{self.where}: "
        else:
            where = f"line {self.line}: " if self.line > 0 else ""  # 0: about the file as a whole
        return f"{where}{self.message}{ex}"


@dataclass(slots=True)
class Actor:
    id: str
    model: str | None = None
    role: str = "agent"  # "agent" | "user"
    persona: str | None = None
    tools: list[str] | None = None
    system_prompt: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Problem:
    level: int | None = None
    problem_id: int | str | None = None
    name: str | None = None
    reference_source: str | None = None
    reference_origin: str | None = None  # e.g. "fetch_problem ref_arch_src (line 4)"
    prompt: str | None = None  # full task text (KTBench)
    backend: str | None = None
    precision: str | None = None
    dataset_variant: str | None = None
    source_kernel: str | None = None  # translation problems
    task: str | None = None  # the harness's task name (Harbor task folder), when the problem is named from it

    @property
    def title(self) -> str:
        parts = []
        if self.level is not None:
            parts.append(f"L{self.level}")
        if self.problem_id is not None:
            parts.append(f"P{self.problem_id}" if self.level is not None else str(self.problem_id))
        if self.name:
            parts.append(str(self.name))
        return " ".join(parts) or "unknown problem"




@dataclass(slots=True, eq=False, init=False)
class ToolCall:
    index: int  # position among all calls of the run (0-based)
    name: str
    _args: Any  # the arguments object, or the ktui.trace.lazy.LineSource its line is read back from
    line: int
    ts_ms: int | None
    _id: Any = None  # the call's id (str or None), or READ_BACK: read back from its line
    actor: str | None = None
    seed: bool = False
    turn: int | None = None
    _result: Any = None  # the ToolResult, or the run's ResultTable that holds it (made on access)
    kernel: int | None = None  # KernelVersion.number of args.kernel_code, if any
    # state_diff entries it caused (a list once there are any); a lazy call keeps the line
    # numbers of its state_diff events instead, read back on demand (LineSource.diff_items)
    _diffs: Sequence[Any] = ()
    _kinfo: tuple[str, int, bool] | None = field(default=None, metadata=_HIDDEN)  # kernel_code's sha1, lines, attachment

    def __init__(self, index: int, name: str, args: Any, line: int, ts_ms: int | None, id: str | None = None,
                 actor: str | None = None, seed: bool = False, turn: int | None = None,
                 result: ToolResult | None = None, kernel: int | None = None,
                 diffs: Sequence[dict[str, Any]] | None = None) -> None:
        self.index, self.name, self._args, self.line, self.ts_ms = index, name, args, line, ts_ms
        self._id, self.actor, self.seed, self.turn, self._result, self.kernel = id, actor, seed, turn, result, kernel
        self._diffs = () if diffs is None else diffs  # most calls cause none: no empty list each
        self._kinfo = None

    @property
    def id(self) -> str | None:
        i = self._id
        if i is READ_BACK:  # a lazy call's id, once it was paired (the builder's pairing needed it)
            return self._args.call_id(self.line)
        return i  # type: ignore[no-any-return]

    @id.setter
    def id(self, value: str | None) -> None:
        self._id = value

    @property
    def result(self) -> ToolResult | None:
        r = self._result
        if type(r) is ResultTable:
            return r.get(self.index, self.name)
        return r  # type: ignore[no-any-return]

    @result.setter
    def result(self, value: ToolResult | ResultTable | None) -> None:
        self._result = value

    @property
    def has_result(self) -> bool:
        return self._result is not None

    @property
    def result_brief(self) -> str:
        """What a kernel use of its result says ('' without a result): from the columns when
        it was kept while reading, without making the result."""
        r = self._result
        if type(r) is ResultTable:
            b = r.brief(self.index)
            if b is not None:
                return b
        res = self.result
        return res.brief if res is not None else ""

    @property
    def diffs(self) -> Sequence[dict[str, Any]]:
        d = self._diffs
        if not d or type(d[0]) is not int:
            return d
        src = self._args  # a lazy call: the line numbers of its state_diff events
        return [item for line in d for item in src.diff_items(line)]

    @diffs.setter
    def diffs(self, value: Sequence[dict[str, Any]]) -> None:
        self._diffs = value

    def add_diffs(self, items: list[dict[str, Any]], line: int) -> None:
        """Append the entries of the state_diff event on ``line`` (an empty tuple until there are
        some: most calls have none); a call read back from the file keeps that line's number."""
        entry: list[Any] = [line] if self.lazy else items
        if isinstance(self._diffs, list):
            self._diffs.extend(entry)
        else:
            self._diffs = list(entry)

    @property
    def args(self) -> dict[str, Any]:
        a = self._args
        return a if type(a) is dict or not hasattr(a, "call_args") else a.call_args(self.line)

    @args.setter
    def args(self, value: Any) -> None:
        self._args, self._kinfo = value, None

    @property
    def lazy(self) -> bool:
        """Whether the arguments are read back from the file on demand."""
        return hasattr(self._args, "call_args")

    @property
    def status(self) -> str:
        r = self._result
        if type(r) is ResultTable:
            return r.status(self.index)
        return r.status if r is not None else MISSING

    @property
    def kernel_code(self) -> str | None:
        if self.lazy and self._kinfo is None:
            return None  # known while reading: no kernel_code
        args = self.args
        code = args.get("kernel_code") if isinstance(args, dict) else None
        return code if isinstance(code, str) else None

    @property
    def kernel_info(self) -> tuple[str, int, bool] | None:
        """``(sha1, lines, is_attachment)`` of its kernel_code, None without one; computed while
        reading (:meth:`know_kernel`) so that kernel versions are found without reading back."""
        if self._kinfo is None and not self.lazy:
            code = self.kernel_code
            if code is not None:
                self._kinfo = kernel_info(code)
        return self._kinfo

    def know_kernel(self, code: str | None) -> None:
        self._kinfo = kernel_info(code) if isinstance(code, str) else None

    @property
    def duration_ms(self) -> int | None:
        r = self._result
        end = r.ts_ms(self.index) if type(r) is ResultTable else r.ts_ms if r is not None else None
        if end is not None and self.ts_ms is not None:
            return max(0, end - self.ts_ms)
        return None


class _ReadBack:
    """A field read back from the call's line on demand (:class:`ToolCall`'s id)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<read back>"

    def __deepcopy__(self, memo: dict) -> _ReadBack:
        return self

    def __reduce__(self) -> str:
        return "READ_BACK"


READ_BACK = _ReadBack()


def kernel_sha1(code: str) -> str:
    """PopcornBench's kernel identity."""
    return hashlib.sha1(code.encode("utf-8", "replace")).hexdigest()


def kernel_info(code: str) -> tuple[str, int, bool]:
    """``(sha1, lines, is_attachment)`` of a kernel source; a short one's is remembered (an agent
    sends one version to several tools: compile, check, submit)."""
    if len(code) <= _INFO_CACHE_MAX:
        return _kernel_info_cached(code)
    return _kernel_info(code)


def _kernel_info(code: str) -> tuple[str, int, bool]:
    return kernel_sha1(code), len(code.splitlines()), code.strip().startswith("attachment://")


_INFO_CACHE_MAX = 64 << 10  # sources up to this long are remembered, 64 of them: at most 4 MiB held
_kernel_info_cached = functools.lru_cache(maxsize=64)(_kernel_info)




@dataclass(slots=True, eq=False)
class Turn:
    index: int
    actor: str | None
    first_line: int
    last_line: int
    start_ms: int | None = None  # ts of the completion (first event of the turn)
    end_ms: int | None = None  # ts of its last event
    llm_ms: int | None = None
    tool_ms: int | None = None
    wall_ms: int | None = None
    timing_reliable: bool = True  # False for V2 (synthetic ts) and V3 (conflated)
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_reasoning: int | None = None
    usd: float | None = None
    gpu_seconds: float | None = None
    reasoning: str | None = None
    text: str | None = None
    # in order (:meth:`add_call`): (), a tuple of one, then a list (an empty list is 56 bytes, a
    # list of one 88, a tuple of one 48: most turns make no call or one)
    calls: Sequence[ToolCall] = ()
    is_final: bool = False  # contains the final submission

    def add_call(self, call: ToolCall) -> None:
        calls = self.calls
        if type(calls) is list:
            calls.append(call)
        else:
            self.calls = [*calls, call] if calls else (call,)

    @property
    def tokens_total(self) -> int | None:
        vals = [v for v in (self.tokens_in, self.tokens_out, self.tokens_reasoning) if v is not None]
        return sum(vals) if vals else None

    @property
    def status(self) -> str:
        """Worst status of its calls: error > failed > missing > ok; 'none' without calls."""
        if not self.calls:
            return "none"
        order = {ERROR: 3, FAILED: 2, MISSING: 1, OK: 0}
        return max((c.status for c in self.calls), key=lambda s: order.get(s, 0))


@dataclass(slots=True, eq=False)
class KernelUse:
    turn: int | None
    call_index: int
    tool: str
    status: str
    summary: str = ""
    verdict: bool = False  # imported formats: a verifier's report on this version (PASS / FAIL, timings)


@dataclass(slots=True, eq=False, init=False)
class KernelVersion:
    number: int  # 1-based: v1, v2, ...
    sha1: str
    _code: Any  # the source, or the ToolCall whose kernel_code it is (read back on demand)
    first_turn: int | None
    first_line: int
    uses: list[KernelUse] = field(default_factory=list)
    attachment: str | None = None  # "attachment://<hash>" stub: the code is not in the trace
    from_final_answer: bool = False  # found only in an assistant message's fenced block
    # imported formats (see ktui.trace.importers): the file the version was written to, how it
    # was recovered ("Write content", "Edit applied to v2", "heredoc", ...) and whether it is
    # only a fragment (an edit whose base content is not in the trace)
    path: str | None = None
    origin: str = ""
    partial: bool = False
    _lines: int | None = field(default=None, metadata=_HIDDEN)

    def __init__(self, number: int, sha1: str, code: Any, first_turn: int | None, first_line: int,
                 uses: list[KernelUse] | None = None, attachment: str | None = None, from_final_answer: bool = False,
                 path: str | None = None, origin: str = "", partial: bool = False, lines: int | None = None) -> None:
        self.number, self.sha1, self._code, self.first_turn, self.first_line = number, sha1, code, first_turn, first_line
        self.uses = [] if uses is None else uses
        self.attachment, self.from_final_answer = attachment, from_final_answer
        self.path, self.origin, self.partial, self._lines = path, origin, partial, lines

    @property
    def code(self) -> str:
        c = self._code
        if type(c) is str:
            return c
        return getattr(c, "kernel_code", None) or ""

    @code.setter
    def code(self, value: str) -> None:
        self._code, self._lines = value, None

    @property
    def label(self) -> str:
        return f"v{self.number}"

    @property
    def line_count(self) -> int:
        """Lines of text, as ``wc -l`` counts a file that ends with a newline."""
        if self._lines is None:
            self._lines = len(self.code.splitlines())
        return self._lines

    @property
    def turns(self) -> list[int]:
        """The turns that used this version, once each, in order of use (a dict keeps the order:
        a version re-submitted in 100,000 turns costs 100,000 steps, not their square)."""
        return list(dict.fromkeys(u.turn for u in self.uses if u.turn is not None))


@dataclass(slots=True)
class Metric:
    """One measured value, with its canonical unit and what the trace claimed."""

    key: str  # stable id, e.g. "timing.runtime"
    label: str
    value: float | int | str | None  # canonical value (times in us)
    unit: str = ""  # canonical unit: "us", "MB", "%", "x", "", ...
    recorded: Any = None  # the value as written in the trace
    recorded_key: str | None = None  # field it came from
    recorded_unit: str | None = None  # the unit the trace's field name / label claims
    note: str | None = None  # e.g. "recorded in ms under a *_us key; x1000"


@dataclass(slots=True)
class Metrics:
    """The final (or a chosen) submission's metrics, grouped like the seed page."""

    source: str = ""  # e.g. "submit_kernel result (line 57)"
    correct: bool | None = None
    runtime_us: float | None = None
    ref_runtime_us: float | None = None
    speedup: float | None = None
    groups: dict[str, list[Metric]] = field(default_factory=dict)

    def get(self, key: str) -> Metric | None:
        for ms in self.groups.values():
            for m in ms:
                if m.key == key:
                    return m
        return None


@dataclass(slots=True)
class Flag:
    """A sanity flag on something the trace claims."""

    code: str  # e.g. "unit_ms_as_us", "speedup_excessive", "no_gpu_code"
    message: str  # one line
    severity: str = "warning"  # "warning" | "error" | "info"
    metric: str | None = None  # Metric.key it is about
    kernel: int | None = None  # KernelVersion.number it is about
    line: int | None = None
    # static findings (ktui.trace.findings): where the class first appeared and the source line
    turn: int | None = None  # the turn that introduced it
    since: int | None = None  # the kernel version that introduced it
    src_line: int | None = None  # 1-based line in the kernel source
    evidence: str = ""  # that source line (raw: the view cleans it)


@dataclass(slots=True)
class Terminal:
    """How the run ended (there may be several notes: halt then grader)."""

    kind: str  # grader | final_score | score | backend_error | halt | dangling_call | eof
    text: str
    line: int
    value: float | None = None


@dataclass
class Run:
    path: str
    variant: str = UNKNOWN
    format: str = "ensemble"  # the importer that read it (ktui.trace.importers.FORMATS)
    problem: Problem = field(default_factory=Problem)
    model: str | None = None
    persona: str | None = None
    scenario: str | None = None
    backend: str | None = None
    actors: list[Actor] = field(default_factory=list)
    started_ms: int | None = None
    ended_ms: int | None = None
    max_turns: int | None = None
    outcome: str = INCOMPLETE
    scores: dict[str, float] = field(default_factory=dict)
    final_score: float | None = None
    metrics: Metrics | None = None
    flags: list[Flag] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)  # every call, seed calls included
    kernels: list[KernelVersion] = field(default_factory=list)
    terminal: list[Terminal] = field(default_factory=list)
    # (line, redacted text) of system notes; (line, kind, actor, text) of messages: lists of
    # tuples, kept by column (ktui.trace.rows)
    notes: MutableSequence[tuple[int, str]] = field(default_factory=rows.notes)
    messages: MutableSequence[tuple[int, str, str | None, str]] = field(default_factory=rows.messages)
    events: EventLog = field(default_factory=EventLog)
    n_events: int = 0  # events read (also when they are not kept: the sweep index's skim)
    problems: list[TraceProblem] = field(default_factory=list)
    incomplete: bool = False  # ends in a partial line (still being written)
    size_bytes: int = 0
    tokens_by_actor: dict[str, dict[str, float]] = field(default_factory=dict)
    final_kernel_number: int | None = None  # set by importers: the version of the run's kernel file
    llm_busy_ms: int | None = None  # turns ran at once (Inspect's samples): the calls' union, not sum
    results: list[Any] = field(default_factory=list)  # ktui.trace.results.Result: the harness's own result files
    findings_pending: bool = False  # loaded without the static findings (the app adds them in a worker)
    revision: int = 0  # bumped by each Builder.finish(): what :meth:`lookup` caches is tied to it
    _lookups: dict[str, tuple[tuple, Any]] = field(default_factory=dict, repr=False, compare=False)

    def lookup(self, name: str, build):
        """``build(run)``, computed once per state of the run (its revision and the sizes of its
        turn, message and kernel lists) and kept: indexes that views read on every key (messages
        by turn, turns by line) are built in one pass instead of one pass per key."""
        key = (self.revision, len(self.turns), len(self.messages), len(self.kernels), len(self.calls))
        got = self._lookups.get(name)
        if got is not None and got[0] == key:
            return got[1]
        value = build(self)
        self._lookups[name] = (key, value)
        return value

    # ---- derived figures -------------------------------------------------
    @property
    def agent_calls(self) -> list[ToolCall]:
        """Calls the agent made (seeded calls excluded)."""
        return [c for c in self.calls if not c.seed]

    def _run_totals(self, key: str) -> int:
        """Run-level token totals (``tokens_by_actor``), for traces that give no per-turn figures
        (SWE-agent's ``model_stats``)."""
        if any(t.tokens_total is not None for t in self.turns):
            return 0
        return int(sum(v.get(key, 0) or 0 for v in self.tokens_by_actor.values()
                       if isinstance(v.get(key, 0), (int, float))))

    @property
    def tokens_in(self) -> int:
        return sum(t.tokens_in or 0 for t in self.turns) or self._run_totals("tokens_in")

    @property
    def tokens_out(self) -> int:
        return sum(t.tokens_out or 0 for t in self.turns) or self._run_totals("tokens_out")

    @property
    def tokens_total(self) -> int:
        return (sum(t.tokens_total or 0 for t in self.turns)
                or sum(self._run_totals(k) for k in ("tokens_in", "tokens_out", "tokens_reasoning")))

    @property
    def wall_ms(self) -> int | None:
        if self.started_ms is None or self.ended_ms is None:
            return None
        return self.ended_ms - self.started_ms

    @property
    def llm_ms(self) -> int | None:
        if self.llm_busy_ms is not None:
            return self.llm_busy_ms
        vals = [t.llm_ms for t in self.turns if t.llm_ms is not None]
        return sum(vals) if vals else None

    @property
    def tool_ms(self) -> int | None:
        vals = [t.tool_ms for t in self.turns if t.tool_ms is not None]
        return sum(vals) if vals else None

    @property
    def terminal_state(self) -> str:
        """A one-word summary of how the run ended (the most specific note)."""
        kinds = [t.kind for t in self.terminal]
        for k in ("backend_error", "dangling_call", "final_score", "score", "grader", "halt"):
            if k in kinds:
                return k
        return "eof"

    @property
    def first_correct_turn(self) -> int | None:
        for c in self.calls:
            if c.name in ("run_correctness", "submit_kernel") and c.status == OK and c.turn is not None:
                return c.turn
        turns = [u.turn for k in self.kernels for u in k.uses if u.verdict and u.status == OK and u.turn is not None]
        return min(turns) if turns else None

    def kernel(self, ref: str | int) -> KernelVersion | None:
        """Look up a kernel version by number, 'vN', 'final' or a sha1 prefix."""
        if isinstance(ref, int):
            return self.kernels[ref - 1] if 1 <= ref <= len(self.kernels) else None
        r = ref.strip().lower()
        if r in ("final", "last"):
            return self.final_kernel
        if r.startswith("v") and r[1:].isdigit():
            return self.kernel(int(r[1:]))
        if r.isdigit():
            return self.kernel(int(r))
        if len(r) >= 4:
            for k in self.kernels:
                if k.sha1.startswith(r):
                    return k
        return None

    @property
    def final_kernel(self) -> KernelVersion | None:
        if self.final_kernel_number is not None:
            return self.kernel(self.final_kernel_number)
        for c in reversed(self.calls):
            if c.name == "submit_kernel" and c.kernel is not None:
                return self.kernel(c.kernel)
        return self.kernels[-1] if self.kernels else None

    def turn_of_line(self, line: int) -> int | None:
        """The first turn (in turn order) whose lines span ``line``; None when none does.
        A binary search over a table built once (:meth:`lookup`), not a walk over every turn."""
        spans = self.lookup("turn_spans", turn_spans)
        return spans.turn_of(line)


def snapshot_run(run: Run) -> Run:
    """A deep copy of ``run`` that shares nothing mutable with it (follow mode and the staged
    load hand these to the app while the reader goes on with the original)."""
    memo = {id(run.events): copy_events(run.events)}
    return copy.deepcopy(run, memo)
