"""Kernel-generation sample records: one JSON list, one record a sample (problem), each a run.

Harnesses that generate Triton / CUDA kernels for KernelBench or KernelBook problems and keep
the model's reasoning for training write one record per sample into a JSON list (seen in
github.com/Prathmesh234/MultiTurnKernel-SFT, ``reasoning_traces_*.json``: its
``orchestrator.py`` and ``multi_turn_queue.py``, GLM-4.5-Air and Qwen3-235B, kernels benchmarked
on a Modal H100). A record holds ``sample_key`` (``kernelbench_80``, ``kernelbook_632``),
``source`` (``kernelbench`` / ``kernelbook``), ``level``, ``name`` (``80_Gemm_Max_Subtract_GELU``),
``problem_id``, ``pytorch_code`` (the reference: ``Model``, ``get_inputs``, ``get_init_inputs``)
and ``timestamp``, and either

- one attempt (single-turn): ``thinking``, ``model_reasoning``, ``triton_code``,
  ``full_completion`` (the model's answer, the code in ``<triton>...</triton>``) and ``result``;
- the turns of a feedback loop (multi-turn): ``turns`` (each ``turn``, ``reasoning``,
  ``triton_code``, ``full_completion``, ``result``, ``feedback_given``: the next prompt),
  ``num_turns``, ``stop_reason`` (``success_fast``: correct and at least 1x; ``max_turns_reached``),
  ``final_triton_code``, ``final_result`` (the last turn's result) and ``full_messages`` (the chat:
  system prompt, task, answers, feedback).

A ``result`` is the benchmark's: ``correctness``, ``speedup`` (over the PyTorch reference; 0.0 when
not correct), ``kernel_time_ms``, ``reference_time_ms``, ``fast_0`` / ``fast_1`` / ``fast_2``,
``error`` (a compile or runtime traceback), ``timestamp`` (when the benchmark finished: the only
time the file gives a turn).

Each record is one run, addressed ``FILE#<sample_key>`` (a key seen twice: ``<sample_key>.2``, ...;
:mod:`ktui.trace.address`): one turn per attempt (the model's answer and reasoning, its kernel
written as ``triton_kernel.py``, the benchmark as a ``benchmark`` check whose verdict is pinned to
that kernel (the tracker's evidence), the feedback as the next user message). The outcome is the file's own verdict on
the final kernel (``final_result.correctness``; a single-turn record's ``result``), the speedup its
``speedup`` (over the reference) when correct. The reference is the record's ``pytorch_code``. The
records name no model (the file name may).
"""

from __future__ import annotations

import os
import re
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    as_int,
    as_list,
    as_str,
    iso_ms,
    kernelbench_problem,
)
from ktui.trace.model import FAILED, INCOMPLETE, OK, Run, Terminal, kernel_sha1
from ktui.trace.words import count, plural

NAME = "kernel-samples"
LABEL = "kernel-generation sample records (a JSON list: sample_key, pytorch_code, turns / result)"
LINE_BASED = False

MAX_RUNS = 20_000
MAX_TURNS = 200
_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")
KERNEL_FILE = "triton_kernel.py"


def _is_record(r: Any) -> bool:
    return isinstance(r, dict) and isinstance(r.get("sample_key"), str) and isinstance(r.get("pytorch_code"), str) \
        and (isinstance(r.get("turns"), list) or "triton_code" in r or "final_result" in r)


def detect_object(obj: Any) -> bool:
    if not isinstance(obj, list) or not obj:
        return False
    head = [r for r in obj[:8] if isinstance(r, dict)]
    return bool(head) and all(_is_record(r) for r in head)


def _keys(obj: Any) -> list[tuple[str, int]]:
    """(key, index) of every record that is a run, in file order."""
    out: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for i, r in enumerate(obj if isinstance(obj, list) else []):
        if not _is_record(r):
            continue
        base = r["sample_key"][:70]
        if not _KEY.match(base):
            base = re.sub(r"[^A-Za-z0-9_.-]", "_", base) or "sample"
        n = seen.get(base, 0) + 1
        seen[base] = n
        out.append((base if n == 1 else f"{base}.{n}", i))
        if len(out) >= MAX_RUNS:
            break
    return out


