"""Claude Code ``--output-format=stream-json`` with the CLI's own multi-line output in it.

Real file: xdotli/harbor-datagen d9a569e, ``fix_async_worker_queue/example_runs/partial_success_2025-11-19/
fix-async-worker-queue__gPApBGF/agent/claude-code.txt`` (Claude Code 2.0.46, Harbor's claude-code
agent; no licence found: not copied, the lines below are written after it): a Node stack trace
("Error: spawn ps ENOENT", 10 lines) printed into the stream between two messages. Before: ten
notes, one a line of the trace; now one note that says how many lines follow.
"""

from __future__ import annotations

import json

from ktui.trace.importers import load

INIT = {"type": "system", "subtype": "init", "cwd": "/app", "session_id": "s1", "tools": ["Bash", "KillShell"],
        "model": "claude-sonnet-4-5", "permissionMode": "default", "claude_code_version": "2.0.46", "uuid": "u0"}


def _assistant(mid, content):
    return {"type": "assistant", "message": {"model": "claude-sonnet-4-5-20250929", "id": mid, "type": "message",
                                             "role": "assistant", "content": content, "stop_reason": "tool_use",
                                             "usage": {"input_tokens": 2, "output_tokens": 10}},
            "parent_tool_use_id": None, "session_id": "s1", "uuid": mid + "u"}


def _result(tid, text):
    return {"type": "user", "message": {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                                      "content": text}]},
            "parent_tool_use_id": None, "session_id": "s1", "uuid": tid + "r"}


TRACE = ["Error: spawn ps ENOENT",
         "    at ChildProcess._handle.onexit (node:internal/child_process:285:19)",
         "    at onErrorNT (node:internal/child_process:483:16)",
         "  errno: -2,",
         "  code: 'ENOENT',",
         "}"]


def test_a_stack_trace_in_the_stream_is_one_note(tmp_path):
    lines = [json.dumps(INIT),
             json.dumps(_assistant("m1", [{"type": "tool_use", "id": "t1", "name": "KillShell",
                                           "input": {"shell_id": "c4c77d"}}]))]
    lines += TRACE
    lines += [json.dumps(_result("t1", '{"message":"Successfully killed shell: c4c77d"}')),
              "npm WARN something else",
              json.dumps(_assistant("m2", [{"type": "text", "text": "Done."}]))]
    p = tmp_path / "claude-code.txt"
    p.write_text("\n".join(lines) + "\n")
    run = load(str(p))
    assert run.format == "claude-code" and not run.problems
    cli = [(n, t) for n, t in run.notes if t.startswith("other output of the CLI")]
    assert cli == [(3, "other output of the CLI (not a stream-json line): Error: spawn ps ENOENT "
                       "(+5 more lines, to line 8)"),
                   (10, "other output of the CLI (not a stream-json line): npm WARN something else")]
    assert [c.status for c in run.calls] == ["ok"]
