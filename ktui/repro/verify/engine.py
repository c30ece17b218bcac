"""The local engine: build processes compile ahead while one timing slot per GPU judges.

::

    planner ──jobs──▶ build queue ──▶ N build threads ─(one fresh worker process per build)─┐
                                                                                            ▼
    results ◀── slot threads (one per GPU, CUDA_VISIBLE_DEVICES pinned) ◀── ready queue (built)

- ``jobs`` build threads each run one build at a time in a fresh worker process (``MAX_JOBS=1``:
  one compiler each), so ``jobs`` compilers keep the cores busy; builds go into the shared build
  cache and a built kernel is queued for timing at once (no batches, no barrier).
- one slot thread per GPU takes the next built kernel as soon as its GPU is free: never two
  kernels on one GPU. Each kernel runs in a fresh judge and fresh worker processes pinned to
  that GPU; a crash, a hang (killed at the
  timeout) or a CUDA error ends that process only, the kernel's result says what happened, and
  the slot goes on with a new process.
- on the CPU (``--device cpu``) the slots are ``cpu_slots`` CPU timing workers.
- the pipeline (``pipeline=True``, the default): each slot runs two judges at once, so kernel
  k+1's workers start, load their build and receive their inputs while kernel k is timed. They
  share the device through its lock file (``ktui.engine.devicelock``): the timing windows have it
  alone, other device work shares it, host work (comparisons, findings, cache writes) holds
  nothing. ``pipeline=False``: one judge per slot at a time (as before).

Results go to the result cache (the parent writes it, never a worker) as each one finishes, so an
interrupted sweep resumes where it stopped. Nothing here imports torch.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from ktui.repro import cache, early
from ktui.repro.api import ReproOptions
from ktui.repro.runner import _failure_result
from ktui.repro.verify import steps
from ktui.repro.verify.plan import Job, store_timeout_memo

# event kinds
BUILD_START, BUILT, BUILD_FAILED = "build_start", "built", "build_failed"
BUILD_PROGRESS = "build_progress"  # the build worker says what it compiles (detail)
TIME_START, TIMED, FAILED, CACHED, CANCELLED = "time_start", "timed", "failed", "cached", "cancelled"
QUEUED = "queued"
STAGE, PROBE = "stage", "probe"  # one per stage and per probe of a judged kernel, with its seconds (detail: name)
# where a judged kernel's reference time came from (detail: "measured" / "cache, measured N s earlier";
# seconds: the cached measurement's age)
REFERENCE_TIME = "reference_time"


@dataclass
class Event:
    kind: str
    job: str  # Job.key
    t: float  # time.time()
    slot: str | None = None
    seconds: float | None = None
    label: str = ""
    result: dict[str, Any] | None = field(default=None, repr=False)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("result", None)
        return d


@dataclass
class Slot:
    """Where timings run: one GPU (``env`` pins it) or one CPU timing worker."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    gpu: str | None = None


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries (no torch import):
    ``$CUDA_VISIBLE_DEVICES`` when set, else every GPU ``nvidia-smi`` lists."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip().isdigit()]


def make_slots(device: str | None, gpus: list[str] | None, cpu_slots: int = 1) -> list[Slot]:
    """One slot per GPU (``gpus``: ids to use; None: every visible one), or ``cpu_slots`` CPU slots
    when the device is the CPU or no GPU is visible."""
    if device != "cpu":
        ids = visible_gpus() if gpus is None else list(gpus)
        if ids:
            return [Slot(f"gpu{g}", {"CUDA_VISIBLE_DEVICES": g}, gpu=g) for g in ids]
        if device is not None and device.startswith("cuda"):
            return []  # asked for CUDA, none here: the command says so
    return [Slot(f"cpu{i}", {}) for i in range(max(1, cpu_slots))]


