"""What ``codex exec --json`` prints: Codex's JSON-lines event stream (``codex.txt`` in Harbor
trials, ``codex exec --json ... | tee`` in other harnesses).

The events are ``codex-rs/exec/src/exec_events.rs``'s ``ThreadEvent``: ``thread.started``
(``thread_id``), ``turn.started`` (a prompt sent: its text is not in the stream), ``item.started``
/ ``item.updated`` / ``item.completed`` (``item``: ``{id, type, ...}``), ``turn.completed``
(``usage``: ``input_tokens``, ``cached_input_tokens``, ``output_tokens`` of the whole prompt's
work), ``turn.failed`` (``error.message``), ``error`` (``message``), ``item.plan.delta``,
``request_user_input``. Item types: ``agent_message`` and ``reasoning`` (``text``), ``plan``,
``command_execution`` (``command``, ``aggregated_output``, ``exit_code``, ``status``:
in_progress / completed / failed / declined), ``file_change`` (``changes``: ``[{path, kind: add |
delete | update}]``, ``status``; emitted once the patch applied or failed, without its content),
``mcp_tool_call`` (``server``, ``tool``, ``arguments``, ``result.content``, ``error.message``,
``status``), ``collab_tool_call``, ``web_search`` (``query``), ``todo_list``, ``error``.

The stream has no timestamps and no model-call boundaries: a turn here is the model's output up
to the calls it made, the next one starting at the first output after a call completed; the
usage of a prompt goes to its last turn (a note says so). A ``file_change`` is a kernel version
whose content is not known (the stream gives paths only); commands are read as in other formats
(heredocs, in-place edits; ``bash -lc '<script>'``, as Codex joins a shell call's argv, is read as
its script). Lines that are not JSON (stderr captured with the stream) are notes.
"""

from __future__ import annotations

import shlex
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    as_dict,
    as_int,
    as_list,
    as_str,
    object_lines,
    text_of,
)
from ktui.trace.importers.kernels import norm_path
from ktui.trace.model import FAILED, OK, Run, Terminal, ToolCall, Turn

NAME = "codex-exec-json"
LABEL = "Codex CLI `codex exec --json` event stream"
LINE_BASED = True
_EVENTS = {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
           "item.completed", "item.plan.delta", "request_user_input"}
_CALL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search"}
_MAX_NOTES = 200


def detect_line(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    t = obj.get("type")
    if t == "thread.started":
        return isinstance(obj.get("thread_id"), str)
    if t in ("item.started", "item.updated", "item.completed"):
        item = obj.get("item")
        return isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("type"), str)
    if t == "turn.completed":
        return isinstance(obj.get("usage"), dict)
    return t in ("turn.started", "turn.failed") and len(obj) <= 2


class _State:
    def __init__(self, asm: Assembler) -> None:
        self.asm = asm
        self.turn: Turn | None = None
        self.closed = True  # a call completed since the turn's output: the next output is a new turn
        self.calls: dict[str, ToolCall] = {}  # item id -> call
        self.done: set[str] = set()  # item ids completed
        self.prompt_turns: list[int] = []  # turns of the current prompt
        self.prompts = 0
        self.last_error: tuple[int, str, int] | None = None  # (line, message, turns so far)
        self.stray = 0


def _round(st: _State, no: int) -> Turn:
    if st.turn is None or st.closed:
        st.turn = st.asm.turn(no, None)
        st.closed = False
        st.prompt_turns.append(st.turn.index)
    else:
        st.asm.touch(st.turn, no)
    return st.turn


def _script(command: str) -> str | None:
    """The script of ``bash -lc '<script>'`` (how Codex joins a shell call's argv for the stream),
    or None for another command line."""
    head = command.lstrip()[:24]
    if not any(head.startswith(sh) for sh in ("bash ", "sh ", "zsh ", "/bin/bash ", "/bin/sh ", "/usr/bin/bash ")):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if len(argv) == 3 and argv[1] in ("-lc", "-c", "-l -c"):
        return argv[2]
    return None


def _call_args(item: dict) -> tuple[str, dict]:
    t = item["type"]
    if t == "command_execution":
        cmd = as_str(item.get("command")) or ""
        script = _script(cmd)
        return "exec_command", ({"command": script, "argv": cmd} if script is not None else {"command": cmd})
    if t == "file_change":
        return "apply_patch", {"changes": [as_dict(c) for c in as_list(item.get("changes"))[:500]]}
    if t == "mcp_tool_call":
        args = item.get("arguments")
        return (f"{as_str(item.get('server')) or '?'}.{as_str(item.get('tool')) or '?'}"[:120],
                args if isinstance(args, dict) else {"arguments": args})
    if t == "collab_tool_call":
        return f"collab.{as_str(item.get('tool')) or '?'}", {"prompt": as_str(item.get("prompt")) or ""}
    return "web_search", {"query": as_str(item.get("query")) or ""}


