"""Per-launch figures and per-forward sums from parsed ncu launches.

Every figure is computed from the metrics ncu reported; when an input is missing the figure
is ``None`` (shown as "n/a"). Units: seconds, bytes, FLOP, FLOP/s, bytes/s, % (0-100).

Per forward (all launches of one profiled forward):

- summed: duration, DRAM bytes, FLOP per precision, tensor instructions, load/store sectors
  and requests, stall samples;
- derived from the sums: achieved DRAM bandwidth, FLOP/s, arithmetic intensity, sectors per
  request, stall shares;
- duration-weighted means: SM / memory / DRAM throughput %, occupancy, L1 / L2 hit rates,
  pipe utilisation;
- of the longest launch: registers / thread, shared memory / block, block and grid size, and
  the device peaks (the same for every launch up to clock changes).
"""

from __future__ import annotations

from typing import Any

from ktui.repro.profile import metrics as M
from ktui.repro.profile.parse import Launch
from ktui.repro.profile.roofline import classify


def _n(x: Any) -> float | None:
    return x if isinstance(x, float) else (float(x) if isinstance(x, int) and not isinstance(x, bool) else None)


def _div(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _mul(*xs: float | None) -> float | None:
    out = 1.0
    for x in xs:
        if x is None:
            return None
        out *= x
    return out


def first(launch: Launch, *names: str) -> float | None:
    """The first of these metrics ncu reported (alternative names across ncu versions)."""
    for n in names:
        v = launch.num(n)
        if v is not None:
            return v
    return None


def sass_count(launch: Launch, prec: str, op: str) -> float | None:
    """Predicated-on thread instructions of one op: the sum itself, or rate per cycle x cycles."""
    sm_sum, smsp_sum, per_cycle = M.sass_op_alternatives(prec, op)
    v = first(launch, sm_sum, smsp_sum)
    if v is not None:
        return v
    rate, cycles = launch.num(per_cycle), launch.num(M.SMSP_CYCLES)
    return rate * cycles if rate is not None and cycles is not None else None


def flop(launch: Launch, prec: str) -> float | None:
    """FLOP of one precision as ncu's roofline counts them: add + mul + 2 x fma (thread instructions,
    predicated on; x2 for FP16, whose instructions work on half2 pairs). None when none of the three
    counters was collected."""
    add, mul, fma = (sass_count(launch, prec, op) for op in ("add", "mul", "fma"))
    if add is None and mul is None and fma is None:
        return None
    w = 2.0 if prec == "h" else 1.0  # FP16 instructions are packed half2: 2 lanes each (ncu's _x2 / _x4)
    return w * ((add or 0.0) + (mul or 0.0) + 2.0 * (fma or 0.0))


def tensor_flop(launch: Launch) -> float | None:
    vals = [launch.num(m) for m in M.TENSOR_OPS]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def stall_counts(launch: Launch) -> tuple[dict[str, float], str]:
    """Stall reason -> samples (or ratio) from the best family present, and the family's name."""
    for prefix, suffix in M.STALL_PREFIXES:
        found: dict[str, float] = {}
        for name, v in launch.metrics.items():
            if not name.startswith(prefix) or not isinstance(v, float) or not name.endswith(suffix):
                continue
            reason = name[len(prefix): len(name) - len(suffix) if suffix else None]
            if reason in M.NOT_STALLS or reason.endswith("_not_issued") or not reason or "." in reason:
                continue
            found[reason] = v
        if found:
            return found, prefix + "<reason>" + suffix
    return {}, ""


def per_issue(launch: Launch) -> dict[str, float]:
    """ncu's WarpStateStats ratios: cycles a warp spent stalled on each reason per issued
    instruction (can exceed 1; x100 they are not percentages of anything)."""
    pre, suf = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    out = {}
    for name, v in launch.metrics.items():
        if name.startswith(pre) and name.endswith(suf) and isinstance(v, float):
            r = name[len(pre): -len(suf)]
            if r not in M.NOT_STALLS:
                out[r] = v
    return out


def kernel_summary(launch: Launch) -> dict[str, Any]:
    g = launch.num
    dur = g(M.DURATION)
    dram_bytes = g(M.DRAM_BYTES)
    if dram_bytes is None and (g(M.DRAM_READ) is not None or g(M.DRAM_WRITE) is not None):
        dram_bytes = (g(M.DRAM_READ) or 0.0) + (g(M.DRAM_WRITE) or 0.0)
    fl: dict[str, float | None] = {p: flop(launch, c) for p, c in M.PRECISIONS.items()}
    fl["tensor"] = tensor_flop(launch)
    sm_hz = g(M.SM_HZ)
    peak_bw = _mul(g(M.DRAM_PEAK_PER_CYCLE), g(M.DRAM_HZ))
    peaks: dict[str, float | None] = {p: _mul(4.0 if c == "h" else 2.0, g(M.sass_peak(c)), sm_hz)
                                      for p, c in M.PRECISIONS.items()}
    peaks["tensor"] = _mul(first(launch, *M.TENSOR_PEAKS), sm_hz)
    smem = g(M.SMEM)
    if smem is None and (g(M.SMEM_STATIC) is not None or g(M.SMEM_DYNAMIC) is not None):
        smem = (g(M.SMEM_STATIC) or 0.0) + (g(M.SMEM_DYNAMIC) or 0.0)
    pipes = {p: g(m) for p, m in M.PIPES.items() if g(m) is not None}
    dom = max(pipes.items(), key=lambda kv: kv[1]) if pipes else None
    stalls, family = stall_counts(launch)
    achieved_bw = g(M.DRAM_BPS)
    if achieved_bw is None:
        achieved_bw = _div(dram_bytes, dur)
    out: dict[str, Any] = {
        "id": launch.id, "name": launch.name, "block": launch.block, "grid": launch.grid,
        "duration_s": dur,
        "sm_pct": g(M.SM_PCT), "mem_pct": g(M.MEM_PCT), "dram_pct": first(launch, M.DRAM_PCT, M.DRAM_PCT_OLD),
        "dram_bytes": dram_bytes, "dram_bps": achieved_bw,
        "flop": fl, "flops": {p: _div(v, dur) for p, v in fl.items()},
        "occupancy_pct": g(M.OCCUPANCY), "theoretical_occupancy_pct": g(M.THEORETICAL_OCCUPANCY),
        "regs_per_thread": g(M.REGS), "smem_per_block_bytes": smem, "block_size": g(M.BLOCK),
        "grid_size": g(M.GRID), "sm_count": g(M.SM_COUNT),
        "l1_hit_pct": g(M.L1_HIT), "l2_hit_pct": g(M.L2_HIT),
        "ld_sectors": g(M.LD_SECTORS), "ld_requests": g(M.LD_REQUESTS),
        "st_sectors": g(M.ST_SECTORS), "st_requests": g(M.ST_REQUESTS),
        "pipes": pipes, "dominant_pipe": dom[0] if dom else None, "dominant_pipe_pct": dom[1] if dom else None,
        "stalls": stalls, "stall_family": family,
        "stall_per_issue": per_issue(launch),
        "peak_dram_bps": peak_bw, "peak_flops": peaks, "sm_hz": sm_hz, "dram_hz": g(M.DRAM_HZ),
    }
    return out


def _wmean(ks: list[dict[str, Any]], key: str) -> float | None:
    """Duration-weighted mean of a per-launch figure over the launches that have it."""
    num = den = 0.0
    plain: list[float] = []
    for k in ks:
        v = _n(k.get(key))
        if v is None:
            continue
        plain.append(v)
        d = _n(k.get("duration_s"))
        if d:
            num += v * d
            den += d
    if den > 0:
        return num / den
    return sum(plain) / len(plain) if plain else None


def _sum(ks: list[dict[str, Any]], key: str, sub: str | None = None) -> float | None:
    vals = [_n((k.get(key) or {}).get(sub) if sub else k.get(key)) for k in ks]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def top_stalls(counts: dict[str, float], n: int = 5) -> list[dict[str, Any]]:
    """The n largest stall reasons as a share (%) of all stall samples (shares sum to <= 100)."""
    total = sum(v for v in counts.values() if v > 0)
    if total <= 0:
        return []
    ranked = sorted(((r, v) for r, v in counts.items() if v > 0), key=lambda rv: (-rv[1], rv[0]))
    return [{"reason": r, "share_pct": 100.0 * v / total, "samples": v} for r, v in ranked[:n]]


def forward_summary(kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """One forward's figures from its launches' summaries (see the module docstring)."""
    ks = [k for k in kernels]
    if not ks:
        return {"launches": 0}
    longest = max(ks, key=lambda k: _n(k.get("duration_s")) or 0.0)
    dur = _sum(ks, "duration_s")
    dram_bytes = _sum(ks, "dram_bytes")
    precs = (*M.PRECISIONS, "tensor")
    flop_ = {p: _sum(ks, "flop", p) for p in precs}
    flops = {p: _div(v, dur) for p, v in flop_.items()}
    peak_bw = _n(longest.get("peak_dram_bps"))
    peak_flops = {p: _n((longest.get("peak_flops") or {}).get(p)) for p in precs}
    per_issue_fwd: dict[str, float] = {}
    for r in {r for k in ks for r in (k.get("stall_per_issue") or {})}:
        v = _wmean([{"duration_s": k.get("duration_s"), "v": (k.get("stall_per_issue") or {}).get(r)} for k in ks],
                   "v")
        if v is not None:
            per_issue_fwd[r] = v
    stalls: dict[str, float] = {}
    fams = {k.get("stall_family") for k in ks if k.get("stall_family")}
    for k in ks:
        for r, v in (k.get("stalls") or {}).items():
            stalls[r] = stalls.get(r, 0.0) + v
    pipes: dict[str, float] = {}
    for p in {p for k in ks for p in (k.get("pipes") or {})}:
        v = _wmean([{"duration_s": k.get("duration_s"), "v": (k.get("pipes") or {}).get(p)} for k in ks], "v")
        if v is not None:
            pipes[p] = v
    dom = max(pipes.items(), key=lambda kv: kv[1]) if pipes else None
    sm_pct, mem_pct = _wmean(ks, "sm_pct"), _wmean(ks, "mem_pct")
    dram_bps = _div(dram_bytes, dur)
    if dram_bps is None and len(ks) == 1:
        dram_bps = _n(ks[0].get("dram_bps"))
    out: dict[str, Any] = {
        "launches": len(ks),
        "duration_s": dur,
        "sm_pct": sm_pct, "mem_pct": mem_pct, "dram_pct": _wmean(ks, "dram_pct"),
        "sol_score": max(x for x in (sm_pct, mem_pct) if x is not None) / 100.0
        if (sm_pct is not None or mem_pct is not None) else None,
        "dram_bytes": dram_bytes, "dram_bps": dram_bps,
        "dram_gbs": dram_bps / 1e9 if dram_bps is not None else None,
        "flop": flop_, "flops": flops,
        "fp32_tflops": flops["fp32"] / 1e12 if flops["fp32"] is not None else None,
        "fp16_tflops": flops["fp16"] / 1e12 if flops["fp16"] is not None else None,
        "fp64_tflops": flops["fp64"] / 1e12 if flops["fp64"] is not None else None,
        "tensor_tflops": flops["tensor"] / 1e12 if flops["tensor"] is not None else None,
        "fp32_pct": _pct(flops["fp32"], peak_flops["fp32"]),
        "ai_fp32": _div(flop_["fp32"], dram_bytes),
        "ai": _div(_total(flop_), dram_bytes),
        "occupancy_pct": _wmean(ks, "occupancy_pct"),
        "theoretical_occupancy_pct": _n(longest.get("theoretical_occupancy_pct")),
        "regs_per_thread": _n(longest.get("regs_per_thread")),
        "smem_per_block_bytes": _n(longest.get("smem_per_block_bytes")),
        "block_size": _n(longest.get("block_size")), "grid_size": _n(longest.get("grid_size")),
        "sm_count": _n(longest.get("sm_count")),
        "l1_hit_pct": _wmean(ks, "l1_hit_pct"), "l2_hit_pct": _wmean(ks, "l2_hit_pct"),
        "ld_sectors_per_req": _div(_sum(ks, "ld_sectors"), _sum(ks, "ld_requests")),
        "st_sectors_per_req": _div(_sum(ks, "st_sectors"), _sum(ks, "st_requests")),
        "pipes": pipes, "dominant_pipe": dom[0] if dom else None, "dominant_pipe_pct": dom[1] if dom else None,
        "stall_counts": stalls, "stall_family": sorted(fams)[0] if fams else "",
        "stalls_top": top_stalls(stalls),
        "stall_per_issue": per_issue_fwd,
        "peak_dram_bps": peak_bw, "peak_flops": peak_flops,
        "peak_dram_gbs": peak_bw / 1e9 if peak_bw is not None else None,
        "peak_fp32_tflops": peak_flops["fp32"] / 1e12 if peak_flops["fp32"] is not None else None,
        "peak_fp16_tflops": peak_flops["fp16"] / 1e12 if peak_flops["fp16"] is not None else None,
        "peak_tensor_tflops": peak_flops["tensor"] / 1e12 if peak_flops["tensor"] is not None else None,
        "ridge_fp32": _div(peak_flops["fp32"], peak_bw),
        "longest": longest.get("name"),
    }
    out["classification"] = classify(out)
    return out


def _pct(a: float | None, b: float | None) -> float | None:
    r = _div(a, b)
    return 100.0 * r if r is not None else None


def _total(flop_: dict[str, float | None]) -> float | None:
    vals = [v for v in flop_.values() if v is not None]
    return sum(vals) if vals else None


def summarize(launches: list[Launch]) -> dict[str, Any]:
    """{"kernels": [per-launch summaries], "forward": the forward's figures}."""
    ks = [kernel_summary(ln) for ln in launches]
    return {"kernels": ks, "forward": forward_summary(ks)}
