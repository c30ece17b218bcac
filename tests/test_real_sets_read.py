"""Defects found by reading held-out real sweeps and trace sets (issue 21, the reading side; see
benchmarks/results/real_sweeps.md). Each test builds a minimal directory with the structure of
the real set (named in the test) and fails on the code before the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from conftest import SEED_TRACE

from ktui.cli import main
from ktui.trace.index import scan

KERNEL = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _validated(*paths: Path) -> list[str]:
    res = CliRunner().invoke(main, ["validate", "--json", *map(str, paths)], catch_exceptions=False)
    return [e["file"] for e in json.loads(res.output[res.output.index("["):])]


def test_validate_reads_every_file_runs_lists(tmp_path):
    """yoenoo/eh_kernelbench (8b3f622) keeps a KernelBench run folder, ``results/level_1_problem_P
    _sample_S_kernel.py`` x 889: ``ktui runs`` listed 889 runs, ``ktui validate`` said "no trace
    files found". Both walks now ask one predicate; over a directory of every kind of file they
    read the same files (sweep records, result files and other files left out by both)."""
    shutil.copy(SEED_TRACE, tmp_path / "seed.jsonl")
    kb = tmp_path / "results"
    kb.mkdir()
    (kb / "level_1_problem_3_sample_0_kernel.py").write_text(KERNEL)
    (kb / "problem_4_kernel.py").write_text(KERNEL)
    (kb / "eval_results.json").write_text(json.dumps({"3": {"sample_id": 0, "compiled": True,
                                                            "correctness": True, "metadata": {}}}))
    (kb / "generation_config.yaml").write_text("model_name: m\n")
    (kb / "helper.py").write_text("x = 1\n")
    (kb / "runs.jsonl").write_text("")
    runs, _ = scan(tmp_path, use_cache=False, jobs=0)
    listed = sorted(str(tmp_path / s.path) for s in runs)
    assert len(listed) == 3
    assert sorted(_validated(tmp_path)) == listed
    assert sorted(_validated(kb)) == [p for p in listed if "/results/" in p]


def test_an_empty_kernelbench_sample_file_is_a_run_without_a_kernel(tmp_path):
    """yoenoo/eh_kernelbench (8b3f622) ``results/level_1_problem_8_sample_2_kernel.py`` is 0 bytes
    (the generation wrote nothing): ``runs`` counted it as a run with no kernel, while ``show`` and
    ``validate`` gave it a kernel version v1 (final) of 0 lines. It is a run with no version, its
    result (if the folder's results file has one) still read."""
    from ktui.trace import load

    kb = tmp_path / "results"
    kb.mkdir()
    (kb / "level_1_problem_8_sample_2_kernel.py").write_text("")
    (kb / "level_1_problem_9_sample_0_kernel.py").write_text("\n  \n")
    (kb / "eval_results.json").write_text(json.dumps({"9": {"sample_id": 0, "compiled": False, "correctness": False,
                                                            "metadata": {"compilation_error": "empty"}}}))
    for name in ("level_1_problem_8_sample_2_kernel.py", "level_1_problem_9_sample_0_kernel.py"):
        run = load(kb / name)
        assert run.format == "kernelbench-run" and run.kernels == [] and run.final_kernel is None
        assert any("empty" in t.text for t in run.terminal)
        assert not run.problems
    runs, _ = scan(kb, use_cache=False, jobs=0)
    assert sorted((s.path, s.outcome) for s in runs) == [
        ("level_1_problem_8_sample_2_kernel.py", "incomplete"), ("level_1_problem_9_sample_0_kernel.py", "failed")]
    res = CliRunner().invoke(main, ["validate", str(kb)], catch_exceptions=False)
    assert "kernels=0" in res.output and "kernels=1" not in res.output


OPENHANDS = Path(__file__).resolve().parent / "fixtures" / "formats" / "structural" / \
    "openhands_sdk_events_refused_edit_parallel_calls.json"


def test_openhands_sdk_conversation_events_are_read():
    """atineoSE/openhands-trajectory-visualizer (f1c9835, no licence) holds five real OpenHands
    agent-SDK conversations exported as a JSON array of events (kimi-k2.5, Claude): ktui said "not a
    trace (looks like a JSON array of 103 item(s) (dict))". A minimal file of the same structure:
    the task, one version per applied edit (a refused ``str_replace`` changes nothing), the calls
    of one response in one turn, exit codes, the finish message, the conversation error."""
    from ktui.trace import load
    from ktui.trace.importers import detect

    assert detect(str(OPENHANDS)).name == "openhands"
    run = load(OPENHANDS)
    assert run.format == "openhands" and not run.problems
    assert run.problem.prompt.startswith("Write a Triton ReLU")
    assert len(run.turns) == 4 and [len(t.calls) for t in run.turns] == [1, 1, 2, 1]
    assert [c.result.status for c in run.calls] == ["ok", "error", "ok", "failed", "ok"]
    assert len(run.kernels) == 2 and not any(k.partial for k in run.kernels)
    v1, v2 = run.kernels
    assert "BLOCK=1024)" in v1.code and "BLOCK=2048)" in v2.code and "8192" not in v1.code + v2.code
    assert run.final_kernel_number == 2 and "class ModelNew" in v2.code
    assert run.turns[0].llm_ms == 8500 and run.turns[2].llm_ms == 6900  # from the event before each response
    assert "Done: /work/solution.py holds ModelNew." in run.turns[3].text
    assert run.terminal_state == "backend_error"
    assert any("condensed" in n for _, n in run.notes)
    runs, _ = scan(OPENHANDS, use_cache=False, jobs=0)
    assert [s.format for s in runs] == ["openhands"]


def test_arrays_of_other_objects_are_not_openhands():
    from ktui.trace.importers.openhands import detect_object

    assert not detect_object([{"kind": "x"}])  # no source
    assert not detect_object([{"kind": "Note", "source": "agent"}])  # no event kind of the SDK
    assert not detect_object([{"role": "user", "content": "hi"}])
    assert not detect_object([])
    assert detect_object({"events": [{"kind": "MessageEvent", "source": "user", "llm_message": {}}]})


def test_openhands_model_from_the_conversation_state_beside_the_events(tmp_path):
    """The events hold no model and no tokens; the SDK keeps them in ``base_state.json`` beside
    them, the visualizer's export in ``trajectory.json`` ``baseState`` (the five real
    conversations: kimi-k2.5, kimi-k2-0905, Claude-Haiku-4.5; per-response ``token_usages`` and
    ``response_latencies`` keyed by ``response_id``). Without either they stay unknown."""
    from ktui.trace import load

    usage = {"model_name": "m", "accumulated_cost": 0.01,
             "token_usages": [{"model": "m", "prompt_tokens": 1000 * k, "completion_tokens": 10 * k,
                               "cache_read_tokens": 0, "response_id": f"gen-{k}"} for k in (1, 2, 3, 4)]
             + [{"response_id": ["not", "an", "id"], "prompt_tokens": 5}, "junk"],
             "response_latencies": [{"model": "m", "latency": 2.5, "response_id": "gen-3"},
                                    {"latency": -1, "response_id": "gen-1"}]}
    state = {"id": "c", "agent": {"llm": {"model": "openrouter/some/model-1", "api_key": "**********"}},
             "stats": {"usage_to_metrics": {"agent": usage, "condenser": {"token_usages": []}}}}
    for name, obj in (("base_state.json", state), ("trajectory.json", {"id": "c", "baseState": state})):
        d = tmp_path / name.split(".")[0]
        d.mkdir()
        shutil.copy(OPENHANDS, d / "events.json")
        (d / name).write_text(json.dumps(obj))
        run = load(d / "events.json")
        assert run.model == "openrouter/some/model-1" and not run.problems
        assert any(name in n for _, n in run.notes)
        # each response's tokens onto its turn (the two calls of gen-3 are one turn), its latency as model time
        assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(1000, 10), (2000, 20), (3000, 30), (4000, 40)]
        assert run.turns[2].llm_ms == 2500 and run.turns[0].llm_ms == 8500  # a negative latency is not taken
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(OPENHANDS, alone / "events.json")
    (alone / "trajectory.json").write_text("{not json")
    run = load(alone / "events.json")
    assert run.model is None and not run.problems and len(run.turns) == 4


