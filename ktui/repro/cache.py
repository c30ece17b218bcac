"""Where reproduction results and kernel builds live (never next to or inside a trace).

Root: ``$KTUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/ktui/repro``, else ``~/.cache/ktui/repro``::

    <root>/build/<build key>/<extension>_k<key>/     load_inline builds (key: code sha1 + torch +
                                                     CUDA + arch, computed in the worker)
    <root>/results/<kernel sha1>/<result key>.json   one file per reproduction

A result key covers: kernel sha1, reference sha1, requested device, timing method, trials,
correctness trials, harness version and this machine's environment fingerprint (torch version,
GPUs and driver, Python). Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from ktui.repro.harness import HARNESS_VERSION, default_cache_root


def cache_root() -> Path:
    return Path(default_cache_root())


def build_root() -> Path:
    return cache_root() / "build"


def results_dir() -> Path:
    return cache_root() / "results"


@lru_cache(maxsize=1)
def env_fingerprint() -> dict[str, Any]:
    """What makes a result machine-specific, found without importing torch."""
    fp: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    try:
        from importlib.metadata import version

        fp["torch"] = version("torch")
    except Exception:
        fp["torch"] = None
    gpus: list[str] = []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            gpus = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    except (OSError, subprocess.SubprocessError):
        pass
    if not gpus:
        base = Path("/proc/driver/nvidia/gpus")
        try:
            for info in sorted(base.glob("*/information")):
                for ln in info.read_text(errors="replace").splitlines():
                    if ln.lower().startswith("model:"):
                        gpus.append(ln.split(":", 1)[1].strip())
        except OSError:
            pass
    fp["gpus"] = gpus
    fp["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return fp


def result_key(*, kernel_sha1: str, reference_sha1: str | None, device: str | None, method: str,
               trials: int, correctness_trials: int = 5, env: dict[str, Any] | None = None) -> str:
    payload = {
        "kernel": kernel_sha1, "reference": reference_sha1, "device": device or "auto", "method": method,
        "trials": int(trials), "correctness_trials": int(correctness_trials), "harness": HARNESS_VERSION,
        "env": env if env is not None else env_fingerprint(),
    }
    return hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _path(kernel_sha1: str, key: str) -> Path:
    return results_dir() / kernel_sha1 / f"{key}.json"


def load(kernel_sha1: str, key: str) -> dict[str, Any] | None:
    p = _path(kernel_sha1, key)
    try:
        with open(p, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("result") else None


def store(entry: dict[str, Any]) -> Path | None:
    """Write one cache entry atomically ({kernel_sha1, key, request, result, ...})."""
    p = _path(entry["kernel_sha1"], entry["key"])
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        entry = dict(entry)
        entry.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        entry.setdefault("created_ts", time.time())
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=str(p.parent))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(entry, fh, default=str)
        os.replace(tmp, p)
        return p
    except OSError as exc:
        print(f"ktui: could not write the repro cache ({exc})", file=sys.stderr)
        return None


def entries_for(kernel_sha1: str) -> list[dict[str, Any]]:
    """Every cached reproduction of one kernel (any settings), newest first."""
    d = results_dir() / kernel_sha1
    out = []
    try:
        files = list(d.glob("*.json"))
    except OSError:
        return []
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("result"):
            out.append(data)
    out.sort(key=lambda e: e.get("created_ts") or 0, reverse=True)
    return out


CACHEABLE_FAILURES = {"compile_error", "import_error", "no_model", "runtime_error", "cuda_error", "oom", "exit",
                      "crash"}


def cacheable(result: dict[str, Any]) -> bool:
    """Completed runs and failures caused by the kernel itself; not timeouts (a longer timeout may
    pass), cancels, missing references or a broken environment."""
    if result.get("status") == "completed":
        return True
    f = result.get("failure") or {}
    return result.get("status") == "failed" and f.get("kind") in CACHEABLE_FAILURES
