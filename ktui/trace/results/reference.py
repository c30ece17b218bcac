"""The reference a kernel is judged against, found where real harnesses put it.

In order (the first found wins; every result says which):

1. the trace's own field (ensemble ``fetch_problem``'s ``ref_arch_src``);
2. a fenced Python block of the task prompt that defines ``class Model`` and ``get_inputs``:
   KernelBench's prompt template ("You are given the following architecture: ```python ...```",
   after a worked example that is not the task's), a Harbor task's instruction (``## The
   reference``). A block under a heading or sentence that says "example" loses to one that
   says "reference" / "architecture"; otherwise the last block wins (the example comes first);
3. a task folder the user points at (``--tasks DIR``): the Harbor task whose folder name is the
   run's task name (``<task>/environment/reference.py``, ``<task>/reference.py``), or a
   KernelBench checkout's ``level<L>/<P>_<name>.py``;
4. ``--reference FILE``.

The task's ground truth: a task prompt that says its outputs are judged against an fp32 ground
truth (Harbor's KernelBench tasks: "numerically correct vs the reference (fp32 ground truth,
dtype-aware tolerance)"; their verifier runs ``Model`` on the inputs cast to float32) makes the
reference's outputs be computed that way too (:func:`ground_truth`, :data:`FP32_DIRECTIVE`).
"""

from __future__ import annotations

import os
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(python|py|python3)?[^\n]*\n(.*?)```", re.S | re.I)
_MODEL = re.compile(r"^class\s+Model\s*\(", re.M)
_INPUTS = re.compile(r"^def\s+get_inputs\s*\(", re.M)
_NEW = re.compile(r"^class\s+ModelNew\b", re.M)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)
MAX_PROMPT = 2 << 20
# a line the judged reference carries when its outputs are computed on float32 copies of the inputs
# (ktui.engine.roles reads it; it changes the reference's sha1, so results are cached apart)
FP32_DIRECTIVE = "# ktui: ground truth fp32 (the reference runs on float32 copies of floating inputs)"
_FP32_TRUTH = re.compile(r"\b(?:fp32|float32)\s+ground[- ]truth|ground[- ]truth\W{0,3}(?:is\s+|in\s+)?(?:fp32|float32)\b",
                         re.I)


# the harness judges some tasks by cosine similarity (quantized or top-k-selected outputs): the task's
# config.json or its result file says so ("metric": "cosine"; ktui.trace.results.taskrule finds which)
COSINE_DIRECTIVE = "# ktui: metric cosine"
# the correctness rule's status and a digest of its description (ktui.trace.results.taskrule): no effect
# on the judge; it makes results judged under another rule (or one unknown then) be cached apart
RULE_DIRECTIVE = "# ktui: rule"
COSINE_DEFAULTS = (0.99, 0.05)  # min cosine similarity, max relative L1


# the tolerance the harness judges with (ktui.trace.results.taskrule): the task config's or the result
# file's atol/rtol; the Harbor KernelBench verifier's default (kb_verifier.py grade(): cfg.get("atol",
# 2e-2), rtol likewise; every task config of lilian-muyaoli/kernelbench-harbor@6b82a1c says 0.02) where
# its reward.json shows that verifier but not which rule (then said to be unknown). A trace is hostile:
# a tolerance it claims is capped at MAX_TASK_TOL and only ever widens the dtype's own
TOLERANCE_DIRECTIVE = "# ktui: tolerance"
KB_VERIFIER_TOL = (0.02, 0.02)
MAX_TASK_TOL = 0.05


def ground_truth(run: Any) -> str | None:
    """'fp32' when the run's task prompt says outputs are judged against an fp32 ground truth."""
    p = run.problem
    texts = [p.prompt] if isinstance(p.prompt, str) else []
    texts += [t for _l, k, _a, t in run.messages[:20] if k in ("user", "system") and isinstance(t, str)]
    return "fp32" if any(_FP32_TRUTH.search(t[:MAX_PROMPT]) for t in texts) else None


_MAX_WALK = 5000


def defines_reference(code: str) -> bool:
    return bool(_MODEL.search(code) and _INPUTS.search(code) and not _NEW.search(code))


def in_text(text: str) -> tuple[str, str] | None:
    """(source, where) of the reference block in a prompt, or None."""
    if not isinstance(text, str) or "```" not in text:
        return None
    text = text[:MAX_PROMPT]
    best: tuple[int, int, str, str] | None = None
    for m in _FENCE.finditer(text):
        code = m.group(2)
        if not defines_reference(code):
            continue
        before = text[max(0, m.start() - 400): m.start()]
        heads = list(_HEADING.finditer(text, 0, m.start()))
        heading = heads[-1].group(1) if heads else ""
        lead = (heading + " " + before[-200:]).lower()
        score = 0
        if "reference" in lead or "architecture" in lead or "given" in lead:
            score += 2
        if "example" in before[-200:].lower():
            score -= 2
        where = f"under '{heading[:60]}'" if heading else \
            f"after '{' '.join(before.strip().split()[-8:])[:60]}'" if before.strip() else "at its start"
        line = text.count("\n", 0, m.start()) + 1
        cand = (score, m.start(), code, f"the task prompt: a fenced block {where} (line {line} of the prompt)")
        if best is None or (cand[0], cand[1]) >= (best[0], best[1]):
            best = cand
    if best is None:
        return None
    return best[2], best[3]


