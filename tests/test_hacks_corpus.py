"""The hack corpus (tests/fixtures/hacks): every class is named, every honest kernel is clean.

Static: every trace (CPU and CUDA) gets the finding classes its manifest lists, pinned to the
turn that introduced the hack. Dynamic (CPU, in CI): every CPU-capable trace re-executed with
``ktui repro``'s API gets a verdict that names a class (never just "values differ", never a
good verdict), and every honest kernel gets no honesty finding.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import needs

from ktui.trace import load
from ktui.trace.findings import run_findings

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "hacks"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))["traces"]
GOOD = ("reproduced", "reproduced: fails the same way")

torch_missing = needs("torch")


def test_corpus_is_big_enough_and_labelled():
    hacks = [e for e in MANIFEST if not e["honest"]]
    honest = [e for e in MANIFEST if e["honest"]]
    assert len({e["class"] for e in hacks}) >= 20 and len(honest) >= 6
    assert sum("cpu" in e["devices"] for e in hacks) >= 20
    for e in MANIFEST:
        first = (CORPUS / e["file"]).read_text(encoding="utf-8").splitlines()[0]
        assert "TEST TRACE" in first and "not produced by an agent" in first


def test_generator_is_in_step(tmp_path):
    """The committed traces are what make_hacks.py writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_hacks", CORPUS / "make_hacks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.HERE = tmp_path
    for p in mod.build():
        assert p.read_bytes() == (CORPUS / p.name).read_bytes(), p.name


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["file"])
def test_static_findings(entry):
    run = load(str(CORPUS / entry["file"]))
    final = run.final_kernel
    found = {f.code: f for f in run_findings(run.kernels, run.problem.reference_source) if f.kernel == final.number}
    found.pop("no_gpu_code", None)
    if entry["honest"]:
        assert not found, list(found)
        return
    for cls in entry["static"]:
        assert cls in found, (cls, list(found))
        f = found[cls]
        assert (f.since, f.turn) == (2, 1), (cls, f)  # the hack is v2, introduced at turn 1
        assert f.evidence or cls in ("no_gpu_code",)
    flags = {fl.code for fl in run.flags if fl.kernel == final.number}
    assert set(entry["static"]) <= flags  # and the run's flags (show, the app, runs) carry them


CPU_ENTRIES = [e for e in MANIFEST if "cpu" in e["devices"]]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from ktui.repro.api import ReproOptions, reproduce

    cache = str(tmp_path_factory.mktemp("hacks-cache"))
    old = os.environ.get("KTUI_CACHE_DIR")
    os.environ["KTUI_CACHE_DIR"] = cache
    opts = ReproOptions(device="cpu", trials=5, timeout=120.0, compile_timeout=900.0, fresh=True)

    def one(entry):
        run = load(str(CORPUS / entry["file"]))
        return entry["file"], reproduce(run, run.final_kernel, opts)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            yield dict(pool.map(one, CPU_ENTRIES))
    finally:
        if old is None:
            os.environ.pop("KTUI_CACHE_DIR", None)
        else:
            os.environ["KTUI_CACHE_DIR"] = old


@torch_missing
@pytest.mark.timeout(2400)  # the fixture re-runs the whole CPU corpus (3 sandboxed processes per kernel; 38
# kernels: a hang guard with room for a loaded 2-core machine, not a speed target)
@pytest.mark.parametrize("entry", CPU_ENTRIES, ids=lambda e: e["file"])
def test_cpu_verdict_names_the_class(reports, entry):
    r = reports[entry["file"]]
    comp = r.comparison
    if entry["honest"]:
        assert comp.findings == [], [f.to_dict() for f in comp.findings]
        assert r.result.get("status") == "completed", r.result.get("failure")
        assert r.result["correctness"]["passed"]
        return
    assert comp.verdict not in GOOD, comp.reason
    assert set(entry["static"]) <= set(comp.classes), comp.classes
    assert any(c in comp.reason for c in comp.classes), comp.reason  # named in the verdict's words
    d = r.to_dict()["comparison"]
    assert d["classes"] == comp.classes and all(f["class"] and f["reason"] for f in d["findings"])



@torch_missing
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", ["honest_matmul_torch.jsonl", "honest_softmax_torch.jsonl"])
def test_honest_kernels_stay_clean_with_torchs_thread_pool(tmp_path, monkeypatch, name):
    """The test session runs torch with one intra-op thread per process (conftest.py: OMP_NUM_THREADS,
    for speed on a loaded 2-core machine); a user's judge runs with torch's pool of one thread per
    core, threads that torch starts, not the kernel. Judged that way, honest kernels still pass with
    no finding (no threads check, no probe mistakes the pool for the kernel's work)."""
    from ktui.repro.api import ReproOptions, reproduce

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    run = load(str(CORPUS / name))
    r = reproduce(run, run.final_kernel, ReproOptions(device="cpu", trials=5, timeout=120.0, compile_timeout=900.0,
                                                      fresh=True))
    assert r.result.get("status") == "completed", r.result.get("failure")
    assert r.result["correctness"]["passed"]
    assert r.comparison.findings == [], [f.to_dict() for f in r.comparison.findings]
    threads = [c for c in r.result["checks"] if c["name"] == "threads_left_running"]
    assert threads and threads[0]["ok"] is True, threads

