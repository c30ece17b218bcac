"""What the app's tests share (they repeated it, file by file): waiting for the replay screen to
load, letting the app's background work settle before a snapshot, and collecting the app's error
notifications."""

from __future__ import annotations

from typing import Any

from ktui.tui.screens.replay import ReplayScreen


async def wait_ready(app: Any, pilot: Any, tries: int = 500) -> ReplayScreen:
    """The replay screen once it has loaded (its first stage: ``ready``), polled every 20 ms up to
    ``tries`` times (a count, not a clock: a loaded machine gets longer, never a false failure)."""
    for _ in range(tries):
        await pilot.pause(0.02)
        if isinstance(app.screen, ReplayScreen) and app.screen.ready:
            await pilot.pause()
            return app.screen
    raise AssertionError("the replay screen did not load")


async def settle(pilot: Any) -> None:
    """Background work (diff sizes, raw events) done, animations over, no notification left: what a
    snapshot is taken after."""
    app = pilot.app
    for _ in range(100):
        await pilot.pause(0.02)
        if all(w.is_finished for w in app.workers):
            break
    await pilot.wait_for_scheduled_animations()
    app.clear_notifications()
    await pilot.pause(0.1)


def collect_errors(app: Any) -> list[str]:
    """The messages of every error notification the app shows from now on (the list fills)."""
    errors: list[str] = []
    orig = app.notify

    def notify(message, *a, severity="information", **kw):
        if severity == "error":
            errors.append(str(message))
        return orig(message, *a, severity=severity, **kw)

    app.notify = notify
    return errors
