"""Builds a :class:`Run` from validated events, incrementally.

``add()`` handles one event: variant evidence, run-level facts from notes, turn segmentation
(format doc, section 5), result-to-call pairing (by id, else the first pending call of that
name, else the first pending call), state diffs, costs. ``finish()`` derives what depends on
the whole run (timing, kernel versions, metrics, outcome, terminal state, flags); it can be
called again after more events arrive (follow mode).
"""

from __future__ import annotations

from typing import Any

from ktui.trace import builder_notes, derive
from ktui.trace.lazy import LineSource, call_args, diff_items, lazy_min, result_parts, result_summary
from ktui.trace.model import (
    ERROR,
    FAILED,
    OK,
    READ_BACK,
    V0,
    V1,
    V2,
    V3,
    Event,
    ResultTable,
    Run,
    ToolCall,
    ToolResult,
    TraceProblem,
    Turn,
    kernel_info,
)
from ktui.trace.notes import fenced_code, split_think
from ktui.trace.rows import Rows
from ktui.trace.toolresult import brief_text, case_errors

TOKEN_UNITS = {"tokens_in", "tokens_out", "tokens_reasoning", "usd"}
_AFTER_TOOL = ("tool_result", "state_diff")  # a message or call after these starts a turn (without token costs)
_FETCH = ("fetch_problem", "fetch_translation_problem")
# kinds whose handlers read only strings and numbers at the top of the payload and keep nothing
# else of it (unknown kinds too): how deep the rest nests changes nothing they build
_SHALLOW = frozenset({"system", "user_message", "assistant_message", "agent_message", "cost", "progress",
                      "tool_timeout"})
MAX_PROBLEMS = 1000


