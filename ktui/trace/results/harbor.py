"""Harbor trial folders: the verifier's reward and the trial's result, beside the trajectory.

A Harbor trial folder holds the agent's trajectory (``trajectory.json``, or ``agent/...``) and
what the verifier wrote: ``reward.json`` (``{"reward": 1, ...}``; KernelBench-style verifiers add
``correct``, ``speedup_vs_eager``, ``speedup_vs_compile``, ``max_err``, ``static_ok``,
``compile_ok``, ``suspicious``, ``error``), ``reward.txt`` (one number), either of them under
``verifier/``, and Harbor's own ``result.json`` (``task_name``, ``verifier_result.rewards``,
``exception_info``). Files are recognised by content: a JSON object with a numeric ``reward``,
a TrialResult with ``verifier_result`` / ``trial_name``, a text file that is one number.

The outcome is Harbor's: a reward above 0 is a pass. A speedup field ``speedup_vs_X`` is a
speedup over baseline X (``eager``, ``compile`` = ``torch.compile``, ``ref`` = the reference); the
``torch.compile`` one is the headline when present (it is what such verifiers gate on).
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from ktui.trace.results import COMPILE, EAGER, REFERENCE, Result, num, outcome_of, read_json, read_small

NAME = "harbor"
_MAX_ENTRIES = 64  # a trial folder holds a few files; a folder of more is a folder of runs
_BASELINES = {"eager": EAGER, "compile": COMPILE, "torch_compile": COMPILE, "inductor": COMPILE,
              "ref": REFERENCE, "reference": REFERENCE, "baseline": REFERENCE, "torch": EAGER}
_KNOWN = {"reward", "correct", "static_ok", "compile_ok", "suspicious", "error", "metric"}


def _trial_dirs(trace: str) -> list[str]:
    d = os.path.dirname(os.path.abspath(trace))
    out = [d]
    if os.path.basename(d) in ("agent", "agent-logs", "logs", "trajectories"):
        out.append(os.path.dirname(d))
    return out


def is_reward_object(obj: Any) -> bool:
    return isinstance(obj, dict) and "reward" in obj and (num(obj["reward"]) is not None or
                                                          isinstance(obj["reward"], bool))


def is_trial_result(obj: Any) -> bool:
    return isinstance(obj, dict) and ("verifier_result" in obj or "trial_name" in obj) and \
        ("task_name" in obj or "verifier_result" in obj) and "steps" not in obj


def is_result_file(path: str) -> bool:
    """A JSON file of the walk that is a Harbor result (a reward object or a trial result)."""
    if not path.endswith(".json"):
        return False
    obj = read_json(path)
    return is_reward_object(obj) or is_trial_result(obj)


def _number_file(path: str) -> float | None:
    raw = read_small(path)
    if raw is None or len(raw) > 64:
        return None
    try:
        return float(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None


def _candidates(trace: str) -> list[str]:
    out: list[str] = []
    for d in _trial_dirs(trace):
        for sub in ("", "verifier"):
            dd = os.path.join(d, sub) if sub else d
            try:  # at most one entry past the limit is read: a flat folder of 10,000 runs is not listed
                with os.scandir(dd) as it:  # for each of them (that grew with the square of its size)
                    names = sorted(e.name for e in itertools.islice(it, _MAX_ENTRIES + 1))
            except OSError:
                continue
            if len(names) > _MAX_ENTRIES:  # a folder of many runs, not a trial folder
                return []
            out.extend(os.path.join(dd, n) for n in names if n.endswith((".json", ".txt")))
    real = os.path.realpath(trace)
    return [p for p in out if os.path.realpath(p) != real]


def _read_trial(r: Result, obj: dict) -> None:
    """What a Harbor trial's result.json says: the verifier's reward, an exception, task and model."""
    vr = obj.get("verifier_result")
    vr = vr if isinstance(vr, dict) else {}
    rewards = vr.get("rewards")
    rewards = rewards if isinstance(rewards, dict) else {}
    rv = num(rewards.get("reward")) if rewards else num(vr.get("reward"))
    if rv is None and rewards:
        vals = [num(v) for v in rewards.values() if num(v) is not None]
        rv = vals[0] if len(vals) == 1 else None
    r.reward = rv
    ex = obj.get("exception_info")
    if isinstance(ex, dict):
        r.error = " ".join(str(ex.get(k) or "") for k in ("exception_type", "exception_message")).strip()[:2000]
    if isinstance(obj.get("task_name"), str):
        r.task = obj["task_name"]
    ai = obj.get("agent_info")
    ai = ai if isinstance(ai, dict) else {}
    mi = ai.get("model_info")
    mi = mi if isinstance(mi, dict) else {}
    if isinstance(mi.get("name"), str):
        r.model = (f"{mi['provider']}/" if isinstance(mi.get("provider"), str) else "") + mi["name"]


def _read_reward(r: Result, obj: dict, run: Any) -> None:
    """What a reward object says: the reward, correctness, speedups per baseline, the harness's flags."""
    rv = obj.get("reward")
    r.reward = float(rv) if isinstance(rv, bool) else num(rv)
    if isinstance(obj.get("correct"), bool):
        r.correct = obj["correct"]
    if isinstance(obj.get("compile_ok"), bool):
        r.values["compiled torch.compile baseline"] = "yes" if obj["compile_ok"] else "no (eager used)"
    for k, v in obj.items():
        if not isinstance(k, str):
            continue
        lk = k.lower()
        if lk.startswith("speedup"):
            b = lk[len("speedup"):].lstrip("_")
            b = b[3:] if b.startswith("vs_") else b[2:] if b.startswith("vs") else b
            base_name = _BASELINES.get(b, b or REFERENCE)
            if num(v) is not None:
                r.speedups[base_name] = num(v)  # type: ignore[assignment]
        elif lk not in _KNOWN and (num(v) is not None or isinstance(v, str)) and len(r.values) < 12:
            r.values[k] = v if not isinstance(v, str) else v[:200]
    if isinstance(obj.get("metric"), str):
        r.values["metric"] = obj["metric"][:60]
    if isinstance(obj.get("error"), str) and obj["error"]:
        r.error = obj["error"][:2000]
    if obj.get("static_ok") is False and getattr(run, "kernels", None):  # (no kernel written: nothing refused)
        r.cheats.append(("harness_rejected",
                         f"its static check refused the kernel ({(obj.get('error') or 'no reason given')!s:.200})"))
    if obj.get("suspicious") is True:
        r.cheats.append(("harness_suspicious", "'suspicious': true (it asks for a manual review)"))
    for k in ("cheat", "cheating", "reward_hack", "hacked"):
        if obj.get(k) is True:
            r.cheats.append(("harness_suspicious", f"'{k}': true"))


