"""``ktui verify`` on the CPU test sweep (tests/fixtures/verify/sweep, TEST TRACES written by
tests/fixtures/verify/make_sweep.py): both engines, duplicates, a crash and a hang, resume, the
report's aggregates checked by hand, and the CSV / terminal output against hostile text.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest
from conftest import needs

from ktui.report.verify import render, write_csv
from ktui.repro.api import ReproOptions
from ktui.repro.verdict import CORRECTNESS_DISAGREES, NOT_JUDGED, NOT_REPRODUCIBLE, SAME_FAILURE
from ktui.repro.verify import engine as E
from ktui.repro.verify.plan import Planner, RunRow
from ktui.repro.verify.results import build_report
from ktui.view.verify import csv_cell

REPO = Path(__file__).resolve().parents[1]
SWEEP = REPO / "tests" / "fixtures" / "verify" / "sweep"
HANG_TIMEOUT = 15.0  # per run stage: the hang ends here; honest kernels need it on a loaded 2-core CI host

pytestmark = [needs("torch"), pytest.mark.timeout(2400)]


def options(**kw) -> ReproOptions:
    base = dict(device="cpu", trials=5, timeout=HANG_TIMEOUT, compile_timeout=180.0)
    base.update(kw)
    return ReproOptions(**base)


class CacheDir:
    """KTUI_CACHE_DIR pointed at ``path`` for the duration of a block."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.old = os.environ.get("KTUI_CACHE_DIR")
        os.environ["KTUI_CACHE_DIR"] = str(self.path)
        return self.path

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("KTUI_CACHE_DIR", None)
        else:
            os.environ["KTUI_CACHE_DIR"] = self.old


def verify(cache_dir: Path, *, engine: str = "local", stop_after: int | None = None, build_root: Path | None = None,
           **kw):
    """One verification of the sweep; returns (planner, engine, report). ``build_root``: a build
    cache shared between calls (the sweep's one C++ kernel then compiles once per module)."""
    with CacheDir(cache_dir):
        opts = options(**kw)
        planner = Planner([str(SWEEP)], opts, use_index_cache=False)
        holder: dict = {}
        finished = []

        def on_event(ev):
            if ev.kind in (E.TIMED, E.FAILED):
                finished.append(ev.job)
                if stop_after is not None and len(finished) >= stop_after:
                    holder["engine"].stop()

        if engine == "ray":
            from ktui.repro.verify.ray_engine import RayEngine

            eng = RayEngine(opts, jobs=1, cpu_slots=1, on_event=on_event,
                            build_root=str(build_root) if build_root else None, shared_build_root=bool(build_root))
        else:
            eng = E.LocalEngine(opts, slots=E.make_slots("cpu", None, 1), jobs=2, on_event=on_event,
                                build_root=str(build_root) if build_root else None)
        holder["engine"] = eng
        eng.run(iter(planner))
        report = build_report(planner.rows, {**planner.cached, **eng.results}, cached=set(planner.cached))
        return planner, eng, report


@pytest.fixture(scope="module")
def builds(_session_build_dir):
    return _session_build_dir  # the session's build cache (tests/conftest.py)


@pytest.fixture(scope="module")
def local(tmp_path_factory, builds):
    return verify(tmp_path_factory.mktemp("verify-local"), build_root=builds)


def by_path(report):
    return {v.row.path: v for v in report.rows}


