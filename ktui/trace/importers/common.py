"""What every importer shares: reading the source, and assembling the one :class:`Run` model.

An importer walks its format and calls :class:`Assembler` methods in trace order (events, turns,
text, tool calls, results, user messages, scores); ``finish()`` pairs nothing by itself (the
importer pairs, by id where the format has one) but derives kernel versions (through
:class:`~ktui.trace.importers.tracker.FileTracker`), per-turn timing, outcome, terminal state and
the static flags, exactly as for ensemble traces. Nothing here raises on data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ktui.trace.derive import flags as derive_flags
from ktui.trace.importers.evidence import evidence
from ktui.trace.importers.framing import task_of
from ktui.trace.importers.kernels import backend_of
from ktui.trace.importers.searchreplace import search_replace_blocks  # noqa: F401 - importers take it from here
from ktui.trace.importers.shellstatus import exit_code, shell_status  # noqa: F401 - importers take them from here
from ktui.trace.importers.tokens import reasoning_apart  # noqa: F401 - importers take it from here
from ktui.trace.importers.tracker import FileTracker
from ktui.trace.model import (
    ERROR,
    FAILED,
    INCOMPLETE,
    OK,
    OUTCOME_FAILED,
    PASSED,
    Event,
    Problem,
    Run,
    Terminal,
    ToolCall,
    ToolResult,
    TraceProblem,
    Turn,
)
from ktui.trace.notes import JSONError, loads, loads_lenient
from ktui.trace.words import count, plural

MAX_OBJECT_BYTES = 1 << 30  # single-object formats: parsed whole, so bounded
MAX_PROBLEMS = 1000
CHUNK = 8 << 20


class TooBig(Exception):
    pass


# ---- reading -------------------------------------------------------------------------------------
def read_bounded(path: str, limit: int = MAX_OBJECT_BYTES) -> bytes:
    """The whole file, at most ``limit`` bytes (TooBig beyond). OSError passes through."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooBig(f"larger than {limit >> 20} MiB: too big to parse as one JSON object")
    return data


def iter_lines(path: str | None = None, data: bytes | None = None) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, byte offset, raw line without its newline, terminated) over a file, streamed
    in chunks, or over bytes. A UTF-8 BOM on the first line and a trailing CR are dropped."""
    def chunks():
        if data is not None:
            yield data
            return
        with open(path, "rb") as f:
            while True:
                c = f.read(CHUNK)
                if not c:
                    return
                yield c

    line_no, offset, tail = 0, 0, b""
    for chunk in chunks():
        buf = tail + chunk if tail else chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            raw = buf[start:nl]
            line_no += 1
            n = len(raw)
            if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            yield line_no, offset, raw[:-1] if raw.endswith(b"\r") else raw, True
            offset += n + 1
            start = nl + 1
        tail = buf[start:]
    if tail:
        line_no += 1
        raw = tail[3:] if line_no == 1 and tail.startswith(b"\xef\xbb\xbf") else tail
        yield line_no, offset, raw[:-1] if raw.endswith(b"\r") else raw, False


def decoded_arguments(value: Any, raw_key: str) -> Any:
    """A tool call's arguments as sent: a JSON string decoded, text that is not JSON kept whole
    under ``raw_key``; anything else as it is (the caller decides what a non-dict becomes)."""
    if not isinstance(value, str):
        return value
    try:
        return loads(value)
    except JSONError:
        return {raw_key: value}


def parse_json(raw: bytes) -> Any:
    """orjson; raises JSONError (a tuple of exception types) on bad input."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return loads(raw)
    except JSONError:  # NaN / Infinity / a lone surrogate as Python's json writes them, bad UTF-8
        return loads_lenient(raw)


# ---- values --------------------------------------------------------------------------------------
def iso_ms(v: Any) -> int | None:
    """ISO-8601 text (with Z or an offset) or unix seconds / milliseconds into epoch ms."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        if v != v or abs(v) > 1e15:
            return None
        return int(v * 1000) if abs(v) < 1e11 else int(v)
    if not isinstance(v, str) or len(v) > 64:
        return None
    s = v.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    m = re.match(r"^(.*\.\d{6})\d+(.*)$", s)  # more than microseconds
    if m:
        s = m.group(1) + m.group(2)
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:
        from datetime import timezone

        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v == v and abs(v) < 1e18:
        return int(v)
    return None


def as_num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)) and v == v:
        return float(v)
    return None


def as_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def as_list(v: Any) -> list:
    return v if isinstance(v, list) else []


def as_dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def text_of(content: Any, types: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    """The text of a message content: a string, or a list of blocks with text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and b.get("type", "text") in types and isinstance(b.get("text"), str):
                parts.append(b["text"])
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return ""


