"""A CUDA extension whose source catches a failed build and carries on (static ``build_fallback``) is
honest where the judge saw it do the work: the extension built, and the ghost run (its functions made to
fail or do nothing) made the output wrong. CUDA-L1's L1 P48 (deepreinforce-ai/CUDA-L1 @ 4ac1f22, MIT,
tests/fixtures/real/cudal1/gpu_corpus.json) was "suspicious: build_fallback" on the H100 on the static
finding alone. A failed build, or a ghost run that sees the fallback, keeps the class."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ktui.repro.recorded import recorded_for
from ktui.repro.verdict import SUSPICIOUS, compare
from ktui.trace import load
from ktui.trace.findings import run_findings

HERE = Path(__file__).resolve().parent / "fixtures"
CORPUS = json.loads((HERE / "real" / "cudal1" / "gpu_corpus.json").read_text())["kernels"]
P48 = next(k for k in CORPUS if k["id"] == "cudal1_L1P48")


def _judged(checks_ok: bool = True, failed_build: bool = False, fallback_ran: bool = False):
    static = run_findings([SimpleNamespace(number=1, code=P48["custom_code"], first_turn=1, attachment=None)],
                          P48["ref_code"])
    assert any(f.code == "build_fallback" for f in static), [f.code for f in static]
    run = load(str(HERE / "repro" / "cpu_run.jsonl"))
    rec = recorded_for(run, run.kernel("v3"))
    res = copy.deepcopy(json.loads((HERE / "repro" / "panel_result_cpu_run_v3.json").read_text())["result"])
    res["findings"] = [{"class": "fallback_ran", "reason": "its fallback ran"}] if fallback_ran else []
    res["checks"] = [c for c in res["checks"] if c.get("ok") is not False]
    for c in res["checks"]:
        if c.get("name") == "ghost_run":
            c["ok"] = checks_ok
            c["detail"] = "the output goes wrong without the extension" if checks_ok else "does not do the work"
    if failed_build:
        res["build"]["failed_builds"] = [{"name": "ext", "error": "nvcc failed"}]
    return compare(rec, res, static)


def test_an_extension_seen_doing_the_work_makes_build_fallback_a_fact():
    comp = _judged()
    assert comp.verdict != SUSPICIOUS and "build_fallback" not in comp.classes, (comp.verdict, comp.classes)
    facts = [f for f in comp.findings if f.cls == "build_fallback"]
    assert facts and facts[0].severity == "info" and "ghost run saw it do the work" in facts[0].reason


@pytest.mark.parametrize("case", [dict(checks_ok=False), dict(failed_build=True), dict(fallback_ran=True)])
def test_without_that_evidence_the_class_stays(case):
    comp = _judged(**case)
    # suspicious, or worse (a failed build: its fallback ran, the claim is not reproducible)
    assert comp.verdict in (SUSPICIOUS, "not reproducible") and "build_fallback" in comp.classes, (
        case, comp.verdict, comp.classes)
