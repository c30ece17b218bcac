"""ktui's settings: every ``KTUI_*`` variable and every path ktui writes to, read in one place.

:func:`current` returns a frozen :class:`Settings`, read from the environment once and read again
only when one of the variables below changes (a test or a command that sets one). Nothing else in
ktui reads a ``KTUI_*`` variable, except the engine (``ktui/engine``, the judge side that runs in
sandboxed processes): it may import nothing else of ktui, so it reads its own few variables itself
(:data:`ENGINE_VARIABLES`), and a test checks that its cache root is the one given here.

Paths:

* ``cache_dir``: ``$KTUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/ktui``, else ``~/.cache/ktui``: the
  sweep index (``runs-index-*.json``) and the app's log (``ktui.log``).
* ``repro_cache_dir``: ``$KTUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/ktui/repro``, else
  ``~/.cache/ktui/repro``: re-execution results, builds, GPU locks, verify timeouts.
  (With ``$KTUI_CACHE_DIR`` set both are that directory, as they have always been.)
* ``data_dir``: ``$XDG_DATA_HOME/ktui``, else ``~/.local/share/ktui``: data the user wrote
  (``labels_file``, ``labels.jsonl``), kept apart from the cache, which may be deleted.

This module imports nothing of ktui (an import contract), so every layer may read it.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# name -> what it does; every KTUI_* variable ktui reads (a test greps the source for others)
VARIABLES: dict[str, str] = {
    "KTUI_CACHE_DIR": "the cache directory (sweep index, log, re-execution results and builds)",
    "KTUI_BUILD_DIR": "the kernel build cache (default: build/ in the re-execution cache; tests share one)",
    "KTUI_FORMAT": "read every trace with this importer (a --format name) instead of detecting it",
    "KTUI_JOBS": "helper processes for a cold scan of a sweep (default: CPUs - 1, at most 7)",
    "KTUI_NCU": "the ncu executable for ktui profile (looked for before PATH and the CUDA folders)",
    "KTUI_PROFILE_KEEP": "ktui profile keeps each side's raw ncu page and log in this directory",
    "KTUI_MAX_LINE_MB": "a trace line longer than this many MiB is not read (default 64; may be a fraction)",
    "KTUI_LAZY_MIN": "tool arguments and results of trace lines at least this many bytes long are read back from "
                     "the file when shown, not kept in memory (default 0: every line)",
    "KTUI_WORKER_MEMORY_GB": "host memory (GiB; may be a fraction) each sandboxed worker of ktui repro / verify may "
                             "use (default 16, at most half the host's; a value set here is capped at three "
                             "quarters of the host's memory)",
    "KTUI_VERIFY_SHARE_REFERENCE": "0: ktui verify gives every kernel its own input seed and computes the "
                                   "reference's outputs for each (default 1: once per problem, shared; benchmarks)",
    "KTUI_ROW_SKIM": "0: the sweep index reads every file with the full reader, not the row skim (benchmarks)",
}
# read by the engine in its own (sandboxed) processes, set by ktui or by tests
ENGINE_VARIABLES: dict[str, str] = {
    "KTUI_SANDBOX_SPEC": "internal: the sandbox a worker applies to itself (set by the parent)",
    "KTUI_SANDBOX_HOST_DEV": "1: workers keep the host's /dev (a weaker fallback)",
    "KTUI_TEST_SANDBOX_LEVEL": "none: no namespaces (tests on machines without unshare)",
    "KTUI_WORKER_NICE": "internal: the nice level of a build worker (set by ktui verify)",
    "KTUI_GPU_SYSFS": "minimal: GPU workers see a minimal /sys, after a once-per-machine self-test (default: the host's)",
}
_READ = ("KTUI_CACHE_DIR", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HOME", *VARIABLES)
LABELS_FILE = "labels.jsonl"
LOG_FILE = "ktui.log"


def _home_dir(env: Mapping[str, str], var: str, *fallback: str) -> Path:
    v = env.get(var)
    if v:
        return Path(v)
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(home, *fallback)


def _positive(v: str | None) -> float | None:
    """A positive finite number, else None (the default): ``inf`` or ``nan`` would not be a limit."""
    try:
        x = float((v or "").strip())
    except ValueError:
        return None
    return x if math.isfinite(x) and x > 0 else None


def _given_dir(env: Mapping[str, str], v: str) -> Path:
    if v == "~" or v.startswith("~/"):  # expanduser, with this environment's HOME
        v = (env.get("HOME") or os.path.expanduser("~")) + v[1:]
    return Path(os.path.abspath(os.path.expanduser(v)))


@dataclass(frozen=True, slots=True)
class Settings:
    cache_dir: Path
    repro_cache_dir: Path
    data_dir: Path
    format: str | None = None  # KTUI_FORMAT
    jobs: int | None = None  # KTUI_JOBS (None: decided from the CPUs)
    ncu: str | None = None  # KTUI_NCU
    profile_keep: Path | None = None  # KTUI_PROFILE_KEEP
    max_line_mb: float | None = None  # KTUI_MAX_LINE_MB (None: the reader's default)
    lazy_min: int | None = None  # KTUI_LAZY_MIN (None: ktui.trace.lazy's default)
    build_dir: Path | None = None  # KTUI_BUILD_DIR (None: repro_cache_dir / "build")
    verify_share_reference: bool = True  # KTUI_VERIFY_SHARE_REFERENCE (0: off)
    worker_memory_gb: float | None = None  # KTUI_WORKER_MEMORY_GB (None: the engine's default)
    row_skim: bool = True  # KTUI_ROW_SKIM (0: off)

    @property
    def worker_memory_bytes(self) -> int | None:
        """The worker memory limit asked for, in bytes (the engine caps it by the host's memory)."""
        return int(self.worker_memory_gb * 2**30) if self.worker_memory_gb else None

    @property
    def labels_file(self) -> Path:
        return self.data_dir / LABELS_FILE

    @property
    def log_file(self) -> Path:
        return self.cache_dir / LOG_FILE

    @property
    def index_dir(self) -> Path:
        return self.cache_dir

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        given = env.get("KTUI_CACHE_DIR") or ""
        xdg_cache = _home_dir(env, "XDG_CACHE_HOME", ".cache")
        cache = _given_dir(env, given) if given else xdg_cache / "ktui"
        repro = _given_dir(env, given) if given else xdg_cache / "ktui" / "repro"
        data = _home_dir(env, "XDG_DATA_HOME", ".local", "share") / "ktui"
        jobs_s = (env.get("KTUI_JOBS") or "").strip()
        jobs = int(jobs_s) if jobs_s.isdigit() else None  # anything else: the default (as before)
        keep = (env.get("KTUI_PROFILE_KEEP") or "").strip()
        build = (env.get("KTUI_BUILD_DIR") or "").strip()
        lazy_s = (env.get("KTUI_LAZY_MIN") or "").strip()
        return cls(cache_dir=cache, repro_cache_dir=repro, data_dir=data,
                   format=(env.get("KTUI_FORMAT") or "").strip() or None, jobs=jobs,
                   ncu=env.get("KTUI_NCU") or None, profile_keep=Path(keep) if keep else None,
                   max_line_mb=_positive(env.get("KTUI_MAX_LINE_MB")),
                   lazy_min=int(lazy_s) if lazy_s.isdigit() else None,
                   build_dir=_given_dir(env, build) if build else None,
                   verify_share_reference=(env.get("KTUI_VERIFY_SHARE_REFERENCE") or "1").strip() != "0",
                   worker_memory_gb=_positive(env.get("KTUI_WORKER_MEMORY_GB")),
                   row_skim=(env.get("KTUI_ROW_SKIM") or "1").strip() != "0")


_lock = threading.Lock()
_cached: tuple[tuple[str | bytes | None, ...], Settings] | None = None


_READ_BYTES = tuple(os.fsencode(k) for k in _READ) if os.name == "posix" else ()


def _key() -> tuple[str | bytes | None, ...]:
    """What the settings depend on, cheaply: the index reads the settings a few times per trace
    file, and ``os.environ.get`` of 18 names cost 3 % of a cold scan's CPU. On POSIX the
    environment's own bytes mapping is read directly (``os.environ`` keeps it current)."""
    data = getattr(os.environ, "_data", None)
    if _READ_BYTES and isinstance(data, dict):
        return tuple(map(data.get, _READ_BYTES))
    return tuple(os.environ.get(k) for k in _READ)


def current() -> Settings:
    """The settings of this process's environment (read once; again only if a variable changed)."""
    global _cached
    key = _key()
    got = _cached
    if got is not None and got[0] == key:
        return got[1]
    with _lock:
        s = Settings.from_env(os.environ)
        _cached = (key, s)
        return s
