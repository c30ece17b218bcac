"""Consoles for the text commands: plain text when piped, never markup from trace text."""

from __future__ import annotations

import os

from rich.console import Console

PIPE_WIDTH = 120


def out_console() -> Console:
    """stdout; a fixed, readable width when piped (unless COLUMNS says otherwise)."""
    c = Console(highlight=False)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = Console(highlight=False, width=PIPE_WIDTH)
    return c


def err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)
