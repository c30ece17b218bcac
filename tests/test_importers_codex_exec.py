"""What ``codex exec --json`` prints (issue 21, held-out pass of helper traces).

Harnesses run Codex as ``codex exec --json ... | tee codex.txt`` (Harbor's ``codex`` agent keeps
that file beside its ATIF; SkillsBench and terminal-bench trials of the codex agent hold it);
ktui read it as the ensemble format ("not a trace"). No real stream was found in the stored
repositories (JSON-lines data files are not in the text index; the hits for ``thread.started``
are parsers' test strings), so the stream below is written with the event and item shapes of
``codex-rs/exec/src/exec_events.rs`` (openai/codex, Apache-2.0: ``ThreadEvent``, ``ThreadItem``,
``CommandExecutionItem``, ``FileChangeItem``, ``Usage``), on a KernelBench-style task.
"""

from __future__ import annotations

import json

from ktui.trace import load
from ktui.trace.importers import detect

KERNEL = ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(x, y, n, B: tl.constexpr):\n"
          "    i = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)\n\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
          "        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)\n        return y\n")


def _ev(t, **kw):
    return json.dumps({"type": t, **kw})


def _cmd(iid, command, out="", code=None, status="in_progress"):
    return {"id": iid, "type": "command_execution", "command": command, "aggregated_output": out,
            "exit_code": code, "status": status}


def _stream():
    write = f"bash -lc 'cat > /app/solution.py << \"EOF\"\n{KERNEL}EOF'"
    return [
        "Reading prompt from stdin...",
        _ev("thread.started", thread_id="0199a213-81c0-7800-8aa1-bbab2a035a53"),
        _ev("turn.started"),
        _ev("item.completed", item={"id": "item_0", "type": "reasoning", "text": "**Reading the task**"}),
        _ev("item.started", item=_cmd("item_1", "bash -lc 'cat /app/task.md'")),
        _ev("item.completed", item=_cmd("item_1", "bash -lc 'cat /app/task.md'", "Write ModelNew in /app/solution.py",
                                       0, "completed")),
        _ev("item.completed", item={"id": "item_2", "type": "agent_message", "text": "Writing a Triton kernel."}),
        _ev("item.started", item=_cmd("item_3", write)),
        _ev("item.completed", item=_cmd("item_3", write, "", 0, "completed")),
        _ev("item.started", item=_cmd("item_4", "bash -lc 'python /app/check.py'")),
        _ev("item.completed", item=_cmd("item_4", "bash -lc 'python /app/check.py'", "AssertionError: mismatch", 1,
                                       "failed")),
        _ev("item.completed", item={"id": "item_5", "type": "file_change", "status": "completed",
                                    "changes": [{"path": "/app/solution.py", "kind": "update"}]}),
        _ev("item.started", item=_cmd("item_6", "bash -lc 'rm -rf /app'")),
        _ev("item.completed", item=_cmd("item_6", "bash -lc 'rm -rf /app'", "", None, "declined")),
        _ev("item.completed", item={"id": "item_7", "type": "agent_message", "text": "Done: the check passes."}),
        _ev("turn.completed", usage={"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122}),
    ]


def test_an_exec_json_stream_is_read(tmp_path):
    p = tmp_path / "codex.txt"
    p.write_text("\n".join(_stream()) + "\n")
    assert detect(str(p)).name == "codex-exec-json"
    run = load(str(p))
    assert run.format == "codex-exec-json" and not run.problems
    assert [c.name for c in run.calls] == ["exec_command"] * 3 + ["apply_patch", "exec_command"]
    assert [c.result.status for c in run.calls] == ["ok", "ok", "failed", "ok", "failed"]  # the rm was declined
    # a turn ends at the calls it made: reasoning + cat | message + write | check | patch | rm | final message
    assert len(run.turns) == 6
    assert run.turns[1].text == "Writing a Triton kernel." and "check passes" in run.turns[-1].text
    ks = run.kernels
    assert len(ks) == 2 and ks[0].code == KERNEL and ks[1].attachment  # the patch's content is not in the stream
    assert run.tokens_in == 24763 and run.tokens_out == 122
    assert any("stderr" in n[1] for n in run.notes)


def test_a_failed_turn_ends_the_run_and_bad_lines(tmp_path):
    lines = _stream()[:6] + [_ev("error", message="Reconnecting... 2/5 (stream disconnected)"),
                             _ev("turn.failed", error={"message": "exceeded retry limit, last status: 429"})]
    p = tmp_path / "codex.txt"
    p.write_text("\n".join(lines) + "\n" + '{"type":"item.comp')  # the last line still being written
    run = load(str(p))
    assert run.terminal and run.terminal[-1].kind == "backend_error" and "429" in run.terminal[-1].text
    assert run.incomplete
    q = tmp_path / "b.txt"
    q.write_text("\n".join(_stream()[1:3] + [_ev("item.completed", item="x"), "[1, 2]",
                                            _ev("item.completed", item={"id": "z", "type": "command_execution"})]) + "\n")
    r = load(str(q))
    assert r.format == "codex-exec-json" and r.problems and len(r.calls) == 1
