"""Consoles for the text commands: plain text when piped, never markup from trace text."""

from __future__ import annotations

from rich.console import Console

PIPE_WIDTH = 120  # the least width of piped output
MAX_PIPE_WIDTH = 4000
TABLE_PIPE_WIDTH = 10_000  # tables size to their content: piped, they get all the room they need


def out_console(content_width: int = 0) -> Console:
    """stdout. Piped, it is as wide as the widest line of the content (``content_width``, at least
    :data:`PIPE_WIDTH`): piped output never wraps."""
    c = Console(highlight=False)
    if not c.is_terminal:
        c = Console(highlight=False, width=min(MAX_PIPE_WIDTH, max(PIPE_WIDTH, content_width)))
    return c


def table_console(file, term: bool) -> Console:
    """A console for tables (``runs``, ``compare``): the terminal's width, or unbounded when piped."""
    return Console(file=file, highlight=False, soft_wrap=not term, width=None if term else TABLE_PIPE_WIDTH)


def err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)
