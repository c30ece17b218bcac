"""Claude Code session JSONL (``~/.claude/projects/<dir>/<session>.jsonl``).

One object per line: ``summary`` lines (``{type, summary, leafUuid}``), then ``user`` and
``assistant`` lines with an envelope (``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``...)
and an Anthropic Messages ``message``. One API response is split over several lines (one per
content block) sharing ``message.id``: they are one turn, and their repeated ``usage`` is counted
once (the last line's, which has the final output count). Tool results are user lines with
``tool_result`` blocks, paired by ``tool_use_id``; the structured ``toolUseResult`` beside them
gives the file content a ``Read`` saw and an ``Edit``'s ``originalFile`` (the base the edit is
applied to). Streaming: the file is read line by line.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers.common import (
    ERROR,
    FAILED,
    Assembler,
    as_int,
    as_str,
    excerpt,
    iso_ms,
    object_lines,
    text_of,
)
from ktui.trace.importers.kernels import norm_path
from ktui.trace.model import Run, ToolCall, Turn

NAME = "claude-code"
LABEL = "Claude Code session JSONL"
LINE_BASED = True
_EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


def detect_line(obj: Any) -> bool:
    t = obj.get("type")
    if t == "summary" and "leafUuid" in obj:
        return True
    if t in ("user", "assistant", "system") and "uuid" in obj and "sessionId" in obj:
        return isinstance(obj.get("message"), dict) or t == "system"
    return False


class _State:
    def __init__(self, asm: Assembler) -> None:
        self.asm = asm
        self.turn: Turn | None = None
        self.turn_mid: str | None = None
        self.usage: dict[int, dict] = {}  # turn index -> last usage of its message id
        self.deferred: dict[str, ToolCall] = {}  # edit/write calls tracked when their result arrives
        self.cwd: str | None = None


def load(path: str, data: bytes | None = None) -> Run:
    asm = Assembler(path, NAME)
    st = _State(asm)
    for no, off, raw, obj in object_lines(asm, path, data):
        ts = iso_ms(obj.get("timestamp"))
        kind = obj.get("type") if isinstance(obj.get("type"), str) else "?"
        try:
            _line(st, obj, no, ts, kind)
        except (TypeError, AttributeError, KeyError, ValueError) as exc:
            asm.problem(no, f"could not interpret a '{kind}' line ({type(exc).__name__}: {exc})", excerpt(raw))
        asm.event(no, off, len(raw), kind, ts, "agent" if kind == "assistant" else kind,
                  st.turn.index if st.turn is not None and kind == "assistant" else None)
    for c in st.deferred.values():  # edits whose result never came
        asm.track_call(c, st.cwd)
    for idx, u in st.usage.items():
        t = asm.run.turns[idx]
        tin = sum(as_int(u.get(k)) or 0 for k in ("input_tokens", "cache_creation_input_tokens",
                                                  "cache_read_input_tokens"))
        t.tokens_in = tin
        t.tokens_out = as_int(u.get("output_tokens"))
    return asm.finish()


def _line(st: _State, obj: dict, no: int, ts: int | None, kind: str) -> None:
    asm, run = st.asm, st.asm.run
    if isinstance(obj.get("cwd"), str):
        st.cwd = obj["cwd"]
    if kind == "summary":
        asm.note(no, f"summary: {as_str(obj.get('summary')) or ''}")
        return
    msg = obj.get("message")
    if kind == "system":
        asm.note(no, as_str(obj.get("content")) or "system")
        asm.ts(ts)
        return
    if not isinstance(msg, dict):
        asm.warn(no, f"'{kind}' line without a message object")
        return
    content = msg.get("content")
    if kind == "assistant":
        mid = msg.get("id") if isinstance(msg.get("id"), str) else None
        model = msg.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            run.model = run.model or model
        if st.turn is None or mid is None or mid != st.turn_mid:
            st.turn = asm.turn(no, ts, "agent" if not obj.get("isSidechain") else "subagent")
            st.turn_mid = mid
        else:
            asm.touch(st.turn, no, ts)
        t = st.turn
        if isinstance(msg.get("usage"), dict):
            st.usage[t.index] = msg["usage"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for b in blocks:
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt == "text":
                asm.assistant_text(t, as_str(b.get("text")), no)
            elif bt in ("thinking", "redacted_thinking"):
                asm.add_reasoning(t, as_str(b.get("thinking")) or "(redacted thinking)")
            elif bt in ("tool_use", "server_tool_use"):
                inp = b.get("input")
                c = asm.call(t, b.get("name"), inp if isinstance(inp, dict) else {"input": inp}, no, ts, b.get("id"))
                if c.name in _EDIT_TOOLS:
                    st.deferred[c.id or f"#{c.index}"] = c
                else:
                    asm.track_call(c, st.cwd)
        return
    if kind == "user":
        st.turn = None  # the next assistant line starts a new turn
        if isinstance(content, str):
            asm.message(no, "user:meta" if obj.get("isMeta") else "user", content)
            asm.ts(ts)
            return
        blocks = content if isinstance(content, list) else []
        tur = obj.get("toolUseResult")
        texts = []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") != "tool_result":
                if b.get("type") == "text":
                    texts.append(as_str(b.get("text")) or "")
                continue
            cid = b.get("tool_use_id")
            c = asm.pending(cid)
            if c is None:
                asm.warn(no, f"tool_result for {cid!r} has no pending tool_use")
                continue
            _observe(st, c, tur)
            key = c.id or f"#{c.index}"
            if key in st.deferred:
                asm.track_call(st.deferred.pop(key), st.cwd)
            is_err = b.get("is_error") is True
            text = text_of(b.get("content"))
            status = None
            if is_err:
                status = FAILED if c.name == "Bash" and "blocked" not in text and "approval" not in text else ERROR
            effect = tur if isinstance(tur, dict) and c.name not in ("Read",) else None
            if isinstance(effect, dict):
                effect = {k: v for k, v in effect.items() if k not in ("originalFile", "file")}
            asm.result(c, text, no, ts, status=status, is_error=is_err, effect=effect)
        if texts:
            asm.message(no, "user", "\n".join(texts))
        asm.ts(ts)


def _observe(st: _State, c: ToolCall, tur: Any) -> None:
    """File content the result shows: a whole-file Read, an Edit's original file."""
    if not isinstance(tur, dict):
        return
    f = tur.get("file")
    if c.name == "Read" and isinstance(f, dict) and isinstance(f.get("content"), str):
        start, n, total = as_int(f.get("startLine")), as_int(f.get("numLines")), as_int(f.get("totalLines"))
        whole = (start in (None, 1)) and (n is None or total is None or n >= total)
        if whole and isinstance(f.get("filePath"), str):
            st.asm.files.observe(norm_path(f["filePath"], st.cwd), f["content"])
    orig = tur.get("originalFile")
    fp = tur.get("filePath") or c.args.get("file_path")
    if isinstance(orig, str) and isinstance(fp, str):
        p = norm_path(fp, st.cwd)
        if p not in st.asm.files.content:
            st.asm.files.observe(p, orig)
