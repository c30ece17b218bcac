"""GPU verification of `ktui repro` (issue 4, item 8). Needs a CUDA GPU, torch, ninja, nvcc.

    python benchmarks/bench_repro.py --out OUTDIR [--trace traces/popcorn_l1_p27_grok-4.3.jsonl]

Steps, all on the bundled seed trace, with an empty cache directory to start:

1. cold: ``python -m ktui repro TRACE --version vK --json`` for v4, v2, v3 and v1, started together
   (v4's wall time includes its nvcc compile; v2 / v3 must be "reproduced: fails the same way");
2. warm, new process: the v4 command again with ``--fresh`` (build cached, everything re-measured),
   three times;
3. warm worker: one WarmWorker, v4 re-run 6 times through the API (the first starts the worker);
   the last 5 give the spread over 5 repeated runs (coefficient of variation of the means);
4. the other timing methods on v4: do_bench, cuda_graph, host;
5. a control: a GPU-bound elementwise op (~30 us) timed 5 times the same way;
6. the empty-op floor reported by the timer (busy queue vs naive), from every run.

Writes OUTDIR/repro_gpu.json (everything) and OUTDIR/repro_gpu.md (the summary with the
exact commands), plus OUTDIR/repro_v4_table.txt (the Rich table, from the cache).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_TRACE = "traces/popcorn_l1_p27_grok-4.3.jsonl"


def sh(cmd: list[str], env: dict[str, str], timeout: float = 500) -> dict:
    t0 = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)
        rc, stdout, stderr = out.returncode, out.stdout, out.stderr
    except subprocess.TimeoutExpired as exc:
        rc, stdout, stderr = "timeout", exc.stdout or "", exc.stderr or ""
    return {"cmd": " ".join(cmd), "rc": rc, "wall_s": round(time.monotonic() - t0, 3), "stdout": stdout,
            "stderr": stderr[-3000:] if isinstance(stderr, str) else ""}


def brief(report: dict) -> dict:
    """The figures that matter from a `ktui repro --json` object (or a ReproReport.to_dict())."""
    res = report.get("result") or {}
    t = res.get("timing") or {}
    return {
        "version": report.get("version"), "verdict": report.get("verdict"), "reason": report.get("reason"),
        "cached": report.get("cached"),
        "status": res.get("status"), "failure": {k: v for k, v in (res.get("failure") or {}).items() if k != "detail"},
        "environment": res.get("environment"), "build": res.get("build"), "stages": res.get("stages"),
        "correctness": {k: v for k, v in (res.get("correctness") or {}).items() if k != "seeds"},
        "timing": {k: v for k, v in t.items() if not k.endswith("samples_us")},
        "memory": res.get("memory"),
        "launches": {k: v for k, v in (res.get("launches") or {}).items()},
        "checks": res.get("checks"), "worker_seconds": res.get("seconds"), "wall_seconds": res.get("wall_seconds"),
        "rows": [{k: r.get(k) for k in ("key", "recorded_text", "reproduced_text", "ratio", "verdict", "note")}
                 for r in (report.get("comparison") or {}).get("rows", [])],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache_dir = tempfile.mkdtemp(prefix="ktui-bench-cache-")
    os.environ["KTUI_CACHE_DIR"] = cache_dir
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    py = sys.executable
    data: dict = {"trace": args.trace, "cache_dir": cache_dir, "python": sys.version.split()[0], "steps": {}}

    def save() -> None:
        (out / "repro_gpu.json").write_text(json.dumps(data, indent=1, default=str))

    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        data["nvidia_smi"] = smi.stdout.strip()
    except Exception as exc:  # noqa: BLE001
        data["nvidia_smi"] = f"unavailable: {exc}"

    # 1. cold ----------------------------------------------------------------------------------
    print("[1] cold runs (v4, v2, v3, v1 together)", flush=True)
    cold = {}
    procs = {}
    t0 = time.monotonic()
    for v in ("v4", "v2", "v3", "v1"):
        cmd = [py, "-m", "ktui", "repro", args.trace, "--version", v, "--json"]
        procs[v] = (cmd, time.monotonic(), subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                                            stderr=subprocess.PIPE, text=True))
    for v, (cmd, start, p) in procs.items():
        try:
            so, se = p.communicate(timeout=560)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
        wall = round(time.monotonic() - start, 3)
        entry = {"cmd": " ".join(cmd).replace(py, "python"), "rc": p.returncode, "wall_s": wall, "stderr": se[-2000:]}
        try:
            entry["report"] = brief(json.loads(so))
        except ValueError:
            entry["stdout"] = so[-3000:]
        cold[v] = entry
        print(f"    {v}: rc={p.returncode} wall={wall:.1f}s verdict={entry.get('report', {}).get('verdict')}",
              flush=True)
    data["steps"]["cold"] = cold
    data["steps"]["cold_total_s"] = round(time.monotonic() - t0, 3)
    save()

    # 2. warm, new process ------------------------------------------------------------------
    print("[2] warm build, new process (--fresh) x3", flush=True)
    warm_proc = []
    for _ in range(3):
        r = sh([py, "-m", "ktui", "repro", args.trace, "--version", "v4", "--fresh", "--json"], env)
        e = {"cmd": r["cmd"].replace(py, "python"), "rc": r["rc"], "wall_s": r["wall_s"]}
        try:
            e["report"] = brief(json.loads(r["stdout"]))
        except ValueError:
            e["stdout"], e["stderr"] = r["stdout"][-2000:], r["stderr"]
        warm_proc.append(e)
        print(f"    wall={r['wall_s']:.2f}s", flush=True)
    data["steps"]["warm_new_process"] = warm_proc
    save()

    # 3. warm worker ---------------------------------------------------------------------------
    print("[3] warm worker x(1 + repeats)", flush=True)
    from ktui.repro.api import ReproOptions, reproduce
    from ktui.repro.runner import WarmWorker
    from ktui.trace import load

    run = load(str(REPO / args.trace))
    kv = run.kernel("v4")
    ww = []
    with WarmWorker() as worker:
        for i in range(1 + args.repeats):
            t = time.monotonic()
            rep = reproduce(run, kv, ReproOptions(fresh=True), worker=worker)
            wall = round(time.monotonic() - t, 3)
            ww.append({"i": i, "wall_s": wall, "warm": rep.result.get("warm"), "report": brief(rep.to_dict())})
            print(f"    run {i}: wall={wall:.2f}s warm={rep.result.get('warm')} verdict={rep.verdict}", flush=True)
        data["steps"]["warm_worker"] = ww
        save()
        # 4. other timing methods --------------------------------------------------------------
        print("[4] timing methods", flush=True)
        methods = {}
        for m in ("do_bench", "cuda_graph", "host"):
            t = time.monotonic()
            rep = reproduce(run, kv, ReproOptions(fresh=True, method=m), worker=worker)
            methods[m] = {"wall_s": round(time.monotonic() - t, 3), "report": brief(rep.to_dict())}
            tk = rep.result.get("timing") or {}
            print(f"    {m}: kernel={tk.get('kernel', {}).get('mean_us') if tk.get('kernel') else tk.get('error')}",
                  flush=True)
        data["steps"]["methods"] = methods
        save()
        # 5. control: a GPU-bound elementwise op (~30 us) through the same timer, 5 runs
        print("[5] control: GPU-bound elementwise kernel x5", flush=True)
        ctl = []
        req = {"kernel_code": CONTROL_KERNEL, "reference_source": CONTROL_REF, "device": "cuda",
               "method": "cuda_event", "trials": 100, "build_root": os.path.join(cache_dir, "build")}
        for i in range(args.repeats):
            t = time.monotonic()
            res = worker.run(req, run_timeout=120, compile_timeout=300)
            ctl.append({"wall_s": round(time.monotonic() - t, 3),
                        "kernel": (res.get("timing") or {}).get("kernel"),
                        "reference": (res.get("timing") or {}).get("reference"),
                        "status": res.get("status"), "failure": res.get("failure")})
            print(f"    run {i}: kernel={(ctl[-1]['kernel'] or {}).get('mean_us')}", flush=True)
        data["steps"]["control"] = ctl
    save()

    # table, from the cache -----------------------------------------------------------------
    r = sh([py, "-m", "ktui", "repro", args.trace, "--version", "v4"], env)
    (out / "repro_v4_table.txt").write_text(f"$ python -m ktui repro {args.trace} --version v4\n" + r["stdout"]
                                            + r["stderr"])
    r = sh([py, "-m", "ktui", "repro", args.trace, "--all"], env)
    (out / "repro_all_table.txt").write_text(f"$ python -m ktui repro {args.trace} --all\n" + r["stdout"]
                                             + r["stderr"])

    # summary ---------------------------------------------------------------------------------
    data["summary"] = summarize(data, args.repeats)
    save()
    (out / "repro_gpu.md").write_text(markdown(data))
    print(json.dumps(data["summary"], indent=1, default=str))
    return 0


CONTROL_REF = """
import torch, torch.nn as nn
N = 1 << 24  # 64 MiB in, 64 MiB out
class Model(nn.Module):
    def forward(self, x):
        return x * 2.0
