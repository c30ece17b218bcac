"""Roofline maths and words for what bounds a kernel.

The roofs come from the profiled device itself (ncu's own roofline definition), never from a
table of GPU names:

- peak DRAM bandwidth = ``dram__bytes.sum.peak_sustained`` (bytes/cycle) x
  ``dram__cycles_elapsed.avg.per_second``;
- peak FLOP/s per precision = 2 x ``sm__sass_thread_inst_executed_op_<p>fma_pred_on.sum.peak_sustained``
  (FMA/cycle) x ``sm__cycles_elapsed.avg.per_second``;
- ridge point = peak FLOP/s / peak bandwidth (FLOP/byte): left of it a kernel can at best be
  memory-bound, right of it compute-bound.

A kernel's point: arithmetic intensity = FLOP / DRAM bytes, performance = FLOP / duration.
With ``--clock-control none`` the clocks are whatever the GPU ran at, so the roofs are those
of that run (they move a little with boost clocks).

What bounds it (:func:`classify`), after ncu's own rule (below 60 % of both peaks: latency):

- memory-bound: memory throughput >= 60 % of its peak and above compute;
- compute-bound: SM throughput >= 60 % of its peak and above memory;
- latency-bound: both below 60 % (too little parallel work, too few blocks, dependent loads...).
"""

from __future__ import annotations

from typing import Any

HIGH_PCT = 60.0  # ncu's SOL rule: below this on both, the kernel is latency-limited


def _n(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def ridge(peak_flops: float | None, peak_bw: float | None) -> float | None:
    if not peak_flops or not peak_bw:
        return None
    return peak_flops / peak_bw


def attainable(ai: float, peak_flops: float, peak_bw: float) -> float:
    """The roof at arithmetic intensity ``ai``: min(compute peak, ai x bandwidth)."""
    return min(peak_flops, ai * peak_bw)


def _p(x: float | None) -> str:
    if x is None:
        return "n/a"
    if x >= 10 or x == 0:
        return f"{x:.0f} %"
    return f"{x:.1f} %" if x >= 1 else f"{x:.2g} %"


def classify(fwd: dict[str, Any]) -> dict[str, Any]:
    """{"bound": memory | compute | latency | None, "words": "..."} for one forward's figures."""
    dram, mem, sm = _n(fwd.get("dram_pct")), _n(fwd.get("mem_pct")), _n(fwd.get("sm_pct"))
    occ = _n(fwd.get("occupancy_pct"))
    memory = mem if mem is not None else dram
    if memory is None and sm is None:
        return {"bound": None, "words": "n/a: ncu reported no throughput"}
    memory_v, sm_v = memory or 0.0, sm or 0.0
    mem_words = f"{_p(dram)} of DRAM peak" if dram is not None and (mem is None or dram >= 0.9 * mem) \
        else f"{_p(memory)} of memory peak (L1/L2" + (f"; DRAM {_p(dram)})" if dram is not None else ")")
    occ_words = f", occupancy {_p(occ)}" if occ is not None else ""
    grid, sms = _n(fwd.get("grid_size")), _n(fwd.get("sm_count"))
    grid_words = ""
    if grid is not None and sms and grid < sms:
        grid_words = f", {int(grid)} block{'s' if grid != 1 else ''} for {int(sms)} SMs"
    if memory_v >= HIGH_PCT and memory_v >= sm_v:
        bound, words = "memory", f"memory-bound at {mem_words}"
        if sm_v >= HIGH_PCT:
            words += f" (compute {_p(sm)} too)"
    elif sm_v >= HIGH_PCT:
        bound, words = "compute", f"compute-bound at {_p(sm)} of SM peak"
        pipe = fwd.get("dominant_pipe")
        if pipe:
            words += f" ({pipe} pipe {_p(_n(fwd.get('dominant_pipe_pct')))})"
    else:
        bound = "latency"
        if memory is not None and sm is not None and abs(memory - sm) <= 0.1 * max(memory, sm):
            both = max(memory, sm)
            words = f"latency-bound: {both:.0f} % of both peaks" if both >= 1 else \
                f"latency-bound: {_p(both)} of both peaks"
        else:
            words = f"latency-bound: {mem_words}, {_p(sm)} of compute peak"
        words += occ_words + grid_words
    return {"bound": bound, "words": words}


def main_precision(fwd: dict[str, Any]) -> str:
    """The precision that does most of a forward's FLOP (fp32 when it does none)."""
    fl = {p: v for p, v in (fwd.get("flop") or {}).items() if isinstance(v, (int, float)) and v > 0}
    return max(fl.items(), key=lambda kv: kv[1])[0] if fl else "fp32"


def point(name: str, fwd: dict[str, Any], peaks: dict[str, float | None], peak_bw: float | None) -> dict[str, Any]:
    """One forward as a roofline point (``flops`` is the FLOP/s of all precisions together), measured
    against the roof of the precision that does most of its work."""
    prec = main_precision(fwd)
    peak_flops = peaks.get(prec) or peaks.get("fp32")
    flop_all = [v for v in (fwd.get("flop") or {}).values() if isinstance(v, (int, float))]
    total = sum(flop_all) if flop_all else None
    dur, dram = _n(fwd.get("duration_s")), _n(fwd.get("dram_bytes"))
    flops = total / dur if total is not None and dur else None
    ai = total / dram if total is not None and dram else None
    roof = attainable(ai, peak_flops, peak_bw) if ai is not None and peak_flops and peak_bw else None
    cls = classify(fwd)
    return {
        "name": name, "ai": ai, "flops": flops, "flop": total, "dram_bytes": dram, "duration_s": dur,
        "precision": prec, "roof_flops": peak_flops,
        "dram_bps": _n(fwd.get("dram_bps")),
        "roof_at_ai": roof, "pct_of_roof": 100.0 * flops / roof if flops is not None and roof else None,
        "side": None if ai is None or not peak_flops or not peak_bw else
        ("memory" if ai < (ridge(peak_flops, peak_bw) or 0) else "compute"),
        "bound": cls["bound"], "words": cls["words"],
    }


def roofline(kernel: dict[str, Any] | None, reference: dict[str, Any] | None) -> dict[str, Any]:
    """The roofline of a profile: the device's roofs (from the kernel's run, else the reference's)
    and the kernel's and reference's points."""
    src = kernel if kernel and kernel.get("peak_dram_bps") else (reference or kernel or {})
    peak_bw = _n(src.get("peak_dram_bps"))
    peaks = {p: _n(v) for p, v in (src.get("peak_flops") or {}).items()}
    out: dict[str, Any] = {
        "peak_dram_bps": peak_bw,
        "peak_flops": peaks,
        "ridge": {p: ridge(v, peak_bw) for p, v in peaks.items()},
        "points": [],
        "source": "ncu: dram__bytes.sum.peak_sustained x dram__cycles_elapsed.avg.per_second; "
                  "2 x sm__sass_thread_inst_executed_op_<p>fma_pred_on.sum.peak_sustained x "
                  "sm__cycles_elapsed.avg.per_second",
    }
    for name, fwd in (("kernel", kernel), ("reference", reference)):
        if fwd and fwd.get("launches"):
            out["points"].append(point(name, fwd, peaks, peak_bw))
    return out