def cpu_only(device: str | None, slots: list[Slot]) -> bool:
    """Whether the kernels will be judged on a CPU: ``--device cpu``, or no device asked for ("cuda
    if available") with CPU slots only and no NVIDIA driver on this machine (``/dev/nvidiactl``)."""
    if device is None and (not slots or any(s.gpu is not None for s in slots)):
        return False
    return early.on_cpu(device)


def default_jobs(judges: int = 1) -> int:
    """Builds at once: the compilers budget (the cores less those kept for the ``judges`` in
    flight, no more than the memory holds) in builds of two compilers each (steps.builders_for)."""
    return steps.builders_for(steps.compilers_budget(judges=judges))


def cache_entry(job: Job, options: ReproOptions, result: dict[str, Any]) -> dict[str, Any]:
    """The result-cache entry, in the shape :func:`ktui.repro.api.reproduce` writes."""
    req = job.request(options, str(cache.build_root()))
    public = {k: v for k, v in req.items() if k not in ("kernel_code", "reference_source")}
    return {"kernel_sha1": job.kernel_sha1, "key": job.result_key, "trace": job.trace, "version": job.label,
            "request": public, "options": asdict(options), "result": result,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "via": "verify"}


class Recorder:
    """Shared by the engines: collects results and events, writes the cache, counts."""

    def __init__(self, options: ReproOptions, on_event: Callable[[Event], None] | None = None):
        self.options = options
        self.on_event = on_event
        self.results: dict[str, dict[str, Any]] = {}
        self.events: list[Event] = []
        self.counts = {BUILD_START: 0, BUILT: 0, BUILD_FAILED: 0, TIME_START: 0, TIMED: 0, FAILED: 0,
                       CANCELLED: 0, QUEUED: 0}
        self.builds: dict[str, dict[str, Any]] = {}  # job key -> build record (seconds, cached...)
        self.lock = threading.Lock()
        self.callback_errors: list[str] = []

    def emit(self, kind: str, job: Job, *, slot: str | None = None, seconds: float | None = None,
             result: dict[str, Any] | None = None, t: float | None = None, detail: str = "") -> None:
        ev = Event(kind, job.key, time.time() if t is None else t, slot, seconds, job.label, result, detail[:120])
        with self.lock:
            self.events.append(ev)
            if kind in self.counts:
                self.counts[kind] += 1
        if self.on_event is not None:
            try:
                self.on_event(ev)
            except Exception:  # a broken display must not stop the sweep; say so at the end
                self.callback_errors.append(traceback.format_exc(limit=3))

    def cost_events(self, job: Job, slot: str | None, res: dict[str, Any]) -> None:
        """What each stage and each probe of a judged kernel cost, and where its reference time came
        from, as events (``--events``; both engines)."""
        for kind, table in ((STAGE, res.get("stages")), (PROBE, res.get("probes"))):
            for name, rec in (table or {}).items() if isinstance(table, dict) else ():
                secs = rec.get("seconds") if isinstance(rec, dict) else None
                if isinstance(secs, (int, float)):
                    self.emit(kind, job, slot=slot, seconds=float(secs), detail=str(name))
        rt = (res.get("timing") or {}).get("reference_timing") if isinstance(res.get("timing"), dict) else None
        if isinstance(rt, dict):
            ops = ((res.get("worker_ops") or {}).get("reference") or {}) if isinstance(res.get("worker_ops"), dict) else {}
            timed = sum(int(ops.get(k) or 0) for k in ("time", "wall"))
            age = rt.get("age_s") if rt.get("source") == "cache" else None
            detail = (f"cache, measured {float(age):.1f} s earlier" if isinstance(age, (int, float))
                      else f"measured ({timed} reference timing requests)"
                      + (f"; not cached: {rt['why_not_cached']}" if rt.get("why_not_cached") else "")
                      + ("; stored" if rt.get("stored") else ""))
            self.emit(REFERENCE_TIME, job, slot=slot, seconds=float(age) if isinstance(age, (int, float)) else None,
                      detail=detail)

    def finish(self, job: Job, result: dict[str, Any], *, slot: str | None, stopping: bool) -> None:
        """One kernel's final result: cache it (when it says something about the kernel) and count it."""
        if result.get("status") == "cancelled" or (stopping and (result.get("failure") or {}).get("kind")
                                                     in ("cancelled", "timeout")):
            self.emit(CANCELLED, job, slot=slot)
            return
        kind = (result.get("failure") or {}).get("kind")
        if cache.cacheable(result):
            cache.store(cache_entry(job, self.options, result))
        elif kind == "timeout":
            store_timeout_memo(job.result_key, result, self.options)
        with self.lock:
            self.results[job.key] = result
        ok = result.get("status") == "completed"
        self.emit(TIMED if ok else FAILED, job, slot=slot, seconds=result.get("wall_seconds"), result=result)


