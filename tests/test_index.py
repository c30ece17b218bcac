"""The sweep index (ktui.trace.index): discovery, the skim summary, records, the cache, bad trees.

``make_sweep`` builds a small sweep in a temporary directory from symlinks and copies of the
fixture traces, two hand-written traces and hand-written ``runs.jsonl`` records; the aggregate
tests (test_runs_aggregate.py) count on it too.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, SEED_TRACE

import ktui.trace.index as index_mod
from ktui.trace import load
from ktui.trace.index import RunSummary, SweepIndex, TraceFile, _progress, discover, scan, summarize

TEST_TRACE = ROOT / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"
FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.jsonl")) if FIXTURES.is_dir() else []
needs_fixtures = pytest.mark.skipif(not FIXTURE_FILES, reason="../shared/fixtures not present")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


def _ev(tick: int, ts: int, actor: str | None, payload: dict) -> str:
    return json.dumps({"tick": tick, "ts_ms": ts, "actor": actor, "message_id": None, "payload": payload},
                      separators=(",", ":"))


def mini_trace(model: str, *, passed: bool, speedup: float, tokens_in: int, tokens_out: int,
               wall_ms: int, t0: int = 1_780_000_000_000, problem_id: int = 27,
               name: str = "27_permutation_all_to_all.py", tag: str = "") -> str:
    """A hand-written V1 popcorn run: one turn, one submit_kernel, a grader note.
    ``tag`` goes into the kernel's code (distinct kernels have distinct sha1s)."""
    a = "kernel_author"
    code = ("import torch\nfrom torch.utils.cpp_extension import load_inline\n# hand-written test kernel\n"
            "SRC = r\"\"\"\n__global__ void relu_k(const float* x, float* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n"
            "torch::Tensor relu(torch::Tensor x) {\n    auto y = torch::empty_like(x);\n    int n = x.numel();\n"
            "    relu_k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n    return y;\n}\n"
            "\"\"\"\nmod = load_inline(name=\"relu_ext\", cpp_sources=\"torch::Tensor relu(torch::Tensor x);\", "
            "cuda_sources=SRC, functions=[\"relu\"])\n\n\nclass ModelNew(torch.nn.Module):\n"
            "    def forward(self, x):\n        return mod.relu(x)\n")
    if tag:
        code += f"# {tag}\n"
    spawn = {"kind": "agent_spawned", "actor_id": a, "model": model, "tools": ["submit_kernel"],
             "system_prompt": "test", "params": {"persona": "normal"}}
    result = {"ok": passed, "tool": "submit_kernel",
              "summary": f"submit_kernel {'PASSED' if passed else 'FAILED'}: hand-written test result",
              "runtime_us": 0.01, "ref_runtime_us": round(0.01 * speedup, 6), "speedup": speedup}
    diff = {"field": "kernel_submissions", "old": None,
            "new": {"kernel_hash": "0" * 40, "compiled": True, "correctness": passed, "runtime_us": 0.01,
                    "ref_runtime_us": round(0.01 * speedup, 6), "speedup": speedup}}
    grader = {"kind": "grader", "scenario": "popcorn.single_problem",
              "scores": {"submitted": 1.0, "submission_passed": 1.0 if passed else 0.0}}
    lines = [
        _ev(0, t0, None, {"kind": "system", "note": json.dumps(spawn)}),
        _ev(1, t0 + 5, a, {"kind": "tool_call", "id": "f1", "name": "fetch_problem",
                           "args": {"level": 1, "problem_id": problem_id}, "seed": True}),
        _ev(1, t0 + 6, a, {"kind": "tool_result", "id": "f1", "name": "fetch_problem",
                           "result": {"ok": True, "level": 1, "problem_id": problem_id,
                                      "name": name}, "seed": True}),
        _ev(2, t0 + 10, a, {"kind": "cost", "unit": "tokens_in", "amount": float(tokens_in),
                            "running_total": float(tokens_in)}),
        _ev(2, t0 + 10, a, {"kind": "cost", "unit": "tokens_out", "amount": float(tokens_out),
                            "running_total": float(tokens_out)}),
        _ev(3, t0 + 10, a, {"kind": "tool_call", "id": "c1", "name": "submit_kernel",
                            "args": {"kernel_code": code}, "seed": False}),
        _ev(4, t0 + wall_ms - 2, a, {"kind": "tool_result", "id": "c1", "name": "submit_kernel",
                                     "result": result, "is_error": False, "seed": False}),
        _ev(4, t0 + wall_ms - 2, a, {"kind": "state_diff", "diff": diff}),
        _ev(5, t0 + wall_ms, None, {"kind": "system", "note": "grader: " + json.dumps(grader)}),
    ]
    return "\n".join(lines) + "\n"


