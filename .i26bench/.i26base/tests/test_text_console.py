"""The panels show a command's rendering as styled Text taken from the renderables' segments
(ktui.report.console.TextConsole), not ANSI printed and parsed back: same text, same styles."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ktui.report.console import TextConsole, rendered_text
from ktui.report.profile import render_profile
from ktui.repro.judging.model import Row
from ktui.repro.profile.run import ProfileReport, SideProfile

HOSTILE = "k\x1b[31mRED\x1b]8;;http://x\x07link\x1b]8;;\x07\r[bold]x[/bold]"


def _via_ansi(render, report, width):  # the way the panels drew before: the oracle
    buf = io.StringIO()
    render(Console(file=buf, width=width, force_terminal=True, color_system="truecolor", legacy_windows=False), report)
    return Text.from_ansi(buf.getvalue().rstrip())


def _styled(t: Text, width: int) -> str:
    c = Console(width=width, file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True)
    c.print(t)
    return c.export_text(styles=True)


def _profile() -> ProfileReport:
    chart = ["  1e3 |      ____" + "x" * 200, "      |   /", "roof: DRAM 3.35 TB/s (" + "y" * 150 + ")"]
    return ProfileReport(
        trace="t", version="v2", sha1="s" * 40, status="completed", ncu="/x/ncu", ncu_version="2025.1",
        sides={"kernel": SideProfile("kernel", "completed", launches=[{"name": HOSTILE, "id": 1, "duration_s": 1e-5}]),
               "reference": SideProfile("reference", "failed", message=HOSTILE)},
        rows=[Row(key="dram", label="DRAM " + HOSTILE, recorded=50.0, reproduced=48.0, unit="%", verdict="reproduced",
                  note="a note " * 30)],
        callouts=[HOSTILE], roofline={"chart": chart}, notes=["n " * 80, HOSTILE], verdict="differs",
        reason="r " * 90, wall_seconds=12.5)


def test_same_text_and_styles_as_the_ansi_round_trip():
    for width in (60, 100, 160):
        a, b = _via_ansi(render_profile, _profile(), width), rendered_text(render_profile, _profile(), width)
        assert b.plain == a.plain
        assert _styled(b, width) == _styled(a, width)


def test_trace_text_never_becomes_an_escape():
    t = rendered_text(render_profile, _profile(), 100)
    assert "\x1b" not in t.plain and "\x07" not in t.plain and "\r" not in t.plain
    assert "␛[31mRED" in t.plain  # shown, inert
    assert "[bold]x[/bold]" in t.plain  # markup in trace text stays text
    assert not any("http://x" in str(s.style) for s in t.spans)  # no link


def test_print_as_console_print():
    c = TextConsole(40)
    c.print(Text("a", style="bold"), Text("b"))  # texts on one line, as Console.print joins them
    c.print()
    tb = Table("x", "y")
    tb.add_row("1", "2")
    c.print(tb)
    c.print(Text("z" * 60), overflow="crop", no_wrap=True)
    lines = c.text.plain.split("\n")
    assert lines[0] == "a b" and lines[1] == "" and lines[2].startswith("┏") and "x" in lines[3]
    assert "z" * 40 in c.text.plain and "z" * 41 not in c.text.plain
    assert any(s.style and "bold" in str(s.style) for s in c.text.spans)