# ---- the problem -----------------------------------------------------------------------------------
_LEVEL = re.compile(r"level[_ ]?(\d+)", re.I)
_LEADING_ID = re.compile(r"^(\d+)_")


def kernelbench_problem(problem: Problem, level: Any = None, name: Any = None, problem_id: Any = None,
                        path: Any = None, ref: Any = None, origin: str = "") -> None:
    """Fill a Problem from KernelBench-style fields. The problem id is KernelBench's (the number
    that starts the file name, "9_Tall_skinny..." is 9), so runs match ensemble runs by level/id."""
    lv = as_int(level)
    if lv is None and isinstance(level, str):
        m = _LEVEL.search(level) or re.match(r"^\s*(\d+)\s*$", level)
        lv = int(m.group(1)) if m else None
    if lv is None and isinstance(path, str):
        m = _LEVEL.search(path)
        lv = int(m.group(1)) if m else None
    if lv is not None:
        problem.level = lv
    nm = name if isinstance(name, str) and name else None
    if nm is None and isinstance(path, str) and path:
        nm = os.path.splitext(path.replace("\\", "/").rsplit("/", 1)[-1])[0]
    if nm:
        problem.name = nm
        m = _LEADING_ID.match(nm)
        if m:
            problem.problem_id = int(m.group(1))
    if problem.problem_id is None:
        pid = as_int(problem_id)
        if pid is not None:
            problem.problem_id = pid
        elif isinstance(problem_id, str) and problem_id:
            problem.problem_id = problem_id
    if isinstance(ref, str) and ref.strip():
        problem.reference_source = ref
        problem.reference_origin = origin or "the trace's reference source"


