"""Runs addressed inside one file (``PATH#KEY``, ktui.trace.address) and the KernelBench-Agentic
importer (one ``gen_results.json`` a configuration, one run a problem)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from ktui.cli import main
from ktui.trace import address
from ktui.trace.importers import detect, load, runs_in_file
from ktui.trace.importers import kernelbench_agentic as kba


def _eval(correct: bool, runtime: float = 2.0, ref: float = 3.0) -> dict:
    return {"compiled": True, "correctness": correct, "metadata": {"hardware": "GPU X"},
            "runtime": runtime if correct else -1.0, "ref_runtime": ref}


def _problem(pid: int, name: str, turns: list[dict] | None, final: dict | None, code: str = "class ModelNew: pass\n"):
    p: dict = {"problem_id": pid, "problem_name": name, "reference_arch_path": f"/elsewhere/level1/{name}",
               "prompt": "Write a kernel for:\nclass Model: ...", "extracted_code": code, "status": "success"}
    if turns is not None:
        p.update(turns=turns, num_turns=len(turns), final_turn=len(turns) - 1)
    if final is not None:
        p["final_eval"] = final
        p["final_status"] = "correct" if final.get("correctness") else "incorrect"
    return p


def _turn(k: int, code: str, correct: bool) -> dict:
    return {"turn": k, "raw_response": f"```python\n{code}```", "extracted_code": code, "eval": _eval(correct),
            "feedback": f"Evaluation result (turn {k})", "status": "correct" if correct else "incorrect",
            "candidates": [{"compiled": True, "correct": correct, "speedup": 1.0}, {"compiled": False}]}


def gen_results() -> dict:
    a, b = "class ModelNew:  # a\n    pass\n", "class ModelNew:  # b\n    pass\n"
    return {
        "meta": {"method": "agentic", "model": "some/Model-7B", "max_turns": 2},
        "levels": {
            "1": {
                "2": _problem(2, "2_Matmul.py", [_turn(0, a, False), _turn(1, b, True)], _eval(True), code=b),
                "10": _problem(10, "10_Conv.py", [_turn(0, a, False), _turn(1, b, False)], _eval(False), code=b),
            },
            "2": {"3": _problem(3, "3_Gemm_ReLU.py", None, None)},  # single shot, no evaluation recorded
        },
    }


@pytest.fixture()
def sweep(tmp_path):
    cfg = tmp_path / "cfg_a"
    cfg.mkdir()
    f = cfg / "gen_results.json"
    f.write_text(json.dumps(gen_results()))
    return f


def test_detected_and_its_runs_listed_in_order(sweep):
    assert detect(str(sweep)).name == kba.NAME
    found = runs_in_file(str(sweep))
    assert found is not None
    assert found[1] == ["L1:P2", "L1:P10", "L2:P3"]  # numeric order, not "10" < "2"


def test_each_problem_a_run_with_the_files_verdict(sweep):
    ok = load(f"{sweep}#L1:P2")
    assert ok.path.endswith("gen_results.json#L1:P2")
    assert ok.outcome == "passed" and ok.metrics.correct is True
    assert ok.metrics.speedup == pytest.approx(1.5)  # ref_runtime / runtime
    assert (ok.metrics.runtime_us, ok.metrics.ref_runtime_us) == (2000.0, 3000.0)  # ms in the file
    assert (ok.problem.level, ok.problem.problem_id, ok.problem.name) == (1, 2, "2_Matmul")
    assert len(ok.turns) == 2 and len(ok.kernels) == 2  # the fenced answer is not a third version
    assert ok.model == "some/Model-7B" and ok.scenario == "cfg_a"
    assert [c.status for c in ok.calls if c.name == "run_correctness"] == ["failed", "ok"]
    bad = load(f"{sweep}#L1:P10")
    assert bad.outcome == "failed"
    none = load(f"{sweep}#L2:P3")
    assert none.outcome == "incomplete" and len(none.kernels) == 1
    assert any("records no evaluation" in n[1] if isinstance(n, tuple) else "records no evaluation" in str(n)
               for n in none.notes)


def test_the_reference_from_a_kernelbench_checkout_above(tmp_path):
    lvl = tmp_path / "KernelBench" / "level1"
    lvl.mkdir(parents=True)
    (lvl / "2_Matmul.py").write_text("class Model:\n    pass\ndef get_inputs():\n    return []\n")
    runs = tmp_path / "runs" / "cfg"
    runs.mkdir(parents=True)
    (runs / "gen_results.json").write_text(json.dumps(gen_results()))
    r = load(f"{runs / 'gen_results.json'}#L1:P2")
    assert r.problem.reference_source.startswith("class Model")
    assert "KernelBench checkout" in r.problem.reference_origin
    assert not load(f"{runs / 'gen_results.json'}#L1:P10").problem.reference_source  # no such file


def test_the_file_whole_is_not_a_run_and_says_how_to_open_one(sweep):
    r = load(str(sweep))
    assert r.problems and "holds 3 runs" in r.problems[0].message and "#KEY" in r.problems[0].message
    res = CliRunner().invoke(main, ["show", str(sweep)])
    assert res.exit_code == 2 and "holds 3 runs" in res.output


def test_cli_show_takes_an_address(sweep):
    res = CliRunner().invoke(main, ["show", f"{sweep}#L1:P2"])
    assert res.exit_code == 0, res.output
    assert "passed" in res.output and "2_Matmul" in res.output


@pytest.mark.parametrize("key", ["L9:P9", "L1:P", "nonsense", "L1:P2/../x", "x" * 300])
def test_a_missing_key_is_a_clear_error(sweep, key):
    r = load(f"{sweep}#{key}")
    assert r.problems and r.problems[0].line == 0
    assert ("no run" in r.problems[0].message) or ("no such file" in r.problems[0].message
                                                  or "not a trace" in r.problems[0].message)
    res = CliRunner().invoke(main, ["show", f"{sweep}#{key}"])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_a_key_on_a_file_of_one_run_is_an_error(tmp_path):
    import shutil

    from ktui.cli import bundled_trace

    f = tmp_path / "one.jsonl"
    shutil.copy(bundled_trace(), f)
    r = load(f"{f}#L1:P2")
    assert r.problems and "the file is one run" in r.problems[0].message


def test_a_path_with_a_hash_in_it(tmp_path):
    d = tmp_path / "sweep#3"
    d.mkdir()
    f = d / "gen_results.json"
    f.write_text(json.dumps(gen_results()))
    assert address.split(str(f)) == address.Address(str(f))
    assert address.split(f"{f}#L1:P2") == address.Address(str(f), "L1:P2")
    assert load(f"{f}#L1:P2").outcome == "passed"
    odd = tmp_path / "a#b.json"  # the file itself is named with '#': it is the file, whole
    odd.write_text(json.dumps(gen_results()))
    assert address.split(str(odd)).key is None
    assert address.split(str(tmp_path / "missing.json#L1:P2")).key is None  # no such file: left whole


def test_hostile_a_huge_turn_list_is_bounded(tmp_path):
    obj = gen_results()
    obj["levels"]["1"]["2"]["turns"] = [_turn(k, f"x = {k}\n", False) for k in range(kba.MAX_TURNS + 40)]
    f = tmp_path / "gen_results.json"
    f.write_text(json.dumps(obj))
    r = load(f"{f}#L1:P2")
    assert len(r.turns) <= kba.MAX_TURNS + 1
    assert any(str(kba.MAX_TURNS) in str(n) for n in r.notes)


@pytest.mark.parametrize("mutate", [
    lambda o: o["levels"]["1"]["2"].update(turns="not a list"),
    lambda o: o["levels"]["1"]["2"].update(turns=[1, None, "x", {"eval": [1]}, {"extracted_code": 5}]),
    lambda o: o["levels"]["1"]["2"].update(final_eval=[True]),
    lambda o: o["levels"]["1"]["2"].update(final_eval={"correctness": "yes", "runtime": "fast"}),
    lambda o: o["levels"]["1"].update({"bad#key": o["levels"]["1"]["2"], "a/b": o["levels"]["1"]["2"]}),
    lambda o: o["levels"].update({"3": ["not", "a", "dict"]}),
    lambda o: o.update(meta={"model": 7, "max_turns": "x"}),
])
def test_hostile_wrong_types_never_crash(tmp_path, mutate):
    obj = gen_results()
    mutate(obj)
    f = tmp_path / "gen_results.json"
    f.write_text(json.dumps(obj))
    found = runs_in_file(str(f))
    keys = found[1] if found else []
    assert all("#" not in k and "/" not in k for k in keys)
    for k in keys or ["L1:P2"]:
        r = load(f"{f}#{k}")
        assert r.outcome in ("passed", "failed", "incomplete")
    fe = obj["levels"]["1"]["2"].get("final_eval")
    if not isinstance(fe, dict) or fe.get("correctness") is not True:  # only the file's final_eval passes a run
        assert load(f"{f}#L1:P2").outcome != "passed"


def test_hostile_duplicate_keys_give_one_run_each(tmp_path):
    p = json.dumps(_problem(2, "2_Matmul.py", [_turn(0, "a = 1\n", True)], _eval(True)))
    q = json.dumps(_problem(2, "2_Matmul.py", [_turn(0, "b = 1\n", False)], _eval(False)))
    raw = '{"meta": {"method": "m"}, "levels": {"1": {"2": %s, "2": %s}, "1": {"2": %s}}}' % (p, q, q)
    f = tmp_path / "gen_results.json"
    f.write_text(raw)
    found = runs_in_file(str(f))
    assert found is not None and found[1] == ["L1:P2"]
    assert load(f"{f}#L1:P2").outcome == "failed"  # the parser keeps the last


def test_the_contract_checks_a_half_many_runs_shape():
    import types

    from ktui.trace.importers.contract import Importer

    m = types.ModuleType("half")
    m.NAME, m.LABEL = "half", "half"
    m.detect_object = lambda o: False
    m.load_object = lambda o, p: None
    m.runs_in = lambda o: []
    with pytest.raises(TypeError, match="load_run"):
        Importer.of(m)


def test_the_address_module_never_reads_content(tmp_path):
    assert address.join("a/b.json", "L1:P2") == "a/b.json#L1:P2"
    assert str(address.Address("a.json", None)) == "a.json"
    assert address.split(os.fspath(tmp_path)).key is None


def test_runs_lists_each_run_of_the_file_with_the_files_pass_count(sweep, tmp_path, monkeypatch):
    from ktui.trace.index import SweepIndex

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    (sweep.parent / "summary.json").write_text(json.dumps({"overall": {"correct": 3}, "n_tasks": 30}))
    for _ in range(2):  # cold, then from the cache
        idx = SweepIndex(sweep.parent.parent, jobs=0)
        rows = list(idx.summaries())
        assert sorted(r.path.rsplit("#", 1)[1] for r in rows) == ["L1:P10", "L1:P2", "L2:P3"]
        assert [r.outcome for r in sorted(rows, key=lambda r: r.path)] == ["failed", "passed", "incomplete"]
        assert all(r.real.startswith(str(sweep)) and "#" in r.real for r in rows)
        assert sum(r.passed for r in rows) == 1  # gen_results.json's final_eval, not summary.json's 3
    assert idx.cache_hits == 2  # gen_results.json and summary.json, both from the cache


def test_a_cached_row_of_a_file_of_many_runs_is_checked(tmp_path):
    from ktui.trace.index.summary import RunSummary

    with pytest.raises(TypeError):
        RunSummary.from_dict({"path": "x", "parts": ["not a dict"]})


def test_validate_and_search_take_each_run(sweep):
    from ktui.trace.search import Matcher, search

    res = CliRunner().invoke(main, ["validate", str(sweep.parent)])
    assert "#L1:P2" in res.output and "#L2:P3" in res.output and "3 files" in res.output
    hits = list(search(str(sweep.parent), Matcher("ModelNew:  # b")))
    assert {h.run.rsplit("#", 1)[1] for h in hits} == {"L1:P2", "L1:P10"}


def test_the_final_kernel_is_the_best_turns_not_the_last(tmp_path):
    a, b = "class ModelNew:  # a\n    pass\n", "class ModelNew:  # b\n    pass\n"
    obj = gen_results()
    p = obj["levels"]["1"]["2"]
    p["turns"] = [_turn(0, a, True), _turn(1, b, False)]
    p.update(final_turn=0, extracted_code=a, final_eval=_eval(True))
    f = tmp_path / "gen_results.json"
    f.write_text(json.dumps(obj))
    r = load(f"{f}#L1:P2")
    assert len(r.turns) == 2  # no turn of its own
    assert r.final_kernel is not None and r.final_kernel.code == a
    assert r.outcome == "passed"


def test_a_label_on_an_address_shows_on_its_row(sweep, tmp_path, monkeypatch):
    from ktui.trace.index import SweepIndex
    from ktui.trace.labels import LabelStore

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    lf = tmp_path / "labels.jsonl"
    res = CliRunner().invoke(main, ["label", f"{sweep}#L1:P10", "wrong", "--labels", str(lf)])
    assert res.exit_code == 0, res.output
    rows = list(SweepIndex(sweep.parent, jobs=0, labels=LabelStore.read([str(lf)])).summaries())
    by_key = {r.path.rsplit("#", 1)[1]: r.labels for r in rows}
    assert by_key["L1:P10"] == ["wrong"] and by_key["L1:P2"] == []


def test_the_reference_from_a_clone_of_the_kernelbench_repository(tmp_path):
    """A clone of KernelBench keeps its problems under KernelBench/KernelBench/level<L> (the
    layout gen_results.json's reference_arch_path records)."""
    lvl = tmp_path / "KernelBench" / "KernelBench" / "level1"
    lvl.mkdir(parents=True)
    (lvl / "2_Matmul.py").write_text("class Model:\n    pass\n")
    runs = tmp_path / "experiments" / "runs" / "cfg"
    runs.mkdir(parents=True)
    (runs / "gen_results.json").write_text(json.dumps(gen_results()))
    r = load(f"{runs / 'gen_results.json'}#L1:P2")
    assert r.problem.reference_source == "class Model:\n    pass\n"


def test_hostile_a_huge_problem_list_is_bounded_and_odd_entries_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(kba, "MAX_RUNS", 5)
    obj = gen_results()
    base = obj["levels"]["1"]["2"]
    obj["levels"]["1"].update({str(i): dict(base, problem_id=i) for i in range(100, 140)})
    obj["levels"]["1"]["x#y"] = base  # no address can hold it
    f = tmp_path / "gen_results.json"
    f.write_text(json.dumps(obj))
    found = runs_in_file(str(f))
    assert found is not None and len(found[1]) == 5
    msg = load(str(f)).problems[0].message
    assert "holds at least 5 runs" in msg and "1 entr(ies) are not runs" in msg


REAL = os.path.join(os.path.dirname(__file__), "fixtures", "formats", "real", "kernelbench_agentic_no_rag_qwen",
                    "gen_results.json")


def test_real_file_pass_count_equals_its_own_final_eval(tmp_path, monkeypatch):
    """pango0/KernelBench-Agentic at 031a270 (MIT, tests/fixtures/formats/real/SOURCES.md): 8
    problem runs, 24 turns; its final_eval says 1 correct. Before: 0 runs ("not a trace")."""
    from ktui.trace.index import SweepIndex

    with open(REAL, "rb") as f:
        obj = json.loads(f.read())
    want = {f"L{lk}:P{pk}": p["final_eval"]["correctness"] is True for lk, lv in obj["levels"].items()
            for pk, p in lv.items()}
    assert len(want) == 8 and sum(want.values()) == 1
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    rows = list(SweepIndex(os.path.dirname(REAL), jobs=0).summaries())
    got = {r.path.rsplit("#", 1)[1]: r.passed for r in rows}
    assert got == want
    assert sum(r.turns for r in rows) == 24
    assert all(r.outcome in ("passed", "failed") and r.problem for r in rows)


def test_the_report_builds_each_runs_detail_with_the_files_row(sweep, tmp_path, monkeypatch):
    """``ktui report`` on files of many runs: each run's detail is built where the file's row is
    (in the helper processes of a big sweep), not one by one in the report's own process after
    the scan; each is the detail of the run at its address."""
    import base64
    import gzip

    from ktui.report import html

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    rows_and_details = html._rows_and_details

    def then_no_more(files):
        out = rows_and_details(files)

        def late(path, run=None):
            raise AssertionError(f"a detail built after the scan: {path}")

        monkeypatch.setattr(html, "packed_detail", late)
        return out

    monkeypatch.setattr(html, "_rows_and_details", then_no_more)
    idx, runs, details = html.scan_and_detail(sweep.parent.parent, use_cache=False, jobs=1)
    assert sorted(r.path.rsplit("#", 1)[1] for r in runs) == ["L1:P10", "L1:P2", "L2:P3"]
    monkeypatch.undo()
    for r, d in zip(runs, details, strict=True):
        assert json.loads(gzip.decompress(base64.b64decode(d))) == json.loads(json.dumps(html.run_detail(r.real)))
