"""The view model's dataclasses (renderer-neutral; see :mod:`ktui.view` for the overview)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ktui.trace.words import count

# block kinds
HEADING = "heading"  # one styled line, drawn as a rule with a title by the terminal renderers
LINES = "lines"  # a few styled lines (kv rows, notices), word-wrapped
CODE = "code"  # source or JSON: ``text`` with ``lang``, hard-folded (no word wrap)
PROSE = "prose"  # reasoning, messages, prompts: ``text``, word-wrapped
OUTPUT = "output"  # a tool's text output: ``text``, word-wrapped, error lines tagged


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of clean text and its style role (:mod:`ktui.view.roles`)."""

    text: str
    role: str = ""


Line = tuple[Span, ...]


def plain(line: Line) -> str:
    return "".join(s.text for s in line)


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of a document.

    ``HEADING`` and ``LINES`` blocks carry styled ``lines``; ``CODE``, ``PROSE`` and ``OUTPUT``
    carry clean ``text`` (one logical line per ``\\n``). A block with ``fold > 0`` is long: it is
    shown folded to its first ``fold`` lines plus a :meth:`fold_line` unless the reader unfolds
    it. Every string in a block is already sanitized.
    """

    kind: str
    lines: tuple[Line, ...] = ()
    text: str = ""
    role: str = ""
    lang: str = ""  # CODE: "python" | "json" | "" (plain)
    indent: int = 0
    numbers: bool = False  # CODE: a line-number gutter
    fold: int = 0
    anchor: str = ""
    kernel: int | None = None  # CODE of a kernel version: its number
    error_lines: bool = False  # OUTPUT: lines that look like errors get the role ``output.error``

    @property
    def text_lines(self) -> list[str]:
        return self.text.splitlines() or [""]

    def n_lines(self) -> int:
        return len(self.lines) if self.kind in (HEADING, LINES) else len(self.text_lines)

    @property
    def folded_by_default(self) -> bool:
        return 0 < self.fold < self.n_lines()

    def fold_line(self, hint: str = "") -> Line:
        """The line that stands for the hidden part (``hint``: how to unfold, e.g. ``--full``)."""
        hidden = self.n_lines() - self.fold
        more = f"… {count(hidden, 'more line')}"
        return (Span(f"{more} ({hint})" if hint else more, "fold"),)

    def plain_lines(self, expanded: bool = True, hint: str = "") -> list[str]:
        """The block's lines as displayed: all of them when ``expanded``, else folded."""
        if self.kind in (HEADING, LINES):
            out = [plain(x) for x in self.lines]
        else:
            out = self.text_lines
        if not expanded and self.folded_by_default:
            out = out[: self.fold] + [plain(self.fold_line(hint))]
        return out


@dataclass(frozen=True, slots=True)
class Fact:
    """One header fact: a key, its label and its text (``role`` says how it reads)."""

    key: str
    label: str
    text: str
    role: str = ""


@dataclass(frozen=True, slots=True)
class HeaderView:
    """What the run was, at a glance. Raw values for comparisons, texts for display."""

    title: str  # "L1 P27 27_permutation_all_to_all.py"
    dataset_variant: str
    model: str
    persona: str
    outcome: str  # passed | failed | incomplete
    variant: str
    end: str  # Run.terminal_state
    file: str
    backend: str
    turns: int
    max_turns: int | None
    turns_text: str
    calls: int  # agent calls
    failed_calls: int  # of them, not ok (ktui.trace.facts.is_failed)
    tokens: int | None
    tokens_text: str
    wall_text: str
    llm_text: str
    tools_text: str
    kernels: int
    started_text: str
    runtime_text: str
    runtime_note: str  # "recorded 0.0312 under runtime_us: really ms" or ""
    ref_runtime_text: str
    speedup: float | None
    speedup_text: str
    correct: bool | None
    final_kernel: str  # "v4" or ""
    measured: bool  # the run has a measured submission (runtime or speedup)
    final_score_text: str
    scores: tuple[tuple[str, str], ...]
    facts: tuple[Fact, ...]


