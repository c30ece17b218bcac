"""Claude Code session JSONL (``~/.claude/projects/<dir>/<session>.jsonl``).

One object per line: ``summary`` lines (``{type, summary, leafUuid}``), then ``user`` and
``assistant`` lines with an envelope (``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``...)
and an Anthropic Messages ``message``. One API response is split over several lines (one per
content block) sharing ``message.id``: they are one turn, and their repeated ``usage`` is counted
once (the last line's, which has the final output count). Tool results are user lines with
``tool_result`` blocks, paired by ``tool_use_id``; the structured ``toolUseResult`` beside them
gives the file content a ``Read`` saw and an ``Edit`` / ``Write``'s ``originalFile`` (the file as it
was just before the call: the base the edit is applied to, whenever it is there). A write or edit
whose ``tool_result`` has ``is_error: true`` changed nothing and is not applied. Claude Code 2.x
also writes bookkeeping lines with no message (``queue-operation``, ``file-history-snapshot``,
``custom-title``, ``last-prompt``, ``progress``, ``attachment``, ``atis-latch``, ``cost-state``
...): they are not problems. A message Claude Code made itself (model ``<synthetic>``,
``isApiErrorMessage``: "Not logged in", "API Error: ..." after its retries) is not a model's
response (a note; the time up to it is still the time spent on the call that failed); when nothing
follows it, the run ended on that error (``backend_error``). It
also writes lines out of order at times (a ``tool_result`` before the ``tool_use`` it answers:
paired when the call comes) and, with two writers, a record twice (the same ``uuid``: read once).
A subagent's transcript (its lines on the side chain, with an ``agentId``) is a run whose persona
is ``subagent <agentId>``.

The same messages printed by ``claude --print --output-format=stream-json`` (what harnesses keep:
Harbor's ``agent/claude-code.txt``) are read too: a ``system`` ``init`` line (``session_id``,
``model``, ``tools``, ``claude_code_version``), ``assistant`` / ``user`` lines with ``session_id``
and ``parent_tool_use_id`` (a subagent's lines have one), snake-case fields
(``is_api_error_message``, ``tool_use_result``), and a last ``result`` line (``subtype``,
``is_error``, ``result``, ``num_turns``, ``duration_ms``, ``total_cost_usd``, ``terminal_reason``):
how the run ended. Lines that are not JSON there are the CLI's other output (stderr captured with
it): notes, not problems.
Streaming: the file is read line by line.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ktui.trace.importers import claude_code_records as records
from ktui.trace.importers.common import (
    ERROR,
    FAILED,
    Assembler,
    JSONError,
    as_int,
    as_str,
    excerpt,
    iso_ms,
    object_lines,
    parse_json,
    text_of,
)
from ktui.trace.importers.kernels import norm_path
from ktui.trace.model import Run, ToolCall, Turn
from ktui.trace.words import count

NAME = "claude-code"
LABEL = "Claude Code session JSONL"
LINE_BASED = True
_EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}
# line types Claude Code writes besides messages: bookkeeping, not part of the conversation
BOOKKEEPING = {"queue-operation", "file-history-snapshot", "custom-title", "ai-title", "last-prompt", "progress",
               "attachment", "agent-name", "tag", "pr-link", "mode", "worktree-state", "permission-mode",
               "content-replacement", "marble-origami-commit", "marble-origami-snapshot", "agent-setting",
               "atis-latch", "cost-state", "teleported-from"}


def _stream_json(obj: dict) -> bool:
    """A line of ``--output-format=stream-json``: the init line, a message line, the result line."""
    t = obj.get("type")
    if not isinstance(obj.get("session_id"), str):
        return False
    if t == "system":
        return obj.get("subtype") == "init" and ("tools" in obj or "claude_code_version" in obj)
    if t in ("assistant", "user"):
        return isinstance(obj.get("message"), dict) and "parent_tool_use_id" in obj
    return t == "result" and ("num_turns" in obj or "duration_ms" in obj) and "subtype" in obj


def detect_line(obj: Any) -> bool:
    if _stream_json(obj):
        return True
    t = obj.get("type")
    if t == "summary" and "leafUuid" in obj:
        return True
    if t == "queue-operation" and "operation" in obj and "sessionId" in obj:
        return True
    if t == "file-history-snapshot" and "messageId" in obj and isinstance(obj.get("snapshot"), dict):
        return True
    if t == "teleported-from" and "remoteSessionId" in obj:  # a session brought over from the web
        return True
    if t in ("user", "assistant", "system") and "uuid" in obj and "sessionId" in obj:
        return isinstance(obj.get("message"), dict) or t == "system"
    return False


class _State:
    def __init__(self, asm: Assembler) -> None:
        self.asm = asm
        self.turn: Turn | None = None
        self.turn_mid: str | None = None
        self.last_turn: Turn | None = None  # the turn of the last assistant line
        self.usage: dict[int, dict] = {}  # turn index -> last usage of its message id
        self.deferred: dict[str, ToolCall] = {}  # edit/write calls tracked when their result arrives
        self.cwd: str | None = None
        self.unknown_types: dict[str, int] = {}  # line types without a message, not known: first line
        self.uuids: set[str] = set()  # records read (Claude Code writes a record once per uuid)
        self.repeats = 0
        # (kind, time, message id, block) of the records read: a history written again with new
        # uuids (the same times, message ids and content) is read once
        self.keys: set[tuple] = set()
        self.replayed = 0
        # a side agent's transcript (a compaction, a side question) that starts with a copy of its
        # session's conversation: the session's own record uuids, and how many were skipped
        self.parent_uuids: set[str] | None = None
        self.copied = 0
        # results written before their call (2.x writes lines out of order at times): tool_use_id ->
        # (block, toolUseResult, line, time)
        self.early: dict[str, tuple[dict, Any, int, int | None]] = {}
        # the last message Claude Code made itself instead of a model's response: (turn, line, text)
        self.api_error: tuple[Turn, int, str] | None = None
        self.stream = False  # --output-format=stream-json lines seen
        self.init_model: str | None = None


def load(path: str, data: bytes | None = None) -> Run:
    asm = Assembler(path, NAME)
    st = _State(asm)
    for no, off, raw, obj in object_lines(asm, path, data):
        ts = iso_ms(obj.get("timestamp"))
        typ = obj.get("type")
        kind = typ if isinstance(typ, str) else "?"
        try:
            _line(st, obj, no, ts, kind)
        except (TypeError, AttributeError, KeyError, ValueError) as exc:
            asm.problem(no, f"could not interpret a '{kind}' line ({type(exc).__name__}: {exc})", excerpt(raw))
        asm.event(no, off, len(raw), kind, ts, "agent" if kind == "assistant" else kind,
                  st.turn.index if st.turn is not None and kind == "assistant" else None)
    for cid, (_, _, no, _) in st.early.items():
        asm.warn(no, f"tool_result for {cid!r} has no tool_use")
    if st.repeats:
        asm.note(0, f"{count(st.repeats, 'record')} written twice (the same uuid): each read once")
    if st.copied:
        asm.note(0, f"{count(st.copied, 'record')} at its start: a copy of its session's conversation "
                    "(the same uuids as in the session's file beside it): not read as this agent's work")
    if st.replayed:
        asm.note(0, f"{count(st.replayed, 'record')} written again under new uuids (a history replayed: the same times, "
                    "message ids and content): each read once")
    for c in st.deferred.values():  # edits whose result never came
        asm.track_call(c, st.cwd)
    if st.stream:
        _stream_tail(st)
    if st.api_error is not None:
        t, no, text = st.api_error
        if asm.run.turns and asm.run.turns[-1] is t:  # nothing after it: the run ended on it
            from ktui.trace.model import Terminal

            asm.run.terminal.append(Terminal("backend_error", text[:400], no))
    for kind, no in st.unknown_types.items():
        asm.warn(no, f"'{kind}' lines have no message object (a line type ktui does not know; skipped)")
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
    if kind in ("system", "result") and _stream_json(obj):
        st.stream = True
        _stream_line(st, obj, no, ts, kind)
        return
    if kind in ("user", "assistant") and not st.uuids and obj.get("isSidechain") is True \
            and isinstance(obj.get("agentId"), str) and run.persona is None:
        # a subagent's transcript (2.x: <session>/subagents/agent-<id>.jsonl) starts on the side chain
        run.persona = f"subagent {obj['agentId'][:40]}"
        st.parent_uuids = records.copied_from_session(run.path, obj.get("uuid"))
        _subagent_meta(st, obj["agentId"])
    uid = obj.get("uuid")
    msg = obj.get("message")
    if st.parent_uuids is not None and isinstance(uid, str) and uid in st.parent_uuids:
        st.copied += 1  # its session's record, copied at its start
        return
    if isinstance(uid, str) and kind in ("user", "assistant"):
        if uid in st.uuids:  # the same record again (two writers, or a write redone): read once
            st.repeats += 1
            return
        st.uuids.add(uid)
        keys = records.record_keys(kind, obj.get("timestamp"), msg)
        if keys and all(k in st.keys for k in keys):  # the same record under a new uuid (a history written again)
            st.replayed += 1
            st.asm.ts(ts)  # what comes next in this chain follows it
            st.turn = None
            return
        st.keys.update(keys)
    if not isinstance(msg, dict) and kind in BOOKKEEPING:
        if kind == "queue-operation" and obj.get("operation") == "enqueue" and as_str(obj.get("content")):
            asm.note(no, f"queued while the agent was busy: {obj['content']}")
        elif kind == "cost-state":
            _cost_state(asm, obj, no)
        return
    if kind == "system":
        said = records.system_note(obj)
        if said:
            asm.note(no, said)
        asm.ts(ts)
        return
    if not isinstance(msg, dict):
        if kind in ("user", "assistant"):
            asm.warn(no, f"'{kind}' line without a message object")
        else:
            st.unknown_types.setdefault(kind, no)
        return
    content = msg.get("content")
    if kind == "assistant":
        _assistant(st, obj, msg, content, no, ts)
    elif kind == "user":
        _user(st, obj, content, no, ts)


def _assistant(st: _State, obj: dict, msg: dict, content: Any, no: int, ts: int | None) -> None:
    asm, run = st.asm, st.asm.run
    mid = msg.get("id") if isinstance(msg.get("id"), str) else None
    model = msg.get("model")
    if isinstance(model, str) and model and not model.startswith("<"):
        run.model = run.model or model
    if mid is not None and mid == st.turn_mid and st.last_turn is not None:
        # the same response (its lines can come around a result written out of order)
        st.turn = st.last_turn
        asm.touch(st.turn, no, ts)
    elif st.turn is None or mid is None or mid != st.turn_mid:
        side = obj.get("isSidechain") is True or isinstance(obj.get("parent_tool_use_id"), str)
        st.turn = asm.turn(no, ts, "subagent" if side else "agent")
        st.turn_mid = mid
    else:
        asm.touch(st.turn, no, ts)
    st.last_turn = st.turn
    t = st.turn
    if obj.get("isApiErrorMessage") is True or obj.get("is_api_error_message") is True or \
            model == "<synthetic>":  # Claude Code wrote it itself
        said = " ".join(as_str(b.get("text")) or "" for b in content if isinstance(b, dict)) \
            if isinstance(content, list) else as_str(content) or ""
        err = as_str(obj.get("error"))
        text = (f"{err}: " if err else "") + said.strip()
        asm.note(no, f"a message Claude Code made itself, not a model's response: {text}"[:400])
        st.api_error = (t, no, text or "an error message of Claude Code's own")
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
            early = st.early.pop(c.id, None) if c.id else None
            if early is not None:  # its result was written first
                _tool_result(st, c, *early)


def _stream_line(st: _State, obj: dict, no: int, ts: int | None, kind: str) -> None:
    """The init line (what the CLI was started with) and the result line (how the run ended)."""
    asm = st.asm
    if kind == "system":
        st.init_model = as_str(obj.get("model"))
        tools = obj.get("tools")
        asm.note(no, f"Claude Code {as_str(obj.get('claude_code_version')) or '?'} started "
                     f"(--output-format=stream-json) · model {st.init_model or '?'}"
                     + (f" · {len(tools)} tools" if isinstance(tools, list) else "")
                     + (f" · {obj['permissionMode']}" if isinstance(obj.get("permissionMode"), str) else ""))
        asm.ts(ts)
        return
    from ktui.trace.model import Terminal

    parts = [f"{k} {obj[k]}" for k in ("subtype", "num_turns", "duration_ms", "duration_api_ms", "total_cost_usd",
                                       "terminal_reason") if isinstance(obj.get(k), (str, int, float))]
    asm.note(no, "Claude Code's result: " + ", ".join(parts))
    said = (as_str(obj.get("result")) or "").strip()
    sub = as_str(obj.get("subtype")) or ""
    if obj.get("is_error") is True:
        if st.api_error is None:  # (an error message of its own already says how it ended)
            asm.run.terminal.append(Terminal("backend_error", (said or sub or "error")[:400], no))
    elif sub.startswith("error"):
        asm.run.terminal.append(Terminal("halt", f"{sub}: {said}"[:400] if said else sub, no))
    else:
        asm.run.terminal.append(Terminal("halt", ("Claude Code finished: " + said)[:400], no))
    asm.ts(ts)


def _stream_tail(st: _State) -> None:
    """After a stream-json file: its non-JSON lines were the CLI's other output, not problems."""
    run = st.asm.run
    keep = []
    block: list[tuple[int, str]] = []  # consecutive lines of one output (a stack trace): one note

    def flush() -> None:
        if block:
            first, text = block[0][0], block[0][1]
            more = f" (+{len(block) - 1} more line{'s' if len(block) > 2 else ''}, to line {block[-1][0]})" \
                if len(block) > 1 else ""
            run.notes.append((first, f"other output of the CLI (not a stream-json line): {text}{more}"))
            block.clear()

    for p in run.problems:
        if p.message.startswith("not valid JSON") and not p.excerpt.lstrip().startswith("{"):
            if block and p.line != block[-1][0] + 1:
                flush()
            block.append((p.line, p.excerpt))
        else:
            keep.append(p)
    flush()
    run.problems = keep
    if run.model is None and st.init_model and not st.init_model.startswith("<"):
        run.model = st.init_model


