"""A big trace costs memory for its structure, not for its text (issue 25): tool arguments
(kernel sources) and tool results of long lines are read back from the file on demand, not kept.

Counted, not timed: the bytes the loaded run still holds (tracemalloc, after a collection) for
two generated traces with the same turns, one with 25 KB of unique text per turn (~50 MB), the
other with 1.5 KB (~3 MB). Kept text would cost the first ~47 MB more than the second."""

from __future__ import annotations

import gc
import hashlib
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

import ktui.trace.lazy as lazy_mod
from ktui.trace import load
from ktui.trace.model import ResultTable
from ktui.trace.reader import load_stages

TURNS = 2000


def _text(i: int, n: int, what: str) -> str:
    """``n`` characters of text unique to turn ``i`` (no two turns share a string to intern)."""
    seed = hashlib.sha1(f"{what}{i}".encode()).hexdigest()
    line = f"// {what} {i} {seed}\n"
    return (line * (n // len(line) + 1))[:n]


def write_trace(path: Path, per_turn: int) -> int:
    half = per_turn // 2
    with open(path, "w") as f:
        ts = 1_700_000_000_000
        for i in range(TURNS):
            ts += 10
            f.write(json.dumps({"tick": 3 * i, "ts_ms": ts, "actor": "a",
                                "payload": {"kind": "assistant_message", "text": f"turn {i}"}}) + "\n")
            code = "import torch\n" + _text(i, half, "kernel")
            f.write(json.dumps({"tick": 3 * i + 1, "ts_ms": ts + 1, "actor": "a",
                                "payload": {"kind": "tool_call", "name": "run_correctness", "id": f"c{i}",
                                            "args": {"kernel_code": code}}}) + "\n")
            out = ("run_correctness FAILED\n" if i % 2 else "run_correctness OK\n") + _text(i, half, "output")
            f.write(json.dumps({"tick": 3 * i + 2, "ts_ms": ts + 2, "actor": "a",
                                "payload": {"kind": "tool_result", "name": "run_correctness", "id": f"c{i}",
                                            "text": out, "is_error": False}}) + "\n")
    return path.stat().st_size


def retained(path: Path, staged: bool = False) -> tuple[int, object]:
    import ktui.trace.importers
    import ktui.trace.results  # noqa: F401 - what a load imports on first use is not the run's (run alone,
    # this file's first load counted ~2 MB of modules)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run = list(load_stages(path, findings=False))[-1][0] if staged else load(path, findings=False)
        _clear_caches()  # the process's bounded caches of recent sources (ktui.trace.model): not the run's
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, run
    finally:
        tracemalloc.stop()


def _clear_caches() -> None:
    from ktui.trace import derive, model

    model._kernel_info_cached.cache_clear()
    derive.kernel_sha1.cache_clear()


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("mem")
    big, small = d / "big.jsonl", d / "small.jsonl"
    return (big, write_trace(big, 25_000)), (small, write_trace(small, 2_400))


@pytest.mark.parametrize("staged", [False, True], ids=["load", "app's two stages"])
def test_memory_does_not_grow_with_the_text(traces, staged, monkeypatch):
    monkeypatch.delenv("KTUI_LAZY_MIN", raising=False)
    (big, big_size), (small, small_size) = traces
    assert big_size > 45 << 20 and small_size < 6 << 20
    got_big, run = retained(big, staged)
    got_small, _ = retained(small, staged)
    assert len(run.turns) == TURNS and len(run.kernels) == TURNS  # everything was read
    # the structure only: a few hundred bytes an event, whatever the lines hold
    assert got_big < 1_500 * 3 * TURNS, f"{got_big:,} bytes kept for a {big_size:,}-byte trace"
    assert abs(got_big - got_small) < (1 << 20), (got_big, got_small)
    # and what was not kept is still there, read back on demand
    c = run.calls[-1]
    assert c.kernel_code.startswith("import torch\n// kernel 1999 ")
    assert c.result.summary.startswith("run_correctness FAILED\n// output 1999 ")
    assert run.kernels[-1].code == c.kernel_code


def test_kept_text_would_fail_it(traces, monkeypatch):
    """The bound above is one that kept text breaks (the builder that kept every argument and
    result: lines never read back)."""
    monkeypatch.setenv("KTUI_LAZY_MIN", str(1 << 40))
    (big, big_size), _ = traces
    got, _ = retained(big)
    assert got > big_size * 0.8


TRIM_CHILD = r"""
import sys
import ktui.trace.lazy as lazy
if sys.argv[2] == "off":
    lazy.TRIM_MIN = 1 << 62
from ktui.trace import load
run = load(sys.argv[1], findings=False)
assert len(run.turns) > 1000
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon:")))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or lazy_mod._malloc_trim() is None,
                    reason="glibc's malloc_trim: Linux with glibc only")
def test_a_big_load_gives_the_heap_back(tmp_path):
    """What a load freed (every line's bytes, the decoded objects) goes back to the system: the
    process's resident anonymous memory after loading a 24 MB trace of medium lines, with and
    without the trim (counted from /proc, not timed)."""
    p = tmp_path / "medium.jsonl"
    with open(p, "w") as f:
        for i in range(20_000):
            f.write(json.dumps({"tick": 2 * i, "ts_ms": i, "actor": "a", "payload": {
                "kind": "assistant_message", "text": f"turn {i} " + "x" * 500}}) + "\n")
            f.write(json.dumps({"tick": 2 * i + 1, "ts_ms": i, "actor": "a", "payload": {
                "kind": "tool_call", "name": "t", "args": {"q": f"{i} " + "y" * 600}}}) + "\n")
    assert p.stat().st_size > lazy_mod.TRIM_MIN

    def rss(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", TRIM_CHILD, str(p), mode], capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr
        return int(out.stdout.strip())

    off, on = rss("off"), rss("on")
    assert on < off - 4096, (on, off)  # kB: at least 4 MB given back


def test_short_lines_are_read_back_too(tmp_path, monkeypatch):
    """By default a short line's arguments and result are not kept either (a kept one holds its
    argument and effect objects: most of what a run of short events costs). Counted: the run
    of a trace of short events keeps under 330 bytes an event (296 measured, results kept by
    column); keeping the arguments and results of lines under 256 bytes (the default before)
    costs more than 420 (447)."""
    from test_scaling import trace

    p = tmp_path / "short.jsonl"
    p.write_bytes(trace(3000))
    monkeypatch.delenv("KTUI_LAZY_MIN", raising=False)
    got, run = retained(p)
    n = len(run.events)  # type: ignore[attr-defined]
    calls = run.calls  # type: ignore[attr-defined]
    assert n == 12_001 and all(c.lazy and type(c._result) is ResultTable for c in calls)  # results by column
    assert calls[4].args == {"kernel_code": "__global__ void k0() {}\n"} and calls[4].result.summary == "done"
    assert got < 330 * n, f"{got / n:.0f} bytes an event"
    monkeypatch.setenv("KTUI_LAZY_MIN", "256")
    kept, run = retained(p)
    assert not any(c.lazy for c in run.calls)  # type: ignore[attr-defined]
    assert kept > 420 * n, f"{kept / n:.0f} bytes an event"
