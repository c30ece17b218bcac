"""OpenHands V0 trajectories (the event stream of --save-trajectory-path) (issue 21).

Real file read: Harbor's RFC 0001 sample ``docs/rfcs/0001-trajectory-format/openhands_trajectory.json``
(a real OpenHands run, gpt-5-2025-08-07, 2025-10-10; seen in a copy of Harbor at
github.com/sachiny0106/Xelron 6cb22d1, no licence file there: not copied): before, "not a trace";
now 2 turns, 2 calls paired, 12,945 tokens, 23.2 s model time in turn 0, end halt (finish). The
files here are minimal files of the same structure, written for the tests.
"""

from __future__ import annotations

import json

from ktui.trace import load
from ktui.trace.importers import detect

KERNEL = ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(x, y, n, B: tl.constexpr):\n"
          "    i = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)\n\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
          "        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)\n        return y\n")


def _meta(call_id, fn, resp, prompt, out):
    return {"function_name": fn, "tool_call_id": call_id, "total_calls_in_response": 1,
            "model_response": {"id": resp, "model": "gpt-5-2025-08-07", "choices": [],
                               "usage": {"prompt_tokens": prompt, "completion_tokens": out}}}


def _events():
    return [
        {"id": 0, "timestamp": "2025-10-10T06:10:15.158090", "source": "agent", "message": "You are OpenHands agent.",
         "action": "system", "args": {"content": "You are OpenHands agent.", "tools": []}},
        {"id": 1, "timestamp": "2025-10-10T06:10:15.159489", "source": "user", "message": "Write /app/solution.py",
         "action": "message", "args": {"content": "Write ModelNew to /app/solution.py", "wait_for_response": False}},
        {"id": 2, "timestamp": "2025-10-10T06:10:15.163941", "source": "user", "message": "Retrieving content",
         "action": "recall", "args": {"recall_type": "workspace_context"}},
        {"id": 4, "timestamp": "2025-10-10T06:10:15.203046", "source": "environment", "message": "Added context",
         "cause": 2, "observation": "recall", "content": "Added workspace context", "extras": {}},
        {"id": 5, "timestamp": "2025-10-10T06:10:38.391633", "source": "agent", "message": "I will write it.",
         "action": "edit", "tool_call_metadata": _meta("call_a", "str_replace_editor", "r1", 5000, 900),
         "args": {"command": "create", "path": "/app/solution.py", "file_text": KERNEL, "thought": "Writing it.",
                  "security_risk": 1, "impl_source": "oh_aci"}},
        {"id": 6, "timestamp": "2025-10-10T06:10:38.500000", "source": "agent", "message": "File created",
         "cause": 5, "observation": "edit", "content": "File created successfully at: /app/solution.py",
         "extras": {"path": "/app/solution.py"}},
        {"id": 7, "timestamp": "2025-10-10T06:10:50.000000", "source": "agent", "message": "edit",
         "action": "edit", "tool_call_metadata": _meta("call_b", "str_replace_editor", "r2", 6000, 100),
         "args": {"command": "str_replace", "path": "/app/solution.py", "old_str": "not there", "new_str": "x",
                  "thought": ""}},
        {"id": 8, "timestamp": "2025-10-10T06:10:50.100000", "source": "agent", "message": "error",
         "cause": 7, "observation": "error",
         "content": "ERROR:\nNo replacement was performed, old_str `not there` did not appear verbatim"},
        {"id": 9, "timestamp": "2025-10-10T06:11:00.000000", "source": "agent", "message": "Running command",
         "action": "run", "tool_call_metadata": _meta("call_c", "execute_bash", "r3", 6100, 50),
         "args": {"command": "python /app/check.py", "thought": "", "blocking": True}},
        {"id": 10, "timestamp": "2025-10-10T06:11:02.000000", "source": "agent", "message": "exit code 1",
         "cause": 9, "observation": "run", "content": "AssertionError: mismatch",
         "extras": {"command": "python /app/check.py", "metadata": {"exit_code": 1}}},
        {"id": 11, "timestamp": "2025-10-10T06:11:05.000000", "source": "agent", "message": "All done!",
         "action": "finish", "tool_call_metadata": _meta("call_d", "finish", "r4", 6200, 40),
         "args": {"final_thought": "Wrote the kernel.", "outputs": {}, "thought": ""},
         "llm_metrics": {"accumulated_cost": 0.0193}},
    ]


