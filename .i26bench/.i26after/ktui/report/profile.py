"""``ktui repro TRACE --version vK --profile``: print the profile, recorded vs reproduced.

Exit status: 0 when every compared hardware-counter row reproduced, 1 otherwise (a row that
differs, or no profile: ncu missing, no GPU, counters not readable, the kernel failed),
2 for usage errors. Without ncu or a GPU it prints one line on stderr and exits 1.
Needs rich and click only (the profiled worker imports torch).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ktui.repro.profile.compare import GROUP_TITLE, group_of
from ktui.repro.verdict import NOT_RECORDED, SHOWN_ONLY
from ktui.view.text import clean


def _err(msg: str) -> None:
    print(f"ktui: {msg}", file=sys.stderr)


def _pct(v: Any) -> str:
    return f"{v:.1f} %" if isinstance(v, (int, float)) else "n/a"


def _int(v: Any) -> str:
    return f"{int(v)}" if isinstance(v, (int, float)) else "n/a"


def _us(s: Any) -> str:
    return f"{s * 1e6:,.2f} μs" if isinstance(s, (int, float)) else "n/a"


def short_name(name: Any, limit: int = 48) -> str:
    """A kernel's demangled name without its return type, arguments and template arguments."""
    s = clean(str(name or "?"))
    if s.startswith("void "):
        s = s[5:]
    depth, out = 0, []
    for ch in s:
        if ch == "(" and depth == 0:
            break
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip() or "?"
    return s if len(s) <= limit else s[: limit - 1] + "…"


def render_profile(console: Any, report: Any) -> None:
    """The profile as `ktui repro --profile` prints it (also the app panel's text)."""
    from rich.text import Text

    from ktui.report.repro import VERDICT_STYLE, comparison_table

    head = Text()
    head.append(f"{report.version} · sha1 {report.sha1[:12]} · Nsight Compute profile", style="bold")
    head.append("   ")
    head.append(f" {report.verdict.upper()} ", style=VERDICT_STYLE.get(report.verdict, "bold"))
    console.print(head)
    env = report.environment or {}
    bits = [clean(str(env.get("gpu") or "GPU unknown")), f"ncu {report.ncu_version or '?'}",
            f"--clock-control {report.clock_control}", f"--cache-control {report.cache_control}"]
    console.print(Text(" · ".join(bits), style="dim"))
    for side in ("kernel", "reference"):
        sp = report.sides.get(side)
        if sp is None:
            continue
        f = sp.forward or {}
        line = Text(f"{side}: ", style="bold")
        if sp.status != "completed":
            line.append(f"not profiled: {clean(sp.message)}")
        else:
            names = ", ".join(sorted({short_name(k.get("name")) for k in sp.launches}))
            line.append(f"{f.get('launches', 0)} launch{'es' if f.get('launches') != 1 else ''} "
                        f"({names or 'none'}), {_us(f.get('duration_s'))} in one forward")
            passes = max(sp.passes.values()) if sp.passes else None
            if passes:
                line.append(f", {passes} ncu passes")
            if sp.wall_seconds is not None:
                line.append(f", {sp.wall_seconds:.1f} s under ncu", style="dim")
        console.print(line)
        if sp.status == "completed" and len(sp.launches) > 1:
            for k in sp.launches:
                console.print(Text(f"  #{k.get('id')} {short_name(k.get('name'))}: {_us(k.get('duration_s'))}, "
                                   f"SM {_pct(k.get('sm_pct'))}, DRAM {_pct(k.get('dram_pct'))}, "
                                   f"occupancy {_pct(k.get('occupancy_pct'))}, grid {_int(k.get('grid_size'))} x "
                                   f"block {_int(k.get('block_size'))}", style="dim"))

    if not report.rows:
        v = Text("verdict: ")
        v.append(report.verdict, style=VERDICT_STYLE.get(report.verdict, "bold"))
        v.append(f" — {clean(report.reason or report.message)}")
        console.print(v)
        console.print()
        return
    table = comparison_table(24)
    noted = []
    group = None
    for r in report.rows:
        g = group_of(r)
        if g != group:
            group = g
            table.add_row(Text(GROUP_TITLE.get(g, g), style="bold underline"), "", "", "", "")
        ratio = "" if r.ratio is None else (f"{r.ratio:,.0f}x" if abs(r.ratio) >= 100 else f"{r.ratio:.2f}x")
        verdict = Text(r.verdict, style=VERDICT_STYLE.get(r.verdict, ""))
        if r.note and (r.verdict not in (NOT_RECORDED, SHOWN_ONLY) or "impossible" in r.note
                       or "implausible" in r.note):
            noted.append(r)
            verdict.append(f" [{len(noted)}]", style="dim")
        table.add_row(clean(r.label), clean(r.recorded_text), r.reproduced_text, ratio, verdict)
    console.print(table)
    for i, r in enumerate(noted, 1):
        console.print(Text(f"  [{i}] {clean(r.label)}: {clean(r.note)}", style="dim"))
    if report.callouts:
        console.print(Text("values the page cannot have:", style="bold magenta"))
        for c in report.callouts:
            console.print(Text(f"  ! {clean(c)}", style="magenta"))
    kf = report.sides["kernel"].forward if report.sides.get("kernel") else {}
    top = kf.get("stalls_top") or []
    if top:
        fam = kf.get("stall_family") or ""
        total = sum(v for v in (kf.get("stall_counts") or {}).values() if v > 0)
        what = (f"share of {total:,.0f} stall samples" if fam.startswith("smsp__pcsamp") else
                "share of stall cycles per issued instruction (no PC samples)")
        few = " — too few samples to mean much" if fam.startswith("smsp__pcsamp") and total < 100 else ""
        console.print(Text(f"measured warp stalls ({what}{few}): "
                           + ", ".join(f"{s['reason']} {s['share_pct']:.1f} %" for s in top), style="dim"))
    chart = (report.roofline or {}).get("chart") or []
    if chart:
        console.print(Text("roofline", style="bold"))
        legend = next((i for i, ln in enumerate(chart) if ln.startswith("roof:")), len(chart))
        for i, ln in enumerate(chart):
            if i < legend:
                console.print(Text(ln), overflow="crop", no_wrap=True)
            else:
                console.print(Text(ln))
    for n in report.notes:
        console.print(Text(f"note: {clean(n)}", style="dim"))
    v = Text("verdict: ")
    v.append(report.verdict, style=VERDICT_STYLE.get(report.verdict, "bold"))
    v.append(f" — {clean(report.reason)}")
    console.print(v)
    if report.wall_seconds is not None:
        console.print(Text(f"(profiled in {report.wall_seconds:.1f} s)", style="dim"))
    console.print()