@dataclass(frozen=True, slots=True)
class FlagView:
    """A sanity flag or static finding: its class, what it says, where, and since when."""

    code: str
    severity: str  # error | warning | info
    category: str  # metric | kernel | harness | state | finding
    message: str
    phrase: str  # a few words for the header line
    kernel: int | None = None
    line: int | None = None
    turn: int | None = None  # introduced at this turn
    evidence: tuple[str, ...] = ()  # source lines that show it ("line 12: ...")
    metric: str | None = None
    since: int | None = None  # a static finding: the kernel version that introduced it
    src_line: int | None = None  # ... and its line in that version's source

    @property
    def where(self) -> str:
        bits = []
        if self.turn is not None and "introduced at turn" not in self.message:
            bits.append(f"introduced at turn {self.turn}" + (f" (v{self.since})" if self.since is not None else ""))
        if self.kernel is not None and self.kernel != self.since and not self.message.startswith(f"v{self.kernel}:"):
            bits.append(f"v{self.kernel}")
        if self.line is not None and f"line {self.line}" not in self.message:
            bits.append(f"line {self.line}")
        return ", ".join(bits)


@dataclass(frozen=True, slots=True)
class MetricRow:
    key: str
    label: str
    value_text: str
    recorded_text: str  # the value as the trace wrote it, when it differs
    note: str
    flags: tuple[str, ...]  # messages of the flags about this metric


@dataclass(frozen=True, slots=True)
class MetricGroup:
    key: str
    title: str
    rows: tuple[MetricRow, ...]


@dataclass(frozen=True, slots=True)
class MetricsView:
    source: str  # "submit_kernel result (line 57)"
    groups: tuple[MetricGroup, ...]


@dataclass(frozen=True, slots=True)
class KernelUseView:
    turn: int | None
    tool: str
    status: str
    call_index: int


@dataclass(frozen=True, slots=True)
class KernelView:
    number: int
    label: str
    sha1: str
    n_lines: int
    chars: int
    first_turn: int | None
    first_call: int | None  # index of the call that first used it
    turns: tuple[int, ...]
    delta: tuple[int, int] | None  # (+added, -removed) lines vs the previous version, when known
    attachment: str  # "" or the attachment stub (the code is not in the trace)
    from_final_answer: bool
    is_final: bool
    uses: tuple[KernelUseView, ...]


@dataclass(frozen=True, slots=True)
class CallView:
    """One line of a turn's call overview."""

    index: int
    name: str
    status: str
    line: int
    duration_text: str  # "" when unknown
    kernel: str  # "v3" or ""


@dataclass(frozen=True, slots=True)
class TurnView:
    index: int
    actor: str
    status: str  # worst status of its calls, "none" without calls
    is_final: bool
    first_line: int
    last_line: int
    timing_text: str
    tokens_text: str
    calls: tuple[CallView, ...]
    blocks: tuple[Block, ...]  # the transcript of the turn, in order

    def plain_lines(self, expanded: bool = True) -> Iterator[str]:
        """Every line of the turn's blocks (what search runs over)."""
        for b in self.blocks:
            yield from b.plain_lines(expanded)


@dataclass(frozen=True, slots=True)
class TerminalView:
    kind: str
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class RunView:
    """The whole run, ready to render. Build it with :func:`ktui.view.build_view`."""

    path: str
    header: HeaderView
    flags: tuple[FlagView, ...]
    flag_codes: tuple[str, ...]
    problems: tuple[str, ...]  # "line N: message" of the file's problems
    incomplete: bool
    metrics: MetricsView | None
    preamble: tuple[Block, ...]  # system prompts, tool lists, messages before the first turn
    turns: tuple[TurnView, ...]
    terminal: tuple[TerminalView, ...]
    kernels: tuple[KernelView, ...]
