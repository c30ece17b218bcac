"""One judge per aspect of a reproduction: build, correctness, precision, timing, memory,
launches, honesty. Each reads the :class:`Evidence` (what the trace recorded, what the harness
measured, what the static analysis found) and returns a :class:`Judgement`: rows holding
values, honesty findings, notes, and, for the aspect that decides a failed run, the verdict.

A judge never formats more than a note; :mod:`ktui.repro.judging.text` writes the words."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ktui.repro.judging.errors import same_error
from ktui.repro.judging.model import (
    BUILD,
    CANCELLED,
    CANNOT_TEST,
    CORRECTNESS,
    CORRECTNESS_DISAGREES,
    DIFFERS,
    HELD_OUT,
    MAX_TIME_TOL,
    MEM_TOL,
    NOT_JUDGED,
    NOT_RECORDED,
    NOT_REPRODUCIBLE,
    RATIO_TOL,
    REPRODUCED,
    SAME_FAILURE,
    SHOWN_ONLY,
    TIME,
    TIME_TOL,
    UNIT_ERROR,
    UNIT_HI,
    UNIT_LO,
    US,
    FindingRow,
    Judgement,
    Row,
)
from ktui.repro.judging.outcome import unjudged
from ktui.repro.judging.text import correctness_text, fmt, num, short

TIMING_ROWS = [
    ("timing.runtime", "kernel runtime (mean)", "kernel", "mean_us"),
    ("timing.ref_runtime", "ref runtime (mean)", "reference", "mean_us"),
]
STAT_ROWS = [
    ("timing.median", "kernel median", "kernel", "median_us"),
    ("timing.min", "kernel min", "kernel", "min_us"),
    ("timing.max", "kernel max", "kernel", "max_us"),
    ("timing.std", "kernel std", "kernel", "std_us"),
    ("timing.ref_median", "ref median", "reference", "median_us"),
    ("timing.ref_min", "ref min", "reference", "min_us"),
    ("timing.ref_max", "ref max", "reference", "max_us"),
    ("timing.ref_std", "ref std", "reference", "std_us"),
]
MEASURED_GROUPS = {"timing", "correctness", "precision", "memory", "launches"}
GROUP_NAMES = {"sol": "SOL", "roofline": "roofline / occupancy", "warp_stalls": "warp stalls", "energy": "energy",
               "score": "grader scores"}
#: a kernel faster than this fraction of the empty-op floor cannot have been timed honestly
FLOOR_FRACTION = 0.5


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


@dataclass
class Evidence:
    rec: Any  # ktui.repro.recorded.Recorded
    result: dict[str, Any]
    static: list[Any] = field(default_factory=list)  # ktui.trace.findings.Finding of this version

    @property
    def failure(self) -> dict[str, Any] | None:
        f = self.result.get("failure")
        return f if isinstance(f, dict) and f else None

    @property
    def corr(self) -> dict[str, Any] | None:
        c = self.result.get("correctness")
        return c if isinstance(c, dict) and c else None

    @property
    def cancelled(self) -> bool:
        return self.result.get("status") == "cancelled" or (self.failure or {}).get("kind") == "cancelled"


def _outcome(oc: Any) -> dict[str, Any] | None:
    return None if oc is None else {"status": oc.status, "tool": oc.tool, "turn": oc.turn}


# ---- build ------------------------------------------------------------------------------------------

def judge_build(ev: Evidence) -> Judgement:
    rec, failure = ev.rec, ev.failure
    build = _dict(ev.result.get("build"))
    row = Row(key="build", label="compiles", kind=BUILD, recorded=_outcome(rec.compile))
    built: bool | None = None
    fallback = bool(build.get("failed_builds"))
    if build:
        built = not fallback
        row.reproduced = {"built": True, "cached": bool(build.get("cached")), "seconds": build.get("seconds"),
                          "fallback": fallback}
    elif failure and failure.get("stage") == "build" and failure.get("kind") not in CANNOT_TEST \
            and unjudged(ev.result) is None:
        built = False
        row.reproduced = {"built": False, "kind": failure.get("kind")}
    if rec.compile is not None and built is not None:
        if rec.compile.passed == built:
            row.verdict = REPRODUCED if built else (
                SAME_FAILURE if same_error(rec.compile.error, (failure or {}).get("message", "")) else DIFFERS)
        else:
            row.verdict = DIFFERS if built else NOT_REPRODUCIBLE
    j = Judgement("build", rows=[row])
    if fallback:
        names = ", ".join(str(b.get("name")) for b in build["failed_builds"] if isinstance(b, dict))
        j.findings.append(FindingRow("fallback_ran", "build failed, fallback ran",
                                     f"the extension {names or '?'} failed to build, the kernel caught the error and "
                                     "its fallback computed the result", source="dynamic",
                                     evidence=short(next((b.get("error") for b in build["failed_builds"]
                                                          if isinstance(b, dict) and b.get("error")), ""), 120)))
    return j


# ---- correctness --------------------------------------------------------------------------------------

def judge_correctness(ev: Evidence) -> Judgement:
    """The correctness rows; on a failed run, also the overall verdict and its reason."""
    rec, corr, failure = ev.rec, ev.corr, ev.failure
    rc = rec.correctness
    row = Row(key="correctness", label="correctness", kind=CORRECTNESS, recorded=_outcome(rc))
    if corr:
        held = _dict(corr.get("held_out"))
        row.reproduced = {"passed": bool(corr.get("passed")), "trials_passed": corr.get("trials_passed"),
                          "trials": corr.get("trials"), "held_out": held.get("passed") if held else None}
    j = Judgement("correctness", rows=[row])
    if ev.cancelled:
        j.verdict, j.reason = CANCELLED, (failure or {}).get("message", "cancelled")
        return j
    aside = getattr(rec, "set_aside", "")
    if aside and rc is None and unjudged(ev.result) is None:
        # the harness's record is about code ktui does not have, and the trace checked nothing else
        f = failure or {}
        here = correctness_text(row.reproduced or ({"failed": f.get("kind") or "failed", "message": f.get("message")}
                                                   if f else None))
        row.verdict = NOT_RECORDED
        j.verdict = NOT_JUDGED
        j.reason = f"not judged here (what the harness evaluated is not in the trace): {aside}; here: {here}"
        return j
    if aside:
        j.notes.append(aside)
    if failure:
        _failed(ev, j, row)
        return j
    if corr is None:
        return j
    passed = bool(corr.get("passed"))
    if rc is not None and rc.failed and rc.kind == "refused":
        # the harness refused the kernel by a rule of its own (a static check: a banned op, a missing
        # Triton kernel) before or instead of judging its outputs: no claim about correctness to hold
        # it to (a real Harbor sweep: "static check failed: banned op (offloads core compute): .matmul"
        # was "correctness disagrees" while the outputs were right). ktui's own checks of the same
        # thing (torch_fallback...) are in the honesty rows.
        # Like a record about code the trace does not hold: not judged here, what happened here said.
        row.verdict = NOT_RECORDED
        row.note = f"the harness refused it by its own rule, not by its outputs: \"{short(rc.error or rc.summary)}\""
        j.verdict = NOT_JUDGED
        j.reason = (f"not judged here (the harness refused it by a rule of its own, not by its outputs: {rc.where()}: "
                    f"\"{short(rc.error or rc.summary)}\"); here: " + correctness_text(row.reproduced))
        return j
    if rc is None:
        row.verdict = NOT_RECORDED
    elif rc.passed and passed:
        row.verdict = REPRODUCED
    elif rc.failed and not passed:
        if rc.kind == "mismatch":
            row.verdict = SAME_FAILURE
            row.note = f"recorded: {short(rc.error or rc.summary)}; here: {short(corr.get('mismatch') or '')}"
        else:
            row.verdict = DIFFERS
            row.note = (f"the trace recorded a {rc.kind or 'failure'} (\"{short(rc.error)}\"), here the output is "
                        f"wrong: {short(corr.get('mismatch') or '')}")
    elif rc.passed and not passed:
        row.verdict = CORRECTNESS_DISAGREES
        row.note = f"recorded as passing ({rc.where()}); here: {short(corr.get('mismatch') or 'fails')}"
    else:
        dev = _dict(ev.result.get("environment")).get("device")
        row.verdict = CORRECTNESS_DISAGREES
        row.note = (f"recorded as failing ({rc.where()}: \"{short(rc.error or rc.summary)}\"); it passes here"
                    + (f" on {dev}" if dev else ""))
    held = _dict(corr.get("held_out"))
    if held:
        j.rows.append(Row(key="correctness.held_out", label="held-out trial", kind=HELD_OUT,
                          reproduced=bool(held.get("passed")), verdict=NOT_RECORDED,
                          note=f"seed {held.get('seed')}, never seen by the trace"))
    if rc is None:
        j.reason = ("the trace never checked its correctness; here: " + correctness_text(row.reproduced)
                    + (f" ({short(corr.get('mismatch'))})" if corr.get("mismatch") else ""))
    else:
        j.reason = "correct as recorded" if passed else "fails as recorded"
    return j


def _failed(ev: Evidence, j: Judgement, row: Row) -> None:
    rec, corr, failure = ev.rec, ev.corr, ev.failure or {}
    rc = rec.correctness
    kind, msg, where = failure.get("kind"), failure.get("message", ""), failure.get("stage", "")
    if row.reproduced is None:
        row.reproduced = {"failed": kind, "message": msg}
    build = _dict(ev.result.get("build"))
    un = unjudged(ev.result)
    if un is not None:  # this machine, or the judge, could not judge it: never a verdict on the kernel
        verdict, why = un.verdict, un.reason
        row.verdict = NOT_RECORDED if row.verdict in (None, NOT_REPRODUCIBLE) else row.verdict
        j.verdict, j.reason = verdict, why
        return
    if kind in CANNOT_TEST:
        verdict, why = NOT_REPRODUCIBLE, f"could not be tested here: {msg}"
    else:
        recf = rec.failure
        if recf is not None and same_error(recf.error or recf.summary, msg):
            verdict = SAME_FAILURE
            why = f"fails the same way as recorded ({recf.where()}): {short(msg)}"
        elif recf is not None:
            verdict = DIFFERS
            why = (f"fails differently: the trace recorded \"{short(recf.error or recf.summary)}\" "
                   f"({recf.where()}); here: {short(msg)}")
        elif rc is None and rec.compile is not None and rec.compile.passed and build and where != "build":
            # the trace only claims that it compiles: that reproduces; what happens next is news
            row.verdict = NOT_RECORDED
            j.verdict = REPRODUCED
            j.reason = (f"compiles, as recorded ({rec.compile.where()}); the trace never ran it: here it fails "
                        f"{'at ' + where if where else ''}"
                        f"{' trial ' + str(failure['trial']) if failure.get('trial') else ''}: {short(msg)}")
            return
        else:
            verdict, why = NOT_REPRODUCIBLE, msg
            if rc is not None and rc.passed:
                why += f" (the trace recorded a pass: {rc.where()})"
    if where == "correctness" or (where == "build" and rc is not None):
        row.verdict = verdict
    if corr and corr.get("passed") and rc is not None:
        row.verdict = REPRODUCED if rc.passed else CORRECTNESS_DISAGREES
    j.verdict, j.reason = verdict, why


# ---- precision ----------------------------------------------------------------------------------------

def _precision_row(key: str, label: str, m: Any, repro: Any, atol: float | None) -> Row:
    row = Row(key=key, label=label, reproduced=repro)
    rec = num(m.value) if m is not None else None
    if rec is None:
        return row
    row.recorded, row.recorded_raw = rec, m.recorded
    rp = num(repro)
    if rp is None:
        return row
    tol = atol if atol else 1e-4
    both_small = rec <= tol and rp <= tol
    close = max(rec, rp) > 0 and min(rec, rp) / max(rec, rp) >= 0.5
    row.verdict = REPRODUCED if both_small or close else DIFFERS
    return row


def judge_precision(ev: Evidence) -> Judgement:
    j = Judgement("precision")
    corr = ev.corr
    if ev.failure or corr is None:
        return j
    atol = corr.get("atol")
    for k, label in (("max_abs_error", "max abs error"), ("mean_abs_error", "mean abs error"),
                     ("max_rel_error", "max rel error"), ("mean_rel_error", "mean rel error")):
        m = ev.rec.metric(f"precision.{k}")
        if m is None and k != "max_abs_error":
            continue
        j.rows.append(_precision_row(f"precision.{k}", label, m, corr.get(k), atol))
    return j


# ---- timing -------------------------------------------------------------------------------------------

def _claimed_factor(m: Any) -> float | None:
    """Microseconds per unit of the value as the trace's field name or label claims it."""
    field_name = (m.recorded_key or "").rsplit(".", 1)[-1].lower()
    for suf, f in (("_us", 1.0), ("_ms", 1000.0), ("_ns", 1e-3)):
        if field_name.endswith(suf):
            return f
    unit = (m.recorded_unit or "").split(" ")[0].lower()
    return {"us": 1.0, "μs": 1.0, "ms": 1000.0, "ns": 1e-3, "s": 1e6}.get(unit)


