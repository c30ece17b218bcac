"""KernelBench's Triton generation sweep read as a sweep (issue 21).

The fixture (tests/fixtures/real/kernelbench_triton_runs, README there) holds real files of
github.com/ScalingIntelligence/KernelBench, branch sokserey/tritonDump @ 6842d4f (MIT): 4 of its 134
recorded-correct Triton kernels (``<run>/kernels/level<L>_problem<P>_triton.py``), their lines of
``<run>/results.jsonl`` (times in milliseconds under ``_us`` names) and their reference problems.
Before: ``ktui runs`` listed 0 runs (the kernel files' names were not sample files) and both
``results.jsonl`` as "not a trace"; ``validate`` failed them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ktui.cli import main
from ktui.trace.index import scan
from ktui.trace.reader import load
from ktui.trace.results import kernelbench
from ktui.trace.results.taskrule import KNOWN, UNKNOWN, task_rule

TR = Path(__file__).parent / "fixtures" / "real" / "kernelbench_triton_runs"
RUNS = TR / "triton_runs"
K1 = RUNS / "level1_triton" / "kernels"


def _lines(level: int) -> list[dict]:
    return [json.loads(x) for x in (RUNS / f"level{level}_triton" / "results.jsonl").read_text().splitlines()]


def test_the_triton_sweep_is_listed_with_its_recorded_outcomes():
    runs, issues = scan(RUNS, use_cache=False, jobs=0)
    got = {Path(r.path).name: r for r in runs}
    assert set(got) == {"level1_problem1_triton.py", "level1_problem12_triton.py", "level1_problem62_triton.py",
                        "level2_problem1_triton.py"}
    assert all(r.outcome == "passed" for r in runs)  # a line is written only for a correct kernel
    assert {r.model for r in runs} == {"level1_triton", "level2_triton"}  # the run folder, not "kernels"
    p1 = got["level1_problem1_triton.py"]
    assert p1.problem == "L1 P1 1_Square_matrix_multiplication_.py" and p1.problem_key == "L1/P1"
    line = next(x for x in _lines(1) if x["problem_id"] == 1)
    assert p1.speedup == pytest.approx(line["speedup"])
    assert p1.runtime_us == pytest.approx(line["runtime_triton_us"] * 1000)  # milliseconds, whatever the name
    assert p1.ref_runtime_us == pytest.approx(line["runtime_original_us"] * 1000)
    assert got["level2_problem1_triton.py"].problem.startswith("L2 P1 1_Conv2D_ReLU_BiasAdd")
    # the two results.jsonl are the harness's result files, not "not a trace"
    assert [i.message for i in issues] == ["2 result files of the harness read with their runs"]
    assert sum(r.outcome == "passed" for r in runs) == len(_lines(1)) + len(_lines(2))


def test_a_kernel_and_its_reference_are_found():
    run = load(str(K1 / "level1_problem12_triton.py"))
    assert run.format == kernelbench.FORMAT and run.backend == "triton" and run.final_kernel is not None
    assert "class Model" in run.problem.reference_source
    assert run.problem.reference_origin.startswith("KernelBench checkout:")
    r = run.results[0]
    assert r.source == "../results.jsonl [12]" and r.correct and r.compiled
    assert r.values["hardware"] == "NVIDIA H200" and "milliseconds" in r.values["units"]
    assert r.speedup == pytest.approx(25.0)


def test_validate_and_show():
    res = CliRunner().invoke(main, ["validate", str(RUNS)])
    assert res.exit_code == 0, res.output
    assert "4 files, 0 with problems" in res.output
    assert "results.jsonl" not in res.output.replace("result files among them", "")
    res = CliRunner().invoke(main, ["show", str(K1 / "level1_problem62_triton.py")])
    assert res.exit_code == 0 and "results.jsonl" in res.output and "NVIDIA H100" in res.output


def test_a_results_jsonl_of_another_shape_is_not_a_result_file(tmp_path):
    d = tmp_path / "run" / "kernels"
    d.mkdir(parents=True)
    shutil.copy(K1 / "level1_problem1_triton.py", d)
    for body in ('{"problem_id": true, "speedup": 1}\n', '{"problem_id": 1, "speedup": 1}\nnot json\n',
                 '{"role": "user", "content": "hi"}\n', "", '{"problem_id": 1, "speedup": "\\u001b]52;c;AAAA\\u0007"}\n'):
        (tmp_path / "run" / "results.jsonl").write_text(body)
        kernelbench._CACHE.clear()
        run = load(str(d / "level1_problem1_triton.py"))
        assert run.outcome in ("passed", "incomplete")
        if run.outcome == "passed":  # the last body: a line of the right shape, a hostile speedup
            assert run.metrics.speedup is None
    # a line for another level is not this kernel's
    (tmp_path / "run" / "results.jsonl").write_text('{"level": 2, "problem_id": 1, "speedup": 2.0}\n')
    kernelbench._CACHE.clear()
    assert load(str(d / "level1_problem1_triton.py")).outcome == "incomplete"


@pytest.mark.parametrize("source,status,tol", [
    # KernelBench before 2c3dbda (2025-11-04): atol = rtol = 1e-2 for every dtype
    ("def run_and_check_correctness():\n    if not torch.allclose(\n        output, output_new, atol=1e-02, "
     "rtol=1e-02\n    ):\n        pass\n", KNOWN, (0.01, 0.01)),
    # since: by precision
    ("def get_tolerance_for_precision(precision):\n    return 1e-4\n", KNOWN, None),
    # the branch's own src/eval.py (rewritten for PTX work) says neither: unknown, the looser used
    ("def generate_ptx_from_triton(kernel_code_str, output_prefix):\n    pass\n", UNKNOWN, (0.01, 0.01)),
])
def test_kernelbenchs_tolerance_is_read_from_its_checkout(tmp_path, source, status, tol):
    shutil.copytree(TR, tmp_path / "kb")
    (tmp_path / "kb" / "src").mkdir()
    (tmp_path / "kb" / "src" / "eval.py").write_text(source)
    kernelbench._CACHE.clear()
    r = task_rule(load(str(tmp_path / "kb" / "triton_runs" / "level1_triton" / "kernels" / "level1_problem1_triton.py")))
    assert r.status == status and r.tol == tol
    if status == UNKNOWN:
        assert "1e-2 until 2025-11" in r.why and "does not say" in r.why


def test_no_kernelbench_source_the_rule_is_unknown():
    r = task_rule(load(str(K1 / "level1_problem1_triton.py")))
    assert r.status == UNKNOWN and r.tol == (0.01, 0.01) and "no KernelBench source" in r.why