def get_inputs():
    return [torch.randn(N, device="cuda")]
def get_init_inputs():
    return []
"""
CONTROL_KERNEL = """
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x + x
"""


def _cv(xs: list[float]) -> float | None:
    xs = [x for x in xs if isinstance(x, (int, float))]
    if len(xs) < 2:
        return None
    return statistics.stdev(xs) / statistics.mean(xs)


def summarize(data: dict, repeats: int) -> dict:
    s: dict = {}
    cold = data["steps"].get("cold", {})
    v4 = (cold.get("v4") or {}).get("report") or {}
    s["cold_v4_wall_s"] = (cold.get("v4") or {}).get("wall_s")
    s["cold_v4_build_s"] = ((v4.get("stages") or {}).get("build") or {}).get("seconds")
    s["verdicts"] = {v: ((cold.get(v) or {}).get("report") or {}).get("verdict") for v in ("v4", "v2", "v3", "v1")}
    s["failures"] = {v: ((cold.get(v) or {}).get("report") or {}).get("failure", {}).get("message")
                     for v in ("v2", "v3")}
    walls = [e["wall_s"] for e in data["steps"].get("warm_new_process", [])]
    s["warm_new_process_wall_s"] = walls
    ww = data["steps"].get("warm_worker", [])
    s["warm_worker_wall_s"] = [e["wall_s"] for e in ww]
    rep = ww[1:1 + repeats]
    km = [((e["report"]["timing"] or {}).get("kernel") or {}).get("mean_us") for e in rep]
    kmed = [((e["report"]["timing"] or {}).get("kernel") or {}).get("median_us") for e in rep]
    rmean = [((e["report"]["timing"] or {}).get("reference") or {}).get("mean_us") for e in rep]
    s["repeat_kernel_mean_us"] = km
    s["repeat_kernel_median_us"] = kmed
    s["repeat_ref_mean_us"] = rmean
    s["cv_kernel_mean"] = _cv(km)
    s["cv_kernel_median"] = _cv(kmed)
    s["cv_ref_mean"] = _cv(rmean)
    s["within_run_cv_kernel"] = [((e["report"]["timing"] or {}).get("kernel") or {}).get("cv") for e in rep]
    floors = [(e["report"]["timing"] or {}).get("floor") for e in ww if (e["report"]["timing"] or {}).get("floor")]
    for k in ("empty_busy_us", "fill_busy_us", "fill_events_naive_us", "fill_host_naive_us"):
        s["floor_" + k] = [f.get(k) for f in floors]
    last = ww[-1]["report"] if ww else v4
    s["v4_last"] = {"kernel": (last.get("timing") or {}).get("kernel"),
                    "reference": (last.get("timing") or {}).get("reference"),
                    "speedup": (last.get("timing") or {}).get("speedup"), "memory": last.get("memory"),
                    "launches": {k: v for k, v in (last.get("launches") or {}).items() if k in
                                 ("num_kernels", "ref_num_kernels", "fusion_ratio")},
                    "checks": [(c["name"], c["ok"]) for c in last.get("checks") or []],
                    "environment": last.get("environment")}
    ctl = data["steps"].get("control") or []
    if ctl:
        km = [(e.get("kernel") or {}).get("mean_us") for e in ctl]
        kmed = [(e.get("kernel") or {}).get("median_us") for e in ctl]
        s["control"] = {"kernel_mean_us": km, "kernel_median_us": kmed, "cv_kernel_mean": _cv(km),
                        "cv_kernel_median": _cv(kmed),
                        "within_run_cv": [(e.get("kernel") or {}).get("cv") for e in ctl]}
    s["methods"] = {m: ((e["report"].get("timing") or {}).get("kernel") or {}).get("mean_us")
                    or (e["report"].get("timing") or {}).get("error")
                    for m, e in data["steps"].get("methods", {}).items()}
    return s


def markdown(data: dict) -> str:
    s = data["summary"]
    env = (s.get("v4_last") or {}).get("environment") or {}
    lines = [
        "# ktui repro on a GPU (issue 4, item 8)",
        "",
        f"Machine: {env.get('gpu')} · driver {env.get('driver')} · torch {env.get('torch')} · CUDA {env.get('cuda')}"
        f" · {env.get('arch')} · Python {env.get('python')} (nvidia-smi: {data.get('nvidia_smi')})",
        "",
        "Command (from the repository root, on the device):",
        "",
        "    python benchmarks/bench_repro.py --out $OUT",
        "",
        "which runs, with an empty `KTUI_CACHE_DIR`:",
        "",
    ]
    for v in ("v4", "v2", "v3", "v1"):
        c = data["steps"]["cold"].get(v, {})
        lines.append(f"    {c.get('cmd')}")
    lines += ["", "then `python -m ktui repro ... --version v4 --fresh --json` (x3) and the API with a WarmWorker.", ""]
    lines += ["## Results", "", "| figure | value |", "|---|---|"]

    def row(k: str, v: object) -> None:
        lines.append(f"| {k} | {v} |")

    row("verdicts (v4, v2, v3, v1)", ", ".join(f"{k}: {v}" for k, v in s["verdicts"].items()))
    for k, v in (s.get("failures") or {}).items():
        row(f"{k} failure reproduced", v)
    last = s.get("v4_last") or {}
    kk, rr = last.get("kernel") or {}, last.get("reference") or {}
    if kk:
        row("v4 kernel mean / median / std / min / max (μs)",
            f"{kk['mean_us']:.2f} / {kk['median_us']:.2f} / {kk['std_us']:.2f} / {kk['min_us']:.2f} / {kk['max_us']:.2f}")
        row("reference mean / median / std / min / max (μs)",
            f"{rr['mean_us']:.2f} / {rr['median_us']:.2f} / {rr['std_us']:.2f} / {rr['min_us']:.2f} / {rr['max_us']:.2f}")
        row("speedup (ref mean / kernel mean)", f"{last.get('speedup')}")
    row("memory peak kernel / ref (MiB)", f"{(last.get('memory') or {}).get('kernel_peak_mb')} / "
        f"{(last.get('memory') or {}).get('ref_peak_mb')}")
    row("launches per forward kernel / ref", f"{(last.get('launches') or {}).get('num_kernels')} / "
        f"{(last.get('launches') or {}).get('ref_num_kernels')}")
    row("honesty checks", ", ".join(f"{n}={'ok' if ok else ('n/a' if ok is None else 'FLAG')}"
                                    for n, ok in last.get("checks") or []))
    row("cold run v4, new process, empty cache (s)", f"{s['cold_v4_wall_s']} (build stage {s['cold_v4_build_s']} s)")
    row("warm build, new process (s)", ", ".join(f"{x:.2f}" for x in s["warm_new_process_wall_s"]))
    row("warm worker re-runs (s; first starts the worker)", ", ".join(f"{x:.2f}" for x in s["warm_worker_wall_s"]))
    row(f"kernel mean over {len(s['repeat_kernel_mean_us'])} runs (μs)",
        ", ".join(f"{x:.2f}" for x in s["repeat_kernel_mean_us"] if x is not None))
    row("CV of kernel mean / median across runs", f"{_pct(s['cv_kernel_mean'])} / {_pct(s['cv_kernel_median'])}")
    row("CV of reference mean across runs", _pct(s["cv_ref_mean"]))
    row("within-run CV of the kernel", ", ".join(_pct(x) for x in s["within_run_cv_kernel"]))
    for k, label in (("empty_busy_us", "empty-op floor: nothing between the events, busy queue (the timer)"),
                     ("fill_busy_us", "1-element fill_, busy queue (the timer)"),
                     ("fill_events_naive_us", "1-element fill_, naive: synchronize, then events"),
                     ("fill_host_naive_us", "1-element fill_, naive: host clock around fill + synchronize")):
        row(label + " (μs)", ", ".join(f"{x:.2f}" for x in s["floor_" + k] if x is not None))
    ctl = s.get("control") or {}
    if ctl:
        row("control (GPU-bound elementwise, 5 runs): kernel mean (μs)",
            ", ".join(f"{x:.2f}" for x in ctl.get("kernel_mean_us", []) if x is not None))
        row("control: CV of kernel mean / median across runs",
            f"{_pct(ctl.get('cv_kernel_mean'))} / {_pct(ctl.get('cv_kernel_median'))}")
    row("other methods, v4 kernel mean (μs)", ", ".join(f"{k}: {v}" for k, v in (s.get("methods") or {}).items()))
    lines.append("")
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f} %"


if __name__ == "__main__":
    sys.exit(main())
