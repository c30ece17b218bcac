"""Codex CLI 0.14x rollouts ("code mode"): the ``exec`` tool runs a JavaScript cell, its output is a
list of content items headed "Script completed|failed|running with cell ID N", and a round's
``token_count`` is written after the round's call outputs.

Shapes from five real rollouts of Codex 0.145.0 / 0.146.0 (seokhyeonhong/motion-jepa, cea893f and
582d2f1, ``.codex/sessions/2026/0{7,8}/``; no licence found, so not copied: the structural file
below has the same line shapes, its values made up). On them ktui showed every code-mode output as
a Python list repr, took an ``exec_command`` result's ``exit_code: 1`` for success, gave each
round the token counts of the round before and 0.0 s of model time to about half of the rounds
(see benchmarks/results/real_traces.md, "2026-12-06 (helper traces35)").
"""

from __future__ import annotations

from pathlib import Path

from ktui.trace.importers import load
from ktui.trace.importers.codex_cli import _output
from ktui.trace.model import FAILED, OK

ST = Path(__file__).parent / "fixtures" / "formats" / "structural"
CODE_MODE = ST / "codex_0.146_code_mode_exec_cells_token_count_after_outputs.jsonl"


def test_code_mode_outputs_read_as_text_with_the_status_the_cell_reports():
    run = load(str(CODE_MODE))
    assert run.format == "codex-cli" and not run.problems
    calls = [(c.name, c.status) for c in run.calls]
    assert calls == [
        ("exec", FAILED),  # exec_command result exit_code 1 (the sandbox refused)
        ("exec", OK),  # exit_code 0
        ("apply_patch", OK),
        ("exec", OK),  # the cell goes on in the background ("running with cell ID 9")
        ("wait", FAILED),  # the cell's two results: 0, then 2
        ("exec", FAILED),  # "Script failed": a script error
        ("exec", OK),  # the cell printed its own text: nothing says it failed
    ]
    for c in run.calls:
        s = c.result.summary
        assert not s.startswith("[{"), s  # never the Python repr of the items
    first = run.calls[0].result
    assert first.summary.startswith("Script completed\nWall time 0.2 seconds\nOutput:\n{")
    assert first.effect == {"exit_code": 1}
    assert run.calls[4].result.effect == {"exit_code": 2}
    assert "[image]" in run.calls[6].result.summary
    assert [k.label for k in run.kernels] == ["v1"] and not run.kernels[0].partial


def test_token_count_after_the_outputs_is_that_rounds_and_model_time_ends_at_its_last_item():
    run = load(str(CODE_MODE))
    # each round's own last_token_usage (not the round before's)
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [
        (15000, 120), (15500, 140), (16000, 400), (16500, 60), (17000, 50), (17200, 30), (17400, 40), (17500, 35)]
    assert (run.tokens_in, run.tokens_out) == (132100, 875)  # the file's last total_token_usage
    # from the round's input (the prompt, the previous round's completion) to its last model
    # item; the tools' time (the approval wait and the run of round 1 included) is not model time
    assert [t.llm_ms for t in run.turns] == [3970, 2795, 8996, 2690, 995, 2996, 2945, 2900]
    assert all(t.llm_ms and t.llm_ms > 0 for t in run.turns)
    assert run.turns[1].tool_ms == 5000


def test_output_items_and_script_headers():
    items = [{"type": "input_text", "text": "Script completed\nWall time 1.0 seconds\nOutput:\n"},
             {"type": "input_text", "text": '{"chunk_id":"a","wall_time_seconds":0.1,"exit_code":0,"output":"ok\\n"}'}]
    text, status, code = _output(items)
    assert (status, code) == (OK, 0) and text.endswith('"output":"ok\\n"}')
    # a cell whose output is its own JSON (no exec_command result): nothing to read a code from
    own = [{"type": "input_text", "text": "Script completed\nWall time 1.0 seconds\nOutput:\n"},
           {"type": "input_text", "text": '{"exit_code": 3}'}]
    assert _output(own)[1:] == (None, None)
    assert _output("Script running with cell ID 4\nWall time 11.0 seconds\nOutput:\n")[1] == OK
    assert _output([{"type": "input_text", "text": "Script failed\nWall time 0.0 seconds\nOutput:\nScript error:\nx"}])[1] \
        == FAILED
    # older shapes are read as before
    assert _output("Exit code: 1\nWall time: 0 seconds\nOutput:\nboom")[1:] == (FAILED, 1)
    assert _output('{"output":"fine","metadata":{"exit_code":0,"duration_seconds":0.1}}')[1:] == (OK, 0)
