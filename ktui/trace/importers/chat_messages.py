"""Chat-message logs: a conversation as a list of ``{role, content}`` messages.

The shapes read (by structure):

- one object per line with a ``messages`` list (an RL rollout: Wafer's KernelBench loop adds
  ``completions``, ``rewards``, ``metadata.sample_data``); the first line with messages is the
  run, later ones are reported; its "lines" are message ordinals, as for a single object;
- one message per line (``{role, content, ...}``);
- a single object with ``messages``, or a JSON array of messages (pretty-printed or on one line:
  Cline's ``api_conversation_history.json``).

Assistant content may be a string, or blocks: ``text``, ``thinking`` / ``reasoning``,
``toolCall`` (Wafer: ``{id, name, arguments}``), ``tool_use`` (Anthropic), plus OpenAI's top-level
``tool_calls`` (``function.arguments`` a JSON string). Results are ``role: tool`` messages paired
by ``tool_call_id`` (or Anthropic ``tool_result`` blocks by ``tool_use_id``), else the oldest
pending call. ``completions[]`` (one chat.completion per model call) give per-turn tokens, the
model and the ``created`` time. A reward gives the outcome.

Cline: each message's ``ts`` (epoch ms), ``modelInfo.modelId``, ``metrics.tokens.{prompt (cached
included), completion}`` and ``metrics.cost``; a call's result is a text block of the next user
message, "[name for '...'] Result:\n..." (paired with the latest response's calls first); a call
that asks the user (``plan_mode_respond``, ``ask_followup_question``, ``attempt_completion``) is
answered by the user's words in the next message (``<user_message>``, ``<answer>``, ``<feedback>``);
a call left without a result when the task was interrupted is failed at the "[TASK RESUMPTION]"
message (Cline tells the model to assume it did not succeed); "Command failed with exit code N."
and "The user denied this operation." say a call failed; a ``write_to_file`` / ``replace_in_file`` whose result
shows ``<final_file_content>`` has that content as its version (the user may have edited it in
the diff view before it was saved; a refused one changes nothing).
"""

from __future__ import annotations

import re
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    JSONError,
    as_dict,
    as_int,
    as_list,
    as_num,
    as_str,
    bad_json_line,
    decoded_arguments,
    iso_ms,
    iter_lines,
    kernelbench_problem,
    parse_json,
    read_bounded,
    reasoning_apart,
    text_of,
)
from ktui.trace.model import FAILED, OK, OUTCOME_FAILED, PASSED, Run, ToolCall, Turn
from ktui.trace.notes import split_think
from ktui.trace.words import count

NAME = "chat-messages"
LABEL = "chat-message log (messages list; Wafer rollouts)"
LINE_BASED = True
ROLES = {"system", "user", "assistant", "tool", "developer", "function", "ipython"}


def _is_message(m: Any) -> bool:
    return isinstance(m, dict) and m.get("role") in ROLES and ("content" in m or "tool_calls" in m)


def detect_line(obj: Any) -> bool:
    msgs = obj.get("messages")
    if isinstance(msgs, list) and msgs and all(_is_message(m) for m in msgs[:4]):
        return True
    return _is_message(obj) and not ("payload" in obj or "uuid" in obj)


def detect_object(obj: Any) -> bool:
    if isinstance(obj, list):
        return bool(obj) and all(_is_message(m) for m in obj[:4])
    return isinstance(obj, dict) and detect_line(obj)


