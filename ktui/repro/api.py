"""The reproduction API used by ``ktui repro`` and by the replay app's ``r`` key.

Nothing here imports torch or Textual. Typical use from a UI thread pool::

    from ktui.repro.api import ReproOptions, cached_report, reproduce
    opts = ReproOptions(device=None, trials=100)
    report = cached_report(run, kv, opts)          # instant; None when never run
    cancel = threading.Event()
    report = reproduce(run, kv, opts, on_progress=cb, cancel=cancel)   # blocks; run it in a worker thread
    report.verdict, report.reason, report.comparison.rows

``on_progress`` is called from the thread running :func:`reproduce` with a
:class:`ktui.repro.runner.Progress` (stage, trial, of, fraction 0..1, message). Setting
``cancel`` from any thread kills the worker process group; ``reproduce`` then returns a
report whose verdict is ``"cancelled"``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ktui import settings
from ktui.engine import sha1_text
from ktui.engine.defaults import CORRECTNESS_TRIALS, METHOD, METHODS, STAGE_TIMEOUT_S, TRIALS
from ktui.repro import cache, early
from ktui.repro.recorded import Recorded, find_reference, recorded_for
from ktui.repro.runner import Progress, WarmWorker, run_request
from ktui.repro.verdict import CANCELLED, Comparison, compare, comparison_dict


class ReproError(Exception):
    """A usage problem (no such version, no reference): one line for the user."""


@dataclass
class ReproOptions:
    device: str | None = None  # None: cuda if available, else cpu
    trials: int = TRIALS
    method: str = METHOD
    timeout: float = STAGE_TIMEOUT_S  # seconds per run stage (reference, correctness, timing, ...)
    compile_timeout: float | None = None  # seconds for startup and build; default: timeout
    correctness_trials: int = CORRECTNESS_TRIALS
    fresh: bool = False  # ignore (but refresh) the result cache
    reference_path: str | None = None  # a reference file when the trace has none
    tasks_dir: str | None = None  # task folders (Harbor tasks, a KernelBench checkout): the run's reference by task name
    input_seed: int | None = None  # replay a run's inputs (its result.seeds.inputs); None: a secret new one

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ReproError(f"unknown timing method {self.method!r} (one of {', '.join(METHODS)})")
        if self.trials < 1:
            raise ReproError("--trials must be at least 1")
        if self.timeout <= 0:
            raise ReproError("--timeout must be positive")
        if self.input_seed is not None:
            if not 0 < self.input_seed < 2**31 - 1:
                raise ReproError("--input-seed must be between 1 and 2147483646")
            self.fresh = True  # a cached result was judged on other inputs


@dataclass
class ReproReport:
    trace: str
    version: str
    sha1: str
    first_turn: int | None
    turns: list[int]
    request: dict[str, Any]  # without the sources
    result: dict[str, Any]
    comparison: Comparison
    cached: bool = False
    key: str = ""
    created: str = ""
    reference_origin: str = ""
    recorded: Recorded | None = field(default=None, repr=False)

    @property
    def verdict(self) -> str:
        return self.comparison.verdict

    @property
    def reason(self) -> str:
        return self.comparison.reason

    @property
    def good(self) -> bool:
        return self.comparison.good

    @property
    def environment(self) -> dict[str, Any]:
        return self.result.get("environment") or {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace, "version": self.version, "sha1": self.sha1, "first_turn": self.first_turn,
            "turns": self.turns, "verdict": self.verdict, "reason": self.reason, "cached": self.cached,
            "cache_key": self.key, "created": self.created, "reference_origin": self.reference_origin,
            "environment": self.environment, "request": self.request,
            "comparison": comparison_dict(self.comparison), "result": self.result,
        }


# ---- selection -------------------------------------------------------------------------------

def select_kernels(run: Any, *, turn: int | None = None, version: str | None = None, final: bool = False,
                   all_: bool = False) -> list[Any]:
    """The kernel versions a command asks for (default: the final submission)."""
    kernels = list(getattr(run, "kernels", []) or [])
    if not kernels:
        raise ReproError("the trace has no kernel code (no kernel_code argument in any tool call)")
    chosen = sum(1 for x in (turn is not None, version is not None, final, all_) if x)
    if chosen > 1:
        raise ReproError("choose one of --turn, --version, --final, --all")
    if all_:
        return kernels
    if version is not None:
        kv = run.kernel(version)
        if kv is None:
            labels = ", ".join(k.label for k in kernels)
            raise ReproError(f"no kernel version {version!r} in this trace (it has {labels})")
        return [kv]
    if turn is not None:
        turns = getattr(run, "turns", []) or []
        if not 0 <= turn < len(turns):
            raise ReproError(f"no turn {turn} (the run has turns 0-{len(turns) - 1})")
        nums = [c.kernel for c in turns[turn].calls if getattr(c, "kernel", None) is not None]
        if not nums:
            raise ReproError(f"turn {turn} uses no kernel code")
        return [run.kernel(nums[-1])]
    kv = run.final_kernel
    if kv is None:
        raise ReproError("the trace has no final kernel")
    return [kv]


def resolve_reference(run: Any, reference_path: str | None, tasks_dir: str | None = None) -> tuple[str | None, str]:
    """The reference to judge against and where it came from (:func:`resolve_judging` without the rule)."""
    src, origin, _rule = resolve_judging(run, reference_path, tasks_dir)
    return src, origin


def resolve_judging(run: Any, reference_path: str | None, tasks_dir: str | None = None) -> tuple[str | None, str, Any]:
    """The reference to judge against, where it came from, and the correctness rule
    (:class:`ktui.trace.results.taskrule.TaskRule`): the trace's own reference (its field, or a
    fenced block of its task prompt: ktui.trace.results.reference), else its task folder (the
    trial's recorded task path, or the folder under ``tasks_dir`` that matches the run's task);
    ``--reference FILE`` when given replaces either. The rule is the harness's, from the task
    folder or the result file, written into the judged reference as directives the engine reads
    (their values and the rule's identity are part of the reference's sha1, so results judged by
    another rule are cached apart)."""
    from ktui.trace.results.taskrule import DEFAULT, task_rule

    rule = task_rule(run, tasks_dir)
    src, origin = _resolve(run, reference_path, tasks_dir)
    if src:
        from ktui.trace.results.reference import (
            COSINE_DIRECTIVE,
            FP32_DIRECTIVE,
            RULE_DIRECTIVE,
            TOLERANCE_DIRECTIVE,
            ground_truth,
        )

        if (ground_truth(run) == "fp32" or rule.fp32_truth) and FP32_DIRECTIVE not in src:
            src = src.rstrip("\n") + "\n\n" + FP32_DIRECTIVE + "\n"
            origin += "; outputs computed on float32 copies of the inputs (the task's fp32 ground truth)"
        if rule.cosine is not None and COSINE_DIRECTIVE not in src:
            src = src.rstrip("\n") + "\n" + f"{COSINE_DIRECTIVE} {rule.cosine[0]:g} {rule.cosine[1]:g}" + "\n"
        elif rule.tol is not None and TOLERANCE_DIRECTIVE not in src:
            src = src.rstrip("\n") + "\n" + f"{TOLERANCE_DIRECTIVE} {rule.tol[0]:g} {rule.tol[1]:g}" + "\n"
        if rule.status != DEFAULT and RULE_DIRECTIVE not in src:  # the rule's identity, never its (untrusted) text
            src = src.rstrip("\n") + "\n" + f"{RULE_DIRECTIVE} {rule.status} {sha1_text(rule.identity())[:12]}" + "\n"
    return src, origin, rule


def _resolve(run: Any, reference_path: str | None, tasks_dir: str | None) -> tuple[str | None, str]:
    src, origin = find_reference(run)
    if not src and not reference_path:
        from ktui.trace.results.reference import from_folder, from_tasks
        from ktui.trace.results.taskrule import trial_task_folder

        found = from_tasks(run, tasks_dir) if tasks_dir else None
        if found is None:
            folder = trial_task_folder(run, tasks_dir)
            found = from_folder(folder[0], folder[1]) if folder else None
        if found is not None:
            src, origin = found
    if reference_path:
        try:
            text = Path(reference_path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ReproError(f"{reference_path}: cannot read: {exc.strerror or exc}") from None
        why = "instead of the trace's" if src else "the trace has none"
        return text, f"--reference {reference_path} ({why})"
    return src, origin


# ---- requests and the cache ---------------------------------------------------------------------

def worker_limits() -> dict[str, Any]:
    """The request's fields for the user's worker limits: ``memory_limit`` (bytes) from
    ``KTUI_WORKER_MEMORY_GB`` (the engine caps it by the host's memory); empty: the defaults."""
    mem = settings.current().worker_memory_bytes
    return {"memory_limit": mem} if mem else {}


def make_request(kv: Any, options: ReproOptions, reference: str | None, reference_origin: str,
                 rule: Any = None) -> dict[str, Any]:
    return {
        **worker_limits(),
        "correctness_rule": rule.to_dict() if rule is not None else None,
        "kernel_code": kv.code,
        "kernel_sha1": kv.sha1,
        "kernel_label": kv.label,
        "reference_source": reference,
        "reference_origin": reference_origin,
        "device": options.device,
        "method": options.method,
        "trials": options.trials,
        "correctness_trials": options.correctness_trials,
        "input_seed": options.input_seed,
        "build_root": str(cache.build_root()),
        "lock_dir": str(cache.lock_dir()),
    }


def _key(kv: Any, options: ReproOptions, reference: str | None) -> str:
    return cache.result_key(kernel_sha1=kv.sha1, reference_sha1=sha1_text(reference) if reference else None,
                            device=options.device, method=options.method, trials=options.trials,
                            correctness_trials=options.correctness_trials)


def _public_request(req: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in req.items() if k not in ("kernel_code", "reference_source")}


def _report(run: Any, kv: Any, entry: dict[str, Any], cached: bool) -> ReproReport:
    rec = recorded_for(run, kv)
    return ReproReport(trace=str(getattr(run, "path", "")), version=kv.label, sha1=kv.sha1,
                       first_turn=kv.first_turn, turns=list(kv.turns), request=entry.get("request") or {},
                       result=entry["result"], cached=cached,
                       comparison=compare(rec, entry["result"], rule=(entry.get("request") or {}).get("correctness_rule")),
                       key=entry.get("key", ""), created=entry.get("created", ""),
                       reference_origin=(entry.get("request") or {}).get("reference_origin", ""), recorded=rec)


def cached_report(run: Any, kv: Any, options: ReproOptions | None = None) -> ReproReport | None:
    """The cached reproduction for these settings, or None (never runs anything)."""
    options = options or ReproOptions()
    try:
        ref, _origin = resolve_reference(run, options.reference_path, options.tasks_dir)
    except ReproError:
        return None
    entry = cache.load(kv.sha1, _key(kv, options, ref), options.device)
    return _report(run, kv, entry, cached=True) if entry else None


def decided_report(run: Any, kv: Any, options: ReproOptions | None = None) -> ReproReport | None:
    """The report known without a judge for these settings, or None: on a CPU, a kernel whose source
    needs CUDA is not judged here (:func:`ktui.repro.early.decide`, the decision ``ktui verify``'s
    planner makes). Starts nothing and is never cached."""
    options = options or ReproOptions()
    if not early.not_judged_here(kv.code, cpu=early.on_cpu(options.device)):
        return None  # (the cheap test first: no reference to resolve for most kernels)
    try:
        ref, origin, rule = resolve_judging(run, options.reference_path, options.tasks_dir)
    except ReproError:
        return None
    return _decided(run, kv, options, ref, origin, rule) if ref else None


def _decided(run: Any, kv: Any, options: ReproOptions, ref: str, origin: str, rule: Any) -> ReproReport | None:
    result = early.decide(kv.code, kv.sha1, sha1_text(ref), cpu=early.on_cpu(options.device))
    if result is None:
        return None
    entry = {"kernel_sha1": kv.sha1, "key": _key(kv, options, ref), "trace": str(getattr(run, "path", "")),
             "version": kv.label, "request": _public_request(make_request(kv, options, ref, origin, rule)),
             "options": asdict(options), "result": result, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return _report(run, kv, entry, cached=False)


def known_report(run: Any, kv: Any, options: ReproOptions | None = None) -> ReproReport | None:
    """What is known for these settings without running anything: the cached reproduction, else the
    report decided from the kernel's source (:func:`decided_report`), else None (the app's ``r`` key
    looks here before it offers a run)."""
    return cached_report(run, kv, options) or decided_report(run, kv, options)


def latest_report(run: Any, kv: Any) -> ReproReport | None:
    """The newest cached reproduction of this kernel version judged against the trace's own
    reference, any settings (the app's badge, ``ktui report``); None when there is none. A cache
    lookup only: never runs anything, never probes the machine."""
    ref, _origin = find_reference(run)
    if not ref or not getattr(kv, "sha1", None):
        return None
    entries = cache.entries_for(kv.sha1, strict=True, reference_sha1=sha1_text(ref))
    return _report(run, kv, entries[0], cached=True) if entries else None


def history(run: Any, kv: Any, same_reference: bool = False) -> list[ReproReport]:
    """Every cached reproduction of this kernel version, any settings, newest first;
    ``same_reference``: only those judged against this trace's own reference (what a badge may
    show: the same kernel judged against another problem's reference says nothing here)."""
    if same_reference:
        ref, _origin = find_reference(run)
        if not ref:
            return []
        entries = cache.entries_for(kv.sha1, strict=True, reference_sha1=sha1_text(ref))
    else:
        entries = cache.entries_for(kv.sha1, strict=True)
    return [_report(run, kv, e, cached=True) for e in entries]


def reproduce(run: Any, kv: Any, options: ReproOptions | None = None, *,
              on_progress: Callable[[Progress], None] | None = None, cancel: threading.Event | None = None,
              worker: WarmWorker | None = None) -> ReproReport:
    """Re-execute one kernel version (or return the cached result unless ``options.fresh``).

    Raises :class:`ReproError` only for usage problems (no reference source); whatever the
    kernel does (compile error, crash, hang) comes back as a report.
    """
    options = options or ReproOptions()
    from ktui.trace.platform import repro_precheck

    why = repro_precheck(kv, options.device)  # e.g. a HIP kernel on an NVIDIA GPU: say so, build nothing
    if why:
        raise ReproError(why)
    ref, origin, rule = resolve_judging(run, options.reference_path, options.tasks_dir)
    if not ref:
        raise ReproError("the trace has no reference source (no fetch_problem ref_arch_src, no fenced block defining "
                         "Model and get_inputs in its task prompt); pass --tasks DIR (the task folders) or "
                         "--reference FILE with the problem's PyTorch reference")
    decided = _decided(run, kv, options, ref, origin, rule)  # e.g. needs CUDA on a CPU: no worker started
    if decided is not None:
        return decided
    key = _key(kv, options, ref)
    if not options.fresh:
        entry = cache.load(kv.sha1, key, options.device)
        if entry:
            return _report(run, kv, entry, cached=True)
    req = make_request(kv, options, ref, origin, rule)
    ctimeout = options.compile_timeout or options.timeout
    t0 = time.monotonic()
    if worker is not None:
        result = worker.run(req, on_progress=on_progress, cancel=cancel, compile_timeout=ctimeout,
                            run_timeout=options.timeout)
    else:
        result = run_request(req, on_progress=on_progress, cancel=cancel, compile_timeout=ctimeout,
                             run_timeout=options.timeout)
    result.setdefault("wall_seconds", round(time.monotonic() - t0, 3))
    entry = {"kernel_sha1": kv.sha1, "key": key, "trace": str(getattr(run, "path", "")), "version": kv.label,
             "request": _public_request(req), "options": asdict(options), "result": result,
             "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if cache.cacheable(result):
        cache.store(entry)
    report = _report(run, kv, entry, cached=False)
    if result.get("status") == "cancelled":
        report.comparison.verdict = CANCELLED
    return report
