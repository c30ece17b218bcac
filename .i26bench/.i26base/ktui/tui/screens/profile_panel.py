"""The `p` key of the repro panel: profile the kernel version under Nsight Compute.

Same rules as `r`: the first run in this app asks for confirmation (it executes model-written
code, here under ncu, which replays each kernel many times); ``escape`` cancels (kills the
worker's process group). The profile runs in a worker thread; the result (recorded vs
reproduced hardware counters, the roofline chart, what bounds the kernel) replaces the panel's
body. Without ncu or a GPU the panel says so in one line. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text

from ktui.report.console import rendered_text
from ktui.tui.screens.repro_messages import ProfileDone, ReproFailed, ReproProgress

CONFIRMED_ATTR = "_ktui_repro_confirmed"  # shared with the `r` key: one confirmation per app


def console_text(render: Callable[[Any, Any], None], report: Any, width: int = 110) -> Text:
    """What ``render(console, report)`` (a command's terminal rendering) prints at ``width``
    (60 at least), as Rich Text for a Static (its styled segments: no ANSI round trip)."""
    return rendered_text(render, report, max(60, width))


def render_profile_text(report: Any, width: int = 110) -> Text:
    from ktui.report.profile import render_profile

    return console_text(render_profile, report, width)


def request_profile(screen: Any) -> None:
    """`p` pressed on the repro panel."""
    if screen.state in ("running", "cancelling"):
        return
    if not getattr(screen.app, CONFIRMED_ATTR, False):
        ask(screen)
    else:
        start_profile(screen)


def ask(screen: Any) -> None:
    from textual.widgets import Static

    screen.state = "confirm"
    screen._pending_profile = True
    k = screen.kernel
    opts = screen.options
    screen._status("This profiles model-written code from the trace on this machine, under Nsight Compute.")
    screen.query_one("#repro-report", Static).update(Text(
        f"kernel {k.label} (sha1 {k.sha1[:12]}) and its reference will each be built and run under ncu in a "
        f"separate process: a fresh temporary directory, secrets removed from its environment, its own process "
        f"group, {opts.timeout:g} s per stage. One forward after a warm-up is profiled; ncu replays each of its "
        f"kernels once per counter group (tens of passes), with --clock-control none and caches flushed "
        f"before every pass."))
    screen._hint("enter: profile  ·  esc: cancel")


def start_profile(screen: Any) -> None:

    screen._pending_profile = False
    cancel = screen.begin_running("profiling under Nsight Compute…")
    run, kernel, opts = screen.run_model, screen.kernel, screen.options

    def work() -> None:
        from ktui.repro.api import ReproError
        from ktui.repro.profile.run import ProfileOptions, profile

        popts = ProfileOptions(device=opts.device, timeout=opts.timeout, compile_timeout=opts.compile_timeout,
                               reference_path=opts.reference_path)
        try:
            rep = profile(run, kernel, popts, cancel=cancel,
                          on_progress=lambda p: screen.post_message(ReproProgress(p)))
        except ReproError as exc:
            screen.post_message(ReproFailed(str(exc)))
            return
        except Exception as exc:  # never take the app down
            screen.post_message(ReproFailed(f"profile failed: {exc}"))
            return
        screen.post_message(ProfileDone(rep))  # the panel shows it (show_profile)

    screen.run_worker(work, thread=True, exclusive=True, group="repro", exit_on_error=False)


def show_profile(screen: Any, report: Any) -> None:
    from textual.widgets import ProgressBar, Static

    screen.state = "done"
    screen.profile_report = report
    screen.query_one(ProgressBar).display = False
    body = screen.query_one("#repro-report", Static)
    # the reason once, in the body; the status line only says what happened
    if report.status == "unavailable":
        screen._status("cannot profile here (the reason is below)")
        screen._shown = None
        body.update(Text(f"cannot profile: {report.message}"))
    elif report.status != "completed":
        screen._status(f"profile {report.status} (the reason is below)")
        screen._shown = None
        body.update(Text(f"profile {report.status}: {report.message}"))
    else:
        screen._status(f"profile: {report.verdict}")
        screen.show_rendered(lambda width: render_profile_text(report, width))
    screen._hint("p: profile again  ·  r: re-run  ·  esc: close")
