"""OpenAI Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Every line is ``{timestamp, type, payload}``: ``session_meta`` first, ``turn_context`` (the model),
``response_item`` (the model-visible history: messages, ``reasoning``, ``function_call`` /
``function_call_output``, ``custom_tool_call`` / ``custom_tool_call_output``, ``local_shell_call``)
and ``event_msg`` (UI events; ``token_count`` carries the only token figures, cumulative, so a
turn gets the difference of the totals). A turn is one sampling round: the model's reasoning,
messages and calls up to the next tool output or user message.

Timing. Codex writes a round's response items (and, before 0.6x, a whole task's rounds) in one
batch once its tools have run, so many items share one timestamp; the ``token_count`` event of a
round is written when the model's response completes. A round's model time is therefore from the
moment its input was ready (the last user message, tool output or turn context written before
that ``token_count``, or the previous round's completion, whichever is later) to its
``token_count``; the k-th changed ``token_count`` belongs to the k-th round. Lines the model
writes (``token_count``, ``agent_reasoning``, ``agent_message``, reasoning and calls) never count
as "input ready". Without ``token_count`` lines a round lasts from its input to its first item. Calls pair with outputs by
``call_id``. ``apply_patch`` (a custom tool from 0.63, a ``shell`` argv or a heredoc before) is
applied to the last known content of each file once its output says what happened: a patch the tool
refused (a non-zero exit code, ``error: Failed to find expected lines ...``, ``apply_patch
verification failed``, ``execution error``, ``failed in sandbox``, an invalid hunk) changed nothing,
except, when it failed while writing (``Failed to find expected lines in PATH``, ``Failed to write
file PATH``), the files of the patch before the one it names (it writes file by file); a patch
whose output never came is applied. A round with a call that waited for the user's approval
(``with_escalated_permissions``, ``sandbox_permissions: require_escalated``, or Codex's "exec command
rejected by user") is completed only once the user answered and the call ran: its model time ends
at its last ``agent_reasoning`` / ``agent_message`` event, the rest is said in a note. Code mode
(0.14x): an ``exec`` call runs a JavaScript cell; its output, a list of content items, starts "Script
completed|failed|running with cell ID N", and a completed cell's status is the ``exit_code`` of the
``exec_command`` result(s) it printed; a round's ``token_count`` comes after its call outputs, so it
is that round's, its model time ending at the round's last model item. Hunks are applied as the tool does (an ``@@ line`` anchor; a
chunk of additions only goes at the end of the file). Older rollouts without the envelope (``{"record_type":
...}`` or bare items) are read too.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from ktui.trace.importers.codex_output import _output  # noqa: F401 - tests read it from here
from ktui.trace.importers.common import (
    Assembler,
    JSONError,
    as_dict,
    as_int,
    as_str,
    excerpt,
    iso_ms,
    object_lines,
    text_of,
)
from ktui.trace.importers.kernels import norm_path
from ktui.trace.importers.patches import parse_patch
from ktui.trace.model import FAILED, OK, Run, ToolCall, Turn
from ktui.trace.notes import loads
from ktui.trace.words import count

NAME = "codex-cli"
LABEL = "OpenAI Codex CLI rollout JSONL"
LINE_BASED = True
_ENVELOPE_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_MODEL_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def detect_line(obj: Any) -> bool:
    t = obj.get("type")
    p = obj.get("payload")
    if t in _ENVELOPE_TYPES and isinstance(p, dict) and "timestamp" in obj:
        return t != "session_meta" or "cwd" in p or "originator" in p or "cli_version" in p
    return obj.get("record_type") == "state" or ("id" in obj and "instructions" in obj and "timestamp" in obj
                                                  and "git" in obj)


class _State:
    def __init__(self, asm: Assembler) -> None:
        self.asm = asm
        self.turn: Turn | None = None
        self.open = False  # the current turn still takes model output
        self.last_total: int | None = None
        self.last_parts: dict[str, int] = {}
        # changed token totals not yet given to a round: (delta, completion ms, input-ready ms)
        self.completions: deque[tuple[dict[str, int], int | None, int | None]] = deque()
        self.input_ts: int | None = None  # the last line written on the input side
        self.last_completion: int | None = None  # the completion time of the last round timed
        self.timed = False  # the open round has had its token_count
        self.turn_ready: int | None = None  # when the open round's input was ready
        self.cwd: str | None = None
        self.user_typed: list[str] = []
        self.patches: dict[str, tuple[ToolCall, str, str | None]] = {}  # call key -> (call, patch, cwd)
        self.own_id: str | None = None  # this thread's id (the first session_meta's)
        self.forked_from: str | None = None
        self.inherited = 0  # lines of the thread it was forked from, copied at its start (0: not in them)
        self.inherited_lines = 0
        self.last_error: tuple[int, int, str] | None = None  # (line, turns so far, message) of the last error
        self.last_stream: int | None = None  # the last agent_reasoning / agent_message event (the model streaming)
        # per timed round: (its input-ready ms, its completion ms, the last streamed event between them)
        self.timing: dict[int, tuple[int, int, int | None]] = {}
        self.waited: set[int] = set()  # rounds whose model time was cut at an approval wait
        self.last_item_ts: int | None = None  # the open round's last model item (reasoning, message, call)
        # the round its call outputs just closed, nothing on the input side or of the model since
        # (0.14x writes a round's token_count after its outputs: _after_outputs)
        self.after_outputs: Turn | None = None


def load(path: str, data: bytes | None = None) -> Run:
    asm = Assembler(path, NAME)
    st = _State(asm)
    for no, off, raw, obj in object_lines(asm, path, data):
        ts = iso_ms(obj.get("timestamp"))
        typ = obj.get("type") if isinstance(obj.get("type"), str) else None
        payload = obj.get("payload")
        if typ not in _ENVELOPE_TYPES:  # an older rollout: bare items
            payload, typ = obj, ("session_meta" if "instructions" in obj and "git" in obj else
                                 ("state" if obj.get("record_type") == "state" else "response_item"))
        if not isinstance(payload, dict):
            asm.warn(no, f"'{typ}' line without a payload object")
            asm.event(no, off, len(raw), typ or "?", ts)
            continue
        pt = payload.get("type")
        ptype = pt if isinstance(pt, str) else ""
        if st.inherited and _inherited(st, typ, ptype, payload):
            asm.event(no, off, len(raw), f"{typ}:{ptype}" if ptype else typ, ts)
            continue
        try:
            _item(st, typ, ptype, payload, no, ts)
        except (TypeError, AttributeError, KeyError, ValueError) as exc:
            asm.problem(no, f"could not interpret a '{typ}/{ptype}' line ({type(exc).__name__}: {exc})", excerpt(raw))
        asm.event(no, off, len(raw), f"{typ}:{ptype}" if ptype else typ, ts, None,
                  st.turn.index if st.turn is not None and st.open else None)
    for c, body, cwd in st.patches.values():  # patches whose output never came: applied
        _apply_patch(st, c, body, cwd)
    if st.inherited_lines:
        asm.note(0, f"{count(st.inherited_lines, 'line')} at its start: the history of the thread it was forked from "
                    f"({st.forked_from}), copied when it was made: not read as this thread's work")
    if st.last_error is not None and st.last_error[1] == len(asm.run.turns):  # nothing after it: it ended on it
        from ktui.trace.model import Terminal

        asm.run.terminal.append(Terminal("backend_error", st.last_error[2][:400], st.last_error[0]))
    if st.completions and asm.run.turns:  # more token counts than rounds: the last round's
        t = asm.run.turns[-1]
        while st.completions:
            _give_tokens(t, st.completions.popleft()[0])
    for t in asm.run.turns:  # a round lasts from its input to its last item (at least its model time)
        if t.start_ms is not None and t.end_ms is not None:
            t.wall_ms = max(t.end_ms - t.start_ms, t.llm_ms or 0)
    return asm.finish()


def _give_tokens(t: Turn, d: dict[str, int]) -> None:
    t.tokens_in = (t.tokens_in or 0) + d.get("input_tokens", 0)
    out = d.get("output_tokens", 0)
    t.tokens_out = (t.tokens_out or 0) + out  # OpenAI's output count includes the reasoning tokens


def _model_turn(st: _State, no: int, ts: int | None) -> Turn:
    st.after_outputs = None
    if ts is not None:
        st.last_item_ts = ts
    if st.turn is None or not st.open:
        st.turn = t = st.asm.turn(no, ts)
        st.open = True
        st.timed = False
        st.turn_ready = st.input_ts
        if st.completions:  # this round's response completed at a token_count written before it
            delta, done, ready = st.completions.popleft()
            _complete(st, t, delta, done, ready)
        elif st.input_ts is not None and ts is not None and ts >= st.input_ts:
            t.llm_ms = ts - st.input_ts  # until its first item (a later token_count refines it)
            t.start_ms = min(t.start_ms if t.start_ms is not None else ts, st.input_ts)
    else:
        st.asm.touch(st.turn, no, ts)
    return st.turn


def _complete(st: _State, t: Turn, delta: dict[str, int], done: int | None, ready: int | None) -> None:
    """A round's token_count: its tokens, and its model time from its input to this completion."""
    _give_tokens(t, delta)
    st.timed = True
    base = max((x for x in (ready, st.last_completion) if x is not None), default=None)
    if done is None:
        return
    st.last_completion = done
    if base is not None and done >= base:
        t.llm_ms = done - base
        t.start_ms = base if t.start_ms is None else min(t.start_ms, base)
        seen = st.last_stream if st.last_stream is not None and base <= st.last_stream <= done else None
        st.timing[t.index] = (base, done, seen)


