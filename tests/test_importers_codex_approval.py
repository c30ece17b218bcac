"""Codex rounds that waited for the user's approval (issue 21, held-out pass of helper traces).

Real files read: 11 Codex CLI 0.40 / 0.41 / 0.42-alpha rollouts of
Python-AI-Solutions/agentic-neurodata-conversion (MIT; e1fee5a, d8455c6;
``.codex/sessions/2025/09/2{6,9}/``; Windows, ``approval_policy: on-request``). A call that asks to
run outside the sandbox (``with_escalated_permissions: true``) waits for the user's answer, and
Codex writes the round's ``token_count`` and items only once the call was answered and ran: in
``rollout-2025-09-29T13-09-19-...`` the last round's ``agent_reasoning`` is at 07:42:27, its
``token_count`` at 11:02:38 and the call's output is "exec command rejected by user". Before:
12,198.7 s of model time in a 12,199.7 s span, and the refused calls "ok"; after: 165.5 s, the
refusals failed, the wait said in a note. The lines below have the real files' shape (0.41:
``agent_reasoning``, then ``token_count``, ``reasoning``, ``function_call``, its output and the next
``turn_context`` written together), values shortened.
"""

from __future__ import annotations

import json

from ktui.trace import load


def _line(ts, typ, payload):
    return json.dumps({"timestamp": ts, "type": typ, "payload": payload})


def _tokens(ts, total_in, total_out):
    return _line(ts, "event_msg", {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": total_in, "cached_input_tokens": 0, "output_tokens": total_out,
                              "reasoning_output_tokens": 0, "total_tokens": total_in + total_out},
        "last_token_usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})


def _round(t_stream, t_done, call_id, args, output, total_in, total_out):
    return [
        _line(t_stream, "event_msg", {"type": "agent_reasoning", "text": "**Checking the docs**"}),
        _tokens(t_done, total_in, total_out),
        _line(t_done, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "x"}],
                                        "content": None, "encrypted_content": "gAAAA"}),
        _line(t_done, "response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps(args),
                                        "call_id": call_id}),
        _line(t_done, "response_item", {"type": "function_call_output", "call_id": call_id, "output": output}),
        _line(t_done, "turn_context", {"cwd": "c:\\work", "approval_policy": "on-request", "model": "gpt-5-codex"}),
    ]


def _rollout(tmp_path, rejected=True):
    lines = [
        _line("2025-09-29T07:39:19.828Z", "session_meta", {"id": "01999469-65fd-7fa2-ab93-d24bb4c714cb",
                                                           "timestamp": "2025-09-29T07:39:19.828Z", "cwd": "c:\\work",
                                                           "originator": "codex_cli_rs", "cli_version": "0.41.0"}),
        _line("2025-09-29T07:39:19.829Z", "event_msg", {"type": "user_message", "message": "how do I run codex here?",
                                                        "kind": "plain"}),
        _line("2025-09-29T07:39:19.829Z", "turn_context", {"cwd": "c:\\work", "approval_policy": "on-request",
                                                           "model": "gpt-5-codex"}),
    ]
    ok = json.dumps({"output": "README.md\nAGENTS.md\n", "metadata": {"exit_code": 0, "duration_seconds": 0.3}})
    lines += _round("2025-09-29T07:39:29.943Z", "2025-09-29T07:39:30.165Z", "call_a",
                    {"command": ["bash", "-lc", "ls"], "workdir": "c:\\work"}, ok, 3000, 100)
    out = "exec command rejected by user" if rejected else json.dumps(
        {"output": "Cloning into 'codex'...\n", "metadata": {"exit_code": 0, "duration_seconds": 6.9}})
    lines += _round("2025-09-29T07:42:27.200Z", "2025-09-29T11:02:38.540Z", "call_b",
                    {"command": ["bash", "-lc", "git clone https://github.com/openai/codex"],
                     "with_escalated_permissions": True, "justification": "need the README", "workdir": "c:\\work"},
                    out, 7000, 300)
    lines.append(_line("2025-09-29T11:02:39.570Z", "event_msg", {"type": "turn_aborted", "reason": "interrupted"}))
    p = tmp_path / "rollout-2025-09-29T13-09-19-01999469-65fd-7fa2-ab93-d24bb4c714cb.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_the_wait_for_the_users_approval_is_not_model_time(tmp_path):
    run = load(str(_rollout(tmp_path)))
    assert not run.problems and len(run.turns) == 2
    t0, t1 = run.turns
    assert abs(t0.llm_ms - 10_336) < 2  # from the turn context to its token_count (no approval asked)
    # the second round: from the first round's completion to its last streamed event, not to the
    # token_count written 3 h 20 min later, once the user had answered
    assert abs(t1.llm_ms - 177_035) < 2  # 07:39:30.165 to 07:42:27.200
    assert sum(t.llm_ms for t in run.turns) < 300_000
    assert any("waited for the user's approval" in n[1] for n in run.notes)
    # the refused call never ran
    assert run.calls[1].result.status == "failed" and run.calls[0].result.status == "ok"
    assert run.tokens_in == 7000 and run.tokens_out == 300


def test_an_approved_call_is_bounded_the_same_way(tmp_path):
    run = load(str(_rollout(tmp_path, rejected=False)))
    t1 = run.turns[1]
    assert t1.llm_ms < 300_000 and run.calls[1].result.status == "ok"


def test_a_patch_the_user_rejected_is_not_applied(tmp_path):
    patch = ("*** Begin Patch\n*** Add File: kernel.py\n+import triton\n+import triton.language as tl\n"
             "+@triton.jit\n+def k(x):\n+    pass\n*** End Patch\n")
    lines = [
        _line("2025-09-29T07:39:19.828Z", "session_meta", {"id": "0199", "cwd": "/w", "originator": "codex_cli_rs",
                                                           "cli_version": "0.41.0"}),
        _line("2025-09-29T07:39:19.829Z", "turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
        _tokens("2025-09-29T07:39:30.000Z", 10, 10),
        _line("2025-09-29T07:39:30.000Z", "response_item", {"type": "function_call", "name": "shell", "call_id": "p1",
                                                            "arguments": json.dumps({"command": ["apply_patch", patch]})}),
        _line("2025-09-29T07:39:40.000Z", "response_item", {"type": "function_call_output", "call_id": "p1",
                                                            "output": "patch rejected by user"}),
    ]
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(lines) + "\n")
    run = load(str(p))
    assert run.calls[0].result.status == "failed" and run.kernels == []