def _cost_state(asm: Assembler, obj: dict, no: int) -> None:
    """Claude Code's own totals for the session (2.1.2xx ``cost-state`` line): a note."""
    parts = []
    for key, label, scale, unit in (("totalCostUSD", "cost", 1, " USD"), ("totalAPIDuration", "API time", 1000, " s"),
                                    ("totalToolDuration", "tool time", 1000, " s"),
                                    ("totalDuration", "session", 1000, " s")):
        v = obj.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(f"{label} {v / scale:g}{unit}")
    if parts:
        asm.note(no, "Claude Code's totals: " + ", ".join(parts))


def _user(st: _State, obj: dict, content: Any, no: int, ts: int | None) -> None:
    asm = st.asm
    st.turn = None  # the next assistant line starts a new turn
    if obj.get("isCompactSummary") is True:  # what the compaction kept of the conversation, not a prompt
        asm.message(no, "user:compact-summary", content if isinstance(content, str) else text_of(content))
        asm.ts(ts)
        return
    if isinstance(content, str):
        asm.message(no, "user:meta" if obj.get("isMeta") else "user", content)
        asm.ts(ts)
        return
    blocks = content if isinstance(content, list) else []
    tur = obj.get("toolUseResult", obj.get("tool_use_result"))
    texts = []
    for b in blocks:
        if not isinstance(b, dict):
            continue
        if b.get("type") != "tool_result":
            if b.get("type") == "text":
                texts.append(as_str(b.get("text")) or "")
            elif b.get("type") in ("image", "document"):  # pasted: not in the text, but said
                texts.append(records.attached(b))
            continue
        cid = b.get("tool_use_id")
        c = asm.pending(cid)
        if c is None:
            if isinstance(cid, str) and cid and cid not in st.early and len(st.early) < 10_000:
                st.early[cid] = (b, tur, no, ts)  # its tool_use may come on a later line
            else:
                asm.warn(no, f"tool_result for {cid!r} has no pending tool_use")
            continue
        _tool_result(st, c, b, tur, no, ts)
    if texts:
        asm.message(no, "user", "\n".join(texts))
    asm.ts(ts)