def runs_in(obj: Any) -> list[str]:
    return [k for k, _ in _keys(obj)]


def load_object(obj: Any, path: str) -> Run:
    """The file as a whole is not one run: what it holds, and how to open one."""
    asm = Assembler(path, NAME)
    keys = runs_in(obj)
    left = sum(1 for r in obj if not _is_record(r)) if isinstance(obj, list) else 0
    if keys:
        more = f", … ({len(keys):,} in all)" if len(keys) > 3 else ""
        odd = f"; {count(left, 'item')} {plural(left, 'is not a sample record', 'are not sample records')}" if left else ""
        asm.problem(0, f"holds {len(keys):,} runs, one a sample: open one as {os.path.basename(path)}#KEY "
                    f"(keys: {', '.join(keys[:3])}{more}); `ktui runs` on its folder lists them all{odd}")
    else:
        asm.problem(0, "a file of kernel-generation sample records that holds no sample")
    return asm.finish()


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1e15 else None


def _result_text(res: dict) -> tuple[str, str]:
    """(status, text) of one benchmark result."""
    parts = [f"correctness: {res.get('correctness')}"]
    for k, unit in (("speedup", "x"), ("kernel_time_ms", " ms"), ("reference_time_ms", " ms")):
        v = _num(res.get(k))
        if v is not None:
            parts.append(f"{k}: {v:g}{unit}")
    fast = [k for k in ("fast_0", "fast_1", "fast_2") if isinstance(res.get(k), bool)]
    if fast:
        parts.append(", ".join(f"{k}: {res[k]}" for k in fast))
    err = res.get("error")
    if err not in (None, "", False):
        parts.append(f"error: {str(err)[:4000]}")
    return (OK if res.get("correctness") is True else FAILED), "\n".join(parts)


def _dict_result(v: Any) -> dict:
    """A result: an object, or (in older single-turn records) its Python repr."""
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v.startswith("{") and len(v) < 1 << 20:
        import ast

        try:
            got = ast.literal_eval(v)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return {}
        return got if isinstance(got, dict) else {}
    return {}


