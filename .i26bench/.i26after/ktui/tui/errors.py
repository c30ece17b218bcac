"""The one place where errors of the app go: a notification on screen and a line in the log.

Workers that fail, renderables that raise, a cache that cannot be read: each calls
:func:`report` (screens get it through :meth:`ktui.tui.screens.base.KtuiScreen.worker_failed`).
The notification is plain text (never markup; the text is sanitized); the log entry, with the
traceback, is appended to ``$KTUI_CACHE_DIR/ktui.log`` (default ``~/.cache/ktui/ktui.log``),
never written to the terminal the app draws on. When the log cannot be written the
notification says so.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from ktui import settings
from ktui.view.text import clean


def log_path() -> Path:
    return settings.current().log_file


def describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return clean(text if isinstance(exc, OSError) else f"{type(exc).__name__}: {text}")


def write_log(message: str, exc: BaseException | None = None) -> str | None:
    """Append one entry to the log; returns why it could not be written, or None."""
    entry = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} ERROR {message}\n"
    if exc is not None:
        entry += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(entry)
    except OSError as err:
        return f"log not written ({path}: {err.strerror or err})"
    return None


def report(node: Any, where: str, exc: BaseException, *, timeout: float = 6) -> str:
    """Notify (call it on the UI thread) and log one error; returns the message shown."""
    message = f"{where}: {describe(exc)}"
    problem = write_log(message, exc)
    shown = message[:500] + (f"\n{problem}" if problem else "")
    app = getattr(node, "app", None)
    if app is not None:
        app.notify(shown, title="error", severity="error", timeout=timeout, markup=False)
    return message