def _tool_result(st: _State, c: ToolCall, b: dict, tur: Any, no: int, ts: int | None) -> None:
    asm = st.asm
    is_err = b.get("is_error") is True
    _observe(st, c, tur, is_err)
    key = c.id or f"#{c.index}"
    if key in st.deferred:
        deferred = st.deferred.pop(key)
        if not is_err:  # a failed Edit / Write changed nothing
            done = records.edited_by_tool(deferred, tur)
            if done is not None:  # the tool matched its old text its own way: its own patch says what it wrote
                asm.files.write(norm_path(done[0], st.cwd), done[1], deferred, deferred.turn, deferred.line,
                                f"{deferred.name} (the tool's own patch: its old text matched as the tool matches)")
            else:
                asm.track_call(deferred, st.cwd)
    text = text_of(b.get("content"))
    if isinstance(b.get("content"), list):  # a screenshot or a PDF page the tool returned
        shown = [records.attached(x) for x in b["content"] if isinstance(x, dict) and x.get("type") in ("image", "document")]
        text = "\n".join([text] * bool(text) + shown) if shown else text
    if text.startswith("<persisted-output>"):
        text = _persisted(st, text)
    status = None
    if is_err:
        status = FAILED if c.name == "Bash" and "blocked" not in text and "approval" not in text else ERROR
    effect = tur if isinstance(tur, dict) and c.name not in ("Read",) else None
    if isinstance(effect, dict):
        effect = {k: v for k, v in effect.items() if k not in ("originalFile", "file")}
    asm.result(c, text, no, ts, status=status, is_error=is_err, effect=effect)


