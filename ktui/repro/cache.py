"""Where reproduction results and kernel builds live (never next to or inside a trace).

Root: ``$KTUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/ktui/repro``, else ``~/.cache/ktui/repro``
(``ktui.settings``)::

    <root>/.hmac-key                                 32 random bytes (0600): the integrity key
    <root>/build/<build key>/<extension>_k<key>/     load_inline builds; one folder per kernel
                                                     (key: code sha1 + torch + Python + device + GPU)
    <root>/locks/gpu-<index>.lock                    the per-GPU timing lock
    <root>/results/<kernel sha1>/<result key>.json   one file per reproduction

Only the judge side (ktui's own code) writes here; the sandbox hides the whole root from trace
code (an empty tmpfs over it) except, during that kernel's own run, its own build folder. Every
entry carries an HMAC-SHA256 over its content with the key above: an entry that fails the
check, or that is not a :class:`~ktui.repro.results.Reproduction` (its own validation), is
ignored (the kernel is re-run).
Failures caused from outside the kernel (a SIGKILL from someone else, the host's OOM killer,
timeouts, cancels, resource limits, a missing reference) are never cached.

A result key covers: kernel sha1, reference sha1, the device (as resolved here: no device means
cuda when this machine has one, else cpu, so every command and the app share one key), timing method, trials,
correctness trials, harness version and this machine's environment fingerprint (torch version,
GPUs and driver, Python). Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from ktui import settings
from ktui.engine import HARNESS_VERSION
from ktui.repro.results import SCHEMA, Reproduction, ResultError

KEY_FILE = ".hmac-key"
ENTRY_VERSION = SCHEMA  # the shape of an entry: ktui.repro.results


def cache_root() -> Path:
    return settings.current().repro_cache_dir


def build_root() -> Path:
    """The content-addressed build cache ($KTUI_BUILD_DIR, else build/ here): only the judge
    writes there, copying a finished build in from its throwaway folder."""
    return settings.current().build_dir or cache_root() / "build"


def results_dir() -> Path:
    return cache_root() / "results"


def lock_dir() -> Path:
    return cache_root() / "locks"


@lru_cache(maxsize=1)
def env_fingerprint() -> dict[str, Any]:
    """What makes a result machine-specific, found without importing torch."""
    fp: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    try:
        from importlib.metadata import version

        fp["torch"] = version("torch")
    except Exception:  # noqa: BLE001 - no metadata: part of the fingerprint all the same
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


def key_device(device: str | None, env: dict[str, Any] | None = None) -> str:
    """The device a result is keyed by: what ``device`` means on this machine, so that ``ktui repro
    --device cpu``, the app's ``r`` (no device: cuda when there is one, else cpu), ``ktui verify`` and
    ``ktui repro --device cuda:0`` find each other's results. ``auto`` is resolved without torch:
    no NVIDIA GPU listed (nvidia-smi, /proc) or a ``+cpu`` torch build -> cpu; a GPU and another
    build -> cuda; a ROCm build without an NVIDIA GPU stays ``auto`` (its GPUs are not listed)."""
    d = (device or "auto").strip().lower()
    if d == "cuda:0":
        return "cuda"
    if d != "auto":
        return d
    env = env if env is not None else env_fingerprint()
    torch_v = str(env.get("torch") or "")
    if "+cpu" in torch_v:
        return "cpu"
    if env.get("gpus"):
        return "cuda"
    return "auto" if "+rocm" in torch_v else "cpu"


def device_matches(entry: dict[str, Any], device: str) -> bool:
    """A cached result ran where its key says (a CUDA build that could not reach its GPU ran on the
    CPU under a ``cuda`` key: not the answer to a cuda request)."""
    env = (entry.get("result") or {}).get("environment")
    ran = env.get("device") if isinstance(env, dict) else None
    if not isinstance(ran, str) or device == "auto":
        return True
    return ran.split(":", 1)[0] == device.split(":", 1)[0]


def result_key(*, kernel_sha1: str, reference_sha1: str | None, device: str | None, method: str,
               trials: int, correctness_trials: int = 5, env: dict[str, Any] | None = None) -> str:
    env = env if env is not None else env_fingerprint()
    payload = {
        "kernel": kernel_sha1, "reference": reference_sha1, "device": key_device(device, env), "method": method,
        "trials": int(trials), "correctness_trials": int(correctness_trials), "harness": HARNESS_VERSION,
        "env": env,
    }
    return hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


# ---- integrity --------------------------------------------------------------------------------

def _key() -> bytes | None:
    """The HMAC key (created on first use, 0600). None when the cache is not writable."""
    root = cache_root()
    p = root / KEY_FILE
    try:
        data = p.read_bytes()
        if len(data) >= 32:
            return data
    except OSError:
        pass
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(str(p), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        data = p.read_bytes()
    except OSError:
        return None
    return data if len(data) >= 32 else None


def _mac(key: bytes, entry: dict[str, Any]) -> str:
    body = json.dumps(entry, sort_keys=True, default=str, separators=(",", ":")).encode("utf-8")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def _read_signed(p: Path) -> dict[str, Any] | None:
    """The entry of a file this cache signed (None: missing, too big, not JSON, forged)."""
    try:
        if p.stat().st_size > 64 << 20:
            return None
        with open(p, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("v") != ENTRY_VERSION:
        return None
    entry, mac = data.get("entry"), data.get("mac")
    key = _key()
    if key is None or not isinstance(mac, str) or not isinstance(entry, dict):
        return None
    if not hmac.compare_digest(mac, _mac(key, entry)):
        return None
    return entry


def _read(p: Path, strict: bool = True) -> dict[str, Any] | None:
    entry = _read_signed(p)
    if entry is None:
        return None
    try:  # the type's own validation: what ktui reads is there, with the right types (else: re-run)
        Reproduction.from_dict(entry, strict)
    except ResultError:
        return None
    return entry


def _path(kernel_sha1: str, key: str) -> Path:
    safe = "".join(ch for ch in kernel_sha1 if ch in "0123456789abcdef")[:40] or "unknown"
    return results_dir() / safe / f"{''.join(ch for ch in key if ch.isalnum())[:40]}.json"


def load(kernel_sha1: str, key: str, device: str | None = None) -> dict[str, Any] | None:
    """The verified entry for this kernel and key, or None (missing, forged, wrong shape; or, given
    the requested ``device``, run on another kind of device than the key says)."""
    e = _read(_path(kernel_sha1, key))
    if e is None or e.get("kernel_sha1") != kernel_sha1 or e.get("key") != key:
        return None
    if device is not None and not device_matches(e, key_device(device)):
        return None
    return e


def store(entry: dict[str, Any]) -> Path | None:
    """Write one cache entry atomically ({kernel_sha1, key, request, result, ...}), signed."""
    return _write(_path(entry["kernel_sha1"], entry["key"]), entry)


def _write(p: Path, entry: dict[str, Any]) -> Path | None:
    key = _key()
    if key is None:
        print("ktui: could not write the repro cache (no integrity key)", file=sys.stderr)
        return None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        entry = json.loads(json.dumps(entry, default=str))
        entry.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        entry.setdefault("created_ts", time.time())
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=str(p.parent))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"v": ENTRY_VERSION, "mac": _mac(key, entry), "entry": entry}, fh, default=str)
        os.replace(tmp, p)
        return p
    except OSError as exc:
        print(f"ktui: could not write the repro cache ({exc})", file=sys.stderr)
        return None


ANY_REFERENCE = object()


def entry_reference(entry: dict[str, Any]) -> str | None:
    """The sha1 of the reference an entry's kernel was judged against (None: unknown)."""
    res = entry.get("result") if isinstance(entry.get("result"), dict) else {}
    ref = res.get("reference_sha1")
    if not isinstance(ref, str):
        ref = (entry.get("request") if isinstance(entry.get("request"), dict) else {}).get("reference_sha1")
    return ref if isinstance(ref, str) else None


