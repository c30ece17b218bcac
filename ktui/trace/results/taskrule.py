"""The rule by which the harness judged a run's correctness, and where ktui learnt it.

A harness may judge a task by something other than ``allclose``: Harbor's KernelBench verifier
(``kb_verifier.py`` of lilian-muyaoli/kernelbench-harbor) reads the task's ``config.json``
(``environment/config.json`` in the task folder, copied to ``/app/config.json``) and judges the
families with quantized or top-k-selected outputs (``nsa_block_sparse``, ``fused_silu_fp8``) by
cosine similarity (``"metric": "cosine"``, ``cosine_min``, ``rel_l1_max``), the others by
``torch.allclose(atol, rtol)``. The trial's ``reward.json`` does not always say which (the
nsa_block_sparse trials' do not): the rule lives in the task folder.

:func:`task_rule` finds it, in order:

1. the task folder: the trial's own Harbor ``config.json`` / ``result.json`` (``task.path``,
   ``task_id.path``) when that folder exists here (absolute, or under ``--tasks DIR``), else the
   folder under ``--tasks DIR`` whose name is the run's task (a name Harbor cut at 32 characters
   is completed as for the reference); there, the task's ``config.json``; the thresholds a config
   leaves out are the task's verifier's own defaults, read from its source
   (``cfg.get("cosine_min", 0.99)``), never assumed;
2. the result file itself: ``"metric": "cosine"`` (the verifier's defaults), its own
   ``atol`` / ``rtol``;
3. otherwise the rule is **unknown** when a harness did judge the run (a Harbor KernelBench
   ``reward.json`` that names no metric: allclose at 2e-2 or cosine, by task) and ktui says so;
   and ktui's own rule (the output dtype's tolerance, KernelBench's) when no harness did.

A trace and a task folder are hostile: numbers are capped (:data:`MAX_TASK_TOL` for tolerances,
a cosine minimum of at least 0.5 and a relative L1 of at most 0.5), files are read bounded, and
nothing here runs, imports or writes anything.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

from ktui.trace.results import read_json, read_small

KNOWN = "known"  # the harness's own rule, from its task folder or its result file
UNKNOWN = "unknown"  # a harness judged the run and ktui cannot tell by what rule
DEFAULT = "default"  # no harness rule to follow: ktui's own (the dtype's tolerance)

COSINE_LIMITS = (0.5, 0.5)  # the loosest cosine rule a file may set: min cosine >= 0.5, rel L1 <= 0.5
_CONFIGS = (("environment", "config.json"), ("config.json",), ("tests", "config.json"))
_VERIFIER_DIRS = ("environment", "tests", "")
_RULE_KEYS = ("metric", "atol", "rtol", "cosine_min", "rel_l1_max")
_MAX_VERIFIER = 512 << 10
_GET = r"""cfg\.get\(\s*["']{key}["']\s*,\s*([^)\s]+)\s*\)"""


@dataclass(frozen=True, slots=True)
class TaskRule:
    """How the run's correctness is judged: ``metric`` "cosine" (``cosine`` = (min cosine, max
    relative L1)) or "allclose" (``tol`` = (atol, rtol) at least, or None: the dtype's own)."""

    status: str  # KNOWN | UNKNOWN | DEFAULT
    metric: str = "allclose"
    cosine: tuple[float, float] | None = None
    tol: tuple[float, float] | None = None
    source: str = ""  # where the rule comes from, in words
    why: str = ""  # UNKNOWN: why the harness's rule is not known here, and what would tell it
    fp32_truth: bool = False  # the task's verifier computes its ground truth on float32 copies

    @property
    def known(self) -> bool:
        return self.status == KNOWN

    def formula(self) -> str:
        if self.cosine is not None:
            return f"cosine similarity >= {self.cosine[0]:g} and relative L1 <= {self.cosine[1]:g}"
        if self.tol is not None:
            return f"allclose at atol {self.tol[0]:g}, rtol {self.tol[1]:g} (the output dtype's, where wider)"
        return "allclose at the output dtype's tolerance (KernelBench's: fp32 1e-4, fp16/bf16 1e-2)"

    def text(self) -> str:
        """One line for the verdict: which rule judged the kernel, and where it comes from."""
        if self.status == KNOWN:
            return f"the harness's rule: {self.formula()} ({self.source})"
        if self.status == UNKNOWN:
            return f"the harness's own rule is unknown ({self.why}); judged by ktui's: {self.formula()}"
        return f"ktui's rule: {self.formula()}" + (f" ({self.source})" if self.source else "")

    def identity(self) -> str:
        """What the judge's result depends on (not where the rule was read: the same rule read
        through another path is the same rule)."""
        return f"{self.status} {self.metric} {self.cosine} {self.tol} {self.fp32_truth}"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "metric": self.metric, "text": self.text(), "source": self.source,
                "why": self.why}


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _cosine(c: float, r: float) -> tuple[float, float]:
    return max(min(c, 1.0), COSINE_LIMITS[0]), min(max(r, 0.0), COSINE_LIMITS[1])


def _tol(a: float, r: float) -> tuple[float, float]:
    from ktui.trace.results.reference import MAX_TASK_TOL

    return min(max(a, 0.0), MAX_TASK_TOL), min(max(r, 0.0), MAX_TASK_TOL)


# ---- the task's verifier ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Verifier:
    """A verifier whose config keys and cosine formula ktui knows (kb_verifier.py's), and the
    defaults its source gives the keys a config leaves out."""

    name: str
    defaults: dict[str, Any]
    fp32_truth: bool


def _verifier(task_dir: str) -> _Verifier | None:
    """The task's verifier, when it is one ktui knows: it reads ``metric``, ``cosine_min`` and
    ``rel_l1_max`` from its config and compares cosine similarity and relative L1."""
    for sub in _VERIFIER_DIRS:
        d = os.path.join(task_dir, sub) if sub else task_dir
        try:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if e.name.endswith(".py") and e.is_file())[:40]
        except OSError:
            continue
        for n in names:
            raw = read_small(os.path.join(d, n))
            if raw is None or len(raw) > _MAX_VERIFIER:
                continue
            src = raw.decode("utf-8", "replace")
            if "cosine_similarity" not in src or not all(re.search(_GET.format(key=k), src)
                                                       for k in ("metric", "cosine_min", "rel_l1_max")):
                continue
            defaults: dict[str, Any] = {}
            for k in ("metric", "cosine_min", "rel_l1_max", "atol", "rtol"):
                m = re.search(_GET.format(key=k), src)
                if m:
                    v = m.group(1).strip("\"'")
                    defaults[k] = v if k == "metric" else _finite(v)
            fp32 = bool(re.search(r"\.float\(\)\s+if\s+\w+\.is_floating_point\(\)", src))
            rel = os.path.relpath(os.path.join(d, n), task_dir)
            return _Verifier(rel, defaults, fp32)
    return None


