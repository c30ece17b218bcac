"""The skim: one trace file into its :class:`~ktui.trace.index.summary.RunSummary`, never raising.

An ensemble trace is read once, in chunks, every line through the reader's own
:class:`~ktui.trace.reader.LineParser` and :func:`~ktui.trace.reader.split_lines` into one
:class:`~ktui.trace.builder.Builder` that keeps no events (``keep_events=False``): no event
list, no line offsets, nothing of the file held once it is read. So every field of the row
(turns, calls, failed calls, tokens, outcome, metrics, kernel versions and their flags) follows
exactly the rules of ``ktui show``; ``tests/test_index_skim_equivalence.py`` compares the two on
every trace held and on hostile files. (A shortcut that read only the envelope of long lines
gave other rows: a long failed result counted as ok, a long kernel left out of the versions.)

The format is decided from the first chunk, which the skim reads anyway (other formats go to
their importer, ``.json`` files that are no trace get format "none", a harness's result files
"result"); the harness's result files beside a run are read with it (:func:`ktui.trace.results.attach`).
"""

from __future__ import annotations

import gc
import hashlib
import os
from typing import Any

from ktui import settings
from ktui.trace import facts
from ktui.trace.builder import Builder
from ktui.trace.index import rowskim
from ktui.trace.index.summary import RunSummary, TraceFile, problem_key
from ktui.trace.labels import content_id, fingerprint, part_fingerprint
from ktui.trace.lines import read_capped
from ktui.trace.model import OK, V2, Run
from ktui.trace.reader import LineParser, open_regular, split_lines

CHUNK = 4 << 20
# the row skim first (rowskim.py); off (KTUI_ROW_SKIM=0, for benchmarks and comparisons): the
# full reader and builder on every file
ROW_SKIM = settings.current().row_skim
_MAX_PROBLEMS = 20


def summary_of_run(run: Run, tf: TraceFile) -> RunSummary:
    """The runs-table row of a loaded (or skimmed) run."""
    s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
    s.variant = run.variant
    s.format = run.format
    p = run.problem
    s.problem = p.title if (p.level is not None or p.problem_id is not None or p.name) else ""
    s.problem_key = problem_key(p.level, p.problem_id, p.name)
    s.model, s.persona, s.scenario = run.model, run.persona, run.scenario
    s.outcome, s.terminal = run.outcome, run.terminal_state
    s.turns, s.max_turns, s.tool_calls = len(run.turns), run.max_turns, len(run.agent_calls)
    s.tokens = run.tokens_total or None
    s.started_ms, s.ended_ms = run.started_ms, run.ended_ms
    if run.metrics is not None:
        s.speedup, s.runtime_us = run.metrics.speedup, run.metrics.runtime_us
        s.ref_runtime_us, s.correct = run.metrics.ref_runtime_us, run.metrics.correct
    s.final_score = run.final_score
    s.scores = dict(run.scores)
    s.failed_calls = facts.failed_calls(run)
    s.not_trace = facts.not_a_trace(run) or ""
    s.flags = facts.flag_codes(run)  # the flag set every view shows
    s.hacks = facts.hack_classes(run)
    s.no_gpu_final = facts.final_without_gpu_code(run)
    s.problems = [str(pr) for pr in run.problems[:_MAX_PROBLEMS]]
    if len(run.problems) > _MAX_PROBLEMS:
        s.problems.append(f"... {len(run.problems) - _MAX_PROBLEMS} more")
    s.incomplete = run.incomplete
    _progress(run, s)
    _result(run, s)
    return s


def _result(run: Run, s: RunSummary) -> None:
    """The harness's own result file (ktui.trace.results): where the outcome came from, the
    speedups by baseline, the task."""
    r = run.results[0] if run.results else None
    if r is None:
        return
    s.result = f"{r.source} ({r.harness})"
    s.speedups = {k: float(v) for k, v in r.speedups.items()}
    s.speedup_base = (r.primary or next(iter(r.speedups), "")) if r.speedups else ""
    if r.compiled is not None or r.correct:
        s.compiled = s.compiled or bool(r.compiled) or bool(r.correct)
    if r.error:
        s.result_error = r.error.strip().split("\n", 1)[0][:200]


_COMPILE_TOOLS = frozenset({"compile_kernel"})
_CORRECT_TOOLS = frozenset({"run_correctness", "submit_kernel"})


def _says_compiled(res: Any) -> bool:
    for d in (res.meta, res.effect):
        if isinstance(d, dict) and d.get("compiled") is True:
            return True
    return False


