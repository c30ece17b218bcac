"""What a sweep verification has to do: runs found like ``ktui runs``, one job per distinct kernel.

A :class:`Job` is one kernel to reproduce: its code, its reference, and the result-cache key for
the chosen options (the same key ``ktui repro`` uses, so either command finds the other's
results). Two runs whose kernel code and reference are identical (same sha1s) share one job.

:class:`Planner` walks the paths given (directories through :class:`~ktui.trace.index.SweepIndex`,
so the same layouts, records and duplicate rules as ``ktui runs``; files directly), loads each
run to find its kernel version(s) and reference, and yields jobs as it finds them, so that an
engine can start building before the walk is over. Each run becomes one :class:`RunRow` per
selected kernel version (the final one by default).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ktui.engine import sha1_text
from ktui.repro import cache, early
from ktui.repro.api import ReproError, ReproOptions, resolve_judging, worker_limits
from ktui.repro.recorded import Recorded, recorded_for
from ktui.trace.index import RunSummary, ScanIssue, SweepIndex, summarize
from ktui.trace.model import INCOMPLETE


def job_key(kernel_sha1: str, reference_sha1: str | None) -> str:
    """The identity of a job: the kernel's code and its reference."""
    return hashlib.sha1(f"{kernel_sha1}|{reference_sha1 or '-'}".encode()).hexdigest()


@dataclass
class Job:
    key: str
    kernel_sha1: str
    reference_sha1: str | None
    kernel_code: str = field(repr=False)
    reference_source: str | None = field(repr=False)
    reference_origin: str
    label: str  # the version label of the first run that has it ("v3")
    trace: str  # the first run that has it (for the cache entry)
    result_key: str
    runs: int = 1  # how many rows use it
    # set by the engine (judge side): the sweep's secret input seed for this problem and the reference
    # cache's root, so the reference's outputs are computed once per problem (ktui.engine.refcache)
    input_seed: int | None = field(default=None, repr=False)
    ref_cache: str | None = field(default=None, repr=False)

    def request(self, options: ReproOptions, build_root: str, *, with_reference: bool = True) -> dict[str, Any]:
        """The worker request (the same fields as :func:`ktui.repro.api.make_request`)."""
        return {
            **worker_limits(),
            "kernel_code": self.kernel_code,
            "kernel_sha1": self.kernel_sha1,
            "kernel_label": self.label,
            "reference_source": self.reference_source if with_reference else None,
            "reference_origin": self.reference_origin,
            "device": options.device,
            "method": options.method,
            "trials": options.trials,
            "correctness_trials": options.correctness_trials,
            "build_root": build_root,
            **({"input_seed": self.input_seed, "ref_cache": self.ref_cache}
               if with_reference and self.input_seed and self.ref_cache and options.input_seed is None else {}),
        }

    def to_wire(self) -> dict[str, Any]:
        """A plain dict (for another process or a Ray task)."""
        return {k: getattr(self, k) for k in ("key", "kernel_sha1", "reference_sha1", "kernel_code",
                                              "reference_source", "reference_origin", "label", "trace",
                                              "result_key", "runs")}

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Job:
        return cls(**d)


@dataclass
class RunRow:
    """One run (and kernel version) of the sweep: what it recorded and, later, what reproduced."""

    path: str
    real: str
    model: str | None
    problem: str
    version: str | None  # the kernel version label, None when the run has no kernel
    final: bool  # the run's final kernel (the one its recorded outcome and speedup are about)
    recorded_outcome: str
    recorded_speedup: float | None
    job: str | None = None  # Job.key; None: nothing to run (see note)
    note: str = ""  # why there is no job
    recorded: Recorded | None = field(default=None, repr=False)
    summary: RunSummary | None = field(default=None, repr=False)
    rule: dict[str, Any] | None = None  # the correctness rule (TaskRule.to_dict()), for the verdict's reason


def timeout_memo_path(result_key: str) -> str:
    return os.path.join(str(cache.cache_root()), "verify", "timeouts", f"{result_key}.json")


def load_timeout_memo(result_key: str, options: ReproOptions) -> dict[str, Any] | None:
    """A timeout this verify already saw for this key, if the limits now are no longer than then
    (a timeout is not a kernel result, ``ktui repro`` never caches it; a resumed sweep with the
    same limits would only time out again)."""
    try:
        with open(timeout_memo_path(result_key), encoding="utf-8") as fh:
            memo = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(memo, dict) or not isinstance(memo.get("result"), dict):
        return None
    stage = ((memo["result"].get("failure") or {}).get("stage")) or ""
    limit = (options.compile_timeout or options.timeout) if stage in ("startup", "build") else options.timeout
    then = memo.get("limit")
    if not isinstance(then, (int, float)) or limit > then:
        return None
    return memo["result"]


def store_timeout_memo(result_key: str, result: dict[str, Any], options: ReproOptions) -> None:
    stage = ((result.get("failure") or {}).get("stage")) or ""
    limit = (options.compile_timeout or options.timeout) if stage in ("startup", "build") else options.timeout
    entry = {"key": result_key, "limit": limit, "created_ts": time.time(), "result": result}
    p = timeout_memo_path(result_key)
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        tmp = f"{p}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(entry, fh, default=str)
        os.replace(tmp, p)
    except OSError as exc:
        raise OSError(f"could not write the verify memo {p}: {exc}") from exc