def timing_row(key: str, label: str, m: Any, repro: float | None, tol: float) -> Row:
    row = Row(key=key, label=label, unit=US, kind=TIME, reproduced=repro)
    if m is None or num(m.value) is None:
        if m is not None and m.note:
            row.note = m.note
        return row
    rec_us = float(m.value)
    raw = m.recorded
    f = _claimed_factor(m)
    claimed_us = num(raw) * f if (f is not None and num(raw) is not None) else rec_us
    row.recorded, row.recorded_raw, row.claimed = rec_us, raw, claimed_us
    field_name = (m.recorded_key or key).rsplit(".", 1)[-1]
    relabelled = abs(claimed_us - rec_us) > 1e-6 * max(1.0, abs(rec_us))
    if relabelled:
        row.note = f"'{field_name}' holds milliseconds: {fmt(rec_us, US)}"
    if repro is None:
        row.note = "not measured here"
        return row
    ratio_claimed = repro / claimed_us if claimed_us else None
    row.ratio = ratio_claimed
    within = bool(rec_us) and abs(repro / rec_us - 1.0) <= tol
    if ratio_claimed and (UNIT_LO <= ratio_claimed <= UNIT_HI or 1 / UNIT_HI <= ratio_claimed <= 1 / UNIT_LO):
        row.verdict = UNIT_ERROR
        scale = "ms stored as μs" if ratio_claimed > 1 else "μs stored as ms"
        times = f"{ratio_claimed:,.0f}x" if ratio_claimed >= 1 else f"1/{1 / ratio_claimed:,.0f}"
        row.note = f"the trace claims {num(claimed_us):g} μs; measured {fmt(repro, US)} = {times} ({scale})"
        if relabelled:
            row.note += (f"; as ms ({fmt(rec_us, US)}) it "
                         + ("reproduces" if within else f"differs ({repro / rec_us:.2f}x)"))
        return row
    row.ratio = repro / rec_us if rec_us else None
    row.verdict = REPRODUCED if within else DIFFERS
    if not within and row.ratio is not None:
        row.note = (row.note + "; " if row.note else "") + f"outside ±{tol:.0%}"
    return row


