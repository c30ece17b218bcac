"""Claude Code records read on their own (no reader state): what a ``system`` line says, the keys
that make a message record itself, an Edit the tool matched its own way (applied from its
``structuredPatch``), the records a side agent copied from its session file, attachments in words.
Split from :mod:`ktui.trace.importers.claude_code`, which calls them. Pure functions: nothing here
raises on data or writes anything."""

from __future__ import annotations

import mmap
import os
import re
from typing import Any

from ktui.trace.importers.common import as_dict, as_int, as_str
from ktui.trace.model import ToolCall

_OWN_UUID = re.compile(rb'"uuid"\s*:\s*"([0-9a-fA-F-]{36})"')
_MAX_SESSION = 512 << 20


def copied_from_session(path: str | None, first: Any) -> set[str] | None:
    """Where a subagent's transcript (``<session>/subagents/agent-<id>.jsonl``) starts with a record
    of its session's own file beside it (a compaction or side-question agent gets a copy of the
    conversation), the uuids of that session's records (each line's last ``uuid``: its own, after
    any nested one); else None. Read-only and bounded; the session file is searched without
    being read into memory when nothing is copied."""
    if not path or not isinstance(first, str) or len(first) != 36:
        return None
    here = os.path.dirname(os.path.abspath(path))
    if os.path.basename(here) != "subagents":
        return None
    session = os.path.dirname(here) + ".jsonl"
    try:
        if not os.path.isfile(session) or os.path.getsize(session) > _MAX_SESSION or os.path.getsize(session) == 0:
            return None
        with open(session, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm.find(b'"' + first.encode("ascii", "replace") + b'"') < 0:
                return None
            own = set()
            for line in iter(mm.readline, b""):
                found = _OWN_UUID.findall(line)
                if found:
                    own.add(found[-1].decode("ascii"))
            return own
    except (OSError, ValueError):
        return None


def attached(b: dict) -> str:
    """An image or document block, said in words (its data is not text)."""
    src = as_dict(b.get("source"))
    kind = as_str(src.get("media_type")) or as_str(src.get("type")) or "?"
    return f"[{b.get('type')}: {kind}]"


def record_keys(kind: str, ts: Any, msg: Any) -> list[tuple]:
    """What makes a message record itself, whatever its uuid: its time, message id and each content
    block (a history written again may split one record's blocks over several records)."""
    if not isinstance(ts, str) or not isinstance(msg, dict):
        return []
    content, mid = msg.get("content"), msg.get("id")
    if isinstance(content, str):
        return [(kind, ts, mid, "s", len(content), content[:64])]
    keys = []
    for b in content if isinstance(content, list) else ():
        if not isinstance(b, dict):
            return []
        body = b.get("text", b.get("thinking", b.get("content", b.get("input"))))
        keys.append((kind, ts, mid, b.get("type"), b.get("id") or b.get("tool_use_id"),
                     len(body) if isinstance(body, (str, list, dict)) else None,
                     body[:64] if isinstance(body, str) else None))
    return keys


def system_note(obj: dict) -> str | None:
    """What a ``system`` line says (2.x: API errors and retries, compactions, hooks, local commands)."""
    sub = as_str(obj.get("subtype")) or ""
    content = as_str(obj.get("content"))
    if sub == "turn_duration":
        return None  # the turn's own times say it
    if sub == "api_error":
        return "API error: " + api_error_text(obj)
    meta = obj.get("compactMetadata") if isinstance(obj.get("compactMetadata"), dict) else \
        obj.get("microcompactMetadata") if isinstance(obj.get("microcompactMetadata"), dict) else None
    if meta is not None:
        parts = [f"{k} {meta[k]:,}" if isinstance(meta.get(k), int) else f"{k} {meta[k]}"
                 for k in ("trigger", "preTokens", "postTokens", "tokensSaved") if isinstance(meta.get(k), (str, int))]
        return (content or sub) + (f" ({', '.join(parts)})" if parts else "")
    if sub == "stop_hook_summary":
        errs = [as_str(e) or str(e) for e in obj.get("hookErrors") or [] if e]
        if not errs and obj.get("preventedContinuation") is not True:
            return None  # the hooks ran and said nothing
        return "stop hook" + (" stopped the agent" if obj.get("preventedContinuation") is True else "") + \
            (": " + "; ".join(errs) if errs else "") + (f" ({obj['stopReason']})" if as_str(obj.get("stopReason")) else "")
    return content or (f"system: {sub}" if sub else None)


def api_error_text(obj: dict) -> str:
    """A failed API call Claude Code will retry: its cause (a connection error code, an HTTP status
    and the provider's error type and message) and the retry."""
    err = as_dict(obj.get("error"))
    cause = obj.get("cause") if isinstance(obj.get("cause"), dict) else err.get("cause")
    parts = []
    if isinstance(cause, dict) and as_str(cause.get("code")):
        parts.append(cause["code"])
    if isinstance(err.get("status"), int):
        parts.append(f"status {err['status']}")
    body = err.get("error")
    for _ in range(3):  # {"error": {"error": {"type", "message"}, "type": "error"}}
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body = body["error"]
    if isinstance(body, dict):
        parts += [x for x in (as_str(body.get("type")), as_str(body.get("message"))) if x]
    what = " ".join(parts[:3]) if parts else (as_str(obj.get("content")) or "no detail recorded")
    n, most, wait = as_int(obj.get("retryAttempt")), as_int(obj.get("maxRetries")), obj.get("retryInMs")
    if n is not None:
        what += f"; retry {n}/{most if most is not None else '?'}"
        if isinstance(wait, (int, float)) and not isinstance(wait, bool):
            what += f" in {wait / 1000:.1f} s"
    return what[:300]


def edited_by_tool(c: ToolCall, tur: Any) -> tuple[str, str] | None:
    """The file an Edit / MultiEdit left, from its result's ``originalFile`` and ``structuredPatch``,
    where its old text is not in the original as written (the tool matched it its own way, e.g.
    typographic quotes as ASCII ones); None where the edit applies as written."""
    if c.name not in ("Edit", "MultiEdit") or not isinstance(tur, dict):
        return None
    orig, hunks, path = tur.get("originalFile"), tur.get("structuredPatch"), tur.get("filePath") or c.args.get("file_path")
    if not isinstance(orig, str) or not isinstance(hunks, list) or not hunks or not isinstance(path, str):
        return None
    edits = c.args.get("edits") if c.name == "MultiEdit" else [c.args]
    if not isinstance(edits, list):
        return None
    text = orig
    for e in edits:
        old, new = (e.get("old_string"), e.get("new_string")) if isinstance(e, dict) else (None, None)
        if not isinstance(old, str) or not isinstance(new, str) or (old and old not in text):
            break
        text = text.replace(old, new) if e.get("replace_all") is True else text.replace(old, new, 1)
    else:
        return None  # it applies as written
    done = apply_hunks(orig, hunks)
    return (path, done) if done is not None else None


def apply_hunks(orig: str, hunks: list) -> str | None:
    """A jsdiff ``structuredPatch`` (hunks of ``oldStart`` / ``oldLines`` and ' ', '-', '+' lines)
    applied to the text it was made from; None where it does not fit."""
    lines = orig.split("\n")
    shift = 0
    for h in hunks:
        if not isinstance(h, dict) or not isinstance(h.get("lines"), list):
            return None
        start, n = as_int(h.get("oldStart")), as_int(h.get("oldLines"))
        if start is None or n is None:
            return None
        at = (start - 1 if n > 0 else start) + shift
        body = [x for x in h["lines"] if isinstance(x, str) and not x.startswith("\\")]
        old = [x[1:] for x in body if x[:1] in (" ", "-")]
        new = [x[1:] for x in body if x[:1] in (" ", "+")]
        if len(old) != n or at < 0 or lines[at:at + n] != old:
            return None
        lines[at:at + n] = new
        shift += len(new) - len(old)
    return "\n".join(lines)