_ESCALATED = ("with_escalated_permissions", "sandbox_permissions")
_REJECTED = re.compile(r"^\s*(?:exec command|patch) rejected by user\b", re.I)


def _asked_approval(args: dict) -> bool:
    """A call that asked the user to let it run outside the sandbox (Codex waits for the answer)."""
    return args.get("with_escalated_permissions") is True or args.get("sandbox_permissions") == "require_escalated"


def _approval_wait(st: _State, t: Turn, no: int) -> None:
    """A round with a call that waited for the user's approval: Codex writes the round's
    response (its token_count and items) once its calls have run, so the time from the model's
    last streamed event to that completion is the wait for the answer and the run, not model
    time. The round's model time ends at that event (where the round has one)."""
    got = st.timing.get(t.index)
    if got is None or t.index in st.waited:
        return
    base, done, seen = got
    if seen is None or t.llm_ms != done - base:
        return
    st.waited.add(t.index)
    t.llm_ms = seen - base
    st.asm.note(no, f"round {t.index}: a call waited for the user's approval; the {(done - seen) / 1000:.1f} s "
                    "from the model's last streamed event to the round's completion are the wait and the run, "
                    "not model time")


def _input(st: _State, ts: int | None) -> None:
    """A line written on the input side (what the model reads next): it is when input was ready."""
    if ts is not None:
        st.input_ts = ts if st.input_ts is None else max(st.input_ts, ts)


