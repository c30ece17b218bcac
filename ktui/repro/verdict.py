"""Recorded vs reproduced: per-metric rows with a ratio and a verdict, and one overall verdict.

Verdicts (worst first):

- ``not reproducible``: the snapshot could not be built or run here (compile error, crash,
  hang, runtime error), or could not be tested (no GPU, no reference);
- ``correctness disagrees``: the trace says it passed and it fails here, or the reverse;
- ``suspicious``: an honesty check failed (cached output, mutated inputs, work hidden on a
  side stream, an ``__eq__`` override, not a plain tensor...);
- ``unit error suspected``: a reproduced time is ~1000x (or ~1/1000) the value as the trace
  claims it (PopcornBench stores milliseconds in ``*_us`` fields);
- ``differs``: measured, but outside noise (or failing differently from the record);
- ``reproduced: fails the same way``: the trace recorded a failure, and it fails here with the
  same (normalized) error;
- ``reproduced``: within noise.

Row-only verdicts: ``not recorded`` (the trace has no value) and ``shown only``.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ktui.repro.recorded import Recorded

REPRODUCED = "reproduced"
SAME_FAILURE = "reproduced: fails the same way"
DIFFERS = "differs"
UNIT_ERROR = "unit error suspected"
CORRECTNESS_DISAGREES = "correctness disagrees"
NOT_REPRODUCIBLE = "not reproducible"
SUSPICIOUS = "suspicious"
NOT_RECORDED = "not recorded"
SHOWN_ONLY = "shown only"
CANCELLED = "cancelled"

SEVERITY = {NOT_REPRODUCIBLE: 6, CORRECTNESS_DISAGREES: 5, SUSPICIOUS: 4, UNIT_ERROR: 3, DIFFERS: 2,
            SAME_FAILURE: 1, REPRODUCED: 0}
GOOD = (REPRODUCED, SAME_FAILURE)
#: failures that say nothing about the kernel: it could not be tested here
CANNOT_TEST = {"environment", "unsupported", "no_reference", "reference_error", "worker_error", "harness_error",
               "no_code"}
TIME_TOL = 0.10  # relative, widened to 2x the measured coefficient of variation...
MAX_TIME_TOL = 0.30  # ...but never beyond this
RATIO_TOL = 0.10
MEM_TOL = 0.10
UNIT_LO, UNIT_HI = 10 ** 2.5, 10 ** 3.5  # "~1000x"
US = "μs"


@dataclass
class Row:
    key: str
    label: str
    recorded: Any = None  # canonical value (times in us)
    recorded_raw: Any = None  # as written in the trace
    recorded_text: str = "—"
    reproduced: Any = None
    reproduced_text: str = "—"
    unit: str = ""
    ratio: float | None = None  # reproduced / recorded (as the trace claims it)
    verdict: str = NOT_RECORDED
    note: str = ""


@dataclass
class Comparison:
    verdict: str
    reason: str
    rows: list[Row] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)  # failed honesty checks
    checks: list[dict[str, Any]] = field(default_factory=list)
    not_measured: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def good(self) -> bool:
        return self.verdict in GOOD

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows"] = [asdict(r) for r in self.rows]
        return d


# ---- error text --------------------------------------------------------------------------

_PATH = re.compile(r"(?:[\w.~-]*/)+[\w.-]+(?::\d+)*:?")
_HEX = re.compile(r"0x[0-9a-f]+")
_NUM = re.compile(r"\d+")
_PREFIX = re.compile(r"^(?:[\w.]*(?:error|exception)|runtime_error|compile_error|fatal|[\w.]+ failed)\s*:\s*")


def normalize_error(text: str) -> str:
    t = (text or "").strip().lower()
    t = t.replace("‘", "'").replace("’", "'").replace("`", "'").replace('"', "'")
    t = _PATH.sub(" ", t)
    t = _HEX.sub("#", t)
    t = _NUM.sub("#", t)
    t = " ".join(t.split())
    prev = None
    while prev != t:
        prev = t
        t = _PREFIX.sub("", t).strip()
    return t.strip(" .:;")


def _lines(text: str) -> list[str]:
    out = []
    for ln in (text or "").splitlines():
        n = normalize_error(ln)
        if n and not n.startswith("traceback") and not n.startswith("file "):
            out.append(n)
    whole = normalize_error(" ".join((text or "").split()))
    if whole:
        out.append(whole)
    return out


def same_error(recorded: str, reproduced: str) -> bool:
    """True when two error texts say the same thing (paths, numbers, quotes, prefixes ignored)."""
    a, b = _lines(recorded), _lines(reproduced)
    for x in a:
        for y in b:
            if len(x) < 8 or len(y) < 8:
                if x == y:
                    return True
                continue
            if x == y or x in y or y in x:
                return True
            if difflib.SequenceMatcher(None, x, y).ratio() >= 0.85:
                return True
    return False


# ---- formatting -------------------------------------------------------------------------------

def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(float(v)) else None
    return None


def fmt(v: Any, unit: str = "") -> str:
    n = _num(v)
    if n is None:
        return "—" if v is None else str(v)
    if unit == US:
        s = f"{n:,.2f}" if abs(n) < 1e5 else f"{n:,.0f}"
    elif unit == "x":
        s = f"{n:.3g}"
    elif unit in ("MB", "MiB"):
        s = f"{n:,.2f}"
    elif float(n).is_integer() and abs(n) < 1e12:
        s = f"{int(n)}"
    elif abs(n) < 1e-3 and n != 0:
        s = f"{n:.2e}"
    else:
        s = f"{n:.4g}"
    return f"{s} {unit}".strip() if unit and unit != "x" else (s + "x" if unit == "x" else s)


def _claimed_factor(m: Any) -> float | None:
    """Microseconds per unit of the value as the trace's field name or label claims it."""
    field_name = (m.recorded_key or "").rsplit(".", 1)[-1].lower()
    for suf, f in (("_us", 1.0), ("_ms", 1000.0), ("_ns", 1e-3)):
        if field_name.endswith(suf):
            return f
    unit = (m.recorded_unit or "").split(" ")[0].lower()
    return {"us": 1.0, "μs": 1.0, "ms": 1000.0, "ns": 1e-3, "s": 1e6}.get(unit)


