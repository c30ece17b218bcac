"""KernelBench run folders: one kernel file per sample and the folder's ``eval_results.json``.

KernelBench's generation scripts write ``runs/<run name>/level_<L>_problem_<P>_sample_<S>_kernel.py``
(the model's ``ModelNew``, no transcript) and its evaluation script writes ``eval_results.json``
in the same folder: ``{"<P>": {"sample_id", "compiled", "correctness", "metadata", "runtime",
"runtime_stats"}}`` (older) or ``{"<P>": [{...per sample...}]}`` (newer), times in milliseconds;
``metadata`` holds the error text (``compilation_error``, ``runtime_error``, ``correctness_issue``)
and the hardware. ``generation_config.yaml`` beside them names the model.

Each sample file is a run of its own (format ``kernelbench-run``): one kernel version, the
problem ``L<L> P<P> <name>`` (the name and reference from a KernelBench checkout found above
the run folder: ``KernelBench/level<L>/<P>_<name>.py``), the outcome from ``eval_results.json``:
correct is a pass, compiled-but-wrong or not compiled a failure, no entry incomplete.

KernelBench's Triton generation script (``scripts/run_triton_generation.py``, branch
``sokserey/tritonDump``) writes ``<run>/kernels/level<L>_problem<P>_triton.py`` and, beside
``kernels/``, ``<run>/results.jsonl``: one line per kernel ``{level, problem_id, problem_name,
runtime_original_us, runtime_triton_us, speedup, kernel_path, runtime_{original,triton}_stats:
{mean, ..., hardware}, attempts}``, written only for a kernel that compiled and was correct (a
problem it never solved leaves no file). Its times are milliseconds although the fields say
``_us``: they are KernelBench's ``time_execution_with_cuda_event`` means (CUDA events' elapsed
time, in ms); a line is read so, and says so.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any, TypeGuard

from ktui.trace.model import FAILED, OK, KernelUse, KernelVersion, Run, Terminal
from ktui.trace.results import REFERENCE, Result, num, outcome_of, read_json, read_small

NAME = "kernelbench"
FORMAT = "kernelbench-run"
# level_<L>_problem_<P>_sample_<S>_kernel.py (KernelBench), problem_<P>_kernel.py (forks' scripts)
# level<L>_problem<P>_triton.py (KernelBench's Triton generation script)
SAMPLE = re.compile(r"^(?:level_?(\d+)_)?problem_?(\d+)(?:_sample_(\d+))?_(?:kernel|triton)\.py$")
RESULTS = "eval_results.json"
LINES = "results.jsonl"  # the Triton generation script's, one line per correct kernel, beside kernels/
_LINE_KEYS = ("runtime_triton_us", "runtime_original_us", "speedup", "kernel_path")
_LEVEL_DIR = re.compile(r"level_?(\d+)", re.I)
_MAX_KERNEL = 4 << 20
_UP = 5  # levels above the run folder searched for a KernelBench checkout
_ERR_KEYS = ("compilation_error", "runtime_error", "correctness_issue", "error", "other_error",
             "cuda_error", "max_difference")


def is_sample(path: str) -> bool:
    return SAMPLE.match(os.path.basename(path)) is not None


def _is_entry(v: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(v, dict) and ("correctness" in v or "compiled" in v)


def _is_detailed(obj: Any) -> bool:
    """A fork's ``detailed_results.json``: ``{run_info, results: [{problem_id, eval_result}]}``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("results"), list) or not obj["results"]:
        return False
    return all(isinstance(x, dict) and "problem_id" in x and ("eval_result" in x or "success" in x)
               for x in obj["results"][:20])


def is_results_object(obj: Any) -> bool:
    if _is_detailed(obj):
        return True
    if not isinstance(obj, dict) or not obj:
        return False
    vals = list(obj.values())[:20]
    return all(_is_entry(v) or (isinstance(v, list) and all(_is_entry(x) for x in v[:20])) for v in vals)


def is_result_file(path: str) -> bool:
    return path.endswith(".json") and is_results_object(read_json(path))


_CACHE: dict[str, tuple[tuple[int, int], tuple[str, Any] | None]] = {}


def folder_results(run_dir: str) -> tuple[str, Any] | None:
    """(file name, parsed object) of the run folder's results file, found by content; cached by
    the folder's mtime (a hundred samples share one file)."""
    try:
        st = os.stat(run_dir)
        names = sorted(n for n in os.listdir(run_dir) if n.endswith(".json"))
    except OSError:
        return None
    sig = (st.st_mtime_ns, len(names))
    hit = _CACHE.get(run_dir)
    if hit is not None and hit[0] == sig:
        return hit[1]
    cands = []
    for n in sorted(names, key=lambda n: (n != RESULTS, n))[:8]:
        obj = read_json(os.path.join(run_dir, n))
        if is_results_object(obj):  # the one that says which run it is first (a checkpoint does not)
            cands.append((0 if isinstance(obj.get("run_info"), dict) or n == RESULTS else 1, n, obj))
    found = min(cands, key=lambda c: c[0])[1:] if cands else None
    if found is None and os.path.basename(os.path.abspath(run_dir)) == "kernels":
        lines = read_lines(os.path.join(os.path.dirname(os.path.abspath(run_dir)), LINES))
        if lines is not None:
            found = (f"../{LINES}", {"__lines__": lines})
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[run_dir] = (sig, found)
    return found


