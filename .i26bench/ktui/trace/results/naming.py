"""The problem a run worked on, named so that runs of one task group together.

Where the trace names no problem (a Harbor trajectory, a Claude Code session in a task folder),
the task's name comes from, in order: a result file that names it (Harbor's ``result.json``
``task_name``), else the folder the run sits in (a Harbor trial folder, ``<task>__<7-char
trial id>``; folders such as ``agent/`` and ``sample2/`` are skipped). Task names of the form
``family__model__config__dtype`` are shown as ``family · model · config · dtype``.

Harbor cuts a trial folder's task name to 32 characters (``fused_silu_fp8__mixtral__T512__f``);
a cut last part that starts a dtype name (``f``, ``fp``, ``b``) is completed from the dtype the
reference's ``get_inputs`` creates its tensors in (``torch.float16`` -> ``fp16``), so that the
run groups with the task's other runs and matches its task folder under ``--tasks``.
"""

from __future__ import annotations

import os
import re
from typing import Any

_SKIP_DIR = re.compile(r"^(agent|agent-logs|logs|verifier|trajectories|sessions|sample_?\d+|seed_?\d+|run_?\d+|"
                       r"trial_?\d+|attempt_?\d+|\d+)$", re.I)
_TRIAL_ID = re.compile(r"^(?P<task>.{1,40}?)__(?P<id>[A-Za-z0-9]{7})$")
HARBOR_CUT = 32
_DTYPES = [("float16", "fp16"), ("half", "fp16"), ("bfloat16", "bf16"), ("float32", "fp32"),
           ("float8_e4m3fn", "fp8"), ("float8_e5m2", "fp8"), ("float64", "fp64"), ("int8", "int8")]
SEP = " · "


def _looks_random(s: str) -> bool:
    """A Harbor trial id: 7 letters and digits, mixed (not a word like 'mixtral')."""
    kinds = sum(bool(re.search(p, s)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    return kinds >= 2 and not re.fullmatch(r"[a-z]+\d*|[A-Z]\d+|\d+[a-z]*", s)


def task_from_path(path: str) -> str | None:
    d = os.path.dirname(os.path.abspath(path))
    for _ in range(3):
        name = os.path.basename(d)
        if not name:
            return None
        if not _SKIP_DIR.match(name):
            m = _TRIAL_ID.match(name)
            if m and _looks_random(m.group("id")):
                return m.group("task")
            return name
        d = os.path.dirname(d)
    return None


def reference_dtype(reference: str | None) -> str | None:
    """The short dtype name (fp16, bf16...) the reference's inputs are made in, when there is one."""
    if not reference:
        return None
    i = reference.find("def get_inputs")
    body = reference[i:i + 3000] if i >= 0 else reference
    found = []
    for m in re.finditer(r"torch\.(float16|half|bfloat16|float32|float8_e4m3fn|float8_e5m2|float64|int8)\b", body):
        short = dict(_DTYPES)[m.group(1)]
        if short not in found:
            found.append(short)
    return found[0] if found else None


def complete_cut(task: str, reference: str | None) -> str:
    """Complete a task name cut at 32 characters whose last part starts a dtype name."""
    if len(task) != HARBOR_CUT or "__" not in task:
        return task
    head, last = task.rsplit("__", 1)
    dt = reference_dtype(reference)
    if dt and last and dt.startswith(last) and dt != last:
        return f"{head}__{dt}"
    return task


def display(task: str) -> str:
    parts = [p for p in task.split("__") if p]
    return SEP.join(parts) if len(parts) > 1 else task


def name_problem(run: Any, results: list[Any]) -> None:
    p = run.problem
    if p.name or p.problem_id is not None or p.level is not None:
        return
    task = next((r.task for r in results if getattr(r, "task", None)), None)
    from_result = task is not None
    if task is None and (results and results[0].harness not in ("inspect", "ensemble")):
        task = task_from_path(run.path)
    if task is None:
        return
    if not from_result:
        task = complete_cut(task, p.reference_source)
    p.task = task
    p.name = display(task)