def _progress(run: Run, s: RunSummary) -> None:
    """How far the run got: compiled at all, and what it cost to reach the first correct kernel."""
    calls = run.agent_calls
    s.compiled = any(c.result is not None and (
        (c.status == OK and (c.name in _COMPILE_TOOLS or c.name in _CORRECT_TOOLS)) or _says_compiled(c.result))
        for c in calls)
    fct = run.first_correct_turn
    s.first_correct_turn = fct
    if fct is not None:
        s.compiled = True
        toks = [t.tokens_total for t in run.turns if t.index <= fct and t.tokens_total is not None]
        s.tokens_to_correct = sum(toks) if toks else None
        if run.variant != V2 and run.started_ms is not None:
            for c in run.calls:
                if c.name in _CORRECT_TOOLS and c.status == OK and c.turn == fct and c.result is not None:
                    if c.result.ts_ms is not None:
                        s.wall_ms_to_correct = max(0, c.result.ts_ms - run.started_ms)
                    break
    final = run.final_kernel
    if final is not None and final.code and final.attachment is None:
        s.final_sha1 = final.sha1
    ref = getattr(getattr(run, "problem", None), "reference_source", None)
    if isinstance(ref, str) and ref.strip():
        s.reference_sha1 = hashlib.sha1(ref.encode("utf-8", "replace")).hexdigest()


def summarize(tf: TraceFile | str) -> RunSummary:
    """Skim one trace file into a :class:`RunSummary`. Never raises on bad data.

    The file is opened once: its first chunk decides the format (and, for most traces, is the
    whole file), then the rest is read on. The cyclic garbage collector is paused meanwhile (as
    :func:`ktui.trace.reader.load` does): its passes over a scan's live rows cost 8-13 % of a
    scan's CPU; what one file leaves is collected after it."""
    was = gc.isenabled()
    gc.disable()
    try:
        return _summarize(tf)
    finally:
        if was:
            gc.enable()


def _read_first(f: Any) -> bytes:
    """The file's first :data:`CHUNK` bytes (all of it when it is smaller), in a buffer of the
    file's own size (:func:`ktui.trace.lines.read_capped`), not one of 4 MiB a file."""
    return read_capped(f, CHUNK)


def _summarize(tf: TraceFile | str) -> RunSummary:
    if isinstance(tf, str):
        st = os.stat(tf)
        tf = TraceFile(path=tf, real=os.path.realpath(tf), size=st.st_size, mtime_ns=st.st_mtime_ns)
    head = hashlib.sha1()
    tail = b""

    def chunks(f, first: bytes):
        nonlocal tail
        head.update(first[:4096])
        chunk = first
        while chunk:
            tail = (tail + chunk[-4096:])[-4096:]
            yield chunk
            del chunk
            chunk = f.read(CHUNK)

    try:
        with open_regular(tf.real or tf.path) as f:
            first = _read_first(f)
            other = _imported(tf, first if len(first) < CHUNK else None)
            if other is not None:
                return other
            if len(first) < CHUNK and ROW_SKIM:  # the whole file: the row skim reads it, if it can
                s = _row(tf, first)
                if s is not None:
                    return s
            rowskim.stats["full"] += 1
            b = Builder(tf.path, keep_events=False)
            LineParser(b).feed_all(split_lines(chunks(f, first)))
    except OSError as exc:
        return _unreadable(tf, f"cannot read: {exc.strerror or exc}")
    except Exception as exc:  # noqa: BLE001 - the index never raises on data
        return _unreadable(tf, f"could not summarise ({type(exc).__name__}: {exc})")
    from ktui.trace.results import attach

    s = summary_of_run(attach(b.finish(final=True)), tf)
    head.update(b"|" + tail + b"|" + str(tf.size).encode())
    s.fingerprint = head.hexdigest()
    return s


def _row(tf: TraceFile, data: bytes) -> RunSummary | None:
    """The row of an ensemble trace read whole (``data``) by :mod:`ktui.trace.index.rowskim`;
    None where it gives up (the full reader then reads the file)."""
    try:
        run = rowskim.row_run(tf.path, data)
    except Exception:  # noqa: BLE001 - a row skim's own failure: the full reader decides
        run = None
    if run is None:
        return None
    from ktui.trace.results import attach

    rowskim.stats["row"] += 1
    s = summary_of_run(attach(run), tf)
    s.fingerprint = fingerprint(data[:4096], data[-4096:], tf.size)
    return s