def _config(task_dir: str) -> tuple[str, dict[str, Any]] | None:
    for rel in _CONFIGS:
        p = os.path.join(task_dir, *rel)
        obj = read_json(p) if os.path.isfile(p) else None
        if isinstance(obj, dict) and any(k in obj for k in _RULE_KEYS):
            return os.path.join(*rel), obj
    return None


def rule_in_folder(task_dir: str, shown: str) -> TaskRule | None:
    """The rule a task folder states (its config.json, read as its verifier reads it); None when
    it states none. ``shown``: the folder as the user should read it."""
    found = _config(task_dir)
    if found is None:
        return None
    rel, cfg = found
    ver = _verifier(task_dir)
    d = ver.defaults if ver is not None else {}
    where = f"{os.path.join(shown, rel)}" + (f", as its verifier {ver.name} computes it" if ver else "")
    fp32 = bool(ver and ver.fp32_truth)
    metric = cfg.get("metric", d.get("metric", "allclose"))
    if not isinstance(metric, str):
        return TaskRule(UNKNOWN, why=f"{os.path.join(shown, rel)} gives a metric that is not a name")
    metric = metric.strip().lower()
    if metric == "cosine":
        c, r = _finite(cfg.get("cosine_min")), _finite(cfg.get("rel_l1_max"))
        c = c if c is not None else d.get("cosine_min")
        r = r if r is not None else d.get("rel_l1_max")
        if c is None or r is None:
            return TaskRule(UNKNOWN, metric="cosine",
                            why=f"{os.path.join(shown, rel)} says metric cosine but not its thresholds, and the "
                                "task folder holds no verifier ktui knows that would give them")
        return TaskRule(KNOWN, metric="cosine", cosine=_cosine(c, r), source=where, fp32_truth=fp32)
    if metric in ("allclose", "close", "isclose"):
        a, r = _finite(cfg.get("atol")), _finite(cfg.get("rtol"))
        a = a if a is not None else d.get("atol")
        r = r if r is not None else d.get("rtol")
        if a is None or r is None:
            return TaskRule(UNKNOWN, why=f"{os.path.join(shown, rel)} gives no atol/rtol and the task folder "
                                         "holds no verifier ktui knows that would give them")
        return TaskRule(KNOWN, tol=_tol(a, r), source=where, fp32_truth=fp32)
    return TaskRule(UNKNOWN, metric=metric[:40],
                    why=f"{os.path.join(shown, rel)} names the metric {metric[:40]!r}, which ktui does not know")