def entries_for(kernel_sha1: str, strict: bool = False, reference_sha1: Any = ANY_REFERENCE) -> list[dict[str, Any]]:
    """Every verified cached reproduction of one kernel (any settings), newest first (`strict`:
    only entries complete enough for a verdict). ``reference_sha1``: only those judged against
    that reference (a kernel reproduced against one problem's reference says nothing about a
    trace that holds the same kernel and another reference)."""
    d = _path(kernel_sha1, "x").parent
    out = []
    try:
        files = list(d.glob("*.json"))
    except OSError:
        return []
    for f in files:
        e = _read(f, strict)
        if e is not None and e.get("kernel_sha1") == kernel_sha1:
            if reference_sha1 is not ANY_REFERENCE and entry_reference(e) != reference_sha1:
                continue
            out.append(e)
    out.sort(key=lambda e: e.get("created_ts") if isinstance(e.get("created_ts"), (int, float)) else 0, reverse=True)
    return out


CACHEABLE_FAILURES = {"compile_error", "import_error", "no_model", "runtime_error", "cuda_error", "oom", "exit",
                      "crash", "protocol_error", "no_code"}


def cacheable(result: dict[str, Any]) -> bool:
    """Completed runs and failures caused by the kernel itself; not timeouts (a longer timeout may
    pass), cancels, SIGKILLs from outside or the host's OOM killer, resource limits, missing
    references or a broken environment."""
    if result.get("status") == "completed":
        return True
    f = result.get("failure") or {}
    if result.get("status") != "failed" or f.get("kind") not in CACHEABLE_FAILURES:
        return False
    from ktui.repro.judging.outcome import unjudged

    return unjudged(result) is None  # a CUDA kernel that failed to build on a machine with no GPU: not its failure


