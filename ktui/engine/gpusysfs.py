"""Which /sys a worker gets (:mod:`ktui.engine.sysview`), and, for a GPU worker, the self-test behind
the minimal one.

CPU workers get the minimal /sys (CPUs, NUMA nodes). GPU workers keep the host's /sys, read-only,
unless ``KTUI_GPU_SYSFS=minimal``: then, once per machine (driver, kernel, GPUs, torch, this
module's version), a trusted probe (ktui's code and torch, no trace code:
:mod:`ktui.engine.sysfs_selftest` run with ``--probe``) initializes CUDA in a sandboxed worker
under the minimal /sys and again under the host's; the minimal one is used only when both ran
and agree (device count, names, memory, SM count, capability, bus ids, a computed sum, event
timing, a cuBLAS matmul, free memory, NVML where it is installed). Otherwise GPU workers
keep the host's /sys and the verdict's sandbox words say why. The record lives in ktui's cache (the
judge's side: no worker can write it); delete it to test again.

    python -m ktui.engine.sysfs_selftest          # run it now (no cache), print both probes
Stdlib only on the judge's side (the probe imports torch). MIT license, part of ktui."""
import hashlib
import json
import os
import sys

ENV = "KTUI_GPU_SYSFS"
#: bump when the minimal /sys's keep-list or the probe changes: every machine tests again
SELFTEST_VERSION = 1
SELFTEST_TIMEOUT_S = 240.0
_decided: dict = {}


def requested():
    """What the user asked for GPU workers: "minimal" (behind the self-test) or "host" (the default)."""
    v = os.environ.get(ENV, "").strip().lower()
    return "minimal" if v == "minimal" else "host"


def resolve(spec, prefix=(), launcher=None):
    """Set ``spec.sysfs`` (and ``spec.sysfs_note``) when the caller left it None: "minimal" on the
    CPU; on a GPU the host's unless :func:`requested` says minimal and this machine's self-test
    passed; the host's under a profiler prefix (Nsight Compute reads PCI and driver entries of
    /sys that the minimal view has not been tried with). ``launcher``: the class that starts a
    sandboxed worker (``sandbox.Launched``; this module does not import the sandbox), for the
    self-test."""
    from .sysview import SYSFS_MODES

    if spec.sysfs is not None:
        if spec.sysfs not in SYSFS_MODES:
            spec.sysfs = "host"
        return
    if spec.device == "cpu":
        spec.sysfs = "minimal"
    elif prefix:
        spec.sysfs = "host"
    else:
        spec.sysfs, spec.sysfs_note = decide(type(spec), launcher)


def planned_words():
    """The confirmation dialog's words for a GPU worker's /sys (runs nothing)."""
    if requested() != "minimal":
        return f"the host's /sys, read-only (a /sys of the GPUs, CPUs and NUMA nodes only is opt-in: {ENV}=minimal)"
    rec = _read(_record_path(machine_key()))
    if rec is None:
        return ("a /sys of the GPUs, CPUs and NUMA nodes only, if CUDA initializes under it (checked once on this "
                "machine at the first GPU worker; else the host's /sys, read-only)")
    if rec.get("ok"):
        return "a /sys of the GPUs, CPUs and NUMA nodes only (this machine's self-test passed)"
    return f"the host's /sys, read-only (this machine's GPU /sys self-test failed: {rec.get('why', '?')[:120]})"