def from_prompt(run: Any) -> bool:
    """Set the run's reference from its prompt when the trace has none; whether it did."""
    p = run.problem
    if isinstance(p.reference_source, str) and p.reference_source.strip():
        return False
    texts = []
    if isinstance(p.prompt, str):
        texts.append(p.prompt)
    for _line, kind, _actor, text in run.messages[:20]:
        if kind in ("user", "system", "problem") and isinstance(text, str) and text not in texts:
            texts.append(text)
    for t in texts:
        found = in_text(t)
        if found is not None:
            p.reference_source, p.reference_origin = found
            return True
    return False


# ---- --tasks DIR ------------------------------------------------------------------------------------
def _reference_in(task_dir: str) -> str | None:
    for rel in (("environment", "reference.py"), ("reference.py",), ("env", "reference.py")):
        p = os.path.join(task_dir, *rel)
        if os.path.isfile(p):
            return p
    return None


def _task_dirs(root: str, depth: int = 3):
    """(name, path) of every directory under root, breadth first, bounded."""
    seen = 0
    level = [root]
    for _ in range(depth):
        nxt = []
        for d in level:
            try:
                with os.scandir(d) as it:
                    entries = sorted((e for e in it if e.is_dir() and not e.name.startswith(".")), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                seen += 1
                if seen > _MAX_WALK:
                    return
                yield e.name, e.path
                nxt.append(e.path)
        level = nxt


def match_task(run: Any, tasks_dir: str) -> str | None:
    """The task folder under ``tasks_dir`` whose name is the run's task (one that holds a reference):
    the exact name, else the one name a cut task name starts (Harbor cuts it to 32 characters), else
    among those the one whose reference makes its inputs in the dtype the prompt's reference does."""
    from ktui.trace.results.naming import HARBOR_CUT, reference_dtype

    p = run.problem
    task = getattr(p, "task", None)
    if not task:
        return None
    exact, prefixed = [], []
    for name, path in _task_dirs(tasks_dir):
        ref = _reference_in(path)
        if ref is None:
            continue
        if name == task:
            exact.append(path)
        elif len(task) >= HARBOR_CUT - 2 and name.startswith(task):
            prefixed.append(path)
    if exact:
        return exact[0]
    if len(prefixed) == 1:
        return prefixed[0]
    want = reference_dtype(p.reference_source)  # a cut name: the task whose inputs have the prompt's dtype
    same = [d for d in prefixed if want and reference_dtype(_text(_reference_in(d) or "")) == want]
    return same[0] if len(same) == 1 else None


def from_tasks(run: Any, tasks_dir: str) -> tuple[str, str] | None:
    """(source, origin) of the run's reference in a task folder, or None."""
    from ktui.trace.results.kernelbench import checkout_level_dir, problem_file

    p = run.problem
    if isinstance(p.level, int) and p.problem_id is not None:
        ld = checkout_level_dir(tasks_dir, p.level, tasks_dir)
        f = problem_file(ld, int(p.problem_id)) if ld and str(p.problem_id).isdigit() else None
        if f:
            return _read(f, f"--tasks {tasks_dir}: {os.path.relpath(f, tasks_dir)}")
    d = match_task(run, tasks_dir)
    pick = _reference_in(d) if d else None
    if pick is None:
        return None
    return _read(pick, f"--tasks {tasks_dir}: {os.path.relpath(pick, tasks_dir)} (task {p.task})")


def from_folder(task_dir: str, how: str) -> tuple[str, str] | None:
    """(source, origin) of the reference in a task folder found otherwise (a trial's task path)."""
    ref = _reference_in(task_dir)
    return _read(ref, f"{ref} ({how})") if ref else None


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4 << 20)
    except OSError:
        return None


def _read(path: str, origin: str) -> tuple[str, str] | None:
    t = _text(path)
    return (t, origin) if t is not None else None
