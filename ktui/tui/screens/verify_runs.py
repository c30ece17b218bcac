"""`v` in ``ktui runs``: verify the marked runs (or every run shown) with ``ktui verify``'s engine.

The first `v` in an app asks for a second `v` (it executes model-written code on this machine; the
same one confirmation as the replay screen's `r`). The engine runs in a thread worker: build
processes and one timing slot per GPU (CPU: one), each kernel in a fresh sandboxed worker process;
the table gains a "reproduced" column that fills in as kernels finish (queued, building, timing,
then the verdict and the reproduced speedup), and the aggregates show recorded → reproduced.
`v` again while it runs stops it (what finished is cached; `v` later goes on from there).

No torch here (the worker processes import it); nothing from the trace reaches the screen but as
sanitised plain text.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Group
from rich.text import Text
from textual.message import Message

from ktui.repro.verdict import (
    CORRECTNESS_DISAGREES,
    DIFFERS,
    HARNESS_ERROR,
    NOT_JUDGED,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    SAME_FAILURE,
    SUSPICIOUS,
    UNIT_ERROR,
    compare,
)
from ktui.trace.words import count, plural

CONFIRMED_ATTR = "_ktui_repro_confirmed"  # one confirmation per app, shared with `r` and `p`
CONFIRM_WINDOW_S = 10.0
SHORT = {REPRODUCED: "reproduced", SAME_FAILURE: "same failure", DIFFERS: "differs", UNIT_ERROR: "unit error?",
         CORRECTNESS_DISAGREES: "DISAGREES", NOT_REPRODUCIBLE: "NOT REPRODUCED", SUSPICIOUS: "SUSPICIOUS",
         NOT_JUDGED: "not judged here", HARNESS_ERROR: "harness error"}


class Verification:
    """One `v` run: its engine (to stop it), its planner and, at the end, its report."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.engine: Any = None
        self.planner: Any = None
        self.report: Any = None
        self.stopped = threading.Event()
        self.running = True
        self.error: str | None = None

    def stop(self) -> None:
        self.stopped.set()
        if self.engine is not None:
            self.engine.stop()


def cell_for(row: Any, result: dict[str, Any] | None) -> str:
    """The reproduced cell of one run: the short verdict and the reproduced speedup."""
    from ktui.repro.verify.results import Verified
    from ktui.view.text import one_line

    if result is None or row.recorded is None:
        return "not testable" if row.note else "—"
    v = Verified(row, result, compare(row.recorded, result))
    text = SHORT.get(v.verdict, v.verdict)
    if v.speedup is not None:
        text += f" {v.speedup:.2f}x"
    return one_line(text, 26)


def request_verify(screen: Any) -> None:
    """`v` pressed on the runs screen."""
    from ktui.tui.widgets.runs_table import RunsTable

    state: Verification | None = getattr(screen, "_verification", None)
    if state is not None and state.running:
        state.stop()
        screen.notify("stopping the verification (finished kernels are cached)", markup=False)
        return
    table = screen.query_one(RunsTable)
    runs = table.marked_runs or [table.rows[i] for i in table.view]
    if not runs:
        screen.notify("no runs to verify", severity="warning", markup=False)
        return
    app = screen.app
    if not getattr(app, CONFIRMED_ATTR, False):
        asked = getattr(screen, "_verify_asked", 0.0)
        if time.monotonic() - asked > CONFIRM_WINDOW_S:
            screen._verify_asked = time.monotonic()
            screen.notify(f"v again to verify {count(len(runs), 'run')}: this builds and runs model-written kernels on "
                          "this machine (each in a fresh process with a temporary directory, secrets removed "
                          "from its environment, a timeout per stage)", timeout=CONFIRM_WINDOW_S, markup=False)
            return
        setattr(app, CONFIRMED_ATTR, True)
    state = Verification([s.real or s.path for s in runs])
    screen._verification = state
    table.set_reproduced({p: "queued" for p in state.paths})
    screen.run_worker(lambda: _verify_thread(screen, state), thread=True, exclusive=True, group="runs-verify",
                      name="verify")
    screen.notify(f"verifying {count(len(runs), 'run')}…", markup=False)