_PERSISTED = re.compile(r"saved to: (?:.*[/\\])?([\w.-]{1,200})[/\\]tool-results[/\\]([\w.-]{1,200}\.txt)\b")
_TAIL = 8192  # what is read of a saved output: its end, where a run's verdict is printed


def _persisted(st: _State, text: str) -> str:
    """A result Claude Code saved to a file (``<persisted-output>``: "Output too large ... saved to:
    .../<session>/tool-results/<id>.txt" and a 2 KB preview): its end is read from that file where
    it lies beside the trace (the session's folder, or the one above a subagent's transcript)."""
    m = _PERSISTED.search(text[:2000])
    path = st.asm.run.path
    if m is None or not path or not os.path.isfile(path) or m.group(1).startswith("."):
        return text  # (a session folder's name never starts with a dot: no "..")
    here = os.path.dirname(os.path.abspath(path))
    for base in (os.path.join(here, m.group(1)), os.path.dirname(here)):  # a session's file; a subagent's
        if os.path.basename(base) != m.group(1):
            continue  # only that session's own folder
        f = os.path.join(base, "tool-results", m.group(2))
        try:
            size = os.path.getsize(f)
            with open(f, "rb") as fh:
                fh.seek(max(0, size - _TAIL))
                tail = fh.read(_TAIL).decode("utf-8", "replace")
        except OSError:
            continue
        cut = "…" if size > _TAIL else ""
        return f"{text}\n\n[the saved output's end ({size:,} bytes in tool-results/{m.group(2)}):]\n{cut}{tail}"
    return text


