"""AIDE tree-search journals (the ``aide`` importer): two real KernelBench AIDE kernel searches
(ScalingIntelligence/KernelBench 01f92ad, MIT; tests/fixtures/formats/real/SOURCES.md), and the
search's rules on hand-made journals."""

from __future__ import annotations

import json
from pathlib import Path

from ktui.trace.importers import detect, load

REAL = Path(__file__).resolve().parent / "fixtures" / "formats" / "real"
PASSED = REAL / "aide_kernelbench_44-stimulating-magenta-adder"
FAILED = REAL / "aide_kernelbench_26-lumpy-offbeat-porpoise"


def test_a_real_search_whose_improvement_broke_the_kernel():
    """Node 1 (a draft) works at 36.8 ms; node 2 improves it and fails its correctness check. The
    search's answer is node 1 (AIDE's best_solution.py), not the last version."""
    path = PASSED / "journal.json"
    assert detect(str(path)).name == "aide"
    run = load(path)
    assert run.format == "aide" and not run.problems
    assert run.model == "gemini/gemini-2.5-flash"
    assert (run.problem.level, run.problem.problem_id) == (1, 1)
    assert run.problem.reference_source == (PASSED / "reference_architecture.py").read_text()
    assert len(run.turns) == 2 and len(run.kernels) == 2
    evals = [c for c in run.calls if c.name == "evaluate"]
    assert [c.status for c in evals] == ["ok", "failed"]
    assert "Correctness" in evals[1].result.summary
    assert any("node 2 (improve of node 1)" in text for _, text in run.notes)
    assert run.outcome == "passed"
    assert run.final_kernel_number == 1
    assert run.final_kernel.code.strip() == (PASSED / "best_solution.py").read_text().strip()
    assert run.metrics.correct is True and run.metrics.runtime_us == 36800
    assert [(u.tool, u.status) for u in run.kernels[1].uses if u.verdict] == [("evaluate", "failed")]  # once
    assert run.turns[0].text and "feedback" in {k for _, k, _, _ in run.messages}


def test_a_real_search_where_no_node_works():
    """Both nodes fail (a CompilationError, then a CorrectnessError): the run failed, and its
    answer is the first node, as AIDE keeps it when every metric is the worst."""
    run = load(FAILED / "journal.json")
    assert run.format == "aide" and not run.problems
    assert run.outcome == "failed" and run.metrics.correct is False and run.metrics.runtime_us is None
    assert [c.status for c in run.calls if c.name == "evaluate"] == ["failed", "failed"]
    assert run.final_kernel_number == 1
    assert run.final_kernel.code.strip() == (FAILED / "best_solution.py").read_text().strip()


def _node(step, code, *, buggy=False, exc=None, value=None, maximize=False, nid=None, ctime=1.7e9):
    return {"code": code, "plan": f"plan {step}", "step": step, "id": nid or f"n{step}", "ctime": ctime + step,
            "parent": None, "children": [], "_term_out": [f"Performance: {value} ms"] if value else ["boom"],
            "exec_time": 0.1, "exc_type": exc, "exc_info": {"error": "x"} if exc else None, "exc_stack": None,
            "analysis": "ok" if not buggy else "broken", "metric": {"value": value, "maximize": maximize if value else None},
            "is_buggy": buggy}


def _write(tmp_path: Path, nodes, node2parent=None) -> Path:
    p = tmp_path / "journal.json"
    p.write_text(json.dumps({"nodes": nodes, "node2parent": node2parent or {}, "__version": "2"}))
    return p


def test_the_answer_is_the_best_metric_in_its_direction_first_of_equals(tmp_path):
    code = "import torch\nclass ModelNew(torch.nn.Module):\n    pass  # v{}\n"
    nodes = [_node(0, code.format(1), value=5.0), _node(1, code.format(2), value=3.0),
             _node(2, code.format(3), value=3.0), _node(3, code.format(4), buggy=True, exc="CompilationError")]
    run = load(_write(tmp_path, nodes, {"n1": "n0", "n3": "n1"}))
    assert run.outcome == "passed" and run.final_kernel_number == 2  # lower is better; first of equals
    assert any("node 4 (debug" not in t and "node 4 (improve of node 2)" in t for _, t in run.notes)
    run = load(_write(tmp_path, [dict(n, metric={"value": n["metric"]["value"], "maximize": True}) for n in nodes]))
    assert run.final_kernel_number == 1  # higher is better
    assert run.metrics.runtime_us == 5000
    # an evaluation whose output says nothing readable still judges its version, from the node
    assert [(u.status, u.summary) for u in run.kernels[3].uses if u.verdict] == [("failed", "node 4: CompilationError")]


def test_a_debug_node_and_an_empty_journal(tmp_path):
    code = "import torch\nclass ModelNew(torch.nn.Module):\n    pass  # {}\n"
    run = load(_write(tmp_path, [_node(0, code.format("a"), buggy=True, exc="CorrectnessError"),
                                 _node(1, code.format("b"), value=2.0)], {"n1": "n0"}))
    assert any("node 2 (debug of node 1)" in t for _, t in run.notes)
    assert run.outcome == "passed" and run.final_kernel_number == 2
    run = load(_write(tmp_path, []))
    assert run.format == "aide" and run.outcome == "incomplete" and not run.problems
    assert any("holds no node" in t for _, t in run.notes)


def test_an_object_with_nodes_but_no_node2parent_is_not_a_journal(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"nodes": [{"code": "x", "plan": "y", "step": 0}]}))
    assert detect(str(p)).name != "aide"
