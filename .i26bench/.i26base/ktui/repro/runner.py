"""Run the judge in its own process and turn whatever happens to it into words.

Never imports torch (the TUI and the CLI stay torch-free). One request = one judge process
(``python -m ktui.engine.judge``, ktui's own code), which starts a fresh sandboxed reference
worker and a fresh sandboxed candidate worker for that kernel (:mod:`ktui.engine`): no
process ever runs two kernels' code. The judge dies with this process (PR_SET_PDEATHSIG) and
its workers with it; :func:`install_signal_handlers` makes SIGTERM / SIGHUP end every judge,
worker and temporary directory before ktui exits.

- :func:`run_request`: one request, one judge (the CLI and the app).
- :class:`WarmWorker`: the app's handle (kept for its API: it no longer keeps any process warm).

Both take ``on_progress`` (called from the calling thread with a :class:`Progress`) and
``cancel`` (a ``threading.Event``; set it from any thread to kill the judge and its workers).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ktui.engine.defaults import COMPILE_STAGES, COMPILE_TIMEOUT_S, STAGE_TIMEOUT_S, machine_scale
from ktui.engine.errors import describe_position
from ktui.engine.sandbox import allowed_env, descendants, set_pdeathsig

STAGE_WEIGHTS = {"startup": 4, "build": 30, "reference": 3, "correctness": 15, "timing": 30, "memory": 4,
                 "launches": 6, "checks": 8}
MAX_LINE = 64 << 20  # one event line from the judge
SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault", "SIGBUS": "bus error", "SIGFPE": "arithmetic error",
    "SIGILL": "illegal instruction", "SIGABRT": "aborted", "SIGKILL": "killed",
    "SIGTERM": "terminated", "SIGTRAP": "trap",
}


def event_of(raw: bytes) -> dict[str, Any] | None:
    """One JSON event line from a worker (judge or profiled target), or None for anything that
    is not a JSON object (a worker's stray output is skipped, never trusted)."""
    try:
        ev = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    return ev if isinstance(ev, dict) else None


@dataclass
class Progress:
    """One step of a running reproduction, for a progress bar."""

    stage: str
    state: str  # "start" | "done" | "failed" | "trial" | "ready" | "result"
    trial: int | None = None
    of: int | None = None
    what: str | None = None
    fraction: float = 0.0  # overall 0..1
    elapsed: float = 0.0  # seconds since the request was sent
    message: str = ""

    @property
    def label(self) -> str:
        return self.message


def judge_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The judge's environment: an allow-list (it is ktui code, but it passes the environment
    on to nothing: workers get their own allow-list), with ktui importable."""
    env = {k: v for k, v in os.environ.items()
           if allowed_env(k) or k.startswith(("KTUI_", "XDG_")) or k in ("HOME", "USER", "LOGNAME", "TMPDIR")}
    pkg_root = str(Path(__file__).resolve().parents[2])
    pp = os.environ.get("PYTHONPATH", "")
    env["PYTHONPATH"] = pkg_root + (os.pathsep + pp if pp else "")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


scrubbed_env = judge_env  # the old name


def _failure_result(kind: str, message: str, stage: str | None, trial: int | None, **extra: Any) -> dict:
    return {"status": "cancelled" if kind == "cancelled" else "failed",
            "failure": {"stage": stage or "startup", "kind": kind, "message": message, "trial": trial,
                        "fatal": True},
            "stages": {}, "checks": [], "notes": [], **extra}


# ---- every live judge, for the signal handlers -----------------------------------------------------

_LIVE: set[_Judge] = set()
_LIVE_LOCK = threading.Lock()
_HANDLERS_INSTALLED = False


def end_all() -> None:
    """Kill every judge (and so every worker) this process started; remove their temp dirs."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for j in live:
        j.kill()
        j.cleanup()


def install_signal_handlers() -> bool:
    """SIGTERM / SIGHUP: end every judge and worker, remove their temp dirs, then die of the
    signal as before. Call from the main thread (a no-op elsewhere)."""
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in (signal.SIGTERM, signal.SIGHUP):
        prev = signal.getsignal(sig)

        def handler(signum, frame, _prev=prev):
            end_all()
            if callable(_prev) and _prev not in (signal.SIG_DFL, signal.SIG_IGN):
                _prev(signum, frame)
                return
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(sig, handler)
    _HANDLERS_INSTALLED = True
    return True


class _Judge:
    def __init__(self, python: str | None, env_extra: dict[str, str] | None):
        self.tmp_root = tempfile.mkdtemp(prefix="ktui-repro-")
        with _LIVE_LOCK:
            _LIVE.add(self)
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "ktui.engine.judge"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=self.tmp_root, env=judge_env(env_extra), start_new_session=True,
            preexec_fn=_judge_preexec)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr = bytearray()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline(MAX_LINE)
            if not line:
                break
            if not line.endswith(b"\n"):  # over the limit: drop the rest of it
                while line and not line.endswith(b"\n"):
                    line = self.proc.stdout.readline(MAX_LINE)
                continue
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        while True:
            chunk = self.proc.stderr.read1(65536)
            if not chunk:
                break
            self._stderr += chunk
            if len(self._stderr) > 16384:
                del self._stderr[:-16384]

    def stderr_tail(self) -> str:
        return bytes(self._stderr).decode("utf-8", "replace")

    def send(self, job: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(job).encode("utf-8"))
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def kill(self) -> None:
        pids = descendants(self.proc.pid) if self.proc.poll() is None else []
        for p in reversed(pids):
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def cleanup(self) -> None:
        shutil.rmtree(self.tmp_root, ignore_errors=True)
        with _LIVE_LOCK:
            _LIVE.discard(self)


