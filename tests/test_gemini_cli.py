"""Gemini CLI chat recordings (issue 21).

Real file read: Harbor's RFC 0001 sample ``docs/rfcs/0001-trajectory-format/gemini-cli-trajectory.json``
(a real gemini-2.0-flash session, 2025-10-10; seen in a copy of Harbor at github.com/sachiny0106/Xelron
6cb22d1, no licence file there: not copied): before "not a trace"; now 1 turn, 5,939 tokens, the
task as the prompt (that recording holds no toolCalls although the model says it wrote the file).
The tool-call fields below are those Harbor's converter reads (``harbor/agents/installed/
gemini_cli.py``: toolCalls[].id/name/args/result[].functionResponse.response.output, tokens.input/
output/cached/thoughts/tool); the file is a minimal one of that structure, written for the test.
"""

from __future__ import annotations

import json

from ktui.trace import load
from ktui.trace.importers import detect

KERNEL = ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(x, y, n, B: tl.constexpr):\n"
          "    i = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)\n\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
          "        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)\n        return y\n")


def _resp(cid, name, output=None, error=None):
    r = {"output": output} if error is None else {"error": error}
    return [{"functionResponse": {"id": cid, "name": name, "response": r}}]


def _session(last_error: bool = False) -> dict:
    msgs = [
        {"id": "u1", "timestamp": "2025-10-10T06:59:39.894Z", "type": "user", "content": "Write ModelNew to /app/solution.py"},
        {"id": "g1", "timestamp": "2025-10-10T06:59:45.000Z", "type": "gemini", "content": "I'll write the kernel.",
         "thoughts": [{"subject": "Plan", "description": "a Triton kernel", "timestamp": "2025-10-10T06:59:44Z"}],
         "tokens": {"input": 5915, "output": 300, "cached": 0, "thoughts": 120, "tool": 0, "total": 6335},
         "model": "gemini-2.5-pro",
         "toolCalls": [{"id": "write_file-1", "name": "write_file", "status": "success",
                        "args": {"file_path": "/app/solution.py", "content": KERNEL},
                        "result": _resp("write_file-1", "write_file", "Successfully created /app/solution.py")},
                       {"id": "replace-2", "name": "replace", "status": "error",
                        "args": {"file_path": "/app/solution.py", "old_string": "absent", "new_string": "x"},
                        "result": _resp("replace-2", "replace", error="Failed to edit, 0 occurrences found")}]},
        {"id": "g2", "timestamp": "2025-10-10T06:59:50.000Z", "type": "gemini", "content": "",
         "tokens": {"input": 6400, "output": 20, "thoughts": 0, "tool": 5},
         "model": "gemini-2.5-pro",
         "toolCalls": [{"id": "run-3", "name": "run_shell_command", "status": "success",
                        "args": {"command": "python /app/check.py"},
                        "result": _resp("run-3", "run_shell_command", "Command: python /app/check.py\nExit Code: 0")}]},
    ]
    if last_error:
        msgs.append({"id": "e1", "timestamp": "2025-10-10T07:00:00Z", "type": "error",
                     "content": "[API Error: 429 Resource exhausted]"})
    return {"sessionId": "cdd63974", "projectHash": "f53b", "startTime": "2025-10-10T06:59:39.894Z",
            "lastUpdated": "2025-10-10T07:00:00Z", "messages": msgs}


def test_a_gemini_cli_session_is_read(tmp_path):
    p = tmp_path / "session-2025-10-10T06-59-cdd63974.json"
    p.write_text(json.dumps(_session()))
    assert detect(str(p)).name == "gemini-cli"
    run = load(str(p))
    assert run.format == "gemini-cli" and not run.problems and run.model == "gemini-2.5-pro"
    assert [c.name for c in run.calls] == ["write_file", "replace", "run_shell_command"]
    assert all(c.result is not None for c in run.calls)
    assert run.calls[1].result.is_error and "0 occurrences" in run.calls[1].result.summary
    assert len(run.kernels) == 1 and run.kernels[0].code == KERNEL  # the refused replace changed nothing
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(5915, 420), (6400, 25)]
    assert "Plan: a Triton kernel" in (run.turns[0].reasoning or "")
    assert run.problem.prompt.startswith("Write ModelNew")
    assert run.turns[0].llm_ms == 5106  # from the user's message to the response


def test_an_error_last_is_how_the_run_ended_and_hostile_messages(tmp_path):
    s = _session(last_error=True)
    s["messages"].insert(1, "junk")
    s["messages"][2]["toolCalls"].append({"id": 5, "name": None, "args": "x", "result": {"a": 1}})
    p = tmp_path / "s.json"
    p.write_text(json.dumps(s))
    run = load(str(p))
    assert any(t.kind == "backend_error" and "429" in t.text for t in run.terminal)
    assert len([x for x in run.problems if x.severity == "warning"]) == 1  # the junk message


def test_other_json_is_not_a_gemini_session(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"sessionId": "a", "messages": [{"role": "user", "content": "hi"}]}))
    assert detect(str(p)).name != "gemini-cli"


def test_parts_content_and_an_edits_display_object(tmp_path):
    # newer recordings: a user message's content as parts ([{"text": ...}]), an edit's resultDisplay
    # an object ({fileDiff, fileName, filePath, originalContent, newContent}); the edit applies
    s = _session()
    s["messages"][0]["content"] = [{"text": "Write ModelNew to /app/solution.py"}]
    s["messages"][1]["toolCalls"][1].update(status="success", args={
        "file_path": "/app/solution.py", "old_string": "* 2", "new_string": "* 3"},
        result=_resp("replace-2", "replace", "Successfully modified file"),
        # as real recordings hold it: newContent is the whole file the edit left
        resultDisplay={"fileDiff": "@@ -1 +1 @@", "fileName": "solution.py", "originalContent": KERNEL,
                       "newContent": KERNEL.replace("* 2", "* 3")})
    p = tmp_path / "s.json"
    p.write_text(json.dumps(s))
    run = load(str(p))
    assert run.problem.prompt == "Write ModelNew to /app/solution.py"
    assert run.calls[1].result.summary == "Successfully modified file" and not run.calls[1].result.is_error
    assert len(run.kernels) == 2 and "* 3" in run.kernels[-1].code
