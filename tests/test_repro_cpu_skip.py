"""``ktui repro`` and the app's ``r`` key on a machine judging on a CPU, with a kernel that needs CUDA
(CUDA ``load_inline`` sources, ``__global__``, Triton): "not judged here (no GPU)" decided from the
kernel's source before any judge or sandboxed worker starts, by the decision ``ktui verify``'s
planner makes (``ktui.repro.early``), in the same words; never a harness error, never cached.

The traces: the bundled PopcornBench trace (its final kernel is a CUDA ``load_inline`` kernel) and
the verify test sweep's honest CPU kernel with Triton code put first (written by the test)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import SEED_TRACE
from test_verify_cpu_skip import FAST, TRITON, _with_prefix

from ktui.engine.kernelsrc import CPU_NEEDS_CUDA
from ktui.repro import cache, early, runner
from ktui.repro.api import ReproOptions, decided_report, known_report, reproduce
from ktui.repro.judging.model import NOT_JUDGED
from ktui.repro.verify.plan import Planner
from ktui.repro.verify.results import build_report
from ktui.trace import load


@pytest.fixture
def judges(monkeypatch, tmp_path):
    """Every judge process started (each starts the sandboxed workers); a private result cache."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    started: list[str] = []
    real = runner._Judge

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **kw):
            started.append("judge")
            super().__init__(*a, **kw)

    monkeypatch.setattr(runner, "_Judge", Counting)
    return started


def triton_trace(tmp_path: Path) -> Path:
    out = tmp_path / "triton.jsonl"
    out.write_text("".join(json.dumps(_with_prefix(json.loads(ln), TRITON)) + "\n"
                           for ln in FAST.read_text().splitlines() if ln))
    return out


def verify_reason(path: Path, options: ReproOptions) -> tuple[str, str]:
    planner = Planner([str(path)], options, use_index_cache=False)
    assert list(planner) == []  # nothing queued: decided by the planner
    (row,) = build_report(planner.rows, planner.known(), cached=set()).rows
    return row.verdict, row.reason


@pytest.mark.parametrize("which", ["seed", "triton"])
def test_repro_decides_before_any_worker_with_verifys_words(judges, tmp_path, which):
    path = SEED_TRACE if which == "seed" else triton_trace(tmp_path)
    run = load(str(path))
    kv = run.final_kernel
    assert early.not_judged_here(kv.code, cpu=True)
    opts = ReproOptions(device="cpu", trials=5)
    rep = reproduce(run, kv, opts)
    assert judges == []  # no judge, so no worker
    # (the Triton one computes in PyTorch and only carries Triton code: its verdict may name what the
    # source shows, as verify's does; the kernel is not judged here either way)
    assert rep.verdict == NOT_JUDGED or which == "triton"
    assert "not judged here (no GPU): " + CPU_NEEDS_CUDA in rep.reason
    assert (rep.verdict, rep.reason) == verify_reason(path, opts)
    assert not rep.cached and (rep.result.get("failure") or {}).get("kind") == "unsupported"
    assert cache.load(kv.sha1, rep.key, "cpu") is None  # says nothing about the kernel: not cached
    assert known_report(run, kv, opts) is not None and judges == []


def test_no_device_asked_for_follows_the_machine(judges, monkeypatch):
    """``--device`` left out means "cuda if available": decided where no NVIDIA driver is present;
    where one is, the judge decides (decided_report leaves it)."""
    run = load(str(SEED_TRACE))
    kv = run.final_kernel
    monkeypatch.setattr(early.os.path, "exists", lambda p: False)
    rep = decided_report(run, kv, ReproOptions())
    assert rep is not None and rep.verdict == NOT_JUDGED
    monkeypatch.setattr(early.os.path, "exists", lambda p: p == "/dev/nvidiactl")
    assert decided_report(run, kv, ReproOptions()) is None
    assert decided_report(run, kv, ReproOptions(device="cuda")) is None
    assert judges == []


def test_the_repro_command_prints_not_judged_here_and_starts_nothing(judges, capsys):
    from ktui.report.repro import repro_command

    assert repro_command(SEED_TRACE, device="cpu", brief=True) == 1
    out = capsys.readouterr().out
    assert judges == []
    assert "not judged here (no GPU)" in out and "harness error" not in out
    assert repro_command(SEED_TRACE, device="cpu") == 1
    out = capsys.readouterr().out
    assert "no worker started" in out and "ran in" not in out and "sandbox (in force" not in out
    # the verdict said once, its reason after it (was "verdict: not judged here — not judged here (no GPU): ...")
    assert "\nverdict: not judged here (no GPU): this kernel" in out and out.count("not judged here") == 1, out


def test_the_apps_r_shows_not_judged_here_without_asking_to_run(judges):
    pytest.importorskip("textual")
    from textual.app import App

    from ktui.tui.screens.repro_panel import ReproScreen

    run = load(str(SEED_TRACE))
    screen = ReproScreen(run, run.final_kernel, ReproOptions(device="cpu"))  # would ask before a run

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    async def go():
        async with Host().run_test(size=(100, 30)) as pilot:
            for _ in range(200):
                if screen.state not in ("idle", "looking"):
                    break
                await pilot.pause(0.05)
            assert screen.state == "done"  # not "confirm": nothing is offered to run
            assert screen.report is not None and screen.report.verdict == NOT_JUDGED
            status = str(screen.query_one("#repro-status").render())
            assert "not judged here" in status and "cached" not in status
            await pilot.press("r")  # a fresh re-run decides the same, still without a worker
            await pilot.pause(0.3)
            for _ in range(100):
                if screen.state == "done":
                    break
                await pilot.pause(0.05)
            assert screen.state == "done" and screen.report.verdict == NOT_JUDGED

    asyncio.run(go())
    assert judges == []
