"""Finding Nsight Compute and building its command lines.

``ncu`` is looked for in ``$KTUI_NCU`` (an explicit path), then on ``PATH``, then under the
CUDA toolkit (``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda*/bin``) and the standalone
Nsight Compute installs (``/opt/nvidia/nsight-compute/*``), newest version first.

The profile command wraps the repro worker::

    ncu --target-processes application-only --profile-from-start off
        --clock-control none --cache-control all --replay-mode kernel
        --launch-count 64 --metrics <the explicit list> --export <dir>/profile --force-overwrite
        --log-file <dir>/ncu.log  <python -m ktui.engine.profile_target>

- ``--profile-from-start off``: only launches between cudaProfilerStart and cudaProfilerStop
  are profiled; the worker opens that range around ONE forward, after its warm-up;
- ``--clock-control none`` by default (the GPU keeps its boost clocks, as in timing; ``base``
  locks them to base clocks: the result says which);
- ``--cache-control all``: caches flushed before every replay pass, as the timing's L2 flush;
- ``--launch-count``: a forward that launches thousands of kernels cannot keep ncu replaying.

The report is then read back with ``ncu --import <dir>/profile.ncu-rep --csv --page raw``.
ncu's own messages (pass counts, errors) go to the log file, never into the worker's protocol.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from ktui import settings
from ktui.repro.profile.metrics import NCU_METRICS

CLOCK_CONTROLS = ("none", "base")
MAX_LAUNCHES = 64
NOT_FOUND = ("Nsight Compute (ncu) not found: not on PATH, not under $CUDA_HOME, /usr/local/cuda*/bin or "
             "/opt/nvidia/nsight-compute (install it, or set KTUI_NCU=/path/to/ncu)")
PERMISSION = ("ncu cannot read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root, or "
              "load the driver with NVreg_RestrictProfilingToAdminUsers=0")


def _version_key(path: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", path)
    return tuple(int(n) for n in nums[-4:]) if nums else (0,)


def candidates() -> list[str]:
    """Every place ncu may be, in the order it is looked for."""
    out: list[str] = []
    env = settings.current().ncu
    if env:
        out.append(env)
    w = shutil.which("ncu")
    if w:
        out.append(w)
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        root = os.environ.get(var)
        if root:
            out.append(os.path.join(root, "bin", "ncu"))
    out.append("/usr/local/cuda/bin/ncu")
    out.extend(sorted(glob.glob("/usr/local/cuda-*/bin/ncu"), key=_version_key, reverse=True))
    out.extend(sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), key=_version_key, reverse=True))
    seen: list[str] = []
    for c in out:
        if c not in seen:
            seen.append(c)
    return seen


def find_ncu() -> str | None:
    """The ncu executable to use, or None."""
    for c in candidates():
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def ncu_version(ncu: str, timeout: float = 30.0) -> str | None:
    """'2025.3.1.0' from ``ncu --version``, or None when it does not run."""
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\d.]+)", out.stdout or "")
    return m.group(1) if m else ((out.stdout or "").strip().splitlines() or [None])[-1]


def profile_command(ncu: str, out_dir: str | Path, app: list[str], *, clock_control: str = "none",
                    metrics: list[str] | None = None, max_launches: int = MAX_LAUNCHES) -> list[str]:
    """The argv that profiles one forward of ``app`` (the worker command)."""
    if clock_control not in CLOCK_CONTROLS:
        raise ValueError(f"clock control {clock_control!r}: one of {', '.join(CLOCK_CONTROLS)}")
    d = Path(out_dir)
    return [
        ncu, "--target-processes", "application-only", "--profile-from-start", "off",
        "--clock-control", clock_control, "--cache-control", "all", "--replay-mode", "kernel",
        "--launch-count", str(int(max_launches)),
        "--metrics", ",".join(metrics or NCU_METRICS),
        "--export", str(d / "profile"), "--force-overwrite", "--log-file", str(d / "ncu.log"),
        *app,
    ]


def import_command(ncu: str, report: str | Path) -> list[str]:
    """The argv that prints a report's raw page as CSV, in base units."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def unknown_metrics(log: str, asked: list[str]) -> list[str]:
    """The requested metrics an ncu error line names (an ncu / GPU that does not know them)."""
    errs = "\n".join(ln for ln in (log or "").splitlines() if "==ERROR==" in ln or "not found" in ln.lower()
                     or "invalid metric" in ln.lower())
    return [m for m in asked if m in errs]


DRIVER_PARAMS = "/proc/driver/nvidia/params"
NOT_CONFIRMED = ("ncu's log names ERR_NVGPUCTRPERM (no permission for the GPU's counters), but {why}: the profiled "
                 "process can write that log, so the words are not taken as ncu's")


def counters_admin_only(params: str | os.PathLike[str] = DRIVER_PARAMS) -> bool | None:
    """The judge's own reading of the driver: True where only administrators may read the GPU's
    performance counters (``RmProfilingAdminOnly: 1``: the sandboxed profiler, with every capability
    dropped, then gets ERR_NVGPUCTRPERM), False where every user may, None where it cannot be read."""
    try:
        with open(params, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 16)
    except OSError:
        return None
    m = re.search(r"^\s*RmProfilingAdminOnly\s*:\s*(\d+)", text, re.M)
    return None if m is None else m.group(1) != "0"


def explain_log(log: str, *, trace_code_ran: bool = False, admin_only: bool | None = None) -> str | None:
    """One line for a known ncu failure in its log, or None.

    The log is a file in the profiled process's own temporary folder: once trace code has run
    (``trace_code_ran``: the judge saw the worker start its build, reference or check stage) the
    profiled process could have written any of it. ERR_NVGPUCTRPERM is then believed only where the
    judge's own reading of the driver (``admin_only``, from :func:`counters_admin_only`) says the
    counters are for administrators; otherwise the answer says the words were not confirmed. An
    ``==ERROR==`` line written after trace code ran is quoted as the log's, not as ncu's."""
    text = log or ""
    if "ERR_NVGPUCTRPERM" in text or "permission to access NVIDIA GPU Performance Counters" in text:
        if not trace_code_ran or admin_only:
            return PERMISSION
        why = ("this driver lets every user read them (RmProfilingAdminOnly: 0)" if admin_only is False
               else f"the judge could not read the driver's setting ({DRIVER_PARAMS})")
        return NOT_CONFIRMED.format(why=why)
    for ln in text.splitlines():
        if "==ERROR==" in ln:
            line = ln.split("==ERROR==", 1)[1].strip()[:300]
            return ("ncu's log (written while trace code ran, not confirmed): " if trace_code_ran else "ncu: ") + line
    return None