# ---- loading -------------------------------------------------------------------------------------
def load(path: str, data: bytes | None = None) -> Run:
    asm = Assembler(path, NAME)
    rollout: dict | None = None
    rollout_line = 0
    loose: list[tuple[int, dict]] = []  # one message per line
    extra = 0
    size = 0
    first_bad = False
    for no, off, raw, term in iter_lines(path, data):
        size = off + len(raw) + (1 if term else 0)
        if not raw.strip():
            continue
        try:
            obj = parse_json(raw)
        except JSONError as exc:
            if no == 1:
                first_bad = True
                asm.run.incomplete = not term  # one unterminated line: still being written (or cut)
                break
            bad_json_line(asm, no, raw, term, exc)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("messages"), list):
            asm.event(no, off, len(raw), "rollout")
            if rollout is None:
                rollout, rollout_line = obj, no
            else:
                extra += 1
        elif _is_message(obj):
            asm.event(no, off, len(raw), f"message:{obj.get('role')}")
            loose.append((no, obj))
        elif isinstance(obj, list) and rollout is None and not loose and detect_object(obj):
            # a JSON array of messages written on one line (compact): the whole conversation
            run = load_object(obj, path)
            run.size_bytes = (len(data) if data is not None else None) or off + len(raw) + (1 if term else 0)
            return run
        else:
            asm.warn(no, f"line is a JSON {type(obj).__name__} that is neither a message nor a rollout")
    if first_bad:  # a pretty-printed single object
        try:
            whole = data if data is not None else read_bounded(path)
            obj = parse_json(whole)
        except JSONError as exc:
            if not asm.run.incomplete:
                asm.problem(1, f"not valid JSON ({str(exc)[:80]})")
            return asm.finish()
        run = load_object(obj, path)
        run.size_bytes = len(whole)
        return run
    if rollout is not None:
        # a whole conversation on one line: its messages are numbered like a single object's
        # (message i is "line" i + 1), so each turn has its own span and the messages between
        # turns lead into the right one; problems name the line and the message
        _rollout(asm, rollout, lambda i: i + 1, lambda i: f"line {rollout_line}: $.messages[{i}]")
        if extra:
            asm.warn(rollout_line, f"{count(extra, 'more rollout line')} in this file; ktui shows the first")
        if loose:
            asm.warn(loose[0][0], "messages on their own lines after a rollout line are ignored")
    elif loose:
        line_of = [no for no, _ in loose]
        _conversation(asm, [m for _, m in loose], lambda i: line_of[i] if i < len(line_of) else 0, lambda i: "")
    asm.run.size_bytes = size
    return asm.finish()


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    asm.event(1, 0, 0, "rollout")
    if isinstance(obj, list):
        _conversation(asm, obj, lambda i: i + 1, lambda i: f"$[{i}]")
    elif isinstance(obj, dict):
        _rollout(asm, obj, lambda i: i + 1, lambda i: f"$.messages[{i}]")
    else:
        asm.problem(0, f"expected an object or an array of messages, got a JSON {type(obj).__name__}")
    return asm.finish()


def _rollout(asm: Assembler, obj: dict, line_of, where_of) -> None:
    run = asm.run
    meta = as_dict(obj.get("metadata"))
    sd = meta.get("sample_data") if isinstance(meta.get("sample_data"), dict) else meta
    if isinstance(sd, dict) and any(k in sd for k in ("ref_arch_src", "level", "problem_id", "problem_path")):
        kernelbench_problem(run.problem, sd.get("level"), sd.get("name"), sd.get("problem_id"),
                            sd.get("problem_path"), sd.get("ref_arch_src"),
                            "metadata.sample_data.ref_arch_src")
    comps = as_list(obj.get("completions"))
    for k in ("model", "model_name"):
        if isinstance(obj.get(k), str) and obj[k]:
            run.model = obj[k]
    turns = _conversation(asm, as_list(obj.get("messages")), line_of, where_of)
    _completions(asm, turns, comps, where_of)
    reward = obj.get("rewards", obj.get("reward"))
    if isinstance(reward, list):
        nums = [n for n in (as_num(r) for r in reward) if n is not None]
        reward = nums[0] if len(nums) == 1 else (sum(nums) / len(nums) if nums else None)
    r = as_num(reward)
    if r is not None:
        run.scores["reward"] = r
        for k in ("advantages", "advantage"):
            a = as_num(obj.get(k))
            if a is not None:
                run.scores[k] = a
        asm.outcome(PASSED if r > 0 else OUTCOME_FAILED, r, f"reward {r:g}", line_of(0), "score")