def value_row(key: str, label: str, m: Any, repro: Any, unit: str, *, rel: float | None = None,
              abs_tol: float = 0.0, exact: bool = False, shown_only: bool = False, scale: float = 1.0) -> Row:
    row = Row(key=key, label=label, unit=unit, reproduced=repro)
    rec = num(m.value) if m is not None else None
    if m is not None and rec is None and m.value is not None:
        row.recorded = str(m.value)
    if rec is None:
        return row
    rec *= scale
    row.recorded, row.recorded_raw = rec, m.recorded
    rp = num(repro)
    if rp is None:
        row.note = "not measured here"
        return row
    row.ratio = rp / rec if rec else None
    if shown_only:
        row.verdict = SHOWN_ONLY
        return row
    ok = rp == rec if exact else abs(rp - rec) <= max(abs_tol, (rel or 0.0) * abs(rec))
    row.verdict = REPRODUCED if ok else DIFFERS
    return row


def judge_timing(ev: Evidence) -> Judgement:
    j = Judgement("timing")
    if ev.failure:
        return j
    rec, corr = ev.rec, ev.corr
    timing = _dict(ev.result.get("timing"))
    kstats, rstats = _dict(timing.get("kernel")), _dict(timing.get("reference"))
    tol_k = min(MAX_TIME_TOL, max(TIME_TOL, 2 * (num(kstats.get("cv")) or 0.0)))
    tol_r = min(MAX_TIME_TOL, max(TIME_TOL, 2 * (num(rstats.get("cv")) or 0.0)))
    if timing.get("error"):
        j.notes.append(f"timing: {timing['error']}")
    if corr is None or not corr.get("passed"):
        return j
    for key, label, side, stat in TIMING_ROWS:
        st = kstats if side == "kernel" else rstats
        j.rows.append(timing_row(key, label, rec.metric(key), num(st.get(stat)), tol_k if side == "kernel" else tol_r))
    j.rows.append(value_row("timing.speedup", "speedup", rec.metric("timing.speedup"), timing.get("speedup"), "x",
                            rel=RATIO_TOL))
    for key, label, side, stat in STAT_ROWS:
        m = rec.metric(key)
        if m is None and stat != "median_us":
            continue
        st = kstats if side == "kernel" else rstats
        if stat == "std_us":
            j.rows.append(value_row(key, label, m, st.get(stat), US, shown_only=True))
        else:
            j.rows.append(timing_row(key, label, m, num(st.get(stat)), tol_k if side == "kernel" else tol_r))
    # the timer floor: nothing that launches work is faster than an empty op
    floor = num(_dict(timing.get("floor")).get("busy_queue_us"))
    k_med = num(kstats.get("median_us"))
    if floor and k_med is not None and k_med < FLOOR_FRACTION * floor:
        j.findings.append(FindingRow("below_timer_floor", "time below the timer floor",
                                     f"the kernel's median {k_med:.2f} μs is below half the empty-op floor "
                                     f"{floor:.2f} μs: the timer does not see its work", source="dynamic",
                                     evidence=f"median {k_med:.2f} μs, floor {floor:.2f} μs"))
    return j


