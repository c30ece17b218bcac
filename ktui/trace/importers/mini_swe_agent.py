"""mini-swe-agent trajectories (``*.traj.json``, ``trajectory_format: mini-swe-agent-1``).

``{info, messages, trajectory_format, instance_id}`` (or, from some versions, the messages list
alone). ``messages`` are plain ``{role, content}``: system, the task (user), then assistant / user
pairs. The action is the one fenced block of an assistant message (```` ```bash ````, or
```` ```mswea_bash_command ```` in later configs; a ``bash`` call here), answered by the next user
message (``<returncode>N</returncode><output>...</output>``). From 2.x (``mini-swe-agent-1.1``) the
action is an OpenAI ``tool_calls`` entry answered by a ``tool`` message with its ``tool_call_id``
(``extra.returncode``, ``extra.timestamp``). ``extra.response`` is the raw
chat.completion of each call (tokens, cost, ``created``). ``info`` has the exit status, the
submitted diff and the config (model name). "Lines" are message ordinals.
"""

from __future__ import annotations

import re
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    as_dict,
    as_int,
    as_num,
    as_str,
    decoded_arguments,
    iso_ms,
    text_of,
)
from ktui.trace.model import Run

NAME = "mini-swe-agent"
LABEL = "mini-swe-agent trajectory (JSON)"
LINE_BASED = False
# the action block: ```bash (1.x), ```mswea_bash_command (later configs), any *bash* / sh fence
_ACTION = re.compile(r"```(?:bash|sh|shell|[a-z_]*bash[a-z_]*)[ \t]*\n(.*?)\n?```", re.S)
_OBSERVATION = re.compile(r"^\s*<returncode>\s*-?\d+\s*</returncode>")


def _looks_like_mini(msgs: list) -> bool:
    """A bare list of messages saved by mini-swe-agent: an assistant message with an action block
    answered by a ``<returncode>`` observation."""
    prev_action = False
    for m in msgs[:40]:
        if not isinstance(m, dict):
            return False
        text = text_of(m.get("content"))
        if m.get("role") in ("user", "tool") and prev_action and _OBSERVATION.match(text):
            return True
        prev_action = m.get("role") == "assistant" and bool(_ACTION.search(text))
    return False