class Planner:
    """Walks ``paths`` and yields new :class:`Job` objects; fills :attr:`rows` as it goes.

    ``cached`` maps job key -> the cached result (jobs the cache already holds are not
    yielded unless ``options.fresh``). ``decided`` maps job key -> the result the planner gives
    without a judge: on a CPU-only run (``cpu``: ``--device cpu``, or the caller's slots are CPUs
    only), a kernel whose source needs CUDA is not judged here, as the judge's own build would say after
    starting its workers (:func:`ktui.repro.early.decide`, the decision ``ktui repro`` makes too).
    """

    def __init__(self, paths: Iterable[str], options: ReproOptions, *, all_versions: bool = False,
                 use_index_cache: bool = True, cpu: bool | None = None) -> None:
        self.paths = [os.fspath(p) for p in paths]
        self.options = options
        self.cpu = options.device == "cpu" if cpu is None else cpu
        self.decided: dict[str, dict[str, Any]] = {}
        self.all_versions = all_versions
        self.use_index_cache = use_index_cache
        self.rows: list[RunRow] = []
        self.jobs: dict[str, Job] = {}
        self.cached: dict[str, dict[str, Any]] = {}
        self.issues: list[ScanIssue] = []
        self.duplicates = 0  # rows whose kernel another row already has
        self.done = False

    def known(self) -> dict[str, dict[str, Any]]:
        """The results the walk already holds, by job key: cached ones and those it decided."""
        return {**self.cached, **self.decided}

    # ---- the walk ----------------------------------------------------------------------------------
    def summaries(self) -> Iterator[RunSummary]:
        for p in self.paths:
            if os.path.isdir(p):
                idx = SweepIndex(p, use_cache=self.use_index_cache)
                yield from idx.summaries()
                self.issues.extend(idx.issues)
            elif os.path.exists(p):
                s = summarize(p)
                s.path = p
                yield s
            else:
                self.issues.append(ScanIssue(p, "no such file or directory", "error"))

    def __iter__(self) -> Iterator[Job]:
        from ktui.trace import load

        for s in self.summaries():
            try:
                run = load(s.real or s.path)
            except Exception as exc:  # the reader never raises on bad data; an OSError can still happen
                self.issues.append(ScanIssue(s.path, f"cannot load: {exc}", "error"))
                self.rows.append(self._row(s, None, final=True, note=f"cannot load: {exc}"))
                continue
            kernels = list(getattr(run, "kernels", []) or [])
            final = run.final_kernel
            if not kernels or final is None:
                self.rows.append(self._row(s, None, final=True, note="the run has no kernel code"))
                continue
            chosen = kernels if self.all_versions else [final]
            rule = None
            try:
                ref, origin, rule = resolve_judging(run, self.options.reference_path, self.options.tasks_dir)
            except ReproError as exc:
                ref, origin = None, str(exc)
            for kv in chosen:
                is_final = kv.number == final.number
                row = self._row(s, kv.label, final=is_final)
                row.recorded = recorded_for(run, kv)
                row.rule = rule.to_dict() if rule is not None else None
                if not is_final:
                    c = row.recorded.correctness
                    row.recorded_outcome = INCOMPLETE if c is None else ("passed" if c.passed else "failed")
                self.rows.append(row)
                if not ref:
                    row.note = "the trace has no reference source (pass --tasks DIR or --reference FILE)"
                    continue
                if not (kv.code or "").strip():
                    row.note = "the snapshot has no kernel code"
                    continue
                ref_sha1 = sha1_text(ref)
                key = job_key(kv.sha1, ref_sha1)
                row.job = key
                job = self.jobs.get(key)
                if job is not None:
                    job.runs += 1
                    self.duplicates += 1
                    continue
                rkey = cache.result_key(kernel_sha1=kv.sha1, reference_sha1=ref_sha1, device=self.options.device,
                                        method=self.options.method, trials=self.options.trials,
                                        correctness_trials=self.options.correctness_trials)
                job = Job(key=key, kernel_sha1=kv.sha1, reference_sha1=ref_sha1, kernel_code=kv.code,
                          reference_source=ref, reference_origin=origin, label=kv.label,
                          trace=str(s.real or s.path), result_key=rkey)
                self.jobs[key] = job
                decided = early.decide(kv.code, kv.sha1, ref_sha1, cpu=self.cpu)
                if decided is not None:  # e.g. no GPU to judge it on: said now, no worker started
                    self.decided[key] = decided
                    continue
                if not self.options.fresh:
                    entry = cache.load(kv.sha1, rkey, self.options.device)
                    result = entry["result"] if entry else load_timeout_memo(rkey, self.options)
                    if result is not None:
                        self.cached[key] = result
                        continue
                yield job
            del run
        self.done = True

    def _row(self, s: RunSummary, version: str | None, *, final: bool, note: str = "") -> RunRow:
        return RunRow(path=s.path, real=s.real, model=s.model, problem=s.problem, version=version, final=final,
                      recorded_outcome=s.outcome if final else INCOMPLETE,
                      recorded_speedup=recorded_speedup(s) if final else None, note=note, summary=s)


def recorded_speedup(s: RunSummary) -> float | None:
    """The recorded speedup comparable with the reproduced one (over the reference run as written,
    i.e. eager): a harness's result file may give several baselines (Harbor: torch.compile, eager);
    without the eager / reference one, the headline figure."""
    sp = s.speedups or {}
    for base in ("reference", "eager"):
        if isinstance(sp.get(base), (int, float)):
            return float(sp[base])
    return None if sp else s.speedup
