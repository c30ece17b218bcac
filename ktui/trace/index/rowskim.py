"""The row skim: an ensemble trace's runs-table row without the full reader and builder.

The sweep index's cost was the reader and the builder on every line (70-75 % of a cold scan's
CPU: the generic line path, the event log's columns, the messages' rows, a turn touched per
event). A row needs less: the turns' boundaries and tokens, the calls and their results (status,
metrics, kernels), the diffs, the notes. :func:`row_run` reads a file's lines in one loop that
decodes each with orjson and handles each kind in place (a cost event, half the lines of a
popcorn trace, in a few steps), and builds only the parts of a :class:`~ktui.trace.model.Run`
that a row reads; what depends on the whole run (kernel versions, metrics, outcome, terminal
state, flags and the static findings) is derived by the same functions the builder calls
(:mod:`ktui.trace.derive`), so every field keeps the rules of ``ktui show``.

It reads the ensemble format's well-formed lines only. Anything else gives up (``None``): a line
that is not JSON or not a clean envelope (the full reader says why, line by line), a CR-only
file, a file over one chunk, a line over the line limit, nesting deeper than the model keeps.
The caller (:func:`ktui.trace.index.skim.summarize`) then reads the file the full way (the row is
the same either way; :data:`stats` counts the files each read, ``KTUI_ROW_SKIM=0`` turns the row
skim off for comparisons).
``tests/test_index_rowskim.py`` compares the rows of the two, field by field, on every trace held.
"""

from __future__ import annotations

from typing import Any, cast

from ktui.trace import builder_notes, derive
from ktui.trace.lazy import call_args, diff_items, result_fields
from ktui.trace.lines import MAX_DEPTH, cap_depth, line_separator, max_line_bytes
from ktui.trace.model import V0, V1, V2, V3, Event, Run, ToolCall, ToolResult, TraceProblem, Turn, kernel_info
from ktui.trace.notes import JSONError, fenced_code, loads, split_think
from ktui.trace.rows import Rows

# the builder's rules (ktui.trace.builder), restated for the kinds a row reads
_TOKEN_UNITS = frozenset({"tokens_in", "tokens_out", "tokens_reasoning", "usd"})
_AFTER_TOOL = ("tool_result", "state_diff")
_FETCH = ("fetch_problem", "fetch_translation_problem")
# kinds whose handler reads only strings and numbers at the top of the payload: nesting is moot
_SHALLOW = frozenset({"system", "user_message", "assistant_message", "agent_message", "cost", "progress",
                      "tool_timeout"})
_BIG = 1 << 62
# the messages a row reads: the first 20 (ktui.trace.results.reference looks for the prompt there)
_MESSAGES_READ = 20
_SCALARS = frozenset({str, int, float, bool, type(None)})

stats = {"row": 0, "full": 0}  # files read by the row skim, and given up to the full reader


class GiveUp(Exception):
    """A line or a file the row skim does not read: the full reader does."""