def test_every_run_gets_its_verdict(local):
    planner, eng, report = local
    rows = by_path(report)
    assert len(rows) == 11
    assert rows["model-a/wrong.jsonl"].verdict == CORRECTNESS_DISAGREES
    crash = rows["model-b/crash.jsonl"]
    assert crash.verdict == NOT_REPRODUCIBLE and "SIGSEGV" in crash.reason, crash.reason
    hang = rows["model-b/hang.jsonl"]
    assert hang.verdict == NOT_JUDGED and hang.outcome == "incomplete"  # ktui's budget ran out: not a verdict
    assert f"timed out after {HANG_TIMEOUT:g} s" in hang.reason and "budget" in hang.reason
    assert rows["model-b/index_error.jsonl"].verdict == SAME_FAILURE
    syn = rows["model-c/syntax.jsonl"]
    assert syn.verdict == SAME_FAILURE, syn.reason
    assert syn.result["failure"]["stage"] == "build"
    noref = rows["model-c/noref.jsonl"]
    assert noref.row.job is None and noref.verdict == NOT_JUDGED and "reference" in noref.reason
    for p in ("model-a/fast.jsonl", "model-a/fast_again.jsonl", "model-b/fast.jsonl"):
        # 40x less work than the reference; how much faster it measures depends on the machine's load
        assert rows[p].outcome == "passed" and rows[p].speedup > 1, (p, rows[p].speedup)
    assert rows["model-a/slow.jsonl"].outcome == "passed" and rows["model-a/slow.jsonl"].speedup < 1
    cpp = rows["model-c/cpp.jsonl"]
    assert cpp.outcome == "passed" and cpp.speedup > 1, (cpp.reason, cpp.speedup)
    assert cpp.result["build"]["extensions"][0]["name"] == "relu_ext"
    assert not eng.errors


def test_duplicates_are_built_and_timed_once(local):
    planner, eng, report = local
    rows = by_path(report)
    assert len(planner.jobs) == 8 and planner.duplicates == 2
    fast = {v.row.job for v in report.rows if v.row.path.endswith("fast.jsonl") or "fast_again" in v.row.path}
    assert len(fast) == 1 and planner.jobs[fast.pop()].runs == 3
    # only the C++ kernel has something to build ahead; the others go straight to a timing slot
    starts = [e.job for e in eng.events if e.kind == E.BUILD_START]
    assert starts == [rows["model-c/cpp.jsonl"].row.job]
    assert eng.counts[E.BUILT] == 1 and eng.counts[E.BUILD_FAILED] == 0
    timed = [e.job for e in eng.events if e.kind == E.TIME_START]
    assert len(timed) == len(set(timed)) == 8  # every distinct kernel judged once


def test_the_slot_goes_on_after_a_crash_and_a_hang(local):
    _planner, eng, report = local
    rows = by_path(report)
    bad = {rows["model-b/crash.jsonl"].row.job, rows["model-b/hang.jsonl"].row.job}
    ends = [e for e in eng.events if e.kind in (E.TIMED, E.FAILED) and e.slot == "cpu0"]
    # the one CPU slot judged every buildable kernel, in a fresh process each: the crash and the
    # hang ended their own processes, and whatever came after them was still judged
    assert len(ends) == 8 and bad <= {e.job for e in ends}
    first_bad = min(i for i, e in enumerate(ends) if e.job in bad)
    assert first_bad < len(ends) - 1
    assert rows["model-a/wrong.jsonl"].result["status"] == "completed"


