"""Run the repro worker in its own process and turn whatever happens to it into words.

Never imports torch. The worker runs in a fresh temporary directory, in its own process group
(so the compiler and anything the kernel spawns die with it), with secrets (``*_KEY``,
``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) removed from its environment. Each stage has a
deadline (compile stages: ``compile_timeout``; the others: ``run_timeout``); when it passes, or
when the caller cancels, the whole process group is killed.

Two ways to run:

- :func:`run_request`: one worker process per snapshot (the CLI).
- :class:`WarmWorker`: one process kept between requests (the TUI), replaced after any failure.

Both take ``on_progress`` (called from the calling thread with a :class:`Progress`) and
``cancel`` (a ``threading.Event``; set it from any thread to kill the worker).
"""

from __future__ import annotations

import json
import os
import queue
import re
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

STAGE_WEIGHTS = {"startup": 4, "build": 30, "reference": 3, "correctness": 15, "timing": 30, "memory": 4,
                 "launches": 6, "checks": 8}
COMPILE_STAGES = ("startup", "build")
SECRET_RE = re.compile(r"(_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_CREDENTIALS?)$|^(KEY|TOKEN|SECRET|PASSWORD)$",
                       re.IGNORECASE)
SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault", "SIGBUS": "bus error", "SIGFPE": "arithmetic error",
    "SIGILL": "illegal instruction", "SIGABRT": "aborted", "SIGKILL": "killed",
    "SIGTERM": "terminated", "SIGTRAP": "trap",
}


@dataclass
class Progress:
    """One step of a running reproduction, for a progress bar."""

    stage: str
    state: str  # "start" | "done" | "failed" | "trial" | "ready"
    trial: int | None = None
    of: int | None = None
    what: str | None = None
    fraction: float = 0.0  # overall 0..1
    elapsed: float = 0.0  # seconds since the request was sent
    message: str = ""

    @property
    def label(self) -> str:
        return self.message


def scrubbed_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """os.environ without secrets, with ktui importable from anywhere."""
    env = {k: v for k, v in os.environ.items() if not SECRET_RE.search(k)}
    pkg_root = str(Path(__file__).resolve().parents[2])
    pp = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = pkg_root + (os.pathsep + pp if pp else "")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONSTARTUP", None)
    if extra:
        env.update(extra)
    return env


def describe_position(stage: str | None, trial: int | None, what: str | None = None) -> str:
    if not stage:
        return "before it started"
    where = stage
    if what and what not in ("trial",) and stage in ("timing", "checks", "memory", "launches"):
        where += f" ({what})"
    if what == "held-out":
        where += " held-out"
    if trial is not None and stage not in ("memory", "launches"):
        where += f" trial {trial}"
    return f"during {where}"


def signal_words(returncode: int) -> tuple[str, str]:
    """(SIGNAME, words) for a negative return code."""
    try:
        name = signal.Signals(-returncode).name
    except (ValueError, AttributeError):
        name = f"signal {-returncode}"
    return name, SIGNAL_WORDS.get(name, name)


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _failure_result(kind: str, message: str, stage: str | None, trial: int | None, **extra: Any) -> dict:
    return {"status": "cancelled" if kind == "cancelled" else "failed",
            "failure": {"stage": stage or "startup", "kind": kind, "message": message, "trial": trial,
                        "fatal": True},
            "stages": {}, "checks": [], "notes": [], **extra}


