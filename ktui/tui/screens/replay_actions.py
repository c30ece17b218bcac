"""The replay screen's key actions (moving between turns, scrolling, toggles, the kernel's copy / write / label /
repro) and what its workers read for the events pane and the kernel list."""

from __future__ import annotations

import bisect
from pathlib import Path

from textual import work

from ktui.trace.model import Event, KernelVersion, Run
from ktui.trace.words import count
from ktui.tui.screens.replay_parts import (
    EVENTS_LIMIT,
    SIDE_MAX,
    SIDE_MIN,
    SIDE_WIDTH,
    SPLIT_MIN_WIDTH,
    EventsRead,
    PagerText,
    StatsReady,
    Written,
    neighbour_failed_turn,
)
from ktui.tui.widgets.documents import (
    events_document,
    kernel_stats,
    n_lines,
    raw_lines_text,
)
from ktui.tui.widgets.docview import DocView
from ktui.tui.widgets.header import RunHeader
from ktui.tui.widgets.prompt import PromptScreen
from ktui.tui.widgets.searchbar import SearchBar
from ktui.tui.widgets.turnlist import TurnList


class ReplayActions:
    """Mixed into :class:`~ktui.tui.screens.replay.ReplayScreen` (its state, its widgets)."""

    # ---- actions: navigation ------------------------------------------------------------------
    def action_next(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel((self.kernel_number or 0) + 1)
        else:
            self._goto_turn(self.turn_index + 1)

    def action_prev(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel((self.kernel_number or 2) - 1)
        else:
            self._goto_turn(self.turn_index - 1)

    def action_first(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel(1)
        else:
            self._goto_turn(0)

    def action_last(self) -> None:
        if self.active_pane == "kernels":
            self._goto_kernel(len(self.run.kernels) if self.run else 1)
        elif self.run is not None:
            self._goto_turn(len(self.run.turns) - 1)

    def action_next_failed(self) -> None:
        if self._regex is not None:  # a search in force: n / N step its matches (as in less and vim)
            self.action_next_match()
            return
        i = neighbour_failed_turn(self.run, self.turn_index, 1) if self.run is not None else None
        if i is not None:
            self._show_turn_pane()
            self._goto_turn(i)
        else:
            self.notify("no failed turn after this one", timeout=2)

    def action_prev_failed(self) -> None:
        if self._regex is not None:  # shift+enter never reaches the app in tmux: N does
            self.action_prev_match()
            return
        i = neighbour_failed_turn(self.run, self.turn_index, -1) if self.run is not None else None
        if i is not None:
            self._show_turn_pane()
            self._goto_turn(i)
        else:
            self.notify("no failed turn before this one", timeout=2)

    # ---- actions: layout ------------------------------------------------------------------------
    def action_zen(self) -> None:
        """Hide / show the turn list (the panes take the whole width)."""
        self.toggle_class("-zen")
        self.call_after_refresh(self._layout_changed)

    def action_side_width(self, delta: int) -> None:
        tl = self.query_one(TurnList)
        if self.has_class("-zen"):
            self.remove_class("-zen")
        width = tl.outer_size.width or SIDE_WIDTH
        self._side_set = True
        tl.styles.width = max(SIDE_MIN, min(SIDE_MAX, width + delta, max(SIDE_MIN, self.size.width - 40)))
        self.call_after_refresh(self._layout_changed)

    def _active_doc(self) -> DocView:
        pane = self.active_pane
        if pane == "kernels":
            return self.query_one("#kernel-doc", DocView)
        return self.query_one(f"#{pane}-doc", DocView)

    def action_scroll_page(self, direction: int) -> None:
        doc = self._active_doc()
        h = max(1, doc.scrollable_content_region.height - 2)
        doc.scroll_to(y=doc.scroll_y + direction * h, animate=False)

    def action_scroll_sideways(self, n: int) -> None:
        self._active_doc().scroll_sideways(n)

    def action_toggle_wrap(self) -> None:
        wrap = not self._active_doc().wrap_code
        for view in self.query(DocView):
            view.set_wrap(wrap)
        self.notify("long lines of code and diffs: " + ("folded" if wrap else "cut (H / L scroll sideways)"),
                    timeout=2)

    def action_scroll_lines(self, n: int) -> None:
        doc = self._active_doc()
        doc.scroll_to(y=doc.scroll_y + n, animate=False)

    # ---- actions: diffs -----------------------------------------------------------------------
    def action_toggle_diff(self) -> None:
        self.opts.diff = not self.opts.diff
        self._stale |= {"turn", "kernels"}
        self._render_active(keep_scroll=self.active_pane == "turn")

    def action_toggle_split(self) -> None:
        self.opts.split = not self.opts.split
        if not self.opts.diff:
            self.opts.diff = True
        self._split_shown = self._split()
        if self.opts.split and not self._split_shown:
            self.notify(f"side by side needs {SPLIT_MIN_WIDTH} columns for the diff: unified shown "
                        "(z hides the turn list, - narrows it)", timeout=4)
        self._stale |= {"turn", "kernels"}
        self._render_active(keep_scroll=self.active_pane == "turn")

    def action_toggle_fold(self) -> None:
        self.opts.expand = not self.opts.expand
        self._stale |= {"turn"}
        self._render_active(keep_scroll=self.active_pane == "turn")

    def action_mark(self) -> None:
        if self.run is None or self.kernel_number is None:
            return
        if self.active_pane != "kernels":
            self.action_pane("kernels")
        if self.base_number == self.kernel_number:
            self.action_unmark()
            return
        self.base_number = self.kernel_number
        self.opts.diff = True
        self.notify(f"diff base: v{self.base_number} (select another version to compare)", timeout=3)
        self._stale |= {"kernels"}
        self._render_pane("kernels")

    def action_unmark(self) -> None:
        if self.base_number is None:
            return
        self.base_number = None
        self.notify("diff base cleared: diffs are against the previous version", timeout=2)
        self._stale.add("kernels")
        self._render_active(keep_scroll=True)

    # ---- actions: follow, kernel export ---------------------------------------------------------
    def action_toggle_follow(self) -> None:
        if self.follow:
            self.follow = False
            self.workers.cancel_group(self, "follow")
            self.notify("follow mode off", timeout=1.5)
        else:
            self.follow = True
            self._start_follow()
            self.notify("following: new events appear as they are written", timeout=2)
        if self.run is not None:
            self.query_one(RunHeader).show_run(self.run, following=self.follow)

    def selected_kernel(self) -> KernelVersion | None:
        if self.run is None or self.kernel_number is None:
            return None
        return self.run.kernel(self.kernel_number)

    def action_copy_kernel(self) -> None:
        k = self.selected_kernel()
        if k is None or not k.code:
            self.notify("no kernel code to copy", severity="warning", timeout=2)
            return
        self.app.copy_to_clipboard(k.code)
        self.notify(f"copied {k.label} ({count(n_lines(k.code), 'line')}) to the clipboard (OSC 52)", timeout=3)

    def action_write_kernel(self) -> None:
        k = self.selected_kernel()
        if k is None or not k.code:
            self.notify("no kernel code to write", severity="warning", timeout=2)
            return
        default = f"kernel_{k.label}_{k.sha1[:8]}.py"

        def done(name: str | None) -> None:
            if name:
                self._write(name, k.code, k.label)

        self.app.push_screen(PromptScreen(f"write {k.label} to file:", default), done)

    def on_written(self, msg: Written) -> None:
        self.notify(f"wrote {msg.label} to {msg.path}", timeout=4)

    @work(thread=True, exclusive=False, group="write", exit_on_error=False, description="write a kernel")
    def _write(self, path: str, code: str, label: str) -> None:
        p = Path(path).expanduser()
        if p.exists():
            raise FileExistsError(f"{p} exists; not overwritten")
        p.write_text(code, encoding="utf-8")
        self.post_message(Written(str(p), label))

    def action_label(self) -> None:
        from ktui.tui.labeling import Target, ask

        if self.run is None:
            return
        k = self.selected_kernel() if self.active_pane == "kernels" else None
        if k is not None:
            target = Target(self.path, "version", version=k.label, kernel_sha1=k.sha1)
        elif self.run.turns:
            target = Target(self.path, "turn", turn=self.turn_index)
        else:
            target = Target(self.path)
        ask(self, target, run_target=Target(self.path))

    def action_repro(self) -> None:
        if self.run is None:
            return
        from ktui.tui.screens.repro_panel import open_repro_panel  # loads the repro API only when asked

        k = self.selected_kernel()
        open_repro_panel(self, self.run, k.label if k else "final")

    def action_pager(self) -> None:
        if self.run is not None:
            self._read_for_pager(self._turn_events(self.run)[1])

    @work(thread=True, exclusive=True, group="pager", exit_on_error=False, description="read raw lines")
    def _read_for_pager(self, events: list[Event]) -> None:
        from ktui.trace.reader import read_raw_line

        self.post_message(PagerText(raw_lines_text(events, [read_raw_line(self.path, ev) for ev in events])))

    def on_pager_text(self, msg: PagerText) -> None:
        import os
        import shlex
        import subprocess

        from textual.app import SuspendNotSupported

        cmd = shlex.split(os.environ.get("PAGER") or "less")
        try:
            with self.app.suspend():
                subprocess.run(cmd, input=msg.text.encode("utf-8", "replace"), check=False)
        except SuspendNotSupported:
            self.notify("no terminal to hand over to $PAGER here", severity="warning", timeout=3)
        except OSError as exc:
            self.notify(f"$PAGER ({cmd[0] if cmd else ''}): {exc.strerror or exc}", severity="error", timeout=4)

    def action_back(self) -> None:
        bar = self.query_one(SearchBar)
        if bar.is_open or self._regex is not None:
            self._clear_search()
            return
        if self.base_number is not None:
            self.action_unmark()
            return
        self.leave()

    def _turn_events(self, run: Run) -> tuple[int | None, list[Event]]:
        """The current turn's events (all events, up to a limit, for a run without turns)."""
        if not run.turns:
            return None, run.events[:EVENTS_LIMIT]
        t = run.turns[min(self.turn_index, len(run.turns) - 1)]
        lines = run.events.lines
        return t.index, run.events[bisect.bisect_left(lines, t.first_line):bisect.bisect_right(lines, t.last_line)]

    def _request_events(self) -> None:
        run = self.run
        if run is None:
            return
        if run.turns:
            i = min(self.turn_index, len(run.turns) - 1)
            key: int | None = i
            t = run.turns[i]
            lines = run.events.lines
            events = run.events[bisect.bisect_left(lines, t.first_line):bisect.bisect_right(lines, t.last_line)]
        else:
            key = None
            events = run.events[:EVENTS_LIMIT]
        self._events_key = key
        self._read_events(key, events)

    @work(thread=True, exclusive=True, group="events", exit_on_error=False, description="read raw events")
    def _read_events(self, key: int | None, events: list[Event]) -> None:
        from ktui.trace.reader import read_raw_line

        raws = [read_raw_line(self.path, ev) for ev in events]
        self.post_message(EventsRead(key, events, raws))

    def on_events_read(self, msg: EventsRead) -> None:
        if msg.key != self._events_key:
            return  # the selection moved on
        if msg.key is None:
            title = f"all events ({len(msg.events)} shown)"
        else:
            title = f"raw events of turn {msg.key} ({len(msg.events)}), read from the file by offset"
        self.query_one("#events-doc", DocView).set_document(events_document(msg.events, msg.raws, title))

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False, description="kernel diff sizes")
    def _compute_stats(self, kernels: list[KernelVersion]) -> None:
        """Diff sizes of successive versions (the Kernels table's column), off the UI thread."""
        for prev, k in zip(kernels, kernels[1:], strict=False):
            kernel_stats(prev, k)
        self.post_message(StatsReady())

    def on_stats_ready(self, _msg: StatsReady) -> None:
        self._stats_gen += 1
        if self.active_pane == "kernels":
            self._render_pane("kernels", keep_scroll=True)
        else:
            self._stale.add("kernels")