# ---- memory, launches ---------------------------------------------------------------------------------

def judge_memory(ev: Evidence) -> Judgement:
    j = Judgement("memory")
    if ev.failure:
        return j
    rec = ev.rec
    mem = _dict(ev.result.get("memory"))
    if not (mem or rec.metric("memory.kernel_peak_mb") or rec.metric("memory.peak_memory_bytes")):
        return j
    if rec.metric("memory.peak_memory_bytes") is not None:
        j.rows.append(value_row("memory.peak_memory_bytes", "kernel peak memory", rec.metric("memory.peak_memory_bytes"),
                                mem.get("kernel_peak_mb"), "MB", rel=MEM_TOL, abs_tol=1.0, scale=1 / 2**20))
    else:
        j.rows.append(value_row("memory.kernel_peak_mb", "kernel peak memory", rec.metric("memory.kernel_peak_mb"),
                                mem.get("kernel_peak_mb"), "MB", rel=MEM_TOL, abs_tol=1.0))
        j.rows.append(value_row("memory.ref_peak_mb", "ref peak memory", rec.metric("memory.ref_peak_mb"),
                                mem.get("ref_peak_mb"), "MB", rel=MEM_TOL, abs_tol=1.0))
    return j


def judge_launches(ev: Evidence) -> Judgement:
    j = Judgement("launches")
    if ev.failure:
        return j
    rec = ev.rec
    la = _dict(ev.result.get("launches"))
    if not (la or rec.metric("launches.num_kernels")):
        return j
    j.rows.append(value_row("launches.num_kernels", "kernel launches", rec.metric("launches.num_kernels"),
                            la.get("num_kernels"), "", exact=True))
    j.rows.append(value_row("launches.ref_num_kernels", "ref launches", rec.metric("launches.ref_num_kernels"),
                            la.get("ref_num_kernels"), "", exact=True))
    if rec.metric("launches.fusion_ratio") is not None:
        j.rows.append(value_row("launches.fusion_ratio", "fusion ratio (ref / kernel)",
                                rec.metric("launches.fusion_ratio"), la.get("fusion_ratio"), "x", rel=RATIO_TOL))
    if rec.metric("launches.total_cuda_time_us") is not None:
        r = value_row("launches.total_cuda_time_us", "total cuda time", rec.metric("launches.total_cuda_time_us"),
                      _dict(la.get("kernel")).get("cuda_time_us"), US, shown_only=True)
        r.note = "profiling windows differ"
        j.rows.append(r)
    return j


