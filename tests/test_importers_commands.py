"""The rest of ktui on imported runs: show, replay (with search), diff, compare across formats,
runs on a directory mixing every format, repro (HIP refused, --reference), validate."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from apphelp import collect_errors, wait_ready
from click.testing import CliRunner
from conftest import SEED_TRACE, SHARED

from ktui.cli import main
from ktui.trace import load
from ktui.trace.index import SweepIndex

F = SHARED / "formats"
SAMPLES = sorted(p for p in F.glob("*/*") if p.suffix in (".json", ".jsonl"))
WAFER = F / "chat-messages" / "wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl"
HARBOR = F / "swe-agent" / "harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json"
CLAUDE = F / "claude-code" / "vsla_cuda_toolchain_check_bash_todowrite.jsonl"
pytestmark = pytest.mark.skipif(not F.is_dir(), reason="../shared/formats not present")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:40])
def test_show_every_sample(path):
    res = invoke("show", path)
    assert res.exit_code == 0, res.output
    assert "not a trace" not in res.output  # (no exception escapes: catch_exceptions=False)
    run = load(path)
    assert f"turn {len(run.turns) - 1}" in res.output
    for c in run.calls[:5]:
        assert c.name in res.output
    js = json.loads(invoke("show", path, "--json").output)
    assert js["format"] == run.format and js["counts"]["turns"] == len(run.turns)
    assert js["counts"]["tool_calls"] == len(run.calls)


def test_show_wafer_hip_kernel_with_the_recorded_pass():
    out = invoke("show", WAFER).output
    assert "L1 P9 9_Tall_skinny_matrix_multiplication_" in out
    assert "Result: PASS" in out and "0.23x" in out
    assert "hip/hip_runtime.h" in out and "class ModelNew" in out


def test_show_harbor_triton_kernel():
    out = invoke("show", HARBOR).output
    assert "@triton.jit" in out and "final kernel v1 (47 lines" in out
    run = load(HARBOR)
    assert len(run.kernels) == 1 and "@triton.jit" in run.kernels[0].code


def test_validate_imported():
    res = invoke("validate", *SAMPLES)
    assert "Traceback" not in res.output
    for p in SAMPLES:
        assert p.name in res.output


def test_diff_of_recovered_versions():
    res = invoke("diff", WAFER, "v2", "v3")
    assert res.exit_code == 0, res.output
    assert res.output.startswith("--- v2 (1abaf69ffc, turn 2)\n+++ v3 (9ad37002f2, turn 4)\n")
    assert "+    dim3 grid((N + 15) / 16, (M + 15) / 16);" in res.output


def test_compare_two_formats():
    res = invoke("compare", WAFER, SEED_TRACE, "--print")
    assert res.exit_code == 0, res.output
    assert "accounts/fireworks/models/glm-4p7" in res.output and "grok-4.3" in res.output
    assert "first correct kernel" in res.output and "turn 3" in res.output
    res = invoke("compare", CLAUDE, HARBOR, "--print")
    assert res.exit_code == 0 and "Traceback" not in res.output


def test_runs_on_a_directory_mixing_all_formats(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "sweep"
    (d / "ens").mkdir(parents=True)
    for p in SAMPLES:
        shutil.copyfile(p, d / p.name)
    shutil.copyfile(SEED_TRACE, d / "ens" / SEED_TRACE.name)
    (d / "config.json").write_text('{"atol": 0.02, "rtol": 0.02}')  # not a trace: not a run
    idx = SweepIndex(d, use_cache=False, jobs=0)
    runs = list(idx.summaries())
    by = {r.path: r for r in runs}
    assert len(runs) == len(SAMPLES) + 1  # each trace once
    assert {r.format for r in runs} == {"ensemble", "chat-messages", "claude-code", "codex-cli", "inspect",
                                        "harbor-atif", "mini-swe-agent"}
    assert by[WAFER.name].model == "accounts/fireworks/models/glm-4p7"
    # its final kernel v4 was never evaluated: v2's 0.23x is not the run's speedup
    assert by[WAFER.name].problem_key == "L1/P9" and by[WAFER.name].speedup is None
    assert by[HARBOR.name].model == "openrouter/anthropic/claude-opus-4.8"
    assert all(r.model for r in runs)
    assert any("1 .json file is not a trace" in i.message for i in idx.issues)
    monkeypatch.setenv("COLUMNS", "400")  # every column (at 100 the format column is left out)
    res = invoke("runs", d, "--print", "--no-cache")
    assert res.exit_code == 0
    for fmt in ("ensemble V1", "chat-messages", "claude-code", "codex-cli", "inspect", "harbor-atif",
                "mini-swe-agent"):
        assert fmt in res.output
    rows = json.loads(invoke("runs", d, "--format", "json", "--no-cache").output)
    items = rows["runs"] if isinstance(rows, dict) else rows
    assert sorted(r["format"] for r in items) == sorted(r.format for r in runs)
    # cached: the same rows again
    idx2 = SweepIndex(d, use_cache=True, jobs=0)
    list(idx2.summaries())
    idx3 = SweepIndex(d, use_cache=True, jobs=0)
    again = list(idx3.summaries())
    assert idx3.cache_hits == len(SAMPLES) + 2 and {r.format for r in again} == {r.format for r in runs}


def test_repro_refuses_a_hip_kernel_clearly():
    res = CliRunner().invoke(main, ["repro", str(WAFER), "--version", "v2"])
    assert res.exit_code == 2
    assert "HIP" in res.output and "cannot run on an NVIDIA GPU" in res.output
    assert "Traceback" not in res.output


def test_repro_takes_the_reference_from_the_task_prompt():
    # the Harbor task text carries the reference as a fenced block under '## The reference':
    # no --reference needed (issue 21); a Triton kernel on the CPU is then "not tested here"
    res = CliRunner().invoke(main, ["repro", str(HARBOR), "--device", "cpu"])
    assert "--reference" not in res.output and "has no reference" not in res.output
    assert "reference: the task prompt: a fenced block under 'The reference'" in res.output
    assert "needs a CUDA GPU" in " ".join(res.output.split())  # wrapped at 100 columns


def test_forced_format_option(monkeypatch):
    monkeypatch.setenv("KTUI_FORMAT", "")  # the option sets it for the process: restored after the test
    res = invoke("--format", "codex-cli", "show", CLAUDE)
    assert "Traceback" not in res.output
    res = CliRunner().invoke(main, ["--format", "bogus", "show", str(CLAUDE)])
    assert res.exit_code == 2 and "unknown format" in res.output


def test_replay_every_sample_and_search():
    from ktui.tui.app import replay_app
    from ktui.tui.screens.replay import ReplayScreen

    async def go(path, needle):
        app = replay_app(path)
        errors = collect_errors(app)
        async with app.run_test(size=(160, 48)) as pilot:
            s = await wait_ready(app, pilot, tries=750)
            assert isinstance(s, ReplayScreen) and s.ready
            assert len(s.run.turns) == len(load(path).turns) and s.run.format == load(path).format
            if needle:
                await pilot.press("slash", *needle, "enter")
                for _ in range(750):
                    await pilot.pause(0.02)
                    if s._regex is not None and s._search_turns:
                        break
                assert s._search_turns, needle
            await pilot.press("down", "down", "n", "tab")
            await pilot.pause()
        assert errors == []

    for p in SAMPLES:
        asyncio.run(go(p, "ModelNew" if p in (WAFER, HARBOR) else None))


def test_problems_match_by_level_id_or_reference_hash():
    from ktui.trace.aggregate import problem_warning

    a, b = load(WAFER), load(WAFER)
    assert problem_warning([a, b]) is None  # L1/P9 both
    b.problem.level = b.problem.problem_id = None
    b.problem.name = "tall skinny matmul (another harness's name)"
    b.problem.reference_source = a.problem.reference_source.rstrip() + "\n\n"  # same source, other edges
    assert problem_warning([a, b]) is None  # the same reference source
    b.problem.reference_source += "# changed\n"
    assert "not on the same problem" in problem_warning([a, b])
