"""OpenHands (V0, the event stream before the agent SDK) trajectories: one JSON array of events.

OpenHands' headless mode (``--save-trajectory-path``) and its session folders keep a run as events,
oldest first (the file Harbor's ``openhands`` agent converts to ATIF; Harbor's RFC 0001 keeps one
as its sample, ``docs/rfcs/0001-trajectory-format/openhands_trajectory.json``). Each event has an
integer ``id``, ``timestamp`` (ISO, no offset: read as UTC), ``source`` (``agent``, ``user``,
``environment``), ``message``, and either:

- ``action`` with ``args``: ``system`` (the system prompt, ``args.content``), ``message`` (a user's
  task, or the agent's text without a tool call, ``args.content``), ``run`` (``args.command``),
  ``run_ipython`` (``args.code``), ``edit`` (``args.command`` create / str_replace / insert ...,
  ``path``, ``file_text``, ``old_str``, ``new_str``), ``write`` (``path``, ``content``), ``read``,
  ``think``, ``finish`` (``args.final_thought``), ``recall`` (the runtime's, a note), ...; a tool
  call's ``tool_call_metadata`` holds ``function_name``, ``tool_call_id`` and the LLM's
  ``model_response`` (``id``: the calls of one response are one turn; ``model``; ``usage``);
  ``args.thought`` is the model's text before the call;
- ``observation`` with ``cause`` (the action's id), ``content`` and ``extras``
  (``metadata.exit_code`` of a command); ``error`` is a failed call; ``agent_state_changed``
  (``extras.agent_state``: ``error`` with ``reason`` ends the run on a backend error), ``recall``
  and other runtime observations are notes.

An edit or write is applied to the tracked file when its observation comes and is not an error.
"Lines" are the events' ordinals (1, 2, ...). Token counts are each response's ``usage`` (once a
response); the cost the last ``llm_metrics.accumulated_cost``.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    as_dict,
    as_int,
    as_list,
    as_num,
    as_str,
    decoded_arguments,
    iso_ms,
    shell_status,
)
from ktui.trace.model import ERROR, OK, Run, Terminal, ToolCall, Turn

NAME = "openhands-v0"
LABEL = "OpenHands trajectory (V0 event stream, JSON array)"
LINE_BASED = False

_SOURCES = {"agent", "user", "environment"}
_NOISE = {"thought", "security_risk", "confirmation_state", "blocking", "is_static", "hidden", "impl_source",
          "is_input", "cwd", "include_extra", "kernel_init_code", "wait_for_response", "image_urls",
          "file_urls", "outputs"}
_RUNTIME = {"recall", "agent_state_changed", "null", "user_rejected", "condensation"}  # not a tool's answer
_NAMES = {"run": "execute_bash", "run_ipython": "execute_ipython_cell", "edit": "str_replace_editor",
          "finish": "finish", "think": "think", "browse": "browser", "read": "str_replace_editor"}


def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and isinstance(e.get("id"), int) and not isinstance(e["id"], bool) \
        and e.get("source") in _SOURCES and (isinstance(e.get("action"), str) or isinstance(e.get("observation"), str)) \
        and "kind" not in e


def detect_object(obj: Any) -> bool:
    if not isinstance(obj, list) or not obj:
        return False
    head = obj[:20]
    events = [e for e in head if _is_event(e)]  # a few odd entries are warnings, not another format
    return _is_event(head[0]) and 2 * len(events) >= len(head) and any("action" in e for e in events)


def _think(thought: str, resp: dict, call_id: str | None) -> tuple[str, str]:
    """(the model's text before a ``think`` call, the call's thought): OpenHands puts the call's
    argument in ``args.thought``, joined to the reply's text where there was some; the call's own
    arguments in the recorded response say which part is which."""
    for ch in as_list(resp.get("choices"))[:4]:
        msg = as_dict(as_dict(ch).get("message"))
        for tc in as_list(msg.get("tool_calls")):
            tc = as_dict(tc)
            if call_id is not None and tc.get("id") != call_id:
                continue
            arg = as_str(as_dict(decoded_arguments(as_dict(tc.get("function")).get("arguments"), "thought"))
                         .get("thought"))
            if arg is None:
                continue
            arg = arg.strip()
            rest = thought.replace(arg, "", 1).strip() if arg and arg in thought else ""
            return rest, arg
    return "", thought


class _Reader:
    def __init__(self, path: str) -> None:
        self.asm = Assembler(path, NAME)
        self.by_id: dict[int, ToolCall] = {}  # action id -> its call
        self.writes: dict[int, ToolCall] = {}  # call index -> an edit/write applied when it succeeds
        self.turn: Turn | None = None
        self.response: Any = None
        self.cost: float | None = None

    def _turn(self, line: int, ts: int | None, response: Any) -> Turn:
        if self.turn is None or response is None or response != self.response:
            self.turn = self.asm.turn(line, ts)
            self.response = response
        return self.turn

    def action(self, e: dict, line: int, ts: int | None) -> None:
        asm, act, args = self.asm, e["action"], as_dict(e.get("args"))
        meta = as_dict(e.get("tool_call_metadata"))
        resp = as_dict(meta.get("model_response"))
        cost = as_num(as_dict(e.get("llm_metrics")).get("accumulated_cost"))
        self.cost = cost if cost is not None else self.cost
        if act == "system":
            asm.run.messages.append((line, "system", None, as_str(args.get("content")) or as_str(e.get("message")) or ""))
            return
        if act == "message" and e.get("source") == "user":
            self.turn, self.response = None, None
            asm.message(line, "user", as_str(args.get("content")) or as_str(e.get("message")) or "")
            return
        if act in ("recall", "change_agent_state") or e.get("source") != "agent":
            asm.note(line, f"{e.get('source')} {act}: {(as_str(e.get('message')) or '')[:200]}")
            return
        new = self.turn is None or resp.get("id") is None or resp.get("id") != self.response
        t = self._turn(line, ts, resp.get("id"))
        if new:
            usage = as_dict(resp.get("usage"))
            t.tokens_in, t.tokens_out = as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
            if as_str(resp.get("model")) and not asm.run.model:
                asm.run.model = as_str(resp.get("model"))[:200]  # type: ignore[index]
        if act == "message":  # the agent's text without a tool call
            asm.assistant_text(t, as_str(args.get("content")) or as_str(e.get("message")) or "", line)
            return
        name = as_str(meta.get("function_name")) or _NAMES.get(act, act)
        a = {k: v for k, v in args.items() if k not in _NOISE and v is not None}
        if act == "think":  # ``thought`` is the call's own argument here (with any text before it)
            text, arg = _think(as_str(args.get("thought")) or "", resp, as_str(meta.get("tool_call_id")))
            asm.assistant_text(t, text, line)
            a = {"thought": arg}
        else:
            asm.assistant_text(t, as_str(args.get("thought")) or "", line)
        if act == "finish":
            a = {"message": as_str(args.get("final_thought")) or as_str(e.get("message")) or ""}
        elif act == "write":  # a whole-file write, as the editor's create
            a = {"command": "create", "path": args.get("path"), "file_text": args.get("content")}
        c = asm.call(t, name, a, line, ts, as_str(meta.get("tool_call_id")))
        self.by_id[e["id"]] = c
        if act in ("edit", "write") and a.get("command") in ("create", "str_replace", "insert"):
            self.writes[c.index] = c
        elif act == "run":
            asm.track_call(c)  # a shell command: its writes are seen from its text

    def observation(self, e: dict, line: int, ts: int | None) -> None:
        asm, obs = self.asm, e["observation"]
        extras = as_dict(e.get("extras"))
        if obs == "agent_state_changed":
            if extras.get("agent_state") == "error":
                why = as_str(extras.get("reason")) or as_str(e.get("message")) or "error"
                asm.run.terminal.append(Terminal("backend_error", why[:400], line))
            return
        cause = e.get("cause")
        c = self.by_id.pop(cause, None) if isinstance(cause, int) else None
        if c is None:
            if obs not in _RUNTIME:
                asm.note(line, f"observation {obs} answers no action of this file (cause {cause!r})")
            return
        text = as_str(e.get("content")) or as_str(e.get("message")) or ""
        code = as_dict(extras.get("metadata")).get("exit_code")
        code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 0 else None
        is_error = obs == "error" or e.get("success") is False
        asm.result(c, text, line, ts, status=ERROR if obs == "error" else shell_status(text, is_error, code),
                   is_error=is_error)
        if self.writes.pop(c.index, None) is not None and not is_error:
            asm.track_call(c)  # applied only once the editor said it did it

    def read(self, obj: Any) -> Run:
        asm = self.asm
        if not isinstance(obj, list):
            asm.problem(0, "not an OpenHands trajectory: expected a JSON array of events", "", "error", "$")
            return asm.finish()
        for i, e in enumerate(obj):
            line = i + 1
            if not _is_event(e):
                asm.warn(line, f"event {i} is not an OpenHands event (no integer id, source, action or "
                               "observation)", f"$[{i}]")
                continue
            ts = iso_ms(e.get("timestamp"))
            asm.event(line, 0, 0, as_str(e.get("action") or e.get("observation")) or "?", ts, e.get("source"),
                      len(asm.run.turns) - 1 if asm.run.turns else None)
            if e.get("source") != "agent" or e.get("observation") in _RUNTIME:
                asm.ts(ts)  # the next response's model time starts here (a turn's own events stamp it)
            if "action" in e and isinstance(e["action"], str):
                self.action(e, line, ts)
            else:
                self.observation(e, line, ts)
        for c in list(self.writes.values()):
            if c.result is None:
                asm.note(c.line, f"{c.name} has no observation: not applied")
        calls = asm.run.calls
        if calls and calls[-1].name == "finish" and calls[-1].result is None:
            c = calls[-1]
            asm.result(c, "(finish returns nothing: the agent ended the run)", c.line, None, status=OK)
            said = as_str(c.args.get("message")) or ""
            asm.run.terminal.append(Terminal("halt", f"finish: {said}"[:400], c.line))
        if self.cost is not None:
            asm.run.tokens_by_actor["agent"] = {"usd": self.cost}
        return asm.finish()


def load_object(obj: Any, path: str) -> Run:
    return _Reader(path).read(obj)