# ---- the task folder ------------------------------------------------------------------------------
def _trial_task_paths(run: Any) -> list[str]:
    """The task paths a Harbor trial records: ``config.json`` (TrialConfig ``task.path``) and
    ``result.json`` (``task_id.path``, ``config.task.path``) beside the trajectory."""
    from ktui.trace.results.harbor import _trial_dirs

    trace = getattr(run, "path", None)
    if not trace or not os.path.isfile(trace):
        return []
    out: list[str] = []
    for d in _trial_dirs(trace):
        for name in ("config.json", "result.json"):
            obj = read_json(os.path.join(d, name))
            if not isinstance(obj, dict):
                continue
            for holder in (obj.get("task"), obj.get("task_id"), (obj.get("config") or {}).get("task")
                           if isinstance(obj.get("config"), dict) else None):
                if isinstance(holder, dict) and isinstance(holder.get("path"), str) and holder["path"].strip():
                    p = holder["path"].strip()[:1000]
                    if p not in out:
                        out.append(p)
    return out


def _existing(path: str, tasks_dir: str | None) -> str | None:
    """A recorded task path as a folder here: absolute, or under --tasks DIR (the path as recorded,
    or from any of its later parts: a job run from the benchmark's root records ``subset/<task>``)."""
    parts = [x for x in path.replace("\\", "/").split("/") if x not in ("", ".")]
    if ".." in parts:
        return None
    if os.path.isabs(path) and os.path.isdir(path):
        return path
    if tasks_dir:
        for i in range(len(parts)):
            cand = os.path.join(tasks_dir, *parts[i:])
            if os.path.isdir(cand):
                return cand
    return None


def trial_task_folder(run: Any, tasks_dir: str | None) -> tuple[str, str] | None:
    """(folder, how) of the task path the run's Harbor trial records, when that folder is here."""
    for p in _trial_task_paths(run):
        d = _existing(p, tasks_dir)
        if d is not None:
            return d, f"the trial's task path {p}"
    return None


def task_folder(run: Any, tasks_dir: str | None) -> tuple[str, str] | None:
    """(folder, how it was found) of the run's task, or None."""
    found = trial_task_folder(run, tasks_dir)
    if found is not None:
        return found
    if tasks_dir:
        from ktui.trace.results.reference import match_task

        d = match_task(run, tasks_dir)
        if d is not None:
            return d, f"--tasks {tasks_dir}, by the task name"
    return None


# ---- the rule ------------------------------------------------------------------------------------
def _shown(folder: str, tasks_dir: str | None) -> str:
    if tasks_dir:
        rel = os.path.relpath(folder, tasks_dir)
        if not rel.startswith(".."):
            return rel
    return folder


