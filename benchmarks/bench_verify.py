"""``ktui verify`` against a serial loop of ``ktui repro`` on a cold sweep of CUDA kernels.

    python benchmarks/bench_verify.py --out OUTDIR [--honest 12] [--budget 450] [--engines local,ray]
                                      [--gpus 0,1] [--serial-budget 70]

Needs CUDA torch, ninja and nvcc (the H200 machine: ``scripts/gpu/verify.sh`` runs it). Steps, each
with its own empty cache directory (cold: no build, no result):

1. the sweep: ``benchmarks/make_cuda_sweep.py`` (honest CUDA kernels of varied ops and shapes, the
   seed run's four versions, the hack corpus's CUDA traces), verified with ``--all-versions``;
2. ``ktui verify SWEEP --all-versions --json --events ...`` (local engine): wall time, the physical
   floor of a cold sweep (total build time / cores: each build is one compiler, ``MAX_JOBS=1``),
   builds in flight over time, each GPU's busy fraction (time its slot had a kernel in flight, and
   time spent in the GPU stages, over the wall time once the first build landed), timings/minute;
3. the serial baseline: ``ktui repro TRACE --version vK --json`` for the same kernels one after the
   other, as long as ``--serial-budget`` allows; its total is measured for the kernels it reached
   and extrapolated (mean per kernel x kernels) beyond, and the report says which;
4. the same kernels' timings from ``ktui repro --fresh`` (builds cached) next to verify's: each
   GPU's results must match a single ``ktui repro`` within noise;
5. ``--engine ray`` (a local Ray instance on this machine): the same figures as step 2.

``--pipeline-compare`` (issue 23) instead verifies one sweep twice, cold each time, with the pipeline
on (two judges per device; the timing windows alone on it) and off (``--no-pipeline``), and prints
for each: wall time, per-stage time (sum over kernels), the time in timing windows ("alone" device
windows) over the wall (device-busy fraction), kernels per minute, every probe's total cost, the
builds' MAX_JOBS, and whether the verdicts are identical. On the CPU with the hack corpus::

    python benchmarks/bench_verify.py --pipeline-compare --out OUT --sweep tests/fixtures/hacks \
        --device cpu --trials 5 --timeout 120 [--pick 12]

On the H200 (a cold sweep of CUDA and Triton kernels: ``make_cuda_sweep.py``, or a real sweep)::

    python benchmarks/bench_verify.py --pipeline-compare --out OUT --honest 30 --trials 100 --timeout 120

A phase that would pass its deadline is interrupted (SIGINT: verify prints its partial report and
timeline) and the report says so. Writes OUTDIR/bench_verify.json, OUTDIR/bench_verify.md and
OUTDIR/timeline_<engine>.txt.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GPU_STAGES = ("reference", "correctness", "timing", "memory", "launches", "checks")


def run(cmd: list[str], env: dict[str, str], deadline_s: float, log: list[dict[str, Any]]) -> dict[str, Any]:
    """Run ``cmd``; at the deadline send SIGINT (verify then prints what it has), then SIGKILL."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
                         start_new_session=True)
    interrupted = False
    try:
        out, err = p.communicate(timeout=max(1.0, deadline_s))
    except subprocess.TimeoutExpired:
        interrupted = True
        os.killpg(p.pid, signal.SIGINT)
        try:
            out, err = p.communicate(timeout=45)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
    rec = {"cmd": " ".join(cmd), "rc": p.returncode, "wall_s": round(time.monotonic() - t0, 3),
           "interrupted": interrupted, "stderr_tail": (err or "")[-2000:]}
    log.append(rec)
    rec["stdout"] = out or ""
    return rec


