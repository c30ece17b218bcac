"""Gemini CLI chat recordings: one session as one JSON object.

Gemini CLI records a session as ``{sessionId, projectHash, startTime, lastUpdated, messages}``
(``~/.gemini/tmp/<project hash>/chats/session-*.json``; the file Harbor's ``gemini-cli`` agent
converts to ATIF, and Harbor's RFC 0001 sample ``gemini-cli-trajectory.json``). Each message has
``id``, ``timestamp`` (ISO), ``type`` and ``content``:

- ``user``: the task, or a later prompt;
- ``gemini``: one model response: ``content`` (its text), ``thoughts`` (``[{subject,
  description}]``), ``tokens`` (``input``, ``output``, ``cached``, ``thoughts``, ``tool``),
  ``model``, and ``toolCalls``: ``[{id, name, args, status: success | error | cancelled, result:
  [{functionResponse: {id, name, response: {output | error}}}], resultDisplay}]`` (the call and its
  result in one place);
- ``info``, ``warning``, ``error``: the CLI's own messages (an ``error`` last is how the run ended).

Newer recordings (2026) add ``kind`` (``main``; ``subagent`` for a subagent's or a background
task's own recording, written under ``chats/<parent session>/``), ``summary`` (the CLI's one-line
summary of the session, or the subagent's final response) and ``directories``: a subagent's run
has the persona ``subagent <sessionId>``, the summary a note. A session whose only message is the
user's prompt (the model never answered: many such files in real ``chats/`` folders) is a session
with no turn, not "not a trace".

Tools: ``write_file`` (``file_path``, ``content``), ``replace`` (``file_path``, ``old_string``,
``new_string``), ``run_shell_command`` (``command``) ...; a write or edit whose status is not
``success`` changed nothing. Where a done write's or edit's ``resultDisplay`` holds
``originalContent`` / ``newContent`` (the file before and after), ``newContent`` is the version. "Lines" are the messages' ordinals (1, 2, ...). Input tokens are
``input`` (the cached ones among them, as Harbor's converter reads them); output ``output`` +
``thoughts`` + ``tool``.
"""

from __future__ import annotations

import os
from typing import Any

from ktui.trace.importers.common import Assembler, as_dict, as_int, as_list, as_str, iso_ms, text_of
from ktui.trace.model import ERROR, Actor, Run, Terminal, ToolCall

NAME = "gemini-cli"
LABEL = "Gemini CLI chat recording (session JSON)"
LINE_BASED = False

_TYPES = {"user", "gemini", "info", "warning", "error"}


def detect_object(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("sessionId"), str) or not isinstance(obj.get("messages"), list):
        return False
    head = [m for m in obj["messages"][:20] if isinstance(m, dict)]
    typed = bool(head) and all(m.get("type") in _TYPES for m in head)
    # a session the model never answered (the prompt alone) is still one, where the recording's own
    # ``projectHash`` says so; without it a model's message is needed
    return typed and (any(m.get("type") == "gemini" for m in head) or "projectHash" in obj) \
        or (not obj["messages"] and "projectHash" in obj)


def _result_text(tc: dict) -> tuple[str, bool]:
    """(the tool's output, whether it is an error) from a call's functionResponse(s)."""
    out, err = [], False
    for r in as_list(tc.get("result"))[:50]:
        resp = as_dict(as_dict(as_dict(r).get("functionResponse")).get("response"))
        if isinstance(resp.get("error"), str):
            out.append(resp["error"])
            err = True
        elif resp.get("output") is not None:
            o = resp["output"]
            out.append(o if isinstance(o, str) else text_of(o) if isinstance(o, list) else str(o))
    if not out and isinstance(tc.get("resultDisplay"), str):
        out.append(tc["resultDisplay"])
    return "\n".join(out), err


def _as_left(asm: Assembler, c: ToolCall, shown: Any) -> bool:
    """A write or edit whose result shows the whole file (``resultDisplay``: ``originalContent``,
    the file just before the call, and ``newContent``, the file it left): that content is the
    version, whatever the old / new strings would give replayed on what the trace showed before
    (the file may have changed outside the recorded calls: the user's own edit; Gemini CLI may
    also correct an edit's strings before applying it). False where the result does not show it."""
    if not isinstance(shown, dict) or not isinstance(shown.get("newContent"), str):
        return False
    fp = c.args.get("file_path") if isinstance(c.args.get("file_path"), str) else c.args.get("path")
    if not isinstance(fp, str) or not fp:
        fp = shown.get("filePath")
    if not isinstance(fp, str) or not fp:
        return False
    p = asm.files.locate(fp)
    orig, known = shown.get("originalContent"), asm.files.content.get(p)
    if isinstance(orig, str) and known is not None and orig != known:
        asm.note(c.line, f"{c.name} of {fp[:200]}: the file had changed since the trace last showed it "
                         "(the tool's originalContent differs); the version is the file the tool left")
    asm.files.write(p, shown["newContent"], c, c.turn, c.line, f"{c.name} (the file as the tool left it)")
    return True


