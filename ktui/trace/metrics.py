"""The final submission's metrics, with explicit units.

Times are stored in microseconds. PopcornBench writes milliseconds into fields named
``runtime_us`` (format doc, section 7): real PopcornBench results (V1) are converted x1000 and
say so; the hand-written V0 mock is converted only when the value is implausible (< 1 us).
KTBench's ``*_ms`` fields are labelled correctly and converted x1000 too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ktui.trace.model import OK, V0, Metric, Metrics, Run, ToolCall
from ktui.trace.words import NO_VALID_TIME, valid_time_us

GROUP_TITLES = {
    "timing": "timing (kernelbench.timing)",
    "correctness": "correctness",
    "precision": "numerical precision (eval_kernel_against_ref)",
    "memory": "gpu memory (extended_metrics.measure_memory)",
    "launches": "kernel launches / fusion (torch.profiler)",
    "sol": "SOL (speed-of-light, nsight_hardware_counters)",
    "roofline": "roofline / occupancy (nsight_hardware_counters)",
    "warp_stalls": "warp stalls (nsight)",
    "score": "scores",
}

_LABELS = {
    "max_abs_error": "max abs error", "mean_abs_error": "mean abs error",
    "max_rel_error": "max rel error", "mean_rel_error": "mean rel error",
    "kernel_peak_mb": "kernel peak", "ref_peak_mb": "ref peak", "ratio": "kernel / ref",
    "num_kernels": "kernel launches", "ref_num_kernels": "ref launches",
    "fusion_ratio": "fusion ratio (ref / kernel)", "total_cuda_time_us": "total cuda time",
    "sol_score": "SOL score (0-1)", "smem_per_block_bytes": "smem / block",
    "regs_per_thread": "regs / thread", "ld_sectors_per_req": "ld sectors / req",
    "st_sectors_per_req": "st sectors / req", "peak_bw_gbs": "peak bw",
    "dram_bandwidth_gbs": "dram bandwidth",
}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@lru_cache(maxsize=4096)  # a sweep repeats the same few dozen field names in every run
def unit_of(field: str) -> tuple[str, float]:
    """Canonical unit and scale for a field name."""
    f = field.lower()
    if f.endswith("_pct") or f.endswith("_pct_"):
        return "%", 1.0
    if f.endswith("_us"):
        return "us", 1.0
    if f.endswith("_ms"):
        return "us", 1000.0
    if f.endswith("_mb"):
        return "MB", 1.0
    if f.endswith("_bytes"):
        return "B", 1.0
    if f.endswith("_gbs"):
        return "GB/s", 1.0
    if "tflops" in f:
        return "TFLOP/s", 1.0
    if f.endswith("ratio") or f.startswith("speedup"):
        return "x", 1.0
    if f.endswith("_mj"):
        return "mJ", 1.0
    return "", 1.0


@lru_cache(maxsize=4096)
def _label(field: str) -> str:
    if field in _LABELS:
        return _LABELS[field]
    for suf in ("_pct", "_gbs", "_mb", "_us", "_bytes"):
        if field.endswith(suf):
            field = field[: -len(suf)] + (" %" if suf == "_pct" else "")
    return field.replace("_", " ")


def _group(metrics: Metrics, group: str, obj: Any, source_key: str, skip: tuple[str, ...] = ()) -> None:
    if not isinstance(obj, dict):
        return
    out = metrics.groups.setdefault(group, [])
    for k, v in obj.items():
        if k in skip or isinstance(v, (dict, list)):
            continue
        unit, scale = unit_of(k)
        if group == "warp_stalls":
            unit = "%"
        n = _num(v)
        val = v if scale == 1.0 or n is None else round(n * scale, 9)
        out.append(Metric(key=f"{group}.{k}", label=_label(k), value=val, unit=unit, recorded=v,
                          recorded_key=f"{source_key}.{k}",
                          recorded_unit="ms" if k.endswith("_ms") else unit or None))


def _runtime(m: Metrics, key: str, label: str, raw: Any, field: str, popcorn_ms: bool, v0: bool) -> float | None:
    n = _num(raw)
    if n is None:
        m.groups.setdefault("timing", []).append(
            Metric(key=key, label=label, value=None, unit="us", recorded=raw, recorded_key=field,
                   recorded_unit="us"))
        return None
    note = None
    if field.endswith("_ms"):
        us, unit = round(n * 1000.0, 9), "ms"
    elif popcorn_ms and (not v0 or n < 1.0):
        us, unit = round(n * 1000.0, 9), "ms"
        ok = valid_time_us(us)
        note = (f"recorded {n:g} under '{field.rsplit('.', 1)[-1]}' but PopcornBench stores milliseconds: "
                + (f"{ok:,.1f} us" if ok is not None else NO_VALID_TIME))
    else:
        us, unit = n, "us"
    m.groups.setdefault("timing", []).append(
        Metric(key=key, label=label, value=us, unit="us", recorded=raw, recorded_key=field,
               recorded_unit="us" if not field.endswith("_ms") else "ms", note=note))
    if unit == "ms" and note:
        m.groups["timing"][-1].recorded_unit = "us (really ms)"
    return us


def _stats(m: Metrics, prefix: str, stats: Any, field: str, popcorn_ms: bool, v0: bool) -> None:
    """runtime_stats {mean, std, min, max, num_trials} (ms, rounded to 3 significant figures)."""
    if not isinstance(stats, dict):
        return
    for k in ("mean", "median", "std", "min", "max"):
        raw = stats.get(k)
        key = f"timing.{prefix}{k}"
        if raw is None:
            m.groups.setdefault("timing", []).append(
                Metric(key=key, label=f"{prefix.replace('_', ' ')}{k}", value=None, unit="us", recorded=None,
                       recorded_key=f"{field}.{k}", recorded_unit="ms",
                       note="missing in the trace" if k == "median" else None))
            continue
        n = _num(raw)
        scale = 1000.0 if popcorn_ms and (not v0 or (n is not None and n < 1.0)) else 1.0
        m.groups.setdefault("timing", []).append(
            Metric(key=key, label=f"{prefix.replace('_', ' ')}{k}",
                   value=round(n * scale, 9) if n is not None else None,
                   unit="us", recorded=raw, recorded_key=f"{field}.{k}", recorded_unit="ms" if scale > 1 else "us"))
    if isinstance(stats.get("num_trials"), int):
        m.groups["timing"].append(Metric(key=f"timing.{prefix}trials", label=f"{prefix.replace('_', ' ')}trials",
                                         value=stats["num_trials"], recorded=stats["num_trials"],
                                         recorded_key=f"{field}.num_trials"))


def final_metrics(run: Run, submit: ToolCall) -> Metrics:
    res = submit.result
    assert res is not None
    m = Metrics(source=f"submit_kernel result (line {res.line})")
    eff = res.effect or {}
    meta = res.meta or {}
    diff_new: dict[str, Any] = {}
    for d in submit.diffs:
        if d.get("field") in ("kernel_submissions", "ktbench_submissions") and isinstance(d.get("new"), dict):
            diff_new = d["new"]
    v0 = run.variant == V0
    popcorn = "runtime_us" in eff or "runtime_us" in diff_new
    if popcorn:
        src_rt = ("result.runtime_us", eff.get("runtime_us")) if "runtime_us" in eff else \
            ("kernel_submissions.runtime_us", diff_new.get("runtime_us"))
        m.runtime_us = _runtime(m, "timing.runtime", "kernel runtime", src_rt[1], src_rt[0], True, v0)
        ref_raw = eff.get("ref_runtime_us", diff_new.get("ref_runtime_us"))
        ref_field = "result.ref_runtime_us" if "ref_runtime_us" in eff else "kernel_submissions.ref_runtime_us"
        if ref_raw is not None:
            m.ref_runtime_us = _runtime(m, "timing.ref_runtime", "ref runtime", ref_raw, ref_field, True, v0)
        sp = _num(eff.get("speedup", diff_new.get("speedup")))
        if sp is None and m.runtime_us and m.ref_runtime_us:
            sp = m.ref_runtime_us / m.runtime_us
        m.speedup = sp
        if sp is not None:
            m.groups["timing"].append(Metric(key="timing.speedup", label="speedup", value=sp, unit="x",
                                             recorded=eff.get("speedup", diff_new.get("speedup")),
                                             recorded_key="speedup"))
        _stats(m, "", eff.get("runtime_stats"), "result.runtime_stats", True, v0)
        _stats(m, "ref_", eff.get("ref_runtime_stats"), "result.ref_runtime_stats", True, v0)
        corr = diff_new.get("correctness")
        m.correct = corr if isinstance(corr, bool) else (submit.status == OK if res else None)
        trials = eff.get("correctness_trials")
        if isinstance(trials, dict):
            m.groups.setdefault("correctness", []).append(
                Metric(key="correctness.trials", label="correctness trials",
                       value=f"{trials.get('passed')}/{trials.get('total')}", recorded=trials,
                       recorded_key="result.correctness_trials"))
        _group(m, "precision", eff.get("numerical_precision"), "result.numerical_precision")
        _group(m, "memory", eff.get("memory"), "result.memory")
        _group(m, "launches", eff.get("kernel_launch_stats"), "result.kernel_launch_stats")
        _group(m, "sol", eff.get("sol"), "result.sol")
        _group(m, "roofline", eff.get("roofline"), "result.roofline")
        _group(m, "warp_stalls", eff.get("warp_stalls_pct") or eff.get("warp_stalls"), "result.warp_stalls_pct")
    elif meta:
        perf = meta.get("performance")
        perf = perf if isinstance(perf, dict) else {}
        if "runtime_mean_ms" in perf:
            m.runtime_us = _runtime(m, "timing.runtime", "kernel runtime (mean)", perf.get("runtime_mean_ms"),
                                    "meta.performance.runtime_mean_ms", False, False)
        if "ref_runtime_mean_ms" in perf:
            m.ref_runtime_us = _runtime(m, "timing.ref_runtime", "ref runtime (mean)",
                                        perf.get("ref_runtime_mean_ms"),
                                        "meta.performance.ref_runtime_mean_ms", False, False)
        sp = _num(perf.get("speedup_vs_ref", meta.get("speedup_vs_ref")))
        m.speedup = sp
        if sp is not None:
            m.groups.setdefault("timing", []).append(Metric(key="timing.speedup", label="speedup", value=sp,
                                                            unit="x", recorded=sp, recorded_key="speedup_vs_ref"))
        cr = _num(meta.get("correctness_rate"))
        if cr is not None:
            m.correct = cr >= 1.0
        score = {k: meta[k] for k in ("correctness_rate", "stress_pass_rate", "sol_score", "final_score",
                                      "compiled", "excessive_speedup_flagged") if k in meta}
        _group(m, "score", score, "meta")
        _group(m, "sol", {k: perf[k] for k in ("sol_score", "sol_bottleneck", "compute_util", "memory_util")
                          if k in perf}, "meta.performance")
        mem = {k: perf[k] for k in ("peak_memory_bytes", "memory_ratio") if k in perf}
        _group(m, "memory", mem, "meta.performance")
        _group(m, "launches", {k: perf[k] for k in ("num_kernels", "ref_num_kernels", "fusion_ratio") if k in perf},
               "meta.performance")
        _group(m, "energy", {k: perf[k] for k in ("energy_mj", "energy_ratio") if k in perf}, "meta.performance")
        if m.correct is None:
            m.correct = submit.status == OK
    else:
        m.correct = submit.status == OK
    m.groups = {k: v for k, v in m.groups.items() if v}
    return m