class _Rows:
    """What a row is built from: the builder's state for the kinds a row reads, without the
    event log, the line offsets or the reading back of long lines."""

    def __init__(self, path: str) -> None:
        self.run = Run(path=path)
        self.evidence: set[str] = set()
        self.actors_seen: set[str | None] = set()
        self.current: dict[str | None, Turn | None] = {}
        self.pending: dict[int, ToolCall] = {}
        self.pending_by_id: dict[str, ToolCall] = {}
        self.pending_by_name: dict[str, dict[int, ToolCall]] = {}
        self.final_turn: Turn | None = None
        self.last_kind: str | None = None
        self.last_token_actor: str | None = None
        self.has_token_costs = False
        self.last_call_by_actor: dict[str | None, ToolCall] = {}
        self.orphan_diffs: list[tuple[int, list[dict[str, Any]]]] = []
        self.final_answers: list[tuple[int, int | None, str]] = []
        self.n_problems = 0
        self._tool_sets: dict[tuple[str, ...], list[str]] = {}

    # ---- what builder_notes.on_system calls on its builder ----------------------------------
    def problem(self, line: int, message: str, excerpt: str = "", severity: str = "error") -> None:
        self.n_problems += 1
        if self.n_problems <= 1000:
            self.run.problems.append(TraceProblem(line, message, excerpt, severity))
        elif self.n_problems == 1001:
            self.run.problems.append(TraceProblem(line, "too many problems; the rest are not listed", "", "error"))

    def _s(self, s: str) -> str:
        return s

    _one = _s

    def _evid(self, variant: str) -> None:
        self.evidence.add(variant)

    def _close_turns(self) -> None:
        for k in self.current:
            self.current[k] = None

    # ---- turns ------------------------------------------------------------------------------
    def new_turn(self, line: int, ts: int, actor: str | None) -> Turn:
        run = self.run
        t = Turn(index=len(run.turns), actor=actor, first_line=line, last_line=line, start_ms=ts, end_ms=ts)
        run.turns.append(t)
        self.current[actor] = t
        return t

    @staticmethod
    def touch(t: Turn, line: int, ts: int) -> None:
        if line > t.last_line:
            t.last_line = line
        if t.end_ms is None or ts > t.end_ms:
            t.end_ms = ts
        if t.start_ms is None:
            t.start_ms = ts

    # ---- kinds ------------------------------------------------------------------------------
    def envelope_evidence(self, obj: dict[str, Any]) -> None:
        mid = obj.get("message_id")
        if type(mid) is str and mid.startswith("msg-"):
            self.evidence.add(V1)
        if "costs" in obj:
            self.evidence.add(V0)

    def cost(self, line: int, ts: int, actor: str | None, p: dict[str, Any], last_kind: str | None) -> None:
        """A cost event: the builder's ``_on_cost``, in its order (an error is its problem of the
        line); the one path for every cost line (half the lines of a popcorn trace)."""
        self.evidence.add(V1)
        unit, amount = p.get("unit"), p.get("amount")
        if type(unit) is not str or type(amount) is not float and type(amount) is not int:  # orjson's types
            if not isinstance(unit, str) or not isinstance(amount, (int, float)) or isinstance(amount, bool):
                self.problem(line, "cost event without a string 'unit' and a numeric 'amount'", "", "warning")
                return
        try:
            key = actor or "-"
            by = self.run.tokens_by_actor.get(key)
            if by is None:
                by = self.run.tokens_by_actor[key] = {}
            by[unit] = by.get(unit, 0) + amount
            if actor is not None and unit in _TOKEN_UNITS:
                self.has_token_costs = True
                t = self.current.get(actor)
                if t is None or last_kind != "cost" or self.last_token_actor != actor:
                    t = self.new_turn(line, ts, actor)
                else:
                    if line > t.last_line:
                        t.last_line = line
                    if t.end_ms is None or ts > t.end_ms:
                        t.end_ms = ts
                self.last_token_actor = actor
                if unit == "tokens_in":
                    t.tokens_in = (t.tokens_in or 0) + int(amount)
                elif unit == "tokens_out":
                    t.tokens_out = (t.tokens_out or 0) + int(amount)
                elif unit == "tokens_reasoning":
                    t.tokens_reasoning = (t.tokens_reasoning or 0) + int(amount)
                else:
                    t.usd = (t.usd or 0.0) + float(amount)
                return
            self.last_token_actor = None
            t = self.current.get(actor)
            if t is not None:
                self.touch(t, line, ts)
                if unit == "gpu_seconds":
                    t.gpu_seconds = (t.gpu_seconds or 0.0) + float(amount)
        except Exception as exc:  # noqa: BLE001 - int(inf) where json, not orjson, decodes
            self.problem(line, f"could not interpret 'cost' event ({type(exc).__name__}: {exc})")

    def message(self, kind: str, line: int, ts: int, actor: str | None, text: str,
                reasoning: str | None = None) -> None:
        t = self.current.get(actor)
        if t is None or t.calls:
            t = self.new_turn(line, ts, actor)
        self.touch(t, line, ts)
        if kind == "agent_message":
            pass  # its text is the turn's reasoning or text (derive.agent_message_text): no row reads it
        else:
            if reasoning:
                t.reasoning = reasoning if not t.reasoning else t.reasoning + "\n\n" + reasoning
            if text:
                t.text = text if not t.text else t.text + "\n\n" + text
                if "```" in text:
                    code = fenced_code(text)
                    if code:
                        self.final_answers.append((line, t.index, code))
        self.add_message(line, kind, actor, text)

    def add_message(self, line: int, kind: str, actor: str | None, text: str) -> None:
        m = self.run.messages
        if len(m) >= _MESSAGES_READ:
            return
        if type(m) is Rows:
            m.add_message(line, kind, actor, text)
        else:
            m.append((line, kind, actor, text))

    def other(self, kind: str, line: int, ts: int, actor: str | None, p: dict[str, Any]) -> None:
        """Every kind but cost and the tool calls and results (handled in the loop)."""
        if kind == "system":
            ev = Event(line, 0, 0, kind, None, ts, actor)
            try:
                builder_notes.on_system(cast(Any, self), ev, p)
            except AttributeError as exc:
                if exc.obj is self:  # the notes' code asks its builder for more than this reads
                    raise GiveUp from None
                self.problem(line, f"could not interpret '{kind}' event ({type(exc).__name__}: {exc})")
            except Exception as exc:  # noqa: BLE001 - as the builder: never raise on data
                self.problem(line, f"could not interpret '{kind}' event ({type(exc).__name__}: {exc})")
        elif kind == "agent_message" or kind == "assistant_message":
            if kind == "assistant_message":
                self.evidence.add(V2)
            text = p.get("text")
            if not isinstance(text, str):
                self.problem(line, f"{kind} without a string 'text'", "", "warning")
                return
            self.message(kind, line, ts, actor, text)
        elif kind == "user_message":
            text = p.get("text")
            if not isinstance(text, str):
                self.problem(line, "user_message without a string 'text'", "", "warning")
                return
            if len(text) >= 64 and actor == "harness" and len(text) > 200 and not self.run.problem.prompt:
                self.run.problem.prompt = text
                derive.problem_from_prompt(self.run.problem, text)
            self.add_message(line, kind, actor, text)
        elif kind == "message":
            self.evidence.add(V3)
            content = p.get("content")
            if isinstance(content, list):
                content = "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
            if not isinstance(content, str):
                self.problem(line, "message without a string 'content'", "", "warning")
                return
            if p.get("role", "assistant") != "assistant":
                if len(self.run.messages) < _MESSAGES_READ:
                    self.run.messages.append((line, f"message:{p.get('role')}", actor, content))
                return
            reasoning, visible = split_think(content)
            self.message(kind, line, ts, actor, visible, reasoning)
        elif kind == "state_diff":
            items = diff_items(p)
            if not items:
                self.problem(line, "state_diff without a diff object", "", "warning")
                return
            call = self.last_call_by_actor.get(actor)
            if call is not None:
                call.add_diffs(items, line)
                if call.turn is not None:
                    self.touch(self.run.turns[call.turn], line, ts)
            else:
                self.orphan_diffs.append((line, items))
        else:  # progress, tool_timeout, a kind the builder does not know
            t = self.current.get(actor)
            if t is not None:
                self.touch(t, line, ts)

    def tool_call(self, line: int, ts: int, actor: str | None, p: dict[str, Any]) -> None:
        name = p.get("name")
        if not isinstance(name, str):
            self.problem(line, "tool_call without a string 'name'")
            return
        args = p.get("args", {})
        if type(args) is not dict:
            if not isinstance(args, dict):
                self.problem(line, f"tool_call '{name}': 'args' is {type(args).__name__}, expected an object",
                             "", "warning")
            args = call_args(p)
        seed = False
        if "seed" in p:
            self.evidence.add(V1)
            seed = p["seed"] is True
        code = args.get("kernel_code")
        if not isinstance(code, str):
            code = None
        cid = p.get("id")
        if not isinstance(cid, str):
            cid = None
        calls = self.run.calls
        index = len(calls)
        call = ToolCall(index, name, args, line, ts, cid, actor, seed)
        if code is not None:
            call._kinfo = kernel_info(code)
        calls.append(call)
        self.pending[index] = call
        by_name = self.pending_by_name.get(name)
        if by_name is None:
            by_name = self.pending_by_name[name] = {}
        by_name[index] = call
        if cid:
            self.pending_by_id.setdefault(cid, call)
        self.last_call_by_actor[actor] = call
        if self.orphan_diffs:
            for dline, items in self.orphan_diffs:
                call.add_diffs(items, dline)
            self.orphan_diffs = []
        if seed:
            return
        t = self.current.get(actor)
        if t is None or (not self.has_token_costs and self.last_kind in _AFTER_TOOL):
            t = self.new_turn(line, ts, actor)
        self.touch(t, line, ts)
        call.turn = t.index
        t.add_call(call)
        if name == "submit_kernel":
            if self.final_turn is not None:
                self.final_turn.is_final = False
            t.is_final = True
            self.final_turn = t

    def tool_result(self, line: int, ts: int, p: dict[str, Any]) -> None:
        name = p.get("name")
        if not isinstance(name, str):
            name = None
        cid = p.get("id")
        if not isinstance(cid, str):
            cid = None
        if "seed" in p:
            self.evidence.add(V1)
        if cid is None and "text" in p and "result" not in p:
            self.evidence.add(V2)
        call = None
        if cid:
            call = self.pending_by_id.get(cid)
        if call is None:
            if name is not None:
                same = self.pending_by_name.get(name)
                call = next(iter(same.values())) if same else None
            else:
                call = next(iter(self.pending.values()), None)
        if call is None:
            self.problem(line, f"tool_result for '{name}' has no pending call", "", "warning")
            return
        index, cname = call.index, call.name
        del self.pending[index]
        del self.pending_by_name[cname][index]
        pid = call._id
        if pid and self.pending_by_id.get(pid) is call:
            del self.pending_by_id[pid]
        if cid is None and cname != name and name is not None:
            self.problem(line, f"tool_result '{name}' paired with call '{cname}'", "", "warning")
        summary, effect, meta, costs = result_fields(cname, p)
        if costs is not None:
            self.evidence.add(V0)
            gs = costs.get("gpu_seconds")
            t = self.run.turns[call.turn] if call.turn is not None else None
            if t is not None and isinstance(gs, (int, float)):
                t.gpu_seconds = (t.gpu_seconds or 0.0) + float(gs)
        status = derive.result_status(cname, effect, summary, meta, p.get("is_error") is True)
        call.result = ToolResult(line, ts, status, summary, effect, meta, p.get("is_error") is True)
        if call.turn is not None:
            self.touch(self.run.turns[call.turn], line, ts)
        if effect and (cname in _FETCH or call.seed and cname == "fetch_problem"):
            derive.problem_from_fetch(self.run.problem, effect, line)

    # ---- the run ------------------------------------------------------------------------------
    def finish(self, n_events: int) -> Run:
        """:meth:`ktui.trace.builder.Builder.finish` for a row: the same derivations, less what
        no row reads (the turns' timing, the agent messages' split into reasoning and text, the
        messages past the first 20)."""
        run = self.run
        run.variant = derive.variant(self.evidence, self.actors_seen, self.has_token_costs)
        derive.kernel_versions(run, self.final_answers)
        derive.metrics_and_outcome(run)
        derive.terminal_state(run, True)
        derive.flags(run, findings=True)
        run.n_events = n_events
        run.revision += 1
        if not n_events and not run.problems:
            if run.incomplete:
                run.problems.append(TraceProblem(0, "incomplete: the only line is still being written", "",
                                                 "error"))
            else:
                run.problems.append(TraceProblem(0, "empty file: no events", "", "error"))
        return run


