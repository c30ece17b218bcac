"""The `r` key of the replay app: re-execute a kernel snapshot and show recorded vs reproduced.

Entry point (what ReplayScreen.action_repro calls)::

    open_repro_panel(screen, run, version)    # version: "v3", "final", ...

It pushes a :class:`ReproScreen` (a modal) for that kernel version:

1. when an earlier result for these settings is cached, it shows it at once (``r`` re-runs); so too
   a kernel that is not judged here, decided from its source before any worker starts (CUDA / Triton
   code on a machine without CUDA: :func:`ktui.repro.api.known_report`);
2. otherwise the first run in this app asks for confirmation (it executes model-written code);
3. while running: a progress bar through the stages (startup, build, reference, correctness,
   timing, memory, launches, checks) with the current trial; ``escape`` cancels, which kills
   the worker process group;
4. then the recorded-vs-reproduced table, verdict and environment line (as ``ktui repro``):
   widgets built from the view (:func:`ktui.view.repro.repro_view`, :class:`ResultDoc`), laid
   out at the panel's width (the table's columns by priority) and again on a resize.

The screen dismisses with the last :class:`ktui.repro.api.ReproReport` (or None). Every run
gets a fresh judge process and fresh sandboxed reference and candidate workers (no process
ever runs two kernels' code); the confirmation lists exactly the protections this machine
gives them (:func:`ktui.engine.sandbox.planned`), and the result says which were in
force. Everything shown is rendered as plain text. Nothing here imports torch.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, ProgressBar, Static
from textual.worker import Worker, WorkerState

from ktui import settings
from ktui.engine import sandbox
from ktui.repro.api import (
    ReproError,
    ReproOptions,
    ReproReport,
    known_report,
    latest_report,
    reproduce,
    worker_limits,
)
from ktui.repro.runner import Progress, WarmWorker, install_signal_handlers
from ktui.trace.model import Run
from ktui.trace.words import count
from ktui.tui.errors import report as report_error
from ktui.tui.keys import Key, bindings, check_table
from ktui.tui.screens.repro_messages import ProfileDone, ReproDone, ReproFailed, ReproLookedUp, ReproProgress
from ktui.tui.widgets.resultview import ResultDoc
from ktui.view.text import clean

__all__ = ["ReproScreen", "open_repro_panel", "cached_verdict", "shared_worker"]

_CONFIRMED_ATTR = "_ktui_repro_confirmed"
_WORKER_ATTR = "_ktui_repro_worker"


def cache_shown() -> str:
    """Where results are cached (``ktui.settings``), with the home directory as ``~``."""
    where = settings.current().repro_cache_dir
    try:
        return "~/" + str(where.relative_to(Path.home()))
    except (ValueError, RuntimeError):  # not under home, or no home
        return str(where)


def shared_worker(app: Any) -> WarmWorker:
    """The app's repro handle (created on first use; every run starts fresh processes, which
    end with the app: PR_SET_PDEATHSIG and the SIGTERM/SIGHUP handlers)."""
    w = getattr(app, _WORKER_ATTR, None)
    if w is None:
        w = WarmWorker()
        setattr(app, _WORKER_ATTR, w)
    return w


def cached_verdict(run: Any, kernel: Any) -> str | None:
    """The verdict of the newest cached reproduction of this kernel judged against this trace's
    own reference (any other settings), or None.
    Cheap (reads a few small JSON files): usable to badge the kernels pane."""
    try:
        report = latest_report(run, kernel)  # the entry `ktui report` shows for the run, too
    except (OSError, ValueError):  # an unreadable cache has no verdict to show
        return None
    return report.verdict if report is not None else None


class ReproScreen(ModalScreen["ReproReport | None"]):
    """Re-run one kernel version; shows progress, then recorded vs reproduced."""

    # one key, one meaning across the app (tests/test_tui_keys.py): enter goes (runs when asked),
    # esc goes back (cancels, else closes), r re-runs, p profiles, q quits (killing a running worker)
    KEYS = [
        Key("escape", "back", "cancel the run (kills the worker), else close the panel", footer="cancel / close"),
        Key("enter", "go", "run (when asked to confirm)"),
        Key("r", "repro", "re-run the kernel (fresh)", footer="re-run"),
        Key("p", "profile", "profile the kernel and its reference under Nsight Compute", footer="profile (ncu)"),
        Key("q", "quit", "quit (a running worker is killed first)"),
    ]
    check_table(KEYS)
    BINDINGS = bindings(KEYS)
    DEFAULT_CSS = """
    ReproScreen { align: center middle; }
    ReproScreen > Vertical { width: 90%; height: 90%; border: round $accent; padding: 0 1;
                             background: $surface; }
    ReproScreen #repro-title { text-style: bold; }
    ReproScreen #repro-status { color: $text-muted; }
    ReproScreen ProgressBar { width: 100%; }
    ReproScreen #repro-body { height: 1fr; }
    ReproScreen #repro-hint { color: $text-muted; }
    """

    def __init__(self, run: Any, kernel: Any, options: ReproOptions | None = None, *,
                 confirm: bool | None = None) -> None:
        super().__init__()
        self.run_model = run
        self.kernel = kernel
        self.options = options or ReproOptions()
        self._confirm = confirm
        self.state = "idle"  # idle | looking | confirm | running | cancelling | done
        self.report: ReproReport | None = None
        self._cancel: threading.Event | None = None

    # ---- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        k = self.kernel
        turns = ",".join(str(t) for t in getattr(k, "turns", []) or [])
        with Vertical():
            yield Label(Text(clean(f"repro {k.label} · sha1 {k.sha1[:12]}" + (f" · turns {turns}" if turns else ""))),
                        id="repro-title")
            yield Label("", id="repro-status")
            yield ProgressBar(total=100, show_eta=False, show_percentage=True, id="repro-progress")
            with VerticalScroll(id="repro-body"):
                yield Static("", id="repro-report")  # what the panel says (confirmation, why not)
                yield ResultDoc(id="repro-result")  # a reproduction or a profile, from its view
            yield Label("", id="repro-hint")

    def on_mount(self) -> None:
        self.query_one(ProgressBar).display = False
        self.state = "looking"
        self._status("looking for a cached result…")
        self._lookup()

    @work(thread=True, exclusive=True, group="repro-lookup", exit_on_error=False,
          description="cached repro result")
    def _lookup(self) -> None:
        """The cache lookup probes the environment (nvidia-smi, up to seconds): off the UI thread. What
        is known without a run (a cached result, or "not judged here" decided from the kernel's source,
        as ``ktui repro`` and ``ktui verify`` decide it) is shown without asking to run anything."""
        self.post_message(ReproLookedUp(known_report(self.run_model, self.kernel, self.options)))

    # ---- what the workers post (their threads never call into the panel) ---------------------------
    def on_repro_looked_up(self, message: ReproLookedUp) -> None:
        self._looked_up(message.report)

    def on_repro_progress(self, message: ReproProgress) -> None:
        self._progress(message.progress)

    def on_repro_done(self, message: ReproDone) -> None:
        self._finished(message.report)

    def on_profile_done(self, message: ProfileDone) -> None:
        from ktui.tui.screens.profile_panel import show_profile

        show_profile(self, message.report)

    def on_repro_failed(self, message: ReproFailed) -> None:
        self._error(message.message)

    def _looked_up(self, rep: ReproReport | None) -> None:
        if self.state != "looking":
            return
        if rep is not None:
            self._show(rep)
            return
        need = self._confirm if self._confirm is not None else not getattr(self.app, _CONFIRMED_ATTR, False)
        if need:
            self._ask()
        else:
            self._start()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR or event.worker.error is None:
            return
        message = report_error(self, event.worker.group or "repro", event.worker.error)
        if event.worker.group == "repro-lookup":  # no cached result to show: offer a run
            self.state = "looking"
            self._looked_up(None)
        elif event.worker.group == "repro" and self.state in ("running", "cancelling"):
            self._error(message)

    # ---- states ----------------------------------------------------------------------------------
    def _status(self, text: str) -> None:
        self.query_one("#repro-status", Label).update(Text(clean(text)))

    def _hint(self, text: str) -> None:
        self.query_one("#repro-hint", Label).update(Text(text))

    def _ask(self) -> None:
        self.state = "confirm"
        opts = self.options
        dev = opts.device or "cuda if available, else cpu"
        self._status("This re-executes model-written code from the trace on this machine.")
        try:
            words = sandbox.planned("cpu" if opts.device == "cpu" else "cuda", worker_limits().get("memory_limit"))
        except Exception as exc:  # noqa: BLE001 - say so rather than claim protections
            words = [f"(could not determine the sandbox: {exc})"]
        protections = "\n".join(f"  • {w}" for w in words)
        self.show_message(Text(
            f"kernel {clean(self.kernel.label)} (sha1 {self.kernel.sha1[:12]}) will be built and run; "
            f"ktui's judge (no trace code) compares and times it. Protections on this machine:\n"
            f"{protections}\n  • the kernel's processes stopped while the reference is timed\n"
            f"  • {opts.timeout:g} s per stage\n\n"
            f"device: {dev} · timing: {opts.method}, {count(opts.trials, 'trial')} per batch until the median is "
            f"stable · correctness: {count(opts.correctness_trials, 'seeded trial')} + 1 held-out\n\n"
            f"Results are cached under {clean(cache_shown())} (never written into the trace), signed so that "
            "trace code cannot forge them."))
        self._hint("enter: run  ·  esc: cancel")

    def begin_running(self, status: str) -> threading.Event:
        """The panel from confirmation to running a worker (re-execution, or the profiler of
        profile_panel): confirmed for the app, an empty progress bar and report, ``status``;
        returns the new cancel event (``escape`` sets it)."""
        setattr(self.app, _CONFIRMED_ATTR, True)
        self.state = "running"
        self._cancel = threading.Event()
        bar = self.query_one(ProgressBar)
        bar.display = True
        bar.update(progress=0)
        self._status(status)
        self.show_message("")
        self._hint("esc: cancel (kills the worker)")
        return self._cancel

    def _start(self) -> None:
        self._work(self.begin_running("starting the worker…"))

    def _show(self, report: ReproReport) -> None:
        self.state = "done"
        self.report = report
        self.query_one(ProgressBar).display = False
        when = f" (cached, {report.created})" if report.cached else ""
        self._status(clean(f"verdict: {report.verdict}{when}"))
        from ktui.view.repro import repro_view

        self.show_parts(repro_view(report).parts)
        self._hint("r: re-run  ·  p: profile (ncu)  ·  esc: close")

    def show_parts(self, parts: tuple[Any, ...]) -> None:
        """Show a result document (a reproduction's or a profile's view) in the body; its widgets
        lay themselves out at the body's width, and again after a resize."""
        self.query_one("#repro-report", Static).display = False
        doc = self.query_one("#repro-result", ResultDoc)
        doc.display = True
        doc.show(parts)

    def show_message(self, text: str | Text) -> None:
        """Show what the panel says (plain text) in the body instead of a result."""
        body = self.query_one("#repro-report", Static)
        body.update(text if isinstance(text, Text) else Text(clean(text)))
        body.display = True
        doc = self.query_one("#repro-result", ResultDoc)
        doc.display = False
        doc.show(())

    # ---- the run (thread) -----------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="repro", exit_on_error=False)
    def _work(self, cancel: threading.Event) -> None:
        try:
            rep = reproduce(self.run_model, self.kernel, self.options,
                            on_progress=lambda p: self.post_message(ReproProgress(p)),
                            cancel=cancel, worker=shared_worker(self.app))
        except ReproError as exc:  # a usage problem (no reference source): said in the panel
            self.post_message(ReproFailed(str(exc)))
            return
        self.post_message(ReproDone(rep))  # anything else: on_worker_state_changed

    def _progress(self, p: Progress) -> None:
        if self.state not in ("running", "cancelling"):
            return
        self.query_one(ProgressBar).update(progress=round(100 * p.fraction))
        if self.state == "running":
            self._status(clean(f"{p.message}  ·  {p.elapsed:.1f} s"))

    def _finished(self, report: ReproReport) -> None:
        self._show(report)

    def _error(self, message: str) -> None:
        self.state = "done"
        self.query_one(ProgressBar).display = False
        self._status(clean(message))
        self._hint("esc: close")

    # ---- actions ------------------------------------------------------------------------------------
    @classmethod
    def key_table(cls) -> list[Key]:
        return list(cls.KEYS)

    def action_go(self) -> None:
        if self.state == "confirm":
            if getattr(self, "_pending_profile", False):
                from ktui.tui.screens.profile_panel import start_profile

                start_profile(self)
            else:
                self._start()

    def action_profile(self) -> None:
        from ktui.tui.screens.profile_panel import request_profile  # see profile_panel.py

        request_profile(self)

    def action_repro(self) -> None:
        if self.state == "done":
            self.options = replace(self.options, fresh=True)
            self._start()

    def action_back(self) -> None:
        if self.state == "looking":
            self.state = "idle"  # the lookup's answer is dropped
            self.dismiss(self.report)
            return
        if self.state == "running" and self._cancel is not None:
            self.state = "cancelling"
            self._cancel.set()
            self._status("cancelling: killing the worker…")
            return
        if self.state == "cancelling":
            return
        self.dismiss(self.report)

    def action_quit(self) -> None:
        if self._cancel is not None and self.state in ("running", "cancelling"):
            self._cancel.set()  # the worker's process group is killed before the app goes
        self.app.exit()


def open_repro_panel(screen: Screen, run: Run, version: str = "final",
                     options: ReproOptions | None = None) -> None:
    """Open the repro panel over `screen` for one kernel version of the loaded `run`."""
    kernel = run.kernel(version) if version else run.final_kernel
    if kernel is None:
        screen.notify(escape(clean(f"no kernel version {version!r} in this trace")), severity="warning", timeout=3)
        return
    if not kernel.code:
        screen.notify(escape(clean(f"{kernel.label} has no code in the trace (attachment stub?)")), severity="warning",
                      timeout=3)
        return
    install_signal_handlers()
    screen.app.push_screen(ReproScreen(run, kernel, options))