def make_sweep(base: Path) -> Path:
    """A sweep tree: 9 distinct runs, plus links, a copy, records, a loop and a broken link."""
    sw = base / "sweep"
    sw.mkdir()
    runner = [
        {"slug": "l1_p27_grok-4.3_normal", "status": "ok", "returncode": 0, "model": "grok-4.3",
         "persona": "normal-from-record", "level": 1, "problem_id": 27,
         "trace_path": "traces/sweep/l1_p27_grok-4.3_normal/popcorn.single_problem.jsonl"},
        {"slug": "l1_p28_grok-4.3_normal", "status": "failed", "returncode": 1, "model": "grok-4.3",
         "persona": "normal", "stderr_tail": ["boom"],
         "trace_path": "traces/sweep/l1_p28_grok-4.3_normal/popcorn.single_problem.jsonl"},
        {"slug": "l1_p29_grok-4.3_normal", "status": "skipped", "reason": "exists",
         "trace_path": "traces/sweep/l1_p29_grok-4.3_normal/popcorn.single_problem.jsonl"},
    ]
    (sw / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in runner) + "\n")
    # cell 1: the seed run, <uuid>/trace.jsonl + the flat symlink ensemble writes
    c1 = sw / "l1_p27_grok-4.3_normal"
    (c1 / "0191aaaa").mkdir(parents=True)
    (c1 / "0191aaaa" / "trace.jsonl").symlink_to(SEED_TRACE)
    (c1 / "popcorn_single_problem.jsonl").symlink_to(Path("0191aaaa") / "trace.jsonl")
    (c1 / "runs.jsonl").write_text(json.dumps({"run_id": "0191aaaa", "scenario": "popcorn.single_problem",
                                               "trace_path": "0191aaaa/trace.jsonl"}) + "\n")
    # cell 2: the compare test trace, with a *copy* as the flat file
    c2 = sw / "l1_p27_test-agent-b_terse"
    (c2 / "0191bbbb").mkdir(parents=True)
    (c2 / "0191bbbb" / "trace.jsonl").symlink_to(TEST_TRACE)
    shutil.copyfile(TEST_TRACE, c2 / "popcorn_single_problem.jsonl")
    # the fixtures
    for rel, dest in [("ensemble/v0_popcorn_mock_single_problem.jsonl", "l1_p19_claude_normal/trace.jsonl"),
                      ("ktbench/v1_softmax_a100_to_h100.jsonl", "ktbench/softmax/trace.jsonl"),
                      ("ktbench/v1_backend_error_swiglu.jsonl", "ktbench/swiglu/trace.jsonl"),
                      ("ktbench/v2_eval_chzr6_marker_kernel.jsonl", "ktbench/v2_chzr6/trace.jsonl"),
                      ("ktbench/v3_gpt55_bf16_gemm_interleaved.jsonl", "ktbench/v3_bf16/trace.jsonl")]:
        d = sw / dest
        d.parent.mkdir(parents=True, exist_ok=True)
        d.symlink_to(FIXTURES / rel)
    # hand-written runs
    hand = sw / "hand"
    hand.mkdir()
    (hand / "grok_fast.jsonl").write_text(mini_trace("grok-4.3", passed=True, speedup=1.6, tokens_in=800,
                                                     tokens_out=200, wall_ms=10_000))
    (hand / "grok_fail.jsonl").write_text(mini_trace("grok-4.3", passed=False, speedup=0.5, tokens_in=1500,
                                                     tokens_out=500, wall_ms=20_000, t0=1_780_000_100_000))
    # trouble: a loop back to the sweep root, a broken link, a non-trace file
    (sw / "ktbench" / "loop").symlink_to(Path(".."))
    (sw / "broken.jsonl").symlink_to(base / "does-not-exist.jsonl")
    (sw / "notes.txt").write_text("not a trace\n")
    return sw


