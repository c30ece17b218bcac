"""The shared plumbing of ktui's screens.

:class:`KtuiScreen` keeps the keyboard where the user expects it: focus goes to the screen's
*content* (``CONTENT``, a selector, or no widget at all so that the screen's own bindings get
every key) when the screen starts, after ``escape`` leaves an input, and whenever a modal or
panel above it closes. Textual's default (focus the first focusable widget) would hand the keys
to whatever input comes first, hidden or not.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Tabs


def _shown(w: Widget) -> bool:
    """``w`` and every container above it are displayed."""
    return all(n.display for n in w.ancestors_with_self if isinstance(n, Widget))


class KtuiScreen(Screen):
    """Base of the replay, compare and runs screens."""

    #: selector of the widget that holds focus when nothing else should ("" : the screen itself)
    CONTENT: str = ""
    AUTO_FOCUS = ""  # never Textual's "first focusable widget"; :meth:`focus_content` decides

    def on_mount(self) -> None:
        for tabs in self.query(Tabs):  # tab bars are driven by keys of the screen, not focus
            tabs.can_focus = False
        self.focus_content()

    def on_screen_resume(self) -> None:
        """A modal (help, prompt, repro panel, palette) closed: the keys go back to the content."""
        focused = self.focused
        if focused is None or not focused.can_focus or not _shown(focused):
            self.focus_content()

    def focus_content(self) -> None:
        if self.CONTENT:
            for w in self.query(self.CONTENT):
                if w.can_focus:
                    w.focus()
                    return
        self.set_focus(None)