def is_line(v: Any) -> bool:
    return isinstance(v, dict) and isinstance(v.get("problem_id"), int) and not isinstance(v["problem_id"], bool) \
        and any(k in v for k in _LINE_KEYS)


def read_lines(path: str) -> list[dict] | None:
    """The lines of a Triton generation ``results.jsonl`` (None when it is not one); bounded."""
    from ktui.trace.notes import JSONError, loads

    raw = read_small(path)
    if raw is None:
        return None
    out = []
    for line in raw.splitlines()[:20000]:
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except JSONError:
            return None
        if not is_line(obj):
            return None
        out.append(obj)
    return out or None


def is_lines_file(path: str) -> bool:
    return os.path.basename(path) == LINES and read_lines(path) is not None


def _entry(obj: dict, problem: int, sample: int, level: int | None = None) -> dict | None:
    if "__lines__" in obj:
        for x in obj["__lines__"]:
            if x.get("problem_id") == problem and (level is None or x.get("level") in (None, level)):
                return _line_entry(x)
        return None
    if _is_detailed(obj):
        for x in obj["results"]:
            if isinstance(x, dict) and str(x.get("problem_id")) == str(problem) and x.get("sample_id", 0) == sample:
                e = x.get("eval_result")
                if _is_entry(e):
                    return e
                return {"compiled": False, "correctness": False,
                        "metadata": {"error": x.get("error") or "no evaluation result (generation failed?)"}}
        return None
    v = obj.get(str(problem), obj.get(problem))  # type: ignore[call-overload]
    if isinstance(v, list):
        for i, e in enumerate(v):
            if _is_entry(e) and (e.get("sample_id", i) == sample):
                return e
        return None
    if _is_entry(v) and v.get("sample_id", 0) == sample:
        return v
    return None


def _line_entry(x: dict) -> dict:
    """A results.jsonl line as an eval_results entry (every line is a kernel that compiled and was
    correct; its runtimes are milliseconds)."""
    st = x.get("runtime_triton_stats")
    rs: dict[str, Any] = st if isinstance(st, dict) else {}
    hw = rs.get("hardware") if isinstance(rs.get("hardware"), str) else None
    md: dict[str, Any] = {"hardware": hw} if hw else {}
    if isinstance(x.get("attempts"), int) and not isinstance(x["attempts"], bool):
        md["attempts"] = str(x["attempts"])
    return {"compiled": True, "correctness": True, "runtime": x.get("runtime_triton_us"),
            "ref_runtime": x.get("runtime_original_us"), "speedup": x.get("speedup"), "metadata": md,
            "units_note": "runtime_triton_us / runtime_original_us hold milliseconds (KernelBench's CUDA-event "
                          "timing), read as such"}


def _ms_to_us(v: Any) -> float | None:
    x = num(v)
    return None if x is None or x < 0 else x * 1000.0


def result_of(entry: dict, source: str) -> Result:
    r = Result(NAME, source, rule="correctness (compiled and every correctness trial matched)")
    if isinstance(entry.get("compiled"), bool):
        r.compiled = entry["compiled"]
    if isinstance(entry.get("correctness"), bool):
        r.correct = entry["correctness"]
    r.outcome = outcome_of(r.correct if r.correct is not None else (False if r.compiled is False else None))
    r.runtime_us = _ms_to_us(entry.get("runtime"))
    ref_us = _ms_to_us(entry.get("ref_runtime") if entry.get("ref_runtime") is not None else
                       entry.get("baseline_runtime"))
    if num(entry.get("speedup")) is not None:
        r.speedups[REFERENCE] = num(entry["speedup"])  # type: ignore[assignment]
    elif r.correct and r.runtime_us and ref_us:
        r.speedups[REFERENCE] = ref_us / r.runtime_us
    md = entry.get("metadata")
    md = md if isinstance(md, dict) else {}
    errs = []
    for k in _ERR_KEYS:
        v = md.get(k)
        if v not in (None, "", []):
            errs.append(f"{k}: {v}"[:600])
    r.error = "\n".join(errs)
    for k in ("hardware", "correctness_trials", "attempts"):
        if isinstance(md.get(k), str):
            r.values[k] = md[k][:120]
    r.ref_runtime_us = ref_us
    if isinstance(entry.get("units_note"), str):
        r.values["units"] = entry["units_note"]
    return r


def find(run: Any) -> Result | None:
    if getattr(run, "format", None) != FORMAT:
        return None
    m = SAMPLE.match(os.path.basename(run.path))
    if m is None:
        return None
    found = folder_results(os.path.dirname(os.path.abspath(run.path)))
    if found is None:
        return None
    name, obj = found
    problem, sample = int(m.group(2)), int(m.group(3) or 0)
    e = _entry(obj, problem, sample, int(m.group(1)) if m.group(1) else None)
    if e is None:
        return Result(NAME, f"{name} (no entry for problem {problem} sample {sample})", outcome="incomplete")
    return result_of(e, f"{name} [{problem}]" + (f" sample {sample}" if sample else ""))