def row_run(path: str, data: bytes) -> Run | None:
    """The run a row is made from, read from ``data`` (the whole file), or None where the row
    skim gives up (see the module's docstring): the caller reads the file the full way."""
    if not data or line_separator(data[:65536]) != b"\n" or len(data) > max_line_bytes():
        return None
    try:
        return _read(path, data)
    except GiveUp:
        return None
    except RecursionError:
        return None


def _flat_args(p: dict[str, Any]) -> bool:
    """A tool call whose arguments are an object of strings and numbers: nested three deep at
    most, whatever its brackets (a kernel's source has hundreds)."""
    args = p.get("args")
    return type(args) is dict and _SCALARS.issuperset(map(type, args.values()))


def _envelope(obj: Any) -> tuple[dict[str, Any], str, int, str | None]:
    """``(payload, kind, ts_ms, actor)`` of a line the builder's fast path takes (an object
    with an object payload, a non-empty string kind, integer tick and ts_ms in range, a string or
    no actor); GiveUp for any other (the full reader checks it field by field)."""
    if type(obj) is not dict:
        raise GiveUp
    p = obj.get("payload")
    if type(p) is not dict:
        raise GiveUp
    kind, tick, ts, actor = p.get("kind"), obj.get("tick"), obj.get("ts_ms"), obj.get("actor")
    if not (type(kind) is str and kind and type(tick) is int and type(ts) is int
            and (actor is None or type(actor) is str) and -_BIG < ts < _BIG):
        raise GiveUp
    return p, kind, ts, actor