def summarize_loaded(tf: TraceFile) -> tuple[RunSummary, Run | None]:
    """:func:`summarize`, and for a file that is one ensemble trace the run as
    :func:`ktui.trace.load` reads it (events kept): ``ktui report`` draws a run's detail from that
    run and takes its row from the same read, so each trace is parsed once, not twice.

    The row is the fully loaded run's row (:func:`summary_of_run`, which
    ``tests/test_index_skim_equivalence.py`` proves equal to the skim's on every trace held and
    on hostile files) with the skim's fingerprint; any other file (another format, a file of many
    runs, no trace, unreadable) gets :func:`summarize` itself and no run. Never raises on bad data."""
    from ktui.trace.labels import fingerprint as content_fingerprint
    from ktui.trace.reader import load

    try:
        with open_regular(tf.real or tf.path) as f:
            first = _read_first(f)
            if len(first) < CHUNK:
                tail = first[-4096:]
            else:  # the last bytes as summarize reads them: up to the end of the file
                f.seek(-4096, os.SEEK_END)
                tail = f.read(4096)
        other = _imported(tf, first if len(first) < CHUNK else None)
        if other is not None:  # summarize's own decision and row: not an ensemble trace
            return other, None
        run = load(tf.real or tf.path)
    except Exception:  # noqa: BLE001 - unreadable, or it changed: the skim says why, as ``ktui runs`` does
        return summarize(tf), None
    s = summary_of_run(run, tf)
    s.fingerprint = content_fingerprint(first[:4096], tail, tf.size)
    return s, run


def _unreadable(tf: TraceFile, why: str) -> RunSummary:
    s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
    s.problems = [why]
    s.flags = ["unreadable"]
    return s


def _imported(tf: TraceFile, whole: bytes | None = None) -> RunSummary | None:
    """A trace of another format (ktui.trace.importers), loaded whole and summarised; None for an
    ensemble trace (skimmed as above). A ``.json`` file that is not a trace gets format "none".
    ``whole``: the file's bytes, when they were read already (the format is decided from them)."""
    from ktui.trace import importers
    from ktui.trace.results import attach, is_sidecar, kernelbench

    path = tf.real or tf.path
    try:
        if kernelbench.is_sample(path) and not importers.forced():
            run = attach(kernelbench.load_sample(path))
            det = importers.Detection(kernelbench.FORMAT)
        else:
            det = importers.choose(path, data=whole)
            if det.name == "ensemble":
                return None
            if importers.many_runs(det) is not None and det.obj is not None:
                return _many(tf, det, whole)
            if det.name == "unknown" and (not path.endswith(".jsonl") or is_sidecar(path)):
                sidecar = is_sidecar(path)
                s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns,
                               format="result" if sidecar else "none")
                s.problems = ["a harness's result file" if sidecar else f"not a trace (looks like {det.hint})"]
                return s
            run = importers.load_as(path, det, data=whole, keep_events=False)
    except Exception as exc:  # noqa: BLE001 - the index never raises on data
        s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
        s.problems = [f"could not summarise ({type(exc).__name__}: {exc})"]
        s.flags = ["unreadable"]
        return s
    s = summary_of_run(run, tf)
    if det.name == "unknown":
        s.flags = s.flags + ["unreadable"] if "unreadable" not in s.flags else s.flags
    try:  # the same hash as an ensemble trace's: labels key on it
        cid = content_id(path) if whole is None else "fp1:" + fingerprint(whole[:4096], whole[-4096:], len(whole))
    except OSError:
        cid = ""
    if s.format == kernelbench.FORMAT and cid:  # one kernel file per sample: equal kernels of two runs are two runs
        s.fingerprint = hashlib.sha1(os.path.realpath(path).encode("utf-8", "replace") + cid.encode()).hexdigest()
        s.content_key = cid
    else:
        s.fingerprint = cid[4:]
    return s


def _many(tf: TraceFile, det: Any, whole: bytes | None) -> RunSummary:
    """A file of many runs (ktui.trace.address): one row for the file, each run's row in
    ``parts`` (the scan lists those, addressed ``path#key``)."""
    from ktui.trace import importers
    from ktui.trace.address import join

    imp = importers.many_runs(det)
    assert imp is not None and imp.runs_in is not None
    path = tf.real or tf.path
    s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns, format=det.name)
    try:
        keys = list(imp.runs_in(det.obj))
        cid = content_id(path) if whole is None else "fp1:" + fingerprint(whole[:4096], whole[-4096:], len(whole))
    except (OSError, TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        s.problems, s.flags = [f"could not summarise ({type(exc).__name__}: {exc})"], ["unreadable"]
        return s
    if not keys:
        s.not_trace = "a file of many runs that holds none"
        return s
    for k in keys:
        run = importers.load_as(path, det, data=whole, key=k, keep_events=False)
        ps = summary_of_run(run, TraceFile(path=join(tf.path, k), real=join(tf.real, k), size=tf.size,
                                           mtime_ns=tf.mtime_ns))
        ps.key = k
        ps.fingerprint = part_fingerprint(cid, k)  # what ``ktui label PATH#KEY`` keys on
        s.parts.append(ps.to_dict())
    s.fingerprint = cid[4:]
    return s
