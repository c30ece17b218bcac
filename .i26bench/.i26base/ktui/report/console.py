"""Consoles for the text commands: plain text when piped, never markup from trace text.

Every text command is as wide as ``COLUMNS`` says, else the terminal, else :data:`DEFAULT_WIDTH`
(piped with no ``COLUMNS``): ``COLUMNS=100 ktui show TRACE | cat`` has no line over 100
characters. Nothing is padded to the widest line of the content; long lines wrap (code, prose)
or are cut with an ellipsis (table cells). Records meant for ``grep`` (``validate``, ``repro
--brief``, ``verify``) are printed with ``soft_wrap=True``: one record, one line, whatever the width.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.style import Style
from rich.text import Text

DEFAULT_WIDTH = 100  # piped, with no COLUMNS
MIN_WIDTH = 40


def output_width(file=None) -> int:
    """``COLUMNS`` when set (a positive number), else the terminal's width, else 100."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return max(MIN_WIDTH, int(cols))
    f = file if file is not None else sys.stdout
    try:
        if f.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(f.fileno()).columns)
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_WIDTH


class TrimmedLines:
    """A text file that writes every line without its trailing blanks (rich pads panels' and
    wrapped paragraphs' lines to the console's width): piped output is never padded."""

    def __init__(self, file) -> None:
        self.file = file
        self.encoding = getattr(file, "encoding", None) or "utf-8"
        self._tail = ""

    def write(self, s: str) -> int:
        *lines, self._tail = (self._tail + s).split("\n")
        if lines:
            self.file.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(s)

    def flush(self) -> None:
        if self._tail:
            self.file.write(self._tail)
            self._tail = ""
        self.file.flush()

    def isatty(self) -> bool:
        return False


def _is_tty(file) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):
        return False


def out_console(file=None) -> Console:
    """stdout (or ``file``), :func:`output_width` wide; piped, its lines carry no trailing blanks."""
    f = file if file is not None else sys.stdout
    width = output_width(f)
    return Console(file=f if _is_tty(f) else TrimmedLines(f), highlight=False, width=width)


def table_console(file, term: bool) -> Console:
    """A console for tables (``runs``, ``compare``): :func:`output_width` wide; the tables choose
    the columns that fit (:func:`ktui.report.runs.runs_table`)."""
    return out_console(file)


def err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


class TextConsole:
    """A console that keeps what a command's renderer prints (``render(console, report)``) as
    one Rich ``Text`` with its styles, for a widget: the renderables' segments are appended as
    they are, so nothing is written as ANSI escapes and parsed back. Only ``print`` is offered
    (the renderers of ``repro``, ``--profile`` and ``verify`` use nothing else)."""

    def __init__(self, width: int) -> None:
        self._console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor",
                                legacy_windows=False, highlight=False)
        self.text = Text()

    @property
    def width(self) -> int:
        return self._console.width

    def print(self, *objects: Any, style: Any = None, overflow: Any = None, no_wrap: bool | None = None,
              soft_wrap: bool = False, end: str = "\n", **_: Any) -> None:
        c = self._console
        if soft_wrap:
            no_wrap, overflow = True, "ignore"
        options = c.options.update(overflow=overflow, no_wrap=no_wrap)
        base = c.get_style(style) if style else None
        items = [c.render_str(o) if isinstance(o, str) else o for o in objects]
        if len(items) > 1 and all(isinstance(o, Text) for o in items):
            items = [Text(" ").join(items)]  # as Console.print joins texts: one line
        for renderable in items:
            for seg in c.render(renderable, options):
                if not seg.control:
                    self.text.append(seg.text, Style.chain(base, seg.style) if base else seg.style)
        if not objects:  # print(): a blank line (a renderable ends its own last line)
            self.text.append(end)


def rendered_text(render: Callable[[Any, Any], None], report: Any, width: int) -> Text:
    """What ``render(console, report)`` prints at ``width``, as styled Text (trailing blanks cut)."""
    console = TextConsole(width)
    render(console, report)
    console.text.rstrip()
    return console.text