# ---- rows -------------------------------------------------------------------------------------

def _timing_row(key: str, label: str, m: Any, repro: float | None, tol: float) -> Row:
    row = Row(key=key, label=label, unit=US, reproduced=repro, reproduced_text=fmt(repro, US))
    if m is None or _num(m.value) is None:
        row.verdict = NOT_RECORDED
        if m is not None and m.note:
            row.note = m.note
        return row
    rec_us = float(m.value)
    raw = m.recorded
    row.recorded, row.recorded_raw = rec_us, raw
    f = _claimed_factor(m)
    claimed_us = _num(raw) * f if (f is not None and _num(raw) is not None) else rec_us
    field_name = (m.recorded_key or key).rsplit(".", 1)[-1]
    relabelled = abs(claimed_us - rec_us) > 1e-6 * max(1.0, abs(rec_us))
    if relabelled:
        row.note = f"'{field_name}' holds milliseconds: {fmt(rec_us, US)}"
    if relabelled and f == 1.0:
        row.recorded_text = f"{_num(raw):g} μs (as claimed)"
    else:
        row.recorded_text = fmt(rec_us, US)
    del field_name
    if repro is None:
        row.verdict = NOT_RECORDED
        row.note = "not measured here"
        return row
    ratio_claimed = repro / claimed_us if claimed_us else None
    row.ratio = ratio_claimed
    within = bool(rec_us) and abs(repro / rec_us - 1.0) <= tol
    if ratio_claimed and (UNIT_LO <= ratio_claimed <= UNIT_HI or 1 / UNIT_HI <= ratio_claimed <= 1 / UNIT_LO):
        row.verdict = UNIT_ERROR
        scale = "ms stored as μs" if ratio_claimed > 1 else "μs stored as ms"
        row.note = (f"the trace claims {_num(claimed_us):g} μs; measured {fmt(repro, US)} = {ratio_claimed:,.0f}x "
                    f"({scale})")
        if relabelled:
            row.note += (f"; as ms ({fmt(rec_us, US)}) it "
                         + ("reproduces" if within else f"differs ({repro / rec_us:.2f}x)"))
        return row
    row.ratio = repro / rec_us if rec_us else None
    row.verdict = REPRODUCED if within else DIFFERS
    if not within and row.ratio is not None:
        row.note = (row.note + "; " if row.note else "") + f"outside ±{tol:.0%}"
    return row


