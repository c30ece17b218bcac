"""The ktui Textual app: a thin shell that shows screens.

``KtuiApp(start)`` takes a factory for its first screen; every interactive command is a screen
(``ReplayScreen`` here; ``CompareScreen`` and ``RunsScreen`` from ktui.tui.screens.compare / runs).
Screens can open each other through :meth:`KtuiApp.open_replay` and :meth:`KtuiApp.open_compare`.
The app adds each screen's ``palette_commands()`` to the command palette.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from textual.app import App, SystemCommand
from textual.screen import Screen

ScreenFactory = Callable[[], Screen]


class KtuiApp(App):
    """The one app; which screen it starts on is up to the caller."""

    CSS_PATH = "ktui.tcss"
    TITLE = "ktui"

    def __init__(self, start: ScreenFactory | None = None, **kw) -> None:
        super().__init__(**kw)
        self._start = start

    def on_mount(self) -> None:
        if self._start is not None:
            self.push_screen(self._start())

    # ---- navigation between screens (used by runs / compare) ---------------------------------
    def open_replay(self, path: str | Path, *, follow: bool = False) -> None:
        from ktui.tui.screens.replay import ReplayScreen

        self.push_screen(ReplayScreen(path, follow=follow))

    def open_compare(self, paths: Sequence[str | Path]) -> None:
        from ktui.tui.screens.compare import CompareScreen

        self.push_screen(CompareScreen([Path(p) for p in paths]))

    def freeze_heap(self) -> None:
        """Call after loading a big run: moves what exists now out of the garbage collector's
        view (``gc.freeze``), so full collections stop walking the run's objects and do not
        pause redraws for tens of milliseconds."""
        gc.freeze()

    # ---- a crash -------------------------------------------------------------------------------
    def _handle_exception(self, error: Exception) -> None:
        """An unhandled exception ends the app (Textual prints the traceback); it is logged too,
        and the command exits non-zero (:func:`_exit_code`)."""
        from ktui.tui.errors import describe, write_log

        write_log(f"the app stopped: {describe(error)}", error)
        super()._handle_exception(error)

    # ---- command palette -------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        extra = getattr(screen, "palette_commands", None)
        if callable(extra):
            yield from extra()


def replay_app(path: str | Path, *, follow: bool = False) -> KtuiApp:
    from ktui.tui.screens.replay import ReplayScreen

    return KtuiApp(lambda: ReplayScreen(path, follow=follow))


def _exit_code(app: App, **kw) -> int:
    """The app's exit status: non-zero when it crashed (Textual prints the error once; it is in
    the log too, and this says where)."""
    app.run(**kw)
    code = app.return_code or 0
    if code:
        from ktui.tui.errors import log_path

        print(f"ktui: the app stopped on an error (also logged in {log_path()})", file=sys.stderr)
    return code


def run_replay(path: str | Path, follow: bool = False) -> int:
    """`ktui replay TRACE [--follow]`."""
    return _exit_code(replay_app(path, follow=follow))


def run_compare(paths: Sequence[str | Path]) -> int:
    """`ktui compare A B ...` (the screen is ktui.tui.screens.compare.CompareScreen)."""
    from ktui.tui.screens.compare import CompareScreen

    return _exit_code(KtuiApp(lambda: CompareScreen([Path(p) for p in paths])))


def run_runs(directory: str | Path, use_cache: bool = True, *, labels: Sequence[str] = (),
             exclude: Sequence[str] = (), labels_file: str | None = None) -> int:
    """`ktui runs DIR` (the screen is ktui.tui.screens.runs.RunsScreen)."""
    from ktui.tui.screens.runs import RunsScreen

    return _exit_code(KtuiApp(lambda: RunsScreen(Path(directory), use_cache=use_cache, labels=labels,
                                                 exclude=exclude, labels_file=labels_file)))