SEED_MAX_AGE_S = 7 * 86400.0  # a problem's kept input seed is replaced after a week


def refcache_root() -> str:
    return str(cache.cache_root() / "refcache")


def problem_seed(reference_sha1: str, *, fresh: bool = False, root: str | None = None) -> int:
    """The problem's kept secret input seed (``<refcache>/seeds/<sha1>.json``), or a new one, kept."""
    import json
    import re
    import secrets

    path = os.path.join(root or refcache_root(), "seeds", re.sub(r"[^0-9a-f]", "", reference_sha1.lower())[:40] + ".json")
    if not fresh:
        try:
            with open(path, encoding="utf-8") as fh:
                d = json.load(fh)
            seed, at = d.get("seed"), d.get("created")
            if (isinstance(seed, int) and 0 < seed < 2**31 and isinstance(at, (int, float))
                    and 0 <= time.time() - at < SEED_MAX_AGE_S):
                return seed
        except (OSError, ValueError, AttributeError):
            pass
    seed = 1 + secrets.randbelow(2**31 - 2)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"seed": seed, "created": time.time()}, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # not kept: this sweep still uses it
    return seed


_DONE = object()
PIPELINE_DEPTH = 2  # judges in flight per slot with the pipeline on (one timed, the next getting ready)
STOP_GRACE_S = 30.0  # after a stop, how long the threads get to kill their workers and clean up


def run_threads(targets: list[tuple[str, Callable[..., None], tuple[Any, ...]]], cancel: threading.Event,
                grace: float = STOP_GRACE_S) -> None:
    """Run each ``(name, fn, args)`` in a thread and wait for all of them. On KeyboardInterrupt
    (Ctrl-C, or SIGTERM/SIGHUP turned into one by the command), set ``cancel``, give the threads
    ``grace`` seconds to end their workers and remove their temp dirs, then re-raise.

    Completion is waited for on events the threads set as they end, never with
    ``Thread.join``: a join interrupted by KeyboardInterrupt can leave that thread marked as
    finished on CPython < 3.13, so a second join returns at once and the process exits while
    the thread is still killing its workers (their temp dirs were left behind)."""
    done = [threading.Event() for _ in targets]

    def body(fn: Callable[..., None], args: tuple[Any, ...], ev: threading.Event) -> None:
        try:
            fn(*args)
        finally:
            ev.set()

    for (name, fn, args), ev in zip(targets, done, strict=True):
        threading.Thread(target=body, args=(fn, args, ev), name=name, daemon=True).start()
    try:
        for ev in done:
            while not ev.wait(0.2):
                pass
    except KeyboardInterrupt:
        cancel.set()
        deadline = time.monotonic() + grace
        for ev in done:
            ev.wait(max(0.0, deadline - time.monotonic()))
        raise