def load_object(obj: Any, path: str) -> Run:
    return read_session(obj, path)


def read_session(obj: Any, path: str, lines: list[int] | None = None, name: str = NAME) -> Run:
    """A recording as one object; ``lines``: the file line each message came from (the JSON-lines
    recording's, :mod:`ktui.trace.importers.gemini_cli_jsonl`), else the messages' ordinals."""
    asm = Assembler(path, name)
    run = asm.run
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        asm.problem(0, "not a Gemini CLI session: expected an object with a 'messages' list", "", "error", "$.messages")
        return asm.finish()
    run.persona = "gemini-cli"
    asm.note(0, f"Gemini CLI session {as_str(obj.get('sessionId')) or '?'}")
    if obj.get("kind") == "subagent":
        # a subagent's own recording (``chats/<parent session>/<id>.json``, or a background task's
        # folder such as ``chats/skill-extraction-<id>/``): said, like Claude Code's subagents
        parent = os.path.basename(os.path.dirname(path)) if path else ""
        run.persona = f"subagent {as_str(obj.get('sessionId')) or '?'}"[:60]
        if parent and parent != "chats":
            asm.note(0, f"subagent of {parent[:80]}")
    summary = obj.get("summary")
    if isinstance(summary, str) and summary.strip():
        asm.note(0, f"summary: {summary.strip()[:300]}")
    asm.ts(iso_ms(obj.get("startTime")))
    last_error = None
    for i, m in enumerate(obj["messages"]):
        line, where = (lines[i] if lines is not None and i < len(lines) else i + 1), f"$.messages[{i}]"
        if not isinstance(m, dict) or m.get("type") not in _TYPES:
            asm.warn(line, f"message {i} is not a Gemini CLI message (type user, gemini, info, warning, error)", where)
            continue
        ts, kind = iso_ms(m.get("timestamp")), m["type"]
        content = m.get("content")
        text = content if isinstance(content, str) else text_of(content) if isinstance(content, list) else ""
        asm.event(line, 0, 0, kind, ts, kind, len(run.turns) if kind == "gemini" else None)
        if kind == "user":
            asm.message(line, "user", text)
            asm.ts(ts)
            last_error = None
            continue
        if kind != "gemini":
            asm.note(line, f"{kind}: {text[:300]}")
            asm.ts(ts)
            last_error = (line, text) if kind == "error" else None
            continue
        last_error = None
        t = asm.turn(line, ts)
        model = as_str(m.get("model"))
        if model and not run.model:
            run.model = model[:200]
            run.actors.append(Actor(id="agent", model=run.model, persona=run.persona))
        thoughts = [f"{as_str(as_dict(x).get('subject')) or ''}: {as_str(as_dict(x).get('description')) or ''}"
                    .strip(": ") for x in as_list(m.get("thoughts"))[:200]]
        asm.add_reasoning(t, "\n".join(x for x in thoughts if x))
        asm.assistant_text(t, text, line)
        tok = as_dict(m.get("tokens"))
        t.tokens_in = as_int(tok.get("input"))
        outs = [as_int(tok.get(k)) for k in ("output", "thoughts", "tool")]
        t.tokens_out = sum(x for x in outs if x) if any(x is not None for x in outs) else None
        tcs = m.get("toolCalls")
        if tcs is not None and not isinstance(tcs, list):
            asm.warn(line, f"'toolCalls' is a JSON {type(tcs).__name__}, not a list", where + ".toolCalls")
            tcs = []
        for j, tc in enumerate((tcs or [])[:500]):
            if not isinstance(tc, dict):
                asm.warn(line, f"tool call {j} is not an object", f"{where}.toolCalls[{j}]")
                continue
            args = tc.get("args") if isinstance(tc.get("args"), dict) else {}
            c = asm.call(t, as_str(tc.get("name")) or "?", args, line, iso_ms(tc.get("timestamp")) or ts,
                         as_str(tc.get("id")))
            out, err = _result_text(tc)
            status = as_str(tc.get("status"))
            failed = err or (status is not None and status != "success")
            if status == "success" or (status is None and not err):
                # a refused or cancelled write changed nothing; a done one left the file its result shows
                if not _as_left(asm, c, tc.get("resultDisplay")):
                    asm.track_call(c)
            if status is not None or tc.get("result") is not None:
                asm.result(c, out or (status or ""), line, None, is_error=failed, status=ERROR if failed else None)
    if last_error is not None:
        run.terminal.append(Terminal("backend_error", last_error[1][:400], last_error[0]))
    return asm.finish()