def load_run(obj: Any, path: str, key: str) -> Run:
    idx = dict(_keys(obj)).get(key) if isinstance(key, str) else None
    asm = Assembler(path, NAME)
    run = asm.run
    if idx is None:
        keys = runs_in(obj)
        asm.problem(0, f"no run {str(key)[:80]!r} in this file (it holds {len(keys):,}: "
                    f"{', '.join(keys[:3])}{', …' if len(keys) > 3 else ''})")
        return asm.finish()
    r = obj[idx]
    source = as_str(r.get("source")) or ""
    run.scenario = os.path.splitext(os.path.basename(path))[0][:80] or None
    name = as_str(r.get("name"))
    name = None if name in (None, "None", "") else name
    if source == "kernelbench" and name:
        kernelbench_problem(run.problem, level=r.get("level"), name=name, problem_id=r.get("problem_id"))
        run.problem.dataset_variant = "KernelBench"
    else:
        run.problem.name = name or r["sample_key"][:120]
        if source:
            run.problem.dataset_variant = {"kernelbook": "KernelBook"}.get(source, source[:40])
    run.problem.reference_source = r["pytorch_code"]
    run.problem.reference_origin = f"{os.path.basename(path)}#{key} pytorch_code"
    run.problem.backend = "triton"
    msgs = [m for m in as_list(r.get("full_messages")) if isinstance(m, dict)]
    system = next((as_str(m.get("content")) for m in msgs if m.get("role") == "system"), None)
    if system:
        asm.message(0, "system", system, None)
    task = next((as_str(m.get("content")) for m in msgs if m.get("role") == "user"), None)
    asm.message(0, "user", task or f"Convert this PyTorch code to a Triton kernel:\n\n{r['pytorch_code']}")
    multi = isinstance(r.get("turns"), list)
    turns = [t for t in as_list(r.get("turns")) if isinstance(t, dict)] if multi else [
        {"reasoning": r.get("model_reasoning") or r.get("thinking"), "triton_code": r.get("triton_code"),
         "full_completion": r.get("full_completion"), "result": r.get("result")}]
    if len(turns) > MAX_TURNS:
        asm.note(0, f"{len(turns):,} turns recorded: the first {MAX_TURNS} read")
        turns = turns[:MAX_TURNS]
    prev_ts: int | None = None
    for k, tr in enumerate(turns):
        line = k + 1
        res = _dict_result(tr.get("result"))
        done = iso_ms(res.get("timestamp")) or (iso_ms(r.get("timestamp")) if not multi else None)
        t = asm.turn(line, prev_ts)
        asm.event(line, 0, 0, "turn", prev_ts, "agent", t.index)
        asm.add_reasoning(t, as_str(tr.get("reasoning")))
        asm.add_text(t, as_str(tr.get("full_completion")))  # its code is triton_code, written below
        code = as_str(tr.get("triton_code"))
        if code:
            w = asm.call(t, "write_kernel", {"file_path": KERNEL_FILE, "content": code}, line, None)
            asm.result(w, f"{KERNEL_FILE} written", line, None, status=OK)
            asm.track_call(w)
        elif tr.get("full_completion") is None:
            asm.note(line, f"turn {k + 1}: no answer recorded (the generation failed)")
        if res:
            status, text = _result_text(res)
            c = asm.call(t, "benchmark", {"kernel": KERNEL_FILE}, line, None)
            asm.result(c, text, line, done, status=status)  # its verdict pinned to the kernel (evidence)
        fb = as_str(tr.get("feedback_given"))
        if fb:
            asm.message(line, "user", fb)
        prev_ts = done if done is not None else prev_ts
    final = _dict_result(r.get("final_result")) if multi else _dict_result(r.get("result"))
    final_code = as_str(r.get("final_triton_code"))
    sr = as_str(r.get("stop_reason"))
    if sr:
        run.terminal.append(Terminal("halt", f"stop_reason: {sr}" + (f" ({as_int(r.get('num_turns'))} turns)"
                                                                     if as_int(r.get("num_turns")) else ""),
                                     len(turns)))
    run = asm.finish()
    if final_code and run.kernels and run.kernels[-1].sha1 != kernel_sha1(final_code):
        run.notes.append((len(turns), "final_triton_code is not the last turn's kernel"))
    if not final:
        run.outcome = INCOMPLETE
    else:
        from ktui.trace import results
        from ktui.trace.results import REFERENCE, Result, outcome_of

        src = f"{os.path.basename(path)}#{key} " + ("final_result" if multi else "result")
        verdict = Result(NAME, src, rule="correctness of the final kernel (the benchmark's)")
        verdict.correct = final.get("correctness") if isinstance(final.get("correctness"), bool) else None
        verdict.outcome = outcome_of(verdict.correct)
        sp = _num(final.get("speedup"))
        if verdict.correct and sp is not None and sp > 0:
            verdict.speedups[REFERENCE] = sp
            verdict.primary = REFERENCE
        kt, rt = _num(final.get("kernel_time_ms")), _num(final.get("reference_time_ms"))
        verdict.runtime_us = kt * 1000.0 if kt is not None and kt > 0 else None
        verdict.ref_runtime_us = rt * 1000.0 if rt is not None and rt > 0 else None
        if final.get("error") not in (None, "", False):
            verdict.error = str(final.get("error"))[:2000]
        if sr:
            verdict.values["stop_reason"] = sr[:60]
        run.results = [verdict]
        results.apply(run, verdict)
    run._results_attached = True  # type: ignore[attr-defined]  # the file is its own result
    from ktui.trace.derive import flags as derive_flags

    derive_flags(run)
    return run
