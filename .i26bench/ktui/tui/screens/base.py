"""The shared plumbing of ktui's screens: key table, help, palette, panes, focus.

:class:`KtuiScreen` subclasses declare ``KEYS`` (a list of :class:`ktui.tui.keys.Key`); the
class gets its Textual ``BINDINGS`` from it, ``?`` shows it, the command palette offers it.
The rows every screen shares (``esc`` back, ``?`` help, ``q`` quit) are added after the
screen's own; a screen with panes lists ``pane_keys(PANES)`` and gets pane cycling for free
(``PANES`` of ``(id, title)``, inside the ``TabbedContent`` named by ``TABS``).

Errors: a worker that fails goes to :meth:`KtuiScreen.worker_failed` and from there to the one
handler, :func:`ktui.tui.errors.report` (notified and logged).

Focus: it goes to the screen's *content* (``CONTENT``, a selector, or no widget at all so that
the screen's own bindings get every key) when the screen starts, after ``escape`` leaves an
input, and whenever a modal or panel above it closes. Textual's default (focus the first
focusable widget) would hand the keys to whatever input comes first, hidden or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.app import SystemCommand
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TabbedContent, Tabs
from textual.worker import Worker, WorkerState

from ktui.tui.errors import report
from ktui.tui.keys import Key, bindings, check_table, help_rows, palette_rows

BASE_KEYS: list[Key] = [
    Key("escape", "back", "back: close the search or the mark, else the previous screen"),
    Key("question_mark", "help", "this help", footer="help", palette=False),
    Key("q", "quit", "quit", footer="quit", palette=False),
]


@dataclass
class DocumentBuilt(Message):
    """A document (list of DocView blocks) built in a worker for the DocView ``target``."""

    target: str
    key: object
    blocks: list


def _shown(w: Widget) -> bool:
    """``w`` and every container above it are displayed."""
    return all(n.display for n in w.ancestors_with_self if isinstance(n, Widget))


class KtuiScreen(Screen):
    """Base of the replay, compare and runs screens."""

    #: the screen's key table (its bindings, help and palette)
    KEYS: ClassVar[list[Key]] = []
    #: (id, title) of the panes, in the ``TabbedContent`` whose id is ``TABS``
    PANES: ClassVar[tuple[tuple[str, str], ...]] = ()
    TABS: ClassVar[str] = ""
    #: the help's title
    HELP_TITLE: ClassVar[str] = "ktui · keys"
    #: selector of the widget that holds focus when nothing else should ("" : the screen itself)
    CONTENT: ClassVar[str] = ""
    AUTO_FOCUS = ""  # never Textual's "first focusable widget"; :meth:`focus_content` decides

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._doc_wanted: dict[str, object] = {}  # DocView id -> key of the document it waits for

    def __init_subclass__(cls, **kw) -> None:
        if "KEYS" in cls.__dict__:
            table = cls.key_table()
            check_table(table)
            cls.BINDINGS = bindings(table)
        super().__init_subclass__(**kw)

    @classmethod
    def key_table(cls) -> list[Key]:
        """The screen's rows, then the shared ones it does not bind itself."""
        own = {n for k in cls.KEYS for n in k.names}
        return [*cls.KEYS, *(k for k in BASE_KEYS if not own & set(k.names))]

    # ---- errors -------------------------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every failed worker of the screen goes to the one error handler."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.worker_failed(event.worker.group, event.worker.error)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """Screens add their own reaction (then call this)."""
        report(self, group or "worker", error)

    # ---- documents built off the UI thread ----------------------------------------------------
    def build_document(self, target: str, key: object, build: Callable[[], list]) -> None:
        """Build a document (diffs: tens to hundreds of ms) in a worker; when it is done and still
        wanted (no newer request or :meth:`drop_document` for ``target``), :meth:`document_built`
        shows it."""
        self._doc_wanted[target] = key

        def work() -> None:
            self.post_message(DocumentBuilt(target, key, build()))

        self.run_worker(work, thread=True, exclusive=True, group=f"doc:{target}", exit_on_error=False,
                        description=f"build {target}")

    def drop_document(self, target: str) -> None:
        """A document for ``target`` was shown at once: any pending one is stale."""
        self._doc_wanted.pop(target, None)

    def document_pending(self, target: str) -> bool:
        return target in self._doc_wanted

    def on_document_built(self, msg: DocumentBuilt) -> None:
        if self._doc_wanted.get(msg.target, DocumentBuilt) != msg.key:
            return
        del self._doc_wanted[msg.target]
        self.document_built(msg.target, msg.key, msg.blocks)

    def document_built(self, target: str, key: object, blocks: list) -> None:
        from ktui.tui.widgets.docview import DocView

        for view in self.query(f"#{target}"):
            if isinstance(view, DocView):
                view.set_document(blocks)

    # ---- focus ----------------------------------------------------------------------------------
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

    # ---- panes ----------------------------------------------------------------------------------
    @property
    def pane_ids(self) -> list[str]:
        return [p for p, _ in self.PANES]

    @property
    def active_pane(self) -> str:
        if not self.TABS:
            return ""
        return self.query_one(f"#{self.TABS}", TabbedContent).active or self.pane_ids[0]

    def action_pane(self, pane: str) -> None:
        if pane in self.pane_ids:
            self.query_one(f"#{self.TABS}", TabbedContent).active = pane
            self.pane_shown(pane)

    def pane_shown(self, pane: str) -> None:
        """Called after a key switched to ``pane`` (screens render lazily here)."""

    def action_next_pane(self) -> None:
        ids = self.pane_ids
        self.action_pane(ids[(ids.index(self.active_pane) + 1) % len(ids)])

    def action_prev_pane(self) -> None:
        ids = self.pane_ids
        self.action_pane(ids[(ids.index(self.active_pane) - 1) % len(ids)])

    # ---- help, palette, back, quit --------------------------------------------------------------
    def action_help(self) -> None:
        from ktui.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(help_rows(self.key_table()), title=self.HELP_TITLE))

    def palette_commands(self) -> Iterable[SystemCommand]:
        for title, keys, action in palette_rows(self.key_table()):
            yield SystemCommand(title, f"key: {keys}", lambda a=action: self.run_action(a))
        yield SystemCommand("Help: keys", "key: ?", self.action_help)

    def action_back(self) -> None:
        self.leave()

    def leave(self) -> None:
        """Back to the screen below, if this one was opened from another."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_quit(self) -> None:
        self.app.exit()