# ---- the assembler ---------------------------------------------------------------------------------
class Assembler:
    """Builds one :class:`Run` for an importer."""

    def __init__(self, path: str, fmt: str) -> None:
        self.run = Run(path=path)
        self.run.format = fmt
        self.run.variant = fmt
        self.files = FileTracker()
        self._n_problems = 0
        self._prev_ts: int | None = None
        self._turn_prev: dict[int, int | None] = {}
        # False for a format that stamps each step once, when written, after the step's tools ran
        # (Harbor's ATIF): the time since the previous event is the model's and the tools' together,
        # not the model's, so no LLM time is derived from it
        self.llm_time_recorded = True
        self.turn_times_set = False  # True: the importer set each turn's time itself (None: unknown)
        self._by_id: dict[str, ToolCall] = {}
        self._later: dict[str, list[ToolCall]] = {}  # calls whose id an earlier waiting call has
        self._shared = 0
        self._explicit_outcome: str | None = None

    # -- problems
    def problem(self, line: int, message: str, excerpt: str = "", severity: str = "error", where: str = "") -> None:
        self._n_problems += 1
        if self._n_problems <= MAX_PROBLEMS:
            self.run.problems.append(TraceProblem(line, message, excerpt, severity, where))
        elif self._n_problems == MAX_PROBLEMS + 1:
            self.run.problems.append(TraceProblem(line, "too many problems; the rest are not listed"))

    def warn(self, line: int, message: str, where: str = "") -> None:
        self.problem(line, message, "", "warning", where)

    # -- time and events
    def ts(self, ts_ms: int | None) -> None:
        run = self.run
        if ts_ms is None:
            return
        if run.started_ms is None or ts_ms < run.started_ms:
            run.started_ms = ts_ms
        if run.ended_ms is None or ts_ms > run.ended_ms:
            run.ended_ms = ts_ms
        self._prev_ts = ts_ms

    def event(self, line: int, offset: int, length: int, kind: str, ts_ms: int | None = None,
              actor: str | None = None, turn: int | None = None) -> None:
        self.run.events.append(Event(line, offset, length, kind, None, ts_ms, actor, turn))

    # -- turns
    def turn(self, line: int, ts_ms: int | None, actor: str = "agent") -> Turn:
        t = Turn(index=len(self.run.turns), actor=actor, first_line=line, last_line=line,
                 start_ms=ts_ms, end_ms=ts_ms)
        self._turn_prev[t.index] = self._prev_ts
        self.run.turns.append(t)
        self.ts(ts_ms)
        return t

    def touch(self, t: Turn, line: int, ts_ms: int | None = None) -> None:
        t.last_line = max(t.last_line, line)
        if ts_ms is not None:
            t.end_ms = ts_ms if t.end_ms is None else max(t.end_ms, ts_ms)
            if t.start_ms is None:
                t.start_ms = ts_ms
        self.ts(ts_ms)

    @staticmethod
    def add_text(t: Turn, text: str | None) -> None:
        if isinstance(text, str) and text.strip():
            t.text = text if not t.text else t.text + "\n\n" + text

    @staticmethod
    def add_reasoning(t: Turn, text: str | None) -> None:
        if isinstance(text, str) and text.strip():
            t.reasoning = text if not t.reasoning else t.reasoning + "\n\n" + text

    def assistant_text(self, t: Turn, text: str | None, line: int) -> None:
        """Visible assistant text (the turn's text: not also a message, which would draw it
        twice); fenced kernel code in it becomes a version."""
        self.add_text(t, text)
        if isinstance(text, str) and text:
            self.files.fenced(text, t.index, line)

    def message(self, line: int, kind: str, text: str, actor: str | None = "user") -> None:
        if isinstance(text, str):
            self.run.messages.append((line, kind, actor, text))
            if kind == "user" and not self.run.problem.prompt and text.strip():
                self.run.problem.prompt = task_of(text)

    def note(self, line: int, text: str) -> None:
        self.run.notes.append((line, text))

    # -- tool calls
    def call(self, t: Turn | None, name: Any, args: Any, line: int, ts_ms: int | None = None,
             call_id: Any = None) -> ToolCall:
        if not isinstance(name, str) or not name:
            self.warn(line, f"tool call without a string name ({type(name).__name__})")
            name = str(name) if name is not None else "?"
        if not isinstance(args, dict):
            args = {"value": args} if args is not None else {}
        cid = call_id if isinstance(call_id, str) and call_id else None
        c = ToolCall(index=len(self.run.calls), name=name, args=args, line=line, ts_ms=ts_ms, id=cid,
                     actor=t.actor if t else None, turn=t.index if t else None)
        self.run.calls.append(c)
        if t is not None:
            t.add_call(c)
            self.touch(t, line, ts_ms)
        if cid:
            if cid in self._by_id and self._by_id[cid].result is None:
                # parallel calls given one id (a proxy's or a model's ids): results pair in order
                self._later.setdefault(cid, []).append(c)
                self._shared += 1
            else:
                self._by_id[cid] = c
        return c

    def pending(self, call_id: Any) -> ToolCall | None:
        c = self._by_id.get(call_id) if isinstance(call_id, str) else None
        if c is not None and c.result is not None and call_id in self._later:
            queue = self._later[call_id]
            c = self._by_id[call_id] = queue.pop(0)
            if not queue:
                del self._later[call_id]
        return c if c is not None and c.result is None else None

    def result(self, c: ToolCall, text: Any, line: int, ts_ms: int | None = None, *, status: str | None = None,
               is_error: bool = False, effect: dict[str, Any] | None = None) -> ToolResult:
        if not isinstance(text, str):
            text = text_of(text) if isinstance(text, list) else ("" if text is None else str(text))
        ev = evidence(text)
        st = status or shell_status(text, is_error, ev=ev)
        r = ToolResult(line=line, ts_ms=ts_ms, status=st, summary=text, effect=effect, is_error=is_error)
        if c.result is not None:
            self.warn(line, f"a second result for call #{c.index} ({c.name}); the first is kept")
            return r
        c.result = r
        if c.turn is not None:
            self.touch(self.run.turns[c.turn], line, ts_ms)
        else:
            self.ts(ts_ms)
        if ev is not None and not self._is_write(c):
            self.files.tested(c, ev, self.command_of(c))
        if text and self._is_write(c):
            for k in ("file_path", "path", "filename", "file", "target_file", "absolutePath"):
                if isinstance(c.args.get(k), str) and c.args[k]:
                    self.files.learn(c.args[k], text)
                    break
        return r

    @staticmethod
    def _is_write(c: ToolCall) -> bool:
        a = c.args
        return any(isinstance(a.get(k), str) for k in ("content", "new_string", "file_text")) and \
            not isinstance(a.get("command"), str)

    @staticmethod
    def command_of(c: ToolCall) -> str:
        a = c.args
        for k in ("command", "cmd", "keystrokes", "input", "script"):
            v = a.get(k)
            if isinstance(v, str):
                return v
            if isinstance(v, list):
                return " ".join(str(x) for x in v)
        return ""

    # -- writes through tools (the common shapes)
    def track_call(self, c: ToolCall, cwd: str | None = None) -> None:
        """Recover file writes from a call's arguments, whatever the tool is called."""
        a, t, line = c.args, c.turn, c.line
        name = c.name.lower()
        path = None
        for k in ("file_path", "path", "filename", "file", "target_file", "absolutePath"):
            if isinstance(a.get(k), str) and a[k]:
                path = a[k]
                break
        if path is not None:
            p = self.files.locate(path, cwd)
            if isinstance(a.get("content"), str) and ("edit" not in name):
                self.files.write(p, a["content"], c, t, line, f"{c.name} content")
                return
            if isinstance(a.get("file_text"), str):  # str_replace_editor create
                self.files.write(p, a["file_text"], c, t, line, f"{c.name} file_text")
                return
            old = a.get("old_string", a.get("old_str"))
            new = a.get("new_string", a.get("new_str"))
            if isinstance(old, str) and isinstance(new, str):
                err = self.files.edit(p, old, new, c, t, line, a.get("replace_all") is True, c.name)
                if err:
                    self.warn(line, err)
                return
            blocks = search_replace_blocks(a.get("diff"))
            if blocks:  # Cline / Roo ``replace_in_file``: SEARCH / REPLACE blocks, applied in order
                for i, (o, n) in enumerate(blocks):
                    err = self.files.edit(p, o, n, c, t, line, False, f"{c.name} block {i + 1}")
                    if err:
                        self.warn(line, err)
                return
            edits = a.get("edits")
            if isinstance(edits, list):
                for i, e in enumerate(edits):
                    if isinstance(e, dict):
                        err = self.files.edit(p, e.get("old_string"), e.get("new_string"), c, t, line,
                                              e.get("replace_all") is True, f"{c.name} edit {i + 1}")
                        if err:
                            self.warn(line, err)
                return
        cmd = self.command_of(c)
        if cmd:
            if "*** Begin Patch" in cmd:
                body = cmd[cmd.index("*** Begin Patch"):]
                for err in self.files.patch(body, c, t, line, cwd):
                    self.warn(line, err)
            else:
                self.files.shell(cmd, c, t, line, cwd)

    # -- scores
    def outcome(self, outcome: str, score: float | None = None, text: str = "", line: int = 0,
                kind: str = "score") -> None:
        self._explicit_outcome = outcome
        if score is not None:
            self.run.final_score = score
        self.run.terminal.append(Terminal(kind, text, line, score))

    # -- the end
    def finish(self) -> Run:
        run = self.run
        if self._shared:
            self.note(0, f"{count(self._shared, 'tool call')} {plural(self._shared, 'shares', 'share')} the id of an earlier call (ids given twice by the model or a "
                         "proxy): their results are paired with them in order")
        self.files.finish(run)
        fk = run.final_kernel
        if fk is not None and run.backend is None:
            run.backend = backend_of(fk.code)
        run.notes.extend(self.files.notes)
        _timing(run, self._turn_prev, self.llm_time_recorded, not self.turn_times_set)
        if self._explicit_outcome is not None:
            run.outcome = self._explicit_outcome
        elif run.metrics is not None and run.metrics.correct is not None:
            run.outcome = PASSED if run.metrics.correct else OUTCOME_FAILED
        else:
            run.outcome = INCOMPLETE
        run.terminal = [t for t in run.terminal if t.kind not in ("dangling_call", "eof")]
        for c in run.calls:
            if c.result is None and c.turn is not None:
                run.terminal.append(Terminal("dangling_call", f"{c.name} called at line {c.line} has no result",
                                             c.line))
        if not run.terminal:
            last = run.turns[-1].last_line if run.turns else 0
            run.terminal.append(Terminal("eof", f"trace ends at line {last}: no outcome recorded", last))
        if run.model is None:
            models = [a.model for a in run.actors if a.model]
            run.model = models[0] if models else None
        derive_flags(run)
        if not run.events and not run.problems:
            run.problems.append(TraceProblem(0, "empty trace: nothing to read", "", "error"))
        return run