def _completions(asm: Assembler, turns: list[Turn], comps: list, where_of) -> None:
    """Per-turn tokens, model and time from chat.completion objects, matched to turns by the
    tool-call ids they contain, else by order."""
    run = asm.run
    by_call: dict[str, Turn] = {}
    for tt in turns:
        for c in tt.calls:
            if c.id:
                by_call[c.id] = tt
    used: set[int] = set()
    order = iter(turns)
    for i, comp in enumerate(comps):
        if not isinstance(comp, dict):
            asm.warn(0, f"completion {i} is not an object", f"$.completions[{i}]")
            continue
        t: Turn | None = None
        ids = []
        for ch in as_list(comp.get("choices")):
            msg = ch.get("message") if isinstance(ch, dict) else None
            if isinstance(msg, dict):
                ids += [b.get("id") for b in as_list(msg.get("content")) if isinstance(b, dict)]
                ids += [tc.get("id") for tc in as_list(msg.get("tool_calls")) if isinstance(tc, dict)]
        for cid in (x for x in ids if isinstance(x, str)):
            if cid in by_call and by_call[cid].index not in used:
                t = by_call[cid]
                break
        if t is None:
            t = next((x for x in order if x.index not in used), None)
        if t is None:
            asm.warn(0, f"completion {i} has no assistant turn to belong to", f"$.completions[{i}]")
            continue
        used.add(t.index)
        u = as_dict(comp.get("usage"))
        tin = as_int(u.get("input_tokens", u.get("prompt_tokens")))
        tout = as_int(u.get("output_tokens", u.get("completion_tokens")))
        tr = as_int(u.get("reasoning_tokens"))
        detail = tr is None and isinstance(u.get("completion_tokens_details"), dict)
        if detail:  # OpenAI's breakdown of completion_tokens: inside them
            tr = as_int(u["completion_tokens_details"].get("reasoning_tokens"))
        if tin is not None:
            t.tokens_in = tin + (as_int(u.get("cache_read_tokens")) or 0) + (as_int(u.get("cache_write_tokens")) or 0)
        if tout is not None:
            t.tokens_out = tout
        t.tokens_reasoning = reasoning_apart(tr, as_int(u.get("total_tokens")),
                                             ((tin or 0) + (tout or 0), (t.tokens_in or 0) + (tout or 0)),
                                             inside_by_default=detail)
        cost = u.get("cost")
        if isinstance(cost, dict):
            total = sum(v for v in (as_num(x) for x in cost.values()) if v is not None)
            t.usd = total
        elif as_num(cost) is not None:
            t.usd = as_num(cost)
        ts = iso_ms(comp.get("created"))
        if ts is not None and t.start_ms is None:
            t.start_ms = t.end_ms = ts
            asm.ts(ts)
        if isinstance(comp.get("model"), str) and not run.model:
            run.model = comp["model"]
    # only the start of each model call is known: a turn lasts until the next call starts
    timed = [(tt, tt.start_ms) for tt in turns if tt.start_ms is not None]
    for (a, sa), (_, sb) in zip(timed, timed[1:], strict=False):
        if a.end_ms == sa and sb >= sa:
            a.wall_ms = sb - sa


