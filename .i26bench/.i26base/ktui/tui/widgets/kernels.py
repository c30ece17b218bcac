"""The Kernels pane: the version list on top, the selected version's code or diff below."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

from ktui.report import fmt
from ktui.report.render_diff import clean
from ktui.trace.model import Run
from ktui.tui.widgets.documents import kernel_document, kernel_stats, n_lines, previous_version
from ktui.tui.widgets.docview import DocView

COLUMNS = (("ver", "ver", 4), ("sha1", "sha1", 10), ("first", "first", 5), ("lines", "lines", 5),
           ("vs prev", "delta", 9), ("used at (turn tool status)", "uses", 64))


def uses_text(k) -> Text:
    t = Text(end="", no_wrap=True)
    for i, u in enumerate(k.uses):
        if i:
            t.append("  ")
        t.append(f"{u.turn if u.turn is not None else 'seed'} ", "grey62")
        t.append(clean(u.tool).replace("_kernel", "").replace("run_", ""))
        t.append(" " + fmt.STATUS_ICON.get(u.status, "?"), fmt.STATUS_STYLE.get(u.status, ""))
    t.truncate(64, overflow="ellipsis")
    return t


class KernelTable(DataTable):
    DEFAULT_CSS = """
    KernelTable { height: auto; max-height: 12; overflow-x: hidden; }
    """

    def __init__(self, **kw):
        super().__init__(cursor_type="row", **kw)
        self.can_focus = False
        self._count = 0
        self.base: int | None = None
        self.sig: tuple = ()

    def on_mount(self) -> None:
        for label, key, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def set_run(self, run: Run, base: int | None = None) -> None:
        """(Re)fill the table; keeps the cursor."""
        cursor = self.cursor_row
        self.base = base
        self.clear()
        for k in run.kernels:
            prev = previous_version(run, k)
            st = kernel_stats(prev, k, compute=False)
            if st is not None:
                delta = Text(end="")
                delta.append(f"+{st[0]}", "green")
                delta.append(f" -{st[1]}", "red")
            elif prev is not None and k.code and prev.code:
                delta = Text("…", style="grey50")  # being computed
            else:
                delta = Text("—", style="grey50")
            label = Text(k.label, style="bold magenta")
            if base is not None and k.number == base:
                label = Text(k.label + "*", style="bold reverse magenta")
            lines = Text(str(n_lines(k.code)) if k.code else "stub", justify="right")
            self.add_row(label, Text(k.sha1[:10], style="grey62"), Text(str(k.first_turn), justify="right"),
                         lines, delta, uses_text(k), key=str(k.number))
        self._count = len(run.kernels)
        if self._count:
            self.move_cursor(row=min(max(cursor, 0), self._count - 1), animate=False)


class KernelsPane(Vertical):
    """Renders a run's kernel versions; the screen says which one is selected and how to show it."""

    def compose(self) -> ComposeResult:
        yield KernelTable(id="kernel-table")
        yield DocView(id="kernel-doc")

    def show(self, run: Run, number: int | None, *, base: int | None, diff: bool, split: bool,
             refill: bool = False, generation: object = None) -> None:
        """The table and the document at once (the document built here: cheap without a diff)."""
        self.show_table(run, number, base=base, refill=refill, generation=generation)
        k = run.kernel(number) if number else None
        b = run.kernel(base) if base else None
        self.show_document(kernel_document(run, k, b, diff=diff, split=split))

    def show_table(self, run: Run, number: int | None, *, base: int | None, refill: bool = False,
                   generation: object = None) -> None:
        """Select version ``number``; the table is refilled when ``generation`` (the caller's token
        for "the run or its diff sizes changed") differs from the last one, or on ``refill``."""
        table = self.query_one(KernelTable)
        k = run.kernel(number) if number else None
        # moving the cursor here must not come back as a user selection
        with table.prevent(DataTable.RowHighlighted):
            if generation is None:
                generation = tuple((kv.sha1, len(kv.uses),
                                    kernel_stats(previous_version(run, kv), kv, compute=False) is None)
                                   for kv in run.kernels)
            if refill or table.sig != generation or table.base != base:
                table.sig = generation
                table.set_run(run, base)
            if k is not None and table.cursor_row != k.number - 1:
                table.move_cursor(row=k.number - 1, animate=False)

    def show_document(self, blocks: list) -> None:
        self.query_one(DocView).set_document(blocks)
