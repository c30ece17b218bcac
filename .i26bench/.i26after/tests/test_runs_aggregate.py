"""Per-model aggregates on the sweep of test_index.make_sweep, every figure computed by hand.

The nine runs (model, outcome, speedup, tokens, wall):

    grok-4.3                 seed run       passed  1.2308   34,544   1146.300 s
    grok-4.3                 grok_fast      passed  1.6       1,000     10.000 s
    grok-4.3                 grok_fail      failed  (0.5)     2,000     20.000 s
    test-agent-b             test trace     passed  1.0817   10,965    481.906 s
    claude-sonnet-4-5        V0 mock        passed  2.4           —      0.060 s
    gpt-5.5                  softmax        incomplete  —    12,627    159.046 s
    gpt-5.5                  swiglu         incomplete  —         —      0.272 s
    openai/gpt-5.5-priority  V2 chzr6       incomplete  —         —   (synthetic: none)
    openai/gpt-5.5-priority  V3 bf16        incomplete  —         —     96.833 s
"""

from __future__ import annotations

import math

import pytest
from test_index import make_sweep, mini_trace, needs_fixtures

from ktui.trace.aggregate import ALL_MODELS, FAST_P, aggregate, geomean
from ktui.trace.index import RunSummary, scan


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def aggs(tmp_path):
    runs, _ = scan(make_sweep(tmp_path), use_cache=False)
    assert len(runs) == 9
    return {a.model: a for a in aggregate(runs)}


@needs_fixtures
def test_models_and_order(aggs):
    assert list(aggs) == ["claude-sonnet-4-5", "gpt-5.5", "grok-4.3", "openai/gpt-5.5-priority", "test-agent-b",
                          ALL_MODELS]


@needs_fixtures
def test_grok(aggs):
    g = aggs["grok-4.3"]
    assert (g.runs, g.passed, g.failed, g.incomplete) == (3, 2, 1, 0)
    assert g.pass_rate == pytest.approx(2 / 3)
    # correct and speedup > p, over all 3 runs: 1.2308 and 1.6 pass; the failed 0.5 never counts
    assert [g.fast_p(p) for p in FAST_P] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 0.0])
    assert g.geomean_speedup == pytest.approx(math.sqrt(1.2308 * 1.6))
    assert g.geomean_speedup == pytest.approx(1.40331, abs=1e-5)  # sqrt(1.96928)
    assert g.tokens_per_run == pytest.approx((34544 + 1000 + 2000) / 3)
    assert g.wall_ms_per_run == pytest.approx((1_146_300 + 10_000 + 20_000) / 3)


@needs_fixtures
def test_single_run_models(aggs):
    t = aggs["test-agent-b"]
    assert (t.runs, t.passed) == (1, 1)
    assert [t.fast_p(p) for p in FAST_P] == [1.0, 1.0, 0.0, 0.0]  # 1.0817
    assert t.geomean_speedup == pytest.approx(1.0817)
    assert (t.tokens_per_run, t.wall_ms_per_run) == (10965, 481_906)
    c = aggs["claude-sonnet-4-5"]
    # passed at 2.4x, but its final kernel has no GPU code (a torch wrapper): in no fast_p
    assert c.pass_rate == 1.0 and c.no_gpu == 1
    assert [c.fast_p(p) for p in FAST_P] == [0.0, 0.0, 0.0, 0.0]
    assert c.tokens_per_run is None  # V0 records no token costs
    assert c.wall_ms_per_run == 60


@needs_fixtures
def test_models_without_a_pass(aggs):
    g = aggs["gpt-5.5"]
    assert (g.runs, g.passed, g.incomplete, g.pass_rate) == (2, 0, 2, 0.0)
    assert [g.fast_p(p) for p in FAST_P] == [0.0] * 4
    assert g.geomean_speedup is None
    assert g.tokens_per_run == 12627  # only softmax records tokens
    assert g.wall_ms_per_run == pytest.approx((159_046 + 272) / 2)
    o = aggs["openai/gpt-5.5-priority"]
    assert (o.runs, o.passed) == (2, 0)
    assert o.wall_ms_per_run == 96_833  # the V2 run's timestamps are synthetic: left out


