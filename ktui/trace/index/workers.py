"""Skimming in parallel: helper processes, each fed trace files and answering with one summary
each, so that a cold scan uses the cores there are.

Two kinds, one interface (``give``, ``read``, ``fileno``, ``close``, ``alive``, ``outstanding``):

- :class:`ForkHelper` (the default where it is safe: a POSIX process with one thread, as ``ktui
  runs``, ``validate`` and ``report`` are): a copy of the scanning process made by ``fork()``, so it
  starts skimming at once with every module already imported (a new interpreter spent 0.3-0.5 s
  of CPU on its imports before its first file); tasks and rows go through two pipes as
  length-prefixed ``marshal`` frames (a row as the tuple of its fields: no JSON, no per-field
  checks of data that never left ktui).
- :class:`Helper`: a new interpreter fed on stdin, one JSON line each way; used where a fork is
  not safe (the app scans in a thread; a platform without ``fork``).
"""

from __future__ import annotations

import json
import marshal
import os
import signal
import struct
import subprocess
import sys
import threading
from typing import IO, cast

from ktui import settings
from ktui.trace.index.skim import summarize
from ktui.trace.index.summary import RunSummary, TraceFile
from ktui.trace.notes import JSONError, loads


def default_jobs() -> int:
    """Helper processes for a cold scan: ``$KTUI_JOBS``, else one less than the CPUs (at most 7).

    The scanning process itself skims too, so 1 helper on a 2-core machine means 2 skimmers.
    """
    jobs = settings.current().jobs
    if jobs is not None:
        return jobs
    return max(0, min(7, (os.cpu_count() or 1) - 1))


def worker_main() -> None:  # pragma: no cover - runs in a helper process (tested through SweepIndex)
    """Helper process: a TraceFile per stdin line in, a summary per stdout line out (JSON)."""
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        task = None
        try:
            task = loads(raw)
            tf = TraceFile(task["path"], task["real"], task["size"], task["mtime_ns"], False, task["found"])
            body = {"i": task["i"], "s": summarize(tf).to_dict()}
        except Exception as exc:  # noqa: BLE001 - report, never die on one file
            body = {"i": task.get("i") if isinstance(task, dict) else None, "error": repr(exc)}
        out.write(_dumps(body) + b"\n")
        out.flush()


def _dumps(body: dict) -> bytes:
    try:
        import orjson

        return orjson.dumps(body)
    except (ImportError, TypeError):  # numbers orjson cannot hold (ints over 64 bits): the json module can
        return json.dumps(body).encode()


class Helper:
    """One helper process and the tasks it has been given."""

    MAX_OUTSTANDING = 16

    def fileno(self) -> int:
        """What the scan waits on (``selectors``): the helper's answers."""
        return cast(IO[bytes], self.proc.stdout).fileno()

    def __init__(self) -> None:
        pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        env = dict(os.environ)
        env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from ktui.trace.index.workers import worker_main; worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.outstanding: dict[int, TraceFile] = {}
        self.buf = b""
        self.alive = True

    def give(self, i: int, tf: TraceFile) -> bool:
        task = {"i": i, "path": tf.path, "real": tf.real, "size": tf.size, "mtime_ns": tf.mtime_ns,
                "found": tf.found}
        try:
            stdin = cast(IO[bytes], self.proc.stdin)  # a PIPE
            stdin.write(json.dumps(task).encode() + b"\n")
            stdin.flush()
        except (OSError, ValueError):
            self.alive = False
            return False
        self.outstanding[i] = tf
        return True

    def read(self) -> list[tuple[int, RunSummary | None]]:
        """Results available now (call when select() says the pipe is readable)."""
        try:
            chunk = os.read(cast(IO[bytes], self.proc.stdout).fileno(), 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            self.alive = False
            return []
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        out = []
        for ln in lines:
            try:
                body = loads(ln)
                i = body["i"]
                s = RunSummary.from_dict(body["s"]) if "s" in body else None
            except KeyError:
                continue
            except JSONError:  # TypeError among them
                continue
            if i in self.outstanding:
                del self.outstanding[i]
                out.append((i, s))
        return out

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdout,):
            if f:
                f.close()


# ---- helpers made by fork() ---------------------------------------------------------------------------
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


def _fork_main(task_fd: int, out_fd: int) -> None:  # pragma: no cover - runs in the forked helper
    """The forked helper's loop: a task frame in, a row frame out, until the task pipe closes."""
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


class ForkHelper:
    """One helper made by ``fork()`` (see the module's docstring) and the tasks it has been given.
    ``close_in_child``: descriptors of the helpers made before it, which it must not keep open
    (a helper holding another's task pipe would keep that one from ever seeing its end)."""

    MAX_OUTSTANDING = 16

    def __init__(self, close_in_child: list[int] | None = None) -> None:
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
                _fork_main(task_r, out_w)
            except BaseException:  # noqa: BLE001 - the helper ends here whatever happens
                code = 1
            finally:
                os._exit(code)  # never the parent's exit handlers, buffers or finally blocks
        os.close(task_r)
        os.close(out_w)
        self.pid = pid
        self.task_fd, self.out_fd = task_w, out_r
        self.outstanding: dict[int, TraceFile] = {}
        self.buf = bytearray()
        self.alive = True

    def fileno(self) -> int:
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
        for fd in (self.task_fd, self.out_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