def _observe(st: _State, c: ToolCall, tur: Any, is_error: bool = False) -> None:
    """File content the result shows: a whole-file Read, an Edit's or Write's original file (the
    file as it was just before the call, so later edits apply to the real content even when an
    earlier version in the trace was only partial)."""
    if not isinstance(tur, dict) or is_error:
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
        st.asm.files.observe(norm_path(fp, st.cwd), orig)


def _subagent_meta(st: _State, agent_id: str) -> None:
    """A subagent's ``agent-<id>.meta.json`` beside its transcript (2.1.x: ``agentType``,
    ``description``): the kind of agent in its persona, what it was asked in a note."""
    path = st.asm.run.path
    if not path or not os.path.basename(path).startswith("agent-"):
        return
    meta = os.path.join(os.path.dirname(path), os.path.basename(path)[:-len(".jsonl")] + ".meta.json") \
        if path.endswith(".jsonl") else None
    try:
        if meta is None or not os.path.isfile(meta) or os.path.getsize(meta) > 1 << 16:
            return
        with open(meta, "rb") as fh:
            raw = fh.read()
    except OSError:
        return
    try:
        obj = parse_json(raw)
    except JSONError:
        return
    if not isinstance(obj, dict):
        return
    kind, what = as_str(obj.get("agentType")), as_str(obj.get("description"))
    if kind:
        st.asm.run.persona = f"subagent {kind[:40]} {agent_id[:24]}"
    if what:
        st.asm.note(0, f"subagent {kind or ''} asked: {what}"[:400])
