"""The sweep index's fast path gives the slow path's rows, on a mixed corpus.

The fast path is what ``ktui runs`` does on a cold sweep: helpers forked from the scanning process
(:class:`ktui.trace.index.workers.Helper` made by fork, rows sent back as marshalled tuples), the row skim
on ensemble traces (:mod:`ktui.trace.index.rowskim`), the file's first chunk read into a buffer of
its own size (:func:`ktui.trace.index.skim._read_first`). The slow path is the full reader and
builder on every file in one process. Every row (every field) and every issue must be the same.

The corpus: every trace the repo and ``../shared`` hold (fixtures of every format, the hack corpus,
real traces of other harnesses), the bundled trace and copies of it edited line by line (a second
actor's costs, a cost in dollars, a blank line, a partial last line, a line that is not JSON), in
a tree with sweep records.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, SEED_TRACE

from ktui.trace.index import SweepIndex, skim, summarize
from ktui.trace.index.summary import RunSummary, TraceFile
from ktui.trace.index.workers import Helper, fork_ok

SOURCES = [ROOT / "tests" / "fixtures" / d for d in ("compare", "formats", "real", "hacks")] + [
    FIXTURES, FIXTURES.parent / "formats"]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


def _edited(seed: str) -> dict[str, str]:
    """Copies of the seed trace changed the way real files differ from it."""
    lines = seed.splitlines()
    out: dict[str, str] = {}
    costs = [i for i, ln in enumerate(lines) if '"kind":"cost"' in ln]
    usd = list(lines)
    usd[costs[3]] = usd[costs[3]].replace('"tokens_out"', '"usd"')
    out["usd_cost"] = "\n".join(usd) + "\n"
    other = list(lines)
    for i in costs[10:14]:
        other[i] = other[i].replace('"actor":"kernel_author"', '"actor":"reviewer"')
    out["second_actor_costs"] = "\n".join(other) + "\n"
    empty_actor = list(lines)
    empty_actor[costs[5]] = empty_actor[costs[5]].replace('"actor":"kernel_author"', '"actor":""')
    out["empty_actor_cost"] = "\n".join(empty_actor) + "\n"
    ints = [ln.replace('.0,"running_total"', ',"running_total"') for ln in lines]
    out["int_amounts"] = "\n".join(ints) + "\n"
    blank = list(lines)
    blank.insert(len(blank) // 2, "")
    out["blank_line"] = "\n".join(blank) + "\n"
    out["partial_last_line"] = "\n".join(lines) + "\n" + lines[-1][: len(lines[-1]) // 2]
    bad = list(lines)
    bad.insert(7, "{not json")
    out["bad_line"] = "\n".join(bad) + "\n"
    out["no_final_newline"] = "\n".join(lines)
    return out


def _corpus(tmp_path: Path) -> Path:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for src in SOURCES:
        if src.is_dir():
            shutil.copytree(src, sweep / src.name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    seed = Path(SEED_TRACE).read_text(encoding="utf-8")
    records = []
    for i, (name, text) in enumerate(_edited(seed).items()):
        d = sweep / "seed" / f"cell{i}" / name
        d.mkdir(parents=True)
        (d / "trace.jsonl").write_text(text, encoding="utf-8")
        records.append({"slug": f"cell{i}", "status": "failed" if i % 3 == 0 else "ok", "model": f"m{i}"})
    (sweep / "seed" / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return sweep


def _rows(idx: SweepIndex) -> tuple[list[dict], list[str]]:
    rows = [s.to_dict() for s in idx.summaries()]
    return rows, sorted(str(i) for i in idx.issues)


@pytest.mark.skipif(not fork_ok(), reason="no fork here (or other threads alive)")
def test_forked_helpers_and_row_skim_give_the_full_readers_rows(tmp_path, monkeypatch):
    sweep = _corpus(tmp_path)
    monkeypatch.setattr(skim, "ROW_SKIM", False)
    slow, slow_issues = _rows(SweepIndex(sweep, use_cache=False, jobs=0))
    monkeypatch.setattr(skim, "ROW_SKIM", True)
    monkeypatch.setattr(SweepIndex, "PARALLEL_MIN", 2)
    monkeypatch.setattr(SweepIndex, "WALK_BURST", 3)
    idx = SweepIndex(sweep, use_cache=False, jobs=2)
    fast, fast_issues = _rows(idx)
    assert idx.helpers_used == 2 and idx.helpers_forked
    assert len(slow) >= 120, len(slow)
    assert [r["path"] for r in fast] == [r["path"] for r in slow]
    diffs = {a["path"]: {k: (a[k], b[k]) for k in a if a[k] != b[k]} for a, b in zip(fast, slow, strict=True) if a != b}
    assert diffs == {}
    assert fast_issues == slow_issues
    # helpers as new interpreters (the app's, which scans in a thread): the same rows
    spawned = SweepIndex(sweep, use_cache=False, jobs=1)
    spawned.fork = False
    assert _rows(spawned) == (slow, slow_issues)
    assert spawned.helpers_used == 1 and not spawned.helpers_forked
    # and from the cache the fast scan wrote, once: the same rows again
    monkeypatch.setattr(SweepIndex, "PARALLEL_MIN", 10_000)
    again = SweepIndex(sweep, jobs=0)
    assert _rows(again)[0] == slow and again.cache_hits == 0  # use_cache=False above wrote nothing
    warm = SweepIndex(sweep, jobs=0)
    assert _rows(warm)[0] == slow and warm.cache_hits == warm.total


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_a_helper_answers_rows_and_ends_with_the_scan(tmp_path, fork):
    """A helper, forked or a new interpreter (one class, one protocol: marshal frames both ways),
    answers each file with the row this process would make, and is gone (reaped) once closed."""
    if fork and not fork_ok():
        pytest.skip("no fork here (or other threads alive)")
    st = os.stat(SEED_TRACE)
    tf = TraceFile(str(SEED_TRACE), str(SEED_TRACE), st.st_size, st.st_mtime_ns, False, str(SEED_TRACE))
    h = Helper(fork=fork)
    try:
        assert h.give(7, tf)
        got: list[tuple[int, RunSummary | None]] = []
        import select

        while not got and h.alive:
            select.select([h.fileno()], [], [], 30)
            got += h.read()
        assert got[0][0] == 7 and got[0][1] is not None
        assert got[0][1].to_dict() == summarize(tf).to_dict()
        assert h.outstanding == {}
    finally:
        h.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(h.pid, os.WNOHANG)


def test_no_fork_while_other_threads_run():
    """The app scans in a worker thread: there a fork could copy another thread's held locks, so the
    index starts its helpers as new interpreters instead."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert fork_ok() is False
    finally:
        stop.set()
        t.join()