SWEEP_REAL = {  # display path (relative to the sweep) -> the file it really is
    "hand/grok_fail.jsonl": None,
    "hand/grok_fast.jsonl": None,
    "ktbench/softmax/trace.jsonl": "ktbench/v1_softmax_a100_to_h100.jsonl",
    "ktbench/swiglu/trace.jsonl": "ktbench/v1_backend_error_swiglu.jsonl",
    "ktbench/v2_chzr6/trace.jsonl": "ktbench/v2_eval_chzr6_marker_kernel.jsonl",
    "ktbench/v3_bf16/trace.jsonl": "ktbench/v3_gpt55_bf16_gemm_interleaved.jsonl",
    "l1_p19_claude_normal/trace.jsonl": "ensemble/v0_popcorn_mock_single_problem.jsonl",
    "l1_p27_grok-4.3_normal/0191aaaa/trace.jsonl": "seed",
    "l1_p27_test-agent-b_terse/0191bbbb/trace.jsonl": "test",
}


# ---- the fixtures directory (the acceptance check) ----------------------------------------------
@needs_fixtures
def test_fixtures_each_trace_once():
    runs, issues = scan(FIXTURES, use_cache=False)
    reals = sorted(r.real for r in runs)
    assert reals == sorted(os.path.realpath(p) for p in FIXTURE_FILES)
    assert not any(os.path.basename(r.path) == "runs.jsonl" for r in runs)
    assert all(r.model for r in runs)
    assert all(r.outcome in ("passed", "failed", "incomplete") for r in runs)
    assert not [i for i in issues if i.severity == "error"]


@needs_fixtures
@pytest.mark.parametrize("path", FIXTURE_FILES + [SEED_TRACE, TEST_TRACE], ids=lambda p: p.name)
def test_skim_agrees_with_the_full_reader(path):
    """The index never loads a whole run, yet its summary matches the reader's
    (every field, on these and hostile files: tests/test_index_skim_equivalence.py)."""
    s = summarize(str(path))
    r = load(path)
    p = r.problem
    title = p.title if (p.level is not None or p.problem_id is not None or p.name) else ""
    assert s.variant == r.variant
    assert s.problem == title
    assert (s.model, s.persona, s.scenario) == (r.model, r.persona, r.scenario)
    assert s.outcome == r.outcome
    assert s.terminal == r.terminal_state
    assert s.turns == len(r.turns)
    assert s.max_turns == r.max_turns
    assert s.tool_calls == len(r.agent_calls)
    assert (s.tokens or 0) == r.tokens_total
    assert (s.started_ms, s.ended_ms) == (r.started_ms, r.ended_ms)
    m = r.metrics
    assert s.speedup == (m.speedup if m else None)
    assert s.runtime_us == (m.runtime_us if m else None)
    assert not s.problems
    # the flags of the final kernel (submitted, or the V2/V3 final answer) and the metric flags
    final = r.final_kernel
    want = {f.code for f in r.flags if f.metric or (final is not None and f.kernel == final.number)}
    assert want <= set(s.flags)
    # how far the run got (the runs charts): the same from the skim as from the full run
    full = RunSummary(path=str(path))
    _progress(r, full)
    got = (s.compiled, s.first_correct_turn, s.tokens_to_correct, s.wall_ms_to_correct)
    assert got == (full.compiled, full.first_correct_turn, full.tokens_to_correct, full.wall_ms_to_correct)
    assert s.final_sha1 in (full.final_sha1, None)


@needs_fixtures
def test_marker_kernel_is_flagged_in_the_index():
    s = summarize(str(FIXTURES / "ktbench" / "v2_eval_chzr6_marker_kernel.jsonl"))
    assert {"dummy_kernel", "torch_fallback"} <= set(s.flags)


def test_seed_summary_by_hand():
    s = summarize(str(SEED_TRACE))
    assert s.problem == "L1 P27 27_permutation_all_to_all.py"
    assert s.problem_key == "L1/P27"
    assert (s.model, s.persona, s.outcome, s.terminal) == ("grok-4.3", "normal", "passed", "grader")
    assert (s.turns, s.max_turns, s.tool_calls, s.tokens) == (9, 12, 9, 34544)
    assert s.wall_ms == 1_146_300
    assert s.speedup == pytest.approx(1.2308)
    assert s.runtime_us == pytest.approx(31.2)  # recorded 0.0312 "us" = ms
    assert "unit_ms_as_us" in s.flags


