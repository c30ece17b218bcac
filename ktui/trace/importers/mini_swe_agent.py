"""mini-swe-agent trajectories (``*.traj.json``, ``trajectory_format: mini-swe-agent-1``).

``{info, messages, trajectory_format, instance_id}``. ``messages`` are plain ``{role, content}``:
system, the task (user), then assistant / user pairs. The action is the one fenced ```` ```bash ````
block of an assistant message (a ``bash`` call here), answered by the next user message
(``<returncode>N</returncode><output>...</output>``). ``extra.response`` is the raw
chat.completion of each call (tokens, cost, ``created``). ``info`` has the exit status, the
submitted diff and the config (model name). "Lines" are message ordinals.
"""

from __future__ import annotations

import re
from typing import Any

from ktui.trace.importers.common import Assembler, as_int, as_num, as_str, iso_ms, text_of
from ktui.trace.model import Run

NAME = "mini-swe-agent"
LABEL = "mini-swe-agent trajectory (JSON)"
LINE_BASED = False
_ACTION = re.compile(r"```(?:bash|sh|shell)[ \t]*\n(.*?)\n?```", re.S)


def detect_object(obj: Any) -> bool:
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
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        asm.problem(0, "not a mini-swe-agent trajectory: expected an object with a 'messages' list", "", "error",
                    "$.messages")
        return asm.finish()
    info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
    cfg = info.get("config") if isinstance(info.get("config"), dict) else {}
    mcfg = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
    run.model = as_str(mcfg.get("model_name"))
    run.problem.name = as_str(obj.get("instance_id"))
    asm.note(0, f"mini-swe-agent {as_str(info.get('mini_version')) or '?'} · {as_str(obj.get('trajectory_format')) or ''}")
    pending = None
    for i, m in enumerate(obj["messages"]):
        line, where = i + 1, f"$.messages[{i}]"
        if not isinstance(m, dict):
            asm.warn(line, f"message {i} is a JSON {type(m).__name__}", where)
            continue
        role = m.get("role")
        text = text_of(m.get("content"))
        extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
        resp = extra.get("response") if isinstance(extra.get("response"), dict) else {}
        ts = iso_ms(resp.get("created")) or iso_ms(m.get("timestamp"))
        asm.event(line, 0, 0, f"message:{role}", ts, role if isinstance(role, str) else None,
                  len(run.turns) if role == "assistant" else None)
        if role == "system":
            run.messages.append((line, "system", None, text))
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
        u = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        t.tokens_in = as_int(u.get("prompt_tokens"))
        t.tokens_out = as_int(u.get("completion_tokens"))
        cd = u.get("completion_tokens_details")
        if isinstance(cd, dict) and as_int(cd.get("reasoning_tokens")):
            t.tokens_reasoning = None  # already inside completion_tokens
        if as_num(u.get("cost")) is not None:
            t.usd = as_num(u["cost"])
        if len(acts) == 1:
            c = asm.call(t, "bash", {"command": acts[0]}, line, ts)
            asm.track_call(c)
            pending = c
        elif len(acts) > 1:
            asm.warn(line, f"{len(acts)} bash blocks in one response (mini-swe-agent runs none of them)", where)
    turns = [t for t in run.turns if t.start_ms is not None]
    for a, b in zip(turns, turns[1:], strict=False):
        if b.start_ms >= a.start_ms:
            a.wall_ms = b.start_ms - a.start_ms
    status = as_str(info.get("exit_status"))
    sub = info.get("submission")
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
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