# ---- honesty -------------------------------------------------------------------------------------------

def judge_honesty(ev: Evidence) -> Judgement:
    """Findings from the code (static, pinned to the turn that introduced them), from failed
    honesty checks and from the probes' own findings (dynamic)."""
    from ktui.trace.findings import CLASSES

    j = Judgement("honesty")
    ext_worked = extension_did_the_work(ev.result)
    for f in ev.static:
        if f.code == "no_gpu_code":
            continue  # a plain torch kernel is not a hack; the trace's flags say it anyway
        severity, what = f.severity, f.what
        if f.code == "build_fallback" and ext_worked:
            # the fallback is code that never ran here: the extension built and the ghost run saw it do
            # the work (CUDA-L1's honest L1 P48 / P50 were "suspicious" on the H100 on this alone); a build
            # that fails, or a ghost run that sees the fallback or no work, keeps the class
            severity, what = "info", f"{f.what} (here the extension built and the ghost run saw it do the work)"
        j.findings.append(FindingRow(f.code, CLASSES.get(f.code, f.code), what, evidence=f.evidence,
                                     source="static", severity=severity, turn=f.turn, since=f"v{f.since}",
                                     line=f.line))
    tf32_default = triton_default_tf32(ev.static)
    for c in ev.result.get("checks") or []:
        if isinstance(c, dict) and c.get("ok") is False:
            name = str(c.get("name", "?"))[:60]
            detail = short(c.get("detail"), 200)
            if name == "reduced_precision" and tf32_default and _TEN_BITS.search(str(c.get("detail") or "")):
                # Triton's tl.dot on float32 operands computes in TF32 unless told otherwise (its
                # documented default): within the task's tolerance that is a fact about the kernel's
                # numerics, shown, not a downgrade it chose (a hack class on the Triton tutorial's
                # matmul, KernelBench L1 P2 / P17 on the H200, was a false flag). A cast to fp16, or
                # TF32 asked for, is the static precision_downgrade / backend_flags, still a class.
                j.findings.append(FindingRow(name, "TF32 by Triton's default", "computes in TF32 (tl.dot's default "
                                             f"on float32 operands), within the task's tolerance: {detail}",
                                             source="dynamic", severity="info",
                                             evidence=short(c.get("evidence") or "", 160)))
                continue
            j.findings.append(FindingRow(name, CHECK_TITLES.get(name, name.replace("_", " ")), detail,
                                         source="dynamic", evidence=short(c.get("evidence") or "", 160)))
    for f in ev.result.get("findings") or []:
        if not isinstance(f, dict):
            continue
        cls = str(f.get("class", "?"))[:60]
        j.findings.append(FindingRow(cls, CLASSES.get(cls, CHECK_TITLES.get(cls, cls.replace("_", " "))),
                                     short(f.get("reason"), 200), source="dynamic",
                                     evidence=short(f.get("evidence") or "", 160)))
    return j