# ---- a sample file as a run ---------------------------------------------------------------------
def checkout_level_dir(start: str, level: int, extra: str | None = None) -> str | None:
    """``.../KernelBench/level<L>``, ``.../level<L>`` or a clone's ``.../KernelBench/KernelBench/level<L>``
    found above ``start`` (or under ``extra``)."""
    roots = []
    if extra:
        roots.append(extra)
    d = os.path.abspath(start)
    for _ in range(_UP):
        roots.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    for root in roots:
        for cand in (os.path.join(root, "KernelBench", f"level{level}"), os.path.join(root, f"level{level}"),
                     # a clone of the KernelBench repository: its problems are under KernelBench/KernelBench
                     os.path.join(root, "KernelBench", "KernelBench", f"level{level}")):
            if os.path.isdir(cand):
                return cand
    return None


def problem_file(level_dir: str, problem: int) -> str | None:
    try:
        names = os.listdir(level_dir)
    except OSError:
        return None
    for n in sorted(names):
        if n.endswith(".py") and n.split("_", 1)[0] == str(problem):
            return os.path.join(level_dir, n)
    return None


def _config_value(run_dir: str, key: str) -> str | None:
    """A top-level ``key: value`` of the run folder's ``generation_config.yaml``."""
    raw = read_small(os.path.join(run_dir, "generation_config.yaml"))
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    m = re.search(rf"^{key}:\s*['\"]?([^'\"\n#]+?)['\"]?\s*$", text, re.M)
    return m.group(1).strip() if m else None


def _model_of(run_dir: str) -> str | None:
    return _config_value(run_dir, "model_name")


def load_sample(path: str) -> Run:
    """A KernelBench sample file as a run (never raises on data)."""
    from ktui.trace.derive import flags as derive_flags
    from ktui.trace.importers.kernels import backend_of

    run = Run(path=path)
    run.format = run.variant = FORMAT
    m = SAMPLE.match(os.path.basename(path))
    run_dir = os.path.dirname(os.path.abspath(path))
    raw = read_small(path) if m else None
    if m is None or raw is None:
        from ktui.trace.model import TraceProblem

        run.problems.append(TraceProblem(0, "not a KernelBench sample file (or unreadable, or over 4 MiB)"))
        return run
    problem, sample = int(m.group(2)), int(m.group(3) or 0)
    found = folder_results(run_dir)
    info = found[1].get("run_info") if found and isinstance(found[1].get("run_info"), dict) else {}
    level = int(m.group(1)) if m.group(1) else info.get("level") if isinstance(info.get("level"), int) else None
    if level is None:
        lm = _LEVEL_DIR.search(os.path.basename(run_dir))
        level = int(lm.group(1)) if lm else None
    code = raw[:_MAX_KERNEL].decode("utf-8", "replace")
    run.size_bytes = len(raw)
    run.n_events = 1
    named = os.path.dirname(run_dir) if os.path.basename(run_dir) == "kernels" else run_dir  # <run>/kernels/
    run.model = _model_of(named) or (info.get("model") if isinstance(info.get("model"), str) else None) or \
        os.path.basename(named)
    run.persona = f"sample {sample}"
    run.scenario = os.path.basename(named)
    p = run.problem
    p.level, p.problem_id = level, problem
    p.dataset_variant = "KernelBench"
    # KernelBench's `precision: fp16|bf16` casts the reference and its inputs to that dtype
    prec = _config_value(named, "precision")
    p.precision = prec[:16] if prec and re.fullmatch(r"[A-Za-z0-9_]{2,16}", prec) else None
    ld = checkout_level_dir(os.path.dirname(named), level) if level is not None else None
    ref = problem_file(ld, problem) if ld else None
    if ref is not None:
        p.name = os.path.basename(ref)
        src = read_small(ref)
        if src is not None:
            p.reference_source = src.decode("utf-8", "replace")
            p.reference_origin = f"KernelBench checkout: {ref}"
    kv = None
    if code.strip():  # an empty file: the generation wrote no code (no kernel version)
        sha = hashlib.sha1(code.encode("utf-8", "surrogatepass")).hexdigest()
        kv = KernelVersion(1, sha, code, None, 1, path=os.path.basename(path), origin="KernelBench sample file")
        run.kernels.append(kv)
        run.final_kernel_number = 1
        run.backend = backend_of(code)
    r = find(run)
    if kv is None:
        run.terminal.append(Terminal("eof", "the sample file is empty: no kernel was written", 0))
    if r is not None and r.outcome in ("passed", "failed"):
        if kv is not None:
            kv.uses.append(KernelUse(None, -1, r.source.split(" ", 1)[0], OK if r.outcome == "passed" else FAILED,
                                     (r.error.split("\n", 1)[0] if r.error else r.outcome)[:200], True))
        run.terminal.append(Terminal("grader", f"{r.source}: {r.outcome}", 0))
    elif kv is not None:
        run.terminal.append(Terminal("eof", "no evaluation result for this sample", 0))
    derive_flags(run)
    return run
