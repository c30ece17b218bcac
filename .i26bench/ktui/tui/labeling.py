"""The app's label key (``A``): a label and a note on a run (runs screen), a turn or a kernel
version (replay), written to the same JSON Lines file as ``ktui label`` (:mod:`ktui.trace.labels`).

The prompt takes ``LABEL [note ...]``; ``-LABEL`` removes a label; in the replay screen a first
word ``run`` labels the whole run instead of the turn or version. The trace is never written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktui.trace.labels import LabelError, LabelStore, append, content_id, default_file, files_for, record
from ktui.tui.widgets.prompt import PromptScreen
from ktui.view.text import one_line

HINT = "LABEL [note…] · -LABEL removes · enter: ok · esc: cancel"
RUN_HINT = "LABEL [note…] · run LABEL: the whole run · -LABEL removes · enter: ok · esc: cancel"


@dataclass
class Target:
    path: Path
    scope: str = "run"  # run | turn | version
    turn: int | None = None
    version: str | None = None
    kernel_sha1: str | None = None

    @property
    def what(self) -> str:
        return {"run": "the run", "turn": f"turn {self.turn}", "version": self.version or "the version"}[self.scope]


def parse(text: str) -> tuple[str, str, bool]:
    """``LABEL [note]`` -> (label, note, remove)."""
    label, _, note = text.strip().partition(" ")
    remove = label.startswith("-")
    return label.lstrip("-"), note.strip(), remove


def apply(target: Target, text: str, labels_file: str | None = None) -> str:
    """Write the label; the message to show. LabelError / OSError for the user."""
    label, note, remove = parse(text)
    rec = record(content_id(target.path), label, op="remove" if remove else "add", scope=target.scope,
                 turn=target.turn, version=target.version, kernel_sha1=target.kernel_sha1, note=note,
                 trace=str(target.path.resolve()))
    dest = labels_file or default_file()
    append(dest, rec)
    return f"{'removed' if remove else 'labelled'} {target.what} {rec['label']!r} ({dest})"


def current_labels(path: Path, labels_file: str | None = None, root: Path | None = None) -> list[str]:
    """The short labels (``hack@v3``) of the trace at ``path`` now."""
    store = LabelStore.read(files_for(root, [labels_file] if labels_file else []))
    return [lab.short for lab in store.for_id(content_id(path))]


def ask(screen: Any, target: Target, *, labels_file: str | None = None,
        done: Callable[[], None] | None = None, run_target: Target | None = None) -> None:
    """Prompt for a label on ``target`` (a first word ``run``: on ``run_target``); write it;
    notify; call ``done`` after a change."""

    def submitted(text: str | None) -> None:
        if not text:
            return
        where = target
        if run_target is not None and text.split(" ", 1)[0] == "run":
            where, text = run_target, text[3:].strip()
            if not text:
                return
        try:
            msg = apply(where, text, labels_file)
        except (LabelError, OSError) as exc:
            screen.notify(one_line(str(exc)), severity="error", timeout=4, markup=False)
            return
        screen.notify(one_line(msg), timeout=3, markup=False)
        if done is not None:
            done()

    screen.app.push_screen(PromptScreen(f"label {one_line(target.what)} of {one_line(target.path.name)}:", "",
                                        hint=RUN_HINT if run_target is not None else HINT), submitted)


def label_run(screen: Any, table: Any) -> None:
    """The runs screen's ``A``: label the run under the cursor; its labels cell, the column and
    the filters follow at once."""
    s = table.current
    if s is None:
        return
    path = Path(s.real or s.path)

    def changed() -> None:
        try:
            s.labels = current_labels(path, screen.labels_file, screen.root)
        except OSError:
            return
        i = table.rows.index(s)
        screen._hay[i] = screen._hay_of(s)
        table.labels_changed()
        screen.refilter()

    ask(screen, Target(path), labels_file=screen.labels_file, done=changed)
