# ---- ktui repro harness: the GPU seen from the judge (no CUDA context) ----------------------
# A per-GPU file lock so two ktui processes never time on one GPU at once, and the GPU's state
# (clocks, temperature, power, utilization, other processes) from nvidia-smi with each result.
# Stdlib only. MIT license, part of ktui.
import os
import subprocess
import time

from .words import count

QUERY = "index,uuid,name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,pstate"


def _smi(args, timeout=10):
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def physical_index(device):
    """The nvidia-smi index of a torch device string (CUDA_VISIBLE_DEVICES applied)."""
    idx = 0
    if device and ":" in str(device):
        try:
            idx = int(str(device).split(":", 1)[1])
        except ValueError:
            idx = 0
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis:
        parts = [p.strip() for p in vis.split(",") if p.strip()]
        if idx < len(parts):
            return parts[idx]
    return str(idx)


def state(device):
    """Clocks, temperature, power, utilization and the compute processes of one GPU (or None)."""
    which = physical_index(device)
    out = _smi([f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"])
    if out is None:
        return None
    rows = [[c.strip() for c in ln.split(",")] for ln in out.strip().splitlines() if ln.strip()]
    keys = QUERY.split(",")
    gpu = None
    for r in rows:
        d = dict(zip(keys, r, strict=False))
        if d.get("index") == which or d.get("uuid") == which:
            gpu = d
            break
    if gpu is None and rows:
        gpu = dict(zip(keys, rows[0], strict=False))
    if gpu is None:
        return None
    res = {"index": gpu.get("index"), "uuid": gpu.get("uuid"), "name": gpu.get("name"), "time": time.time()}
    for k, name in (("clocks.sm", "sm_clock_mhz"), ("clocks.mem", "mem_clock_mhz"), ("clocks.max.sm", "max_sm_clock_mhz"),
                    ("temperature.gpu", "temperature_c"), ("power.draw", "power_w"),
                    ("utilization.gpu", "utilization_pct")):
        try:
            res[name] = float(gpu.get(k, ""))
        except ValueError:
            res[name] = None
    res["pstate"] = gpu.get("pstate")
    apps = _smi(["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"])
    procs = []
    for ln in (apps or "").strip().splitlines():
        c = [x.strip() for x in ln.split(",")]
        if len(c) >= 3 and c[0] == res["uuid"]:
            try:
                procs.append({"pid": int(c[1]), "used_mib": float(c[2])})
            except ValueError:
                continue
    res["processes"] = procs
    return res


def not_idle(before, ours):
    """Words when something other than our workers used the GPU (or it was busy) before timing."""
    if not before:
        return None
    others = [p for p in before.get("processes") or [] if p["pid"] not in ours]
    bits = []
    if others:
        bits.append(f"{count(len(others), 'other process')} on the GPU (pids {', '.join(str(p['pid']) for p in others[:5])})")
    u = before.get("utilization_pct")
    if u is not None and u > 10:
        bits.append(f"utilization {u:.0f}% before timing")
    return "; ".join(bits) or None


# what makes a timing on this GPU comparable with another on it (not what moves from second to second)
STATIC_QUERY = ("uuid,name,driver_version,clocks.max.sm,clocks.max.memory,clocks.applications.graphics,"
                "clocks.applications.memory,power.limit,enforced.power.limit,persistence_mode,compute_mode,"
                "mig.mode.current,ecc.mode.current")
STATIC_QUERY_MIN = "uuid,name,driver_version,clocks.max.sm,clocks.max.memory"


def static_state(device):
    """The GPU's identity and settings that a timing depends on: its UUID, driver, maximum and
    application clocks, power limits, MIG and ECC modes (nvidia-smi; a field an older driver does
    not know falls back to a shorter query). None without nvidia-smi."""
    which = physical_index(device)
    for query in (STATIC_QUERY, STATIC_QUERY_MIN):
        out = _smi([f"--query-gpu=index,{query}", "--format=csv,noheader,nounits"])
        if out is None:
            continue
        keys = ["index"] + query.split(",")
        rows = [dict(zip(keys, [c.strip() for c in ln.split(",")], strict=False))
                for ln in out.strip().splitlines() if ln.strip()]
        for r in rows:
            if r.get("index") == which or r.get("uuid") == which:
                r.pop("index", None)
                return r
    return None
