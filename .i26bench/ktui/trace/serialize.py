"""The normalized model as plain JSON-able data (`ktui show --json`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ktui.trace.facts import all_flags
from ktui.trace.model import Run


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # a field ``_x`` is read through its property ``x`` (kept, or read back from the file);
        # hidden fields are the model's own bookkeeping
        return {f.name.lstrip("_"): _plain(getattr(obj, f.name.lstrip("_"))) for f in dataclasses.fields(obj)
                if not f.metadata.get("hidden")}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def run_to_dict(run: Run, turn: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "path": run.path,
        "variant": run.variant,
        "format": run.format,
        "problem": _plain(run.problem),
        "model": run.model,
        "persona": run.persona,
        "scenario": run.scenario,
        "backend": run.backend,
        "actors": _plain(run.actors),
        "started_ms": run.started_ms,
        "ended_ms": run.ended_ms,
        "wall_ms": run.wall_ms,
        "max_turns": run.max_turns,
        "outcome": run.outcome,
        "terminal_state": run.terminal_state,
        "terminal": _plain(run.terminal),
        "scores": run.scores,
        "final_score": run.final_score,
        "counts": {
            "events": len(run.events),
            "turns": len(run.turns),
            "tool_calls": len(run.agent_calls),
            "seed_calls": len(run.calls) - len(run.agent_calls),
            "kernel_versions": len(run.kernels),
        },
        "tokens": {"in": run.tokens_in, "out": run.tokens_out, "total": run.tokens_total,
                   "by_actor": run.tokens_by_actor},
        "llm_ms": run.llm_ms,
        "tool_ms": run.tool_ms,
        "metrics": _plain(run.metrics),
        # the flag set `runs` and the text `show` list: sanity flags, then the run's state
        # (backend_error, dangling_call, still_writing, bad_lines, the grader's own flag)
        "flags": _plain(all_flags(run)),
        "kernels": _plain(run.kernels),
        "notes": [{"line": ln, "text": t} for ln, t in run.notes],
        "problems": _plain(run.problems),
        "incomplete": run.incomplete,
    }
    turns = run.turns if turn is None else [t for t in run.turns if t.index == turn]
    out_turns = []
    for t in turns:
        td = _plain(t)
        td["tokens_total"] = t.tokens_total
        td["status"] = t.status
        for c, cd in zip(t.calls, td["calls"], strict=True):
            cd["status"] = c.status
            cd["duration_ms"] = c.duration_ms
            if c.kernel is not None and "kernel_code" in cd["args"]:
                cd["args"]["kernel_code"] = f"<{run.kernels[c.kernel - 1].label}: see kernels>"
        out_turns.append(td)
    d["turns"] = out_turns
    return d
