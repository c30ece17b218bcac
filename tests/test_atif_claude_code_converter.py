"""Harbor ATIF written by Harbor's claude-code converter (Claude Code 2.0.46 trials).

Real files: xdotli/harbor-datagen d9a569e, three trials under ``*/example_runs/*/agent/trajectory.json``
(ATIF-v1.2, claude-code 2.0.46; no licence found: not copied, the steps below are written after
them). Before: every run's model was ``claude-haiku-4-5`` (``agent.model_name``: the model of the
Explore subagent's side-chain steps, while all 16-55 main-line steps and the trial's own
result.json say ``claude-sonnet-4-5``), and 4 Bash calls whose command printed nothing had "no
result" (``dangling_call``: the converter writes no observation for an empty result; the raw
result is in the step's ``extra.tool_result_metadata``).
"""

from __future__ import annotations

import json

from ktui.trace.importers import load

HAIKU, SONNET = "claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"


def _step(i, model, side, message, call=None, observation=None, raw=None):
    s = {"step_id": i, "timestamp": f"2025-11-19T22:13:{i:02d}.000Z", "source": "agent", "model_name": model,
         "message": message, "extra": {"stop_reason": "tool_use", "cwd": "/workspace", "is_sidechain": side}}
    if call is not None:
        s["tool_calls"] = [{"tool_call_id": call[0], "function_name": "Bash", "arguments": {"command": call[1]}}]
    if observation is not None:
        s["observation"] = {"results": [{"source_call_id": call[0], "content": observation}]}
    if raw is not None:
        meta = {"tool_use_result": {"stdout": "", "stderr": "", "interrupted": False},
                "raw_tool_result": {"tool_use_id": call[0], "type": "tool_result", "content": raw, "is_error": False}}
        s["extra"].update({"tool_use_name": "Bash", "tool_result_metadata": meta, "tool_result_is_error": False,
                           "metadata": meta})
    return s


def _trajectory(agent_model):
    steps = [{"step_id": 1, "timestamp": "2025-11-19T22:13:00.000Z", "source": "user", "message": "Fix the race.",
              "extra": {"is_sidechain": False}},
             _step(2, HAIKU, True, "Explore the repo"),
             _step(3, HAIKU, True, "Executed Bash t0", ("t0", "ls"), "app\n"),
             _step(4, SONNET, False, "Executed Bash t1", ("t1", "redis-server --daemonize yes"), raw=""),
             _step(5, SONNET, False, "Executed Bash t2", ("t2", "redis-cli ping"), "PONG\n"),
             _step(6, SONNET, False, "Done.")]
    return {"schema_version": "ATIF-v1.2", "session_id": "c6eb83c9",
            "agent": {"name": "claude-code", "version": "2.0.46", "model_name": agent_model}, "steps": steps}


def test_the_main_lines_model_and_a_result_with_no_content(tmp_path):
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(_trajectory(HAIKU)))
    run = load(str(p))
    assert run.format == "harbor-atif" and not run.problems
    assert run.model == SONNET  # was the side chain's haiku
    assert any("side-chain" in n and HAIKU in n for _, n in run.notes)
    t1 = next(c for c in run.calls if c.id == "t1")
    assert t1.result is not None and t1.status == "ok" and t1.result.summary == ""  # was "no result"
    assert all(c.result is not None for c in run.calls)
    assert "dangling_call" not in [t.kind for t in run.terminal]


def test_a_model_name_the_main_line_uses_is_kept(tmp_path):
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(_trajectory(SONNET)))
    run = load(str(p))
    assert run.model == SONNET and not any("side-chain" in n for _, n in run.notes)
