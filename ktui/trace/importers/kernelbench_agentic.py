"""KernelBench-Agentic results (pango0/KernelBench-Agentic): one ``gen_results.json`` a
configuration, every problem's run in it.

The file is ``{"meta": {method, model, max_turns, agents, best_of_n, ...}, "levels": {"<L>":
{"<P>": problem}}}``; a problem holds ``problem_name`` (``2_Standard_matrix_multiplication_.py``),
``reference_arch_path`` (a KernelBench checkout on the machine that ran it), ``prompt``,
``turns`` (each: ``raw_response``, ``extracted_code``, ``eval``: KernelBench's eval result,
``feedback``, ``status``, best-of-n ``candidates``), the final kernel (``extracted_code``,
``final_turn``), its evaluation ``final_eval`` (KernelBench's: ``compiled``, ``correctness``,
``runtime`` and ``ref_runtime`` in ms) and ``final_status``. Single-shot configurations
(``zero_shot``, ``guided``) hold one ``raw_response`` and no evaluation.

Each problem is one run, addressed ``gen_results.json#L<L>:P<P>`` (:mod:`ktui.trace.address`):
one turn per turn of the loop (the model's response, its kernel written as ``model_new.py``, the
evaluation as a ``run_correctness`` check), the outcome from ``final_eval.correctness`` (the
file's own verdict on the final kernel: the configuration's pass count is the number of its
problems whose ``final_eval.correctness`` is true), the speedup over the reference from
``ref_runtime / runtime`` of a correct kernel. The reference: the KernelBench file named by
``reference_arch_path`` when a KernelBench checkout lies above the file (``KernelBench/level<L>``).
A problem without ``final_eval`` is ``incomplete``: the file records no verdict.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    as_dict,
    as_int,
    as_list,
    as_str,
    iso_ms,
    kernelbench_problem,
)
from ktui.trace.model import FAILED, INCOMPLETE, OK, KernelUse, Run, kernel_sha1

NAME = "kernelbench-agentic"
LABEL = "KernelBench-Agentic results (gen_results.json, one run a problem)"
LINE_BASED = False

MAX_RUNS = 20_000  # runs listed from one file
MAX_TURNS = 200  # turns read from one run
_MAX_SCAN = 200_000  # entries of one level looked at when counting those that are not runs
_KEY_PART = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
_KEY = re.compile(r"^L([A-Za-z0-9_.-]{1,40}):P([A-Za-z0-9_.-]{1,40})$")
_PROBLEM_KEYS = ("turns", "extracted_code", "raw_response", "final_eval")


def _is_problem(p: Any) -> bool:
    return isinstance(p, dict) and isinstance(p.get("problem_name"), str) and any(k in p for k in _PROBLEM_KEYS)


def detect_object(obj: Any) -> bool:
    if not (isinstance(obj, dict) and isinstance(obj.get("levels"), dict) and isinstance(obj.get("meta"), dict)):
        return False
    for lv in list(obj["levels"].values())[:4]:
        if isinstance(lv, dict):
            for p in list(lv.values())[:4]:
                if _is_problem(p):
                    return True
    return False


def _order(k: str) -> tuple[int, int | str]:
    return (0, int(k)) if k.isdigit() and len(k) < 10 else (1, k)


def runs_in(obj: Any) -> list[str]:
    """The runs the file holds: ``L<level>:P<problem>``, in level and problem order. Keys that
    could not be written in an address (``#``, ``/``, spaces, over 40 characters) are left out."""
    out: list[str] = []
    levels = as_dict(as_dict(obj).get("levels"))
    for lk in sorted((k for k in levels if isinstance(k, str) and _KEY_PART.match(k)), key=_order):
        lv = levels[lk]
        if not isinstance(lv, dict):
            continue
        for pk in sorted((k for k in lv if isinstance(k, str) and _KEY_PART.match(k)), key=_order):
            if _is_problem(lv[pk]):
                out.append(f"L{lk}:P{pk}")
                if len(out) >= MAX_RUNS:
                    return out
    return out


def skipped(obj: Any) -> int:
    """Problem entries that are not runs (a key no address can hold, or not a problem)."""
    n = 0
    for lk, lv in as_dict(as_dict(obj).get("levels")).items():
        if not isinstance(lv, dict):
            n += 1
            continue
        for pk, p in list(lv.items())[:_MAX_SCAN]:
            if not (_KEY_PART.match(str(lk)) and _KEY_PART.match(str(pk)) and _is_problem(p)):
                n += 1
    return n


def load_object(obj: Any, path: str) -> Run:
    """The file as a whole is not one run: what it holds, and how to open one."""
    asm = Assembler(path, NAME)
    keys = runs_in(obj)
    shown = os.path.basename(path)
    left = skipped(obj)
    if keys:
        more = f", … ({len(keys):,} in all)" if len(keys) > 3 else ""
        odd = f"; {left:,} entr(ies) are not runs (not a problem, or a key no address can hold)" if left else ""
        n = f"at least {len(keys):,} runs (the first {MAX_RUNS:,} listed)" if len(keys) >= MAX_RUNS else \
            f"{len(keys):,} runs"
        asm.problem(0, f"holds {n}, one a problem: open one as {shown}#KEY "
                    f"(keys: {', '.join(keys[:3])}{more}); `ktui runs` on its folder lists them all{odd}")
    else:
        asm.problem(0, "a KernelBench-Agentic results file that holds no problem run")
    return asm.finish()


def _reference(run: Run, path: str, level: Any, p: dict) -> None:
    from ktui.trace.results.kernelbench import checkout_level_dir, problem_file

    lv, pid = run.problem.level, run.problem.problem_id
    if lv is None or not isinstance(pid, int):
        return
    ld = checkout_level_dir(os.path.dirname(os.path.abspath(path)), lv)
    if ld is None:
        return
    name = as_str(p.get("problem_name")) or ""
    cand = os.path.join(ld, os.path.basename(name)) if name.endswith(".py") and "/" not in name else None
    ref = cand if cand and os.path.isfile(cand) else problem_file(ld, pid)
    if ref is None:
        return
    from ktui.trace.results import read_small

    raw = read_small(ref)
    if raw and raw.strip():
        run.problem.reference_source = raw.decode("utf-8", "replace")
        run.problem.reference_origin = f"KernelBench checkout: {ref}"


def _eval_text(ev: dict) -> tuple[str, str]:
    """(status, text) of one KernelBench eval result."""
    md = as_dict(ev.get("metadata"))
    parts = [f"compiled: {ev.get('compiled')}", f"correctness: {ev.get('correctness')}"]
    if isinstance(ev.get("runtime"), (int, float)) and not isinstance(ev.get("runtime"), bool):
        parts.append(f"runtime: {ev['runtime']} ms")
    for k in ("compilation_error", "runtime_error", "correctness_issue", "max_difference", "correctness_trials"):
        v = md.get(k)
        if v not in (None, "", []):
            parts.append(f"{k}: {str(v)[:600]}")
    if ev.get("error") not in (None, "", False):
        parts.append(f"error: {str(ev.get('error'))[:600]}")
    return (OK if ev.get("correctness") is True else FAILED), "\n".join(parts)


def load_run(obj: Any, path: str, key: str) -> Run:
    m = _KEY.match(key) if isinstance(key, str) else None
    lv = as_dict(as_dict(obj).get("levels")).get(m.group(1)) if m else None
    p = as_dict(lv).get(m.group(2)) if m and isinstance(lv, dict) else None
    asm = Assembler(path, NAME)
    run = asm.run
    if m is None or not _is_problem(p):
        keys = runs_in(obj)
        asm.problem(0, f"no run {key[:80]!r} in this file (it holds {len(keys):,}: "
                    f"{', '.join(keys[:3])}{', …' if len(keys) > 3 else ''})")
        return asm.finish()
    assert isinstance(p, dict) and m is not None
    meta = as_dict(as_dict(obj).get("meta"))
    run.model = as_str(meta.get("model"))
    run.persona = as_str(meta.get("method"))
    run.scenario = os.path.basename(os.path.dirname(os.path.abspath(path))) or None
    run.max_turns = as_int(meta.get("max_turns"))
    name = as_str(p.get("problem_name")) or ""
    kernelbench_problem(run.problem, level=m.group(1), name=name[:-3] if name.endswith(".py") else name,
                        problem_id=p.get("problem_id"))
    if run.problem.level is not None and run.problem.problem_id is not None:
        run.problem.dataset_variant = "KernelBench"
    _reference(run, path, m.group(1), p)
    prompt = as_str(p.get("prompt")) or as_str(p.get("base_prompt"))
    if prompt:
        asm.message(0, "user", prompt)
    turns = [t for t in as_list(p.get("turns")) if isinstance(t, dict)]
    if len(turns) > MAX_TURNS:
        asm.note(0, f"{len(turns):,} turns recorded: the first {MAX_TURNS} read")
        turns = turns[:MAX_TURNS]
    if not turns and ("raw_response" in p or "extracted_code" in p):  # a single-shot configuration
        turns = [{"raw_response": p.get("raw_response"), "extracted_code": p.get("extracted_code")}]
    ts = iso_ms(p.get("generated_at"))
    checks: list[tuple[int, int, str, str, str]] = []
    last_sha = ""
    for k, tr in enumerate(turns):
        line = k + 1
        t = asm.turn(line, ts)
        asm.event(line, 0, 0, "turn", ts, "agent", t.index)
        diag = as_dict(tr.get("diagnosis"))
        asm.add_text(t, as_str(tr.get("raw_response")))  # its code is the file's extracted_code, written below
        code = as_str(tr.get("extracted_code"))
        if code:
            w = asm.call(t, "write_kernel", {"file_path": "model_new.py", "content": code}, line, ts)
            asm.result(w, "model_new.py written", line, ts, status=OK)
            asm.track_call(w)
            last_sha = kernel_sha1(code)
        cands = [c for c in as_list(tr.get("candidates")) if isinstance(c, dict)]
        if cands:
            n_ok = sum(1 for c in cands if c.get("correct") is True)
            n_comp = sum(1 for c in cands if c.get("compiled") is True)
            asm.note(line, f"turn {k}: best of {len(cands)} candidates ({n_comp} compiled, {n_ok} correct)")
        ev = tr.get("eval")
        if isinstance(ev, dict):
            status, text = _eval_text(ev)
            fb = as_str(tr.get("feedback"))
            c = asm.call(t, "run_correctness", {"command": "KernelBench eval"}, line, ts)
            asm.result(c, text + (f"\n\n{fb}" if fb else ""), line, ts, status=status)
            checks.append((t.index, c.index, status, f"turn {k}: eval " + ("correct" if status == OK else "not correct"),
                           kernel_sha1(code) if code else ""))
        if diag.get("raw"):
            asm.message(line, "observation", f"diagnosis: {as_str(diag.get('raw')) or ''}", None)
    final_code = as_str(p.get("extracted_code"))
    if final_code and kernel_sha1(final_code) != last_sha and turns:
        # the loop keeps its best turn's kernel (final_turn), not always the last: that kernel is
        # the final version, set at the end of the last turn (no turn of its own)
        ft = as_int(p.get("final_turn"))
        line = len(turns)
        w = asm.call(t, "write_kernel", {"file_path": "model_new.py", "content": final_code}, line, ts)
        asm.result(w, f"the final kernel (turn {ft}'s)" if ft is not None else "the final kernel", line, ts,
                   status=OK)
        asm.track_call(w)
    fe = p.get("final_eval")
    src = f"{os.path.basename(path)}#{key} final_eval"
    if not isinstance(fe, dict):
        asm.note(0, "the file records no evaluation of this run (its status "
                 f"{as_str(p.get('status')) or '—'!r} is the generation's)")
    run = asm.finish()
    for turn, idx, status, summary, sha in checks:
        kv = next((v for v in run.kernels if v.sha1 == sha), None)
        if kv is not None:
            kv.uses.append(KernelUse(turn, idx, "run_correctness", status, summary, True))
    if not isinstance(fe, dict):  # the file's verdict is final_eval: without it, none (a turn's check is not it)
        run.outcome = INCOMPLETE
    else:
        from ktui.trace import results
        from ktui.trace.results import kernelbench

        r = kernelbench.result_of(fe, src)
        r.harness = NAME
        fs = as_str(p.get("final_status"))
        if fs:
            r.values["final_status"] = fs[:60]
        run.results = [r]
        results.apply(run, r)
        ref_ms = fe.get("ref_runtime")
        if run.metrics is not None and isinstance(ref_ms, (int, float)) and not isinstance(ref_ms, bool) \
                and 0 < ref_ms < 1e12:
            run.metrics.ref_runtime_us = float(ref_ms) * 1000.0  # KernelBench times are in ms
    run._results_attached = True  # type: ignore[attr-defined]  # the file is its own result
    from ktui.trace.derive import flags as derive_flags

    derive_flags(run)
    return run
