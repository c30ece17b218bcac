"""The host's memory as /proc/meminfo tells it (split out of sandbox.py: its 600-line limit): the
worker's default memory limit, available and total memory, shared memory. No torch."""

from __future__ import annotations

from .defaults import MEMORY_LIMIT_BYTES


def default_memory_limit():
    try:
        with open("/proc/meminfo") as fh:
            for ln in fh:
                if ln.startswith("MemTotal:"):
                    total = int(ln.split()[1]) * 1024
                    return min(MEMORY_LIMIT_BYTES, total // 2)
    except (OSError, ValueError):
        pass
    return MEMORY_LIMIT_BYTES


def host_memory():
    """(MemAvailable, MemTotal) of this machine in bytes, (None, None) when unknown."""
    got = {}
    try:
        with open("/proc/meminfo") as fh:
            for ln in fh:
                k, _, v = ln.partition(":")
                if k in ("MemAvailable", "MemTotal"):
                    got[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return got.get("MemAvailable"), got.get("MemTotal")


def host_shmem():
    """Bytes of shared memory on this machine (/proc/meminfo Shmem: every tmpfs file, memfd, shared
    anonymous mapping and SysV segment of every program), None when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for ln in fh:
                if ln.startswith("Shmem:"):
                    return int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
