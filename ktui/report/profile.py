"""``ktui repro TRACE --version vK --profile``: print the profile, recorded vs reproduced.

Exit status: 0 when every compared hardware-counter row reproduced, 1 otherwise (a row that
differs, or no profile: ncu missing, no GPU, counters not readable, the kernel failed),
2 for usage errors. Without ncu or a GPU it prints one line on stderr and exits 1.
Needs rich and click only (the profiled worker imports torch).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ktui.view.profile import short_name  # noqa: F401  (kept here for callers of the old name)
from ktui.view.text import json_text


def _err(msg: str) -> None:
    from ktui.view.text import clean

    print(f"ktui: {clean(msg)}", file=sys.stderr)


def render_profile(console: Any, report: Any) -> None:
    """The profile as ``ktui repro --profile`` prints it (:func:`ktui.view.profile.profile_view`)."""
    from ktui.report.draw import draw
    from ktui.view.profile import profile_view

    draw(console, profile_view(report).parts)


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
            sys.stdout.write(json_text(report.to_dict()) + "\n")
        return 1
    if as_json:
        sys.stdout.write(json_text(report.to_dict()) + "\n")
    else:
        render_profile(console, report)
    return 0 if report.ok and report.verdict in ("reproduced",) else 1
