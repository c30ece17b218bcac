"""Harbor's OpenHands ATIF (issue 21): calls written as text, and the finish tool.

Real files read: Harbor's golden OpenHands trajectories (tests/golden/openhands/hello-world.trajectory
.json and .trajectory.no_function_calling.json, ATIF-v1.5, written by Harbor's OpenHands converter
from a real OpenHands run against Harbor's fake LLM server; seen in a copy of Harbor at
github.com/sachiny0106/Xelron 6cb22d1, no licence file in that copy: not copied). Before: the
no-function-calling file had 0 calls (OpenHands asks such models to write ``<function=NAME>``
blocks; the converter keeps them as the message) and both ended ``dangling_call`` (OpenHands'
``finish`` has no observation by design). The files below are minimal files of the same structure.
"""

from __future__ import annotations

import json

from ktui.trace import load
from ktui.trace.importers.textcalls import MAX_CALLS, text_calls

KERNEL = ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(x, y, n, B: tl.constexpr):\n"
          "    i = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)\n\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
          "        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)\n        return y\n")
EXAMPLE = ("Here's a running example of how to perform a task with the provided tools.\n\nASSISTANT: Sure!\n"
           "<function=execute_bash>\n<parameter=command>\npwd && ls\n</parameter>\n</function>\n\n"
           "--------------------- END OF EXAMPLE ---------------------\n\nDo NOT assume the environment is the same "
           "as in the example above.\n\n--------------------- NEW TASK DESCRIPTION ---------------------\n")
TAIL = ("\n\n--------------------- END OF NEW TASK DESCRIPTION ---------------------\n\nPLEASE follow the format "
        "strictly! PLEASE EMIT ONE AND ONLY ONE FUNCTION CALL PER MESSAGE.\n")


def _atif(steps: list, path) -> str:
    path.write_text(json.dumps({"schema_version": "ATIF-v1.5", "session_id": "NORMALIZED_SESSION_ID",
                                "agent": {"name": "openhands", "version": "1.0.0", "extra": {"agent_class": "CodeActAgent"}},
                                "steps": steps, "final_metrics": {"total_prompt_tokens": 220}}))
    return str(path)


def test_calls_written_as_text_are_calls(tmp_path):
    steps = [{"step_id": 1, "source": "system", "message": "You are OpenHands agent."},
             {"step_id": 2, "source": "user", "message": EXAMPLE + "Write /app/solution.py with ModelNew." + TAIL},
             {"step_id": 3, "source": "agent", "message": "<function=str_replace_editor>\n<parameter=command>create"
              "</parameter>\n<parameter=path>/app/solution.py</parameter>\n<parameter=file_text>\n" + KERNEL +
              "</parameter>\n<parameter=security_risk>LOW</parameter>\n</function>",
              "observation": {"results": [{"content": "File created successfully at: /app/solution.py"}]},
              "metrics": {"prompt_tokens": 100, "completion_tokens": 50}},
             {"step_id": 4, "source": "agent", "message": "<function=execute_bash>\n<parameter=command>python "
              "/app/check.py\n</parameter>\n<parameter=security_risk>LOW</parameter>\n</function>",
              "observation": {"results": [{"content": "ok\n[The command completed with exit code 0.]"}]}},
             {"step_id": 5, "source": "agent", "message": "<function=finish>\n<parameter=message>Task complete."
              "</parameter>\n</function>"}]
    run = load(_atif(steps, tmp_path / "trajectory.json"))
    assert [c.name for c in run.calls] == ["str_replace_editor", "execute_bash", "finish"]
    assert run.calls[0].args["path"] == "/app/solution.py" and run.calls[0].args["file_text"] == KERNEL[:-1]
    assert run.calls[1].result is not None and "exit code 0" in run.calls[1].result.summary
    # the kernel the text call wrote (the newlines that frame a parameter's value are the format's)
    assert len(run.kernels) == 1 and run.kernels[0].code.rstrip("\n") == KERNEL.rstrip("\n")
    kinds = [t.kind for t in run.terminal]
    assert "halt" in kinds and "dangling_call" not in kinds
    assert not run.problems
    # the in-context example of the user message is neither a call nor the task
    assert all(c.turn is not None for c in run.calls) and len(run.calls) == 3
    assert run.problem.prompt == "Write /app/solution.py with ModelNew."


def test_finish_with_native_function_calling_ends_the_run(tmp_path):
    steps = [{"step_id": 1, "source": "user", "message": "Create hello.txt"},
             {"step_id": 2, "source": "agent", "message": "I edited the file.",
              "tool_calls": [{"tool_call_id": "call_1", "function_name": "str_replace_editor",
                              "arguments": {"command": "create", "path": "/app/hello.txt", "file_text": "hi"}}],
              "observation": {"results": [{"source_call_id": "call_1", "content": "File created"}]}},
             {"step_id": 3, "source": "agent", "message": "All done!",
              "tool_calls": [{"tool_call_id": "call_2", "function_name": "finish", "arguments": {"message": "done"}}]}]
    run = load(_atif(steps, tmp_path / "t.json"))
    kinds = [t.kind for t in run.terminal]
    assert kinds.count("halt") == 1 and "dangling_call" not in kinds
    assert "dangling_call" not in [f.code for f in run.flags]
    # a call other than finish left without a result is still a dangling call
    steps[2]["tool_calls"][0]["function_name"] = "execute_bash"
    run = load(_atif(steps, tmp_path / "u.json"))
    assert "dangling_call" in [t.kind for t in run.terminal]


def test_text_calls_are_bounded_and_exact():
    many = "<function=execute_bash>\n<parameter=command>ls</parameter>\n</function>\n" * 1000
    assert len(text_calls(many)) == MAX_CALLS
    # no closing tag (the model's stop sequence), two calls in one message, a repeated parameter
    got = text_calls("<function=a>\n<parameter=x>\n1\n</parameter>\n<parameter=x>2</parameter>\n"
                     "<function=b><parameter=y>q</parameter>")
    assert got == [("a", {"x": "1"}), ("b", {"y": "q"})]
    assert text_calls("plain text, no calls") == [] and text_calls(None) == []  # type: ignore[arg-type]
    assert text_calls("<function=\x1b]52;c;AAAA\x07>x</function>") == []  # a name that is not a name
