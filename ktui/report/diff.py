"""``ktui diff TRACE [vA] [vB]``: kernel version diffs, headless.

- no version: every successive pair (v1 -> v2, v2 -> v3, ...);
- one version: that version against the one before it;
- two versions: ``vA -> vB`` (any two, in either order).

A version is ``vN``, ``N``, ``final`` or a sha1 prefix. Unified text by default (the classic
``diff -u`` format when piped, coloured with line numbers on a terminal); ``--split`` side by side.
Exit status: 0 when the diffs were printed, 2 when a version is unknown or the trace unreadable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ktui.report.console import output_width
from ktui.report.render_diff import clean, render_split, stats_text, unified_text_lines
from ktui.trace import diffing


def _label(run, k) -> str:
    return f"{k.label} ({k.sha1[:10]}, turn {k.first_turn if k.first_turn is not None else '-'})"


def _pairs(run, version_a: str | None, version_b: str | None, err: Console):
    ks = run.kernels
    if version_a is None and version_b is None:
        return list(zip(ks, ks[1:], strict=False))
    refs = [r for r in (version_a, version_b) if r is not None]
    found = []
    for r in refs:
        k = run.kernel(r)
        if k is None:
            have = ", ".join(k.label for k in ks) or "none"
            err.print(Text(f"ktui: {clean(r)}: no such kernel version (this trace has: {have})"))
            return None
        found.append(k)
    if len(found) == 1:
        k = found[0]
        if k.number <= 1:
            err.print(Text(f"ktui: {k.label} is the first version; give two versions to compare"))
            return None
        return [(ks[k.number - 2], k)]
    return [(found[0], found[1])]


def diff_command(path, version_a: str | None = None, version_b: str | None = None, *,
                 split: bool = False, context: int = 3, console: Console | None = None) -> int:
    from ktui.trace import load

    out = console or Console(highlight=False, soft_wrap=False)
    err = Console(stderr=True, highlight=False)
    try:
        run = load(Path(path))
    except Exception as exc:  # the reader should not raise; one clear line if it does
        err.print(Text(f"ktui: {path}: cannot read trace: {exc}"))
        return 2
    pairs = _pairs(run, version_a, version_b, err)
    if pairs is None:
        return 2
    if not pairs:
        n = len(run.kernels)
        msg = "no kernel versions in this trace" if n == 0 else f"only one kernel version ({run.kernels[0].label}): nothing to diff"
        out.print(Text(msg, style="dim"))
        return 0
    plain = not out.is_terminal
    if plain and split and console is None:  # piped side by side: wide enough that nothing wraps,
        # unless COLUMNS asks for a width (COLUMNS=100 ktui diff --split | cat: 280 columns; now long
        # lines fold inside their side)
        widest = max((len(line) for ka, kb in pairs for k in (ka, kb) for line in clean(k.code).splitlines()),
                     default=40)
        asked = os.environ.get("COLUMNS", "").strip()
        width = output_width() if asked.isdigit() and int(asked) > 0 else min(4000, max(100, 2 * widest + 24))
        out = Console(highlight=False, soft_wrap=False, width=width)
    context = max(0, context)
    for i, (ka, kb) in enumerate(pairs):
        if i:
            out.print()
        _print_pair(out, run, ka, kb, split=split, context=context, plain=plain)
    return 0


def _print_pair(out: Console, run, ka, kb, *, split: bool, context: int, plain: bool) -> None:
    stubs = [k for k in (ka, kb) if k.attachment and not k.code]
    if stubs:
        for k in stubs:
            out.print(Text(f"{k.label}: code not in the trace ({clean(k.attachment)})", style="yellow"))
        return
    a, b = clean(ka.code), clean(kb.code)
    added, removed = diffing.diff_stats(a, b)
    if plain and not split:
        text = diffing.unified_text(a, b, _label(run, ka), _label(run, kb), context=context)
        if not text:
            sys.stdout.write(f"{ka.label} and {kb.label}: identical lines\n")
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
        return
    title = Text(end="")
    title.append(f"{ka.label} → {kb.label}", style="bold")
    title.append(f"   turn {ka.first_turn} → turn {kb.first_turn}   ", style="dim")
    title.append_text(stats_text(added, removed))
    title.append(f"   {ka.sha1[:10]} → {kb.sha1[:10]}", style="dim")
    out.print(title)
    if split:
        table = render_split(a, b, context=context, title_a=_label(run, ka), title_b=_label(run, kb), markers=plain)
        if not plain:
            out.print(table)
            return
        with out.capture() as cap:  # piped: no line padded with blanks to the widest one
            out.print(table)
        sys.stdout.write("".join(line.rstrip() + "\n" for line in cap.get().splitlines()))
        sys.stdout.flush()
        return
    lines = unified_text_lines(a, b, context=context)
    if not lines:
        out.print(Text("(identical lines)", style="dim"))
    for line in lines:
        out.print(line, crop=False, overflow="fold")
