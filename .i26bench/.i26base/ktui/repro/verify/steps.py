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


def needs_build(code: str) -> bool:
    """Whether the kernel may compile something when it loads (an extension, a Triton or other JIT
    kernel). When not, there is nothing to build ahead: the judge step loads it directly. A kernel
    that hides a compile from this check still works: its judge step compiles it (not overlapped)."""
    return any(h in code for h in _BUILD_HINTS)


def build_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment additions of a build worker: one compiler (unless MAX_JOBS is set), niced."""
    env = {} if os.environ.get("MAX_JOBS") else {"MAX_JOBS": "1"}
    env["KTUI_WORKER_NICE"] = BUILD_NICE
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
          cancel: threading.Event | None = None) -> BuildResult:
    """Compile ``job`` into ``build_root`` in a fresh worker process (never raises for the kernel)."""
    started = time.time()
    ctimeout, rtimeout = _timeouts(options)
    req = job.request(options, build_root, with_reference=False)
    res = runner.run_request(req, cancel=cancel, compile_timeout=ctimeout, run_timeout=rtimeout, env_extra=env_extra)
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