class EngineBase:
    """What both engines share: a :class:`Recorder` (``rec``), a ``cancel`` event, the engine-bug list
    (``errors``) and the planning loop that queues jobs."""

    rec: Recorder
    cancel: threading.Event
    errors: list[str]

    @property
    def results(self) -> dict[str, dict[str, Any]]:
        return self.rec.results

    @property
    def events(self) -> list[Event]:
        return self.rec.events

    @property
    def counts(self) -> dict[str, int]:
        return self.rec.counts

    def stop(self) -> None:
        self.cancel.set()

    def _queue_jobs(self, jobs: Iterable[Job], put: Callable[[Job], None]) -> None:
        """Record each planned job as queued and hand it to ``put``, until cancelled; a planning
        error is an engine bug and cancels the run."""
        try:
            for job in jobs:
                if self.cancel.is_set():
                    break
                self.rec.emit(QUEUED, job)
                put(job)
        except Exception:
            self.errors.append("planning failed:\n" + traceback.format_exc())
            self.cancel.set()


class SlotGate:
    """Judges share a timing slot (the pipeline's lanes) or, for a retry, hold it alone: a kernel
    that ran out of GPU memory while other kernels' workers held it is judged again once with
    none beside it (a readers-writer lock; waiting ends when ``cancel`` is set)."""

    def __init__(self, cancel: threading.Event):
        self.cv = threading.Condition()
        self.cancel = cancel
        self.running = 0
        self.exclusive = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self.cv:
            while self.exclusive and not self.cancel.is_set():
                self.cv.wait(0.5)
            self.running += 1
        try:
            yield
        finally:
            with self.cv:
                self.running -= 1
                self.cv.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self.cv:
            while self.exclusive and not self.cancel.is_set():
                self.cv.wait(0.5)
            self.exclusive = True
            while self.running > 0 and not self.cancel.is_set():
                self.cv.wait(0.5)
        try:
            yield
        finally:
            with self.cv:
                self.exclusive = False
                self.cv.notify_all()


def held_by_others(res: dict[str, Any]) -> bool:
    """The result says the GPU's memory was held by other work (judging.outcome.GPU_MEMORY)."""
    from ktui.repro.judging.outcome import GPU_MEMORY, unjudged

    u = unjudged(res)
    return u is not None and u.why == GPU_MEMORY