def _args(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    parsed = decoded_arguments(v, "arguments")
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


# Cline (``api_conversation_history.json``): a call's result is a text block of the next user message,
# "[read_file for 'src/x.py'] Result:\n..." (no tool_result block); an execute_command's says its exit code
_CLINE_RESULT = re.compile(r"\[([A-Za-z_][\w-]*)(?: for .*?)?\] Result:", re.S)
_CLINE_EXIT = re.compile(r"Command (?:executed successfully \(exit code (\d+)\)|failed with exit code (\d+))")
_CLINE_REFUSED = re.compile(r"The user denied this operation|The tool execution failed with the following error")


_CLINE_WRITES = {"write_to_file", "replace_in_file", "apply_diff"}
_FINAL_FILE = re.compile(r'<final_file_content path="([^"]*)">\n?(.*?)\n?</final_file_content>', re.S)


def _cline_write(asm: Assembler, c: ToolCall, body: str, status: str | None) -> None:
    """A Cline write or edit, once its result is known: refused, nothing changed; where the result
    shows the file as it was saved (``<final_file_content>``: the user's own edits in the diff view
    and the formatter's included), that is the version; else the call as written."""
    if status == FAILED:
        return
    m = _FINAL_FILE.search(body)
    if m is None:
        asm.track_call(c)
        return
    fp = next((c.args[k] for k in ("absolutePath", "path", "file_path") if isinstance(c.args.get(k), str)
               and c.args[k]), None) or m.group(1)
    asm.files.write(asm.files.locate(fp), m.group(2), c, c.turn, c.line, f"{c.name} (the file as it was saved)")
    if body.startswith("The user made the following updates"):
        asm.note(c.line, f"{c.name} of {fp[:200]}: the user changed the content before it was saved; "
                         "the version is the file as saved")


# Cline's calls that wait for the user: the user's next message is their answer, in prose
_CLINE_ASKS = {"plan_mode_respond", "ask_followup_question", "attempt_completion"}
_USER_WORDS = re.compile(r"<(user_message|answer|feedback)>\n?(.*?)\n?</\1>", re.S)


def _cline_user_answer(asm: Assembler, blocks: list, pending: list, line: int, ts: int | None) -> None:
    """A user message with no result block after a response whose call asked the user
    (``plan_mode_respond``, ``ask_followup_question``, ``attempt_completion``): the words the user
    typed (``<user_message>``, ``<answer>``, ``<feedback>``, after a task resumption too) answer it."""
    last = max((p.turn for p in pending if p.turn is not None), default=None)
    asks = [p for p in pending if p.turn == last and p.name in _CLINE_ASKS]
    if not asks:
        return
    words = next((m.group(2) for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
                  for m in [_USER_WORDS.search(b["text"][:200_000])] if m), None)
    if words is None:
        return
    c = asks[0]
    pending.remove(c)
    asm.result(c, "the user: " + words, line, ts, status=OK)


_RESUMED = "[TASK RESUMPTION]"


def _cline_resumed(asm: Assembler, blocks: list, pending: list, line: int, ts: int | None) -> None:
    """A task Cline resumed after an interruption: the latest response's calls still without a
    result never got one (Cline tells the model to assume they did not succeed): failed, said so."""
    if not any(isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"].startswith(_RESUMED)
               for b in blocks):
        return
    last = max((p.turn for p in pending if p.turn is not None), default=None)
    for c in [p for p in pending if p.turn == last]:
        pending.remove(c)
        asm.result(c, "no result: the task was interrupted here and resumed later (Cline tells the model "
                      "to assume the call did not succeed)", line, ts, status=FAILED)


def _cline_results(asm: Assembler, blocks: list, pending: list, line: int, ts: int | None,
                   deferred: list) -> set[int]:
    """Pair Cline's result text blocks, in order, with the pending calls (the call of that name
    first). Returns the ids of the blocks paired (they are not the user's words)."""
    used: set[int] = set()
    for b in blocks:
        if not pending:
            break
        text = b.get("text") if isinstance(b, dict) and b.get("type") == "text" else None
        if not isinstance(text, str):
            continue
        m = _CLINE_RESULT.match(text[:4000])
        if m is None:
            continue
        # the calls of the latest response first: a call the task was interrupted in never got one
        last = max((p.turn for p in pending if p.turn is not None), default=None)
        recent = [p for p in pending if p.turn == last] or pending
        c = next((p for p in recent if p.name == m.group(1)), recent[0])
        pending.remove(c)
        body = text[m.end():].lstrip("\n")
        status = None
        e = _CLINE_EXIT.match(body)
        if e is not None:
            status = OK if (e.group(1) or e.group(2)) == "0" else FAILED
        elif _CLINE_REFUSED.search(body[:2000]):
            status = FAILED
        asm.result(c, body, line, ts, status=status,
                   effect={"exit_code": int(e.group(1) or e.group(2))} if e is not None else None)
        if c in deferred:
            deferred.remove(c)
            _cline_write(asm, c, body, status)
        used.add(id(b))
    return used


def _user_message(asm: Assembler, content: Any, pending: list, deferred: list, line: int, ts: int | None,
                  where: Any) -> None:
    """A user message: tool results (Anthropic blocks, Cline's text results, answers), else text."""
    blocks = content if isinstance(content, list) else []
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    for b in results:
        c = asm.pending(b.get("tool_use_id")) or (pending[0] if pending else None)
        if c is None:
            asm.warn(line, "tool_result with no pending call", where)
            continue
        if c in pending:
            pending.remove(c)
        asm.result(c, b.get("content"), line, ts, is_error=b.get("is_error") is True)
    said: set[int] = set()
    if not results and pending:
        said = _cline_results(asm, blocks, pending, line, ts, deferred)
        if not said:
            _cline_user_answer(asm, blocks, pending, line, ts)
        _cline_resumed(asm, blocks, pending, line, ts)
    text = text_of([b for b in blocks if id(b) not in said]) if said else text_of(content)
    if text or not (results or said):
        asm.message(line, "user", text)
    if ts is not None and not (results or said):
        asm.ts(ts)  # what the model read next was written then


def _tool_message(asm: Assembler, m: dict, content: Any, pending: list, line: int, ts: int | None,
                  where: Any) -> None:
    """A tool / function message: the result of its call (by id, else by name, else the oldest)."""
    cid = m.get("tool_call_id")
    c = asm.pending(cid)
    if c is None and pending:
        name = m.get("name") or m.get("function")
        c = next((p for p in pending if p.name == name), pending[0]) if name else pending[0]
    if c is None:
        asm.warn(line, f"tool message (id {cid!r}) with no pending call", where)
        return
    if c in pending:
        pending.remove(c)
    err = m.get("is_error") is True or (isinstance(m.get("error"), (str, dict)) and bool(m.get("error")))
    body = content if content not in (None, "", []) else m.get("error")
    if isinstance(body, dict):
        body = as_str(body.get("message")) or str(body)
    asm.result(c, body, line, ts, is_error=err)


def _conversation(asm: Assembler, messages: list, line_of, where_of) -> list[Turn]:
    """Messages into turns, calls and results. Returns the assistant turns."""
    run = asm.run
    turns: list[Turn] = []
    pending: list = []
    deferred: list = []  # Cline writes waiting for their result (_cline_results)
    for i, m in enumerate(messages):
        line, where = line_of(i), where_of(i)
        if not isinstance(m, dict):
            asm.warn(line, f"message {i} is a JSON {type(m).__name__}, not an object", where)
            continue
        role = m.get("role")
        ts = iso_ms(m.get("timestamp"))
        if ts is None:
            ts = iso_ms(m.get("ts"))  # Cline: epoch ms
        content = m.get("content")
        if isinstance(m.get("model"), str) and m["model"] and not run.model:
            run.model = m["model"]
        if not run.model and isinstance(m.get("modelInfo"), dict):  # Cline
            run.model = as_str(as_dict(m.get("modelInfo")).get("modelId")) or None
        if role in ("system", "developer"):
            run.messages.append((line, "system", None, text_of(content)))
            continue
        if role == "user":
            _user_message(asm, content, pending, deferred, line, ts, where)
            continue
        if role in ("tool", "function", "ipython"):
            _tool_message(asm, m, content, pending, line, ts, where)
            continue
        if role != "assistant":
            asm.warn(line, f"message {i} has an unknown role {role!r}; kept as a message", where)
            run.messages.append((line, f"message:{role}", None, text_of(content)))
            continue
        t = asm.turn(line, ts)
        turns.append(t)
        tok = as_dict(as_dict(m.get("metrics")).get("tokens"))  # Cline: prompt (cached included), completion
        if tok:
            t.tokens_in = as_int(tok.get("prompt"))
            t.tokens_out = as_int(tok.get("completion"))
            cost = as_num(as_dict(m.get("metrics")).get("cost"))
            if cost is not None:
                t.usd = cost
        for k in ("reasoning_content", "reasoning", "thinking"):
            if isinstance(m.get(k), str):
                asm.add_reasoning(t, m[k])
        blocks = content if isinstance(content, list) else ([content] if isinstance(content, str) else [])
        for b in blocks:
            if isinstance(b, str):
                reasoning, visible = split_think(b)
                asm.add_reasoning(t, reasoning)
                asm.assistant_text(t, visible, line)
                continue
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt in ("text", "output_text"):
                reasoning, visible = split_think(as_str(b.get("text")) or "")
                asm.add_reasoning(t, reasoning)
                asm.assistant_text(t, visible, line)
            elif bt in ("thinking", "reasoning", "redacted_thinking"):
                asm.add_reasoning(t, as_str(b.get("thinking")) or as_str(b.get("reasoning")) or as_str(b.get("text"))
                                  or ("(redacted)" if bt == "redacted_thinking" or b.get("redacted") else None))
            elif bt in ("toolCall", "tool_use", "tool_call", "function_call"):
                args = _args(b.get("arguments", b.get("input", b.get("args"))))
                c = asm.call(t, b.get("name"), args, line, ts, b.get("id") or b.get("call_id"))
                if c.name in _CLINE_WRITES:
                    deferred.append(c)  # its result may show the file as the tool left it
                else:
                    asm.track_call(c)
                pending.append(c)
        for tc in as_list(m.get("tool_calls")):
            if not isinstance(tc, dict):
                continue
            fn = as_dict(tc.get("function"))
            name = fn.get("name") or tc.get("name") or (tc.get("function") if isinstance(tc.get("function"), str)
                                                         else None)
            args = _args(fn.get("arguments", tc.get("arguments")))
            c = asm.call(t, name, args, line, ts, tc.get("id"))
            asm.track_call(c)
            pending.append(c)
    for c in deferred:  # a write whose result never came (or said nothing of the file): as written
        asm.track_call(c)
    for c in pending:
        if c.result is None:
            asm.warn(c.line, f"call #{c.index} ({c.name}) has no result in the log")
    return turns
