"""A Triton matmul whose ``tl.dot`` computes float32 operands in TF32 by Triton's default (the Triton
tutorial's code; KernelBench's tritonDump L1 P1 here, MIT, ``tests/fixtures/real/kernelbench_triton_runs``)
and is correct within the task's tolerance: the ``reduced_precision`` probe's finding (true: 10-bit
mantissas) is a fact shown beside the verdict, not a hack class, and ktui verify does not count the run
as failed (issue 26: L1 P2 and P17 were "suspicious: reduced_precision" on the H200, KernelBench had
recorded them correct). TF32 the kernel chose (a cast, ``input_precision="tf32"``, a global flag) stays
a class."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

from ktui.repro.recorded import recorded_for
from ktui.repro.verdict import SUSPICIOUS, compare
from ktui.trace import load
from ktui.trace.findings import run_findings

HERE = Path(__file__).resolve().parent / "fixtures"
TRITON = HERE / "real" / "kernelbench_triton_runs" / "triton_runs" / "level1_triton" / "kernels" / "level1_problem1_triton.py"
# the probe's words on KernelBench L1 P2 (the H200 run of session 35, verify_h200.json)
DETAIL = ("reduced precision: on input 2 rounded to fp16/TF32 (toward zero) its output moves 0x as much as on the "
          "same move the other way (8,388,608 outputs); its error vs float64 is 2.1e-02, 4,000.0x the float32 "
          "reference's own (5.2e-06; largest |output| 180)")


REF = next((HERE / "real" / "kernelbench_triton_runs" / "KernelBench" / "level1").glob("1_*.py"))


def _static(code: str):
    return run_findings([SimpleNamespace(number=1, code=code, first_turn=1, attachment=None)], REF.read_text())


def _judged(code: str):
    run = load(str(HERE / "repro" / "cpu_run.jsonl"))
    rec = recorded_for(run, run.kernel("v3"))
    res = copy.deepcopy(json.loads((HERE / "repro" / "panel_result_cpu_run_v3.json").read_text())["result"])
    res["checks"] = [c for c in res.get("checks") or [] if c.get("ok") is not False] + [
        {"name": "reduced_precision", "ok": False, "detail": DETAIL, "evidence": "fp16/TF32"}]
    res["findings"] = []
    return res, compare(rec, res, _static(code))


def test_tf32_by_tritons_default_is_a_fact_not_a_class():
    code = TRITON.read_text()
    assert "tl.dot(a, b)" in code
    res, comp = _judged(code)
    assert "reduced_precision" not in comp.classes and comp.verdict != SUSPICIOUS, (comp.verdict, comp.classes)
    facts = [f for f in comp.findings if f.cls == "reduced_precision"]
    assert facts and facts[0].severity == "info" and "Triton's default" in facts[0].title and "TF32" in facts[0].reason


def test_verify_does_not_count_it_as_failed():
    from ktui.repro.verify.plan import RunRow
    from ktui.repro.verify.results import Verified
    from ktui.trace.model import PASSED

    res, comp = _judged(TRITON.read_text())
    row = RunRow(path="t", real="t", model="m", problem="p", version="v3", final=True, recorded_outcome=PASSED,
                 recorded_speedup=1.0)
    assert Verified(row, res, comp).outcome == PASSED
    res2, comp2 = _judged(TRITON.read_text().replace("tl.dot(a, b)", "tl.dot(a, b, input_precision='tf32')"))
    assert Verified(row, res2, comp2).outcome != PASSED


def test_tf32_the_kernel_chose_stays_a_class():
    code = TRITON.read_text()
    for chosen in (code.replace("tl.dot(a, b)", "tl.dot(a, b, input_precision='tf32')"),  # asked for
                   code.replace("import triton\n", "import triton\ntorch.backends.cuda.matmul.allow_tf32 = True\n", 1),
                   code.replace("tl.dot(a, b)", "tl.dot(a.to(tl.float16), b.to(tl.float16))")):
        _res, comp = _judged(chosen)
        assert "reduced_precision" in comp.classes and comp.verdict == SUSPICIOUS, (chosen[:0], comp.classes)