# ---- a sweep tree -----------------------------------------------------------------------------------
@needs_fixtures
def test_sweep_lists_each_run_once_and_reports_trouble(tmp_path):
    sw = make_sweep(tmp_path)
    idx = SweepIndex(sw, use_cache=False)
    runs = list(idx.summaries())
    assert sorted(r.path for r in runs) == sorted(SWEEP_REAL)
    assert len({r.real for r in runs}) == len(runs)
    by = {r.path: r for r in runs}
    assert by["l1_p27_grok-4.3_normal/0191aaaa/trace.jsonl"].real == os.path.realpath(SEED_TRACE)
    msgs = [str(i) for i in idx.issues]
    # the copy of the test trace is a duplicate, listed once
    assert any("l1_p27_test-agent-b_terse/popcorn_single_problem.jsonl" in m and "same content" in m for m in msgs)
    assert idx.duplicates == 1
    # the loop is not followed again, the broken link is reported
    assert any("ktbench/loop" in m and "already scanned" in m for m in msgs)
    assert any("broken.jsonl" in m and "broken symlink" in m for m in msgs)
    # records: the runner's persona overrides the spawn note; cells without a trace are reported
    seed = by["l1_p27_grok-4.3_normal/0191aaaa/trace.jsonl"]
    assert seed.persona == "normal-from-record"
    assert seed.record == "ok"
    assert any("l1_p28_grok-4.3_normal" in m and "failed" in m and "no trace" in m for m in msgs)
    assert any("l1_p29_grok-4.3_normal" in m and "skipped" in m for m in msgs)
    # hand-written runs
    fast, fail = by["hand/grok_fast.jsonl"], by["hand/grok_fail.jsonl"]
    assert (fast.outcome, fast.speedup, fast.tokens, fast.wall_ms) == ("passed", 1.6, 1000, 10_000)
    assert (fail.outcome, fail.speedup, fail.tokens, fail.wall_ms) == ("failed", 0.5, 2000, 20_000)
    assert fast.problem == "L1 P27 27_permutation_all_to_all.py"


@needs_fixtures
def test_cache_makes_the_second_scan_instant_and_notices_changes(tmp_path):
    sw = make_sweep(tmp_path)
    first = list(SweepIndex(sw).summaries())
    idx2 = SweepIndex(sw)
    second = list(idx2.summaries())
    assert idx2.cache_hits == len(second) + idx2.duplicates
    assert [s.to_dict() for s in first] == [s.to_dict() for s in second]
    cache_files = list((tmp_path / "cache").glob("runs-index-*.json"))
    assert len(cache_files) == 1
    # a trace that grows is read again
    f = sw / "hand" / "grok_fast.jsonl"
    with open(f, "a") as fh:
        fh.write(_ev(9, 1_780_000_020_000, None, {"kind": "system", "note": "late note"}) + "\n")
    idx3 = SweepIndex(sw)
    third = {s.path: s for s in idx3.summaries()}
    assert idx3.cache_hits == len(third) + idx3.duplicates - 1
    assert third["hand/grok_fast.jsonl"].ended_ms == 1_780_000_020_000
    # --no-cache neither reads nor writes
    for c in cache_files:
        c.unlink()
    idx4 = SweepIndex(sw, use_cache=False)
    list(idx4.summaries())
    assert idx4.cache_hits == 0
    assert not list((tmp_path / "cache").glob("runs-index-*.json"))


def test_a_scan_stopped_early_keeps_the_cache_of_the_files_it_did_not_reach(tmp_path, monkeypatch):
    """Quitting ``ktui runs`` after the first screen (the scan's generator closed mid-walk) must not
    throw away the cached rows of the files the walk had not reached yet."""
    sw = make_sweep(tmp_path)
    n = len(list(SweepIndex(sw).summaries()))
    monkeypatch.setattr(SweepIndex, "WALK_BURST", 3)  # the walk is still going after the first row
    for new_file in (False, True):
        if new_file:  # a file the stopped scan reads first (a new row to keep) and the rest unreached
            (sw / "aaa").mkdir()  # the walk's first directory
            (sw / "aaa" / "first.jsonl").write_text(mini_trace("m-new", passed=True, speedup=1.5, tokens_in=1,
                                                               tokens_out=1, wall_ms=1000, tag="new"))
        cache_file = next((tmp_path / "cache").glob("runs-index-*.json"))
        before = cache_file.stat().st_mtime_ns
        gen = SweepIndex(sw).summaries()
        first = next(gen)
        gen.close()
        assert first.path == ("aaa/first.jsonl" if new_file else first.path)
        if not new_file:  # nothing new: the cache file is not written again
            assert cache_file.stat().st_mtime_ns == before
        idx = SweepIndex(sw)
        again = list(idx.summaries())
        assert len(again) == n + new_file
        assert idx.cache_hits == len(again) + idx.duplicates, new_file