def _judge_preexec() -> None:
    set_pdeathsig(signal.SIGKILL)


def run_request(request: dict, *, on_progress: Callable[[Progress], None] | None = None,
                cancel: threading.Event | None = None, compile_timeout: float = COMPILE_TIMEOUT_S,
                run_timeout: float = STAGE_TIMEOUT_S, python: str | None = None,
                env_extra: dict[str, str] | None = None) -> dict:
    """One judge for one request. Always returns a result dict; never raises for anything the
    kernel does."""
    job = {k: v for k, v in request.items() if k not in ("keep_alive", "work_dir", "request_id")}
    job["compile_timeout"] = float(compile_timeout)
    job["run_timeout"] = float(run_timeout)
    j = _Judge(python, env_extra)
    job["tmp_root"] = j.tmp_root
    t0 = time.monotonic()
    stage: str | None = "startup"
    trial: int | None = None
    of: int | None = None
    what: str | None = None
    done_weight = 0.0
    total_weight = float(sum(STAGE_WEIGHTS.values()))
    # the judge keeps the stage deadlines; this one only catches a judge that stopped talking
    slack = 120.0 * machine_scale()

    def stage_limit() -> float:
        return (compile_timeout if stage in COMPILE_STAGES else run_timeout) + slack

    last = time.monotonic()

    def report(state: str, message: str) -> None:
        if on_progress is None:
            return
        frac = done_weight
        if stage and state in ("trial", "start") and trial and of:
            frac += STAGE_WEIGHTS.get(stage, 1) * min(1.0, (trial - 1) / max(of, 1))
        try:
            on_progress(Progress(stage=stage or "startup", state=state, trial=trial, of=of, what=what,
                                 fraction=min(1.0, frac / total_weight), elapsed=time.monotonic() - t0,
                                 message=message))
        except Exception:  # noqa: BLE001 - a broken progress callback must not kill the run
            return

    try:
        j.send(job)
        while True:
            if cancel is not None and cancel.is_set():
                j.kill()
                return _failure_result("cancelled", f"cancelled {describe_position(stage, trial, what)}",
                                       stage, trial)
            if time.monotonic() - last > stage_limit():
                j.kill()
                return _failure_result("timeout", f"the judge stopped answering {describe_position(stage, trial, what)} "
                                                  "(killed)", stage, trial)
            try:
                raw = j.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if raw is None:
                rc = j.proc.wait()
                tail = j.stderr_tail()
                why = "the judge could not import ktui (PYTHONPATH?)" if "No module named 'ktui" in tail else \
                    f"the judge process ended with status {rc} {describe_position(stage, trial, what)}"
                return _failure_result("worker_error", why, stage, trial, stderr_tail=tail[-4000:])
            last = time.monotonic()
            ev = event_of(raw)
            if ev is None:
                continue
            kind = ev.get("event")
            if kind == "stage":
                st = ev.get("stage")
                if ev.get("state") == "start" and isinstance(st, str):
                    stage = st
                    trial = of = None
                    what = None
                    report("start", f"{stage}…")
                else:
                    done_weight += STAGE_WEIGHTS.get(str(st), 1)
                    secs = ev.get("seconds")
                    report(str(ev.get("state", "done")), f"{st} {ev.get('state')}"
                           + (f" in {secs:.1f} s" if isinstance(secs, (int, float)) else ""))
            elif kind == "trial":
                trial = ev.get("trial") if isinstance(ev.get("trial"), int) else None
                of = ev.get("of") if isinstance(ev.get("of"), int) else None
                what = ev.get("what") if isinstance(ev.get("what"), str) else None
                label = f"{stage}" + (f" ({what})" if what and what != "trial" else "")
                report("trial", f"{label} {trial}/{of}" if of else f"{label} {trial or ''}".rstrip())
            elif kind == "result":
                done_weight = total_weight
                stage = "result"
                report("result", "finished" if ev.get("status") == "completed" else "failed")
                res = {k: v for k, v in ev.items() if k != "event"}
                res.setdefault("seconds", round(time.monotonic() - t0, 3))
                res["wall_seconds"] = round(time.monotonic() - t0, 3)
                return res
    finally:
        j.kill()
        j.cleanup()


@dataclass
class WarmWorker:
    """The app's repro handle. Every request gets a fresh judge and fresh sandboxed workers
    (a warm process would carry one kernel's patches into the next kernel's run), so this only
    counts requests and serializes them. Not thread-safe beyond that lock."""

    python: str | None = None
    env_extra: dict[str, str] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    requests: int = 0

    @property
    def alive(self) -> bool:
        return False

    def run(self, request: dict, *, on_progress: Callable[[Progress], None] | None = None,
            cancel: threading.Event | None = None, compile_timeout: float = COMPILE_TIMEOUT_S,
            run_timeout: float = STAGE_TIMEOUT_S) -> dict:
        with self._lock:
            self.requests += 1
            res = run_request(request, on_progress=on_progress, cancel=cancel, compile_timeout=compile_timeout,
                              run_timeout=run_timeout, python=self.python, env_extra=self.env_extra)
            res["warm"] = False
            return res

    def close(self) -> None:
        end_all()

    def __enter__(self) -> WarmWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
