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
    lock = threading.Lock()

    def emit(ev):
        with lock:
            out.write(json.dumps(ev, default=str, allow_nan=False) + "\n")

    try:
        result = judge(job, emit=emit, cancel=cancel)
    except ValueError as exc:  # an unknown job field: a bug in the caller
        result = {"status": "failed", "failure": {"stage": "startup", "kind": "worker_error",
                                                   "message": f"bad job: {exc}", "trial": None, "fatal": True}}
    with lock:
        out.write(json.dumps({"event": "result", **result}, default=str) + "\n")
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
