"""Gemini CLI chat recordings as JSON lines (``chats/session-<time>-<id8>.jsonl``, 2026).

Gemini CLI's ``ChatRecordingService`` (``packages/core/src/services/chatRecordingService.ts``,
``chatRecordingTypes.ts``) now appends to a JSON-lines file instead of rewriting one object: a
metadata line ``{sessionId, projectHash, startTime, lastUpdated, kind, directories}``, then

- message records (``{id, timestamp, type, content, ...}``, the legacy recording's messages): a
  message is written again, whole, each time its tool calls, results, thoughts or tokens change;
  the last copy wins and keeps the place of the first (``loadConversationRecord``: a ``Map`` keyed
  by ``id``);
- ``{"$set": {...}}``: metadata updates (``lastUpdated``, ``summary``, ``directories``, a new
  ``sessionId`` on resume); ``$set.messages``, when not empty, replaces the whole message list;
- ``{"$rewindTo": id}``: the message ``id`` and every one after it are dropped (all of them when
  the id is not known);

and subagents' recordings lie under ``chats/<parent session id>/<id>.jsonl``. A legacy
``session-*.json`` resumed by a newer CLI is copied into the ``.jsonl`` beside it (metadata, then
every message). The folded recording is read as the legacy one
(:mod:`ktui.trace.importers.gemini_cli`), each message at the line of its last copy.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers import gemini_cli
from ktui.trace.importers.common import Assembler, object_lines
from ktui.trace.model import Run
from ktui.trace.words import count

NAME = "gemini-cli-jsonl"
LABEL = "Gemini CLI chat recording as JSON lines (session-*.jsonl)"
LINE_BASED = True
_TYPES = {"user", "gemini", "info", "warning", "error"}
_MAX_MESSAGES = 200_000


def _is_meta(obj: dict) -> bool:
    return isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str) and "id" not in obj \
        and "type" not in obj


def _is_message(obj: dict) -> bool:
    return isinstance(obj.get("id"), str) and obj.get("type") in _TYPES and "timestamp" in obj and "content" in obj


def detect_line(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("$rewindTo"), str) or (isinstance(obj.get("$set"), dict) and len(obj) == 1):
        return True
    return _is_meta(obj) or _is_message(obj)


def load(path: str, data: bytes | None = None) -> Run:
    probe = Assembler(path, NAME)  # reads the lines and collects what is wrong with them
    meta: dict = {}
    msgs: dict[str, dict] = {}  # id -> the last copy (in the place of the first)
    at: dict[str, int] = {}  # id -> the line of that copy
    rewrites = rewinds = dropped = 0
    for no, _off, _raw, obj in object_lines(probe, path, data):
        if isinstance(obj.get("$rewindTo"), str):
            rid = obj["$rewindTo"]
            ids = list(msgs)
            cut = ids.index(rid) if rid in msgs else 0
            for k in ids[cut:]:
                del msgs[k]
                at.pop(k, None)
            rewinds += 1
            dropped += len(ids) - cut
        elif isinstance(obj.get("id"), str):
            if not _is_message(obj):
                probe.warn(no, f"a record with an id but not a Gemini CLI message (type {obj.get('type')!r})")
            if obj["id"] in msgs:
                rewrites += 1
            elif len(msgs) >= _MAX_MESSAGES:
                continue
            msgs[obj["id"]] = obj
            at[obj["id"]] = no
        elif isinstance(obj.get("$set"), dict):
            meta.update(obj["$set"])
        elif _is_meta(obj):
            meta.update(obj)
        else:
            probe.warn(no, "a line that is neither the metadata, a message, '$set' nor '$rewindTo' (skipped)")
    replaced = meta.pop("messages", None)
    if isinstance(replaced, list) and replaced:  # as Gemini CLI loads it: $set.messages wins
        messages, lines = replaced, None
    else:
        messages, lines = list(msgs.values()), [at[k] for k in msgs]
    whole = dict(meta)
    whole["messages"] = messages
    run = gemini_cli.read_session(whole, path, lines, NAME)
    run.problems = probe.run.problems + run.problems
    run.incomplete = run.incomplete or probe.run.incomplete  # a last line still being written
    run.size_bytes = max(run.size_bytes, probe.run.size_bytes)
    said = []
    if rewrites:
        said.append(f"{count(rewrites, 'message record')} written again as their calls, results or tokens came "
                    "(the last copy of each read)")
    if rewinds:
        said.append(f"{count(rewinds, 'rewind')} dropped {count(dropped, 'message')}")
    if replaced is not None and isinstance(replaced, list) and replaced:
        said.append(f"the message list was replaced by a '$set' ({count(len(replaced), 'message')}): that list is read")
    if not meta.get("sessionId"):
        said.append("no metadata line: the session is not known (a tail of the recording?)")
    for text in said:
        run.notes.append((0, text))
    return run
