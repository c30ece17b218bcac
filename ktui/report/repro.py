"""``ktui repro TRACE``: re-execute kernel snapshots and print recorded vs reproduced.

Exit status: 0 when every selected version reproduced (``reproduced`` or ``reproduced: fails
the same way``), 1 when any other verdict, 2 for usage errors (no such version, no reference),
130 when interrupted. Needs rich and click only (no Textual, no orjson, no torch: the worker
process imports torch).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from ktui.engine.defaults import METHOD, STAGE_TIMEOUT_S, TRIALS
from ktui.view.roles import VERDICT_STYLES as VERDICT_STYLE  # noqa: F401  (the verdicts' styles, by name)


def _err(msg: str) -> None:
    from ktui.view.text import clean

    print(f"ktui: {clean(msg)}", file=sys.stderr)


def render_report(console: Any, report: Any) -> None:
    """One version's reproduction (:func:`ktui.view.repro.repro_view`), drawn as text."""
    from ktui.report.draw import draw
    from ktui.view.repro import repro_view

    draw(console, repro_view(report).parts)


def brief_line(report: Any) -> Any:
    """One version's result as one line (``ktui repro --brief``; grep-able, never wrapped)."""
    from ktui.report.draw import para_text
    from ktui.view.repro import brief_para

    return para_text(brief_para(report))


def render_summary(console: Any, reports: list[Any]) -> None:
    from ktui.report.draw import rich_table
    from ktui.view.repro import summary_table

    console.print(rich_table(summary_table(reports), console.width))


class _ProgressDisplay:
    """A transient Rich progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress = None
        self._task = None

    def start(self, label: str) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(),
                                  TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=Console(stderr=True), transient=True)
        self._progress.start()
        from rich.markup import escape

        self._task = self._progress.add_task("starting…", total=1.0, label=escape(label))

    def update(self, p: Any) -> None:
        if self._progress is not None:
            from rich.markup import escape

            from ktui.view.text import clean

            self._progress.update(self._task, completed=p.fraction, description=escape(clean(p.message)))

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def repro_command(path: Path | str, *, turn: int | None = None, version: str | None = None, final: bool = False,
                  all_: bool = False, reference: str | None = None, device: str | None = None, trials: int = TRIALS,
                  method: str = METHOD, timeout: float = STAGE_TIMEOUT_S, fresh: bool = False,
                  as_json: bool = False, compile_timeout: float | None = None, input_seed: int | None = None,
                  tasks: str | None = None, brief: bool = False) -> int:
    from ktui.repro.api import ReproError, ReproOptions, reproduce, select_kernels
    from ktui.repro.runner import install_signal_handlers
    from ktui.trace import load

    install_signal_handlers()
    run = load(str(path))
    try:
        kernels = select_kernels(run, turn=turn, version=version, final=final, all_=all_)
        options = ReproOptions(device=device, trials=trials, method=method, timeout=timeout, fresh=fresh,
                               reference_path=reference, compile_timeout=compile_timeout, input_seed=input_seed,
                               tasks_dir=tasks)
    except ReproError as exc:
        _err(str(exc))
        return 2
    if device and not (device == "cpu" or device == "cuda" or device.startswith("cuda:")):
        _err(f"--device {device!r}: use cuda, cuda:N or cpu")
        return 2

    from ktui.report.console import out_console

    console = out_console()
    progress = _ProgressDisplay(enabled=not as_json and sys.stderr.isatty())
    reports = []
    cancel = threading.Event()
    try:
        for kv in kernels:
            progress.start(kv.label)
            try:
                report = reproduce(run, kv, options, on_progress=progress.update, cancel=cancel)
            except ReproError as exc:
                progress.stop()
                _err(str(exc))
                return 2
            finally:
                progress.stop()
            reports.append(report)
            if brief and not as_json:
                console.print(brief_line(report), soft_wrap=True)
            elif not as_json:
                render_report(console, report)
    except KeyboardInterrupt:
        cancel.set()
        progress.stop()
        _err("interrupted")
        return 130
    if as_json:
        if len(reports) == 1 and not all_:
            payload = reports[0].to_dict()
        else:
            payload = {"trace": str(path), "versions": [r.to_dict() for r in reports]}
        from ktui.view.text import json_text

        sys.stdout.write(json_text(payload) + "\n")
    elif len(reports) > 1 and not brief:
        render_summary(console, reports)
    return 0 if all(r.good for r in reports) else 1
