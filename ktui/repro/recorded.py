"""What the trace recorded about one kernel version: the other side of the verdict.

- compile / correctness outcomes: the version's uses (compile_kernel, run_correctness,
  submit_kernel calls that carried its code), each with its status and error text;
- metrics: ``run.metrics`` when this version is the one that was submitted;
- the hardware and precision the trace names.

Works on the :mod:`ktui.trace` model only; where the model lacks something (the reference
source on older readers, the recorded hardware) it looks at the raw tool results itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ktui.trace.results.evaluated import evaluated_other_code

CORRECTNESS_TOOLS = ("run_correctness", "submit_kernel")
COMPILE_TOOLS = ("compile_kernel",)


@dataclass
class RecordedOutcome:
    tool: str
    turn: int | None
    call_index: int
    status: str  # ok | failed | error | missing
    error: str = ""
    summary: str = ""
    line: int | None = None
    kind: str = ""  # compile | runtime | mismatch | dispatcher | "" (passed)

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def where(self) -> str:
        if self.turn is None and self.call_index == -1:  # the harness's result file
            return self.tool
        t = f"turn {self.turn}" if self.turn is not None else "seed"
        return f"{self.tool} at {t}" + (f" (line {self.line})" if self.line else "")


@dataclass
class Recorded:
    label: str
    sha1: str
    compile: RecordedOutcome | None = None
    correctness: RecordedOutcome | None = None
    outcomes: list[RecordedOutcome] = field(default_factory=list)
    submitted: bool = False
    metrics: list[Any] = field(default_factory=list)  # ktui.trace.model.Metric
    metrics_source: str = ""
    correct: bool | None = None
    hardware: str | None = None
    precision: str | None = None
    findings: list[Any] = field(default_factory=list)  # ktui.trace.findings.Finding of this version
    # the harness's result file, set aside: its record is about other code than this version (why, in words)
    set_aside: str = ""

    @property
    def failure(self) -> RecordedOutcome | None:
        """The recorded failure of this version, if its latest outcome was one."""
        cands = [o for o in (self.compile, self.correctness) if o is not None]
        if not cands:
            return None
        last = max(cands, key=lambda o: o.call_index)
        return last if last.failed else None

    def metric(self, key: str) -> Any:
        for m in self.metrics:
            if m.key == key:
                return m
        return None


def _call(run: Any, index: int) -> Any:
    """The call a KernelUse names (``call_index`` is its position in ``run.calls``; -1: none)."""
    return run.calls[index] if 0 <= index < len(run.calls) else None


def _kind(tool: str, status: str, result: Any) -> str:
    if status == "ok":
        return ""
    if status in ("error", "missing"):
        return "dispatcher"
    eff = getattr(result, "effect", None) or {}
    det = eff.get("details") if isinstance(eff.get("details"), dict) else {}
    meta = getattr(result, "meta", None) or {}
    if tool in COMPILE_TOOLS or det.get("compile_error") or meta.get("compiled") is False \
            or meta.get("compile_error") or eff.get("compiled") is False:
        return "compile"
    if det.get("runtime_error") or (isinstance(meta.get("error"), str) and meta.get("error")):
        return "runtime"
    return "mismatch"


def recorded_for(run: Any, kernel: Any) -> Recorded:
    rec = Recorded(label=kernel.label, sha1=kernel.sha1)
    for use in kernel.uses:
        call = _call(run, use.call_index)
        res = getattr(call, "result", None) if call is not None else None
        error = (res.error_text or "") if res is not None else ""
        oc = RecordedOutcome(tool=use.tool, turn=use.turn, call_index=use.call_index, status=use.status,
                             error=error, summary=use.summary or (getattr(res, "summary", "") or ""),
                             line=getattr(res, "line", None) or getattr(call, "line", None),
                             kind=_kind(use.tool, use.status, res))
        if use.tool not in COMPILE_TOOLS + CORRECTNESS_TOOLS:
            continue
        rec.outcomes.append(oc)
        if oc.status in ("error", "missing"):
            continue  # the dispatcher failed: says nothing about the kernel
        if use.tool in COMPILE_TOOLS:
            rec.compile = oc
        else:
            if oc.kind == "compile":
                rec.compile = oc
            rec.correctness = oc

    final = getattr(run, "final_kernel", None)
    _from_result_file(run, kernel, final, rec)
    metrics = getattr(run, "metrics", None)
    submitted_here = any(u.tool == "submit_kernel" and u.status in ("ok", "failed") for u in kernel.uses)
    if metrics is not None and final is not None and final.sha1 == kernel.sha1 and submitted_here:
        rec.submitted = True
        rec.metrics = [m for ms in metrics.groups.values() for m in ms]
        rec.metrics_source = metrics.source
        rec.correct = metrics.correct
    rec.hardware = recorded_hardware(run)
    prob = getattr(run, "problem", None)
    rec.precision = getattr(prob, "precision", None)
    rec.findings = static_findings(run, kernel)
    return rec


def _from_result_file(run: Any, kernel: Any, final: Any, rec: Recorded) -> None:
    """The harness's own result file (ktui.trace.results: Harbor reward.json, KernelBench
    eval_results.json) is the record of the run's final kernel: it is what the sweep counted,
    and it outranks the agent's own checks in the transcript."""
    results = getattr(run, "results", None) or []
    r = results[0] if results else None
    if r is None or r.harness in ("inspect", "ensemble") or final is None or final.sha1 != kernel.sha1:
        return
    if r.correct is None and r.compiled is None:
        return
    err = r.error or ""
    other = "" if r.correct else evaluated_other_code(err, getattr(kernel, "code", None))
    if other:  # never compared with this version: only the trace's own checks are
        rec.set_aside = f"{r.source} ({r.harness}) set aside: {other}"
        return
    refused = any(c[0] == "harness_rejected" for c in (getattr(r, "cheats", None) or []))
    if r.correct:
        status, kind = "ok", ""
    elif refused:  # the harness's own static rule (a banned op...) refused it: its outputs were never the question
        status, kind = "failed", "refused"
    else:
        status = "failed"
        kind = "compile" if r.compiled is False else "runtime" if "runtime_error" in err or "Error" in err[:80] \
            else "mismatch"
    oc = RecordedOutcome(tool=f"{r.source} ({r.harness})", turn=None, call_index=-1, status=status, error=err[:2000],
                         summary=f"correct: {'yes' if r.correct else 'no'}" + (f"; {r.speedups_text()}" if r.speedups
                                                                                 else ""), kind=kind)
    rec.outcomes.append(oc)
    rec.correctness = oc
    if r.compiled is not None or r.correct:
        rec.compile = RecordedOutcome(tool=oc.tool, turn=None, call_index=-1,
                                      status="ok" if (r.compiled or r.correct) else "failed",
                                      error=err[:2000] if kind == "compile" else "", kind="compile" if kind == "compile"
                                      else "")
    rec.correct = r.correct