def _norm(path: str, cwd: str | None) -> str:
    from ktui.trace.importers.kernels import norm_path

    return norm_path(path, cwd)


def _timing(run: Run, prev: dict[int, int | None], llm: bool = True, wall: bool = True) -> None:
    """Each turn's LLM time (since the event before it, where ``llm``), tool time (its calls'
    durations) and time (since the event before it, to its last event, where ``wall``), where not
    already set."""
    for t in run.turns:
        before = prev.get(t.index)
        if llm and t.llm_ms is None and before is not None and t.start_ms is not None:
            t.llm_ms = max(0, t.start_ms - before)
        if t.tool_ms is None:
            durs = [c.duration_ms for c in t.calls if c.duration_ms is not None]
            t.tool_ms = sum(durs) if durs else None
        if wall and t.wall_ms is None and t.end_ms is not None:
            base = before if before is not None else t.start_ms
            if base is not None:
                t.wall_ms = max(0, t.end_ms - base)


def excerpt(raw: bytes, n: int = 60) -> str:
    s = raw[:n].decode("utf-8", "replace")
    s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in s)
    return s + ("…" if len(raw) > n else "")


def bad_json_line(asm: Assembler, no: int, raw: bytes, term: bool, exc: Exception) -> None:
    """A JSON-lines line that does not parse: the unterminated last line marks the run incomplete
    (still being written, or cut); any other is a problem with an excerpt."""
    if not term:
        asm.run.incomplete = True
        return
    asm.problem(no, f"not valid JSON ({str(exc).split(':', 1)[0][:80]})", excerpt(raw))