def test_a_directory_inside_a_scanned_sweep_reads_its_cache(tmp_path):
    """``ktui runs sweep/cell`` after ``ktui runs sweep``: every row from the sweep's cache, and the
    same rows as a scan without the cache (the cell's records, not the sweep's, applied to them)."""
    sw = make_sweep(tmp_path)
    list(SweepIndex(sw).summaries())
    for sub in ("l1_p27_grok-4.3_normal", "hand", "ktbench"):
        alone = [s.to_dict() for s in SweepIndex(sw / sub, use_cache=False).summaries()]
        idx = SweepIndex(sw / sub)
        assert [s.to_dict() for s in idx.summaries()] == alone, sub
        assert alone and idx.cache_hits == idx.total, sub
    seed = SweepIndex(sw / "l1_p27_grok-4.3_normal")
    rows = list(seed.summaries())
    assert seed.cache_hits == seed.total and rows[0].persona != "normal-from-record"  # the sweep's record not read


def test_the_records_are_applied_at_every_read(tmp_path):
    """A sweep record that changes (the harness rewrites runs.jsonl) changes the rows it describes,
    and the traces are not read again for it: the cache keeps rows before the records."""
    sw = make_sweep(tmp_path)
    path = "l1_p27_grok-4.3_normal/0191aaaa/trace.jsonl"
    first = {s.path: s for s in SweepIndex(sw).summaries()}
    assert first[path].persona == "normal-from-record"
    rows = [json.loads(x) for x in (sw / "runs.jsonl").read_text().splitlines()]
    rows[0]["persona"] = "edited"
    rows[0]["status"] = "failed"
    (sw / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    idx = SweepIndex(sw)
    again = {s.path: s for s in idx.summaries()}
    assert idx.cache_hits == idx.total
    assert (again[path].persona, again[path].record) == ("edited", "failed") and "runner_failed" in again[path].flags
    assert {k: v.to_dict() for k, v in again.items()} == {
        k: v.to_dict() for k, v in ((s.path, s) for s in SweepIndex(sw, use_cache=False).summaries())}


def test_the_cache_of_another_ktui_version_is_not_read(tmp_path, monkeypatch):
    import ktui.trace.index.cache as cache_mod

    sw = make_sweep(tmp_path)
    list(SweepIndex(sw).summaries())
    monkeypatch.setattr(cache_mod, "__version__", "0.0.0+another")
    idx = SweepIndex(sw)
    list(idx.summaries())
    assert idx.cache_hits == 0


def test_the_cache_written_by_other_reading_code_is_not_read(tmp_path, monkeypatch):
    """An importer changed without a SCHEMA bump must not keep serving the rows of the old code."""
    import ktui.trace.index.cache as cache_mod

    sw = make_sweep(tmp_path)
    list(SweepIndex(sw).summaries())
    again = SweepIndex(sw)
    list(again.summaries())
    assert again.cache_hits > 0
    monkeypatch.setattr(cache_mod, "reader_fingerprint", lambda: "another-reader")
    idx = SweepIndex(sw)
    list(idx.summaries())
    assert idx.cache_hits == 0


def test_the_reader_fingerprint_covers_every_module_of_the_trace_package(tmp_path, monkeypatch):
    import ktui.trace.index.cache as cache_mod

    pkg = Path(cache_mod.__file__).resolve().parents[1]
    copy = tmp_path / "trace"
    shutil.copytree(pkg, copy, ignore=shutil.ignore_patterns("__pycache__"))
    fake = copy / "index" / "cache.py"
    monkeypatch.setattr(cache_mod, "__file__", str(fake))
    cache_mod.reader_fingerprint.cache_clear()
    try:
        a = cache_mod.reader_fingerprint()
        cache_mod.reader_fingerprint.cache_clear()
        assert cache_mod.reader_fingerprint() == a  # stable
        imp = copy / "importers" / "claude_code.py"
        imp.write_text(imp.read_text() + "\n# changed\n")
        cache_mod.reader_fingerprint.cache_clear()
        assert cache_mod.reader_fingerprint() != a
    finally:
        cache_mod.reader_fingerprint.cache_clear()


def test_cache_dir_unwritable_is_a_note(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.jsonl").write_text(mini_trace("m", passed=True, speedup=1.0, tokens_in=1,
                                                       tokens_out=1, wall_ms=100))
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("KTUI_CACHE_DIR", str(blocker / "sub"))
    idx = SweepIndex(tmp_path / "t")
    runs = list(idx.summaries())
    assert len(runs) == 1
    assert any("index cache" in i.message and i.severity == "info" for i in idx.issues)


