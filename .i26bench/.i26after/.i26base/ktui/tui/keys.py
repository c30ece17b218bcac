"""Key tables: one list per screen that is at once its bindings, its help and its palette.

A screen declares ``KEYS = [Key(...), ...]``; :class:`ktui.tui.screens.base.KtuiScreen` turns
the table into Textual ``BINDINGS`` when the class is created, the ``?`` help lists the same
rows and the command palette offers them. Adding a key to a screen is one ``Key`` line (and
its ``action_*`` method)::

    Key("E", "export", "export the filtered runs as CSV", footer="export"),

One key means one thing everywhere: a key's *meaning* is the name of its action (``pane`` in
``pane('turn')``), and ``tests/test_tui_keys.py`` checks that no key is bound to two meanings
across the screens. The shared vocabulary:

=================  ==============================================================
j k / ↓ ↑          next / previous item (turn, row, kernel version)
g G / home end     first / last item
space b / pgdn pgup  page down / up;  J K scroll by lines;  H L scroll sideways
tab shift+tab 1-5  panes
h l / ← →          previous / next column (compare)
/                  search (replay) or filter (runs): text to look for
enter              go: the next match, open the row
m u                mark the selected item (diff base, runs to compare) / unmark
d s                diff on / off, unified / side by side
W                  wrap long lines on / off;   z zen: hide the side panel;  - + its width
x                  reset (filters, chosen versions)
esc ? q            back, help, quit
=================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from textual.binding import Binding

# how key names read in the help
_DISPLAY = {
    "down": "↓", "up": "↑", "left": "←", "right": "→", "question_mark": "?", "slash": "/",
    "escape": "esc", "pagedown": "pgdn", "pageup": "pgup", "left_square_bracket": "[",
    "right_square_bracket": "]", "minus": "-", "plus": "+", "equals_sign": "=",
    "less_than_sign": "<", "greater_than_sign": ">", "space": "space", "backslash": "\\",
}


def key_display(name: str) -> str:
    return _DISPLAY.get(name, name)


def action_name(action: str) -> str:
    """The meaning of an action string: its name without arguments (``pane('turn')`` -> ``pane``)."""
    return action.split("(", 1)[0].strip()


@dataclass(frozen=True)
class Key:
    """One row of a screen's key table.

    ``keys``: Textual key names, comma-separated (``"j,down"``); ``action``: the screen action
    (arguments allowed: ``"pane('turn')"``); ``help``: the help line, also the palette entry
    (empty: the row is bound but listed under another row, given by ``label`` there);
    ``footer``: the short footer label (empty: not in the footer); ``label``: how the help shows
    the keys (default: from ``keys``); ``title``: the palette entry when it should differ from
    ``help``; ``palette``: offer it in the command palette.
    """

    keys: str
    action: str
    help: str = ""
    footer: str = ""
    label: str = ""
    title: str = ""
    palette: bool = True
    priority: bool = False

    @property
    def names(self) -> list[str]:
        return [k.strip() for k in self.keys.split(",") if k.strip()]

    @property
    def meaning(self) -> str:
        return action_name(self.action)

    @property
    def display(self) -> str:
        return self.label or " / ".join(key_display(k) for k in self.names)

    def binding(self) -> Binding:
        return Binding(self.keys, self.action, self.footer or self.help or self.meaning,
                       show=bool(self.footer), priority=self.priority)


# space b / pgdn pgup: every screen that scrolls
PAGE_KEYS = (
    Key("space,pagedown", "scroll_page(1)", "page down / up", label="space b / pgdn pgup"),
    Key("b,pageup", "scroll_page(-1)", "", title="page up"),
)
# the screens that show code and diffs: pages, lines, sideways, wrap
DOC_SCROLL_KEYS = (
    *PAGE_KEYS,
    Key("J", "scroll_lines(3)", "scroll down / up by lines", label="J / K"),
    Key("K", "scroll_lines(-3)", "", title="scroll up"),
    Key("H", "scroll_sideways(-8)", "code and diffs: scroll left / right (lines are cut, not folded)",
        label="H / L", title="scroll left"),
    Key("L", "scroll_sideways(8)", "", title="scroll right"),
    Key("W", "toggle_wrap", "code and diffs: fold long lines at the edge / cut them", footer="wrap"),
)


def pane_keys(panes: Sequence[tuple[str, str]]) -> list[Key]:
    """tab / shift+tab and 1 … N for a screen's panes, given as (id, title)."""
    names = ", ".join(title for _, title in panes)
    rows = [Key("tab", "next_pane", f"cycle panes: {names}", footer="pane"),
            Key("shift+tab", "prev_pane", "", title="previous pane")]
    listing = " · ".join(f"{i + 1} {title}" for i, (_, title) in enumerate(panes))
    for i, (pid, title) in enumerate(panes):
        rows.append(Key(str(i + 1), f"pane('{pid}')", f"go to a pane: {listing}" if i == 0 else "",
                        label=f"1 … {len(panes)}", title=f"show the {title} pane"))
    return rows


def bindings(table: Iterable[Key]) -> list[Binding]:
    return [k.binding() for k in table]


def help_rows(table: Iterable[Key]) -> list[tuple[str, str]]:
    """(keys, description) for the help screen, in table order."""
    return [(k.display, k.help) for k in table if k.help]


def palette_rows(table: Iterable[Key]) -> list[tuple[str, str, str]]:
    """(title, keys, action) for the command palette."""
    out = []
    for k in table:
        title = k.title or k.help
        if k.palette and title:
            out.append((title[0].upper() + title[1:], k.display if not k.title else
                        " / ".join(key_display(n) for n in k.names), k.action))
    return out


def check_table(table: Sequence[Key]) -> None:
    """A key bound twice in one table is a mistake (the second row would never run)."""
    seen: dict[str, str] = {}
    for k in table:
        for name in k.names:
            if name in seen and seen[name] != k.action:
                raise ValueError(f"key {name!r} bound to both {seen[name]!r} and {k.action!r}")
            seen[name] = k.action