def task_rule(run: Any, tasks_dir: str | None = None) -> TaskRule:
    """The rule the run's harness judges correctness by (see the module's docstring)."""
    found = task_folder(run, tasks_dir)
    if found is not None:
        folder, _how = found
        r = rule_in_folder(folder, _shown(folder, tasks_dir))
        if r is not None:
            return r
    from ktui.trace.results.reference import COSINE_DEFAULTS, KB_VERIFIER_TOL

    results = getattr(run, "results", None) or []
    for res in results:
        v = res.values
        if str(v.get("metric", "")).lower() == "cosine":
            return TaskRule(KNOWN, metric="cosine", cosine=COSINE_DEFAULTS,
                            source=f"{res.source} says metric cosine; the thresholds are kb_verifier.py's defaults")
        a, b = _finite(v.get("atol")), _finite(v.get("rtol"))
        if a is not None and b is not None and not isinstance(v.get("atol"), str):
            return TaskRule(KNOWN, tol=_tol(a, b), source=f"{res.source}'s atol/rtol")
    for res in results:
        if res.harness == "harbor" and "max_err" in res.values and "torch.compile" in (res.speedups or {}):
            where = "the task folder was not found" if found is None else \
                f"the task folder {_shown(found[0], tasks_dir)} states no rule"
            hint = "" if tasks_dir else "; --tasks DIR (the benchmark's task folders) tells it"
            return TaskRule(UNKNOWN, tol=KB_VERIFIER_TOL,
                            why=f"{res.source} names no metric: Harbor's KernelBench verifier judges by allclose "
                                f"at 2e-2 or by cosine similarity, as the task's config.json says, and {where}{hint}")
        if res.harness == "harbor":
            hint = "" if tasks_dir else "; --tasks DIR (the benchmark's task folders) may tell it"
            return TaskRule(UNKNOWN, why=f"{res.source} names no correctness rule{hint}")
    if any(r.harness == "kernelbench" for r in results):
        return _kernelbench_rule(run, tasks_dir)
    return TaskRule(DEFAULT)


# KernelBench's own tolerance changed: atol = rtol = 1e-2 for every dtype (run_and_check_correctness)
# until 2c3dbda (2025-11-04, "Precision Support"), by precision since (get_tolerance_for_precision:
# fp32 1e-4, fp16/bf16 1e-2). Which one judged a run folder is read from the checkout's source.
_KB_ALLCLOSE = re.compile(r"allclose\(\s*\w+\s*,\s*\w+\s*,\s*atol\s*=\s*([0-9.eE+-]+)\s*,\s*rtol\s*=\s*([0-9.eE+-]+)")
_KB_EVAL = (("src", "kernelbench", "eval.py"), ("src", "eval.py"))
KB_OLD_TOL = (1e-2, 1e-2)


def _kernelbench_rule(run: Any, tasks_dir: str | None) -> TaskRule:
    from ktui.trace.results.kernelbench import checkout_level_dir

    level = getattr(run.problem, "level", None)
    roots: list[str] = []
    path = getattr(run, "path", None)
    if isinstance(level, int) and path:
        for start in ((tasks_dir,) if tasks_dir else ()) + (os.path.dirname(os.path.abspath(path)),):
            ld = checkout_level_dir(start, level, start)
            if ld:
                roots += [os.path.dirname(os.path.dirname(ld)), os.path.dirname(ld)]
    seen = False
    for root in roots:
        for rel in _KB_EVAL:
            raw = read_small(os.path.join(root, *rel))
            if raw is None:
                continue
            seen = True
            src = raw.decode("utf-8", "replace")
            shown = os.path.join(*rel)
            if "def get_tolerance_for_precision" in src:
                return TaskRule(KNOWN, source=f"KernelBench's rule by precision, its {shown} beside the problems")
            m = _KB_ALLCLOSE.search(src)
            a, r = (_finite(m.group(1)), _finite(m.group(2))) if m else (None, None)
            if a is not None and r is not None:
                return TaskRule(KNOWN, tol=_tol(a, r), source=f"KernelBench's allclose in its {shown} beside the problems")
    where = ("the checkout's src/eval.py does not say which" if seen else
             "no KernelBench source (src/eval.py) was found beside the problems")
    return TaskRule(UNKNOWN, tol=KB_OLD_TOL,
                    why=f"KernelBench judged by atol = rtol = 1e-2 until 2025-11 and by precision since (fp32 "
                        f"1e-4); {where}, so ktui uses the looser")


__all__ = ["DEFAULT", "KNOWN", "UNKNOWN", "TaskRule", "rule_in_folder", "task_folder", "task_rule", "trial_task_folder"]