def _value_row(key: str, label: str, m: Any, repro: Any, unit: str, *, rel: float | None = None,
               abs_tol: float = 0.0, exact: bool = False, shown_only: bool = False, scale: float = 1.0) -> Row:
    row = Row(key=key, label=label, unit=unit, reproduced=repro, reproduced_text=fmt(repro, unit))
    rec = _num(m.value) if m is not None else None
    if m is not None and rec is None and m.value is not None:
        row.recorded_text = str(m.value)
    if rec is None:
        row.verdict = NOT_RECORDED
        return row
    rec *= scale
    row.recorded, row.recorded_raw, row.recorded_text = rec, m.recorded, fmt(rec, unit)
    rp = _num(repro)
    if rp is None:
        row.verdict = NOT_RECORDED
        row.note = "not measured here"
        return row
    row.ratio = rp / rec if rec else None
    if shown_only:
        row.verdict = SHOWN_ONLY
        return row
    if exact:
        ok = rp == rec
    else:
        ok = abs(rp - rec) <= max(abs_tol, (rel or 0.0) * abs(rec))
    row.verdict = REPRODUCED if ok else DIFFERS
    return row


def _precision_row(key: str, label: str, m: Any, repro: Any, atol: float | None) -> Row:
    row = Row(key=key, label=label, reproduced=repro, reproduced_text=fmt(repro))
    rec = _num(m.value) if m is not None else None
    if rec is None:
        row.verdict = NOT_RECORDED
        return row
    row.recorded, row.recorded_raw, row.recorded_text = rec, m.recorded, fmt(rec)
    rp = _num(repro)
    if rp is None:
        row.verdict = NOT_RECORDED
        return row
    tol = atol if atol else 1e-4
    both_small = rec <= tol and rp <= tol
    close = max(rec, rp) > 0 and min(rec, rp) / max(rec, rp) >= 0.5
    row.verdict = REPRODUCED if both_small or close else DIFFERS
    return row


def _correctness_text(c: dict[str, Any] | None) -> str:
    if not c:
        return "—"
    held = c.get("held_out")
    s = f"{'pass' if c['passed'] else 'FAIL'} {c['trials_passed']}/{c['trials']}"
    if held:
        s += f" + held-out {'pass' if held['passed'] else 'FAIL'}"
    return s


def _recorded_text(oc: Any) -> str:
    if oc is None:
        return "—"
    word = {"ok": "pass", "failed": "FAIL"}.get(oc.status, oc.status)
    return f"{word} ({oc.tool}, turn {oc.turn})" if oc.turn is not None else f"{word} ({oc.tool})"


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


