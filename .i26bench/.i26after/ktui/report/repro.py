"""``ktui repro TRACE``: re-execute kernel snapshots and print recorded vs reproduced.

Exit status: 0 when every selected version reproduced (``reproduced`` or ``reproduced: fails
the same way``), 1 when any other verdict, 2 for usage errors (no such version, no reference),
130 when interrupted. Needs rich and click only (no Textual, no orjson, no torch: the worker
process imports torch).
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from ktui.engine.defaults import METHOD, STAGE_TIMEOUT_S, TRIALS
from ktui.repro.verdict import (
    CANCELLED,
    CORRECTNESS_DISAGREES,
    DIFFERS,
    HARNESS_ERROR,
    NOT_JUDGED,
    NOT_RECORDED,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    SAME_FAILURE,
    SHOWN_ONLY,
    SUSPICIOUS,
    UNIT_ERROR,
    row_texts,
)

VERDICT_STYLE = {
    REPRODUCED: "bold green", SAME_FAILURE: "bold green", DIFFERS: "bold yellow", UNIT_ERROR: "bold magenta",
    CORRECTNESS_DISAGREES: "bold red", NOT_REPRODUCIBLE: "bold red", SUSPICIOUS: "bold red reverse",
    NOT_RECORDED: "dim", SHOWN_ONLY: "dim", CANCELLED: "yellow", NOT_JUDGED: "bold yellow", HARNESS_ERROR: "bold yellow",
}


def _err(msg: str) -> None:
    from ktui.view.text import clean

    print(f"ktui: {clean(msg)}", file=sys.stderr)


def plain(text: Any, style: str = "") -> Any:
    """Untrusted text as a Rich Text: never parsed as markup, escapes and controls made visible."""
    from rich.text import Text

    from ktui.view.text import clean

    return Text(clean("" if text is None else str(text)), style=style)


def comparison_table(value_width: int) -> Any:
    """The empty metric / recorded / reproduced / ratio / verdict table of a repro or profile
    report (the two differ only in how wide a value may be)."""
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, expand=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("recorded", overflow="fold", max_width=value_width)
    table.add_column("reproduced", overflow="fold", max_width=value_width)
    table.add_column("ratio", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    return table


def sandbox_line(result: dict[str, Any]) -> str:
    sb = result.get("sandbox") or {}
    words = sb.get("candidate") or []
    if not words:
        return ""
    return "sandbox (in force for the kernel): " + ", ".join(str(w) for w in words)


def environment_line(result: dict[str, Any]) -> str:
    env = result.get("environment") or {}
    if not env:
        return "environment: unknown (the worker did not start)"
    parts = []
    if env.get("gpu"):
        parts.append(str(env["gpu"]))
        parts.append(f"driver {env.get('driver') or '?'}")
    else:
        parts.append(f"CPU {env.get('cpu') or '?'} ({env.get('threads', '?')} threads)")
    parts.append(f"torch {env.get('torch')}")
    parts.append(f"CUDA {env.get('cuda') or '-'}")
    parts.append(str(env.get("arch") or env.get("device")))
    t = result.get("timing") or {}
    if t:
        m = t.get("method_used") or t.get("method")
        s = f"{m}, {t.get('trials')} trials"
        if t.get("l2_flush_mib"):
            s += f", L2 flush {t['l2_flush_mib']} MiB"
        cs = t.get("candidate_stopped")
        if isinstance(cs, dict) and cs.get("windows"):
            s += f", the kernel's processes stopped while the reference was timed (they used {float(cs.get('cpu_seconds') or 0):.2f} s of CPU)"
        parts.append(s)
        fl = t.get("floor")
        if fl:
            parts.append(f"timer floor {fl['busy_queue_us']:.2f} μs (naive {fl['naive_us']:.2f})")
    return " · ".join(parts)


def render_report(console: Any, report: Any) -> None:
    from rich.text import Text

    comp = report.comparison
    res = report.result
    head = Text()
    head.append_text(plain(report.version, "bold"))
    head.append(f" · sha1 {report.sha1[:12]}")
    if report.turns:
        t = report.turns
        head.append(f" · turn{'s' if len(t) > 1 else ''} {t[0]}" + (f"-{t[-1]}" if len(t) > 1 else ""))
    if report.recorded is not None and report.recorded.submitted:
        head.append(" · final submission")
    head.append("   ")
    head.append(f" {comp.verdict.upper()} ", style=VERDICT_STYLE.get(comp.verdict, "bold"))
    console.print(head)
    if report.reference_origin:
        console.print(plain(f"reference: {report.reference_origin}", "dim"))
    console.print(plain(environment_line(res), "dim"))
    sbl = sandbox_line(res)
    if sbl:
        console.print(plain(sbl, "dim"))
    seeds = res.get("seeds") if isinstance(res.get("seeds"), dict) else {}
    if isinstance(seeds.get("inputs"), int):
        console.print(plain(f"inputs: drawn from seed {seeds['inputs']}, new for this run and unknown to the kernel "
                            f"(--input-seed {seeds['inputs']} replays them)", "dim"))

    table = comparison_table(34)
    noted = []
    for r in comp.rows:
        ratio = "" if r.ratio is None else (f"{r.ratio:,.0f}x" if abs(r.ratio) >= 100 else f"{r.ratio:.2f}x")
        verdict = plain(r.verdict, VERDICT_STYLE.get(r.verdict, ""))
        if r.note and r.verdict not in (NOT_RECORDED, SHOWN_ONLY):
            noted.append(r)
            verdict.append(f" [{len(noted)}]", style="dim")
        rec_text, rep_text = row_texts(r)
        table.add_row(plain(r.label), plain(rec_text), plain(rep_text), plain(ratio), verdict)
    console.print(table)
    for i, r in enumerate(noted, 1):
        console.print(plain(f"  [{i}] {r.label}: {r.note}", "dim"))

    if comp.checks:
        line = Text("checks: ")
        for c in comp.checks:
            mark, style = {True: ("✓", "green"), False: ("✗", "bold red"), None: ("–", "dim")}[c.get("ok")]
            line.append_text(plain(f"{mark} {c['name']}  ", style))
        console.print(line)
    if comp.findings:
        render_findings(console, comp.findings)
    tm = res.get("timing") or {}
    if isinstance(tm.get("host_bound"), dict):
        console.print(plain(tm["host_bound"].get("reason", "host-bound"), "magenta"))
    if comp.not_measured:
        console.print(Text("not re-measured: " + ", ".join(comp.not_measured)
                           + " (needs Nsight Compute: add --profile)", style="dim"))
    for n in comp.notes:
        console.print(plain(f"note: {n}", "dim"))
    f = res.get("failure")
    if f and f.get("detail") and f.get("kind") in ("compile_error", "import_error", "runtime_error", "cuda_error"):
        tail = "\n".join(str(f["detail"]).strip().splitlines()[-6:])
        console.print(plain(tail, "dim red"))
    v = Text("verdict: ")
    v.append_text(plain(comp.verdict, VERDICT_STYLE.get(comp.verdict, "bold")))
    v.append_text(plain(f" — {comp.reason}"))
    console.print(v)
    wall = res.get("wall_seconds")
    if report.cached:
        console.print(plain(f"(cached result from {report.created or 'an earlier run'}; --fresh re-runs it)",
                            "dim"))
    elif wall is not None:
        console.print(Text(f"(ran in {wall:.1f} s)", style="dim"))
    console.print()


def render_findings(console: Any, findings: list[Any]) -> None:
    """One row per honesty finding: its class, what the kernel does, the evidence, and where
    (static: the source line and the turn that introduced it; dynamic: the probe)."""
    from rich.table import Table

    table = Table(title=None, show_header=True, header_style="bold red", box=None, pad_edge=False, expand=False)
    table.add_column("honesty finding", no_wrap=True, style="bold red")
    table.add_column("what the kernel does", overflow="fold", max_width=52)
    table.add_column("evidence", overflow="fold", max_width=34, style="dim")
    table.add_column("found", overflow="fold", max_width=18)
    for f in findings:
        where = f.source if f.source != "static" else ("code" + (f", line {f.line}" if f.line is not None else ""))
        if f.turn is not None:
            where += f"; turn {f.turn}" + (f" ({f.since})" if f.since else "")
        table.add_row(plain(f.cls), plain(f.reason), plain(f.evidence or "—"), plain(where))
    console.print(table)


def brief_line(report: Any) -> Any:
    """One version's result as one line (``ktui repro --brief``; grep-able, never wrapped):
    version, sha1, turns, verdict, reproduced correctness and speedup, honesty classes, reason."""
    from rich.text import Text

    comp = report.comparison
    res = report.result or {}
    corr = res.get("correctness") if isinstance(res.get("correctness"), dict) else {}
    tm = res.get("timing") if isinstance(res.get("timing"), dict) else {}
    sp = tm.get("speedup")
    here = ("passed" if corr.get("passed") else "failed") if corr else (
        str((res.get("failure") or {}).get("kind") or "not run"))
    if isinstance(sp, (int, float)) and not isinstance(sp, bool):
        here += f" {sp:.2f}x"
    turns = ",".join(str(t) for t in report.turns) or "—"
    line = Text()
    line.append_text(plain(report.version, "bold"))
    line.append(f"  sha1={report.sha1[:12]}  turns={turns}  ")
    line.append_text(plain(comp.verdict, VERDICT_STYLE.get(comp.verdict, "bold")))
    line.append_text(plain(f"  here={here}  classes={','.join(comp.classes) or '—'}"
                           + ("  cached" if report.cached else "") + f"  {comp.reason}"))
    line.plain = line.plain.replace("\n", " ")
    return line


def render_summary(console: Any, reports: list[Any]) -> None:
    from rich.table import Table

    table = Table(title="summary", box=None, header_style="bold")
    table.add_column("version")
    table.add_column("turns")
    table.add_column("verdict")
    table.add_column("classes", overflow="fold", max_width=28)
    table.add_column("reason", overflow="fold", max_width=80)
    for r in reports:
        turns = ",".join(str(t) for t in r.turns)
        table.add_row(plain(r.version), plain(turns), plain(r.verdict, VERDICT_STYLE.get(r.verdict, "")),
                      plain(", ".join(r.comparison.classes) or "—"), plain(r.reason))
    console.print(table)


class _ProgressDisplay:
    """A transient Rich progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress = None
        self._task = None

    def start(self, label: str) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(),
                                  TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=Console(stderr=True), transient=True)
        self._progress.start()
        from rich.markup import escape

        self._task = self._progress.add_task("starting…", total=1.0, label=escape(label))

    def update(self, p: Any) -> None:
        if self._progress is not None:
            from rich.markup import escape

            from ktui.view.text import clean

            self._progress.update(self._task, completed=p.fraction, description=escape(clean(p.message)))

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def repro_command(path: Path | str, *, turn: int | None = None, version: str | None = None, final: bool = False,
                  all_: bool = False, reference: str | None = None, device: str | None = None, trials: int = TRIALS,
                  method: str = METHOD, timeout: float = STAGE_TIMEOUT_S, fresh: bool = False,
                  as_json: bool = False, compile_timeout: float | None = None, input_seed: int | None = None,
                  tasks: str | None = None, brief: bool = False) -> int:
    from ktui.repro.api import ReproError, ReproOptions, reproduce, select_kernels
    from ktui.repro.runner import install_signal_handlers
    from ktui.trace import load

    install_signal_handlers()
    run = load(str(path))
    try:
        kernels = select_kernels(run, turn=turn, version=version, final=final, all_=all_)
        options = ReproOptions(device=device, trials=trials, method=method, timeout=timeout, fresh=fresh,
                               reference_path=reference, compile_timeout=compile_timeout, input_seed=input_seed,
                               tasks_dir=tasks)
    except ReproError as exc:
        _err(str(exc))
        return 2
    if device and not (device == "cpu" or device == "cuda" or device.startswith("cuda:")):
        _err(f"--device {device!r}: use cuda, cuda:N or cpu")
        return 2

    from ktui.report.console import out_console

    console = out_console()
    progress = _ProgressDisplay(enabled=not as_json and sys.stderr.isatty())
    reports = []
    cancel = threading.Event()
    try:
        for kv in kernels:
            progress.start(kv.label)
            try:
                report = reproduce(run, kv, options, on_progress=progress.update, cancel=cancel)
            except ReproError as exc:
                progress.stop()
                _err(str(exc))
                return 2
            finally:
                progress.stop()
            reports.append(report)
            if brief and not as_json:
                console.print(brief_line(report), soft_wrap=True)
            elif not as_json:
                render_report(console, report)
    except KeyboardInterrupt:
        cancel.set()
        progress.stop()
        _err("interrupted")
        return 130
    if as_json:
        if len(reports) == 1 and not all_:
            payload = reports[0].to_dict()
        else:
            payload = {"trace": str(path), "versions": [r.to_dict() for r in reports]}
        sys.stdout.write(json.dumps(payload, indent=1, default=str) + "\n")
    elif len(reports) > 1 and not brief:
        render_summary(console, reports)
    return 0 if all(r.good for r in reports) else 1
