"""The two steps of a verification, over the same worker and judge as ``ktui repro``.

- :func:`build`: compile one kernel into the shared build cache (``<build root>/<build key>``), in
  a fresh worker process. It sends the worker the kernel without its reference, so the worker's
  pipeline runs startup and build and then stops at the reference stage ("no reference"): that
  stop is the build step's success. A compile error, a crash or a hang while the module loads is
  the kernel's result, and there is nothing to time.
- :func:`judge`: the whole reproduction (build again: a cache hit, then reference, correctness,
  timing, checks) in a fresh worker process on the slot's device, exactly the request ``ktui
  repro`` sends, so each result is what ``ktui repro`` of that kernel gives on that device.

Every worker is a fresh process per kernel: a crashed, hung or CUDA-corrupted one never runs
another kernel. Nothing here imports torch.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ktui.repro import runner
from ktui.repro.api import ReproOptions
from ktui.repro.verify.plan import Job

BUILD_STOP = ("reference", "no_reference")  # where a build-only request ends when the build worked
BUILD_NICE = "10"  # build workers run niced: the timing workers' CPU time comes first
_BUILD_HINTS = ("cpp_extension", "load_inline", "triton", "cupy", "numba", "ctypes.CDLL", "cffi", "nvrtc",
                "subprocess", "tvm", "tilelang", "cutlass", "jit")


#: hints of code that compiles at its first call, not when its module loads: Triton's @triton.jit
#: kernels compile in the judge's warm-up call (ktui.engine.correctness), so a build step for them only
#: starts a worker that imports torch and compiles nothing (50 real Triton kernels on the H100: 20-51 s
#: each, 1,679 s of build workers beside the judge, session 36)
_FIRST_CALL_HINTS = ("triton", "jit")


def needs_build(code: str) -> bool:
    """Whether the kernel may compile something when it loads (an extension, a CuPy or NVRTC
    program, a library). When not, there is nothing to build ahead: the judge step loads it
    directly. A Triton kernel compiles at its first call, in the judge's warm-up: nothing ahead.
    A kernel that hides a compile from this check still works: its judge step compiles it (not
    overlapped)."""
    return any(h in code for h in _BUILD_HINTS if h not in _FIRST_CALL_HINTS)


PER_COMPILER_BYTES = 2 << 30  # one nvcc/c++ on an extension with torch's headers: about 1-2 GiB at its peak


def mem_available() -> int | None:
    """Bytes of memory available now (/proc/meminfo MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for ln in fh:
                if ln.startswith("MemAvailable:"):
                    return int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


#: cores one judge in flight keeps busy at most: its own comparisons (float64, on the CPU) and the host
#: work of one of its two workers (they answer its requests in turn)
JUDGE_CORES = 2
#: compilers one build keeps busy: a load_inline extension is two sources (the C++ bindings and the
#: .cu), compiled at once
BUILD_JOBS = 2


def judge_cores(cores: int, judges: int) -> int:
    """Cores kept for the ``judges`` in flight (GPU slots x pipeline depth): never given to
    compilers, so that a sweep's builds do not slow the kernels being judged (half the cores at most)."""
    if judges <= 0 or cores <= 1:
        return 0
    return max(1, min(cores // 2, JUDGE_CORES * judges))


def compilers_budget(cores: int | None = None, mem: int | None = None, judges: int = 0) -> int:
    """How many compilers may run at once here: one per core less the judges' cores
    (:func:`judge_cores`), no more than the memory holds (``PER_COMPILER_BYTES`` each); at least 1."""
    cores = cores or os.cpu_count() or 1
    mem = mem_available() if mem is None else mem
    usable = max(1, cores - judge_cores(cores, judges))
    by_mem = usable if mem is None else max(1, mem // PER_COMPILER_BYTES)
    return max(1, min(usable, by_mem))


def builders_for(budget: int) -> int:
    """Builds at once: the compilers budget in builds of ``BUILD_JOBS`` compilers each. Fewer
    builds, each with its own cores, land sooner than one build per core all sharing them (the
    first kernel reaches its GPU earlier; the sweep's compile work is the same)."""
    return max(1, budget // BUILD_JOBS)


def max_jobs_for(budget: int, in_flight: int, waiting: int = 0, used_by_others: int = 0,
                 builders: int | None = None) -> int:
    """ninja's parallelism (MAX_JOBS) for a build that starts while ``in_flight`` builds (itself
    included) run and ``waiting`` more are queued: the compilers budget shared among the builds
    that will run beside it (at most ``builders``), never more than the budget the other builds
    in flight left (``used_by_others``: the sum of their MAX_JOBS); at least 1. The last builds of
    a sweep, alone, compile their sources in parallel."""
    beside = max(1, in_flight + max(0, waiting))
    if builders is not None:
        beside = min(beside, max(1, builders))
    share = max(1, budget // beside)
    return max(1, min(share, budget - max(0, used_by_others)))


def judge_threads(cores: int, judges: int, compilers: int) -> int:
    """torch's intra-op threads (``OMP_NUM_THREADS``) for a judge and its workers on a GPU slot: the
    cores the compilers in flight leave, shared by the ``judges`` in flight. With one pool of one
    thread per core in each of several processes (two judges of the pipeline and their workers,
    beside a sweep's builds), the pools' threads spin-wait for each other at every parallel region
    (benchmarks/results/test_suite_cpu.md: 4x slower on a loaded machine)."""
    free = max(1, cores - max(0, compilers))
    return max(1, free // max(1, judges))


def build_env(extra: dict[str, str] | None = None, max_jobs: int = 1) -> dict[str, str]:
    """The environment additions of a build worker: ``max_jobs`` compilers (unless MAX_JOBS is set),
    niced, and one torch thread (unless OMP_NUM_THREADS is set: a build runs no tensor work of ktui's)."""
    env = {} if os.environ.get("MAX_JOBS") else {"MAX_JOBS": str(max(1, int(max_jobs)))}
    env["KTUI_WORKER_NICE"] = BUILD_NICE
    if not os.environ.get("OMP_NUM_THREADS"):
        env["OMP_NUM_THREADS"] = "1"
    env.update(extra or {})
    return env


@dataclass
class BuildResult:
    ok: bool  # built (or nothing to build): the judge step can run
    result: dict[str, Any]  # when not ok: the kernel's result (compile error, crash, timeout...)
    seconds: float
    started: float  # time.time()
    ended: float
    build: dict[str, Any] | None = None  # the worker's build record (key, dir, cached, extensions)
    pack: bytes | None = field(default=None, repr=False)  # the build directory as a tar (Ray, no shared path)

    def to_wire(self) -> dict[str, Any]:
        return {"ok": self.ok, "result": self.result, "seconds": self.seconds, "started": self.started,
                "ended": self.ended, "build": self.build}


def build_phases(br: BuildResult) -> dict[str, Any]:
    """Where a build step's wall time went, from its judge's result: its stages (``startup``: the
    worker started, torch imported, the device set up; ``build``: the kernel's module loaded, its
    extensions compiled, the build folder copied into the cache), torch's import and the device's
    set-up inside the startup, the build's copy into the cache, and the candidate's seconds per
    request. The rest of ``seconds`` is the judge process's own start and end."""
    res = br.result if isinstance(br.result, dict) else {}
    out: dict[str, Any] = {}
    st = res.get("stages")
    if isinstance(st, dict):
        out["stages"] = {str(k): v.get("seconds") for k, v in st.items() if isinstance(v, dict)}
    su = res.get("startup")
    if isinstance(su, dict):
        out["startup"] = {k: su.get(k) for k in ("import_torch_s", "device_init_s")}
    ws = (res.get("worker_seconds") or {}).get("candidate") if isinstance(res.get("worker_seconds"), dict) else None
    if isinstance(ws, dict):
        out["worker_seconds"] = {str(k): v for k, v in list(ws.items())[:16]}
    cache_rec = (br.build or {}).get("cache") if isinstance(br.build, dict) else None
    if isinstance(cache_rec, dict) and isinstance(cache_rec.get("seconds"), (int, float)):
        out["publish_s"] = cache_rec["seconds"]
    return out


def _timeouts(options: ReproOptions) -> tuple[float, float]:
    return (options.compile_timeout or options.timeout), options.timeout


def interpret_build(job: Job, res: dict[str, Any], started: float) -> BuildResult:
    ended = time.time()
    f = res.get("failure") or {}
    ok = res.get("status") == "failed" and (f.get("stage"), f.get("kind")) == BUILD_STOP
    if not ok:
        res = dict(res)
        # the same result a full run gives: it would have failed here too, with the reference known
        res["reference_sha1"] = job.reference_sha1
        res.setdefault("kernel_sha1", job.kernel_sha1)
        if res.get("stages"):
            res["stages"] = {k: v for k, v in res["stages"].items() if k != "reference"}
    return BuildResult(ok=ok, result=res, seconds=round(ended - started, 3), started=started, ended=ended,
                       build=res.get("build"))


def build(job: Job, options: ReproOptions, *, build_root: str, env_extra: dict[str, str] | None = None,
          cancel: threading.Event | None = None, on_progress: Any = None) -> BuildResult:
    """Compile ``job`` into ``build_root`` in a fresh worker process (never raises for the kernel)."""
    started = time.time()
    ctimeout, rtimeout = _timeouts(options)
    req = job.request(options, build_root, with_reference=False)
    res = runner.run_request(req, cancel=cancel, compile_timeout=ctimeout, run_timeout=rtimeout, env_extra=env_extra,
                             on_progress=on_progress)
    return interpret_build(job, res, started)


def judge(job: Job, options: ReproOptions, *, build_root: str, env_extra: dict[str, str] | None = None,
          cancel: threading.Event | None = None) -> dict[str, Any]:
    """Reproduce ``job`` in full on the slot's device, in a fresh judge and fresh workers."""
    ctimeout, rtimeout = _timeouts(options)
    t0 = time.monotonic()
    res = runner.run_request(job.request(options, build_root), cancel=cancel, compile_timeout=ctimeout,
                             run_timeout=rtimeout, env_extra=env_extra)
    res.setdefault("wall_seconds", round(time.monotonic() - t0, 3))
    return res