def test_a_v0_trajectory_is_read(tmp_path):
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(_events()))
    assert detect(str(p)).name == "openhands-v0"
    run = load(str(p))
    assert run.format == "openhands-v0" and not run.problems
    assert run.model == "gpt-5-2025-08-07"
    assert [c.name for c in run.calls] == ["str_replace_editor", "str_replace_editor", "execute_bash", "finish"]
    assert all(c.result is not None for c in run.calls)
    assert run.calls[1].result.is_error  # the refused str_replace
    assert run.calls[2].result.status != "ok"  # exit code 1
    assert len(run.kernels) == 1 and run.kernels[0].code == KERNEL  # the refused edit changed nothing
    assert [t.tokens_in for t in run.turns] == [5000, 6000, 6100, 6200]
    assert run.turns[0].llm_ms and run.turns[0].llm_ms > 20_000  # from the recall before the response
    kinds = [t.kind for t in run.terminal]
    assert "halt" in kinds and "dangling_call" not in kinds
    assert "Write ModelNew" in run.problem.prompt
    assert run.turns[0].text == "Writing it."  # the thought before the call, the turn's text


def test_a_backend_error_and_hostile_events(tmp_path):
    evs = _events()[:6] + [
        {"id": 12, "timestamp": "2025-10-10T06:11:05", "source": "environment", "message": "",
         "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "error",
                                                                        "reason": "RateLimitError: 429"}},
        "junk", {"id": True, "source": "agent", "action": "run"}, {"id": 13, "source": "agent", "observation": "run",
                                                                   "cause": 999, "content": "\x1b]52;c;AAAA\x07"}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(evs))
    run = load(str(p))
    assert any(t.kind == "backend_error" and "429" in t.text for t in run.terminal)
    assert len(run.calls) == 1 and len(run.kernels) == 1
    assert len([x for x in run.problems if x.severity == "warning"]) == 2


def test_sdk_events_are_not_v0_and_v0_is_not_sdk(tmp_path):
    sdk = [{"id": "a", "kind": "MessageEvent", "source": "user", "timestamp": "2025-01-01T00:00:00",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}]
    p = tmp_path / "sdk.json"
    p.write_text(json.dumps(sdk))
    assert detect(str(p)).name == "openhands"
    q = tmp_path / "v0.json"
    q.write_text(json.dumps(_events()))
    assert detect(str(q)).name == "openhands-v0"


def _think_event(eid, thought, arg, content):
    # the shape of a real `think` action (StephenQSstarThomas/Anewbenchmark 9c152d9,
    # OpenHands/trajectories/injected_20250910_070654.json, gpt-4o; no licence found: written after it)
    call = {"id": f"call_{eid}", "type": "function",
            "function": {"name": "think", "arguments": json.dumps({"thought": arg})}}
    resp = {"id": f"r{eid}", "model": "gpt-4o-2024-08-06", "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            "choices": [{"message": {"role": "assistant", "content": content, "tool_calls": [call]}}]}
    return [{"id": eid, "timestamp": "2025-09-10T01:27:17.039596", "source": "agent",
             "message": f"I am thinking...: {thought}", "action": "think",
             "tool_call_metadata": {"function_name": "think", "tool_call_id": f"call_{eid}", "model_response": resp,
                                    "total_calls_in_response": 1},
             "args": {"thought": thought}},
            {"id": eid + 1, "timestamp": "2025-09-10T01:27:17.040000", "source": "agent",
             "message": "Your thought has been logged.", "cause": eid, "observation": "think",
             "content": "Your thought has been logged.", "extras": {}}]


def test_a_think_call_shows_its_thought_and_the_text_before_it_apart(tmp_path):
    evs = _events()[:2]
    evs += _think_event(20, "The repository holds no code.", "The repository holds no code.", None)
    evs += _think_event(30, "Let me reason first.\nCheck the kernel's bounds.", "Check the kernel's bounds.",
                        "Let me reason first.")
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(evs))
    run = load(str(p))
    a, b = run.calls
    assert a.name == b.name == "think"
    assert a.args == {"thought": "The repository holds no code."}  # was {} ("(no arguments)")
    assert not run.turns[0].text  # the thought is the call's, not also the turn's text
    assert b.args == {"thought": "Check the kernel's bounds."}
    assert run.turns[1].text == "Let me reason first."
    assert a.result is not None and a.result.status == "ok"