def _nvidia_devices(sysfs="/sys"):
    out = []
    base = os.path.join(sysfs, "bus", "pci", "devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return out
    for n in names:
        try:
            with open(os.path.join(base, n, "vendor")) as fh:
                if fh.read().strip().lower() != "0x10de":
                    continue
            with open(os.path.join(base, n, "device")) as fh:
                out.append(f"{n}={fh.read().strip()}")
        except OSError:
            continue
    return out


def machine_key():
    """What the self-test's answer depends on: the driver, the kernel, the GPUs, torch, the probe."""
    import platform

    try:
        with open("/proc/driver/nvidia/version") as fh:
            driver = fh.read()
    except OSError:
        driver = ""
    try:
        from importlib.metadata import version

        torch_v = version("torch")
    except Exception:  # noqa: BLE001 - any failure: unknown
        torch_v = "?"
    parts = [str(SELFTEST_VERSION), platform.release(), driver, torch_v, sys.executable,
             os.environ.get("CUDA_VISIBLE_DEVICES", ""), *_nvidia_devices()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _record_path(key):
    from .errors import default_cache_root

    return os.path.join(default_cache_root(), "sandbox", f"gpu-sysfs-{key[:24]}.json")


def _read(path):
    try:
        with open(path) as fh:
            rec = json.load(fh)
        return rec if isinstance(rec, dict) and "ok" in rec else None
    except (OSError, ValueError):
        return None


def decide(spec_cls=None, launcher=None):
    """("minimal" or "host", words for the verdict when it is the host's though minimal was asked);
    ``spec_cls`` and ``launcher``: ``sandbox.Spec`` and ``sandbox.Launched`` (for the self-test)."""
    if requested() != "minimal" or launcher is None:
        return "host", ""
    key = machine_key()
    if key not in _decided:
        path = _record_path(key)
        rec = _read(path)
        if rec is None:
            rec = selftest(spec_cls, launcher)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as fh:
                    json.dump(rec, fh, indent=1)
                os.replace(tmp, path)
            except OSError:
                pass  # not kept: tested again by the next run
        _decided[key] = ("minimal", "") if rec.get("ok") else (
            "host", f"GPU /sys self-test failed on this machine: {str(rec.get('why'))[:160]}")
    return _decided[key]


#: what must agree between the probe under the minimal /sys and under the host's
COMPARED = ("cuda", "count", "devices", "sum", "matmul", "event_positive", "mem_get_info", "nvml")


def _probe(mode, timeout, spec_cls, launcher):
    """The probe (``python -m ktui.engine.sysfs_selftest --probe``) in a sandboxed GPU worker under
    /sys ``mode``: (its JSON or None, words)."""
    import tempfile

    from .oslib import remove_tree

    work = tempfile.mkdtemp(prefix="ktui-sysfs-probe-")
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    argv = [sys.executable, "-m", "ktui.engine.sysfs_selftest", "--probe"]
    spec = spec_cls(work, device="cuda", python_path=[here], argv=argv, sysfs=mode)
    w = launcher(spec, argv)
    try:
        try:
            w.proc.wait(timeout=timeout)
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: said below
            pass
        w.drain(5)
    finally:
        w.close()
        remove_tree(work)
    lines = [ln for ln in w.tail("stdout").splitlines() if ln.startswith("SYSFS_PROBE ")]
    if not lines:
        return None, f"no answer under the {mode} /sys (exit {w.proc.returncode}, {w.limit_hit}): " \
                     f"{w.tail('stderr')[-300:].strip()}"
    try:
        return json.loads(lines[-1][len("SYSFS_PROBE "):]), ""
    except ValueError:
        return None, f"an unreadable answer under the {mode} /sys"


def selftest(spec_cls, launcher, timeout=SELFTEST_TIMEOUT_S):
    """Run the probe under the minimal /sys and under the host's: {"ok", "why", "minimal", "host"}."""
    from .defaults import machine_scale

    t = timeout * machine_scale()
    host, why_h = _probe("host", t, spec_cls, launcher)
    mini, why_m = _probe("minimal", t, spec_cls, launcher)
    rec = {"ok": False, "why": "", "minimal": mini, "host": host, "version": SELFTEST_VERSION}
    if host is None or not host.get("cuda"):
        rec["why"] = ("CUDA did not initialize under the host's /sys either: "
                      + (why_h or str((host or {}).get("error"))))
    elif mini is None:
        rec["why"] = why_m
    elif mini.get("sysfs") != "minimal":
        rec["why"] = f"the minimal /sys was not in force in the probe ({mini.get('sysfs')}: {mini.get('errors')})"
    else:
        diff = [k for k in COMPARED if mini.get(k) != host.get(k)]
        rec["why"] = f"the probes disagree on {', '.join(diff)}: {mini.get('error') or ''}"[:300] if diff else ""
        rec["ok"] = not diff
    return rec