def env_for(cache: Path) -> dict[str, str]:
    env = dict(os.environ)  # NCCL_* / TORCH_SYMM_MEM_* as the machine sets them
    env["KTUI_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def union_length(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    start = None
    for a, b in sorted(spans):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if end is not None:
        total += end - start
    return total


def timeline_figures(ev: dict[str, Any]) -> dict[str, Any]:
    """Builds in flight, GPU busy fractions and rates from a ``--events`` file."""
    builds = [b for b in ev.get("builds", {}).values() if b.get("started") and b.get("ended")]
    timings = [t for t in ev.get("timings", {}).values() if (t.get("verify") or {}).get("started")]
    events = ev.get("events", [])
    if not events:
        return {}
    t0 = min(e["t"] for e in events)
    t_end = max([e["t"] for e in events] + [t["verify"]["ended"] for t in timings])
    compiled = [b for b in builds if b.get("ok") and not b.get("cached")]
    build_total = sum(b["ended"] - b["started"] for b in builds)
    cores = ev.get("cpu_count") or os.cpu_count() or 1
    # the GPU can work from the moment a first kernel is ready: built, or with nothing to build
    first_built = min((e["t"] for e in events if e["kind"] in ("built", "time_start")), default=None)
    by_slot: dict[str, list[tuple[float, float]]] = {}
    gpu_stage: dict[str, float] = {}
    for t in timings:
        v = t["verify"]
        by_slot.setdefault(v.get("slot") or "?", []).append((v["started"], v["ended"]))
        st = t.get("stages") or {}
        gpu_stage[v.get("slot") or "?"] = gpu_stage.get(v.get("slot") or "?", 0.0) + sum(
            (st.get(s) or {}).get("seconds") or 0.0 for s in GPU_STAGES)
    window = (t_end - first_built) if first_built else None
    slots = {}
    for s, spans in sorted(by_slot.items()):
        busy = union_length(spans)
        slots[s] = {"timings": len(spans), "busy_s": round(busy, 2),
                    "busy_fraction": round(busy / window, 3) if window else None,
                    "gpu_stage_s": round(gpu_stage.get(s, 0.0), 2),
                    "gpu_stage_fraction": round(gpu_stage.get(s, 0.0) / window, 3) if window else None}
    step = max(1.0, (t_end - t0) / 120)
    series = []
    x = t0
    while x <= t_end + 1e-9:
        inflight = sum(1 for b in builds if b["started"] <= x < b["ended"])
        timing = sum(1 for t in timings if t["verify"]["started"] <= x < t["verify"]["ended"])
        series.append((round(x - t0, 1), inflight, timing))
        x += step
    last_build = max((b["ended"] for b in builds), default=t0)
    ahead = [t for t in timings if t["verify"]["started"] >= last_build]
    return {
        "wall_s": round(t_end - t0, 2), "builds": len(builds), "compiled": len(compiled),
        "build_seconds_total": round(build_total, 1), "cores": cores,
        "floor_s": round(build_total / cores, 2),
        "wall_over_floor": round((t_end - t0) / (build_total / cores), 3) if build_total else None,
        "first_build_landed_s": round(first_built - t0, 2) if first_built else None,
        "slots": slots,
        "timings_per_min": round(60 * len(timings) / window, 2) if window else None,
        "timings_after_last_build": len(ahead),
        "max_builds_in_flight": max((s[1] for s in series), default=0),
        "series_step_s": round(step, 2), "series": series,
    }


def chart(title: str, fig: dict[str, Any]) -> str:
    if not fig:
        return f"{title}: no timeline\n"
    rows = [f"{title}: builds in flight (#) and kernels timing (T) every {fig['series_step_s']} s"]
    top = max(1, fig["max_builds_in_flight"])
    for t, b, g in fig["series"]:
        bar = "#" * round(40 * b / top)
        rows.append(f"{t:7.1f}s {b:3d} {bar:<40} {'T' * g}")
    return "\n".join(rows) + "\n"


def union(spans: list[tuple[float, float]]) -> float:
    return union_length(spans)


def build_figures(builds: dict[str, Any]) -> dict[str, Any]:
    """Where the builds' time went: per build its wall seconds; inside, ninja's own steps (its log:
    each .cu / .cpp compile and the link) summed by kind; the rest is the worker's start, torch's
    import and load_inline's own work (hashing, writing sources, loading the .so)."""
    done = [b for b in builds.values() if isinstance(b.get("seconds"), (int, float)) and not b.get("skipped")]
    compiled = [b for b in done if not b.get("cached")]
    kinds: dict[str, float] = {}
    for b in compiled:
        for e in b.get("extensions") or []:
            for st in e.get("steps") or []:
                out = str(st.get("output") or "")
                kind = ("cuda compile" if out.endswith(".cuda.o") else "c++ compile" if out.endswith(".o")
                        else "link" if out.endswith(".so") else "other")
                kinds[kind] = kinds.get(kind, 0.0) + float(st.get("seconds") or 0.0)
    total = sum(float(b["seconds"]) for b in compiled)
    secs = sorted(float(b["seconds"]) for b in compiled)
    return {"builds": len(done), "compiled": len(compiled), "cached": len(done) - len(compiled),
            "seconds_total": round(total, 1), "median_s": round(secs[len(secs) // 2], 1) if secs else None,
            "max_s": round(secs[-1], 1) if secs else None,
            "ninja_steps_s": {k: round(v, 1) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
            "outside_ninja_s": round(total - sum(kinds.values()), 1),
            "phases_s": build_phases(compiled), "max_jobs": max_jobs_spread(done)}


def build_phases(compiled: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The compiled builds' wall seconds split by phase, summed (the build records' ``stages``,
    ``startup``, ``publish_s`` and extensions; steps.build_phases): the judge process's own start and
    end (the wall less its stages), the worker's start (its stage ``startup``: the sandbox, torch's
    import, the device set up), load_inline's wall less ninja's steps (sources written and hashed,
    the compiler checked, the .so loaded), ninja's steps (in parallel under MAX_JOBS > 1: their sum
    may pass the build's wall), the copy into the build cache, and the rest of the build stage (the
    kernel's module run). None when the records have no stages (an older ktui)."""
    rows = [b for b in compiled if isinstance(b.get("stages"), dict)]
    if not rows:
        return None
    acc: dict[str, float] = {}

    def add(k: str, v: Any) -> None:
        if isinstance(v, (int, float)):
            acc[k] = acc.get(k, 0.0) + float(v)

    for b in rows:
        st = b["stages"]
        su = b.get("startup") or {}
        steps_s = sum(float(x.get("seconds") or 0.0) for e in b.get("extensions") or [] for x in e.get("steps") or [])
        ext_s = sum(float(e.get("seconds") or 0.0) for e in b.get("extensions") or [])
        add("judge process (wall less its stages)", float(b["seconds"]) - sum(float(v or 0.0) for v in st.values()))
        add("worker startup stage", st.get("startup"))
        add("  of which torch import", su.get("import_torch_s"))
        add("  of which device set-up", su.get("device_init_s"))
        add("load_inline less ninja", ext_s - steps_s)
        add("ninja steps", steps_s)
        add("copy into the build cache", b.get("publish_s"))
        add("build stage, rest (module run)", float(st.get("build") or 0.0) - ext_s - float(b.get("publish_s") or 0.0))
    return {"builds": len(rows), **{k: round(v, 1) for k, v in acc.items()}}


def max_jobs_spread(done: list[dict[str, Any]]) -> dict[str, int]:
    """How many builds ran with each MAX_JOBS."""
    out: dict[str, int] = {}
    for b in done:
        if isinstance(b.get("max_jobs"), int):
            out[str(b["max_jobs"])] = out.get(str(b["max_jobs"]), 0) + 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def busy_after_builds(alone: list[tuple[float, float]], builds: dict[str, Any], ev: dict[str, Any]) -> dict[str, Any] | None:
    """The timing windows' share of the wall once the builds are ahead (the last build done): the
    issue's "GPU busy at least 70 %" target is about this part of a sweep."""
    ends = [float(b["ended"]) for b in builds.values() if isinstance(b.get("ended"), (int, float))]
    evs = [float(e["t"]) for e in ev.get("events") or [] if isinstance(e.get("t"), (int, float))]
    if not evs:
        return None
    start = max(ends) if ends else (first_ready(ev) or min(evs))
    end = max(evs)
    if end - start < 1.0:
        return None
    inside = [(max(a, start), min(b, end)) for a, b in alone if b > start and a < end]
    return {"window_s": round(end - start, 2), "timing_windows_s": round(union(inside), 2),
            "fraction": round(union(inside) / (end - start), 3)}


def pipeline_figures(rep: dict[str, Any], ev: dict[str, Any], wall: float) -> dict[str, Any]:
    """What --pipeline-compare reports for one verify run (its JSON report and --events file)."""
    timings = ev.get("timings") or {}
    stages: dict[str, float] = {}
    probes: dict[str, float] = {}
    alone: list[tuple[float, float]] = []
    processed = 0
    refc: dict[str, Any] = {}
    ref_work = 0.0  # seconds of the reference's requests that run its model (refshare's kinds + timing)
    judged_s = 0.0
    beyond: list[float] = []  # per kernel: seconds of its stages past the build, less its timed work
    beyond_own: list[float] = []  # the same less its waits for the device (another judge's windows)
    probe_waits: dict[str, float] = {}
    waits = 0.0
    spans: list[tuple[float, float]] = []  # each kernel's time on its slot (verify.started / ended)
    ref_src: dict[str, int] = {}
    ref_requests = 0
    for t in timings.values():
        rt = t.get("reference_timing") or {}
        if rt:
            ref_src[str(rt.get("source"))] = ref_src.get(str(rt.get("source")), 0) + 1
        ops = (t.get("worker_ops") or {}).get("reference") or {}
        ref_requests += int(ops.get("time") or 0) + int(ops.get("wall") or 0)
        secs = (t.get("worker_seconds") or {}).get("reference") or {}
        ref_work += sum(float(secs.get(k) or 0.0) for k in ("make_inputs", "forward", "probe", "time", "wall",
                                                              "wall_outputs", "memory", "launches"))
        judged_s += sum(float((st or {}).get("seconds") or 0.0) for n, st in (t.get("stages") or {}).items()
                        if n != "build")
        own = 0.0
        for name, st in (t.get("stages") or {}).items():
            sec = float((st or {}).get("seconds") or 0.0)
            stages[name] = stages.get(name, 0.0) + sec
            if name != "build":
                own += -sec if name.startswith("tim") else sec
        beyond.append(max(0.0, own))
        waited = sum(float(w.get("waited_s") or 0.0) for w in t.get("device_windows") or [])
        waits += waited
        beyond_own.append(max(0.0, own - waited))
        v = t.get("verify") or {}
        if isinstance(v.get("started"), (int, float)) and isinstance(v.get("ended"), (int, float)):
            spans.append((float(v["started"]), float(v["ended"])))
        for name, pr in (t.get("probes") or {}).items():
            probes[name] = probes.get(name, 0.0) + float((pr or {}).get("seconds") or 0.0)
            probe_waits[name] = probe_waits.get(name, 0.0) + float((pr or {}).get("waited_s") or 0.0)
        alone += [(w["start"], w["end"]) for w in t.get("device_windows") or [] if w.get("kind") == "alone"]
        for k, v in (t.get("reference_cache") or {}).items():
            if isinstance(v, dict):  # live / replayed, per kind of reference request
                for kind, n in v.items():
                    refc.setdefault(k, {})[kind] = refc.get(k, {}).get(kind, 0) + int(n or 0)
            elif isinstance(v, (int, float)):
                refc[k] = refc.get(k, 0) + int(v)
        processed += 1
    builds = ev.get("builds") or {}
    bfig = build_figures(builds)
    runs = rep.get("runs") or []
    counts: dict[str, int] = {}
    for x in runs:
        counts[str(x.get("verdict"))] = counts.get(str(x.get("verdict")), 0) + 1
    judged = sum(1 for x in runs if x.get("verdict") not in ("not judged here", "not run", None))
    beyond.sort()
    beyond_own.sort()
    # the slots' throughput: the time kernels were on a slot (the union of their spans), per kernel,
    # less the mean timing stage: what the GPU slot spends per kernel past its timed work, overlap
    # counted once (with the pipeline, each kernel's own stages overlap the next one's)
    busy = union(spans)
    mean_timing = (sum(float(((t.get("stages") or {}).get("timing") or {}).get("seconds") or 0.0)
                       for t in timings.values()) / processed) if processed else 0.0
    return {
        "wall_s": round(wall, 2), "kernels_judged": judged, "kernels_processed": processed, "verdict_counts": counts,
        "slot_beyond_timing_s": {"median": round(beyond[len(beyond) // 2], 2) if beyond else None,
                                 "max": round(beyond[-1], 2) if beyond else None},
        "slot_beyond_timing_own_s": {"median": round(beyond_own[len(beyond_own) // 2], 2) if beyond_own else None,
                                     "max": round(beyond_own[-1], 2) if beyond_own else None},
        "device_waits_s": round(waits, 2),
        "slot_busy_s": round(busy, 2),
        "slot_per_kernel_past_timing_s": round(busy / processed - mean_timing, 2) if processed and spans else None,
        "kernels_per_min": round(60 * judged / wall, 2) if wall else None,
        "stage_seconds": {k: round(v, 2) for k, v in sorted(stages.items(), key=lambda kv: -kv[1])},
        "probe_seconds": {k: round(v, 2) for k, v in sorted(probes.items(), key=lambda kv: -kv[1])},
        "probe_waits_s": {k: round(v, 2) for k, v in sorted(probe_waits.items(), key=lambda kv: -kv[1]) if v},
        "timing_windows_s": round(union(alone), 2),
        "device_busy_after_builds": busy_after_builds(alone, builds, ev),
        "device_busy_fraction": round(union(alone) / wall, 3) if wall else None,
        "max_jobs": sorted({b.get("max_jobs") for b in builds.values() if b.get("max_jobs")}),
        "builds": bfig,
        "pipeline_depth": (ev.get("stats") or {}).get("pipeline_depth"),
        "reference_cache": refc,
        "reference_time_from": ref_src,  # kernels whose reference time was measured / replayed from the cache
        "reference_timing_requests": ref_requests,  # "time" + "wall" requests the reference workers received
        # seconds the reference workers spent on requests that run the reference, over the judges' seconds
        # past the build (worker_seconds; the share the reference reply store and timing cache remove)
        "reference_work_s": round(ref_work, 2),
        "reference_work_share": round(ref_work / judged_s, 3) if judged_s else None,
        "problems": len({x.get("problem") for x in runs if x.get("job")}),
        "outcomes": {f"{x['path']} {x['version']}": x.get("reproduced_outcome") for x in runs},
        "failures": {f"{x['path']} {x['version']}": x.get("failure") for x in runs},
        "verdicts": {f"{x['path']} {x['version']}": x["verdict"] for x in rep.get("runs") or []},
        "reasons": {f"{x['path']} {x['version']}": str(x.get("reason") or "")[:400] for x in rep.get("runs") or []},
        "classes": {f"{x['path']} {x['version']}": x.get("classes") or [] for x in rep.get("runs") or []},
        "failed": {k[:12]: t.get("status") for k, t in timings.items() if t.get("status") != "completed"},
    }


def pipeline_compare(a: argparse.Namespace) -> int:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="ktui-bench-pipeline-"))
    if a.sweep and not any(p.suffix == ".jsonl" for p in Path(a.sweep).iterdir()):
        sweep = Path(a.sweep).resolve()  # a real sweep's own layout (Harbor jobs, KernelBench runs): as it is
    elif a.sweep:
        src = Path(a.sweep).resolve()
        sweep = tmp / "sweep"
        sweep.mkdir()
        files = sorted(p for p in src.iterdir() if p.suffix == ".jsonl")
        manifest = src / "manifest.json"
        if manifest.exists() and a.device == "cpu":  # the hack corpus: its CPU traces only
            cpu = {e["file"] for e in json.loads(manifest.read_text())["traces"] if "cpu" in e["devices"]}
            files = [p for p in files if p.name in cpu]
        if a.pick:
            honest = [p for p in files if p.name.startswith("honest")]
            others = [p for p in files if not p.name.startswith("honest")]
            files = sorted(honest[: max(1, a.pick // 3)] + others[: a.pick - min(len(honest), max(1, a.pick // 3))])
        for p in files:
            (sweep / p.name).symlink_to(p)
    else:
        sweep = tmp / "sweep"
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_cuda_sweep.py"), str(sweep), "--honest",
                        str(a.honest), "--triton", str(a.triton)], check=True, capture_output=True, cwd=REPO)
    extra = (["--device", a.device] if a.device else []) + (["--timeout", str(a.timeout)] if a.timeout else [])
    extra += ["--compile-timeout", str(a.compile_timeout)] if a.compile_timeout else []
    if a.gpus:
        extra += ["--gpus", a.gpus]
    log: list[dict[str, Any]] = []
    result: dict[str, Any] = {"sweep": str(sweep), "kernels": sorted(str(p.relative_to(sweep)) for p in sweep.rglob("*")
                                                      if p.is_file())[:2000],
                              "cpu_count": os.cpu_count(), "commands": log, "modes": {}}
    modes = [a.first, "off" if a.first == "on" else "on"] + (["on-unshared"] if a.unshared else [])
    if a.modes:  # only these modes, in this order (one mode alone: its figures, no comparison)
        modes = [m for m in a.modes.split(",") if m in ("on", "off", "on-unshared")]
    t_start = time.monotonic()
    # the modes' shares of the budget: the first (the cold sweep the targets are about) gets the most
    shares = {m: (a.first_share if i == 0 and len(modes) > 1 else 1.0) for i, m in enumerate(modes)}
    for i, mode in enumerate(modes):
        cache = tmp / f"cache_{mode}"
        evf = tmp / f"events_{mode}.json"
        cmd = [sys.executable, "-m", "ktui", "verify", str(sweep), "--json", "--trials", str(a.trials), *extra,
               "--events", str(evf), "--pipeline" if mode.startswith("on") else "--no-pipeline"]
        env = env_for(cache)
        if a.share_builds:  # the builds once, by the first mode (cold); the others find them built
            env["KTUI_BUILD_DIR"] = str(tmp / "builds")
        if mode == "on-unshared":  # every kernel its own input seed: no reference output reused
            env["KTUI_VERIFY_SHARE_REFERENCE"] = "0"
        left = a.budget - (time.monotonic() - t_start) - (a.warm_s if a.warm and mode == "on" else 0.0)
        rest = sum(shares[m] for m in modes[i:])
        gpu = GpuSampler(a.gpus).start()
        r = run(cmd, env, max(30.0, left * shares[mode] / rest), log)
        busy = gpu.stop()
        if mode == "on-unshared":
            r["cmd"] = "KTUI_VERIFY_SHARE_REFERENCE=0 " + r["cmd"]
        if a.share_builds:
            r["cmd"] = f"KTUI_BUILD_DIR={tmp / 'builds'} " + r["cmd"]
        try:
            rep = json.loads(r["stdout"])
            ev = json.loads(evf.read_text())
        except (OSError, ValueError):
            result["modes"][mode] = {"error": r["stderr_tail"][-800:]}
            continue
        # the events themselves come back with the figures (gzip): where a build's or a probe's time
        # went can be read from them afterwards (session 34's H200 run left them on the machine)
        with gzip.open(out / f"events_{mode}.json.gz", "wt", encoding="utf-8") as fh:
            fh.write(evf.read_text())
        fig = pipeline_figures(rep, ev, float((ev.get("stats") or {}).get("wall_s") or r["wall_s"]))
        fig["interrupted"] = r["interrupted"]
        fig["builds_shared"] = bool(a.share_builds and i > 0)
        fig["gpu_utilization"] = busy.summary(first_ready(ev))
        result["modes"][mode] = fig
        if a.warm and mode == "on" and not r["interrupted"]:  # the same command again: everything cached
            wr = run(cmd, env, a.warm_s, log)
            if a.share_builds:
                wr["cmd"] = f"KTUI_BUILD_DIR={tmp / 'builds'} " + wr["cmd"]
            try:
                wrep = json.loads(wr["stdout"])
                st = wrep.get("stats") or {}
                result["warm"] = {"wall_s": st.get("wall_s"), "process_wall_s": wr["wall_s"],
                                  "cached": st.get("cached"), "kernels": st.get("kernels"), "timed": st.get("timed"),
                                  "failed": st.get("failed"), "interrupted": wr["interrupted"],
                                  "same_verdicts": {f"{x['path']} {x['version']}": x["verdict"]
                                                    for x in wrep.get("runs") or []} == fig["verdicts"]}
            except ValueError:
                result["warm"] = {"error": wr["stderr_tail"][-800:]}
    on, off = result["modes"].get("on") or {}, result["modes"].get("off") or {}
    if on.get("outcomes") and off.get("outcomes"):
        result.update(identity(on, off))
    if on.get("wall_s") and off.get("wall_s") and not off.get("builds_shared") and not on.get("builds_shared"):
        result["speedup_on_over_off"] = round(off["wall_s"] / on["wall_s"], 3)
    for rec in log:
        rec.pop("stdout", None)
    (out / "pipeline_compare.json").write_text(json.dumps(result, indent=1, default=str))
    md = pipeline_md(result)
    (out / "pipeline_compare.md").write_text(md)
    print(md)
    return 0


def judged_rows(fig: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Per run of a mode that judged it (not "not run", not interrupted): what the pipeline must not
    change (reproduced outcome, honesty classes, failure kind). Timings are not compared."""
    return {k: (fig["outcomes"].get(k), tuple(sorted(fig["classes"].get(k) or [])), fig["failures"].get(k))
            for k, v in fig["verdicts"].items() if v not in ("not run", None)}


def identity(on: dict[str, Any], off: dict[str, Any]) -> dict[str, Any]:
    """The pipeline on vs off: every run judged in both compared; the verdict words are reported too
    (they may differ by a timing within or outside the recorded value's noise, which is measured twice)."""
    from ktui.repro.verify.results import TIMING_CLASSES

    a, b = judged_rows(on), judged_rows(off)
    both = sorted(set(a) & set(b))
    diff = [k for k in both if a[k] != b[k]]
    words = [k for k in both if on["verdicts"].get(k) != off["verdicts"].get(k)]
    # the differences that are only in classes resting on a measured time (TIMING_CLASSES: noise on a
    # busy host can move them between any two runs) and the outcome they decide
    def core(row: tuple[Any, ...], timed: bool) -> tuple[Any, ...]:
        return (None if timed else row[0], row[2], tuple(c for c in row[1] if c not in TIMING_CLASSES))

    untimed = []
    for k in diff:
        timed = bool((set(a[k][1]) | set(b[k][1])) & TIMING_CLASSES)
        if core(a[k], timed) != core(b[k], timed):
            untimed.append(k)
    return {"identity": {"compared": len(both), "only_on": len(set(a) - set(b)), "only_off": len(set(b) - set(a)),
                         "identical": not diff, "differ_beyond_timing_classes": untimed,
                         "differ": {k: {"on": list(a[k]), "off": list(b[k])} for k in diff},
                         "verdict_words_differ": {k: {"on": [on["verdicts"].get(k), on["reasons"].get(k)],
                                                      "off": [off["verdicts"].get(k), off["reasons"].get(k)]}
                                                  for k in words}},
            "verdicts_identical": not diff}


def first_ready(ev: dict[str, Any]) -> float | None:
    """When the first kernel could be timed (built, or nothing to build): the GPU's window starts."""
    return min((e["t"] for e in ev.get("events") or [] if e.get("kind") in ("built", "time_start")), default=None)


class GpuSampler:
    """nvidia-smi's utilization.gpu every 200 ms while a mode runs (NVML's "a kernel was running"
    fraction, per GPU); nothing without nvidia-smi."""

    def __init__(self, gpus: str | None):
        self.gpus = {g.strip() for g in (gpus or "").split(",") if g.strip()}
        self.samples: list[tuple[float, str, float]] = []
        self.proc: subprocess.Popen[str] | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> GpuSampler:
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=index,utilization.gpu",
                                          "--format=csv,noheader,nounits", "-lms", "200"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for ln in self.proc.stdout:
            parts = [x.strip() for x in ln.split(",")]
            if len(parts) == 2 and (not self.gpus or parts[0] in self.gpus):
                try:
                    self.samples.append((time.time(), parts[0], float(parts[1])))
                except ValueError:
                    continue

    def stop(self) -> GpuSampler:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.thread is not None:
            self.thread.join(5)
        return self

    def summary(self, since: float | None) -> dict[str, Any] | None:
        xs = [u for t, _g, u in self.samples if since is None or t >= since]
        if not xs:
            return None
        return {"samples": len(xs), "mean_pct": round(statistics.mean(xs), 1),
                "busy_fraction": round(sum(1 for u in xs if u > 0) / len(xs), 3),
                "note": "nvidia-smi utilization.gpu every 200 ms from the first kernel ready to the end"}


def pipeline_md(r: dict[str, Any]) -> str:
    lines = ["# ktui verify: the pipeline on and off", "", f"{len(r['kernels'])} traces, {r['cpu_count']} cores", ""]
    for mode, f in r["modes"].items():
        lines.append(f"## pipeline {mode}")
        if f.get("error"):
            lines += [f"- error: {f['error']}", ""]
            continue
        lines.append(f"- wall {f['wall_s']} s, {f['kernels_judged']} kernels judged, {f['kernels_per_min']} kernels/min"
                     + (" (INTERRUPTED)" if f.get("interrupted") else ""))
        lines.append(f"- verdicts: {f.get('verdict_counts')}; kernels through the judge: {f.get('kernels_processed')}")
        lines.append(f"- per kernel, stage seconds past the build less its timing stage: {f.get('slot_beyond_timing_s')}; "
                     f"less its waits for the device (another judge's windows, {f.get('device_waits_s')} s in all): "
                     f"{f.get('slot_beyond_timing_own_s')}")
        lines.append(f"- the slots' time with a kernel on them {f.get('slot_busy_s')} s: per kernel past the mean "
                     f"timing stage {f.get('slot_per_kernel_past_timing_s')} s (overlap counted once)")
        lines.append(f"- timing windows (device alone) {f['timing_windows_s']} s = {f['device_busy_fraction']} of the wall; "
                     f"once the builds were done: {f.get('device_busy_after_builds')} (target >= 0.7)")
        lines.append(f"- targets: cold wall {f['wall_s']} s (target < 300 s for 30 kernels, builds included); slot "
                     f"time past the timing per kernel {f.get('slot_beyond_timing_s')} (target median <= 3 s, max <= 10 s; "
                     f"the slots' time per kernel past its timing, overlap counted once: "
                     f"{f.get('slot_per_kernel_past_timing_s')} s)")
        lines.append(f"- per stage (s, summed over kernels): {f['stage_seconds']}")
        lines.append(f"- per probe (s, summed): {f['probe_seconds']}; of which waiting for the device: "
                     f"{f.get('probe_waits_s')}")
        lines.append(f"- pipeline depth {f['pipeline_depth']}; builds' MAX_JOBS {f['max_jobs']}; reference replies "
                     f"from the store: {f.get('reference_cache')}")
        lines.append(f"- the reference's work (its requests that run it): {f.get('reference_work_s')} s, "
                     f"{f.get('reference_work_share')} of the judges' time past the builds")
        lines.append(f"- builds (where their time went; ninja's steps summed): {f.get('builds')}")
        lines.append(f"- {f.get('problems')} problems; reference time per kernel from: {f.get('reference_time_from')}; "
                     f"reference timing requests (time + wall) in all: {f.get('reference_timing_requests')}")
        lines.append(f"- GPU utilization (nvidia-smi): {f.get('gpu_utilization')}"
                     + ("; builds were the first mode's (shared build cache)" if f.get("builds_shared") else ""))
        lines.append("")
    if r.get("warm"):
        lines.append(f"warm re-run (same command, same cache): {r['warm']} (target: under 10 s)")
    if "identity" in r:
        idn = r["identity"]
        lines.append(f"verdicts identical on and off (outcome, classes, failure kind): {idn['identical']} over "
                     f"{idn['compared']} runs judged in both (only on: {idn['only_on']}, only off: {idn['only_off']})"
                     + (f"; differ: {idn['differ']}; beyond the classes that rest on a measured time: "
                        f"{idn.get('differ_beyond_timing_classes')}" if idn["differ"] else ""))
        if idn.get("verdict_words_differ"):
            lines.append(f"verdict words that differ (timings, measured twice): {idn['verdict_words_differ']}")
    if "speedup_on_over_off" in r:
        lines.append(f"wall off / on: {r['speedup_on_over_off']}")
    lines += ["", "## commands"] + [f"- `{c['cmd']}` -> rc {c['rc']}, {c['wall_s']} s" for c in r["commands"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--honest", type=int, default=12)
    ap.add_argument("--budget", type=float, default=450.0, help="seconds for everything")
    ap.add_argument("--serial-budget", type=float, default=70.0)
    ap.add_argument("--identity", type=int, default=4, help="kernels re-run with ktui repro --fresh")
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--gpus", default=None)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--sweep", default=None, help="verify this sweep instead of generating one (a smoke test: "
                    "--sweep tests/fixtures/verify/sweep --device cpu --timeout 5)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--timeout", type=float, default=None, help="verify / repro --timeout")
    ap.add_argument("--pipeline-compare", action="store_true", help="verify the sweep with the pipeline on and off")
    ap.add_argument("--pick", type=int, default=0, help="--pipeline-compare --sweep DIR: this many traces of it")
    ap.add_argument("--first", choices=["on", "off"], default="off", help="--pipeline-compare: which mode runs first")
    ap.add_argument("--compile-timeout", type=float, default=0.0,
                    help="--pipeline-compare: verify --compile-timeout (a cold sweep's builds queue for the cores)")
    ap.add_argument("--modes", default="", help="--pipeline-compare: only these modes, in order (e.g. 'on')")
    ap.add_argument("--triton", type=int, default=0, help="--pipeline-compare without --sweep: this many honest "
                    "Triton kernels too, each of the problem of the CUDA kernel of its op (two kernels per problem)")
    ap.add_argument("--share-builds", action="store_true", help="--pipeline-compare: one build cache for every "
                    "mode (the first builds cold; the others are compared, not timed for their builds)")
    ap.add_argument("--warm", action="store_true", help="--pipeline-compare: after the 'on' mode, the same command "
                    "again on its cache (a warm re-run)")
    ap.add_argument("--warm-s", type=float, default=40.0, help="the warm re-run's deadline")
    ap.add_argument("--first-share", type=float, default=1.0, help="--pipeline-compare: the first mode's share of "
                    "the budget relative to each later one (e.g. 1.5)")
    ap.add_argument("--unshared", action="store_true", help="--pipeline-compare: a third run, the pipeline on and "
                    "every kernel on its own input seed (no reference output reused: the reference cache's saving)")
    a = ap.parse_args()
    if a.pipeline_compare:
        return pipeline_compare(a)
    t_start = time.monotonic()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="ktui-bench-verify-"))
    if a.sweep:
        sweep = Path(a.sweep).resolve()
    else:
        sweep = tmp / "sweep"
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_cuda_sweep.py"), str(sweep), "--honest",
                        str(a.honest)], check=True, capture_output=True, cwd=REPO)
    extra = (["--device", a.device] if a.device else []) + (["--timeout", str(a.timeout)] if a.timeout else [])
    log: list[dict[str, Any]] = []
    result: dict[str, Any] = {"sweep": str(sweep), "honest_kernels": a.honest, "commands": log, "engines": {}}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        result["gpus"] = [ln.strip() for ln in smi.stdout.splitlines() if ln.strip()]
    except (OSError, subprocess.SubprocessError) as exc:
        result["gpus"] = [f"nvidia-smi failed: {exc}"]
    result["cpu_count"] = os.cpu_count()
    base = [sys.executable, "-m", "ktui", "verify", str(sweep), "--all-versions", "--json", "--trials", str(a.trials),
            *extra]
    if a.gpus:
        base += ["--gpus", a.gpus]
    engines = [e for e in a.engines.split(",") if e]
    if "ray" in engines and subprocess.run([sys.executable, "-c", "import ray"], capture_output=True).returncode:
        engines.remove("ray")
        result["engines"]["ray"] = {"skipped": "Ray is not installed on this machine (pip install 'ktui[ray]')"}

    def left() -> float:
        return a.budget - (time.monotonic() - t_start)

    def verify_phase(engine: str, deadline: float) -> dict[str, Any] | None:
        cache = tmp / f"cache_{engine}"
        evf = tmp / f"events_{engine}.json"
        r = run(base + ["--engine", engine, "--events", str(evf)], env_for(cache), deadline, log)
        entry: dict[str, Any] = {"rc": r["rc"], "process_wall_s": r["wall_s"], "interrupted": r["interrupted"]}
        try:
            rep = json.loads(r["stdout"])
        except ValueError:
            entry["error"] = "no JSON report: " + r["stderr_tail"][-600:]
            result["engines"][engine] = entry
            return None
        try:
            ev = json.loads(evf.read_text())
        except (OSError, ValueError):
            ev = {}
        entry["stats"] = rep.get("stats")
        entry["timeline"] = timeline_figures(ev)
        entry["verdicts"] = {f"{x['path']} {x['version']}": x["verdict"] for x in rep["runs"]}
        entry["kernel_us"] = {x["job"]: x["kernel_us"] for x in rep["runs"] if x.get("job")}
        entry["models"] = rep.get("models")
        entry["claims_not_holding"] = len(rep.get("claims_not_holding") or [])
        result["engines"][engine] = entry
        (out / f"timeline_{engine}.txt").write_text(chart(f"ktui verify --engine {engine}", entry["timeline"]))
        rep["_cache"] = str(cache)
        return rep

    reports: dict[str, Any] = {}
    if "local" in engines:
        later = a.serial_budget + 40 + (130 if "ray" in engines else 0)  # local first: it is the measurement
        reports["local"] = verify_phase("local", max(60.0, left() - later))
    # the serial baseline: the same jobs, one `ktui repro` after the other, cold
    jobs: list[tuple[str, str, str]] = []
    first = reports.get("local")
    if first:
        seen = set()
        for x in first["runs"]:
            if x.get("job") and x["job"] not in seen:
                seen.add(x["job"])
                jobs.append((x["job"], x["real"] or x["path"], x["version"]))
    serial: list[dict[str, Any]] = []
    scache = tmp / "cache_serial"
    t_serial = time.monotonic()
    for job, trace, version in jobs:
        remaining = a.serial_budget - (time.monotonic() - t_serial)
        if remaining < 5:
            break
        r = run([sys.executable, "-m", "ktui", "repro", trace, "--version", version, "--json", "--trials",
                 str(a.trials), *extra], env_for(scache), remaining, log)
        k_us = None
        try:
            d = json.loads(r["stdout"])
            k_us = ((d.get("result") or {}).get("timing") or {}).get("kernel", {}).get("mean_us")
        except (ValueError, AttributeError):
            pass
        serial.append({"job": job, "trace": trace, "version": version, "wall_s": r["wall_s"],
                       "interrupted": r["interrupted"], "kernel_us": k_us})
    done = [s for s in serial if not s["interrupted"]]
    if jobs:
        mean = statistics.mean(s["wall_s"] for s in done) if done else None
        result["serial"] = {
            "kernels": len(jobs), "measured": len(done), "measured_wall_s": round(sum(s["wall_s"] for s in done), 2),
            "mean_per_kernel_s": round(mean, 2) if mean else None,
            "total_s": round(mean * len(jobs), 1) if mean else None,
            "total_is": "measured" if len(done) == len(jobs) else f"extrapolated from {len(done)} of {len(jobs)}",
            "runs": serial,
        }
        lw = (result["engines"].get("local") or {}).get("stats", {}).get("wall_s")
        if lw and mean:
            result["serial"]["speedup_of_verify_local"] = round(mean * len(jobs) / lw, 2)
    # timing identity: verify's kernel times vs a single `ktui repro --fresh` (builds cached)
    ident = []
    if first:
        lus = result["engines"]["local"]["kernel_us"]
        for s in serial:
            if s.get("kernel_us") and lus.get(s["job"]):
                ident.append({"job": s["job"], "version": s["version"], "verify_us": lus[s["job"]],
                              "repro_us": s["kernel_us"], "ratio": round(lus[s["job"]] / s["kernel_us"], 4),
                              "repro": "cold serial"})
        cands = [(j, t, v) for j, t, v in jobs if lus.get(j) and j not in {x["job"] for x in ident}]
        for job, trace, version in cands[: a.identity]:
            if left() < 60 * len(engines[1:]) + 30:
                break
            r = run([sys.executable, "-m", "ktui", "repro", trace, "--version", version, "--json", "--fresh",
                     "--trials", str(a.trials), *extra], env_for(Path(first["_cache"])), 40, log)
            try:
                d = json.loads(r["stdout"])
                k = d["result"]["timing"]["kernel"]["mean_us"]
            except (ValueError, KeyError, TypeError):
                continue
            ident.append({"job": job, "version": version, "verify_us": lus[job], "repro_us": k,
                          "ratio": round(lus[job] / k, 4), "repro": "--fresh, build cached"})
    result["identity"] = ident
    for engine in engines:
        if engine == "local":
            continue
        dl = left() - 10
        if dl < 40:
            result["engines"][engine] = {"skipped": f"only {dl:.0f} s left in the budget"}
            continue
        reports[engine] = verify_phase(engine, dl)
    if "local" in reports and "ray" in reports and reports["local"] and reports["ray"]:
        lv = result["engines"]["local"]["verdicts"]
        rv = result["engines"]["ray"]["verdicts"]
        result["verdicts_equal_local_ray"] = sorted(k for k in lv if lv.get(k) != rv.get(k)) or "all equal"
    result["bench_wall_s"] = round(time.monotonic() - t_start, 1)
    for rec in log:
        rec.pop("stdout", None)
    (out / "bench_verify.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "bench_verify.md").write_text(summary_md(result))
    print(summary_md(result))
    return 0


def summary_md(r: dict[str, Any]) -> str:
    lines = ["# ktui verify on a cold CUDA sweep", "",
             f"GPUs: {', '.join(r.get('gpus') or [])}; CPU cores: {r.get('cpu_count')}", ""]
    for name, e in r.get("engines", {}).items():
        lines.append(f"## --engine {name}")
        if e.get("skipped") or e.get("error"):
            lines.append(f"- {e.get('skipped') or e.get('error')}")
            lines.append("")
            continue
        s, t = e.get("stats") or {}, e.get("timeline") or {}
        lines.append(f"- {s.get('runs')} rows, {s.get('kernels')} distinct kernels ({s.get('duplicates')} duplicates), "
                     f"{t.get('compiled')} compiled; built {s.get('built')}, timed {s.get('timed')}, "
                     f"failed {s.get('failed')}" + (" — INTERRUPTED at the deadline" if e.get("interrupted") else ""))
        lines.append(f"- wall {s.get('wall_s')} s (process {e.get('process_wall_s')} s); physical floor "
                     f"(total build time {t.get('build_seconds_total')} s / {t.get('cores')} cores) = "
                     f"{t.get('floor_s')} s; wall / floor = {t.get('wall_over_floor')} (target <= 1.2)")
        lines.append(f"- first kernel ready (built, or nothing to build) at {t.get('first_build_landed_s')} s; max builds in flight "
                     f"{t.get('max_builds_in_flight')}; {t.get('timings_per_min')} timings/min")
        for slot, f in (t.get("slots") or {}).items():
            lines.append(f"- {slot}: {f['timings']} timings, busy {f['busy_fraction']} of the wall once the first "
                         f"kernel was ready (target >= 0.8); in GPU stages {f['gpu_stage_fraction']}")
        lines.append(f"- claims that do not hold: {e.get('claims_not_holding')}")
        lines.append("")
    s = r.get("serial")
    if s:
        lines.append("## serial loop of `ktui repro` (cold)")
        lines.append(f"- {s['measured']} of {s['kernels']} kernels in {s['measured_wall_s']} s, "
                     f"{s['mean_per_kernel_s']} s each; total {s['total_s']} s ({s['total_is']})")
        if s.get("speedup_of_verify_local"):
            lines.append(f"- verify (local) is {s['speedup_of_verify_local']}x faster")
        lines.append("")
    if r.get("identity"):
        lines.append("## each kernel's time: verify vs a single `ktui repro`")
        for x in r["identity"]:
            lines.append(f"- {x['version']} {x['job'][:10]}: verify {x['verify_us']:.2f} us, repro {x['repro_us']:.2f} us "
                         f"({x['repro']}), ratio {x['ratio']}")
        lines.append("")
    if "verdicts_equal_local_ray" in r:
        lines.append(f"verdicts local vs ray: {r['verdicts_equal_local_ray']}")
    lines.append("")
    lines.append("## commands")
    for c in r.get("commands", []):
        lines.append(f"- `{c['cmd']}` -> rc {c['rc']}, {c['wall_s']} s" + (" (interrupted)" if c.get("interrupted") else ""))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
