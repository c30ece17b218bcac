"""SWE-agent trajectories (``*.traj``): ``{trajectory: [...], history: [...], info: {...}}``.

Each ``trajectory`` step is one turn: the model's ``thought`` (or ``response``), its ``action``
(a shell / tool command, a ``bash`` call here) and the ``observation`` the environment returned,
with ``execution_time`` (seconds). ``info`` has the exit status, the submitted diff and
``model_stats`` (run totals only: ``tokens_sent`` / ``tokens_received``, cost, API calls: the
run's token figures, as no step has its own). The problem statement is the first user message of
``history`` that is not the in-context demonstration (``is_demo``). "Lines" are step ordinals.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers.common import Assembler, as_dict, as_int, as_list, as_num, as_str, text_of
from ktui.trace.model import Run, Terminal
from ktui.trace.notes import JSONError, loads

NAME = "swe-agent"
LABEL = "SWE-agent trajectory (.traj JSON)"
LINE_BASED = False


def _history_steps(hist: list) -> list[dict]:
    """Steps rebuilt from a ``history`` alone (a demonstration file has no ``trajectory``): each
    assistant message with an ``action``, and the message that answers it."""
    steps: list[dict] = []
    for i, m in enumerate(hist):
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("action"), str):
            nxt = hist[i + 1] if i + 1 < len(hist) and isinstance(hist[i + 1], dict) else {}
            obs = nxt.get("content") if nxt.get("role") in ("user", "tool") else None
            steps.append({"thought": m.get("thought") if isinstance(m.get("thought"), str) else text_of(m.get("content")),
                          "action": m["action"], "observation": text_of(obs) if obs is not None else None})
    return steps


def detect_object(obj: Any) -> bool:
    if isinstance(obj, dict) and not isinstance(obj.get("trajectory"), list) and isinstance(obj.get("history"), list):
        return bool(_history_steps(obj["history"][:400]))
    if not isinstance(obj, dict) or not isinstance(obj.get("trajectory"), list):
        return False
    steps = obj["trajectory"][:3]
    return isinstance(obj.get("info"), dict) or isinstance(obj.get("history"), list) or \
        (bool(steps) and all(isinstance(s, dict) and "action" in s and "observation" in s for s in steps))


def _is_demo(m: dict) -> bool:
    if m.get("is_demo") is True:
        return True
    head = text_of(m.get("content"))[:400].lower()
    return "--- demonstration ---" in head or head.startswith("here is a demonstration")


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    if isinstance(obj, dict) and not isinstance(obj.get("trajectory"), list) and isinstance(obj.get("history"), list):
        obj = dict(obj, trajectory=_history_steps(obj["history"]))
        asm.note(0, "no 'trajectory': steps rebuilt from 'history' (a demonstration file)")
    if not isinstance(obj, dict) or not isinstance(obj.get("trajectory"), list):
        asm.problem(0, "not a SWE-agent trajectory: expected an object with a 'trajectory' list", "", "error",
                    "$.trajectory")
        return asm.finish()
    info = as_dict(obj.get("info"))
    cfg = obj.get("replay_config")
    if isinstance(cfg, str):
        try:
            cfg = loads(cfg)
        except JSONError:
            cfg = None
    agent = as_dict(as_dict(cfg).get("agent"))
    model = as_dict(agent.get("model"))
    run.model = as_str(model.get("name")) or as_str(model.get("model_name"))
    hist = as_list(obj.get("history"))
    # SWE-agent 0.x puts an in-context demonstration (``is_demo: true``, "Here is a demonstration
    # of how to correctly accomplish this task") before the task: it is not the problem
    for m in hist:
        if isinstance(m, dict) and m.get("role") == "user" and _is_demo(m):
            run.messages.append((0, "demonstration", None, text_of(m.get("content"))))
    first_user = next((m for m in hist if isinstance(m, dict) and m.get("role") == "user" and not _is_demo(m)), None)
    if first_user is not None:
        asm.message(0, "user", text_of(first_user.get("content")))
    for m in hist:
        if isinstance(m, dict) and m.get("role") == "system":
            run.messages.append((0, "system", None, text_of(m.get("content"))))
            break
    for i, s in enumerate(obj["trajectory"]):
        line, where = i + 1, f"$.trajectory[{i}]"
        asm.event(line, 0, 0, "step", None, "agent", len(run.turns))
        if not isinstance(s, dict):
            asm.warn(line, f"step {i} is a JSON {type(s).__name__}, not an object", where)
            continue
        t = asm.turn(line, None)
        thought = as_str(s.get("thought"))
        asm.assistant_text(t, thought if thought is not None else as_str(s.get("response")), line)
        action = s.get("action")
        if isinstance(action, str) and action.strip():
            c = asm.call(t, "bash", {"command": action}, line)
            asm.track_call(c)
            asm.result(c, s.get("observation"), line)
            secs = as_num(s.get("execution_time"))
            if secs is not None:
                t.tool_ms = int(secs * 1000)
    stats = as_dict(info.get("model_stats"))
    sent, recv = as_int(stats.get("tokens_sent")), as_int(stats.get("tokens_received"))
    if sent is not None or recv is not None:
        run.tokens_by_actor["agent"] = {"tokens_in": sent or 0, "tokens_out": recv or 0}
        cost = as_num(stats.get("instance_cost"))
        if cost is not None:
            run.tokens_by_actor["agent"]["usd"] = cost
        asm.note(0, f"model_stats: {sent} tokens sent, {recv} received (run totals; not per turn), "
                    f"{as_int(stats.get('api_calls'))} API calls")
    status = as_str(info.get("exit_status"))
    if status:
        sub = info.get("submission")
        what = f"exit status {status}"
        if isinstance(sub, str) and sub.strip():
            what += f"; submitted a diff of {len(sub.splitlines())} lines"
            run.messages.append((len(obj["trajectory"]), "submission", None, sub))
        run.terminal.append(Terminal("halt", what, len(obj["trajectory"])))
    return asm.finish()
