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


def explain_log(log: str) -> str | None:
    """One line for a known ncu failure in its log, or None."""
    text = log or ""
    if "ERR_NVGPUCTRPERM" in text or "permission to access NVIDIA GPU Performance Counters" in text:
        return PERMISSION
    for ln in text.splitlines():
        if "==ERROR==" in ln:
            return "ncu: " + ln.split("==ERROR==", 1)[1].strip()[:300]
    return None