class Builder:
    def __init__(self, path: str, keep_events: bool = True, source: LineSource | None = None) -> None:
        """``source``: the file the events are read from; an event whose line is at least
        :func:`~ktui.trace.lazy.lazy_min` bytes long keeps only where it is, and its arguments or
        result are read back from there on demand (:mod:`ktui.trace.lazy`)."""
        self.run = Run(path=path)
        self.keep_events = keep_events
        self._src = source if keep_events else None  # read back by offset: needs the events
        if self._src is not None:
            self._src.events = self.run.events  # where each line is
        self._results = ResultTable(self._src)  # the results read back from the file, by column
        self._lazy_min = lazy_min()
        self.n_events = 0  # counted whether or not the events are kept
        self._actors_seen: set[str | None] = set()
        self._evidence: set[str] = set()  # variants whose markers were seen
        self._current: dict[str | None, Turn | None] = {}  # open turn per actor
        self._pending: dict[int, ToolCall] = {}  # calls still waiting for a result, by call index
        self._pending_by_id: dict[str, ToolCall] = {}
        self._pending_by_name: dict[str, dict[int, ToolCall]] = {}
        self._final_turn: Turn | None = None
        self._last_kind: str | None = None
        self._last_token_actor: str | None = None
        self._prev_ts: int | None = None  # ts of the event before the current one
        self._turn_prev_ts: dict[int, int | None] = {}  # turn index -> ts before its first event
        self._msgs: dict[int, list[str]] = {}  # turn index -> agent_message texts (V1)
        self._has_token_costs = False
        self._intern: dict[str, str] = {}
        self._tool_sets: dict[tuple[str, ...], list[str]] = {}
        self._kinfos: dict[tuple[str, int, bool], tuple[str, int, bool]] = {}
        self._names: dict[str, str] = {}  # short names (kinds, actors, tools), one object each
        self._last_call_by_actor: dict[str | None, ToolCall] = {}
        self._orphan_diffs: list[tuple[int, list[dict[str, Any]]]] = []  # (line, entries) before any call
        self._final_answers: list[tuple[int, int | None, str]] = []  # (line, turn, code)
        self._n_problems = 0
        self._dispatch = {kind: getattr(self, name) for kind, name in _HANDLERS.items()}
        # the fast path's tables (LineParser.feed_batch): kind -> (its index in the event log, the
        # kind's one string, its handler); actor -> (index, the actor's one string)
        self._kinds: dict[str, tuple[int, str, Any, int]] = {}
        self._actors: dict[str | None, tuple[int, str | None]] = {}
        self._scratch = Event(0, 0, 0, "")  # the event handed to the handlers by the fast path

    def kind_entry(self, kind: str) -> tuple[int, str, Any, int]:
        """The fast path's entry for a kind seen for the first time (a non-empty string): its
        index in the event log, its one string, its handler, and whether the nesting of its
        payload matters (0: yes; 1: no, the handler reads only strings and numbers at its top
        level and keeps none of it; 2: not when the line is read back on demand)."""
        kind = self._names.setdefault(kind, kind)
        kid = self.run.events._intern(kind) if self.keep_events else 0
        depth = 1 if kind in _SHALLOW or kind not in self._dispatch else 2 if kind == "tool_call" else 0
        got = self._kinds[kind] = (kid, kind, self._dispatch.get(kind, self._on_unknown), depth)
        return got

    def actor_entry(self, actor: str | None) -> tuple[int, str | None]:
        """The fast path's entry for an actor seen for the first time (a string or None)."""
        if actor is not None:
            actor = self._names.setdefault(actor, actor)
        self._actors_seen.add(actor)
        aid = self.run.events._intern(actor) if self.keep_events else 0
        got = self._actors[actor] = (aid, actor)
        return got

    def envelope_evidence(self, envelope: dict[str, Any]) -> None:
        """Variant evidence from the envelope's own fields (besides tick, ts_ms, actor, payload)."""
        mid = envelope.get("message_id")
        if mid is not None and type(mid) is str and mid.startswith("msg-"):
            self._evidence.add(V1)
        if "costs" in envelope:
            self._evidence.add(V0)

    # ---- helpers ---------------------------------------------------------------------------
    def problem(self, line: int, message: str, excerpt: str = "", severity: str = "error") -> None:
        self._n_problems += 1
        if self._n_problems <= MAX_PROBLEMS:
            self.run.problems.append(TraceProblem(line, message, excerpt, severity))
        elif self._n_problems == MAX_PROBLEMS + 1:
            self.run.problems.append(TraceProblem(line, "too many problems; the rest are not listed",
                                                  "", "error"))

    def _s(self, s: str) -> str:
        """Intern long strings so replicated content is stored once."""
        if len(s) < 64:
            return s
        return self._intern.setdefault(s, s)

    def _one(self, s: str) -> str:
        """One string per distinct value, whatever its length (notes, actors: a file of many runs
        repeats them)."""
        return self._intern.setdefault(s, s)

    def _add_message(self, line: int, kind: str, actor: str | None, text: str) -> None:
        m = self.run.messages
        if type(m) is Rows:  # bound once: the builder's run keeps its Rows
            self._add_message = m.message_adder()  # type: ignore[method-assign]
            self._add_message(line, kind, actor, text)
        else:  # a run whose messages were replaced by a list
            m.append((line, kind, actor, text))

    def _evid(self, variant: str) -> None:
        self._evidence.add(variant)

    def _new_turn(self, ev: Event, actor: str | None) -> Turn:
        t = Turn(index=len(self.run.turns), actor=actor, first_line=ev.line, last_line=ev.line,
                 start_ms=ev.ts_ms, end_ms=ev.ts_ms)
        self.run.turns.append(t)
        self._current[actor] = t
        self._turn_prev_ts[t.index] = self._prev_ts
        return t

    def _touch(self, t: Turn, ev: Event) -> None:
        if ev.line > t.last_line:
            t.last_line = ev.line
        ts = ev.ts_ms
        if ts is not None:
            end = t.end_ms
            if end is None or ts > end:
                t.end_ms = ts
            if t.start_ms is None:
                t.start_ms = ts
        ev.turn = t.index

    def _close_turns(self) -> None:
        for k in self._current:
            self._current[k] = None

    # ---- the event dispatcher --------------------------------------------------------------
    def add(self, ev: Event, payload: dict[str, Any], envelope: dict[str, Any]) -> None:
        """One event (the slow path: lines the fast path of :meth:`LineParser.feed_batch` leaves,
        events decoded elsewhere). The same steps as the fast path, one at a time."""
        run = self.run
        names = self._names  # kinds and actors: one string each, shared by every message, call and turn
        ev.kind = names.setdefault(ev.kind, ev.kind)
        if ev.actor is not None:
            ev.actor = names.setdefault(ev.actor, ev.actor)
        ts = ev.ts_ms
        if ts is not None:
            if run.started_ms is None or ts < run.started_ms:
                run.started_ms = ts
            if run.ended_ms is None or ts > run.ended_ms:
                run.ended_ms = ts
        self.envelope_evidence(envelope)
        try:
            self._dispatch.get(ev.kind, self._on_unknown)(ev, payload, envelope)
        except Exception as exc:  # noqa: BLE001 - never raise on data
            self.problem(ev.line, f"could not interpret '{ev.kind}' event ({type(exc).__name__}: {exc})")
        self.n_events += 1
        self._actors_seen.add(ev.actor)
        if self.keep_events:
            run.events.append(ev)  # after the handler: it sets ev.turn
        self._last_kind = ev.kind
        if ev.ts_ms is not None:
            self._prev_ts = ev.ts_ms

    def _on_unknown(self, ev: Event, payload: dict[str, Any], envelope=None) -> None:
        t = self._current.get(ev.actor)
        if t is not None:
            self._touch(t, ev)

    # -- system notes (ktui.trace.builder_notes)
    def _on_system(self, ev: Event, p: dict[str, Any], envelope) -> None:
        builder_notes.on_system(self, ev, p)

    # -- messages
    def _on_user_message(self, ev: Event, p: dict[str, Any], envelope) -> None:
        text = p.get("text")
        if not isinstance(text, str):
            self.problem(ev.line, "user_message without a string 'text'", "", "warning")
            return
        if len(text) >= 64:
            text = self._s(text)
            if ev.actor == "harness" and len(text) > 200 and not self.run.problem.prompt:
                self.run.problem.prompt = text
                derive.problem_from_prompt(self.run.problem, text)
        self._add_message(ev.line, ev.kind, ev.actor, text)

    def _message(self, ev: Event, text: str, reasoning: str | None = None) -> None:
        t = self._current.get(ev.actor)
        if t is None or t.calls:
            t = self._new_turn(ev, ev.actor)
            ev.turn = t.index  # _touch of a turn that starts here: nothing else to move
        else:
            self._touch(t, ev)
        if len(text) >= 64:
            text = self._s(text)
        if ev.kind == "agent_message":
            self._msgs.setdefault(t.index, []).append(text)
        else:
            if reasoning:
                t.reasoning = self._s(reasoning) if not t.reasoning else t.reasoning + "\n\n" + reasoning
            if text:
                t.text = text if not t.text else t.text + "\n\n" + text
                if "```" in text:
                    code = fenced_code(text)
                    if code:
                        self._final_answers.append((ev.line, t.index, code))
        self._add_message(ev.line, ev.kind, ev.actor, text)

    def _on_agent_message(self, ev: Event, p: dict[str, Any], envelope) -> None:
        text = p.get("text")
        if not isinstance(text, str):
            self.problem(ev.line, "agent_message without a string 'text'", "", "warning")
            return
        self._message(ev, text)

    def _on_assistant_message(self, ev: Event, p: dict[str, Any], envelope) -> None:
        self._evidence.add(V2)
        text = p.get("text")
        if not isinstance(text, str):
            self.problem(ev.line, "assistant_message without a string 'text'", "", "warning")
            return
        self._message(ev, text)

    def _on_message(self, ev: Event, p: dict[str, Any], envelope) -> None:
        self._evid(V3)
        content = p.get("content")
        if isinstance(content, list):  # structured content parts
            content = "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
        if not isinstance(content, str):
            self.problem(ev.line, "message without a string 'content'", "", "warning")
            return
        if p.get("role", "assistant") != "assistant":
            self.run.messages.append((ev.line, f"message:{p.get('role')}", ev.actor, self._s(content)))
            return
        reasoning, visible = split_think(content)
        self._message(ev, visible, reasoning)

    # -- costs
    def _on_cost(self, ev: Event, p: dict[str, Any], envelope) -> None:
        self._evidence.add(V1)
        unit, amount = p.get("unit"), p.get("amount")
        if (type(unit) is not str and not isinstance(unit, str)) or not (
                type(amount) is int or type(amount) is float
                or (isinstance(amount, (int, float)) and not isinstance(amount, bool))):
            self.problem(ev.line, "cost event without a string 'unit' and a numeric 'amount'", "", "warning")
            return
        actor = ev.actor
        by = self.run.tokens_by_actor.get(actor or "-")
        if by is None:
            by = self.run.tokens_by_actor[actor or "-"] = {}
        by[unit] = by.get(unit, 0) + amount
        if unit in TOKEN_UNITS and actor is not None:
            self._has_token_costs = True
            t = self._current.get(actor)
            if t is None or not (self._last_kind == "cost" and self._last_token_actor == actor):
                t = self._new_turn(ev, actor)
                ev.turn = t.index  # _touch of a turn that starts here: nothing else to move
            else:
                self._touch(t, ev)
            self._last_token_actor = actor
            if unit == "tokens_in":
                t.tokens_in = (t.tokens_in or 0) + int(amount)
            elif unit == "tokens_out":
                t.tokens_out = (t.tokens_out or 0) + int(amount)
            elif unit == "tokens_reasoning":
                t.tokens_reasoning = (t.tokens_reasoning or 0) + int(amount)
            else:
                t.usd = (t.usd or 0.0) + float(amount)
            return
        self._last_token_actor = None
        t = self._current.get(ev.actor)
        if t is not None:
            self._touch(t, ev)
            if unit == "gpu_seconds":
                t.gpu_seconds = (t.gpu_seconds or 0.0) + float(amount)

    # -- tools
    def _on_tool_call(self, ev: Event, p: dict[str, Any], envelope) -> None:
        name = p.get("name")
        if type(name) is not str and not isinstance(name, str):
            self.problem(ev.line, "tool_call without a string 'name'")
            return
        args = p.get("args", {})
        if type(args) is not dict:
            if not isinstance(args, dict):
                self.problem(ev.line, f"tool_call '{name}': 'args' is {type(args).__name__}, expected an object",
                             "", "warning")
            args = call_args(p)
        seed = False
        if "seed" in p:
            self._evidence.add(V1)
            seed = p["seed"] is True
        code = args.get("kernel_code")
        if type(code) is not str and not isinstance(code, str):
            code = None
        if self._src is not None and ev.length >= self._lazy_min:  # read back on demand
            args = self._src
        elif code is not None:
            args = dict(args, kernel_code=self._s(code))
        cid = p.get("id")  # lazy.call_id, inline: one step fewer per call
        if type(cid) is not str and not isinstance(cid, str):
            cid = None
        name = self._names.setdefault(name, name)
        calls = self.run.calls
        index = len(calls)
        actor = ev.actor
        call = ToolCall(index, name, args, ev.line, ev.ts_ms, cid, actor, seed)
        if code is not None:  # one (sha1, lines, attachment) per version, shared by its calls
            info = kernel_info(code)
            call._kinfo = self._kinfos.setdefault(info, info)
        calls.append(call)
        self._pending[index] = call
        by_name = self._pending_by_name.get(name)
        if by_name is None:
            by_name = self._pending_by_name[name] = {}
        by_name[index] = call
        if cid:
            self._pending_by_id.setdefault(cid, call)
        self._last_call_by_actor[actor] = call
        if self._orphan_diffs:
            for line, items in self._orphan_diffs:
                _add_diffs(call, items, line)
            self._orphan_diffs = []
        if seed:
            return
        t = self._current.get(actor)
        if t is None or (not self._has_token_costs and self._last_kind in _AFTER_TOOL):
            t = self._new_turn(ev, actor)
            ev.turn = t.index  # _touch of a turn that starts here: nothing else to move
        else:
            self._touch(t, ev)
        call.turn = t.index
        tcalls = t.calls  # Turn.add_call, inline
        if type(tcalls) is list:
            tcalls.append(call)
        else:
            t.calls = [*tcalls, call] if tcalls else (call,)
        if name == "submit_kernel":
            if self._final_turn is not None:
                self._final_turn.is_final = False
            t.is_final = True
            self._final_turn = t

    def _pair(self, ev: Event, cid: str | None, name: str | None) -> ToolCall | None:
        """By id; else the first pending call of that name; else (no name) the first pending."""
        if cid:
            got = self._pending_by_id.get(cid)
            if got is not None:
                return got
        if name is not None:
            same = self._pending_by_name.get(name)
            return next(iter(same.values())) if same else None  # insertion order = call order
        return next(iter(self._pending.values()), None)

    def _on_tool_result(self, ev: Event, p: dict[str, Any], envelope) -> None:
        name = p.get("name")
        if type(name) is not str and not isinstance(name, str):
            name = None
        cid = p.get("id")
        if type(cid) is not str and not isinstance(cid, str):
            cid = None
        if "seed" in p:
            self._evidence.add(V1)
        if cid is None and "text" in p and "result" not in p:
            self._evidence.add(V2)
        call = self._pair(ev, cid, name)
        if call is None:
            self.problem(ev.line, f"tool_result for '{name}' has no pending call", "", "warning")
            return
        index, cname = call.index, call.name
        del self._pending[index]
        del self._pending_by_name[cname][index]
        pid = call._id
        if pid and self._pending_by_id.get(pid) is call:
            del self._pending_by_id[pid]
        if pid is not None and type(call._args) is not dict and call.lazy:  # paired: its id is read back when shown
            call._id = READ_BACK
        if cid is None and cname != name and name is not None:
            self.problem(ev.line, f"tool_result '{name}' paired with call '{cname}'", "", "warning")
        call._result, effect = self._result(ev, p, call)  # ToolCall.result's setter, inline
        turn = call.turn
        if turn is not None:
            self._touch(self.run.turns[turn], ev)
        if effect and (cname in _FETCH or call.seed and cname == "fetch_problem"):
            derive.problem_from_fetch(self.run.problem, effect, ev.line)

    def _result(self, ev: Event, p: dict[str, Any],
                call: ToolCall) -> tuple[ToolResult | ResultTable, dict[str, Any] | None]:
        """The call's result, and its effect object (kept in the result, or read back later)."""
        is_error = p.get("is_error") is True
        name = call.name
        got, effect, costs = result_parts(p)
        if costs is not None:
            self._evidence.add(V0)
            gs = costs.get("gpu_seconds")
            t = self.run.turns[call.turn] if call.turn is not None else None
            if t is not None and isinstance(gs, (int, float)):
                t.gpu_seconds = (t.gpu_seconds or 0.0) + float(gs)
        if self._src is not None and ev.length >= self._lazy_min:  # read back on demand
            # the status as derive.result_status gives it, where the summary is not needed for it
            status: str | None = (ERROR if is_error else (OK if effect["ok"] else FAILED)
                                  if effect is not None and type(effect.get("ok")) is bool else None)
            # what the kernel versions list says of it (a kernel_code: known while reading), and
            # what the harness flags read (a failed correctness run's cases): the summary only for
            # these (it is read back when shown)
            brief = cases = None
            want_brief = call._kinfo is not None
            if status is None or want_brief or (name == "run_correctness" and status != OK):
                summary, meta = result_summary(name, got, effect)
                if status is None:
                    status = derive.result_status(name, effect, summary, meta, is_error)
                brief = brief_text(status, summary, effect, meta) if want_brief else None
                cases = case_errors(summary) if name == "run_correctness" and status != OK else None
            if self._results.put(call.index, ev.line, ev.ts_ms, status, is_error, brief, cases):
                return self._results, effect  # by column: a ToolResult made on access
            res = ToolResult.read_back(ev.line, ev.ts_ms, status, is_error, self._src, name)
            res._brief, res._case_errors = brief, cases
            return res, effect
        summary, meta = result_summary(name, got, effect)
        status = derive.result_status(name, effect, summary, meta, is_error)
        if effect is not None:
            for k, v in effect.items():  # share long strings (summaries, sources) with the model
                if type(v) is str and len(v) >= 64:
                    effect[k] = self._s(v)
        if len(summary) >= 64:
            summary = self._s(summary)
        return ToolResult(ev.line, ev.ts_ms, status, summary, effect, meta, is_error), effect

    def _on_state_diff(self, ev: Event, p: dict[str, Any], envelope) -> None:
        items = diff_items(p)
        if not items:
            self.problem(ev.line, "state_diff without a diff object", "", "warning")
            return
        call = self._last_call_by_actor.get(ev.actor)
        if call is not None:
            _add_diffs(call, items, ev.line)
            if call.turn is not None:
                self._touch(self.run.turns[call.turn], ev)
        else:
            self._orphan_diffs.append((ev.line, items))

    def _on_progress(self, ev: Event, p: dict[str, Any], envelope) -> None:
        self._on_unknown(ev, p)

    def _on_tool_timeout(self, ev: Event, p: dict[str, Any], envelope) -> None:
        self._on_unknown(ev, p)

    # ---- the derived run ---------------------------------------------------------------------
    def finish(self, final: bool = True, *, findings: bool = True) -> Run:
        """The run with everything derived; ``findings=False``: without the static findings of
        its kernel versions (``run.findings_pending``; :func:`ktui.trace.flags.compute_flags`
        adds them)."""
        run = self.run
        run.variant = derive.variant(self._evidence, self._actors_seen, self._has_token_costs)
        derive.agent_message_text(run, self._msgs)  # reasoning vs visible text in V1 agent_messages
        derive.turn_timing(run, self._turn_prev_ts)
        derive.kernel_versions(run, self._final_answers)
        derive.metrics_and_outcome(run)
        derive.terminal_state(run, final)
        derive.flags(run, findings=findings)
        run.n_events = self.n_events
        run.revision += 1  # what views cached about the run (Run.lookup) is stale now
        if final and not self.n_events and not run.problems:
            if run.incomplete:  # one line, no newline yet, not JSON yet
                run.problems.append(TraceProblem(0, "incomplete: the only line is still being written", "",
                                                 "error"))
            else:
                run.problems.append(TraceProblem(0, "empty file: no events", "", "error"))
        return run


_HANDLERS = {name[4:]: name for name in dir(Builder) if name.startswith("_on_") and name != "_on_unknown"}


def _add_diffs(call: ToolCall, items: list[dict[str, Any]], line: int) -> None:
    call.add_diffs(items, line)