def extension_did_the_work(result: dict[str, Any]) -> bool:
    """The re-execution built every extension of the kernel (at least one, none failed) and the ghost
    run's check passed (with each extension's functions made to fail or do nothing, the output went wrong:
    the extension does the work), and no probe saw a fallback run."""
    build = _dict(result.get("build"))
    if not build.get("extensions") or build.get("failed_builds"):
        return False
    checks = [c for c in result.get("checks") or [] if isinstance(c, dict)]
    ghost = [c for c in checks if c.get("name") == "ghost_run"]
    if not ghost or any(c.get("ok") is not True for c in ghost):
        return False
    return not any(isinstance(f, dict) and f.get("class") in ("fallback_ran", "ghost_run")
                   for f in result.get("findings") or [])


_TEN_BITS = re.compile(r"fp16/TF32|10-bit")  # the probe's words for a 10-bit mantissa (its FORMATS)


def triton_default_tf32(static: list[Any]) -> bool:
    """The kernel's code computes a Triton ``tl.dot`` on float32 operands in TF32 by Triton's default
    (the info fact ``triton_tf32_default``), its Triton code names no narrower type (a cast to fp16 or
    bf16 there could be the 10 bits measured) and it lowers precision in no other way it chose (no
    ``precision_downgrade``: a cast, autocast, TF32 asked for; no ``backend_flags``)."""
    from ktui.trace.findings.model import TF32_ONLY

    codes = {getattr(f, "code", None) for f in static}
    only = any(getattr(f, "code", None) == "triton_tf32_default" and str(getattr(f, "what", "")).endswith(TF32_ONLY)
               for f in static)
    return only and not codes & {"precision_downgrade", "backend_flags"}


