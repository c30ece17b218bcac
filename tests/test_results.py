"""Result sidecars, problem names and references found where real harnesses put them (issue 21).

Fixtures under tests/fixtures/real/:
- kernelbench_technoabsurdist: a real KernelBench run folder (4 samples, eval_results.json cut to
  3 entries, generation_config.yaml) and the 4 reference files of its KernelBench checkout, from
  github.com/technoabsurdist/KernelBench @ 9202a5c5786ab959fcaa3b4ce0356348bb87c86a (MIT, LICENSE beside).
- harbor_minimal: written for these tests (make.py) with the structure of
  github.com/lilian-muyaoli/kernelbench-harbor's results/jobs (no licence there: nothing copied)
  and of Harbor's own trial folders.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ktui.cli import main
from ktui.trace.index import scan
from ktui.trace.reader import load
from ktui.trace.results import attach, harbor, kernelbench, naming, reference

REAL = Path(__file__).parent / "fixtures" / "real"
KB = REAL / "kernelbench_technoabsurdist"
KB_RUN = KB / "runs" / "gemini_level1_run"
HB = REAL / "harbor_minimal"
CUT = "relu_scale__toy_model__T256__fp1"
NAME = "relu_scale · toy_model · T256 · fp16"


def _by_path(runs):
    return {r.path: r for r in runs}


# ---- Harbor --------------------------------------------------------------------------------------
def test_harbor_sweep_outcomes_come_from_the_reward_files():
    runs, issues = scan(HB, use_cache=False, jobs=0)
    got = _by_path(runs)
    assert len(runs) == 4
    a1 = got[f"results/jobs/model-a/sample1/{CUT}/trajectory.json"]
    a2 = got[f"results/jobs/model-a/sample2/{CUT}/trajectory.json"]
    b1 = got[f"results/jobs/model-b/sample1/{CUT}/trajectory.json"]
    c = next(r for p, r in got.items() if p.endswith("agent/trajectory.json"))
    assert [a1.outcome, a2.outcome, b1.outcome, c.outcome] == ["passed", "failed", "failed", "passed"]
    # correct but slower than torch.compile: not a pass, but correct
    assert a2.correct is True and a2.speedup == pytest.approx(0.8) and a2.speedup_base == "torch.compile"
    assert a1.speedups == {"torch.compile": pytest.approx(4.2), "eager": pytest.approx(9.0)}
    assert a1.result.startswith("reward.json") and "harbor" in a1.result
    assert c.result == "../result.json (harbor)"  # Harbor's own trial result, beside agent/
    # the harness's own flags, kept apart
    assert "harness_suspicious" in a1.flags and "harness_rejected" not in a1.flags
    assert "harness_rejected" in b1.flags and "harness_suspicious" not in b1.flags
    assert "matmul" in b1.result_error
    # the result files are not "json files that are not traces"
    assert not any("not traces" in i.message for i in issues)
    assert any(re.search(r"\d+ result files? of the harness", i.message) for i in issues)


def test_harbor_runs_of_one_task_share_one_problem_name():
    runs, _ = scan(HB, use_cache=False, jobs=0)
    assert {r.problem for r in runs} == {NAME}
    assert len({r.problem_key for r in runs}) == 1


def test_per_model_pass_counts_equal_the_reward_files():
    from ktui.trace.aggregate import aggregate

    runs, _ = scan(HB, use_cache=False, jobs=0)
    by_model = {a.model: (a.passed, a.runs) for a in aggregate(runs) if a.model != "all runs"}
    truth: dict[str, list[int]] = {}
    for d, _dirs, files in os.walk(HB):
        for f in files:
            p = os.path.join(d, f)
            if f == "reward.json":
                v = json.load(open(p))["reward"]
            elif f == "reward.txt":
                v = float(open(p).read())
            else:
                continue
            trace = next(Path(d).parent.rglob("trajectory.json")) if f == "reward.txt" else Path(d) / "trajectory.json"
            m = load(str(trace)).model
            t = truth.setdefault(m, [0, 0])
            t[0] += int(v > 0)
            t[1] += 1
    assert by_model == {m: tuple(v) for m, v in truth.items()}


def test_disagreement_between_trace_and_result_file_is_flagged():
    run = load(str(HB / "results/jobs/model-b/sample1" / CUT / "trajectory.json"))
    traced = run.results[0]
    assert traced.harness == "harbor" and run.outcome == "failed"
    codes = [f.code for f in run.flags]
    # the trace's own check printed "correct: True"; the verifier refused the kernel
    assert "result_disagrees" in codes
    msg = next(f.message for f in run.flags if f.code == "result_disagrees")
    assert "the trace says passed, reward.json says failed" in msg
    rows = {m.key: m.value for m in run.metrics.groups["result"]}
    assert rows["result.reward"] == 0 and rows["result.correct"] == "no"
    assert "banned op" in rows["result.error"]


def test_result_file_disagreeing_with_the_trace_raises_the_flag(tmp_path):
    trial = tmp_path / "t"
    shutil.copytree(HB / "results/jobs/model-a/sample1" / CUT, trial)
    obj = json.loads((trial / "trajectory.json").read_text())
    obj["steps"][2]["observation"]["results"][0]["content"] = "correct: False (max abs diff 3.1)"
    (trial / "trajectory.json").write_text(json.dumps(obj))
    run = load(str(trial / "trajectory.json"))
    assert run.outcome == "passed"  # the reward file wins: it is what the sweep counted
    flags = {f.code: f.message for f in run.flags}
    assert "result_disagrees" in flags and "reward.json says passed" in flags["result_disagrees"]


def test_harbor_trial_result_json_names_the_task_and_the_cut_name_is_completed():
    run = load(str(next((HB / "jobs").rglob("trajectory.json"))))
    assert run.problem.task == "relu_scale__toy_model__T256__fp16"  # result.json's task_name, not the folder
    run2 = load(str(HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"))
    assert run2.problem.task == "relu_scale__toy_model__T256__fp16"  # completed from get_inputs' dtype


def test_naming_classes():
    ref16 = "def get_inputs():\n    return [torch.randn(4, device='cuda', dtype=torch.bfloat16)]\n"
    assert naming.complete_cut("a" * 29 + "__b", ref16) == "a" * 29 + "__bf16"
    assert naming.complete_cut("a" * 29 + "__b", None) == "a" * 29 + "__b"
    assert naming.complete_cut("a" * 29 + "__x", ref16) == "a" * 29 + "__x"  # not the start of the dtype
    assert naming.complete_cut("short__f", ref16) == "short__f"  # not cut at 32: left alone
    assert naming.task_from_path("/x/jobs/moe__grok1__T16__Ab3dE9z/agent/trajectory.json") == "moe__grok1__T16"
    assert naming.task_from_path("/x/jobs/moe__grok1__mixtral/sample3/trajectory.json") == "moe__grok1__mixtral"
    assert naming.display("fam__cfg__T1__fp8") == "fam · cfg · T1 · fp8"


def test_harbor_reward_files_of_hostile_shape_never_raise(tmp_path):
    traj = HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"
    bodies = ['{"reward": "1"}', '{"reward": NaN}', '[1, 2]', '{"reward": true, "speedup_vs_compile": 1e400}',
              '{"reward": 1, "error": "\\u001b[31mred\\u001b[0m", "speedup_vs_\\u202eeager": 2}', "x" * 100,
              '{"reward": 0.5, "suspicious": "yes"}']
    for i, body in enumerate(bodies):
        d = tmp_path / f"t{i}"
        d.mkdir()
        shutil.copy(traj, d / "trajectory.json")
        (d / "reward.json").write_text(body)
        run = load(str(d / "trajectory.json"))
        assert run.outcome in ("passed", "failed", "incomplete")
    big = tmp_path / "big"
    big.mkdir()
    shutil.copy(traj, big / "trajectory.json")
    (big / "reward.json").write_bytes(b'{"reward": 1, "pad": "' + b"x" * (5 << 20) + b'"}')
    assert load(str(big / "trajectory.json")).results == []  # too big to be a result file: ignored


def test_a_folder_of_many_runs_is_not_a_trial_folder(tmp_path):
    traj = HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"
    for i in range(70):
        shutil.copy(traj, tmp_path / f"t{i}.json")
    (tmp_path / "reward.json").write_text('{"reward": 1}')
    assert harbor.find(load(str(tmp_path / "t0.json"))) is None


def test_a_folder_of_many_runs_is_not_listed_whole_for_each_run(tmp_path, monkeypatch):
    """Looking for a trial's result files reads at most one entry past the limit of a trial folder:
    a flat folder of N runs is not listed N times over (that grew with the square of N)."""
    import os

    traj = HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"
    shutil.copy(traj, tmp_path / "t000.json")
    for i in range(1, 300):
        (tmp_path / f"t{i:03d}.json").write_bytes(b"{}")
    read: list[int] = []
    real_scandir, real_listdir = os.scandir, os.listdir

    class Counted:
        def __init__(self, path):
            self.it = real_scandir(path)
            read.append(0)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.it.close()

        def __iter__(self):
            for e in self.it:
                read[-1] += 1
                yield e

    def listed(path="."):
        names = real_listdir(path)
        read.append(len(names))
        return names

    monkeypatch.setattr(harbor.os, "scandir", Counted)
    monkeypatch.setattr(harbor.os, "listdir", listed)
    assert harbor._candidates(str(tmp_path / "t000.json")) == []
    assert read and max(read) <= harbor._MAX_ENTRIES + 1


# ---- the reference in the prompt, and --tasks ------------------------------------------------------
def test_reference_found_in_the_prompt_is_the_task_not_the_example():
    run = load(str(HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"))
    src = run.problem.reference_source
    assert "SCALE = 2.0" in src and "a + b" not in src
    assert "under 'The reference'" in run.problem.reference_origin


def test_reference_in_a_kernelbench_style_prompt_without_headings():
    text = ("You write custom CUDA kernels.\nHere's an example to show you the syntax:\n```python\n"
            "import torch\nclass Model(nn.Module):\n    def forward(self, a, b):\n        return a + b\n\n"
            "def get_inputs():\n    return [torch.randn(1), torch.randn(1)]\n```\nThe example new arch:\n"
            "```python\nclass ModelNew(nn.Module):\n    pass\n```\n"
            "You are given the following architecture:\n```\nimport torch\nclass Model(nn.Module):\n"
            "    def forward(self, x):\n        return x * 3\n\ndef get_inputs():\n    return [torch.randn(8)]\n"
            "def get_init_inputs():\n    return []\n```\nOptimize it.")
    src, where = reference.in_text(text)
    assert "x * 3" in src and "given the following architecture" in where


def test_no_reference_block_gives_none():
    assert reference.in_text("```python\nclass ModelNew(nn.Module):\n    pass\n```") is None
    assert reference.in_text("no code here") is None


def test_tasks_dir_gives_the_matching_task_reference(tmp_path):
    trial = tmp_path / CUT
    shutil.copytree(HB / "results/jobs/model-a/sample1" / CUT, trial)
    obj = json.loads((trial / "trajectory.json").read_text())
    obj["steps"][0]["message"] = "Write ModelNew for the reference in /app/reference.py."  # no block
    (trial / "trajectory.json").write_text(json.dumps(obj))
    run = load(str(trial / "trajectory.json"))
    assert run.problem.reference_source is None
    src, origin = reference.from_tasks(run, str(HB / "tasks"))
    assert "float16" in src and "bfloat16" not in src
    assert "relu_scale__toy_model__T256__fp" in origin and origin.startswith("--tasks")


def test_repro_names_where_the_reference_came_from():
    from ktui.repro.api import resolve_reference

    run = load(str(HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"))
    src, origin = resolve_reference(run, None, str(HB / "tasks"))
    assert "the task prompt" in origin  # the prompt's own comes before --tasks


# ---- KernelBench run folders ---------------------------------------------------------------------
def test_kernelbench_run_folder_is_a_sweep():
    runs, issues = scan(KB / "runs", use_cache=False, jobs=0)
    got = {Path(r.path).name: r for r in runs}
    assert set(got) == {f"level_1_problem_{p}_sample_0_kernel.py" for p in (1, 11, 13, 57)}
    assert {n: r.outcome for n, r in got.items()} == {
        "level_1_problem_1_sample_0_kernel.py": "passed",
        "level_1_problem_11_sample_0_kernel.py": "failed",
        "level_1_problem_13_sample_0_kernel.py": "failed",
        "level_1_problem_57_sample_0_kernel.py": "incomplete",  # no entry in eval_results.json
    }
    assert {r.model for r in runs} == {"gemini-2.5-pro"}  # generation_config.yaml
    p1 = got["level_1_problem_1_sample_0_kernel.py"]
    assert p1.problem == "L1 P1 1_Square_matrix_multiplication_.py" and p1.problem_key == "L1/P1"
    assert p1.runtime_us == pytest.approx(26.3 * 1000)  # KernelBench's milliseconds
    assert "invalid configuration argument" in got["level_1_problem_11_sample_0_kernel.py"].result_error
    assert "Error building extension" in got["level_1_problem_13_sample_0_kernel.py"].result_error
    assert not got["level_1_problem_13_sample_0_kernel.py"].compiled
    assert not any("not traces" in i.message for i in issues)


def test_kernelbench_pass_count_equals_eval_results():
    runs, _ = scan(KB / "runs", use_cache=False, jobs=0)
    obj = json.loads((KB_RUN / "eval_results.json").read_text())
    assert sum(r.outcome == "passed" for r in runs) == sum(bool(v["correctness"]) for v in obj.values())


def test_kernelbench_sample_has_its_reference_from_the_checkout():
    run = load(str(KB_RUN / "level_1_problem_1_sample_0_kernel.py"))
    assert run.format == kernelbench.FORMAT and len(run.kernels) == 1 and run.final_kernel.number == 1
    assert "class Model" in run.problem.reference_source
    assert run.problem.reference_origin.startswith("KernelBench checkout:")
    assert run.backend == "cuda"


def test_kernelbench_two_runs_with_one_kernel_are_two_runs(tmp_path):
    for name in ("run_a", "run_b"):
        shutil.copytree(KB_RUN, tmp_path / "runs" / name)
    runs, _ = scan(tmp_path / "runs", use_cache=False, jobs=0)
    assert len(runs) == 8


def test_kernelbench_detailed_results_layout(tmp_path):
    d = tmp_path / "runs" / "opus_level1_x"
    d.mkdir(parents=True)
    shutil.copy(KB_RUN / "level_1_problem_1_sample_0_kernel.py", d / "problem_1_kernel.py")
    shutil.copy(KB_RUN / "level_1_problem_11_sample_0_kernel.py", d / "problem_11_kernel.py")
    (d / "checkpoint.json").write_text(json.dumps({"results": [{"problem_id": 1, "success": True}]}))
    (d / "detailed_results.json").write_text(json.dumps({
        "run_info": {"level": 1, "model": "claude-x"},
        "results": [{"problem_id": 1, "success": True, "eval_result": {"compiled": True, "correctness": True,
                                                                       "runtime": 2.0}},
                    {"problem_id": 11, "success": False}]}))
    shutil.copytree(KB / "KernelBench", tmp_path / "KernelBench")
    runs, _ = scan(tmp_path / "runs", use_cache=False, jobs=0)
    got = {Path(r.path).name: r for r in runs}
    assert got["problem_1_kernel.py"].outcome == "passed" and got["problem_1_kernel.py"].model == "claude-x"
    assert got["problem_11_kernel.py"].outcome == "failed"
    assert got["problem_1_kernel.py"].problem.startswith("L1 P1 ")


def test_kernelbench_hostile_results_never_raise(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    shutil.copy(KB_RUN / "level_1_problem_1_sample_0_kernel.py", d)
    for body in ('{"1": {"compiled": "yes", "correctness": null, "runtime": "fast"}}', '{"1": [1, 2]}', "[]",
                 '{"1": {"correctness": true, "metadata": {"runtime_error": "\\u001b]52;c;AAAA\\u0007"}}}'):
        (d / "eval_results.json").write_text(body)
        kernelbench._CACHE.clear()
        run = load(str(d / "level_1_problem_1_sample_0_kernel.py"))
        assert run.outcome in ("passed", "failed", "incomplete")


def test_commands_on_a_kernelbench_run_folder(tmp_path):
    r = CliRunner()
    res = r.invoke(main, ["runs", str(KB / "runs"), "--format", "json", "--no-cache"])
    assert res.exit_code == 0
    rows = json.loads(res.output)["runs"]
    assert {x["model"] for x in rows} == {"gemini-2.5-pro"} and any(x["problem"].startswith("L1 P11 ") for x in rows)
    out = tmp_path / "r.html"
    res = r.invoke(main, ["report", str(KB / "runs"), "-o", str(out), "--no-cache"])
    assert res.exit_code == 0 and out.exists()
    res = r.invoke(main, ["compare", str(KB_RUN / "level_1_problem_1_sample_0_kernel.py"),
                          str(KB_RUN / "level_1_problem_11_sample_0_kernel.py"), "--print"])
    assert res.exit_code == 0 and "passed" in res.output and "failed" in res.output
    res = r.invoke(main, ["show", str(KB_RUN / "level_1_problem_11_sample_0_kernel.py")])
    assert res.exit_code == 0 and "eval_results.json" in res.output


def test_attach_is_idempotent():
    run = load(str(HB / "results/jobs/model-a/sample1" / CUT / "trajectory.json"))
    n = len(run.flags)
    attach(run)
    assert len(run.flags) == n


def test_a_test_script_that_runs_modelnew_is_not_the_final_kernel(tmp_path):
    # real Harbor runs (Opus-4.8, kernelbench-harbor) write solution.py, then test.py that imports
    # and times ModelNew: the run's kernel is solution.py
    trial = tmp_path / CUT
    shutil.copytree(HB / "results/jobs/model-a/sample1" / CUT, trial)
    obj = json.loads((trial / "trajectory.json").read_text())
    test_py = ("import torch\nfrom solution import ModelNew\nfrom reference import Model, get_inputs\n"
               "x = get_inputs()\nprint((ModelNew()(*x) - Model()(*x)).abs().max())\n")
    step = json.loads(json.dumps(obj["steps"][1]))
    step["step_id"] = 4
    step["tool_calls"][0]["tool_call_id"] = "c9"
    step["tool_calls"][0]["arguments"]["keystrokes"] = "cat > /app/test.py << 'EOF'\n" + test_py + "EOF\n"
    step["observation"]["results"][0]["source_call_id"] = "c9"
    obj["steps"].append(step)
    (trial / "trajectory.json").write_text(json.dumps(obj))
    run = load(str(trial / "trajectory.json"))
    assert [k.path for k in run.kernels][-1].endswith("test.py")
    assert run.final_kernel.path.endswith("solution.py")


def test_verify_compares_the_recorded_speedup_over_eager():
    # ktui times the reference as written (eager): a Harbor run's speedup over torch.compile is not
    # comparable with it, its speedup over eager is
    from ktui.repro.verify.plan import recorded_speedup

    runs, _ = scan(HB, use_cache=False, jobs=0)
    a1 = next(r for r in runs if r.path == f"results/jobs/model-a/sample1/{CUT}/trajectory.json")
    assert a1.speedup == pytest.approx(4.2) and recorded_speedup(a1) == pytest.approx(9.0)
    c = next(r for r in runs if r.path.endswith("agent/trajectory.json"))
    assert recorded_speedup(c) is None and c.speedups == {}


def test_result_file_text_reaches_no_terminal_as_escapes(tmp_path):
    d = tmp_path / "t"
    shutil.copytree(HB / "results/jobs/model-a/sample1" / CUT, d)
    (d / "reward.json").write_text(json.dumps({
        "reward": 1, "correct": True, "speedup_vs_\u001b[2Jeager": 2.0, "suspicious": True,
        "error": "boom \u001b]52;c;ZWNobyBoaQ==\u0007 \u001b[31mred\u001b[0m \u202eevil",
        "note\u001b[1m": "x\u001b[5m"}))
    res = CliRunner().invoke(main, ["show", str(d / "trajectory.json")])
    assert res.exit_code == 0
    assert "\x1b" not in res.output and "\x07" not in res.output and "\u202e" not in res.output
    assert "boom" in res.output