def profile_command(path: Path | str, *, turn: int | None = None, version: str | None = None, final: bool = False,
                    reference: str | None = None, device: str | None = None, timeout: float = 600.0,
                    compile_timeout: float | None = None, clock_control: str = "none",
                    as_json: bool = False) -> int:
    from ktui.repro.api import ReproError, select_kernels
    from ktui.repro.profile.run import ProfileOptions, profile
    from ktui.trace import load

    run = load(str(path))
    try:
        kernels = select_kernels(run, turn=turn, version=version, final=final)
    except ReproError as exc:
        _err(str(exc))
        return 2
    from rich.console import Console

    console = Console() if sys.stdout.isatty() else Console(width=110)
    options = ProfileOptions(device=device, timeout=timeout, compile_timeout=compile_timeout,
                             clock_control=clock_control, reference_path=reference)
    cancel = threading.Event()
    # SIGTERM / SIGHUP (a `timeout`, a closed terminal): kill ncu and the worker (their own process
    # group) before exiting, instead of leaving them profiling on the GPU
    old_handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old_handlers[sig] = signal.signal(sig, lambda *_: cancel.set())
    try:
        report = profile(run, kernels[0], options, cancel=cancel)
    except ReproError as exc:
        _err(str(exc))
        return 2
    except KeyboardInterrupt:
        cancel.set()
        _err("interrupted")
        return 130
    finally:
        for sig, h in old_handlers.items():
            signal.signal(sig, h)
    if report.status == "cancelled":
        _err(f"profile cancelled: {report.message}")
        return 1
    if report.status == "unavailable":
        _err(f"cannot profile: {report.message}")
        if as_json:
            sys.stdout.write(json.dumps(report.to_dict(), indent=1, default=str) + "\n")
        return 1
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=1, default=str) + "\n")
    else:
        render_profile(console, report)
    return 0 if report.ok and report.verdict in ("reproduced",) else 1
