"""Each real sample in ../shared/formats, read into the Run model: counts worked out by hand from
the raw JSON (see the comments), kernel text checked byte for byte against what the agent wrote."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import SHARED

from ktui.trace import load
from ktui.trace.model import ERROR, FAILED, MISSING, OK

F = SHARED / "formats"
WAFER = F / "chat-messages" / "wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl"
CLAUDE = F / "claude-code" / "vsla_cuda_toolchain_check_bash_todowrite.jsonl"
CODEX = F / "codex-cli" / "code_butler_docstring_fix_shell_command_apply_patch_v0.63.jsonl"
INSPECT = F / "inspect" / "vitals_arithmetic_with_tool_claude35_v0.3.77.json"
HARBOR = F / "swe-agent" / "harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json"
MINI = F / "swe-agent" / "mini_swe_agent_v1.15_gemini3pro_django16255.traj.json"

pytestmark = pytest.mark.skipif(not F.is_dir(), reason="../shared/formats not present")


def names(run):
    return Counter(c.name for c in run.calls)


def statuses(run):
    return [c.status for c in run.calls]


# ---- Wafer chat-message rollout -------------------------------------------------------------------
def test_wafer_turns_calls_problem_and_outcome():
    run = load(WAFER)
    assert run.format == "chat-messages"
    # 22 messages: system, user, then 10 assistant / tool pairs; one toolCall per assistant message
    assert len(run.turns) == 10
    assert names(run) == {"write": 4, "bash": 6}
    # every call paired by id; one line holds the whole rollout, so "lines" are message ordinals:
    # assistant message 2k+3 calls, tool message 2k+4 answers
    assert [(c.line, c.result.line) for c in run.calls] == [(2 * k + 3, 2 * k + 4) for k in range(10)]
    assert [c.id for c in run.calls][0] == "call_0a0517e8743048a1a17e7da8"
    # bash results: invalid launch (exit 1), PASS, no space left (x2 with the blocked rm between)
    assert statuses(run) == [OK, FAILED, OK, OK, OK, ERROR, ERROR, OK, ERROR, OK]
    # KernelBench level 1, problem 9 (the file name's number; metadata.problem_id is the 0-based index 8)
    p = run.problem
    assert (p.level, p.problem_id, p.name) == (1, 9, "9_Tall_skinny_matrix_multiplication_")
    assert p.reference_source.startswith("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):")
    assert run.model == "accounts/fireworks/models/glm-4p7"
    assert run.scores == {"reward": 0.0, "advantages": 0.0} and run.final_score == 0.0
    assert run.outcome == "failed"
    # tokens are all 0 in this GLM run; completions[].created is the only time (1769062510 .. +546 s)
    assert [t.tokens_in for t in run.turns] == [0] * 10 and run.tokens_total == 0
    assert run.started_ms == 1769062510_000 and run.wall_ms == 546_000
    assert run.backend == "hip"
    assert run.turns[0].text.startswith("I'llI'll optimize")  # the streaming artefact is kept as written


def test_wafer_kernel_versions_byte_for_byte():
    raw = json.loads(WAFER.read_bytes())
    writes = [b["arguments"]["content"] for m in raw["messages"] if m["role"] == "assistant"
              for b in m["content"] if b["type"] == "toolCall" and b["name"] == "write"]
    run = load(WAFER)
    assert [k.code for k in run.kernels] == writes  # four distinct files
    assert [k.line_count for k in run.kernels] == [121, 121, 79, 53]
    # the tool said how many bytes it wrote
    assert [len(k.code.encode()) for k in run.kernels] == [2895, 2895, 1850, 1331]
    assert {k.path for k in run.kernels} == {"optimized_matmul.py"}
    assert [k.first_turn for k in run.kernels] == [0, 2, 4, 9]
    v2 = run.kernel("v2")
    assert "class ModelNew" in v2.code and "hip/hip_runtime.h" in v2.code
    verdicts = [(u.turn, u.status, u.summary) for u in v2.uses if u.verdict]
    assert len(verdicts) == 1
    turn, status, summary = verdicts[0]
    assert (turn, status) == (3, OK)
    assert summary.startswith("Result: PASS · [KernelBench] New: 5.933ms, Ref: 1.371ms, Speedup: 0.23x")
    assert run.first_correct_turn == 3
    v1 = [u for u in run.kernel("v1").uses if u.verdict]
    assert [u.status for u in v1] == [FAILED] and "Correctness: False" in v1[0].summary
    assert [u.status for u in run.kernel("v3").uses if u.verdict] == [ERROR, ERROR]
    assert run.final_kernel.label == "v4"  # the last ModelNew the agent wrote (never evaluated)
    # v2's result is not the final kernel's: the run has no metrics, and a flag says why
    assert run.metrics is None
    fl = [f for f in run.flags if f.code == "final_unevaluated"]
    assert len(fl) == 1 and fl[0].kernel == 4 and "about v3" in fl[0].message
    # the bash calls that ran the verifier point at the version they tested
    assert [c.kernel for c in run.calls if c.name == "bash"] == [1, 2, 3, None, None, 3]


# ---- Claude Code --------------------------------------------------------------------------------
def test_claude_code_counts():
    run = load(CLAUDE)
    assert run.format == "claude-code"
    # 29 assistant lines, 19 message ids (one turn per API response)
    assert len(run.turns) == 19
    assert names(run) == {"Bash": 12, "TodoWrite": 7, "Read": 2, "LS": 1}
    assert all(c.result is not None for c in run.calls)  # 22 tool_use ids, 22 tool_result ids, all paired
    # is_error results: nvcc not found (Bash, ran and failed), status.md does not exist (Read),
    # sudo needs a password (Bash), cd to /tmp blocked (Bash, the dispatcher refused)
    errs = [(c.name, c.status) for c in run.calls if c.status != OK]
    assert errs == [("Bash", FAILED), ("Read", ERROR), ("Bash", FAILED), ("Bash", ERROR)]
    # usage counted once per message id, the last line's: input + cache creation + cache read
    assert run.tokens_in == 415_031 and run.tokens_out == 2_722 and run.tokens_total == 417_753
    assert run.turns[0].tokens_out == 313  # the id's second line (313), not its first (3)
    assert run.model == "claude-opus-4-20250514"
    assert run.kernels == []  # toolchain checks, no kernel source
    assert [n for _, n in run.notes[:1]] == ["summary: VSLA Library: Memory Fix & Autograd Completion"]
    assert run.problem.prompt.startswith("Verify Cuda is working on this laptop")
    assert len(run.events) == 64
    # message msg_019qq... spans lines 12-14 (three Bash tool_use blocks, one turn); results at 15-17
    c = next(c for c in run.calls if c.name == "Bash")
    assert c.args["command"] == "nvidia-smi" and c.line == 12 and c.result.line == 15
    t = run.turns[c.turn]
    assert [x.line for x in t.calls] == [12, 13, 14] and [x.result.line for x in t.calls] == [15, 16, 17]


# ---- Codex CLI ----------------------------------------------------------------------------------
def test_codex_counts_and_cumulative_tokens():
    run = load(CODEX)
    assert run.format == "codex-cli"
    assert names(run) == {"shell_command": 12, "apply_patch": 1}
    assert all(c.result is not None for c in run.calls)  # 13 call_ids, 13 outputs
    # 15 sampling rounds (runs of reasoning / assistant message / calls between outputs and user messages)
    assert len(run.turns) == 15
    # exit codes 0 0 1 0 0 0 0 1 0 0, apply_patch ok, 127 (pytest not found), 0
    st = statuses(run)
    assert [i for i, s in enumerate(st) if s != OK] == [2, 7, 11]
    # token_count totals are cumulative: the differences sum to the last total
    assert run.tokens_in == 160_658 and run.tokens_out == 4_605 and run.tokens_total == 165_263
    assert run.turns[0].tokens_in == 3_650 and run.turns[0].tokens_out == 536
    assert run.model == "gpt-5.1-codex-max"
    assert run.problem.prompt == "shell"  # the first user_message the user typed
    patch = next(c for c in run.calls if c.name == "apply_patch")
    assert patch.args["input"].startswith("*** Begin Patch\n*** Update File: ai_clean/analyzers/advanced.py")
    assert patch.result.summary.startswith("Success. Updated the following files:")
    assert run.kernels == []  # a docstring in a Python file is not a kernel
    assert run.turns[0].reasoning == "**Considering how to respond to a shell request**"


# ---- Inspect AI -----------------------------------------------------------------------------------
def test_inspect_counts_scores_tokens():
    run = load(INSPECT)
    assert run.format == "inspect"
    # 2 samples x (assistant with a take_sum call, assistant answer)
    assert len(run.turns) == 4
    assert names(run) == {"take_sum": 2}
    assert [c.result.summary for c in run.calls] == ["102", "104"]  # paired by tool_call_id
    assert [c.args for c in run.calls] == [{"x": 71, "y": 31}, {"x": 91, "y": 13}]
    # per call: 416+93, 521+13 (sample 1), 416+93, 521+18 (sample 2) = stats.model_usage 2,091
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(416, 93), (521, 13), (416, 93), (521, 18)]
    assert run.tokens_total == 2_091
    assert run.model == "anthropic/claude-3-5-sonnet-latest"
    assert run.problem.name == "arithmetic_with_tool"
    assert run.scores["match"] == 1.0 and run.scores["match.accuracy"] == 1.0
    assert run.outcome == "passed" and run.final_score == 1.0
    assert [t.text for t in run.turns][1] == "71 + 31 = 102"
    # model event 1 of sample 1: 11:00:30.704(406) -> 11:00:32.905(188), in whole milliseconds
    assert run.turns[0].llm_ms == 2201


# ---- Harbor ATIF ----------------------------------------------------------------------------------
def test_harbor_counts_combined_observation_and_triton_kernel():
    raw = json.loads(HARBOR.read_bytes())
    run = load(HARBOR)
    assert run.format == "harbor-atif"
    assert len(run.turns) == 4  # agent steps 2-5
    assert names(run) == {"bash_command": 6}  # 3 + 1 + 1 + 1
    assert all(c.result is not None for c in run.calls)
    # step 2's three calls share one combined observation: it is attached to the last one
    first3 = run.calls[:3]
    assert "one combined terminal output" in first3[0].result.summary
    assert first3[2].result.summary.startswith("New Terminal Output:\n\nroot@modal:/app# ls -la")
    assert [t.tokens_in for t in run.turns] == [1941, 2930, 5876, 6264]
    assert run.tokens_in == raw["final_metrics"]["total_prompt_tokens"] == 17_011
    assert run.tokens_out == raw["final_metrics"]["total_completion_tokens"] == 1_815
    assert run.model == "openrouter/anthropic/claude-opus-4.8" and run.persona == "terminus-2"
    # the kernel: the heredoc of step 5, checked against the terminal's own echo of it ("> " lines)
    assert len(run.kernels) == 1
    k = run.kernels[0]
    echo = raw["steps"][4]["observation"]["results"][0]["content"].split("\n")
    lines = [ln[2:] if ln.startswith("> ") else "" for ln in echo if ln.startswith(">")]
    assert lines[-1] == "EOF"
    assert k.code == "\n".join(lines[:-1]) + "\n"
    assert "@triton.jit" in k.code and "class ModelNew" in k.code
    assert (k.path, k.origin, k.partial, k.line_count) == ("solution.py", "heredoc", False, 47)
    assert run.calls[-1].kernel == 1 and run.backend == "triton"
    assert run.outcome == "incomplete"  # capped at 4 turns, no verifier ran


# ---- mini-swe-agent -------------------------------------------------------------------------------
def test_mini_swe_agent_counts():
    run = load(MINI)
    assert run.format == "mini-swe-agent"
    assert len(run.turns) == 17  # info.model_stats.api_calls
    assert names(run) == {"bash": 17}  # one ```bash block per response
    assert all(c.result is not None for c in run.calls)
    assert all(c.status == OK for c in run.calls)  # 16 x <returncode>0, then the submitted diff
    assert run.tokens_in == 61_068 and run.tokens_out == 2_317
    assert run.model == "google/gemini-3-pro-preview"
    assert run.problem.name == "django__django-16255"
    assert run.terminal_state == "halt"
    assert run.terminal[0].text == "exit status Submitted; submitted a diff of 13 lines"
    assert run.kernels == []
    assert not [p for p in run.problems]


def test_no_sample_has_missing_results_or_errors():
    for p in (WAFER, CLAUDE, CODEX, INSPECT, HARBOR, MINI):
        run = load(p)
        assert MISSING not in statuses(run), p.name
        assert not [x for x in run.problems if x.severity == "error"], (p.name, run.problems)