def static_findings(run: Any, kernel: Any) -> list[Any]:
    """The static honesty findings of ``kernel``, each pinned to the version and turn that
    introduced it (the run's versions up to this one decide that)."""
    from ktui.trace.findings import run_findings

    number = getattr(kernel, "number", None)
    versions = [k for k in (getattr(run, "kernels", None) or []) if getattr(k, "number", None) is not None
                and number is not None and k.number <= number] or [kernel]
    if versions[-1] is not kernel and getattr(versions[-1], "sha1", None) != getattr(kernel, "sha1", None):
        versions = [kernel]
    ref = getattr(getattr(run, "problem", None), "reference_source", None)
    prec = getattr(getattr(run, "problem", None), "precision", None)
    return [f for f in run_findings(versions, ref, prec) if f.kernel == number]


def recorded_hardware(run: Any) -> str | None:
    """The GPU the trace says it ran on (submit runtime_stats.hardware, get_gpu_specs, KTBench meta)."""
    for c in reversed(getattr(run, "calls", []) or []):
        res = getattr(c, "result", None)
        if res is None:
            continue
        eff = res.effect or {}
        for k in ("runtime_stats", "ref_runtime_stats"):
            st = eff.get(k)
            if isinstance(st, dict) and isinstance(st.get("hardware"), str):
                return st["hardware"]
        if c.name == "get_gpu_specs" and isinstance(eff.get("device_name"), str):
            return eff["device_name"]
        meta = res.meta or {}
        for k in ("hardware", "tgt_hw", "hw_key"):
            if isinstance(meta.get(k), str) and meta.get(k):
                return meta[k]
    return None


def find_reference(run: Any) -> tuple[str | None, str]:
    """The run's reference source and where it came from ('' when none)."""
    prob = getattr(run, "problem", None)
    src = getattr(prob, "reference_source", None)
    if isinstance(src, str) and src.strip():
        return src, getattr(prob, "reference_origin", None) or "the trace"
    return None, ""