@needs_fixtures
def test_all_runs(aggs):
    a = aggs[ALL_MODELS]
    assert (a.runs, a.passed, a.failed, a.incomplete) == (9, 4, 1, 4)
    # the claude run's 2.4x is a torch wrapper's (no GPU code): in no fast_p, not in the geomean
    assert [a.fast_p(p) for p in FAST_P] == pytest.approx([3 / 9, 3 / 9, 1 / 9, 0])
    assert a.geomean_speedup == pytest.approx((1.2308 * 1.6 * 1.0817) ** (1 / 3))
    assert a.tokens_per_run == pytest.approx((34544 + 1000 + 2000 + 10965 + 12627) / 5)


def test_fast_p_is_over_all_runs_and_strict():
    runs = [RunSummary(path=str(i), model="m", outcome=o, speedup=sp)
            for i, (o, sp) in enumerate([("passed", 1.0), ("passed", 2.0), ("passed", None),
                                         ("failed", 3.0), ("incomplete", None)])]
    (m, _total) = aggregate(runs)
    assert m.runs == 5
    # speedup 1.0 is not > 1; 2.0 is not > 2; a correct run with no speedup counts in no fast_p
    assert [m.fast_p(p) for p in FAST_P] == [2 / 5, 1 / 5, 1 / 5, 0.0]
    assert m.pass_rate == 3 / 5
    assert m.geomean_speedup == pytest.approx(math.sqrt(2.0))


def test_unknown_model_and_empty():
    assert aggregate([]) == []
    (u, _) = aggregate([RunSummary(path="x")])
    assert u.model == "(unknown)" and u.runs == 1 and u.pass_rate == 0.0
    assert geomean([]) is None and geomean([0.0, -1.0]) is None


def test_mini_trace_round_trip(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(mini_trace("m", passed=True, speedup=3.0, tokens_in=5, tokens_out=6, wall_ms=500))
    runs, _ = scan(p, use_cache=False)
    assert (runs[0].outcome, runs[0].speedup, runs[0].tokens, runs[0].wall_ms) == ("passed", 3.0, 11, 500)


def test_a_run_with_no_kernel_is_not_counted_as_a_model():
    """A coding session, a SWE-bench task or an Inspect arithmetic eval in a sweep folder is listed
    but is not a model's kernel result (the ensemble site sample was a model row at 0 %, an Inspect
    eval a model at 100 %)."""
    from conftest import SHARED

    from ktui.trace.aggregate import is_kernel_run, model_aggregates
    from ktui.trace.index import summarize

    want = {
        "fixtures/ensemble/v1_ensemble_site_sample_non_kernel.jsonl": False,
        "fixtures/ensemble/v0_popcorn_mock_single_problem.jsonl": True,
        "fixtures/ktbench/v1_backend_error_swiglu.jsonl": True,  # the backend failed before any code
        "formats/inspect/vitals_arithmetic_with_tool_claude35_v0.3.77.json": False,
        "formats/swe-agent/mini_swe_agent_v1.15_gemini3pro_django16255.traj.json": False,
        "formats/claude-code/vsla_cuda_toolchain_check_bash_todowrite.jsonl": False,
        "formats/swe-agent/harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json": True,
        "formats/chat-messages/wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl": True,
    }
    have = {rel: SHARED / rel for rel in want if (SHARED / rel).is_file()}
    if len(have) < 4:
        pytest.skip("../shared is not here")
    runs = [summarize(str(p)) for p in have.values()]
    assert {rel: is_kernel_run(s) for rel, s in zip(have, runs, strict=True)} == {k: want[k] for k in have}
    aggs, other = model_aggregates(runs)
    assert other == sum(not want[k] for k in have)
    models = {a.model for a in aggs}
    assert "rep1-model" not in models and not any("claude-3-5" in m for m in models)
