"""Sanity flags on what a trace claims, each with a one-line reason.

Metric flags: implausible GPU runtimes and unit errors, missing or zero medians, percentages
over 100, excessive speedups (KernelBench's > 10x rule). Kernel flags: the static honesty
findings of :mod:`ktui.trace.findings` (torch fallbacks, marker kernels, timer patches, threads,
pointer caches ...), each pinned to the version and turn that introduced it.
Harness flags: identical failures for every case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ktui.trace.model import FAILED, Flag, KernelVersion, Run

if TYPE_CHECKING:
    from ktui.trace.findings import Finding

EXCESSIVE_SPEEDUP = 10.0


def run_findings(kernels, reference: str | None = None, precision: str | None = None) -> list[Finding]:
    """:func:`ktui.trace.findings.run_findings`, imported on first use: compiling its patterns
    takes ~0.2 s, which the app's first paint (findings come later, from a worker) need not pay."""
    from ktui.trace.findings import run_findings as run

    return run(kernels, reference, precision)



def finding_message(f: Finding) -> str:
    """``v7: <what the code does> — line 58: `C = torch.matmul(A, B)`; introduced at turn 6 in v4``."""
    bits = []
    if f.line is not None:
        bits.append(f"line {f.line}" + (f": `{f.evidence}`" if f.evidence else ""))
    if f.turn is not None:
        bits.append(f"introduced at turn {f.turn}" + (f" in v{f.since}" if f.since != f.kernel else ""))
    elif f.since != f.kernel:
        bits.append(f"introduced in v{f.since}")
    return f"v{f.kernel}: {f.what}" + (f" — {'; '.join(bits)}" if bits else "")


def _flag(f: Finding) -> Flag:
    return Flag(f.code, finding_message(f), f.severity, kernel=f.kernel, turn=f.turn, since=f.since,
                src_line=f.line, evidence=f.evidence)


def kernel_flags(kv: KernelVersion, reference: str | None = None, precision: str | None = None) -> list[Flag]:
    """The static findings of one version (pinned to that version alone; :func:`compute_flags`
    pins them to the version and turn that introduced them)."""
    if kv.attachment:
        what = (f"code is an unresolved {kv.attachment[:24]}… stub" if kv.attachment.startswith("attachment://")
                else f"code not in the trace: {kv.attachment[:120]}")
        return [Flag("code_unavailable", f"{kv.label}: {what}", "info", kernel=kv.number)]
    return [_flag(f) for f in run_findings([kv], reference, precision)]


def harness_flags(run: Run) -> list[Flag]:
    out: list[Flag] = []
    errors_by_kernel: dict[int, set[str]] = {}
    for c in run.calls:
        if c.name != "run_correctness" or c.status != FAILED:
            continue
        r = c.result  # made on access when kept by column: once
        if r is None:
            continue
        errs = r.case_errors
        if len(errs) >= 2 and len(set(errs)) == 1:
            if c.kernel is not None:
                errors_by_kernel.setdefault(c.kernel, set()).add(errs[0])
    if errors_by_kernel:
        all_errs = set().union(*errors_by_kernel.values())
        if len(all_errs) == 1 and len(errors_by_kernel) >= 2:
            err = next(iter(all_errs))
            out.append(Flag("harness_identical_failures",
                            f"every case of {len(errors_by_kernel)} different kernels failed with the same error: "
                            f"{err[:90]} (likely a harness defect, not the agent)", "warning"))
        else:
            for kn, kerrs in errors_by_kernel.items():
                if len(kerrs) == 1:
                    out.append(Flag("identical_case_failures",
                                    f"v{kn}: all cases failed with the same error: {next(iter(kerrs))[:90]}",
                                    "info", kernel=kn))
    return out


def final_flags(run: Run) -> list[Flag]:
    """A final kernel that no verifier output is about, while another version's is: the run's
    result is not the final kernel's (imported formats, where outputs are pinned to versions)."""
    final = run.final_kernel
    if final is None or any(u.verdict for u in final.uses):
        return []
    judged = [(u.call_index, k, u) for k in run.kernels for u in k.uses if u.verdict and k is not final]
    if not judged:
        return []
    _, k, u = max(judged, key=lambda x: x[0])
    return [Flag("final_unevaluated", f"the final kernel {final.label} has no verifier result in the trace; the last "
                                      f"one is about {k.label} ({u.status}: {u.summary[:90]})", "warning",
                 kernel=final.number)]


def metric_flags(run: Run) -> list[Flag]:
    m = run.metrics
    if m is None:
        return []
    out: list[Flag] = []
    for ms in m.groups.values():
        for x in ms:
            if x.note and "milliseconds" in x.note:
                out.append(Flag("unit_ms_as_us", f"{x.label}: {x.note}", "warning", metric=x.key))
            elif x.unit == "us" and isinstance(x.value, float) and 0 < x.value < 1.0 and x.key.startswith("timing."):
                out.append(Flag("runtime_below_1us", f"{x.label}: {x.value:g} us is below any GPU launch floor",
                                "warning", metric=x.key))
            if x.unit == "%" and isinstance(x.value, (int, float)) and x.value > 100:
                out.append(Flag("pct_over_100", f"{x.label}: {x.value:g}% is over 100% (a normalisation error)",
                                "warning", metric=x.key))
            if x.key.endswith("median") and x.key.startswith("timing.") and (x.value in (None, 0, 0.0)):
                what = "missing" if x.value is None else "zero"
                out.append(Flag("median_missing", f"{x.label}: {what} (the harness's timing stats have no "
                                "median key)", "warning", metric=x.key))
    if m.speedup is not None and m.speedup > EXCESSIVE_SPEEDUP:
        out.append(Flag("speedup_excessive", f"speedup {m.speedup:.2f}x is over {EXCESSIVE_SPEEDUP:g}x "
                        "(KernelBench's excessive-speedup rule)", "warning", metric="timing.speedup"))
    return out


def compute_flags(run: Run, *, findings: bool = True) -> list[Flag]:
    """Every sanity flag of the run. ``findings=False`` leaves out the static findings of the
    kernel versions (an AST walk per version: the bulk of a load's time on a run with hundreds
    of versions); the app computes them in a worker after its first paint."""
    flags = metric_flags(run)
    final = run.final_kernel
    for kv in run.kernels:
        if kv.attachment:
            flags.extend(kernel_flags(kv))
    for f in run_findings(run.kernels, run.problem.reference_source, run.problem.precision) if findings else ():
        flag = _flag(f)
        # flags on the final kernel matter most; earlier versions are informational
        if final is not None and f.kernel != final.number and flag.severity == "error":
            flag.severity = "warning"
        flags.append(flag)
    flags.extend(harness_flags(run))
    flags.extend(final_flags(run))
    return flags


def with_findings(run: Run) -> list[Flag]:
    """The flags of a run loaded with ``findings=False``, the static findings added: what
    :func:`compute_flags` gives, and the flags added after it (a result file's verdict,
    :func:`ktui.trace.results.attach`) kept at the end, where a full load has them."""
    lean = compute_flags(run, findings=False)
    return compute_flags(run) + list(run.flags[len(lean):])
