"""Watching the process tree of a ktui command in tests: wait until its candidate worker is
inside a kernel's endless loop, then check that nothing it started outlived it.

The workers run in their own PID namespace, but from this (the host's) namespace they are
ordinary descendants of the ktui process, under their host PIDs."""

from __future__ import annotations

import time
from pathlib import Path

from ktui.engine.sandbox import descendants


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def wait_for_hanging_candidate(root: int, timeout: float = 120.0, cpu_ticks: int = 150) -> set[int]:
    """Every process seen below ``root`` until a candidate worker has used more than
    ``cpu_ticks`` clock ticks of CPU (inside the kernel by then); raises if none does."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        for pid in descendants(root):
            seen.add(pid)
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                stat = _stat(pid)
            except OSError:
                continue
            if b"--role\x00candidate" in cmd and b"unshare" not in cmd and int(stat[11]) > cpu_ticks:
                seen.update(descendants(root))
                return seen - {root}
    raise AssertionError(f"no candidate worker got busy within {timeout:g} s (seen: {sorted(seen)})")


def survivors(pids: set[int], settle: float = 5.0) -> list[int]:
    """The processes of ``pids`` still running (not zombies) once ``settle`` seconds have passed
    without all of them gone (a killed tree takes a moment to be reaped)."""
    deadline = time.monotonic() + settle
    while True:
        alive = []
        for pid in pids:
            try:
                if _stat(pid)[0] != "Z":
                    alive.append(pid)
            except OSError:
                continue
        if not alive or time.monotonic() > deadline:
            return sorted(alive)
        time.sleep(0.25)
