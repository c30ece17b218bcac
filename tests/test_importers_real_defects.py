"""Defects found by reading real traces of other harnesses (issue 21). Each test uses a real file
copied under tests/fixtures/formats/real (licence allowing: see its SOURCES.md) or a minimal file
with the same structure under tests/fixtures/formats/structural (see its README), and fails on the
code before the fix."""

from __future__ import annotations

from pathlib import Path

from ktui.trace.importers import detect, load

HERE = Path(__file__).resolve().parent
ST = HERE / "fixtures" / "formats" / "structural"
REAL = HERE / "fixtures" / "formats" / "real"


def warnings(run) -> list[str]:
    return [p.message for p in run.problems]


# ---- Claude Code ---------------------------------------------------------------------------------
CC2 = ST / "claude_code_2x_failed_edits_original_file.jsonl"


def test_claude_code_failed_edits_and_writes_change_nothing_and_original_file_is_the_base():
    run = load(CC2)
    assert run.format == "claude-code"
    # the refused Edit (old text not in the file) and the refused Write are not versions; the
    # later Edit applies to toolUseResult.originalFile (the formatter's output), not to v1
    assert len(run.kernels) == 2 and not any(k.partial for k in run.kernels)
    v1, v2 = run.kernels
    assert "ModelNewRefused" not in v1.code + v2.code and "BLOCK=4096" not in v1.code + v2.code
    assert "grid = (triton.cdiv(n, 2048),)\n        relu_kernel[grid](x, y, n, BLOCK=2048)" in v2.code
    assert v2.code.startswith("import torch\nimport triton\n") and "class ModelNew" in v2.code
    assert run.final_kernel_number == 2 and run.metrics is not None and run.metrics.speedup == 1.31
    # the refused calls are still calls, with their error status
    edits = [c for c in run.calls if c.name in ("Edit", "Write")]
    assert [c.result.is_error for c in edits] == [False, True, True, False]
    assert [c.kernel for c in edits] == [1, None, None, 2]


def test_claude_code_2x_bookkeeping_lines_are_not_problems():
    run = load(CC2)
    assert run.problems == []
    assert any("queued while the agent was busy: use 2048" in n for _, n in run.notes)
    # the head of the file is queue-operation lines: still Claude Code
    assert detect(str(CC2)).name == "claude-code"


def test_claude_code_unknown_line_type_is_reported_once(tmp_path):
    raw = CC2.read_text().splitlines()
    extra = ['{"type":"brand-new-thing","sessionId":"s","value":1}'] * 3
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(raw[:5] + extra + raw[5:]) + "\n")
    run = load(p)
    msgs = warnings(run)
    assert len(msgs) == 1 and "'brand-new-thing'" in msgs[0]
    assert run.problems[0].severity == "warning" and len(run.kernels) == 2


def test_validate_passes_the_claude_code_2x_file():
    from click.testing import CliRunner

    from ktui.cli import main

    res = CliRunner().invoke(main, ["validate", str(CC2)])
    assert res.exit_code == 0, res.output
    assert "0 with problems" in res.output


# ---- Codex CLI ------------------------------------------------------------------------------------
CODEX55 = ST / "codex_0.55_rounds_flushed_with_one_timestamp.jsonl"
CODEX40 = ST / "codex_0.40_older_rollout_kind_key.jsonl"


def test_codex_rounds_written_in_one_batch_are_timed_from_their_token_counts():
    run = load(CODEX55)
    assert run.format == "codex-cli" and len(run.turns) == 3
    # token_count lines (12.0 s, 30.0 s, 41.0 s) are when each response completed; the rounds'
    # items were all written at 41.2 s
    assert [t.llm_ms for t in run.turns] == [11_790, 18_000, 11_000]
    assert all(t.wall_ms and t.wall_ms >= t.llm_ms for t in run.turns)
    total = sum(t.llm_ms for t in run.turns)
    assert 0.9 * run.wall_ms <= total <= run.wall_ms
    # one token_count per round, in order (not all three on the first round)
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(6000, 900), (7100, 100), (7400, 100)]


def test_codex_token_count_lines_do_not_move_the_previous_stamp():
    run = load(CODEX40)
    assert run.format == "codex-cli"
    # round 2's input is call_a's output (7.2 s), not the token_count written at 7.0 s after it
    assert [t.llm_ms for t in run.turns] == [6_900, 7_800, 4_000]
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(5000, 700), (6000, 60), (6500, 40)]


def test_codex_040_rollout_with_a_kind_key_is_codex_and_read():
    assert detect(str(CODEX40)).name == "codex-cli"
    run = load(CODEX40)
    assert run.problems == [] and len(run.turns) == 3 and len(run.calls) == 2
    assert run.model == "gpt-5-codex" and len(run.kernels) == 1
    assert run.metrics is not None and run.metrics.speedup == 1.52