def compare(rec: Recorded, result: dict[str, Any]) -> Comparison:
    """Recorded vs reproduced for one kernel version."""
    status = result.get("status")
    failure = result.get("failure") or None
    env = result.get("environment") or {}
    notes: list[str] = list(result.get("notes") or [])
    rows: list[Row] = []
    checks = list(result.get("checks") or [])
    flags = [c for c in checks if c.get("ok") is False]

    if rec.hardware and env.get("gpu") and rec.hardware.strip() != str(env.get("gpu")).strip():
        notes.append(f"recorded on {rec.hardware}, reproduced on {env['gpu']}: timings are not expected to match exactly")
    elif rec.hardware and not env.get("gpu") and env:
        notes.append(f"recorded on {rec.hardware}, reproduced on {env.get('device', 'cpu')}: timings are not comparable")

    # build ------------------------------------------------------------------------------
    build = result.get("build")
    brow = Row(key="build", label="compiles", recorded_text=_recorded_text(rec.compile))
    if build:
        brow.reproduced = True
        secs = build.get("seconds") or 0.0
        brow.reproduced_text = "yes (cached build)" if build.get("cached") else f"yes ({secs:.1f} s)"
    elif failure and failure.get("stage") == "build" and failure.get("kind") not in CANNOT_TEST:
        brow.reproduced = False
        brow.reproduced_text = f"no: {failure.get('kind')}"
    if rec.compile is not None and brow.reproduced is not None:
        if rec.compile.passed == brow.reproduced:
            brow.verdict = REPRODUCED if brow.reproduced else (
                SAME_FAILURE if same_error(rec.compile.error, failure.get("message", "") if failure else "")
                else DIFFERS)
        else:
            brow.verdict = DIFFERS if brow.reproduced else NOT_REPRODUCIBLE
    rows.append(brow)

    # correctness --------------------------------------------------------------------------
    corr = result.get("correctness")
    crow = Row(key="correctness", label="correctness", recorded_text=_recorded_text(rec.correctness),
               reproduced_text=_correctness_text(corr))
    if corr:
        crow.reproduced = corr["passed"]
    rows.append(crow)
    rc = rec.correctness

    if status == "cancelled" or (failure and failure.get("kind") == "cancelled"):
        return Comparison(verdict=CANCELLED, reason=(failure or {}).get("message", "cancelled"), rows=rows,
                          checks=checks, flags=flags, notes=notes)

    if failure:
        kind = failure.get("kind")
        msg = failure.get("message", "")
        where = failure.get("stage", "")
        if crow.reproduced is None:
            crow.reproduced_text = f"{kind}: {_short(msg)}"
        if kind in CANNOT_TEST:
            verdict, reason = NOT_REPRODUCIBLE, f"could not be tested here: {msg}"
        elif kind == "timeout":
            verdict, reason = NOT_REPRODUCIBLE, msg
        else:
            recf = rec.failure
            if recf is not None and same_error(recf.error or recf.summary, msg):
                verdict = SAME_FAILURE
                reason = f"fails the same way as recorded ({recf.where()}): {_short(msg)}"
            elif recf is not None:
                verdict = DIFFERS
                reason = (f"fails differently: the trace recorded \"{_short(recf.error or recf.summary)}\" "
                          f"({recf.where()}); here: {_short(msg)}")
            elif rc is None and rec.compile is not None and rec.compile.passed and build and where != "build":
                # the trace only claims that it compiles: that reproduces; what happens next is news
                verdict = REPRODUCED
                crow.verdict = NOT_RECORDED
                reason = (f"compiles, as recorded ({rec.compile.where()}); the trace never ran it: here it fails "
                          f"{'at ' + where if where else ''}"
                          f"{' trial ' + str(failure['trial']) if failure.get('trial') else ''}: {_short(msg)}")
                return Comparison(verdict=verdict, reason=reason, rows=rows, checks=checks, flags=flags,
                                  notes=notes)
            else:
                verdict = NOT_REPRODUCIBLE
                reason = msg
                if rc is not None and rc.passed:
                    reason += f" (the trace recorded a pass: {rc.where()})"
        if where in ("correctness",) or (where == "build" and rc is not None):
            crow.verdict = verdict
        if corr and corr.get("passed") and rc is not None:
            crow.verdict = REPRODUCED if rc.passed else CORRECTNESS_DISAGREES
        return Comparison(verdict=verdict, reason=reason, rows=rows, checks=checks, flags=flags, notes=notes)

    # completed: correctness verdict
    if corr is not None:
        if rc is None:
            crow.verdict = NOT_RECORDED
        elif rc.passed and corr["passed"]:
            crow.verdict = REPRODUCED
        elif rc.failed and not corr["passed"]:
            if rc.kind == "mismatch":
                crow.verdict = SAME_FAILURE
                crow.note = f"recorded: {_short(rc.error or rc.summary)}; here: {_short(corr.get('mismatch') or '')}"
            else:
                crow.verdict = DIFFERS
                crow.note = (f"the trace recorded a {rc.kind or 'failure'} (\"{_short(rc.error)}\"), here the "
                             f"output is wrong: {_short(corr.get('mismatch') or '')}")
        elif rc.passed and not corr["passed"]:
            crow.verdict = CORRECTNESS_DISAGREES
            crow.note = f"recorded as passing ({rc.where()}); here: {_short(corr.get('mismatch') or 'fails')}"
        else:
            crow.verdict = CORRECTNESS_DISAGREES
            crow.note = (f"recorded as failing ({rc.where()}: \"{_short(rc.error or rc.summary)}\"); it passes here"
                         + (f" on {env.get('device')}" if env.get("device") else ""))
        held = corr.get("held_out")
        if held is not None:
            rows.append(Row(key="correctness.held_out", label="held-out trial",
                            reproduced=held["passed"], reproduced_text="pass" if held["passed"] else "FAIL",
                            verdict=NOT_RECORDED, note=f"seed {held['seed']}, never seen by the trace"))

    # precision -----------------------------------------------------------------------------
    if corr is not None:
        atol = corr.get("atol")
        for k, label in (("max_abs_error", "max abs error"), ("mean_abs_error", "mean abs error"),
                         ("max_rel_error", "max rel error"), ("mean_rel_error", "mean rel error")):
            m = rec.metric(f"precision.{k}")
            if m is None and k not in ("max_abs_error",):
                continue
            rows.append(_precision_row(f"precision.{k}", label, m, corr.get(k), atol))

    # timing --------------------------------------------------------------------------------
    timing = result.get("timing") or {}
    kstats, rstats = timing.get("kernel") or {}, timing.get("reference") or {}
    tol_k = min(MAX_TIME_TOL, max(TIME_TOL, 2 * (kstats.get("cv") or 0.0)))
    tol_r = min(MAX_TIME_TOL, max(TIME_TOL, 2 * (rstats.get("cv") or 0.0)))
    if timing.get("error"):
        notes.append(f"timing: {timing['error']}")
    if corr is not None and corr.get("passed"):
        for key, label, side, stat in TIMING_ROWS:
            st = kstats if side == "kernel" else rstats
            rows.append(_timing_row(key, label, rec.metric(key), st.get(stat), tol_k if side == "kernel" else tol_r))
        sp = rec.metric("timing.speedup")
        rows.append(_value_row("timing.speedup", "speedup", sp, timing.get("speedup"), "x", rel=RATIO_TOL))
        for key, label, side, stat in STAT_ROWS:
            m = rec.metric(key)
            if m is None and stat not in ("median_us",):
                continue
            st = kstats if side == "kernel" else rstats
            if stat == "std_us":
                rows.append(_value_row(key, label, m, st.get(stat), US, shown_only=True))
            else:
                rows.append(_timing_row(key, label, m, st.get(stat), tol_k if side == "kernel" else tol_r))

    # memory, launches ------------------------------------------------------------------------
    mem = result.get("memory") or {}
    la = result.get("launches") or {}
    if mem or rec.metric("memory.kernel_peak_mb") or rec.metric("memory.peak_memory_bytes"):
        if rec.metric("memory.peak_memory_bytes") is not None:
            rows.append(_value_row("memory.peak_memory_bytes", "kernel peak memory",
                                   rec.metric("memory.peak_memory_bytes"), mem.get("kernel_peak_mb"), "MB",
                                   rel=MEM_TOL, abs_tol=1.0, scale=1 / 2**20))
        else:
            rows.append(_value_row("memory.kernel_peak_mb", "kernel peak memory", rec.metric("memory.kernel_peak_mb"),
                                   mem.get("kernel_peak_mb"), "MB", rel=MEM_TOL, abs_tol=1.0))
            rows.append(_value_row("memory.ref_peak_mb", "ref peak memory", rec.metric("memory.ref_peak_mb"),
                                   mem.get("ref_peak_mb"), "MB", rel=MEM_TOL, abs_tol=1.0))
    if la or rec.metric("launches.num_kernels"):
        rows.append(_value_row("launches.num_kernels", "kernel launches", rec.metric("launches.num_kernels"),
                               la.get("num_kernels"), "", exact=True))
        rows.append(_value_row("launches.ref_num_kernels", "ref launches", rec.metric("launches.ref_num_kernels"),
                               la.get("ref_num_kernels"), "", exact=True))
        if rec.metric("launches.fusion_ratio") is not None:
            rows.append(_value_row("launches.fusion_ratio", "fusion ratio (ref / kernel)",
                                   rec.metric("launches.fusion_ratio"), la.get("fusion_ratio"), "x", rel=RATIO_TOL))
        if rec.metric("launches.total_cuda_time_us") is not None:
            r = _value_row("launches.total_cuda_time_us", "total cuda time", rec.metric("launches.total_cuda_time_us"),
                           (la.get("kernel") or {}).get("cuda_time_us"), US, shown_only=True)
            r.note = "profiling windows differ"
            rows.append(r)

    groups = []
    for m in rec.metrics:
        g = m.key.split(".", 1)[0]
        if g not in MEASURED_GROUPS and g not in groups:
            groups.append(g)
    not_measured = [GROUP_NAMES.get(g, g) for g in groups]

    # overall -------------------------------------------------------------------------------
    compared = [r for r in rows if r.verdict in SEVERITY]
    worst = max((r.verdict for r in compared), key=lambda v: SEVERITY[v], default=None)
    if flags and (worst is None or SEVERITY[SUSPICIOUS] > SEVERITY[worst]):
        worst = SUSPICIOUS
    if worst is None:
        worst = REPRODUCED
    reason = _reason(worst, rows, flags, corr, rec)
    return Comparison(verdict=worst, reason=reason, rows=rows, flags=flags, checks=checks,
                      not_measured=not_measured, notes=notes)


