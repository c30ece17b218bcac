"""The repro worker: ``python -m ktui.repro.worker``.

Reads one JSON request per line from stdin, prints JSON lines on stdout::

    {"event": "ready", "pid": ..., "python": ...}
    {"event": "stage", "stage": "build", "state": "start"}
    {"event": "trial", "stage": "correctness", "trial": 2, "of": 5, "what": "trial"}
    {"event": "stage", "stage": "build", "state": "done", "seconds": 31.2}
    ...
    {"event": "result", "status": "completed" | "failed", ...}

Every line is flushed before the step it announces starts, so a parent that sees the process
die knows where it died ("kernel crashed: SIGSEGV during correctness trial 2").

The protocol owns the real stdout: file descriptor 1 is pointed at stderr before any model code
runs, so whatever the kernel (or the compiler, or a C++ printf) prints never corrupts it.

With ``"keep_alive": true`` in a request the worker waits for the next request after a
successful result (a warm worker); it exits after any failure, after a request without
keep_alive, or at end of input. It ends with ``os._exit`` so no destructor or atexit hook
from model-written code runs after the last result.

Imports nothing from ktui but the self-contained harness, and imports torch only inside it.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys


def _protocol_stream():
    fd = os.dup(1)
    os.dup2(2, 1)  # fd 1 (C printf, subprocesses, print) now goes to stderr
    try:
        sys.stdout = open(1, "w", closefd=False, buffering=1, encoding="utf-8", errors="replace")
    except OSError:
        sys.stdout = sys.stderr
    return open(fd, "w", buffering=1, encoding="utf-8", errors="replace")


def main() -> None:
    proto = _protocol_stream()
    try:
        faulthandler.enable(file=sys.stderr, all_threads=False)
    except Exception:
        pass

    def emit(ev: dict) -> None:
        try:
            proto.write(json.dumps(ev, default=str, allow_nan=False) + "\n")
        except ValueError:  # NaN / inf slipped through
            proto.write(json.dumps(json.loads(json.dumps(ev, default=str)), default=str) + "\n")
        proto.flush()

    from ktui.repro.harness import run_request

    if os.environ.get("KTUI_WORKER_PRELOAD") == "torch":
        # a standby worker (ktui verify): import torch while the previous kernel still runs,
        # before any trace code arrives; the device is touched only once a request comes
        try:
            import torch  # noqa: F401
        except ImportError:
            pass  # reported by the request's startup stage, like any worker without torch
    nice = os.environ.get("KTUI_WORKER_NICE", "")
    if nice.isdigit():  # a build worker (ktui verify): compilers yield the CPU to timing workers
        try:
            os.nice(int(nice))
        except OSError:
            pass  # not permitted here: builds just run at normal priority
    emit({"event": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})

    code = 0
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError as exc:
            emit({"event": "result", "status": "failed",
                  "failure": {"stage": "startup", "kind": "worker_error", "message": f"bad request: {exc}",
                              "trial": None, "fatal": True}})
            code = 2
            break
        work_dir = req.get("work_dir") or os.getcwd()
        result = run_request(req, emit=emit, work_dir=work_dir)
        if req.get("request_id") is not None:
            result["request_id"] = req["request_id"]
        emit({"event": "result", **result})
        if not req.get("keep_alive") or result.get("status") != "completed":
            break
    try:
        proto.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