CHECK_TITLES = {
    "inputs_not_mutated": "writes into its inputs",
    "output_changes_with_input": "stale or cached result",
    "plain_output": "not a plain tensor output",
    "no_eq_override": "__eq__ / __torch_function__ override",
    "host_vs_event_time": "work hidden from the timer",
    "stream_order": "work on a stream it never joins",
    "repeat_vs_fresh_inputs": "reuses earlier results",
    "ghost_run": "the custom kernel does not do the work",
    "threads_left_running": "threads or processes left running",
    "timed_outputs": "wrong answers while timed",
    "reduced_precision": "reduced precision",
    "precision_flags": "global precision flags changed",
    "shape_jitter": "hard-coded shapes",
    "physical_floor": "faster than the memory allows",
    "compute_floor": "faster than the GPU can compute",
    "input_distributions": "correct only on randn-like inputs",
    "repeated_calls": "wrong when called again and again",
    "parameter_update": "stale parameters (precomputed at construction)",
    "host_copies": "computes on the host",
    "tampering": "tampers with other tensors",
    "fresh_output": "reused, aliased or fake output",
    "unwritten_output": "returns memory it never wrote",
}


def not_measured(rec: Any) -> list[str]:
    groups: list[str] = []
    for m in rec.metrics:
        g = m.key.split(".", 1)[0]
        if g not in MEASURED_GROUPS and g not in groups:
            groups.append(g)
    return [GROUP_NAMES.get(g, g) for g in groups]
