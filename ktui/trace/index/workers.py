"""Skimming in parallel: helper processes, each fed trace files on stdin and answering with one
summary a line on stdout (JSON), so that a cold scan uses the cores there are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
