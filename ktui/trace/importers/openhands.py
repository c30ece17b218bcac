"""OpenHands (agent SDK, V1) conversations: the conversation's events as one JSON array.

The SDK keeps a conversation as one JSON file per event (``conversations/<id>/events/``); tools
that export a conversation (the trajectory visualizers, ``conversation.state.events`` dumped)
write them as one array, oldest first, or as ``{"events": [...]}``. Each event has ``id``,
``timestamp`` (ISO, local time without an offset: read as UTC), ``source`` (``agent``, ``user``,
``environment``) and ``kind``:

- ``SystemPromptEvent``: ``system_prompt.text``, ``tools``.
- ``MessageEvent``: ``llm_message`` ``{role, content: [{type: text, text}]}``; a user's is the task.
- ``ActionEvent``: one tool call of a model response (``llm_response_id``: the calls of one
  response share it, and are one turn), ``thought`` (text blocks), ``reasoning_content``,
  ``tool_name``, ``tool_call_id``, ``tool_call`` ``{id, name, arguments (JSON text)}`` and the
  parsed ``action`` (``TerminalAction {command}``, ``FileEditorAction {command: view | create |
  str_replace | insert | undo_edit, path, file_text, old_str, new_str, insert_line}``,
  ``FinishAction {message}``, ``ThinkAction {thought}``, ...).
- ``ObservationEvent``: ``tool_call_id``, ``action_id``, ``observation`` ``{content: [text
  blocks], is_error, exit_code (terminal), kind}``; ``AgentErrorEvent`` / ``UserRejectObservation``
  answer a call with an error.
- ``ConversationErrorEvent`` (``code``, ``detail``), ``Condensation`` /
  ``CondensationRequest`` (the history was condensed), state updates: notes.

A file edit is applied to the tracked file when its observation comes and is not an error (a
refused ``str_replace`` changes nothing). "Lines" are the events' ordinals (1, 2, ...); problems
carry a JSON path. The events hold no token counts and no model name (those are in the
conversation's state, ``base_state.json`` beside the events file in the SDK's layout, or a
``trajectory.json`` whose ``baseState`` is that object in the visualizers' export): when one is
there, the model comes from ``agent.llm.model`` and each turn's tokens and model time from
``stats.usage_to_metrics.<usage>.token_usages`` / ``response_latencies``, matched to the turn by
``response_id`` = the actions' ``llm_response_id`` (``prompt_tokens`` includes the cached ones).
"""

from __future__ import annotations

import os
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    TooBig,
    as_dict,
    as_int,
    as_list,
    as_num,
    as_str,
    iso_ms,
    parse_json,
    read_bounded,
    shell_status,
    text_of,
)
from ktui.trace.model import ERROR, Run, Terminal, ToolCall, Turn
from ktui.trace.notes import JSONError, loads
from ktui.trace.words import count

_STATE_FILES = ("base_state.json", "trajectory.json")
_STATE_MAX = 64 << 20  # a long conversation's stats list every response
# what reading a side file may raise: it is then left alone (JSONError is itself a tuple)
_READ_ERRORS: tuple[type[BaseException], ...] = (OSError, TooBig, *JSONError)

NAME = "openhands"
LABEL = "OpenHands conversation events (agent SDK, JSON array)"
LINE_BASED = False

_KINDS = {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
          "UserRejectObservation"}
_SOURCES = {"agent", "user", "environment", "hook"}
_FILE_WRITES = {"create", "str_replace"}  # FileEditorAction commands that change a file, with their text


def _events(obj: Any) -> list | None:
    if isinstance(obj, dict) and isinstance(obj.get("events"), list):
        obj = obj["events"]
    return obj if isinstance(obj, list) else None


def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and isinstance(e.get("kind"), str) and isinstance(e.get("source"), str) \
        and e["source"] in _SOURCES


def detect_object(obj: Any) -> bool:
    evs = _events(obj)
    if not evs:
        return False
    head = evs[:20]
    return all(_is_event(e) for e in head) and any(e["kind"] in _KINDS for e in head)