def _args(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    if isinstance(v, str):
        try:
            p = loads(v)
        except JSONError:
            return {"arguments": v}
        return p if isinstance(p, dict) else {"arguments": p}
    return {"arguments": v} if v is not None else {}


def _item(st: _State, typ: str, ptype: str, p: dict, no: int, ts: int | None) -> None:
    asm, run = st.asm, st.asm.run
    if typ == "session_meta":
        _session_meta(st, p, no, ts)
        return
    if typ == "turn_context":
        st.after_outputs = None
        m = as_str(p.get("model"))
        if m:
            run.model = run.model or m
        st.cwd = as_str(p.get("cwd")) or st.cwd
        st.open = False
        asm.ts(ts)
        _input(st, ts)
        return
    if typ == "event_msg":
        if ptype == "token_count":
            info = p.get("info")
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                tot = info["total_token_usage"]
                parts = {k: as_int(tot.get(k)) or 0 for k in ("input_tokens", "cached_input_tokens", "output_tokens",
                                                              "reasoning_output_tokens", "total_tokens")}
                if st.last_total is None or parts["total_tokens"] != st.last_total:
                    delta = {k: v - st.last_parts.get(k, 0) for k, v in parts.items()}
                    if not all(v >= 0 for v in delta.values()):
                        # the totals restart when a session is resumed (or its context reset): the
                        # new totals are counted afresh, nothing is lost, so this is not a problem
                        asm.note(no, "token totals restarted (the session was resumed); counted afresh")
                        delta = dict(parts)
                    if st.turn is not None and st.open and not st.timed:
                        # written after the round's items (older rollouts): this round's
                        _complete(st, st.turn, delta, ts, st.turn_ready)
                    elif (st.after_outputs is not None and st.after_outputs is st.turn and not st.timed
                          and not st.completions):
                        _after_outputs(st, st.turn, delta, ts)
                    else:  # written before them (a batch written later): the next round's
                        st.completions.append((delta, ts, st.input_ts))
                    st.last_total, st.last_parts = parts["total_tokens"], parts
        elif ptype == "user_message":
            st.after_outputs = None
            _input(st, ts)
            text = as_str(p.get("message")) or ""
            st.user_typed.append(text)
            if not run.problem.prompt and text.strip():
                run.problem.prompt = text
        elif ptype == "turn_aborted":
            asm.note(no, f"turn aborted: {as_str(p.get('reason')) or ''}")
        elif ptype in ("error", "stream_error"):  # a failed model call (after Codex's retries, or one it retries)
            said = _error_text(p)
            asm.note(no, ("error: " if ptype == "error" else "stream error (retried): ") + said)
            if ptype == "error":
                st.last_error = (no, len(run.turns), said)
        if ptype in ("agent_reasoning", "agent_message") and ts is not None:
            st.last_stream = ts  # the model streaming (a round's last one bounds its model time: _approval_wait)
        _event_ts(asm, ts)  # model-side and UI events: part of the run's span, never "input ready"
        return
    if typ == "compacted":
        asm.note(no, "history compacted")
        return
    # response_item
    if ptype == "message":
        role = p.get("role")
        text = text_of(p.get("content"))
        if role == "assistant":
            t = _model_turn(st, no, ts)
            asm.assistant_text(t, text, no)
        else:  # harness context (AGENTS.md, environment) and what the user typed; the prompt is the
            st.open = False  # first user_message event
            st.after_outputs = None
            run.messages.append((no, "user" if role == "user" else f"message:{role}", None, text))
            asm.ts(ts)
            _input(st, ts)
        return
    if ptype == "reasoning":
        t = _model_turn(st, no, ts)
        summ = "\n".join(text_of(s) if not isinstance(s, str) else s for s in (p.get("summary") or [])
                         if isinstance(s, (dict, str)))
        content = p.get("content")
        body = text_of(content, ("reasoning_text", "text")) if content else ""
        if not (summ or body) and p.get("encrypted_content"):
            body = "(encrypted reasoning)"
        asm.add_reasoning(t, "\n\n".join(x for x in (summ, body) if x))
        return
    if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
        t = _model_turn(st, no, ts)
        if ptype == "custom_tool_call":
            args = {"input": p.get("input")} if not isinstance(p.get("input"), dict) else p["input"]
        elif ptype == "local_shell_call":
            args = p.get("action") if isinstance(p.get("action"), dict) else {}
        else:
            args = _args(p.get("arguments"))
        name = p.get("name") or ("local_shell" if ptype == "local_shell_call" else None)
        c = asm.call(t, name, args, no, ts, p.get("call_id") or p.get("id"))
        _track(st, c)
        if _asked_approval(args):
            _approval_wait(st, t, no)
        return
    if ptype in _OUTPUTS:
        _call_output(st, ptype, p, no, ts)
        return
    if ptype == "web_search_call":  # a search the model ran on the provider's side: a call with no output item
        t = _model_turn(st, no, ts)
        act = as_dict(p.get("action"))
        c = asm.call(t, "web_search", act or {"status": p.get("status")}, no, ts, as_str(p.get("id")))
        status = as_str(p.get("status")) or "?"
        asm.result(c, f"{as_str(act.get('type')) or 'search'} {status}", no, ts,
                   status=OK if status == "completed" else FAILED if status == "failed" else None)
        return
    if ptype == "ghost_snapshot":
        asm.ts(ts)
        return
    asm.ts(ts)


def _call_output(st: _State, ptype: str, p: dict, no: int, ts: int | None) -> None:
    """A call's output: its result, the patch it applied (or not), an approval wait it ended."""
    asm = st.asm
    st.open = False
    _input(st, ts)
    pc = asm.pending(p.get("call_id"))
    if pc is None:
        asm.warn(no, f"{ptype} for {p.get('call_id')!r} has no pending call")
        return
    text, status, code = _output(p.get("output"))
    if pc.turn is not None and _REJECTED.match(text or ""):
        _approval_wait(st, asm.run.turns[pc.turn], no)
    deferred = st.patches.pop(pc.id or f"#{pc.index}", None)
    if deferred is not None:
        _apply_patch(st, *deferred, outcome=(text, code))
        if status is None and code is None and _patch_failed(text, None):
            status = FAILED
    asm.result(pc, text, no, ts, status=status, effect={"exit_code": code} if code is not None else None)
    if pc.turn is not None and st.turn is not None and pc.turn == st.turn.index:
        st.after_outputs = st.turn


def _after_outputs(st: _State, t: Turn, delta: dict[str, int], done: int | None) -> None:
    """A round's token_count written after its call outputs (0.14x: the response completes once its
    tools have run), before anything else: this round's tokens. Its model time is from its input to
    its last model item (the call it streamed last), not to this completion (the tools ran between)."""
    _give_tokens(t, delta)
    st.timed = True
    base = max((x for x in (st.turn_ready, st.last_completion) if x is not None), default=None)
    end = st.last_item_ts
    if done is not None:
        st.last_completion = done
    if base is not None and end is not None and end >= base:
        t.llm_ms = end - base
        t.start_ms = base if t.start_ms is None else min(t.start_ms, base)


def _session_meta(st: _State, p: dict, no: int, ts: int | None) -> None:
    asm, run = st.asm, st.asm.run
    m = p.get("meta")
    meta = m if isinstance(m, dict) else p
    sid = as_str(meta.get("id"))
    if st.own_id is not None and st.forked_from is not None and sid != st.own_id and _v7(st.own_id):
        # a forked thread starts with the history of the one it was forked from, its
        # session_meta first: read up to this thread's first turn, not as its work
        st.inherited = no
        return
    st.cwd = as_str(meta.get("cwd")) or st.cwd
    ver = as_str(meta.get("cli_version"))
    asm.note(no, f"session {sid or '?'} · codex {ver or '?'} · "
                 f"{as_str(meta.get('originator')) or ''} · cwd {st.cwd or '?'}")
    if st.own_id is None:
        st.own_id, st.forked_from = sid, as_str(meta.get("forked_from_id"))
        spawn = as_dict(as_dict(as_dict(meta.get("source")).get("subagent")).get("thread_spawn"))
        who = as_str(meta.get("agent_nickname")) or as_str(spawn.get("agent_nickname"))
        role = as_str(meta.get("agent_role")) or as_str(spawn.get("agent_role"))
        if who or role or spawn:  # a thread another agent spawned
            run.persona = run.persona or " ".join(
                x for x in ("subagent", who, f"({role})" if role else None) if x)[:80]
    instr = as_str(meta.get("instructions")) or as_str(as_dict(meta.get("base_instructions")).get("text"))
    if instr:
        run.messages.append((no, "system", None, instr))
    asm.ts(ts)
    _input(st, ts)


def _v7(uid: str | None) -> bool:
    """A UUIDv7 (Codex's thread and turn ids): its first 48 bits are its time, so ids order by time."""
    return isinstance(uid, str) and len(uid) == 36 and uid[14:15] == "7" and uid[8:9] == "-"


def _inherited(st: _State, typ: str, ptype: str, p: dict) -> bool:
    """A line of the history a forked thread copied from its parent: its token totals are where
    this thread's counts start; the first turn made after this thread (a later UUIDv7) ends it."""
    if typ == "turn_context" or (typ == "event_msg" and ptype == "task_started"):
        tid = as_str(p.get("turn_id"))
        if _v7(tid) and st.own_id is not None and tid is not None and tid[:13] + tid[14:18] >= \
                st.own_id[:13] + st.own_id[14:18]:
            st.inherited = 0
            return False
    if typ == "event_msg" and ptype == "token_count":
        info = p.get("info")
        tot = info.get("total_token_usage") if isinstance(info, dict) else None
        if isinstance(tot, dict):
            parts = {k: as_int(tot.get(k)) or 0 for k in ("input_tokens", "cached_input_tokens", "output_tokens",
                                                          "reasoning_output_tokens", "total_tokens")}
            st.last_total, st.last_parts = parts["total_tokens"], parts
    st.inherited_lines += 1
    return True


def _error_text(p: dict) -> str:
    """An ``error`` event's message (the provider's JSON error body, read), and its kind."""
    msg = (as_str(p.get("message")) or "").strip()
    if msg.startswith("{"):
        try:
            body = loads(msg)
        except JSONError:
            body = None
        err = body.get("error") if isinstance(body, dict) else None
        inner = as_str(err.get("message")) if isinstance(err, dict) else as_str(err)
        if inner:
            msg = inner
    info = p.get("codex_error_info")
    kind = next(iter(info), None) if isinstance(info, dict) else as_str(info)
    return (msg or "error") + (f" ({kind})" if kind and kind != "other" else "")


def _event_ts(asm: Assembler, ts: int | None) -> None:
    """Widen the run's span without moving the "previous" stamp turns are timed from."""
    run = asm.run
    if ts is None:
        return
    if run.started_ms is None or ts < run.started_ms:
        run.started_ms = ts
    if run.ended_ms is None or ts > run.ended_ms:
        run.ended_ms = ts


# what apply_patch prints when it changed nothing (or stopped at the file it names)
_PATCH_FAILED = re.compile(r"^\s*(?:error:|apply_patch verification failed|execution error|failed in sandbox|"
                           r"invalid patch|invalid hunk|patch rejected|Failed to (?:find|read|write|apply))", re.I)
_VERIFIED_FIRST = re.compile(r"\s*(?:apply_patch verification failed|invalid patch|invalid hunk|error: invalid)", re.I)
_PATCH_FAILED_AT = re.compile(r"(?:expected lines .*? in|Failed to (?:read|write) file(?: to update)?|"
                              r"Failed to find expected lines in)\s+(\S+?)[:\s]*$", re.M)


def _patch_failed(text: str, code: int | None) -> bool:
    if code is not None:
        return code != 0
    return bool(_PATCH_FAILED.match(text or ""))


def _apply_patch(st: _State, c: ToolCall, body: str, cwd: str | None,
                 outcome: tuple[str, int | None] | None = None) -> None:
    """Apply a patch whose output is known (or never came): a refused patch changes nothing, or
    only the files before the one its error names."""
    if outcome is not None and _patch_failed(*outcome):
        text = outcome[0] or ""
        # checked before anything is written (0.4x+): nothing changed; else the tool stopped at
        # the file its error names, having written the ones before it
        m = None if _VERIFIED_FIRST.match(text) else _PATCH_FAILED_AT.search(text[:4000])
        ops = parse_patch(body)
        stop = None
        if m:
            named = norm_path(m.group(1).rstrip(":"), cwd)
            for i, (_, path, _, _) in enumerate(ops):
                p = norm_path(path, cwd)
                if p == named or named.endswith("/" + p.lstrip("/")) or p.endswith("/" + named.lstrip("/")):
                    stop = i
                    break
        if not stop:  # the first file failed, or the error names none: nothing was written
            return
        body = "\n".join(["*** Begin Patch"] + [_op_text(o) for o in ops[:stop]] + ["*** End Patch"])
    for err in st.asm.files.patch(body, c, c.turn, c.line, cwd):
        st.asm.warn(c.line, err)


def _op_text(op: list[Any]) -> str:
    kind, path, lines, move = op
    head = {"add": "*** Add File: ", "update": "*** Update File: ", "delete": "*** Delete File: "}[kind] + path
    return "\n".join([head] + ([f"*** Move to: {move}"] if move else []) + lines)


def _defer_patch(st: _State, c: ToolCall, body: str, cwd: str | None) -> None:
    st.patches[c.id or f"#{c.index}"] = (c, body, cwd)


def _track(st: _State, c: ToolCall) -> None:
    a = c.args
    cwd = as_str(a.get("workdir")) or st.cwd
    cmd = a.get("command")
    if c.name == "apply_patch" and isinstance(a.get("input"), str):
        _defer_patch(st, c, a["input"], cwd)
        return
    script: str | None
    if isinstance(cmd, list):  # shell argv: ["bash", "-lc", "..."] or ["apply_patch", "*** Begin Patch..."]
        parts = [x for x in cmd if isinstance(x, str)]
        if parts and parts[0] == "apply_patch" and len(parts) > 1:
            _defer_patch(st, c, parts[1], cwd)
            return
        script = parts[-1] if len(parts) >= 3 and parts[1] in ("-lc", "-c") else " ".join(parts)
        if "*** Begin Patch" in script:
            _defer_patch(st, c, script[script.index("*** Begin Patch"):], cwd)
            return
        st.asm.files.shell(script, c, c.turn, c.line, cwd)
        return
    script = cmd if isinstance(cmd, str) else as_str(a.get("cmd"))  # exec_command {"cmd": "..."}
    if script and "*** Begin Patch" in script:
        _defer_patch(st, c, script[script.index("*** Begin Patch"):], cwd)
        return
    st.asm.track_call(c, cwd)