def _short(text: str, limit: int = 160) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _reason(verdict: str, rows: list[Row], flags: list[dict[str, Any]], corr: dict[str, Any] | None,
            rec: Recorded) -> str:
    if verdict == SUSPICIOUS:
        return "honesty check failed: " + "; ".join(f"{f['name']}: {f['detail']}" for f in flags)
    hits = [r for r in rows if r.verdict == verdict]
    if verdict == UNIT_ERROR:
        return "; ".join(f"{r.label}: {r.note}" for r in hits)
    if verdict == CORRECTNESS_DISAGREES:
        return "; ".join(r.note for r in hits if r.note) or "correctness differs from the record"
    if verdict == DIFFERS:
        return "; ".join(f"{r.label}: recorded {r.recorded_text}, measured {r.reproduced_text}"
                         + (f" ({r.note})" if r.note else "") for r in hits)
    if verdict == SAME_FAILURE:
        return "; ".join(r.note for r in hits if r.note) or "fails the same way as recorded"
    # reproduced
    bits = []
    if corr is not None:
        if rec.correctness is None:
            bits.append("the trace never checked its correctness; here: " + _correctness_text(corr)
                        + (f" ({_short(corr.get('mismatch'))})" if corr.get("mismatch") else ""))
        else:
            bits.append("correct as recorded" if corr["passed"] else "fails as recorded")
    if any(r.key.startswith("timing.") and r.verdict == REPRODUCED for r in rows):
        bits.append("timings within noise")
    return "; ".join(bits) or "as recorded"