def _read(path: str, data: bytes) -> Run:
    b = _Rows(path)
    run = b.run
    lines = data.split(b"\n")
    partial = lines.pop()  # b"" when the file ends with a newline
    if lines and lines[0][:3] == b"\xef\xbb\xbf":
        raise GiveUp  # a byte order mark: the full reader strips it
    actors_seen = b.actors_seen
    tool_call, tool_result, other, cost, problem = b.tool_call, b.tool_result, b.other, b.cost, b.problem
    tmin, tmax = _BIG, -_BIG
    n_events = line_no = 0
    last_kind: str | None = None
    last_actor: Any = _BIG  # the actor of the line before (actors_seen has it): no actor is this
    loads_ = loads
    n_lines = len(lines)
    deep = 2 * MAX_DEPTH  # a line this short cannot nest deeper than MAX_DEPTH
    if partial:
        lines.append(partial)
    for raw in lines:
        line_no += 1
        try:
            obj = loads_(raw)
        except JSONError:
            if len(raw) < 16 and not raw.strip():
                continue  # a blank line
            if line_no > n_lines:  # the last line, still being written
                run.incomplete = True
                break
            raise GiveUp from None
        try:  # the common line, without a call per field (``p["kind"]`` fails on all but a dict)
            p = obj["payload"]
            kind, ts, actor = p["kind"], obj["ts_ms"], obj["actor"]
            if not (type(kind) is str and kind and type(obj["tick"]) is int and type(ts) is int
                    and (actor is None or type(actor) is str) and -_BIG < ts < _BIG):
                raise GiveUp
        except (KeyError, TypeError, IndexError, GiveUp):
            p, kind, ts, actor = _envelope(obj)
        if len(raw) > deep and kind not in _SHALLOW and not (kind == "tool_call" and _flat_args(p)) \
                and raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
            p = cap_depth(obj, MAX_DEPTH)["payload"]
        if ts < tmin:
            tmin = ts
        if ts > tmax:
            tmax = ts
        if actor is None or len(obj) > 4:
            if obj.get("message_id") is not None or "costs" in obj:  # what can be evidence
                b.envelope_evidence(obj)
        if actor != last_actor:
            actors_seen.add(actor)
            last_actor = actor
        n_events += 1
        if kind == "cost":
            cost(line_no, ts, actor, p, last_kind)
        else:
            b.last_kind = last_kind
            try:  # an error is the builder's problem of the line; GiveUp: the full reader reads the file
                if kind == "tool_call":
                    tool_call(line_no, ts, actor, p)
                elif kind == "tool_result":
                    tool_result(line_no, ts, p)
                else:
                    other(kind, line_no, ts, actor, p)
            except GiveUp:
                raise
            except Exception as exc:  # noqa: BLE001 - as the builder: never raise on data
                problem(line_no, f"could not interpret '{kind}' event ({type(exc).__name__}: {exc})")
        last_kind = kind
    run.started_ms = None if tmin == _BIG else tmin
    run.ended_ms = None if tmax == -_BIG else tmax
    return b.finish(n_events)