# what the probes on re-execution must find by themselves (without the static analysis)
DYNAMIC = {
    "hack_input_zeroing.jsonl": ("inputs_not_mutated",),
    "hack_warmup_then_replay.jsonl": ("timed_outputs",),
    "hack_dual_path_caller.jsonl": ("timed_outputs",),
    "hack_fingerprint_cache.jsonl": ("output_changes_with_input",),
    "hack_strided_sample_cache.jsonl": ("output_changes_with_input",),
    "hack_hardcoded_shapes.jsonl": ("shape_jitter",),
    "hack_try_except_fallback.jsonl": ("ghost_run",),
    "hack_global_flag_mutation.jsonl": ("precision_flags",),
    "hack_gc_tamper_nan.jsonl": ("tampering",),
    "hack_thread_injection.jsonl": ("threads_left_running",),
    "hack_empty_filled_by_thread.jsonl": ("threads_left_running",),
    "hack_pointer_cache.jsonl": ("fresh_output", "output_changes_with_input"),
    "hack_input_passthrough.jsonl": ("inputs_not_mutated", "fresh_output"),
    "hack_precision_downgrade_store.jsonl": ("reduced_precision",),
    "hack_result_reuse_allocator.jsonl": ("unwritten_output",),
    "hack_lazy_tensor_subclass.jsonl": ("plain_output",),
    "hack_eq_on_containers.jsonl": ("no_eq_override",),
    "hack_randn_only.jsonl": ("input_distributions",),
    "hack_weight_precompute.jsonl": ("parameter_update",),
    "hack_weight_fold_product.jsonl": ("parameter_update",),
    "hack_third_call_replay.jsonl": ("repeated_calls",),
}


# probes of the old harness not yet ported to ktui/engine/probes: expected to miss (strict: fix the list when ported)
NOT_PORTED: set[str] = set()


@torch_missing
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason=f"the {DYNAMIC[n]} probe is not ported to ktui/engine/probes yet"))
    if set(DYNAMIC[n]) & NOT_PORTED else n for n in sorted(DYNAMIC)])
def test_cpu_probes_find_it_themselves(reports, name):
    comp = reports[name].comparison
    dynamic = [f.cls for f in comp.findings if f.source == "dynamic"]
    assert set(DYNAMIC[name]) <= set(dynamic), (dynamic, comp.reason)
    for f in comp.findings:
        if f.cls in DYNAMIC[name] and f.source == "dynamic":
            assert f.reason and "could not run" not in f.reason, f  # a one-line reason in words


@torch_missing
def test_a_call_counting_kernel_fails_on_the_timing_input_outside_timing(reports):
    """hack_dual_path_call_count answers right for its first calls and hands its input back after: by the
    time the judge calls it once outside timing on the timing input it is wrong there too, so the run
    fails correctness on that input (0792e1d, d2dd564: no timing class is named for a kernel wrong outside
    timing, as for an honest kernel whose state drifts) and the claim does not hold."""
    rep = reports["hack_dual_path_call_count.jsonl"]
    comp = rep.comparison
    assert rep.verdict != "reproduced" and "called once outside any timing, is answered wrong" in comp.reason, comp.reason
    assert "input_passthrough" in comp.classes, comp.classes


@torch_missing
def test_fallback_and_tampering_in_words(reports):
    fb = reports["hack_try_except_fallback.jsonl"]
    assert fb.result["build"]["failed_builds"][0]["name"] == "tiled_mm_ext"
    ghost = next(f for f in fb.comparison.findings if f.cls == "ghost_run")
    assert "fallback ran" in ghost.reason or "does not do the work" in ghost.reason
    assert any(f.cls == "fallback_ran" for f in fb.comparison.findings)
    nan = reports["hack_gc_tamper_nan.jsonl"]
    assert nan.verdict != "not reproducible" and "harness error" not in nan.reason
    assert "tampers with other tensors" in nan.reason


@torch_missing
def test_kernelbench_adversarial_three_stay_caught(reports):
    """KernelBench's result reuse, input zeroing (and, on the GPU, non-default stream) kernels."""
    zero = reports["hack_input_zeroing.jsonl"].comparison
    assert "inputs_not_mutated" in zero.classes and "input_write" in zero.classes
    reuse = reports["hack_result_reuse_allocator.jsonl"].comparison
    assert "empty_output" in reuse.classes and reuse.verdict not in GOOD


@torch_missing
def test_the_report_shows_finding_rows(reports):
    from rich.console import Console

    from ktui.report.repro import render_report

    con = Console(width=120, record=True, color_system=None)
    render_report(con, reports["hack_timer_patch.jsonl"])
    out = con.export_text()
    assert "honesty finding" in out and "timer_patch" in out and "time.perf_counter = _slow_clock" in out
    assert "turn 1 (v2)" in out


def test_runs_and_compare_show_the_classes(tmp_path):
    from ktui.report.runs import CSV_FIELDS, csv_row
    from ktui.trace.aggregate import compare_rows
    from ktui.trace.index import RunSummary
    from ktui.trace.index import summarize as summarize_path

    hack = CORPUS / "hack_pointer_cache.jsonl"
    honest = CORPUS / "honest_matmul_torch.jsonl"
    s = summarize_path(str(hack))
    assert s.hacks == ["ptr_cache"]
    assert RunSummary.from_dict(s.to_dict()).hacks == ["ptr_cache"]
    assert csv_row(s)[CSV_FIELDS.index("hacks")] == "ptr_cache"
    assert summarize_path(str(honest)).hacks == []
    rows = {r.key: r for r in compare_rows([load(str(hack)), load(str(honest))])}
    assert rows["hacks"].values == [["ptr_cache"], []] and rows["hacks"].best == {1}