def test_aggregates_by_hand(local):
    _planner, _eng, report = local
    rows = by_path(report)
    models = {d["model"]: d for d in report.models()}
    # recorded: model-a 10, 10, 3, 1.2 (all passed); model-b 10, 2, 4 passed, index_error failed;
    # model-c 5 (cpp), 1.5 (noref) passed, syntax failed. Every kernel but cpp's is PyTorch with no
    # GPU code (the CPU can run them): passed, its speedup in no fast_p and no geomean, on both
    # sides, as ``ktui runs`` counts them
    a = models["model-a"]["recorded"]
    assert a["pass_rate"] == 1.0 and a["fast_0"] == 0.0 and a["fast_2"] == 0.0 and a["geomean_speedup"] is None
    b = models["model-b"]["recorded"]
    assert b["pass_rate"] == 0.75 and b["fast_0"] == 0.0 and b["geomean_speedup"] is None
    c = models["model-c"]["recorded"]
    assert c["pass_rate"] == pytest.approx(2 / 3) and c["fast_1"] == pytest.approx(1 / 3)
    assert c["fast_1.5"] == pytest.approx(1 / 3) and c["fast_2"] == pytest.approx(1 / 3)  # cpp's 5x only
    assert c["geomean_speedup"] == pytest.approx(5.0)
    allr = models["all runs"]["recorded"]
    assert allr["pass_rate"] == pytest.approx(9 / 11) and allr["fast_1.5"] == pytest.approx(1 / 11)
    assert allr["fast_2"] == pytest.approx(1 / 11)
    # reproduced: fast x3 and cpp pass (faster: 5x on a quiet machine, 1.6x seen at load 7; the
    # fast_2 figures below follow the measured speedup), slow passes (< 1x), wrong/crash/index/syntax fail,
    # the hang (ktui's budget ran out) and noref are not judged here: rates over judged runs only
    sc = rows["model-c/cpp.jsonl"].speedup
    sf = rows["model-a/fast.jsonl"].speedup
    sb = rows["model-b/fast.jsonl"].speedup
    ss = rows["model-a/slow.jsonl"].speedup
    assert sf > 1 and sb > 1 and sc > 1 and 0 < ss < 1, (sf, sb, sc, ss)  # measured here, row by row
    over2 = 1.0 if sc >= 2 else 0.0
    ra = models["model-a"]["reproduced"]
    assert (ra["pass_rate"], ra["fast_0"], ra["fast_1"], ra["fast_1.5"], ra["fast_2"]) == (0.75, 0.0, 0.0, 0.0, 0.0)
    assert ra["geomean_speedup"] is None
    rb = models["model-b"]["reproduced"]
    assert (rb["pass_rate"], rb["fast_2"], rb["geomean_speedup"]) == (pytest.approx(1 / 3), 0.0, None)
    assert (rb["judged"], rb["not_judged"]) == (3, 1)
    rc = models["model-c"]["reproduced"]
    assert rc["pass_rate"] == pytest.approx(1 / 2) and rc["fast_2"] == pytest.approx(over2 / 2)
    assert (rc["judged"], rc["not_judged"]) == (2, 1)
    assert rc["geomean_speedup"] == pytest.approx(sc)
    ra_all = models["all runs"]["reproduced"]
    assert ra_all["pass_rate"] == pytest.approx(5 / 9) and ra_all["fast_0"] == pytest.approx(1 / 9)
    assert ra_all["fast_1"] == pytest.approx(1 / 9) and ra_all["fast_2"] == pytest.approx(over2 / 9)
    assert ra_all["geomean_speedup"] == pytest.approx(sc)


def test_claims_worst_first(local):
    _planner, _eng, report = local
    paths = [v.row.path for v in report.claims]
    # not reproducible first (biggest recorded claim first), then correctness disagrees; runs not
    # judged here (the hang ran out of ktui's budget, no reference) are counted beside, not claims
    assert paths[:2] == ["model-b/crash.jsonl", "model-a/wrong.jsonl"]
    assert "model-b/index_error.jsonl" not in paths and "model-c/syntax.jsonl" not in paths
    assert "model-b/hang.jsonl" not in paths and "model-c/noref.jsonl" not in paths
    assert report.stats["not_judged"] == 2 and report.stats["judged"] == len(report.rows) - 2


def test_resume_rebuilds_and_retimes_nothing(tmp_path, builds):
    p1, e1, _ = verify(tmp_path, stop_after=3, build_root=builds)
    assert e1.cancel.is_set()
    done1 = set(e1.results)
    assert 3 <= len(done1) < 8
    p2, e2, r2 = verify(tmp_path, build_root=builds)
    assert set(p2.cached) >= done1
    again = {e.job for e in e2.events if e.kind in (E.BUILD_START, E.TIME_START)}
    assert not (again & done1), "a finished kernel was built or timed again"
    assert set(p2.cached) | set(e2.results) == set(p2.jobs)
    # a third run: everything from the cache (the hang too: same timeout, same outcome)
    p3, e3, r3 = verify(tmp_path, build_root=builds)
    assert e3.counts[E.BUILD_START] == 0 and e3.counts[E.TIME_START] == 0
    assert len(p3.cached) == 8
    assert [v.verdict for v in r3.rows] == [v.verdict for v in r2.rows]
    # a longer timeout is a reason to try the timed-out kernels again (and only those): the hang,
    # and any other kernel that ran out of time on a loaded machine
    timed_out = {k for k, r in p3.cached.items() if (r.get("failure") or {}).get("kind") == "timeout"}
    p4, e4, _ = verify(tmp_path, timeout=HANG_TIMEOUT + 1, build_root=builds)
    hang = next(r.job for r in p4.rows if r.path == "model-b/hang.jsonl")
    assert hang in timed_out
    assert {e.job for e in e4.events if e.kind in (E.BUILD_START, E.TIME_START)} == timed_out