class LocalEngine(EngineBase):
    """Run jobs on this machine. :meth:`run` blocks; :meth:`stop` (any thread) cancels the rest."""

    name = "local"

    def __init__(self, options: ReproOptions, *, slots: list[Slot], jobs: int | None = None,
                 build_root: str | None = None, on_event: Callable[[Event], None] | None = None,
                 build_fn: Callable[..., steps.BuildResult] = steps.build,
                 judge_fn: Callable[..., dict[str, Any]] = steps.judge,
                 skip_trivial: bool = True, pipeline: bool = True, share_reference: bool | None = None):
        if not slots:
            raise ValueError("no timing slots")
        self.options = options
        self.slots = slots
        self.depth = PIPELINE_DEPTH if pipeline else 1  # judges in flight per slot
        self.judges = len(slots) * self.depth
        self._budget = steps.compilers_budget(judges=self.judges)  # compilers at once, the judges' cores kept
        self.jobs = max(1, jobs or steps.builders_for(self._budget))
        self.build_root = build_root or str(cache.build_root())
        self.rec = Recorder(options, on_event)
        self.build_fn = build_fn
        self.judge_fn = judge_fn
        self.skip_trivial = skip_trivial
        if share_reference is None:  # KTUI_VERIFY_SHARE_REFERENCE=0: every kernel its own seed (benchmarks)
            from ktui.settings import current

            share_reference = current().verify_share_reference
        self.share_reference = share_reference  # one secret input seed per problem, the reference's outputs kept
        self._seeds: dict[str, int] = {}
        self.cancel = threading.Event()
        self._build_q: queue.Queue[Any] = queue.Queue()
        self._ready_q: queue.Queue[Any] = queue.Queue()
        self._builders_left = 0
        self._lock = threading.Lock()
        self._building = 0  # builds in flight (their MAX_JOBS share the compilers budget)
        self._compilers = 0  # the sum of their MAX_JOBS
        self._queued = 0  # builds waiting for a builder
        self.errors: list[str] = []  # engine bugs (each also made its kernel's result)
        self._gates = {s.name: SlotGate(self.cancel) for s in slots}

    def _build_env(self, i: int) -> dict[str, str]:
        env = steps.build_env()
        gpu_slots = [s for s in self.slots if s.gpu is not None]
        if gpu_slots:  # the build key names the GPU's arch: builders see one GPU each, spread over them
            env["CUDA_VISIBLE_DEVICES"] = gpu_slots[i % len(gpu_slots)].gpu or ""
        return env

    # ---- threads ------------------------------------------------------------------------------------
    def _route(self, job: Job) -> None:
        if self.skip_trivial and not steps.needs_build(job.kernel_code):
            self.rec.builds[job.key] = {"seconds": 0.0, "skipped": True, "ok": True}
            self._ready_q.put((job, None))  # nothing to compile: straight to a timing slot
        else:
            with self._lock:
                self._queued += 1
            self._build_q.put(job)

    def _feed(self, jobs: Iterable[Job]) -> None:
        try:
            self._queue_jobs(jobs, self._route)
        finally:
            for _ in range(self.jobs):
                self._build_q.put(_DONE)

    def _builder(self, i: int) -> None:
        env = self._build_env(i)
        try:
            while True:
                job = self._build_q.get()
                if job is _DONE or self.cancel.is_set():
                    break
                with self._lock:
                    self._queued = max(0, self._queued - 1)
                    self._building += 1
                    max_jobs = steps.max_jobs_for(self._budget, self._building, self._queued, self._compilers,
                                                  builders=self.jobs)
                    if os.environ.get("MAX_JOBS"):
                        max_jobs = max(1, int(os.environ["MAX_JOBS"]) if os.environ["MAX_JOBS"].isdigit() else 1)
                    self._compilers += max_jobs
                benv = dict(env)
                if not os.environ.get("MAX_JOBS"):
                    benv["MAX_JOBS"] = str(max_jobs)
                self.rec.builds[job.key] = {"max_jobs": int(benv.get("MAX_JOBS") or 1), "in_flight": self._building}
                self.rec.emit(BUILD_START, job)
                # what the build worker compiles, as it starts each extension (the default build step)
                kw = {"on_progress": self._build_progress(job)} if self.build_fn is steps.build else {}
                try:
                    br = self.build_fn(job, self.options, build_root=self.build_root, env_extra=benv,
                                       cancel=self.cancel, **kw)
                except Exception:
                    tb = traceback.format_exc()
                    self.errors.append(tb)
                    br = steps.BuildResult(False, _failure_result("harness_error", "ktui verify: build step "
                                                                  f"failed: {tb.splitlines()[-1]}", "build", None),
                                           0.0, time.time(), time.time())
                finally:
                    with self._lock:
                        self._building -= 1
                        self._compilers -= max_jobs
                exts = (br.build or {}).get("extensions") or []
                self.rec.builds[job.key].update(
                    seconds=br.seconds, started=br.started, ended=br.ended, cached=bool((br.build or {}).get("cached")),
                    ok=br.ok, extensions=[{k: e.get(k) for k in ("name", "seconds", "steps")} for e in exts][:8],
                    **steps.build_phases(br))
                if br.ok:
                    self.rec.emit(BUILT, job, seconds=br.seconds)
                    self._ready_q.put((job, br))
                else:
                    self.rec.emit(BUILD_FAILED, job, seconds=br.seconds, result=br.result)
                    self.rec.finish(job, br.result, slot=None, stopping=self.cancel.is_set())
        finally:
            with self._lock:
                self._builders_left -= 1
                last = self._builders_left == 0
            if last:
                for _ in range(len(self.slots) * self.depth):
                    self._ready_q.put(_DONE)

    def _problem_seed(self, reference_sha1: str) -> int:
        """The secret input seed for one problem (never in a candidate's reach: the judge hands
        candidates inputs, never seeds). Kept in the reference cache's root (masked from every
        worker, like the reference's outputs and timings it keys) so that a later sweep of the same
        problem (resumed, or with new kernels) judges on the same inputs and reuses the reference's
        outputs and time; ``--fresh`` draws a new one, and so does a seed older than SEED_MAX_AGE_S."""
        with self._lock:
            if reference_sha1 not in self._seeds:
                self._seeds[reference_sha1] = problem_seed(reference_sha1, fresh=self.options.fresh)
            return self._seeds[reference_sha1]

    def _cost_events(self, job: Job, slot: Slot, res: dict[str, Any]) -> None:
        self.rec.cost_events(job, slot.name, res)

    def _build_progress(self, job: Job) -> Callable[[Any], None]:
        t0 = time.monotonic()

        def on_progress(p: Any) -> None:
            what = getattr(p, "what", None) or ""
            if getattr(p, "stage", None) == "build" and getattr(p, "state", None) == "trial" and what.startswith(
                    "compiling"):
                self.rec.emit(BUILD_PROGRESS, job, seconds=round(time.monotonic() - t0, 3), detail=what)
        return on_progress

    def _timer(self, slot: Slot, lane: int = 0) -> None:
        while True:
            item = self._ready_q.get()
            if item is _DONE or self.cancel.is_set():
                break
            job, _br = item
            if self.share_reference and job.reference_sha1:
                job.input_seed = self._problem_seed(job.reference_sha1)
                job.ref_cache = refcache_root()
            self.rec.emit(TIME_START, job, slot=slot.name)
            t0 = time.time()
            gate = self._gates[slot.name]
            with gate.shared():
                res = self._judge_one(job, slot)
            retried = False
            if self.depth > 1 and held_by_others(res) and not self.cancel.is_set():
                with gate.alone():  # once more, with no other kernel's workers on the GPU
                    res = self._judge_one(job, slot)
                retried = True
            res.setdefault("verify", {}).update(slot=slot.name, lane=lane, started=t0, ended=time.time())
            if retried:
                res["verify"]["retried_alone"] = "the GPU's memory was held by other kernels' workers"
            self._cost_events(job, slot, res)
            self.rec.finish(job, res, slot=slot.name, stopping=self.cancel.is_set())

    def _judge_env(self, slot: Slot) -> dict[str, str]:
        """The slot's environment for one judge, with torch's intra-op threads for it and its workers
        (``OMP_NUM_THREADS``, unless set): the cores the builds in flight leave, shared by the
        judges in flight (steps.judge_threads). GPU slots only: on the CPU the threads are the
        device's, and the timings depend on them."""
        env = dict(slot.env)
        if slot.gpu is not None and not os.environ.get("OMP_NUM_THREADS"):
            with self._lock:
                compilers = self._compilers
            env["OMP_NUM_THREADS"] = str(steps.judge_threads(os.cpu_count() or 1, self.judges, compilers))
        return env

    def _judge_one(self, job: Job, slot: Slot) -> dict[str, Any]:
        try:
            return self.judge_fn(job, self.options, build_root=self.build_root, env_extra=self._judge_env(slot),
                                 cancel=self.cancel)
        except Exception:
            tb = traceback.format_exc()
            self.errors.append(tb)
            return _failure_result("harness_error", f"ktui verify: judge step failed: {tb.splitlines()[-1]}",
                                   "startup", None)

    # ---- run ----------------------------------------------------------------------------------------
    def run(self, jobs: Iterable[Job]) -> dict[str, dict[str, Any]]:
        self._builders_left = self.jobs
        targets: list[tuple[str, Callable[..., None], tuple[Any, ...]]] = [("verify-plan", self._feed, (jobs,))]
        targets += [(f"verify-build{i}", self._builder, (i,)) for i in range(self.jobs)]
        targets += [(f"verify-{s.name}-{lane}", self._timer, (s, lane)) for s in self.slots for lane in range(self.depth)]
        run_threads(targets, self.cancel)
        return self.results