# ---- profiles -----------------------------------------------------------------------------------
# ``ktui repro --profile`` and the app's profile panel store a completed profile here (signed like a
# result, under profiles/<kernel sha1>/); ``ktui report`` shows a run's newest one. The entry is
# {kernel_sha1, key, reference_sha1, created, created_ts, profile: ProfileReport.to_dict()}; its
# profile is validated by ProfileReport.from_dict where it is read (ktui.repro.profile.run).

def profiles_dir() -> Path:
    return cache_root() / "profiles"


def profile_key(*, reference_sha1: str | None, device: str | None, clock_control: str, cache_control: str) -> str:
    """One profile per kernel, reference, device kind and ncu settings (a new run replaces it)."""
    payload = {"reference": reference_sha1, "device": key_device(device), "clock_control": clock_control,
               "cache_control": cache_control, "harness": HARNESS_VERSION}
    return hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def _profile_path(kernel_sha1: str, key: str) -> Path:
    safe = "".join(ch for ch in kernel_sha1 if ch in "0123456789abcdef")[:40] or "unknown"
    return profiles_dir() / safe / f"{''.join(ch for ch in key if ch.isalnum())[:40]}.json"


def store_profile(kernel_sha1: str, key: str, reference_sha1: str | None, profile: dict[str, Any]) -> Path | None:
    """Write one profile (``ProfileReport.to_dict()``) atomically, signed."""
    entry = {"kernel_sha1": kernel_sha1, "key": key, "reference_sha1": reference_sha1, "profile": profile}
    return _write(_profile_path(kernel_sha1, key), entry)


def profiles_for(kernel_sha1: str, reference_sha1: str | None) -> list[dict[str, Any]]:
    """Every signed profile entry of one kernel judged against ``reference_sha1``, newest first."""
    d = _profile_path(kernel_sha1, "x").parent
    try:
        files = list(d.glob("*.json"))
    except OSError:
        return []
    out = [e for e in (_read_signed(f) for f in files)
           if e is not None and e.get("kernel_sha1") == kernel_sha1 and e.get("reference_sha1") == reference_sha1
           and isinstance(e.get("profile"), dict)]
    out.sort(key=lambda e: e.get("created_ts") if isinstance(e.get("created_ts"), (int, float)) else 0, reverse=True)
    return out