_TORN_TRIES = 16


def torn_prefix(raw: bytes) -> tuple[int, dict | None]:
    """A line that starts with an unfinished record and then holds a whole one (two writers, or a
    write cut off and redone, without a newline between): (bytes before the whole record, it), or
    (0, None). The whole record is looked for where the line's opening (``{"key":``) starts again."""
    head = raw.lstrip()[:24]
    q = head.find(b'":')
    if not head.startswith(b'{"') or q < 0:
        return 0, None
    sig = head[:q + 2]
    p = raw.find(sig, 1)
    tries = 0
    while p > 0 and tries < _TORN_TRIES:
        tries += 1
        try:
            obj = parse_json(raw[p:])
        except JSONError:
            p = raw.find(sig, p + 1)
            continue
        return (p, obj) if isinstance(obj, dict) else (0, None)
    return 0, None


def object_lines(asm: Assembler, path: str, data: bytes | None = None, on_bad: Any = None,
                 on_other: Any = None) -> Iterator[tuple[int, int, bytes, dict]]:
    """(line number, byte offset, raw line, object) for each line of a JSON-lines source that holds
    a JSON object. Blank lines are skipped; a line that does not parse goes to :func:`bad_json_line`
    (or ``on_bad(no, raw, term, exc)``), one that holds no object is a problem (or
    ``on_other(no, obj)``). Once the lines run out, the run's ``size_bytes`` is set."""
    size = 0
    for no, off, raw, term in iter_lines(path, data):
        size = off + len(raw) + (1 if term else 0)
        if not raw.strip():
            continue
        try:
            obj = parse_json(raw)
        except JSONError as exc:
            cut, obj = torn_prefix(raw)
            if obj is None:
                (on_bad or (lambda n, r, t, e: bad_json_line(asm, n, r, t, e)))(no, raw, term, exc)
                continue
            asm.warn(no, f"the first {cut:,} bytes are an unfinished record (a write cut off, then the record "
                         f"written again on the same line): the complete record after them is kept")
            raw, off = raw[cut:], off + cut
        if not isinstance(obj, dict):
            if on_other is not None:
                on_other(no, obj)
            else:
                asm.problem(no, f"line is a JSON {type(obj).__name__}, not an object", excerpt(raw))
            continue
        yield no, off, raw, obj
    asm.run.size_bytes = size


__all__ = ["Assembler", "JSONError", "TooBig", "as_dict", "as_int", "as_list", "as_num", "as_str", "bad_json_line",
           "excerpt", "iso_ms", "iter_lines", "kernelbench_problem", "object_lines", "parse_json", "read_bounded", "shell_status", "text_of", "exit_code",
           "ERROR", "FAILED", "OK"]
