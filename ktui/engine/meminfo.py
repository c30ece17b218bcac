"""The host's memory as /proc/meminfo tells it (split out of sandbox.py: its 600-line limit): the
worker's default memory limit, available and total memory, shared memory. No torch."""

from __future__ import annotations

from .defaults import MEMORY_LIMIT_BYTES


def _meminfo(*keys):
    """{key: bytes} for the /proc/meminfo lines named (those it has); {} when it cannot be read."""
    got = {}
    try:
        with open("/proc/meminfo") as fh:
            for ln in fh:
                k, _, v = ln.partition(":")
                if k in keys:
                    got[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return got


def default_memory_limit():
    """ktui's default worker memory limit, capped at half the host's memory."""
    total = _meminfo("MemTotal").get("MemTotal")
    return min(MEMORY_LIMIT_BYTES, total // 2) if total else MEMORY_LIMIT_BYTES


def host_memory():
    """(MemAvailable, MemTotal) of this machine in bytes, (None, None) when unknown."""
    got = _meminfo("MemAvailable", "MemTotal")
    return got.get("MemAvailable"), got.get("MemTotal")


def host_shmem():
    """Bytes of shared memory on this machine (/proc/meminfo Shmem: every tmpfs file, memfd, shared
    anonymous mapping and SysV segment of every program), None when unknown."""
    return _meminfo("Shmem").get("Shmem")