# ---- bad directories and bad traces ---------------------------------------------------------------
def test_empty_directory(tmp_path):
    idx = SweepIndex(tmp_path, use_cache=False)
    assert list(idx.summaries()) == []
    assert any("no trace files" in i.message for i in idx.issues)


def test_missing_root(tmp_path):
    runs, issues = scan(tmp_path / "nope", use_cache=False)
    assert runs == []
    assert any("cannot read" in i.message for i in issues)


def test_deep_nesting_is_refused_whatever_the_recursion_limit(tmp_path):
    # Python's json nests as deep as the process's recursion limit allows; a test (or a library)
    # that raised it made a 5,000-deep array "a JSON array of 1 item(s)", and deeper could overflow
    # the C stack: the lenient path keeps orjson's depth limit
    import sys

    from ktui.trace.notes import JSONError, loads_lenient, too_deep

    d = tmp_path / "deep"
    d.mkdir()
    (d / "deep.jsonl").write_text("[" * 5000 + "NaN" + "]" * 5000 + "\n")
    (d / "deepobj.jsonl").write_text('{"a":' * 200_000 + "1" + "}" * 200_000 + "\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(JSONError):
            loads_lenient("[" * 5000 + "NaN" + "]" * 5000)
        idx = SweepIndex(d, use_cache=False)
        assert list(idx.summaries()) == []
        msgs = {i.path: i.message for i in idx.issues if i.severity == "error"}
        assert all("depth limit" in m and "no readable events" in m for m in msgs.values()), msgs
    finally:
        sys.setrecursionlimit(limit)
    # brackets inside strings are text, and a wide shallow document is not deep
    assert not too_deep('["' + "[" * 5000 + '"]')
    assert not too_deep("[" + "[1]," * 5000 + "[1]]")
    assert too_deep("[" * 1025 + "]" * 1025)
    assert loads_lenient('[{"x": NaN}]') == [{"x": None}]


def test_broken_traces_are_summarised_not_fatal(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    good = mini_trace("m", passed=True, speedup=1.5, tokens_in=10, tokens_out=5, wall_ms=1000)
    (d / "empty.jsonl").write_bytes(b"")
    (d / "garbage.jsonl").write_bytes(b"\x00\xff\xfe garbage\n{not json\n" + os.urandom(256).replace(b"\n", b"") + b"\n")
    (d / "invalid_utf8.jsonl").write_bytes(good.encode().replace(b"hand-written", b"hand-\xff\xfewritten"))
    (d / "truncated.jsonl").write_text(good[: len(good) - 40])  # still being written
    (d / "wrong_types.jsonl").write_text('{"tick":"x","ts_ms":"y","actor":5,"payload":{"kind":7}}\n[1,2,3]\n"s"\n')
    (d / "deep.jsonl").write_text("[" * 5000 + "]" * 5000 + "\n")
    (d / "longline.jsonl").write_text(_ev(0, 1, None, {"kind": "system", "note": "x" * 3_000_000}) + "\n" + good)
    idx = SweepIndex(d, use_cache=False)
    runs = {r.path: r for r in idx.summaries()}
    # files without a single event are not traces: one line each, not counted
    assert set(runs) == {"invalid_utf8.jsonl", "truncated.jsonl", "longline.jsonl"}
    not_traces = {i.path: i.message for i in idx.issues if i.severity == "error"}
    assert not_traces["empty.jsonl"] == "empty file: no events"
    for name in ("garbage.jsonl", "wrong_types.jsonl", "deep.jsonl"):
        assert not_traces[name].startswith("not a trace: no readable events"), name
    assert "line 1:" in not_traces["garbage.jsonl"]
    assert runs["truncated.jsonl"].incomplete and "still_writing" in runs["truncated.jsonl"].flags
    # the grader note was cut off: the outcome falls back to the last submission, as in the reader
    assert runs["truncated.jsonl"].outcome == load(d / "truncated.jsonl").outcome == "passed"
    assert runs["longline.jsonl"].outcome == "passed" and runs["longline.jsonl"].speedup == 1.5
    msgs = [str(i) for i in idx.issues]
    assert any(m.startswith("empty.jsonl: empty file") for m in msgs)


def test_unreadable_file_and_directory(tmp_path, monkeypatch):
    d = tmp_path / "t"
    (d / "locked").mkdir(parents=True)
    (d / "a.jsonl").write_text(mini_trace("m", passed=True, speedup=1.0, tokens_in=1, tokens_out=1, wall_ms=100))
    (d / "locked" / "b.jsonl").write_text("{}\n")
    real_open, real_scandir = index_mod.skim.open_regular, os.scandir

    def fake_open(path, *a, **kw):  # root can read anything: simulate permissions
        if str(path).endswith("a.jsonl"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **kw)

    def fake_scandir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr("ktui.trace.index.skim.open_regular", fake_open)
    monkeypatch.setattr("ktui.trace.index.os.scandir", fake_scandir)
    idx = SweepIndex(d, use_cache=False)
    runs = list(idx.summaries())
    assert [r.path for r in runs] == ["a.jsonl"]
    assert runs[0].flags == ["unreadable"] and "Permission denied" in runs[0].problems[0]
    msgs = [str(i) for i in idx.issues]
    assert any(m.startswith("locked: cannot list directory") for m in msgs)
    assert any(m.startswith("a.jsonl: cannot read") for m in msgs)


def test_file_vanishes_between_discovery_and_read(tmp_path):
    s = summarize(TraceFile("gone.jsonl", str(tmp_path / "gone.jsonl"), 10, 0))
    assert s.flags == ["unreadable"] and s.problems[0].startswith("cannot read")


def test_a_single_file_as_root(tmp_path):
    runs, _ = scan(SEED_TRACE, use_cache=False)
    assert len(runs) == 1 and runs[0].model == "grok-4.3"


@needs_fixtures
def test_discover_order_is_stable(tmp_path):
    sw = make_sweep(tmp_path)
    a = [t.path for t in discover(sw, [])]
    b = [t.path for t in discover(sw, [])]
    assert a == b
    # subdirectories come before the files next to them: the real trace before the flat link
    assert a.index("l1_p27_test-agent-b_terse/0191bbbb/trace.jsonl") < \
        a.index("l1_p27_test-agent-b_terse/popcorn_single_problem.jsonl")


@needs_fixtures
def test_helper_processes_give_the_same_summaries(tmp_path, monkeypatch):
    sw = make_sweep(tmp_path)
    alone = [s.to_dict() for s in SweepIndex(sw, use_cache=False, jobs=0).summaries()]
    monkeypatch.setattr(SweepIndex, "PARALLEL_MIN", 2)
    monkeypatch.setattr(SweepIndex, "WALK_BURST", 3)
    idx = SweepIndex(sw, use_cache=False, jobs=2)
    helped = [s.to_dict() for s in idx.summaries()]
    assert idx.helpers_used == 2
    assert helped == alone
    assert idx.total == len(alone) + idx.duplicates


def test_jobs_from_the_environment(monkeypatch):
    from ktui.trace.index import default_jobs

    monkeypatch.setenv("KTUI_JOBS", "3")
    assert default_jobs() == 3
    monkeypatch.setenv("KTUI_JOBS", "")
    assert 0 <= default_jobs() <= 7


def test_willneed_reads_a_file_ahead_and_never_blocks_on_a_fifo(tmp_path):
    """A cold scan asks the kernel to read the next files ahead (posix_fadvise WILLNEED): a regular
    file is asked for, a FIFO (no writer: a plain open would hang) and a missing file are not."""
    from ktui.trace.index.walk import willneed

    if not hasattr(os, "posix_fadvise"):
        pytest.skip("no posix_fadvise on this platform")
    f = tmp_path / "t.jsonl"
    f.write_text(Path(SEED_TRACE).read_text(encoding="utf-8"), encoding="utf-8")
    assert willneed(str(f)) is True
    assert willneed(str(tmp_path / "missing.jsonl")) is False
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert willneed(str(fifo)) is False


@pytest.mark.parametrize("jobs", [1, 0], ids=["helper", "alone"])
def test_a_scan_reads_the_files_ahead_that_it_skims(tmp_path, monkeypatch, jobs):
    """Every file skimmed in a cold scan, here and in a helper, was asked to be read ahead first
    (the disk overlaps the parse), each once; a cached scan asks for none."""
    asked: list[str] = []
    monkeypatch.setattr(index_mod, "willneed", lambda p: asked.append(p) or True)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for i in range(60):
        (sweep / f"r{i:02d}.jsonl").write_text(
            mini_trace("m", passed=True, speedup=1.5, tokens_in=1, tokens_out=1, wall_ms=10, tag=f"k{i}") + "\n",
            encoding="utf-8")
    monkeypatch.setattr(SweepIndex, "PARALLEL_MIN", 4)
    idx = SweepIndex(sweep, jobs=jobs)
    assert len(list(idx.summaries())) == 60
    assert idx.helpers_used == jobs
    skimmed = {os.path.realpath(p) for p in asked}
    assert len(asked) == len(skimmed)
    # all but the very first few (the first rows, skimmed as the walk finds them) were read ahead
    assert len(skimmed) >= 50, len(skimmed)
    asked.clear()
    assert len(list(SweepIndex(sweep, jobs=jobs).summaries())) == 60
    assert asked == []


def test_rows_come_in_natural_order_by_default(tmp_path, monkeypatch):
    """``ktui runs``' default order: a1, a2, a10 (directories and files), as the runs table's column
    sort orders them, not character order (a1, a10, a2); names equal but for case or leading zeros
    keep one fixed order whatever the file system lists first."""
    import subprocess
    import sys

    from ktui.report.runs import sorted_runs

    seed = Path(SEED_TRACE).read_bytes()
    sw = tmp_path / "sweep"
    n = 0
    for d in ("a10", "a2", "a1", "B3", "b20", "c"):
        (sw / d).mkdir(parents=True)
        for f in ("x01.jsonl", "x1.jsonl", "X1.jsonl", "x001.jsonl") if d == "c" else \
                ("run10.jsonl", "run2.jsonl", "run1.jsonl"):
            n += 1
            (sw / d / f).write_bytes(seed + b"\n" * n)  # blank lines: another file of the same run
    want = [f"{d}/{f}" for d in ("a1", "a2", "a10", "B3", "b20") for f in ("run1.jsonl", "run2.jsonl", "run10.jsonl")]
    want += ["c/X1.jsonl", "c/x001.jsonl", "c/x01.jsonl", "c/x1.jsonl"]
    assert [t.path for t in discover(sw, [])] == want
    runs, _ = scan(sw, use_cache=False, jobs=0)
    assert [r.path for r in runs] == want
    by_column = [runs[i].path for i in sorted_runs(range(len(runs)), runs, "path")]
    assert [p for p in by_column if not p.startswith("c/")] == want[:15]  # the column's sort: the same order
    env = dict(os.environ, KTUI_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "ktui", "runs", str(sw), "--format", "json", "--no-cache"],
                         capture_output=True, env=env, cwd=tmp_path, check=True).stdout
    assert [r["path"] for r in json.loads(out)["runs"]] == want


def test_the_walks_name_key_orders_as_the_column_sort():
    """``trace.order.name_key`` (the walk's, fast) orders names exactly as ``natural_key`` (the runs
    table's column sort) does, the name itself breaking ties: random names of letters, digits with
    leading zeros, long numbers, case, separators, control characters and non-ASCII digits."""
    import random

    from ktui.trace.order import name_key, natural_key

    rng = random.Random(5)
    alphabet = ["a", "B", "b", "_", "-", ".", " ", "\x01", "~", "é", "0", "00", "1", "01", "2", "9", "10", "123",
                "99999999999999999999", "٣", "٠", "x7", ""]
    names = list({"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(3000)})
    rng.shuffle(names)
    assert sorted(names, key=name_key) == sorted(names, key=lambda n: (natural_key(n), n))