TRITON = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n"
          "    o = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)\n")
KA = Path(__file__).resolve().parent / "fixtures" / "formats" / "real" / "kernelagent_session_20251126_021641_875369"


def test_kernelagent_session_is_read():
    """meta-pytorch/KernelAgent (954eb7c, Apache-2.0) keeps two real session folders,
    ``triton_kernel_logs/session_*/``: ``result.json``, ``problem.txt`` and the workers' rounds.
    ktui said "not a trace" of every ``result.json``. Read: the winning worker's rounds (worker 1:
    one round, its test passed), the problem's reference from ``problem.txt``, the outcome and the
    speedup KernelAgent measured (0.42x over PyTorch), the losing worker's round counted in a note."""
    from ktui.trace import load
    from ktui.trace.importers import detect

    path = KA / "result.json"
    assert detect(str(path)).name == "kernelagent"
    run = load(path)
    assert run.format == "kernelagent" and not run.problems
    assert run.outcome == "passed" and run.persona == "worker 1"
    assert run.metrics is not None and run.metrics.correct is True
    assert abs(run.metrics.speedup - 0.4236139035409324) < 1e-12 and abs(run.metrics.runtime_us - 31.4988) < 1e-3
    assert len(run.turns) == 1 and len(run.kernels) == 1 and run.final_kernel_number == 1
    assert "@triton.jit" in run.kernels[0].code
    assert [(u.tool, u.status, u.verdict) for u in run.kernels[0].uses if u.verdict] == [("run_test", "ok", True)]
    assert run.problem.reference_origin == "problem.txt beside result.json"
    assert "class Model" in run.problem.reference_source and "def get_inputs" in run.problem.reference_source
    assert any("other workers wrote 1 round" in n for _, n in run.notes)
    runs, _ = scan(KA, use_cache=False, jobs=0)  # the round files are not runs of their own
    assert [(s.path, s.format, s.outcome) for s in runs] == [("result.json", "kernelagent", "passed")]


