"""KernelAgent (meta-pytorch/KernelAgent) sessions: a session folder's ``result.json``.

KernelAgent runs several workers on one problem; each worker writes a Triton kernel and a test,
runs the test and refines the kernel round after round until a test passes. A session folder
(``triton_kernel_logs/session_<time>/``) holds ``result.json`` (``success``, ``kernel_code``: the
winning kernel, ``worker_id``: the worker that won, ``rounds``, ``session_dir``, ``performance``:
``{success, pytorch_time_ms, triton_time_ms, speedup, error}``), ``problem.txt`` (the problem:
a KernelBench-style ``Model`` with ``get_inputs``), ``test.py``, ``final_kernel.py`` and
``workers/worker_<N>/round_<K>.json`` (``round``, ``timestamp``, ``success``, ``kernel_code``,
``stdout``, ``stderr``). Curated exports put the rounds in ``result.json`` itself (``history``)
and the problem in ``original.py``; ``generation_result.json`` is the same object with
``generation_time`` and ``method``.

One run a ``result.json``: one turn per round of the winning worker (its kernel written as
``kernel.py``, then its test run: passed or failed, with the test's output), the problem's
reference from the file beside it, the outcome from ``success`` (KernelAgent's own test) and the
timings from ``performance`` when it measured them. The other workers' rounds are counted in a
note, not read. "Lines" are the rounds (1, 2, ...).
"""

from __future__ import annotations

import os
import re
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    TooBig,
    as_dict,
    as_num,
    as_str,
    iso_ms,
    parse_json,
    read_bounded,
)
from ktui.trace.model import FAILED, OK, KernelUse, Metrics, Run, Terminal, kernel_sha1
from ktui.trace.notes import JSONError
from ktui.trace.words import count

NAME = "kernelagent"
LABEL = "KernelAgent session result (result.json)"
LINE_BASED = False

_MAX_FILE = 4 << 20
# what reading a side file may raise: it is then left alone (JSONError is itself a tuple)
_READ_ERRORS: tuple[type[BaseException], ...] = (OSError, TooBig, *JSONError)
_MAX_ROUNDS = 500
_ROUND = re.compile(r"^round_(\d+)\.json$")
_PROBLEM_FILES = ("problem.txt", "original.py", "original_pytorch.py")


def detect_object(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("success"), bool) and \
        isinstance(obj.get("kernel_code"), str) and isinstance(obj.get("rounds"), int) and \
        not isinstance(obj.get("rounds"), bool) and \
        any(k in obj for k in ("worker_id", "history", "session_dir"))


def _read(path: str) -> Any:
    try:
        return parse_json(read_bounded(path, _MAX_FILE))
    except _READ_ERRORS:
        return None


def _worker_rounds(session: str, worker: Any) -> tuple[list[dict], int]:
    """The winning worker's rounds from ``workers/worker_<N>/round_<K>.json``, and how many
    rounds the other workers wrote."""
    wdir = os.path.join(session, "workers")
    try:
        workers = sorted(os.listdir(wdir))
    except OSError:
        return [], 0
    mine: list[tuple[int, dict]] = []
    others = 0
    for w in workers[:64]:
        try:
            names = os.listdir(os.path.join(wdir, w))
        except OSError:
            continue
        rounds = sorted((int(m.group(1)), n) for n in names if (m := _ROUND.match(n)))[:_MAX_ROUNDS]
        if w != f"worker_{worker}":
            others += len(rounds)
            continue
        for k, n in rounds:
            r = _read(os.path.join(wdir, w, n))
            if isinstance(r, dict):
                mine.append((k, r))
    return [r for _, r in sorted(mine, key=lambda kr: kr[0])], others


def _level(v: Any) -> int | None:
    m = re.fullmatch(r"[Ll](?:evel)?_?(\d{1,3})", v) if isinstance(v, str) else None
    if m:
        return int(m.group(1))
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1000 else None