def _text(v: Any) -> str:
    """Text blocks (``[{type: text, text}]``), a string, or an object with ``content``."""
    if isinstance(v, dict) and "content" in v:
        v = v["content"]
    return text_of(v) if isinstance(v, list) else (v if isinstance(v, str) else "")


class _Reader:
    def __init__(self, path: str) -> None:
        self.asm = Assembler(path, NAME)
        self.by_response: dict[str, Turn] = {}  # llm_response_id -> its turn
        self.turn: Turn | None = None
        self.response: Any = None  # llm_response_id of the current turn
        self.edits: dict[int, tuple[ToolCall, str]] = {}  # call index -> (call, FileEditor command)

    def agent_turn(self, line: int, ts: int | None, response: Any) -> Turn:
        if self.turn is None or response is None or response != self.response:
            self.turn = self.asm.turn(line, ts)
            self.response = response
            if isinstance(response, str):
                self.by_response.setdefault(response, self.turn)
        return self.turn

    def system(self, e: dict, line: int) -> None:
        text = as_str(as_dict(e.get("system_prompt")).get("text"))
        if text:
            self.asm.run.messages.append((line, "system", None, text))

    def message(self, e: dict, line: int, ts: int | None) -> None:
        msg = as_dict(e.get("llm_message"))
        text = _text(msg.get("content"))
        if e.get("source") == "user" or msg.get("role") == "user":
            self.turn, self.response = None, None
            self.asm.message(line, "user", text)
        else:
            t = self.asm.turn(line, ts)
            self.turn, self.response = t, None
            self.asm.assistant_text(t, text, line)

    def action(self, e: dict, line: int, ts: int | None, where: str) -> None:
        asm = self.asm
        t = self.agent_turn(line, ts, e.get("llm_response_id"))
        if not t.calls:  # the response's thought and reasoning, once
            asm.assistant_text(t, _text(e.get("thought")), line)
            asm.add_reasoning(t, as_str(e.get("reasoning_content")))
        act = as_dict(e.get("action"))
        call = as_dict(e.get("tool_call"))
        args: Any = {k: v for k, v in act.items() if k != "kind" and v is not None}
        if not args and isinstance(call.get("arguments"), str):
            try:
                args = loads(call["arguments"])
            except JSONError:
                asm.warn(line, "tool call arguments are not valid JSON", where + ".tool_call.arguments")
                args = {"arguments": call["arguments"]}
        name = as_str(e.get("tool_name")) or as_str(call.get("name")) or as_str(act.get("kind")) or "?"
        c = asm.call(t, name, args, line, ts, e.get("tool_call_id") or call.get("id"))
        kind = as_str(act.get("kind")) or ""
        if kind == "FileEditorAction":
            cmd = act.get("command")
            if isinstance(cmd, str) and cmd in _FILE_WRITES:
                self.edits[c.index] = (c, cmd)
        elif kind == "FinishAction":
            asm.add_text(t, as_str(act.get("message")))
        elif isinstance(c.args.get("command"), str):  # a shell command: writes are seen from its text
            asm.track_call(c)

    def answer(self, e: dict, line: int, ts: int | None, where: str) -> None:
        asm = self.asm
        c = asm.pending(e.get("tool_call_id"))
        if c is None:
            asm.warn(line, f"a {e.get('kind')} for tool call {e.get('tool_call_id')!r}, which has no pending call",
                     where + ".tool_call_id")
            return
        kind = e.get("kind")
        obs = as_dict(e.get("observation"))
        if kind == "ObservationEvent":
            text = _text(obs)
            is_error = obs.get("is_error") is True
            code = obs.get("exit_code")
            status = shell_status(text, is_error, code if isinstance(code, int) and code >= 0 else None)
        else:  # AgentErrorEvent, UserRejectObservation
            text = as_str(e.get("error")) or as_str(e.get("rejection_reason")) or str(kind)
            is_error, status = True, ERROR
        asm.result(c, text, line, ts, status=status, is_error=is_error)
        edit = self.edits.pop(c.index, None)
        if edit is not None and not is_error:
            asm.track_call(c)  # applied only once the editor said it did it

    def usage(self, state: dict, name: str) -> None:
        """Each response's tokens and latency from the conversation's stats onto its turn."""
        n = 0
        for usage in as_dict(as_dict(state.get("stats")).get("usage_to_metrics")).values():
            for u in as_list(as_dict(usage).get("token_usages")):
                rid = as_dict(u).get("response_id")
                t = self.by_response.get(rid) if isinstance(rid, str) else None
                if t is not None:
                    t.tokens_in, t.tokens_out = as_int(u.get("prompt_tokens")), as_int(u.get("completion_tokens"))
                    n += 1
            for lat in as_list(as_dict(usage).get("response_latencies")):
                rid = as_dict(lat).get("response_id")
                t = self.by_response.get(rid) if isinstance(rid, str) else None
                secs = as_num(as_dict(lat).get("latency"))
                if t is not None and secs is not None and secs >= 0:
                    t.llm_ms = int(secs * 1000)
        if n:
            self.asm.note(0, f"tokens and model time of {count(n, 'response')} from {name} beside the events")

    def read(self, obj: Any, state: tuple[dict, str] | None = None) -> Run:
        asm = self.asm
        evs = _events(obj)
        if evs is None:
            asm.problem(0, "not an OpenHands conversation: expected a JSON array of events", "", "error", "$")
            return asm.finish()
        for i, e in enumerate(evs):
            line, where = i + 1, f"$[{i}]"
            if not _is_event(e):
                asm.warn(line, f"event {i} is not an event object (no 'kind' / 'source')", where)
                continue
            ts = iso_ms(e.get("timestamp"))
            kind = e["kind"]
            asm.event(line, 0, 0, kind, ts, e.get("source"), len(asm.run.turns) - 1 if asm.run.turns else None)
            if kind not in ("ActionEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
                asm.ts(ts)  # a turn's events stamp it themselves (its model time starts at the event before)
            if kind == "SystemPromptEvent":
                self.system(e, line)
            elif kind == "MessageEvent":
                self.message(e, line, ts)
            elif kind == "ActionEvent":
                self.action(e, line, ts, where)
            elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
                self.answer(e, line, ts, where)
            elif kind == "ConversationErrorEvent":
                detail = as_str(e.get("detail")) or ""
                asm.run.terminal.append(Terminal("backend_error", f"{e.get('code')}: {detail}"[:400], line))
            elif kind in ("Condensation", "CondensationRequest"):
                n = len(as_list(e.get("forgotten_event_ids")))
                asm.note(line, "the history was condensed" + (f" ({n} events forgotten)" if n else ""))
        for c, _cmd in self.edits.values():
            if c.result is None:
                asm.note(c.line, f"{c.name} {_cmd} has no observation: not applied")
        if state is not None:
            self.usage(*state)
            model = as_str(as_dict(as_dict(state[0].get("agent")).get("llm")).get("model"))
            if model:
                asm.run.model = model[:200]
                asm.note(0, f"model from {state[1]} beside the events")
        return asm.finish()


def _state_beside(path: str) -> tuple[dict, str] | None:
    """(the conversation's state, its file name) beside the events file, if any."""
    d = os.path.dirname(os.path.abspath(path))
    for name in _STATE_FILES:
        p = os.path.join(d, name)
        if p == os.path.abspath(path) or not os.path.isfile(p):
            continue
        try:
            state = parse_json(read_bounded(p, _STATE_MAX))
        except _READ_ERRORS:
            continue
        if isinstance(state, dict) and isinstance(state.get("baseState"), dict):
            state = state["baseState"]
        if isinstance(state, dict) and isinstance(state.get("agent"), dict):
            return state, name
    return None


def load_object(obj: Any, path: str) -> Run:
    return _Reader(path).read(obj, _state_beside(path))