def test_sweep_records_are_read_into_a_buffer_of_their_own_size(tmp_path):
    """A cell's ``runs.jsonl`` (a line or two) is read without a 64 MiB buffer (a 10,000-cell
    sweep allocated and freed 10,000 of them); what is read is the same."""
    import tracemalloc

    from ktui.trace.index.records import Records

    f = tmp_path / "runs.jsonl"
    f.write_text(json.dumps({"run_id": "abc", "scenario": "s", "trace_path": "abc/trace.jsonl"}) + "\n",
                 encoding="utf-8")
    Records().read(str(f), [], "runs.jsonl")
    tracemalloc.start()
    try:
        r = Records()
        r.read(str(f), [], "runs.jsonl")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert list(r.by_target) == [str(tmp_path / "abc")]


def test_a_trace_is_read_into_a_buffer_of_its_own_size(tmp_path):
    """The skim reads a small trace without the 4 MiB buffer a plain ``read(CHUNK)`` allocates (and
    frees) for every file; a file larger than the chunk, or one that grew since it was measured,
    still reads exactly its first chunk."""
    import tracemalloc

    f = tmp_path / "t.jsonl"
    f.write_bytes(Path(SEED_TRACE).read_bytes())
    tf = TraceFile(str(f), str(f), f.stat().st_size, f.stat().st_mtime_ns, False, str(f))
    summarize(tf)  # imports, caches
    tracemalloc.start()
    try:
        summarize(tf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < skim.CHUNK // 2, peak
    data = bytes(range(256)) * 64  # 16 KiB
    big = tmp_path / "big.bin"
    big.write_bytes(data)
    for chunk in (1000, len(data) - 1, len(data), len(data) + 1, 1 << 20):
        with open(big, "rb") as fh:
            old = fh.read(chunk)
        with open(big, "rb") as fh:
            orig = skim.CHUNK
            skim.CHUNK = chunk
            try:
                new = skim._read_first(fh)
            finally:
                skim.CHUNK = orig
        assert new == old, chunk

    small = tmp_path / "small"
    small.write_bytes(b"0123456789")

    class Grown:  # a file measured at 10 bytes that has 16 KiB by the time it is read
        def __init__(self) -> None:
            self.fh = open(big, "rb")  # noqa: SIM115
            self.measured = open(small, "rb")  # noqa: SIM115

        def fileno(self) -> int:
            return self.measured.fileno()

        def read(self, n: int) -> bytes:
            return self.fh.read(n)

    g = Grown()
    try:
        assert skim._read_first(g) == data
    finally:
        g.fh.close()
        g.measured.close()


def test_runs_json_text_is_the_json_modules_data():
    """``ktui runs --format json`` writes with orjson: the same data as the json module's indented
    text (unicode, control characters, floats, nesting), and the json module's text where orjson
    refuses (an int past 64 bits, a lone surrogate)."""
    from ktui.report.runs import _json_text

    data = {"runs": [{"path": "a/é/t.jsonl", "speedup": 1.2345678901234567, "tiny": 1.5e-07, "big": 1e16,
                      "flags": ["x\ty", "\u001b[31m"], "n": None, "ok": True, "scores": {"k": 0.1}}],
            "aggregates": [], "charts": {"bins": [[0, 1], [2, 3.5]]}}
    text = _json_text(data)
    assert json.loads(text) == data
    assert text.startswith('{\n  "runs": [\n    {\n      "path": "a/é/t.jsonl"')
    for odd in ({"n": 1 << 70}, {"s": "a\udc80b"}):
        assert _json_text(odd) == json.dumps(odd, indent=2, ensure_ascii=False)


def test_a_broken_stdout_does_not_stop_the_helpers_fork(tmp_path, monkeypatch):
    """``ktui runs --format csv | head -1``: stdout's pipe is closed by the time the helpers start;
    flushing it before the fork must not end the scan."""
    if not fork_ok():
        pytest.skip("no fork here (or other threads alive)")

    class Broken:
        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    sweep = _corpus(tmp_path)
    monkeypatch.setattr(SweepIndex, "PARALLEL_MIN", 2)
    monkeypatch.setattr("sys.stdout", Broken())
    idx = SweepIndex(sweep, use_cache=False, jobs=1)
    rows = list(idx.summaries())
    assert idx.helpers_forked and len(rows) >= 120