def _result(item: dict) -> tuple[str, str | None, int | None]:
    """(text, status, exit code) of a completed call item."""
    t, status = item["type"], as_str(item.get("status"))
    if t == "command_execution":
        code = as_int(item.get("exit_code"))
        text = as_str(item.get("aggregated_output")) or ""
        if status == "declined":
            return (text or "declined (the command did not run)"), FAILED, code
        st = FAILED if status == "failed" or (code is not None and code != 0) else OK if status == "completed" else None
        return text, st, code
    if t == "file_change":
        parts = [f"{as_str(as_dict(c).get('kind')) or '?'} {as_str(as_dict(c).get('path')) or '?'}"
                 for c in as_list(item.get("changes"))[:50]]
        return "; ".join(parts) + (f" ({status})" if status else ""), (FAILED if status == "failed" else OK), None
    if t == "mcp_tool_call":
        err = as_str(as_dict(item.get("error")).get("message"))
        if err:
            return err, FAILED, None
        res = as_dict(item.get("result"))
        return text_of(res.get("content")) if isinstance(res.get("content"), list) else "", \
            (FAILED if status == "failed" else OK), None
    if t == "collab_tool_call":
        return status or "", (FAILED if status == "failed" else OK), None
    act = as_dict(item.get("action"))
    return as_str(act.get("type")) or "search", OK, None


def _item(st: _State, ev: str, item: dict, no: int) -> None:
    asm = st.asm
    t, iid = item["type"], item["id"]
    if t in _CALL_ITEMS:
        c = st.calls.get(iid)
        if c is None:
            if iid in st.done:
                return
            name, args = _call_args(item)
            c = st.calls[iid] = asm.call(_round(st, no), name, args, no, None, iid)
        if ev != "item.completed":
            return
        st.done.add(iid)
        text, status, code = _result(item)
        asm.result(c, text, no, None, status=status, effect={"exit_code": code} if code is not None else None)
        st.closed = True
        if status == FAILED:
            return
        if t == "command_execution":
            asm.track_call(c)
        elif t == "file_change":
            for ch in as_list(item.get("changes"))[:500]:
                d = as_dict(ch)
                path, kind = as_str(d.get("path")), as_str(d.get("kind"))
                if path and kind in ("add", "update"):
                    asm.files.changed(asm.files.locate(norm_path(path)), f"apply_patch ({kind})", c,
                                      c.turn, no)
        return
    if ev != "item.completed":
        return
    if t == "agent_message":
        asm.assistant_text(_round(st, no), as_str(item.get("text")) or "", no)
    elif t == "reasoning":
        asm.add_reasoning(_round(st, no), as_str(item.get("text")))
    elif t == "plan":
        asm.add_text(_round(st, no), "plan:\n" + (as_str(item.get("text")) or ""))
    elif t == "todo_list":
        items = [f"[{'x' if as_dict(x).get('completed') else ' '}] {as_str(as_dict(x).get('text')) or ''}"
                 for x in as_list(item.get("items"))[:100]]
        asm.note(no, "to-do list: " + "; ".join(items)[:600])
    elif t == "error":
        asm.note(no, f"error: {as_str(item.get('message')) or ''}"[:600])
    else:
        asm.note(no, f"an item of type {t!r} (not read)"[:200])


def load(path: str, data: bytes | None = None) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    run.persona = "codex exec"
    st = _State(asm)
    def bad(no: int, raw: bytes, term: bool, _exc: Exception) -> None:
        if not term:
            run.incomplete = True  # the last line, still being written
        elif st.stray < _MAX_NOTES:
            st.stray += 1
            asm.note(no, "not JSON (stderr captured with the stream?): " + raw[:300].decode("utf-8", "replace"))

    def other(no: int, obj: Any) -> None:
        asm.warn(no, f"line is a JSON {type(obj).__name__}, not an event")

    for no, off, raw, obj in object_lines(asm, path, data, on_bad=bad, on_other=other):
        ev = as_str(obj.get("type")) or ""
        asm.event(no, off, len(raw), ev or "?", None, None, st.turn.index if st.turn is not None else None)
        if ev == "thread.started":
            asm.note(no, f"thread {as_str(obj.get('thread_id')) or '?'}")
        elif ev == "turn.started":
            st.prompts += 1
            st.prompt_turns = []
            st.closed = True
        elif ev in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("type"), str):
                _item(st, ev, item, no)
            else:
                asm.warn(no, f"'{ev}' without an item object with an id and a type")
        elif ev == "turn.completed":
            u = as_dict(obj.get("usage"))
            if st.prompt_turns:
                t = run.turns[st.prompt_turns[-1]]
                t.tokens_in = (t.tokens_in or 0) + (as_int(u.get("input_tokens")) or 0)
                t.tokens_out = (t.tokens_out or 0) + (as_int(u.get("output_tokens")) or 0)
                if len(st.prompt_turns) > 1:
                    asm.note(no, f"the prompt's tokens ({as_int(u.get('input_tokens')) or 0:,} in, "
                                 f"{as_int(u.get('cached_input_tokens')) or 0:,} of them cached, "
                                 f"{as_int(u.get('output_tokens')) or 0:,} out) are given for its "
                                 f"{len(st.prompt_turns)} turns together: counted on the last")
            st.closed = True
        elif ev in ("turn.failed", "error"):
            msg = as_str(as_dict(obj.get("error")).get("message")) if ev == "turn.failed" else as_str(obj.get("message"))
            asm.note(no, f"{ev}: {msg or ''}"[:600])
            if ev == "turn.failed" or not (msg or "").startswith("Reconnecting"):
                st.last_error = (no, msg or ev, len(run.turns))
        elif ev == "request_user_input":
            asm.note(no, "the model asked the user for input")
        elif ev != "item.plan.delta":
            asm.note(no, f"an event of type {ev!r} (not read)"[:200])
    if st.last_error is not None and st.last_error[2] == len(run.turns):
        run.terminal.append(Terminal("backend_error", st.last_error[1][:400], st.last_error[0]))
    if st.prompts and not run.turns:
        asm.note(0, "the prompts sent are not in the stream (codex exec --json does not print them)")
    return asm.finish()