def detect_object(obj: Any) -> bool:
    if isinstance(obj, list):
        return _looks_like_mini(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return False
    tf = obj.get("trajectory_format")
    if isinstance(tf, str) and tf.startswith("mini-swe-agent"):
        return True
    info = obj.get("info")
    return isinstance(info, dict) and ("mini_version" in info or ("exit_status" in info and "model_stats" in info))


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    if isinstance(obj, list):  # the messages alone
        obj = {"messages": obj}
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        asm.problem(0, "not a mini-swe-agent trajectory: expected an object with a 'messages' list", "", "error",
                    "$.messages")
        return asm.finish()
    info = as_dict(obj.get("info"))
    cfg = as_dict(info.get("config"))
    mcfg = as_dict(cfg.get("model"))
    run.model = as_str(mcfg.get("model_name"))
    run.problem.name = as_str(obj.get("instance_id"))
    asm.note(0, f"mini-swe-agent {as_str(info.get('mini_version')) or '?'} · {as_str(obj.get('trajectory_format')) or ''}")
    pending = None
    by_id: dict[str, Any] = {}  # tool calls (mini-swe-agent 2.x) waiting for their tool message
    for i, m in enumerate(obj["messages"]):
        line, where = i + 1, f"$.messages[{i}]"
        if not isinstance(m, dict):
            asm.warn(line, f"message {i} is a JSON {type(m).__name__}", where)
            continue
        role = m.get("role")
        text = text_of(m.get("content"))
        extra = as_dict(m.get("extra"))
        resp = as_dict(extra.get("response"))
        # extra.timestamp (2.x) is when the message was recorded, on the agent's clock: the end of
        # the model call; response.created is the provider's (coarse, and on another clock)
        ts = iso_ms(extra.get("timestamp")) or iso_ms(resp.get("created")) or iso_ms(m.get("timestamp"))
        asm.event(line, 0, 0, f"message:{role}", ts, role if isinstance(role, str) else None,
                  len(run.turns) if role == "assistant" else None)
        if role == "system":
            run.messages.append((line, "system", None, text))
            continue
        if role == "tool" and isinstance(m.get("tool_call_id"), str) and m["tool_call_id"] in by_id:
            c = by_id.pop(m["tool_call_id"])
            rc = as_int(extra.get("returncode"))
            status = None if rc is None else ("ok" if rc == 0 else "failed")
            r = asm.result(c, text, line, iso_ms(extra.get("timestamp")), status=status)
            if rc is not None and status == "ok" and r.status != "ok":
                pass  # the output's own evidence (a verifier's FAIL) wins
            if pending is c:
                pending = None
            continue
        if role == "user" or role == "tool":
            if pending is not None:
                asm.result(pending, text, line, None)
                pending = None
            else:
                asm.message(line, "user", text)
            continue
        if role != "assistant":
            run.messages.append((line, f"message:{role}", None, text))
            continue
        t = asm.turn(line, ts)
        acts = _ACTION.findall(text)
        thought = text
        asm.assistant_text(t, thought, line)
        if isinstance(resp.get("model"), str) and not run.model:
            run.model = resp["model"]
        u = as_dict(resp.get("usage"))
        t.tokens_in = as_int(u.get("prompt_tokens"))
        t.tokens_out = as_int(u.get("completion_tokens"))
        cd = u.get("completion_tokens_details")
        if isinstance(cd, dict) and as_int(cd.get("reasoning_tokens")):
            t.tokens_reasoning = None  # already inside completion_tokens
        if as_num(u.get("cost")) is not None:
            t.usd = as_num(u["cost"])
        tcs = [tc for tc in (m.get("tool_calls") or []) if isinstance(tc, dict)] if isinstance(m.get("tool_calls"), list) else []
        if tcs:  # 2.x: OpenAI tool calls, answered by tool messages with the call's id
            for tc in tcs:
                fn = as_dict(tc.get("function"))
                args = decoded_arguments(fn.get("arguments"), "command")
                c = asm.call(t, fn.get("name") or "bash", args if isinstance(args, dict) else {"value": args}, line, ts,
                             tc.get("id"))
                asm.track_call(c)
                if c.id:
                    by_id[c.id] = c
                pending = c
        elif len(acts) == 1:
            c = asm.call(t, "bash", {"command": acts[0]}, line, ts)
            asm.track_call(c)
            pending = c
        elif len(acts) > 1:
            asm.warn(line, f"{len(acts)} bash blocks in one response (mini-swe-agent runs none of them)", where)
    timed = [(t, t.start_ms) for t in run.turns if t.start_ms is not None]
    for (a, sa), (_, sb) in zip(timed, timed[1:], strict=False):
        if sb >= sa:
            a.wall_ms = sb - sa
    status = as_str(info.get("exit_status"))
    sub = info.get("submission")
    stats = as_dict(info.get("model_stats"))
    n_api = as_int(stats.get("api_calls"))
    if n_api is not None and n_api != len(run.turns):
        asm.warn(0, f"info.model_stats.api_calls is {n_api} but the trajectory has {len(run.turns)} responses",
                 "$.info.model_stats")
    cost = as_num(stats.get("instance_cost"))
    if cost is not None:
        run.tokens_by_actor["agent"] = {"usd": cost}
    if status:
        what = f"exit status {status}"
        if isinstance(sub, str) and sub.strip():
            what += f"; submitted a diff of {len(sub.splitlines())} lines"
        from ktui.trace.model import Terminal

        run.terminal.append(Terminal("halt", what, len(obj["messages"])))
        if isinstance(sub, str) and sub.strip():
            run.messages.append((len(obj["messages"]), "submission", None, sub))
    return asm.finish()