def _problem(run: Run, session: str, result_name: str) -> None:
    """The problem's name, level and number (``problem_info.json``: ``level``, ``problem_id``,
    ``operation_name``; an export's ``manifest.json``: ``level`` "L3", ``name`` "31_VisionAttention")
    and its reference source."""
    p = run.problem
    info = as_dict(_read(os.path.join(session, "problem_info.json")))
    manifest = as_dict(_read(os.path.join(session, "manifest.json")))
    p.name = as_str(info.get("operation_name")) or as_str(manifest.get("name")) or os.path.basename(session)
    p.level = _level(info.get("level")) or _level(manifest.get("level"))
    pid = info.get("problem_id")
    m = re.match(r"^(\d{1,4})_", p.name)
    p.problem_id = pid if isinstance(pid, int) and not isinstance(pid, bool) else int(m.group(1)) if m else None
    if p.level is not None and p.problem_id is not None:
        p.dataset_variant = "KernelBench"
    for name in _PROBLEM_FILES:
        f = os.path.join(session, name)
        try:
            src = read_bounded(f, _MAX_FILE).decode("utf-8", "replace")
        except (OSError, TooBig):
            continue
        if src.strip():
            p.reference_source = src
            p.reference_origin = f"{name} beside {result_name}"
            return


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    if not detect_object(obj):
        asm.problem(0, "not a KernelAgent result: expected success, kernel_code and rounds", "", "error", "$")
        return asm.finish()
    session = os.path.dirname(os.path.abspath(path))
    run.persona = f"worker {obj.get('worker_id')}" if obj.get("worker_id") is not None else None
    _problem(run, session, os.path.basename(path))
    history = obj.get("history")
    if isinstance(history, list):
        rounds, others = [r for r in history[:_MAX_ROUNDS] if isinstance(r, dict)], 0
    else:
        rounds, others = _worker_rounds(session, obj.get("worker_id"))
    if not rounds:  # no round recorded: the result's kernel is the only version
        rounds = [{"round": obj.get("rounds"), "success": obj["success"], "kernel_code": obj["kernel_code"]}]
        asm.note(0, "no round files beside the result: its final kernel only")
    if others:
        asm.note(0, f"the other workers wrote {count(others, 'round')} (not read: only the winning worker's)")
    tests: list[tuple[int, int, str, str, str]] = []  # (turn, call index, status, summary, kernel sha1)
    for k, r in enumerate(rounds):
        line, ts = k + 1, iso_ms(r.get("timestamp"))
        t = asm.turn(line, ts)
        asm.event(line, 0, 0, "round", ts, "agent", t.index)
        code = as_str(r.get("kernel_code"))
        if code:
            w = asm.call(t, "write_kernel", {"file_path": "kernel.py", "content": code}, line, ts)
            asm.result(w, "kernel.py written", line, ts, status=OK)
            asm.track_call(w)
        ok = r.get("success")
        if isinstance(ok, bool):
            out = "\n".join(x for x in (as_str(r.get("stdout")), as_str(r.get("stderr"))) if x)
            c = asm.call(t, "run_test", {"command": "python test.py"}, line, ts)
            status = OK if ok else FAILED
            asm.result(c, out or ("test passed" if ok else "test failed"), line, ts, status=status)
            tests.append((t.index, c.index, status, f"round {r.get('round', k + 1)}: test "
                          + ("passed" if ok else "failed"), kernel_sha1(code) if code else ""))
    perf = as_dict(obj.get("performance"))
    speed = as_num(perf.get("speedup")) if perf.get("success") is True else None
    text = "KernelAgent's test " + ("passed" if obj["success"] else "failed") + \
        (f"; speedup {speed:.3g}x over PyTorch" if speed is not None else "")
    asm.outcome("passed" if obj["success"] else "failed", None, text, len(rounds), "grader")
    run = asm.finish()
    for turn, idx, status, summary, sha in tests:  # each test judged the kernel its round wrote
        kv = next((v for v in run.kernels if v.sha1 == sha), None)
        if kv is not None:
            kv.uses.append(KernelUse(turn, idx, "run_test", status, summary, True))
    m = Metrics(source=f"{os.path.basename(path)} (success, performance)", correct=obj["success"], speedup=speed)
    if speed is not None:
        ms_t, ms_ref = as_num(perf.get("triton_time_ms")), as_num(perf.get("pytorch_time_ms"))
        m.runtime_us = ms_t * 1000 if ms_t is not None else None
        m.ref_runtime_us = ms_ref * 1000 if ms_ref is not None else None
    run.metrics = m
    if perf.get("error"):
        run.terminal.append(Terminal("halt", f"performance: {as_str(perf.get('error')) or perf.get('error')}"[:300], 0))
    from ktui.trace.derive import flags as derive_flags

    derive_flags(run)
    return run