def find(run: Any) -> Result | None:
    trace = run.path
    if getattr(run, "format", "") in ("ensemble", "kernelbench-run"):
        return None
    if not trace or not os.path.isfile(trace):
        return None
    reward_obj: tuple[str, dict] | None = None
    trial: tuple[str, dict] | None = None
    reward_txt: tuple[str, float] | None = None
    for p in _candidates(trace):
        if p.endswith(".txt"):
            if reward_txt is None and os.path.basename(p).startswith("reward"):
                v = _number_file(p)
                if v is not None:
                    reward_txt = (p, v)
            continue
        obj = read_json(p)
        if reward_obj is None and is_reward_object(obj):
            reward_obj = (p, obj)
        elif trial is None and is_trial_result(obj):
            trial = (p, obj)
    if reward_obj is None and trial is None and reward_txt is None:
        return None
    base = os.path.dirname(os.path.abspath(trace))

    def shown(p: str) -> str:
        return os.path.relpath(p, base)

    r = Result(NAME, "", rule="reward > 0")
    sources = []
    if trial is not None:
        p, obj = trial
        sources.append(shown(p))
        _read_trial(r, obj)
    if reward_obj is not None:
        p, obj = reward_obj
        sources.insert(0, shown(p))
        _read_reward(r, obj, run)
    if r.reward is None and reward_txt is not None:
        sources.append(shown(reward_txt[0]))
        r.reward = reward_txt[1]
    if COMPILE in r.speedups:
        r.primary = COMPILE
    r.source = " + ".join(sources)
    r.outcome = outcome_of(None if r.reward is None else r.reward > 0)
    if r.correct is None and r.outcome == "passed":
        r.correct = True
    return r