def test_ray_engine_gives_the_same_report(local, tmp_path, builds):
    ray = pytest.importorskip("ray")
    _pl, _el, rl = local
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        planner, eng, report = verify(tmp_path, engine="ray", build_root=builds)
    finally:
        ray.shutdown()
    assert not eng.errors
    lv, rv = by_path(rl), by_path(report)
    assert set(lv) == set(rv)
    for p in lv:
        assert rv[p].outcome == lv[p].outcome, p
        if rv[p].speedup is None:  # timing verdicts of honest kernels depend on the measurement
            assert rv[p].verdict == lv[p].verdict, (p, rv[p].reason)
    starts = [e.job for e in eng.events if e.kind == E.BUILD_START]
    assert starts == [rv["model-c/cpp.jsonl"].row.job]
    assert eng.counts[E.TIME_START] == 8 and eng.counts[E.BUILT] == 1
    assert rv["model-b/crash.jsonl"].result["failure"]["kind"] == "crash"
    assert rv["model-b/hang.jsonl"].result["failure"]["kind"] == "timeout"


# ---- the CLI and its output -----------------------------------------------------------------------
def _cli(args, cache_dir):
    env = dict(os.environ, KTUI_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "ktui", "verify", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_cli_json_then_csv_from_the_cache(tmp_path, builds):
    base = ["--device", "cpu", "--trials", "5", "--timeout", str(HANG_TIMEOUT), "--compile-timeout", "180",
            "-j", "2", "--build-cache", str(builds)]
    r = _cli([str(SWEEP), *base, "--json"], tmp_path)
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert d["stats"]["kernels"] == 8 and d["stats"]["duplicates"] == 2 and d["stats"]["cached"] == 0
    assert {x["model"] for x in d["models"]} == {"model-a", "model-b", "model-c", "all runs"}
    claims = [c["path"] for c in d["claims_not_holding"]]
    assert claims[:2] == ["model-b/crash.jsonl", "model-a/wrong.jsonl"] and "model-b/hang.jsonl" not in claims
    assert d["stats"]["not_judged"] == 2 and d["stats"]["judged"] == 9
    assert "verify: [" in r.stderr  # quiet progress lines when not on a terminal
    r2 = _cli([str(SWEEP), *base, "--csv"], tmp_path)
    assert r2.returncode == 1
    rows = list(csv.DictReader(io.StringIO(r2.stdout)))
    assert len(rows) == 11
    got = {x["path"]: x for x in rows}
    assert got["model-a/wrong.jsonl"]["verdict"] == CORRECTNESS_DISAGREES
    assert got["model-b/hang.jsonl"]["failure"] == "timeout"
    assert sum(1 for x in rows if x["cached"] == "true") == 10  # all but the run with no reference
    assert "verify: [" not in r2.stderr  # nothing ran: every kernel came from the cache
    r3 = _cli([str(SWEEP), "--device", "cuda:1"], tmp_path)
    assert r3.returncode == 2 and "--gpus" in r3.stderr


def _hostile_row() -> RunRow:
    return RunRow(path="runs/=HYPERLINK(\"http://x\")\x1b]0;pwned\x07.jsonl", real="/x", model="+cmd|' /C calc'!A0",
                  problem="[bold red]P[/]", version="v1", final=True, recorded_outcome="passed",
                  recorded_speedup=3.0, note="@SUM(1+1)\x1b[2J")


def test_csv_cells_cannot_be_formulas_or_escapes():
    report = build_report([_hostile_row()], {})
    out = io.StringIO()
    write_csv(report, out)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    row = next(csv.DictReader(io.StringIO(text)))
    for k in ("path", "model", "reason"):
        assert not row[k].startswith(("=", "+", "-", "@")), (k, row[k])
    assert row["model"].startswith("'+cmd")
    assert csv_cell(-2.5) == -2.5 and csv_cell("-2") == "'-2" and csv_cell(float("nan")) == ""


def test_terminal_report_shows_trace_text_as_text():
    from rich.console import Console

    report = build_report([_hostile_row()], {})
    out = io.StringIO()
    render(Console(file=out, width=300, force_terminal=True, color_system=None), report)
    text = out.getvalue()
    assert "]0;pwned" in text and "\x1b]0" not in text and "\x1b[2J" not in text
    assert "\x07" not in text


# ---- the engine's scheduling, with stand-in steps (no processes) ----------------------------------------
def _job(i: int):
    from ktui.repro.verify.plan import Job

    return Job(key=f"{i:040x}", kernel_sha1=f"k{i}", reference_sha1="r", kernel_code="load_inline(...)", reference_source="y",
               reference_origin="test", label=f"v{i}", trace="t", result_key=f"rk{i}")


@pytest.mark.parametrize("pipeline", [False, True])
def test_streaming_and_one_timing_per_gpu(tmp_path, pipeline):
    """One judge per GPU at a time without the pipeline; with it, at most two (the next kernel's
    judge gets ready while one is timed: the device lock keeps the timing alone, see
    tests/test_verify_pipeline.py)."""
    from ktui.repro.verify.steps import BuildResult

    lock = threading.Lock()
    busy: dict[str, int] = {}
    overlaps = []
    allowed = E.PIPELINE_DEPTH if pipeline else 1

    def build_fn(job, options, *, build_root, env_extra, cancel):
        time.sleep(0.05 + 0.1 * (int(job.key, 16) % 4))
        return BuildResult(True, {}, 0.1, time.time(), time.time(), build={"cached": False})

    def judge_fn(job, options, *, build_root, env_extra, cancel):
        gpu = env_extra["CUDA_VISIBLE_DEVICES"]
        with lock:
            busy[gpu] = busy.get(gpu, 0) + 1
            if busy[gpu] > allowed:
                overlaps.append(gpu)
        time.sleep(0.05)
        with lock:
            busy[gpu] -= 1
        return {"status": "completed", "env": dict(env_extra)}

    with CacheDir(tmp_path):
        slots = E.make_slots("cuda", ["0", "1"], 1)
        eng = E.LocalEngine(options(device="cuda"), slots=slots, jobs=3, build_fn=build_fn, judge_fn=judge_fn,
                            pipeline=pipeline)
        eng.run(iter([_job(i) for i in range(16)]))
    assert not overlaps and len(eng.results) == 16
    assert {r["env"]["CUDA_VISIBLE_DEVICES"] for r in eng.results.values()} == {"0", "1"}
    first_timing = min(e.t for e in eng.events if e.kind == E.TIME_START)
    last_build = max(e.t for e in eng.events if e.kind == E.BUILT)
    assert first_timing < last_build  # timings start while builds still run: no batch barrier


def test_slots_and_environment(monkeypatch):
    from ktui.report.verify import parse_gpus
    from ktui.repro.runner import scrubbed_env

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert [s.env for s in E.make_slots(None, None)] == [{"CUDA_VISIBLE_DEVICES": "2"}, {"CUDA_VISIBLE_DEVICES": "5"}]
    assert [s.name for s in E.make_slots("cpu", None, 3)] == ["cpu0", "cpu1", "cpu2"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert E.make_slots("cuda", None) == []
    assert parse_gpus("0, 3") == ["0", "3"]
    with pytest.raises(ValueError):
        parse_gpus("0,0")
    with pytest.raises(ValueError):
        parse_gpus("0;rm -rf /")
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    env = scrubbed_env({"CUDA_VISIBLE_DEVICES": "1", "KTUI_WORKER_PRELOAD": "torch"})
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "1"


def test_build_pack_cannot_escape_the_build_root(tmp_path):
    from ktui.repro.verify.ray_engine import pack_dir, unpack_into

    src = tmp_path / "b" / "key1" / "ext"
    src.mkdir(parents=True)
    (src / "ext.so").write_bytes(b"\x7fELF")
    data = pack_dir(str(tmp_path / "b" / "key1"))
    unpack_into(data, str(tmp_path / "node2"))
    assert (tmp_path / "node2" / "key1" / "ext" / "ext.so").read_bytes() == b"\x7fELF"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("../../escaped.txt")
        payload = b"owned"
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
        link = tarfile.TarInfo("key2/link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    with pytest.raises(ValueError):
        unpack_into(buf.getvalue(), str(tmp_path / "node3"))
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path.parent / "escaped.txt").exists()


# ---- the app: `v` in ktui runs ---------------------------------------------------------------------------
def test_v_in_the_runs_screen_fills_in_reproduced(tmp_path, builds):
    import asyncio

    pytest.importorskip("textual")
    asyncio.run(_runs_verify(tmp_path, builds))


async def _runs_verify(tmp_path, builds):
    from ktui.tui.app import KtuiApp
    from ktui.tui.screens.runs import RunsScreen
    from ktui.tui.widgets.runs_table import RunsTable

    with CacheDir(tmp_path):
        app = KtuiApp(lambda: RunsScreen(SWEEP, use_cache=False))
        async with app.run_test(size=(160, 48)) as pilot:
            scr = app.screen
            for _ in range(500):
                await pilot.pause(0.02)
                if scr.scan_done:
                    break
            scr.verify_options = options()
            scr.verify_build_root = str(builds)
            table = scr.query_one(RunsTable)
            want = {"model-a/fast.jsonl", "model-b/index_error.jsonl"}
            table.marked = {i for i, s in enumerate(table.rows) if s.path in want}
            assert len(table.marked) == 2
            await pilot.press("v")  # the first asks for a second
            await pilot.pause()
            assert getattr(scr, "_verification", None) is None and not table.reproduced
            await pilot.press("v")
            state = scr._verification
            for _ in range(3000):
                await pilot.pause(0.05)
                if not state.running:
                    break
            await pilot.pause(0.2)
            assert state.error is None and state.report is not None
            real = {s.path: s.real for s in table.rows}
            got = {p: table.reproduced.get(real[p]) for p in want}
            assert got["model-b/index_error.jsonl"] == "same failure"
            assert got["model-a/fast.jsonl"].split()[0] in ("reproduced", "differs", "unit")
            assert set(table.reproduced) == {real[p] for p in want}  # only the marked runs
            # on screen, right after the flags (it came last: 12 presses of L at 100 columns)
            shown = [k for k, _, _ in table.columns()]
            assert shown.index("reproduced") == shown.index("flags") + 1
            w = table.fitted_widths()
            assert 2 + sum(w[k] + 2 for k in shown[: shown.index("reproduced") + 1]) <= table.size.width
            # the aggregates panel: the recorded table, then recorded -> reproduced
            from rich.console import Group
            from rich.text import Text

            from ktui.tui.screens.verify_runs import with_reproduced

            panel = with_reproduced(scr, Text("recorded"))
            assert isinstance(panel, Group) and str(panel.renderables[1]) == "verified: recorded → reproduced"
            assert {d["model"] for d in state.report.models()} == {"model-a", "model-b", "all runs"}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigterm_stops_the_sweep_and_its_workers(tmp_path):
    import signal

    from procwatch import survivors, wait_for_hanging_candidate

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, KTUI_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-m", "ktui", "verify", str(SWEEP / "model-b" / "hang.jsonl"), "--device",
                          "cpu", "--trials", "5", "--timeout", "300"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        seen = wait_for_hanging_candidate(p.pid)  # the judge, its workers, their sandboxes
        assert len(seen) >= 2, seen
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "interrupted" in err
    assert survivors(seen) == []
    assert list(tmp.iterdir()) == [], f"temp dirs left: {list(tmp.iterdir())}"


def test_plain_report_is_one_record_a_line(monkeypatch):
    """Piped at 100 (and at 160): every run one line, every claim that does not hold one line,
    whatever the length of its reason (grep finds a record whole)."""
    from ktui.report.console import out_console

    rows = [RunRow(path=f"sweep/{'long_problem_name_' * 3}{i}.jsonl", real=f"/x{i}", model="some-model",
                   problem="P", version="v1", final=True, recorded_outcome="passed", recorded_speedup=3.0,
                   note="no reference source in the trace and none given with --reference " * 3) for i in range(3)]
    report = build_report(rows, {})
    report.claims = list(report.rows)  # as if each were a claim that does not hold: the rendering
    for cols in ("100", "160"):
        monkeypatch.setenv("COLUMNS", cols)
        out = io.StringIO()
        render(out_console(out), report)
        lines = out.getvalue().splitlines()
        runs = [x for x in lines if x.startswith("sweep/")]
        claims = [x for x in lines if x.startswith("  ") and "sweep/" in x and " v1: " in x]
        why = [x for x in lines if x.startswith("  3 runs: not judged here")]
        assert len(why) == 1 and why[0].rstrip().endswith("_2.jsonl"), lines  # the reasons' list: one line too
        assert len(runs) == 3 and all(len(x) <= int(cols) for x in runs), lines
        assert len(claims) == 3 and all(x.rstrip().endswith("--reference") for x in claims), lines


def test_the_per_model_figures_leave_out_runs_with_no_kernel_and_wrappers_with_no_gpu_code():
    """The verify aggregates agree with ``ktui runs``: a coding agent's session (no kernel) is listed
    and never a model's row; a passed run whose final kernel is a PyTorch wrapper (no GPU code) is
    passed, but its 2.40x is in no fast_p and no geomean, recorded or reproduced."""
    from ktui.trace.index import RunSummary

    def row(model: str, summary: RunSummary, speedup: float | None) -> RunRow:
        return RunRow(path=summary.path, real=summary.path, model=model, problem="P", version="v1" if speedup else None,
                      final=True, recorded_outcome=summary.outcome or "incomplete", recorded_speedup=speedup,
                      note="no GPU here", summary=summary)

    wrapper = RunSummary(path="w.jsonl", format="ensemble", problem_key="L1/P1", outcome="passed", speedup=2.4,
                         final_sha1="a" * 40, no_gpu_final=True, model="wrapper-model")
    session = RunSummary(path="s.jsonl", format="claude-code", outcome="incomplete", model="chat-model")
    kernel = RunSummary(path="k.jsonl", format="ensemble", problem_key="L1/P2", outcome="passed", speedup=1.6,
                        final_sha1="b" * 40, model="wrapper-model")
    report = build_report([row("wrapper-model", wrapper, 2.4), row("chat-model", session, None),
                           row("wrapper-model", kernel, 1.6)], {})
    models = {m["model"]: m for m in report.models()}
    assert "chat-model" not in models, models
    rec = models["wrapper-model"]["recorded"]
    assert rec["passed"] == 2 and rec["pass_rate"] == 1.0
    assert rec["fast_1"] == 0.5 and rec["fast_2"] == 0.0, rec  # the wrapper's 2.40x counts in neither
    assert rec["geomean_speedup"] == pytest.approx(1.6)
    assert report.stats["no_kernel"] == 1
    from ktui.repro.verify.record import stats_line

    assert "1 run with no kernel not counted per model" in stats_line(report.stats)