class _Session:
    """Talks to one worker process: reads its events, applies deadlines and cancel."""

    def __init__(self, python: str | None = None, env_extra: dict[str, str] | None = None,
                 keep_alive: bool = False):
        self.work_dir = Path(tempfile.mkdtemp(prefix="ktui-repro-"))
        self.stderr_path = self.work_dir / "worker.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.keep_alive = keep_alive
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "ktui.repro.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            cwd=str(self.work_dir), env=scrubbed_env(env_extra), start_new_session=True,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.ready = False
        self.dead = False
        self.build_dir: str | None = None  # the keyed build root of the request in flight

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def kill_during(self, stage: str | None) -> None:
        """Kill the worker; if it was compiling, remove the lock file torch's build left behind
        (a killed build would make the next build of this snapshot wait forever)."""
        self.kill()
        if stage == "build" and self.build_dir:
            for lock in Path(self.build_dir).glob("*/lock"):
                try:
                    lock.unlink()
                except OSError:
                    pass

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    self.proc.kill()
                except ProcessLookupError:
                    pass
        else:
            # the worker is gone; children it left in its group (ninja, a forked kernel) go too
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.dead = True

    def close(self) -> None:
        if not self.dead:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            self.kill()
        try:
            self._stderr.close()
        except OSError:
            pass
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def send(self, request: dict) -> None:
        assert self.proc.stdin is not None
        data = (json.dumps(request) + "\n").encode("utf-8")
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        if not self.keep_alive:
            self.proc.stdin.close()

    def exchange(self, request: dict, *, on_progress: Callable[[Progress], None] | None,
                 cancel: threading.Event | None, compile_timeout: float, run_timeout: float) -> dict:
        """Send one request and wait for its result (or the worker's death)."""
        t0 = time.monotonic()
        stage: str | None = "startup" if not self.ready else None
        trial: int | None = None
        what: str | None = None
        done_weight = 0.0
        total_weight = float(sum(STAGE_WEIGHTS.values()))
        deadline = t0 + (compile_timeout if stage in COMPILE_STAGES or stage is None else run_timeout)
        stage_started = t0
        try:
            self.send(request)
        except (BrokenPipeError, OSError):
            pass  # the worker died already; reported below from its exit status

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
            except Exception:
                pass  # a broken progress callback must not kill the run

        of: int | None = None
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                self.kill_during(stage)
                return _failure_result("cancelled", f"cancelled {describe_position(stage, trial, what)}",
                                       stage, trial, stderr_tail=_tail(self.stderr_path))
            if now > deadline:
                self.kill_during(stage)
                limit = compile_timeout if (stage in COMPILE_STAGES) else run_timeout
                msg = (f"timed out after {limit:g} s {describe_position(stage, trial, what)} "
                       f"(worker killed)")
                return _failure_result("timeout", msg, stage, trial, stderr_tail=_tail(self.stderr_path),
                                       seconds=round(now - t0, 3))
            try:
                raw = self.lines.get(timeout=min(0.1, max(0.01, deadline - now)))
            except queue.Empty:
                continue
            if raw is None:  # EOF: the worker died without a result
                return self._death(stage, trial, what, t0)
            try:
                ev = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            kind = ev.get("event")
            if kind == "ready":
                self.ready = True
                report("ready", "worker started")
            elif kind == "stage":
                if ev.get("state") == "start":
                    stage = ev.get("stage")
                    trial = of = None
                    what = None
                    stage_started = time.monotonic()
                    deadline = stage_started + (compile_timeout if stage in COMPILE_STAGES else run_timeout)
                    report("start", f"{stage}…")
                else:
                    done_weight += STAGE_WEIGHTS.get(ev.get("stage"), 1)
                    secs = ev.get("seconds")
                    report(ev.get("state", "done"), f"{ev.get('stage')} {ev.get('state')}"
                           + (f" in {secs:.1f} s" if isinstance(secs, (int, float)) else ""))
            elif kind == "build_dir":
                self.build_dir = ev.get("dir")
            elif kind == "trial":
                trial = ev.get("trial")
                of = ev.get("of")
                what = ev.get("what")
                label = f"{stage}" + (f" ({what})" if what and what != "trial" else "")
                report("trial", f"{label} {trial}/{of}")
            elif kind == "result":
                done_weight = total_weight
                stage = "result"
                report("result", "finished" if ev.get("status") == "completed" else "failed")
                res = {k: v for k, v in ev.items() if k != "event"}
                res.setdefault("seconds", round(time.monotonic() - t0, 3))
                res["wall_seconds"] = round(time.monotonic() - t0, 3)
                if res.get("status") != "completed":
                    res["stderr_tail"] = _tail(self.stderr_path)
                return res

    def _death(self, stage: str | None, trial: int | None, what: str | None, t0: float) -> dict:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        self.dead = True
        where = describe_position(stage, trial, what)
        who = "kernel" if stage not in (None, "startup", "reference") else "worker"
        if rc is not None and rc < 0:
            name, words = signal_words(rc)
            if name == "SIGKILL":
                msg = f"worker killed by SIGKILL {where} (out of host memory?)"
            else:
                msg = f"{who} crashed: {name} ({words}) {where}"
            kind = "crash"
        else:
            msg = f"worker exited with status {rc} {where} without a result (os._exit() or a fatal error in the {who} code)"
            kind = "exit"
        tail = _tail(self.stderr_path)
        if "ModuleNotFoundError: No module named 'ktui'" in tail:
            msg, kind = "the worker could not import ktui (PYTHONPATH?)", "worker_error"
        return _failure_result(kind, msg, stage, trial, stderr_tail=tail, returncode=rc,
                               seconds=round(time.monotonic() - t0, 3))


def run_request(request: dict, *, on_progress: Callable[[Progress], None] | None = None,
                cancel: threading.Event | None = None, compile_timeout: float = 600.0,
                run_timeout: float = 600.0, python: str | None = None,
                env_extra: dict[str, str] | None = None) -> dict:
    """One worker process for one request. Always returns a result dict; never raises for
    anything the kernel does."""
    req = dict(request)
    req["keep_alive"] = False
    sess = _Session(python=python, env_extra=env_extra)
    try:
        req.setdefault("work_dir", str(sess.work_dir))
        return sess.exchange(req, on_progress=on_progress, cancel=cancel,
                             compile_timeout=compile_timeout, run_timeout=run_timeout)
    finally:
        sess.close()


@dataclass
class WarmWorker:
    """A worker process kept alive between requests (torch imported, CUDA context up).

    A failed request (build error, crash, timeout, cancel, correctness failure...) ends that
    process; the next request starts a fresh one. Not thread-safe: one request at a time.
    """

    python: str | None = None
    env_extra: dict[str, str] | None = None
    _session: _Session | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    requests: int = 0

    @property
    def alive(self) -> bool:
        return self._session is not None and self._session.alive()

    def start(self) -> None:
        """Start the process now (optional: the first request does it)."""
        if not self.alive:
            self._replace()

    def _replace(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = _Session(python=self.python, env_extra=self.env_extra, keep_alive=True)

    def run(self, request: dict, *, on_progress: Callable[[Progress], None] | None = None,
            cancel: threading.Event | None = None, compile_timeout: float = 600.0,
            run_timeout: float = 600.0) -> dict:
        with self._lock:
            if not self.alive:
                self._replace()
            assert self._session is not None
            req = dict(request)
            req["keep_alive"] = True
            req.setdefault("work_dir", str(self._session.work_dir))
            self.requests += 1
            was_warm = self._session.ready
            res = self._session.exchange(req, on_progress=on_progress, cancel=cancel,
                                         compile_timeout=compile_timeout, run_timeout=run_timeout)
            if res.get("status") != "completed":
                self._session.close()
                self._session = None
            res["warm"] = was_warm
            return res

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None

    def __enter__(self) -> WarmWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
