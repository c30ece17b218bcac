"""The harness's own correctness rule, found in the task folder (issue 21).

Harbor's KernelBench verifier (kb_verifier.py of lilian-muyaoli/kernelbench-harbor@6b82a1c) judges
some task families by cosine similarity; that rule lives in the task folder's
``environment/config.json`` ("metric": "cosine"), not in the trial's ``reward.json`` (the
nsa_block_sparse trials' reward.json names no metric). The files here are minimal files of the same
structure, written for these tests: a trial folder (ATIF trajectory + reward.json, named by the task
cut to 32 characters) and a task folder (environment/config.json, environment/reference.py and a
verifier that reads its config the way kb_verifier.py does).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktui.trace import load
from ktui.trace.results.taskrule import KNOWN, UNKNOWN, task_rule

REF = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """y = 2 x, then a top-k-like selection the kernel may resolve differently on ties"""
    def forward(self, x):
        return x * 2.0

def get_inputs():
    return [torch.randn(64, 128)]
'''
# an honest kernel of a top-k task: a few positions differ by a lot (another block chosen on a tie),
# the rest equal: cosine ~ 1, relative L1 ~ 1e-3, allclose at 2e-2 fails
KERNEL = '''import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = x * 2.0
        y.view(-1)[::997] += 1.0
        return y
'''
# the verifier's config reading, as kb_verifier.py's grade() has it (its other code left out)
VERIFIER = '''import json, sys

def grade(ref_path, sol_path, cfg):
    import torch
    atol = cfg.get("atol", 2e-2)
    rtol = cfg.get("rtol", 2e-2)
    metric = cfg.get("metric", "allclose")
    cos_min = cfg.get("cosine_min", {cos})
    rel_max = cfg.get("rel_l1_max", 0.05)

    def is_correct(y, gt):
        if metric == "cosine":
            yf, gf = y.float().flatten(), gt.flatten()
            cos = torch.nn.functional.cosine_similarity(yf, gf, dim=0).item()
            rel = (yf - gf).abs().sum().item() / (gf.abs().sum().item() + 1e-8)
            return cos >= cos_min and rel <= rel_max
        return torch.allclose(y.float(), gt, atol=atol, rtol=rtol)

    inputs = []
    gt_inputs = [t.float() if t.is_floating_point() else t for t in inputs]
'''
TASK = "topk_select__toy_model__n8192_blocks64_fp32"  # 43 characters: the trial folder cuts it to 32
REWARD = {"reward": 1, "correct": True, "speedup_vs_compile": 1.18, "speedup_vs_eager": 3.78,
          "max_err": 0.64, "static_ok": True, "compile_ok": True, "suspicious": False, "error": None}


def _prompt() -> str:
    return ("Task Description:\n# Optimize a GPU kernel\n\n## Rules\n- Must be numerically correct vs the "
            "reference (dtype-aware tolerance).\n\n## The reference\n```python\n" + REF + "```\n")


def _trial(root: Path, *, reward: dict | None = None, config: dict | None = None) -> Path:
    steps = [{"step_id": 1, "source": "user", "message": _prompt()},
             {"step_id": 2, "source": "agent", "message": "write it",
              "tool_calls": [{"tool_call_id": "c1", "function_name": "bash_command", "arguments": {
                  "keystrokes": "cat > /app/solution.py << 'EOF'\n" + KERNEL + "EOF\n"}}],
              "observation": {"results": [{"source_call_id": "c1", "content": "$ "}]}}]
    d = root / "jobs" / "model-a" / "sample1" / TASK[:32]
    d.mkdir(parents=True)
    (d / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.7", "session_id": "s",
                                                   "agent": {"name": "terminus-2", "model_name": "m"},
                                                   "steps": steps}))
    (d / "reward.json").write_text(json.dumps(REWARD if reward is None else reward))
    if config is not None:
        (d / "config.json").write_text(json.dumps(config))
    return d / "trajectory.json"


def _task(root: Path, config: dict | None, *, cos: str = "0.99", name: str = TASK, verifier: bool = True) -> Path:
    d = root / "subset" / name
    (d / "environment").mkdir(parents=True)
    (d / "environment" / "reference.py").write_text(REF)
    if config is not None:
        (d / "environment" / "config.json").write_text(json.dumps(config))
    if verifier:
        (d / "environment" / "kb_verifier.py").write_text(VERIFIER.replace("{cos}", cos))
    (d / "tests").mkdir()
    (d / "tests" / "test.sh").write_text("python /app/kb_verifier.py /app/reference.py /app/solution.py "
                                         "/app/config.json /logs/verifier/reward.json\n")
    return d


COSINE_CFG = {"atol": 0.02, "rtol": 0.02, "speedup_threshold": 1.0, "metric": "cosine", "cosine_min": 0.99,
              "rel_l1_max": 0.05}
ALLCLOSE_CFG = {"atol": 0.02, "rtol": 0.02, "speedup_threshold": 1.0}


def test_the_metric_in_the_task_folder_is_the_rule(tmp_path):
    trace = _trial(tmp_path)
    _task(tmp_path, COSINE_CFG)
    run = load(str(trace))
    assert run.problem.task == TASK[:32]
    # without the task folder: a harness judged it, by a rule ktui cannot know from reward.json alone
    r = task_rule(run)
    assert r.status == UNKNOWN and r.cosine is None
    assert "names no metric" in r.why and "--tasks" in r.why
    assert "unknown" in r.text()
    # --tasks: the folder whose name the cut task name starts; its config says cosine
    r = task_rule(run, str(tmp_path / "subset"))
    assert r.status == KNOWN and r.metric == "cosine" and r.cosine == (0.99, 0.05)
    assert f"{TASK}/environment/config.json" in r.source and "kb_verifier.py" in r.source
    assert r.fp32_truth  # the verifier computes its ground truth on float32 copies of the inputs
    # the root of a checkout works as well
    assert task_rule(run, str(tmp_path)).cosine == (0.99, 0.05)


def test_thresholds_a_config_leaves_out_are_the_verifiers_own(tmp_path):
    trace = _trial(tmp_path)
    _task(tmp_path, {"atol": 0.02, "rtol": 0.02, "metric": "cosine"}, cos="0.995")
    r = task_rule(load(str(trace)), str(tmp_path / "subset"))
    assert r.status == KNOWN and r.cosine == (0.995, 0.05)  # read from the verifier, not assumed
    # no verifier ktui knows in the folder: the thresholds are not known, and ktui says so
    trace2 = _trial(tmp_path / "b")
    _task(tmp_path / "b", {"metric": "cosine"}, verifier=False)
    r2 = task_rule(load(str(trace2)), str(tmp_path / "b" / "subset"))
    assert r2.status == UNKNOWN and "thresholds" in r2.why


def test_an_allclose_task_and_a_metric_ktui_does_not_know(tmp_path):
    trace = _trial(tmp_path)
    _task(tmp_path, ALLCLOSE_CFG)
    r = task_rule(load(str(trace)), str(tmp_path / "subset"))
    assert r.status == KNOWN and r.metric == "allclose" and r.tol == (0.02, 0.02) and r.cosine is None
    trace2 = _trial(tmp_path / "b")
    _task(tmp_path / "b", {"metric": "snr_db", "snr_min": 30})
    r2 = task_rule(load(str(trace2)), str(tmp_path / "b" / "subset"))
    assert r2.status == UNKNOWN and "snr_db" in r2.why and r2.cosine is None and r2.tol is None


def test_a_hostile_config_is_capped(tmp_path):
    trace = _trial(tmp_path)
    _task(tmp_path, {"metric": "cosine", "cosine_min": -1, "rel_l1_max": 1e9})
    r = task_rule(load(str(trace)), str(tmp_path / "subset"))
    assert r.cosine == (0.5, 0.5)
    trace2 = _trial(tmp_path / "b")
    _task(tmp_path / "b", {"atol": 1e9, "rtol": "nan"})
    r2 = task_rule(load(str(trace2)), str(tmp_path / "b" / "subset"))
    assert r2.status == KNOWN and r2.tol == (0.05, 0.02)  # atol capped; rtol not a number: the verifier's


def test_the_trials_own_task_path(tmp_path):
    # a Harbor trial folder keeps its TrialConfig (config.json: task.path); the folder is found there
    # without --tasks when it exists here, and under --tasks DIR by its later parts otherwise
    task_dir = _task(tmp_path, COSINE_CFG, name="renamed_on_disk")
    trace = _trial(tmp_path, config={"task": {"path": str(task_dir)}, "trial_name": TASK[:32] + "__Ab3xY9q"})
    r = task_rule(load(str(trace)))
    assert r.status == KNOWN and r.cosine == (0.99, 0.05)
    trace2 = _trial(tmp_path / "b", config={"task": {"path": "/gone/elsewhere/subset/renamed_on_disk"}})
    assert task_rule(load(str(trace2))).status == UNKNOWN
    assert task_rule(load(str(trace2)), str(tmp_path)).status == KNOWN
    # a recorded path that climbs out is never followed
    trace3 = _trial(tmp_path / "c", config={"task": {"path": "../../subset/renamed_on_disk"}})
    assert task_rule(load(str(trace3)), str(tmp_path / "c")).status == UNKNOWN


def test_the_rule_reaches_the_judged_reference_and_its_identity(tmp_path):
    from ktui.engine.compare import cosine_rule, tolerance_rule
    from ktui.repro.api import resolve_judging

    trace = _trial(tmp_path)
    _task(tmp_path, COSINE_CFG)
    run = load(str(trace))
    src0, _o, r0 = resolve_judging(run, None)
    src1, _o, r1 = resolve_judging(run, None, str(tmp_path / "subset"))
    src2, _o, _r2 = resolve_judging(run, None, str(tmp_path))
    assert r0.status == UNKNOWN and cosine_rule(src0) is None and tolerance_rule(src0) == (0.02, 0.02)
    assert r1.status == KNOWN and cosine_rule(src1) == (0.99, 0.05)
    assert "# ktui: rule known" in src1 and "# ktui: rule unknown" in src0
    assert src1 == src2  # the same rule read through another path: the same judged reference (one cache entry)
    assert r1.fp32_truth and "ground truth fp32" in src1
    # the folder's text never enters the judged code (only a digest of the rule)
    assert "config.json" not in src1


def test_the_verdict_says_which_rule_judged_it():
    from ktui.repro.judging import compare
    from ktui.repro.recorded import Recorded, RecordedOutcome
    from ktui.trace.results.taskrule import TaskRule

    rec = Recorded(label="v1", sha1="x")
    rec.correctness = RecordedOutcome(tool="reward.json", turn=None, call_index=None, status="ok", kind="correctness")
    result = {"status": "completed", "correctness": {"passed": False, "trials": 5, "trials_passed": 0,
                                                     "mismatch": "values differ: max abs error 1"}}
    unknown = TaskRule(UNKNOWN, tol=(0.02, 0.02), why="reward.json names no metric").to_dict()
    comp = compare(rec, result, rule=unknown)
    assert comp.verdict == "correctness disagrees"
    assert "the harness's own rule is unknown (reward.json names no metric)" in comp.reason
    assert "atol 0.02" in comp.reason and comp.rule
    known = TaskRule(KNOWN, metric="cosine", cosine=(0.99, 0.05), source="t/environment/config.json").to_dict()
    comp = compare(rec, result, rule=known)
    assert "cosine similarity >= 0.99 and relative L1 <= 0.05 (t/environment/config.json)" in comp.reason
    # a run that never reached the correctness stage says nothing about a rule
    comp = compare(rec, {"status": "failed", "failure": {"kind": "compile_error", "stage": "build",
                                                          "message": "x"}}, rule=known)
    assert "judged by" not in comp.reason


torch = pytest.importorskip("torch")


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


def test_an_honest_top_k_kernel_judged_by_the_tasks_metric(tmp_path, cache):
    # the kernel differs from the reference at a few positions by 1.0 (cosine 0.9999, relative L1 7e-4):
    # the harness passed it by cosine; by allclose at 2e-2 it fails. With the task folder ktui judges
    # it as the harness does; without, it says the harness's rule is unknown
    from ktui.repro.api import ReproOptions, reproduce

    trace = _trial(tmp_path)
    _task(tmp_path, COSINE_CFG)
    run = load(str(trace))
    opts = ReproOptions(device="cpu", trials=3, timeout=120, compile_timeout=300, fresh=True,
                        tasks_dir=str(tmp_path / "subset"))
    rep = reproduce(run, run.final_kernel, opts)
    assert rep.result["status"] == "completed", rep.result.get("failure")
    assert rep.result["correctness"]["passed"], rep.result["correctness"]
    # the correctness row (the overall verdict also weighs timings, which a loaded CPU may move)
    row = next(r for r in rep.comparison.rows if r.key == "correctness")
    assert row.verdict == "reproduced", rep.comparison.reason
    assert "correctness judged by the harness's rule: cosine similarity >= 0.99" in rep.comparison.reason
    assert rep.request["correctness_rule"]["status"] == KNOWN
    # the precision probe does not read a top-k task's by-design differences as fewer bits
    prec = [c for c in rep.result.get("checks") or [] if c.get("name") == "reduced_precision"]
    assert prec and prec[0]["ok"] is None and "cosine" in prec[0]["detail"], prec
    opts.tasks_dir = None
    rep2 = reproduce(run, run.final_kernel, opts)
    assert not rep2.result["correctness"]["passed"]
    assert next(r for r in rep2.comparison.rows if r.key == "correctness").verdict == "correctness disagrees"
    assert "the harness's own rule is unknown" in rep2.comparison.reason
