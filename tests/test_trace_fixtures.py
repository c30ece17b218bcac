"""Every real fixture loads; counts were made by hand from the files (see comments)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, SEED_TRACE, fixture_path, needs_shared

from ktui.trace import load

# file: (variant, events, turns, agent tool calls, seed calls, kernel versions, terminal kinds,
#        terminal_state, outcome)
EXPECTED = {
    # fetch_problem (l3-4) and submit_kernel (l5-7): no costs, so a call after a result is a
    # new turn; "..." is the one kernel; grader note with submission_passed=1.
    "ensemble/v0_popcorn_mock_single_problem.jsonl":
        ("V0", 8, 2, 2, 0, 1, ["grader"], "grader", "passed"),
    # rep1: msg15+call17+res20 | rep2: msg16+call18+res24 | rep1: msg21+call22+res26 |
    # rep2: msg25 | rep1: msg27+call28+res30 | rep1: msg32+call33+res34 | rep1: msg36.
    # alice/bob open_ticket calls are seeded.
    "ensemble/v1_ensemble_site_sample_non_kernel.jsonl":
        ("V1", 38, 7, 5, 2, 0, ["halt", "grader"], "grader", "incomplete"),
    # prompt, spawn, kickoff, then "backend error (gpt-5.5): ... 404": no turn at all.
    "ktbench/v1_backend_error_swiglu.jsonl":
        ("V1", 6, 0, 0, 0, 0, ["backend_error"], "backend_error", "incomplete"),
    # costs at l5/9/13 start 3 turns: get_gpu_specs, compile (v1), compile (v2, dangling).
    "ktbench/v1_softmax_a100_to_h100.jsonl":
        ("V1", 17, 3, 3, 0, 2, ["halt", "grader", "dangling_call"], "dangling_call", "incomplete"),
    # two batched calls (l3,l4) then results (l5,l6) = turn 0; then call/result pairs l7-8,
    # l9-10, l11-12, l13-14, l15-16; assistant_message l17 = final turn; 6 distinct codes in
    # the calls + the final answer's fenced code.
    "ktbench/v2_eval_chzr6_marker_kernel.jsonl":
        ("V2", 18, 7, 7, 0, 7, ["final_score"], "final_score", "incomplete"),
    # l3-6 (static_check + get_gpu_specs, interleaved results), l7-8, l9-10, l11-12, l13-14,
    # message l15 (final answer): 6 turns; codes: l3, l7, l9, l11 (=l13), final answer.
    "ktbench/v3_gpt55_bf16_gemm_interleaved.jsonl":
        ("V3", 16, 6, 6, 0, 5, ["score"], "score", "incomplete"),
}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_fixture_counts(rel):
    run = load(fixture_path(rel))
    variant, events, turns, calls, seeds, kernels, terminal, state, outcome = EXPECTED[rel]
    assert run.problems == []
    assert run.variant == variant
    assert len(run.events) == events
    assert len(run.turns) == turns
    assert len(run.agent_calls) == calls
    assert len(run.calls) - len(run.agent_calls) == seeds
    assert len(run.kernels) == kernels
    assert [t.kind for t in run.terminal] == terminal
    assert run.terminal_state == state
    assert run.outcome == outcome


@needs_shared
def test_all_fixture_files_are_covered():
    found = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.jsonl")}
    assert found == set(EXPECTED)


def test_v1_softmax_timing_and_tokens():
    run = load(fixture_path("ktbench/v1_softmax_a100_to_h100.jsonl"))
    t0, t1, t2 = run.turns
    # kickoff user_message at ...617110, first cost at ...634967
    assert t0.llm_ms == 634967 - 617110
    assert t0.tool_ms == 635415 - 634968
    assert (t0.tokens_in, t0.tokens_out) == (2151, 533)
    assert t1.llm_ms == 678509 - 635415
    assert run.tokens_total == 2151 + 533 + 2319 + 2544 + 2366 + 2714
    assert t2.calls[0].status == "missing"
    assert run.model == "gpt-5.5"
    assert run.problem.name == "Online Softmax (CUDA A100 → CUDA H100)"


def test_v2_fifo_pairing_and_flags():
    run = load(fixture_path("ktbench/v2_eval_chzr6_marker_kernel.jsonl"))
    t0 = run.turns[0]
    assert [c.name for c in t0.calls] == ["static_check", "run_correctness"]
    assert t0.calls[0].result.summary.startswith("static_check FAILED")
    assert t0.calls[1].result.summary.startswith("run_correctness FAILED")
    assert all(t.llm_ms is None and not t.timing_reliable for t in run.turns)
    codes = {f.code for f in run.flags}
    assert {"no_gpu_code", "torch_fallback", "dummy_kernel"} <= codes
    assert run.problem.problem_id == "bf16_gemm_mma_v5_a100_to_h100"
    assert run.kernels[-1].from_final_answer


def test_v3_interleaved_results_and_meta():
    run = load(fixture_path("ktbench/v3_gpt55_bf16_gemm_interleaved.jsonl"))
    t0 = run.turns[0]
    assert [c.name for c in t0.calls] == ["static_check", "get_gpu_specs"]
    assert t0.calls[1].result is not None and t0.calls[1].result.line == 6
    sc = run.turns[4].calls[0]
    assert sc.result.meta == {"passed": True, "errors": [], "warnings": []}
    assert "[meta]" not in sc.result.summary
    assert any(f.code == "harness_identical_failures" for f in run.flags)
    assert run.final_score == 0.0
    assert not run.turns[-1].calls and run.turns[-1].wall_ms == 1779691926992 - 1779691910170


def test_backend_error_key_redacted():
    run = load(fixture_path("ktbench/v1_backend_error_swiglu.jsonl"))
    notes = " ".join(t for _, t in run.notes)
    assert "5HMCkL" not in notes and "key=<redacted>" in notes
    assert run.backend == "openai"


def test_seed_trace_model():
    run = load(SEED_TRACE)
    assert run.problems == []
    assert (run.problem.level, run.problem.problem_id, run.problem.name) == (1, 27, "27_permutation_all_to_all.py")
    assert run.model == "grok-4.3" and run.max_turns == 12 and len(run.turns) == 9
    assert len(run.agent_calls) == 9
    assert run.tokens_total == 34544
    assert round(run.wall_ms / 1000, 1) == 1146.3
    assert run.outcome == "passed"
    rc = [(c.turn, c.status, c.result.error_text) for c in run.agent_calls if c.name == "run_correctness"]
    assert rc[0] == (2, "failed", "Expected a 'cuda' device type for generator but found 'cpu'")
    assert rc[1] == (4, "failed", "expected scalar type Int but found Long")
    assert rc[2][:2] == (6, "ok")
    assert [(k.label, k.turns) for k in run.kernels] == [("v1", [1]), ("v2", [2]), ("v3", [3, 4]),
                                                         ("v4", [5, 6, 7, 8])]
    m = run.metrics
    assert m.runtime_us == pytest.approx(31.2) and m.ref_runtime_us == pytest.approx(38.4)
    assert m.speedup == pytest.approx(1.2308)
    assert m.get("launches.num_kernels").value == 5 and m.get("launches.ref_num_kernels").value == 8
    codes = [f.code for f in run.flags]
    assert codes.count("unit_ms_as_us") == 2
    assert "median_missing" in codes and codes.count("pct_over_100") == 2
    assert [t.index for t in run.turns if t.is_final] == [8]
    t0 = run.turns[0]
    assert (t0.wall_ms, t0.llm_ms, t0.tool_ms) == (76103, 2712, 73391)


def test_v2_kernel_diff_of_seed():
    from ktui.trace.diffing import diff_stats

    run = load(SEED_TRACE)
    v1, v2, v3, v4 = run.kernels
    assert diff_stats(v1.code, v2.code) == (1, 1)
    assert diff_stats(v3.code, v4.code) == (3, 3)
