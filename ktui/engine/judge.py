"""The judge process: ``python -m ktui.engine.judge`` (started by :mod:`ktui.repro.runner`).

Reads one job (JSON) on stdin, runs :func:`ktui.engine.pipeline.judge` and writes JSON
lines on stdout: progress events (``{"event": "stage" | "trial", ...}``) and one
``{"event": "result", ...}``. It is ktui's own code only and never loads trace code: the
reference and the candidate run in sandboxed workers it starts. It dies with its parent
(PR_SET_PDEATHSIG) and its workers die with it; SIGTERM / SIGHUP end the workers first.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

MAX_JOB_BYTES = 64 << 20


def _vm_size() -> int:
    try:
        with open("/proc/self/status") as fh:
            for ln in fh:
                if ln.startswith("VmSize:"):
                    return int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def bound_memory(budget=None) -> int:
    """The judge's own memory bound: RLIMIT_AS (soft; the hard limit stays, so a GPU worker it
    starts raises it again: CUDA reserves terabytes of address space) at what the judge maps
    once torch is imported plus ``budget`` bytes (default: a worker's memory limit). A reply that
    would make it allocate more (a forged size, a flood of samples or outputs) ends in a
    MemoryError, a harness error in words, never the host's memory. Returns the limit (0: none)."""
    import resource

    from .sandbox import default_memory_limit

    try:
        import torch  # noqa: F401 - the judge decodes and compares tensors: its libraries mapped first
    except ImportError:
        pass
    base = _vm_size()
    if not base:
        return 0
    limit = base + int(budget or default_memory_limit())
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, soft)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        return 0
    return limit


def main() -> None:
    from . import sandbox
    from .pipeline import judge

    sandbox.set_pdeathsig(signal.SIGKILL)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # nothing else may write on the event stream
    cancel = threading.Event()

    def on_signal(signum, frame):
        cancel.set()
        threading.Timer(10.0, lambda: os._exit(128 + signum)).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    raw = sys.stdin.buffer.read(MAX_JOB_BYTES + 1)
    try:
        if len(raw) > MAX_JOB_BYTES:
            raise ValueError("job too large")
        job = json.loads(raw)
        if not isinstance(job, dict):
            raise ValueError("job is not an object")
    except ValueError as exc:
        out.write(json.dumps({"event": "result", "status": "failed",
                              "failure": {"stage": "startup", "kind": "worker_error", "message": f"bad job: {exc}",
                                          "trial": None, "fatal": True}}) + "\n")
        out.flush()
        os._exit(2)
    # the judge holds what the workers send: a raised worker limit raises its own bound too
    limit = bound_memory(job.get("judge_memory") or (sandbox.worker_memory_limit(job.get("memory_limit"))
                                                             if job.get("memory_limit") else None))
    lock = threading.Lock()

    def emit(ev):
        with lock:
            out.write(json.dumps(ev, default=str, allow_nan=False) + "\n")

    try:
        result = judge(job, emit=emit, cancel=cancel)
        f = result.get("failure") or {}
        if limit and f.get("kind") == "harness_error" and any(
                w in str(f.get("message")) for w in ("MemoryError", "Cannot allocate memory")):
            f["message"] = (f"the judge ran out of its memory budget ({limit / 2**30:.1f} GiB of address space, "
                            f"RLIMIT_AS): {f.get('message')}")
    except ValueError as exc:  # an unknown job field: a bug in the caller
        result = {"status": "failed", "failure": {"stage": "startup", "kind": "worker_error",
                                                   "message": f"bad job: {exc}", "trial": None, "fatal": True}}
    with lock:
        out.write(json.dumps({"event": "result", **result}, default=str) + "\n")
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
