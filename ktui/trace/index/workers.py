"""Skimming in parallel: helper processes, each fed trace files and answering with one summary
each, so that a cold scan uses the cores there are.

One :class:`Helper` class, started one of two ways, then the same in everything else: tasks and
rows go through two pipes as length-prefixed ``marshal`` frames (a row as the tuple of its
fields: no JSON, no per-field checks of data that never left ktui), served by :func:`_serve`.

- ``fork=True`` (the default where it is safe, :func:`fork_ok`: a POSIX process with one thread,
  as ``ktui runs``, ``validate`` and ``report`` are): a copy of the scanning process made by
  ``fork()``, so it starts skimming at once with every module already imported (a new
  interpreter spent 0.3-0.5 s of CPU on its imports before its first file);
- ``fork=False``: a new interpreter (:func:`worker_main`) on the two ends of its stdin and stdout;
  used where a fork is not safe (the app scans in a thread; a platform without ``fork``).
"""

from __future__ import annotations

import marshal
import os
import signal
import struct
import subprocess
import sys
import threading

from ktui import settings
from ktui.trace.index.skim import summarize
from ktui.trace.index.summary import RunSummary, TraceFile


def default_jobs() -> int:
    """Helper processes for a cold scan: ``$KTUI_JOBS``, else one less than the CPUs (at most 7).

    The scanning process itself skims too, so 1 helper on a 2-core machine means 2 skimmers.
    """
    jobs = settings.current().jobs
    if jobs is not None:
        return jobs
    return max(0, min(7, (os.cpu_count() or 1) - 1))


_LEN = struct.Struct("<I")


def fork_ok() -> bool:
    """Whether this process may fork its helpers: POSIX, and no other thread alive (a thread's
    locks would be copied held; the app scans in a worker thread and keeps :class:`Helper`)."""
    return hasattr(os, "fork") and sys.platform != "darwin" and threading.active_count() == 1


def _frames(buf: bytearray) -> list[bytes]:
    """The whole frames at the front of ``buf`` (taken off it)."""
    out = []
    pos, n = 0, len(buf)
    while n - pos >= 4:
        (size,) = _LEN.unpack_from(buf, pos)
        if n - pos - 4 < size:
            break
        out.append(bytes(buf[pos + 4:pos + 4 + size]))
        pos += 4 + size
    del buf[:pos]
    return out


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def worker_main() -> None:  # pragma: no cover - runs in a spawned helper (tested through SweepIndex)
    """A spawned helper (``Helper(fork=False)``): :func:`_serve` on its stdin and stdout."""
    _serve(sys.stdin.fileno(), sys.stdout.fileno())


def _serve(task_fd: int, out_fd: int) -> None:  # pragma: no cover - runs in a helper
    """A helper's loop: a task frame in, a row frame out, until the task pipe closes."""
    buf = bytearray()
    while True:
        chunk = os.read(task_fd, 1 << 16)
        if not chunk:
            return
        buf += chunk
        for frame in _frames(buf):
            i = -1
            try:
                i, path, real, size, mtime_ns, found = marshal.loads(frame)
                row = summarize(TraceFile(path, real, size, mtime_ns, False, found)).to_tuple()
                body = marshal.dumps((i, row))
            except Exception:  # noqa: BLE001 - never die on one file: the scan skims it itself
                body = marshal.dumps((i, None))
            _write_all(out_fd, _LEN.pack(len(body)) + body)


def _fork(close_in_child: list[int] | None) -> tuple[int, int, int]:
    """A copy of this process serving tasks: (its pid, the task pipe's end, the rows pipe's end).
    ``close_in_child``: descriptors of the helpers made before it, which it must not keep open
    (a helper holding another's task pipe would keep that one from ever seeing its end)."""
    # the modules a skim imports on first use, imported once here so that the copy has them
    from ktui.trace import importers, results  # noqa: F401
    from ktui.trace.findings import source_findings  # noqa: F401

    # stdout and stderr are not flushed first: the copy ends with os._exit and never writes
    # what they hold (a flush could fail on a pipe closed under ``| head`` and stop the fork)
    task_r, task_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (task_r, task_w, out_r, out_w):
            os.close(fd)
        raise
    if pid == 0:  # pragma: no cover - the helper
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            for fd in (task_w, out_r, *(close_in_child or ())):
                try:
                    os.close(fd)
                except OSError:
                    pass
            _serve(task_r, out_w)
        except BaseException:  # noqa: BLE001 - the helper ends here whatever happens
            code = 1
        finally:
            os._exit(code)  # never the parent's exit handlers, buffers or finally blocks
    os.close(task_r)
    os.close(out_w)
    return pid, task_w, out_r


def _spawn() -> tuple[subprocess.Popen[bytes], int, int]:
    """A new interpreter serving tasks (:func:`worker_main`) on two pipes made here, as a forked
    helper's are: (its Popen, the task pipe's end, the rows pipe's end)."""
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    task_r, task_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from ktui.trace.index.workers import worker_main; worker_main()"],
            stdin=task_r, stdout=out_w, stderr=subprocess.DEVNULL, env=env)
    except BaseException:
        for fd in (task_w, out_r):
            os.close(fd)
        raise
    finally:
        os.close(task_r)
        os.close(out_w)
    return proc, task_w, out_r


class Helper:
    """One helper process (see the module's docstring: ``fork`` says how it starts) and the tasks
    it has been given. ``close_in_child``: what :func:`_fork` says (a forked helper only)."""

    MAX_OUTSTANDING = 16

    def __init__(self, fork: bool = False, close_in_child: list[int] | None = None) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        if fork:
            self.pid, self.task_fd, self.out_fd = _fork(close_in_child)
        else:
            self.proc, self.task_fd, self.out_fd = _spawn()
            self.pid = self.proc.pid
        self.outstanding: dict[int, TraceFile] = {}
        self.buf = bytearray()
        self.alive = True

    def fileno(self) -> int:
        """What the scan waits on (``selectors``): the helper's answers."""
        return self.out_fd

    def fds(self) -> list[int]:
        return [self.task_fd, self.out_fd]

    def give(self, i: int, tf: TraceFile) -> bool:
        body = marshal.dumps((i, tf.path, tf.real, tf.size, tf.mtime_ns, tf.found))
        try:
            _write_all(self.task_fd, _LEN.pack(len(body)) + body)
        except OSError:
            self.alive = False
            return False
        self.outstanding[i] = tf
        return True

    def read(self) -> list[tuple[int, RunSummary | None]]:
        """Results available now (call when select() says the pipe is readable)."""
        try:
            chunk = os.read(self.out_fd, 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            self.alive = False
            return []
        self.buf += chunk
        out = []
        for frame in _frames(self.buf):
            try:
                i, row = marshal.loads(frame)
                s = RunSummary.from_tuple(row) if row is not None else None
            except (ValueError, EOFError, TypeError):
                continue
            if i in self.outstanding:
                del self.outstanding[i]
                out.append((i, s))
        return out

    def close(self) -> None:
        """Its pipes closed, the process killed and reaped."""
        for fd in (self.task_fd, self.out_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc is not None:  # reaped through its Popen, which would otherwise say it still runs
            self.proc.kill()
            self.proc.wait()
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
