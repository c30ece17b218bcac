"""Text output fits a pipe and a narrow terminal: ``COLUMNS``, else the terminal, else 100; no
line padded to the widest one; records meant for grep on one line."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from conftest import ROOT, SEED_TRACE, SHARED

from ktui.report.console import DEFAULT_WIDTH, out_console, output_width
from ktui.report.show import show_command


def _traces() -> list:
    files = [SEED_TRACE]
    for sub in ("fixtures", "formats"):
        d = SHARED / sub
        if d.is_dir():
            files += sorted(p for p in d.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json"))
    return files


def _longest(text: str) -> int:
    return max((len(x) for x in text.splitlines()), default=0)


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name[:40])
@pytest.mark.parametrize("cols", [100, 60])
def test_show_fits_columns_and_pads_nothing(path, cols, monkeypatch, capsys):
    """`COLUMNS=100 ktui show TRACE | cat`: boxes were as wide as the widest line (420 characters
    for the seed, 9,174 for a chat log)."""
    monkeypatch.setenv("COLUMNS", str(cols))
    assert show_command(path) in (0, 2)
    out = capsys.readouterr().out
    assert _longest(out) <= cols, path
    assert not [x for x in out.splitlines() if x != x.rstrip(" ")], "a line padded with blanks"
    assert "\x1b" not in out


def test_width_without_columns_or_terminal_is_100(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert output_width(io.StringIO()) == DEFAULT_WIDTH == 100
    monkeypatch.setenv("COLUMNS", "160")
    assert output_width(io.StringIO()) == 160
    monkeypatch.setenv("COLUMNS", "junk")
    assert output_width(io.StringIO()) == 100


def test_piped_show_of_the_seed_is_100_wide():
    """Through a real pipe, no COLUMNS: 100 (rich alone says 80; ktui said the widest line)."""
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("COLUMNS", "LINES")}
    r = subprocess.run([sys.executable, "-m", "ktui", "show", str(SEED_TRACE)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0
    assert _longest(r.stdout) == 100  # the run panel spans the width


def test_out_console_trims_trailing_blanks(monkeypatch):
    from rich.panel import Panel

    monkeypatch.setenv("COLUMNS", "50")
    buf = io.StringIO()
    c = out_console(buf)
    c.print(Panel("x"))
    c.print("a   ")
    lines = buf.getvalue().splitlines()
    assert len(lines[0]) == 50 and lines[3] == "a"
