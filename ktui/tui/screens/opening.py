"""Opening a trace or a comparison from a sweep screen (the runs table, the charts): through the
app's ``open_replay`` / ``open_compare`` when it has them, else by pushing the screen."""

from __future__ import annotations

from pathlib import Path

from textual.screen import Screen

from ktui.tui.errors import report
from ktui.view.text import one_line


def open_replay(screen: Screen, path: Path) -> None:
    """Push the replay screen for ``path`` (through the app's ``open_replay`` when it has one)."""
    app = screen.app
    try:
        opener = getattr(app, "open_replay", None)
        if callable(opener):
            opener(path)
        else:
            from ktui.tui.screens.replay import ReplayScreen

            app.push_screen(ReplayScreen(path))
    except Exception as exc:  # noqa: BLE001 - a bad trace must not take the app down: the one handler reports it
        report(screen, f"cannot open {one_line(path.name)}", exc)


def open_compare(screen: Screen, paths: list[Path]) -> None:
    app = screen.app
    opener = getattr(app, "open_compare", None)
    if callable(opener):
        opener(paths)
    else:
        from ktui.tui.screens.compare import CompareScreen

        app.push_screen(CompareScreen(paths))