def _verify_thread(screen: Any, state: Verification) -> None:
    from ktui.repro.api import ReproOptions
    from ktui.repro.verify import engine as E
    from ktui.repro.verify.plan import Planner
    from ktui.repro.verify.results import build_report

    def post(message: Message) -> None:
        if not screen.post_message(message):  # the screen is closing
            state.stop()

    def cells(job: str, text: str | None = None, result: dict[str, Any] | None = None) -> None:
        rows = [r for r in list(planner.rows) if r.job == job]
        if rows:
            post(VerifyCells({r.real: (text or cell_for(r, result)) for r in rows}))

    def on_event(ev: Any) -> None:
        if ev.kind == E.BUILD_START:
            cells(ev.job, "building…")
        elif ev.kind == E.TIME_START:
            cells(ev.job, "timing…")
        elif ev.kind in (E.TIMED, E.FAILED):
            cells(ev.job, result=ev.result)

    # the screen may carry other settings (tests do); the defaults are `ktui verify`'s
    options = getattr(screen, "verify_options", None) or ReproOptions()
    slots = E.make_slots(None, None, 1)
    planner = Planner(state.paths, options, cpu=E.cpu_only(options.device, slots))
    state.planner = planner

    def jobs():
        yield from planner
        known = planner.known()
        post(VerifyCells({r.real: cell_for(r, known.get(r.job) if r.job else None)
                          for r in list(planner.rows) if not r.job or r.job in known}))

    try:
        eng = E.LocalEngine(options, slots=slots, on_event=on_event,
                            build_root=getattr(screen, "verify_build_root", None))
        state.engine = eng
        if state.stopped.is_set():
            eng.stop()
        eng.run(jobs())
        state.report = build_report(planner.rows, {**planner.known(), **eng.results}, cached=set(planner.cached))
    except Exception as exc:  # shown to the user, never a crash of the app
        state.error = f"{type(exc).__name__}: {exc}"
    finally:
        state.running = False
        post(VerifyDone(state))


class VerifyCells(Message):
    """New texts for the reproduced column (real path -> text), from the verify thread."""

    def __init__(self, texts: dict[str, str]) -> None:
        super().__init__()
        self.texts = texts


class VerifyDone(Message):
    """The verification ended (done, stopped or failed: ``state`` says which)."""

    def __init__(self, state: Verification) -> None:
        super().__init__()
        self.state = state


def on_cells(screen: Any, message: VerifyCells) -> None:
    """The runs screen's handler of :class:`VerifyCells`."""
    _set(screen, message.texts)


def on_done(screen: Any, message: VerifyDone) -> None:
    """The runs screen's handler of :class:`VerifyDone`."""
    _finished(screen, message.state)


def _set(screen: Any, texts: dict[str, str]) -> None:
    from ktui.tui.widgets.runs_table import RunsTable

    screen.query_one(RunsTable).set_reproduced(texts)


def _finished(screen: Any, state: Verification) -> None:
    from ktui.view.text import one_line

    if state.error:
        screen.notify(f"verify failed: {one_line(state.error, 200)}", severity="error", markup=False)
    elif state.report is not None:
        bad = len(state.report.claims)
        nj = int(state.report.stats.get("not_judged") or 0)
        done = "stopped" if state.stopped.is_set() else "verified"
        screen.notify(f"{done}: {count(len(state.report.rows), 'run')}, {count(bad, 'claim')} that {plural(bad, 'does', 'do')} not hold"
                      + (f" of {state.report.stats.get('judged', 0)} judged, {nj} not judged here" if nj else ""),
                      severity="warning" if bad else "information", markup=False)
    screen._update_aggregates()


def with_reproduced(screen: Any, recorded_table: Any) -> Any:
    """The aggregates panel: the recorded table, then recorded → reproduced once verified (the
    verify report's view, :func:`ktui.view.verify.verify_view`, its models table drawn at its own
    width: the panel scrolls sideways)."""
    from ktui.tui.widgets.resultview import table_lines
    from ktui.view.verify import verify_view

    state: Verification | None = getattr(screen, "_verification", None)
    if state is None or state.report is None:
        return recorded_table
    title = Text("verified: recorded → reproduced", style="bold")
    lines, _ = table_lines(verify_view(state.report.record()).models_table)
    return Group(recorded_table, title, Text("\n", no_wrap=True).join(lines))


def stop(screen: Any) -> None:
    state: Verification | None = getattr(screen, "_verification", None)
    if state is not None and state.running:
        state.stop()