def test_kernelagent_rounds_in_the_result_and_a_failed_session(tmp_path):
    """Laurawly/kernelagent-artifacts (14ed07a, no licence) puts the rounds in ``result.json``
    (``history``) and the problem in ``original.py``: a minimal file of that structure, with a
    failed round before the passing one and a failed session."""
    from ktui.trace import load

    d = tmp_path / "31_X"
    d.mkdir()
    (d / "original.py").write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    (d / "manifest.json").write_text(json.dumps({"level": "L3", "name": "31_X", "route": "kernelagent", "verify": {}}))
    hist = [{"round": 1, "timestamp": "2025-10-30T12:00:00", "success": False, "kernel_code": TRITON + "# v1\n",
             "stdout": "", "stderr": "AssertionError: mismatch"},
            {"round": 2, "timestamp": "2025-10-30T12:05:00", "success": True, "kernel_code": TRITON + "# v2\n",
             "stdout": "Test passed", "stderr": ""}]
    (d / "result.json").write_text(json.dumps({"worker_id": 0, "success": True, "kernel_code": hist[1]["kernel_code"],
                                               "rounds": 2, "history": hist}))
    run = load(d / "result.json")
    assert run.format == "kernelagent" and not run.problems and run.outcome == "passed"
    assert [[u.status for u in k.uses if u.verdict] for k in run.kernels] == [["failed"], ["ok"]]
    assert run.problem.reference_origin == "original.py beside result.json" and run.problem.name == "31_X"
    assert (run.problem.level, run.problem.problem_id) == (3, 31)  # grouped with other runs of L3 P31
    assert run.turns[1].start_ms - run.turns[0].start_ms == 300_000
    (d / "result.json").write_text(json.dumps({"worker_id": 0, "success": False, "kernel_code": "",
                                               "rounds": 5, "session_dir": "/x"}))
    run = load(d / "result.json")
    assert run.outcome == "failed" and run.kernels == [] and not run.problems


def test_no_except_clause_nests_a_tuple_of_exception_classes():
    """``except (OSError, JSONError)`` where ``JSONError`` is itself a tuple raises TypeError when
    an exception comes (Python 3 does not flatten nested tuples), which the importers' safety net
    turned into "could not interpret this trace" (found in the OpenHands state-file read). Every
    tuple-valued name in an except tuple must be unpacked (``*JSONError``)."""
    import ast

    import ktui

    tuples = {"JSONError"}  # module-level names bound to tuples of exception classes (ktui.trace.notes)
    bad = []
    for f in Path(ktui.__file__).resolve().parent.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Tuple):
                for elt in node.type.elts:
                    name = elt.id if isinstance(elt, ast.Name) else elt.attr if isinstance(elt, ast.Attribute) else None
                    if name in tuples:
                        bad.append(f"{f.name}:{node.lineno}")
    assert not bad, bad
