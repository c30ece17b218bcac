"""The views of a reproduction, a profile and a verify report (ktui/view/repro.py, profile.py,
verify.py): built once from the typed results, every untrusted string cleaned there; the text
commands draw them (ktui/report/draw.py) and the app's widgets too, and nothing from a trace,
a kernel or a judge reaches either as markup or an escape."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest

from ktui.repro.api import ReproReport, _report
from ktui.repro.judging.model import FindingRow, Row
from ktui.repro.profile.run import ProfileReport, SideProfile
from ktui.repro.recorded import recorded_for
from ktui.repro.verdict import compare
from ktui.repro.verify.plan import RunRow
from ktui.repro.verify.results import build_report
from ktui.trace import load
from ktui.view.doc import Para, Table, cell_width, fit_columns, plain_lines, wrap_cell
from ktui.view.profile import profile_view
from ktui.view.repro import brief_para, repro_view, summary_table
from ktui.view.verify import verify_view

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "repro"
# markup, a hyperlink (OSC 8), a title change (OSC 0), a CSI clear, a bell, a carriage return, a
# tab, a bidi override, a C1 CSI, a newline: none may reach a terminal, a widget or a page as such
HOSTILE = ("[bold red]M[/] [link=http://evil]L[/link] \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b]0;pwned\x07 "
           "\x1b[2J\x07\r\t\u202e\x9b31m <script>alert(1)</script> &amp;\nnext")
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\t")


def _entry():
    return json.loads((FIX / "panel_result_cpu_run_v3.json").read_text())


@pytest.fixture(scope="module")
def run_kv():
    run = load(str(FIX / "cpu_run.jsonl"))
    return run, run.kernel("v3")


def _hostile_report(run, kv) -> ReproReport:
    e = copy.deepcopy(_entry())
    r = e["result"]
    r["status"] = "failed"
    r["correctness"] = None
    r["failure"] = {"kind": "runtime_error", "message": "boom " + HOSTILE, "stage": "correctness",
                    "detail": "Traceback\n" + HOSTILE}
    r["checks"] = [{"name": "chk " + HOSTILE, "ok": False}, {"name": "fine", "ok": True}, {"name": "na"}]
    r["notes"] = ["note " + HOSTILE]
    r["timing"] = {"host_bound": {"reason": "host " + HOSTILE}, "method": HOSTILE, "trials": 3}
    r["environment"]["gpu"] = "GPU " + HOSTILE
    r["sandbox"] = {"candidate": ["ns " + HOSTILE]}
    rec = recorded_for(run, kv)
    comp = compare(rec, r)
    comp.findings.append(FindingRow(cls="cls" + HOSTILE, title="t", reason="why " + HOSTILE, evidence="ev" + HOSTILE,
                                    source="static", turn=3, since="v2" + HOSTILE, line=12))
    comp.not_measured.append("dram " + HOSTILE)
    comp.notes.append("comp note " + HOSTILE)
    comp.rows.append(Row(key="x", label="label " + HOSTILE, recorded=1.0, reproduced=2.0, ratio=2.0,
                         verdict="differs", note="a note " + HOSTILE, recorded_text="rec " + HOSTILE))
    return ReproReport(trace="t" + HOSTILE, version="v3" + HOSTILE, sha1=kv.sha1, first_turn=2, turns=[2, 3],
                       request={}, result=r, comparison=comp, recorded=rec, reference_origin="ref " + HOSTILE)


def _strings(parts) -> list[str]:
    out = []
    for p in parts:
        if isinstance(p, Para):
            out += [s.text for s in p.spans]
        else:
            out += [p.title] + [c.header for c in p.columns]
            out += [s.text for row in p.rows for c in row for s in c.spans]
    return out


def _assert_clean(strings):
    for s in strings:
        for bad in RAW:
            assert bad not in s, (bad, s)


# ---- a reproduction ------------------------------------------------------------------------------
def test_repro_view_of_a_stored_result(run_kv):
    run, kv = run_kv
    v = repro_view(_report(run, kv, _entry(), cached=True))
    assert v.version == "v3" and v.verdict == "unit error suspected" and v.final and v.turns == (2, 3, 4, 5)
    rows = {r.label: r for r in v.rows}
    assert rows["compiles"].recorded == "pass (compile_kernel, turn 2)" and rows["compiles"].verdict == "reproduced"
    assert rows["kernel runtime (mean)"].ratio == "378x" and rows["kernel runtime (mean)"].footnote == 1
    assert "(ms stored as μs)" in rows["kernel runtime (mean)"].note
    assert v.timing.startswith("(cached result from 2026-12-04 19:00:00")
    assert v.environment.startswith("CPU ") and "torch 2.13.0+cpu" in v.environment
    assert v.sandbox.startswith("sandbox (in force for the kernel): PID namespace")
    assert v.inputs.startswith("inputs: drawn from seed 1329262405")
    # the document holds the same, in the order shown: headline, info, table, footnotes, verdict
    lines = plain_lines(v.parts)
    assert lines[0].startswith("v3 · sha1 1b1f84d63f30 · turns 2-5 · final submission")
    assert lines[0].endswith(" UNIT ERROR SUSPECTED ")
    tables = [p for p in v.parts if isinstance(p, Table)]
    assert [t.key for t in tables] == ["comparison"]
    assert tables[0].cells("metric")[:2] == ["compiles", "correctness"]
    assert any(x.startswith("verdict: unit error suspected — ") for x in lines)


def test_hostile_strings_are_cleaned_once_in_the_view(run_kv):
    run, kv = run_kv
    v = repro_view(_hostile_report(run, kv))
    _assert_clean(_strings(v.parts))
    _assert_clean([v.version, v.reason, v.reference, v.environment, v.sandbox, v.failure_tail, *v.notes]
                  + [f.cls + f.reason + f.evidence + f.where for f in v.findings]
                  + [c.name for c in v.checks] + [r.label + r.recorded + r.note for r in v.rows])
    text = "\n".join(plain_lines(v.parts))
    assert "␛]8;;http://x␇link" in text and "␛[2J" in text and "<U+202E>" in text  # shown, inert
    assert "[bold red]M[/]" in text and "<script>alert(1)</script>" in text  # markup stays text
    assert "not re-measured: dram " in text  # (it went to the terminal unsanitized before)
    # one-line fields are on one line; the failure's tail keeps its lines
    assert all("\n" not in r.label + r.recorded + r.note for r in v.rows) and "\n" in v.failure_tail
    assert [c.ok for c in v.checks] == [False, True, None]
    assert brief_para(_hostile_report(run, kv)).wrap is False
    _assert_clean([s.text for s in brief_para(_hostile_report(run, kv)).spans])
    _assert_clean(_strings([summary_table([_hostile_report(run, kv)])]))


def test_the_text_commands_print_the_view(run_kv):
    """``ktui repro``'s text is the view's, drawn: no escape on a terminal, markup as text."""
    from rich.console import Console

    from ktui.report.repro import brief_line, render_report, render_summary

    run, kv = run_kv
    rep = _hostile_report(run, kv)
    for width in (60, 100, 160):
        buf = io.StringIO()
        con = Console(file=buf, width=width, force_terminal=True, color_system="truecolor")
        render_report(con, rep)
        render_summary(con, [rep])
        con.print(brief_line(rep), soft_wrap=True)
        out = buf.getvalue()
        assert "\x1b]8;;http" not in out and "\x1b]0;" not in out and "\x1b[2J" not in out and "\x07" not in out
        assert "\r" not in out and "\u202e" not in out
        assert "[bold red]M[/]" in out.replace("\x1b[0m", "").replace("\x1b[2m", "")  # not parsed as markup


# ---- a profile -------------------------------------------------------------------------------------
def _profile(name: str = "evil") -> ProfileReport:
    chart = ["  1e3 |      ____" + "x" * 200, "      |   /", "roof: DRAM 3.35 TB/s (" + HOSTILE + ")"]
    return ProfileReport(
        trace="t", version="v2" + HOSTILE, sha1="s" * 40, status="completed", ncu="/x/ncu", ncu_version="2025.1" + HOSTILE,
        sides={"kernel": SideProfile("kernel", "completed", launches=[{"name": name + HOSTILE, "id": 1, "duration_s": 1e-5},
                                                                      {"name": "void k<int>(float*)", "id": HOSTILE}],
                                     forward={"launches": 2, "duration_s": 2e-5,
                                              "stalls_top": [{"reason": "long" + HOSTILE, "share_pct": 50.0}],
                                              "stall_family": "smsp__pcsamp", "stall_counts": {"a": 10}},
                                     passes={"a": 3}, wall_seconds=1.5),
               "reference": SideProfile("reference", "failed", message=HOSTILE)},
        rows=[Row(key="profile.memory.dram", label="DRAM " + HOSTILE, recorded=50.0, reproduced=48.0, unit="%",
                  verdict="reproduced", note="impossible " + HOSTILE, recorded_text="rec" + HOSTILE,
                  reproduced_text="[red]rep[/red]" + HOSTILE)],
        callouts=[HOSTILE], roofline={"chart": chart}, notes=[HOSTILE], verdict="differs", reason="r " + HOSTILE,
        environment={"gpu": HOSTILE}, wall_seconds=12.5)


def test_profile_view():
    v = profile_view(_profile())
    _assert_clean(_strings(v.parts))
    assert v.verdict == "differs" and v.rows[0].footnote == 1 and v.rows[0].reproduced.startswith("[red]rep[/red]")
    kernel, ref = v.sides
    assert kernel.text.startswith("2 launches (") and "3 ncu passes" in kernel.text and kernel.wall == ", 1.5 s under ncu"
    assert len(kernel.launches) == 2 and "k<…>" in kernel.launches[1]
    assert ref.text.startswith("not profiled: ") and ref.launches == ()
    assert v.stalls.startswith("measured warp stalls (share of 10 stall samples — too few samples")
    # the chart's lines above its legend are cropped (a chart), the legend wraps
    charts = [p for p in v.parts if isinstance(p, Para) and p.text.startswith(("  1e3", "      |", "roof:"))]
    assert [p.crop for p in charts] == [True, True, False]
    assert [p.key for p in v.parts if isinstance(p, Table)] == ["comparison"]
    tab = next(p for p in v.parts if isinstance(p, Table))
    assert tab.rows[0][0].role == "group"  # the group heading row


def test_a_profile_without_rows_says_why():
    rep = ProfileReport(trace="t", version="v1", sha1="a" * 40, status="failed", message="boom " + HOSTILE,
                        sides={"kernel": SideProfile("kernel", "failed", message="compile " + HOSTILE)})
    v = profile_view(rep)
    assert v.rows == () and v.reason.startswith("boom ") and not any(isinstance(p, Table) for p in v.parts)
    _assert_clean(_strings(v.parts))


# ---- a verify report -----------------------------------------------------------------------------
def _verify_report(run_kv):
    run, kv = run_kv
    rec = recorded_for(run, kv)
    e = _entry()
    rows = [RunRow(path=f"sweep/m{i}/{HOSTILE}{i}.jsonl", real=f"/x{i}", model="model" + HOSTILE if i else "m0",
                   problem="P", version="v3", final=True, recorded_outcome="passed", recorded_speedup=2.0 + i,
                   job=f"j{i}" if i < 2 else None, note="" if i < 2 else "no reference " + HOSTILE, recorded=rec)
            for i in range(3)]
    return build_report(rows, {"j0": e["result"], "j1": e["result"]}, cached={"j0"}, stats={"runs": 3, "wall_s": 1.0})


def test_verify_view_from_the_typed_report(run_kv):
    report = _verify_report(run_kv)
    v = verify_view(report.record())
    _assert_clean(_strings(v.parts))
    assert [r.verdict for r in v.runs] == ["unit error suspected", "unit error suspected", "not judged here"]
    assert v.runs[0].reproduced.endswith("(cached)") and v.runs[2].reproduced == "incomplete"
    assert v.judged == 2 and v.not_judged == 1 and len(v.claims) == 2
    assert v.summary.startswith("claims that do not hold (2 of 2 judged; 1 run not judged here")
    assert {m.model for m in v.models} >= {"m0", "all runs"}
    assert v.runs_table.column("reason").min_room == 150  # the reason only on a wide screen
    claims = [p for p in v.parts if isinstance(p, Para) and p.text.startswith("  unit error suspected")]
    assert len(claims) == 2 and all(not p.wrap for p in claims)  # one record, one line
    # the same view from the report read back from its JSON
    again = verify_view(type(report.record()).from_dict(json.loads(json.dumps(report.to_dict(), default=str))))
    assert again == v


def test_verify_text_at_100_columns_keeps_each_record_whole_and_says_why(run_kv):
    """At 100 columns ``ktui verify`` (Rich squeezing every column) cut each verdict to "not judged
    he…", broke a model's row over two lines ("0 (7" / "not)") and said "see why above" with the
    reasons left out. The columns are now chosen by priority (the ones left out named), each row
    on one line, and the reasons of the runs not judged are printed below at any width."""
    from rich.console import Console

    from ktui.report.verify import render

    report = _verify_report(run_kv)
    for width in (100, 160):
        buf = io.StringIO()
        render(Console(file=buf, width=width, color_system=None), report)
        lines = buf.getvalue().splitlines()
        rows = [x for x in lines if x.startswith("sweep/")]
        assert len(rows) == 3 and all(len(x) <= width for x in rows), rows
        assert [x.rstrip().endswith(("unit error suspected", "not judged here")) for x in rows] == [True] * 3, rows
        start = lines.index("per model: recorded → reproduced")
        models = [x for x in lines[start + 2:lines.index("", start)] if not x.startswith("not shown at ")]
        assert len(models) == len(report.record().models), models  # no row broken over two lines
        assert all("→" in x and len(x) <= width for x in models), models
        assert "not judged here, and why" in lines and any("no reference" in x for x in lines)
        assert "above" not in buf.getvalue()


# ---- the neutral layout: column priorities ----------------------------------------------------------
def test_fit_columns_leaves_out_by_priority_and_shrinks_the_widest(run_kv):
    run, kv = run_kv
    t = next(p for p in repro_view(_report(run, kv, _entry(), cached=True)).parts if isinstance(p, Table))
    keys, w = fit_columns(t, 200)
    assert keys == ["metric", "recorded", "reproduced", "ratio", "verdict"]
    keys, w = fit_columns(t, 84)  # the panel's body at 100x30
    assert "ratio" not in keys and keys[0] == "metric" and keys[-1] == "verdict"
    assert sum(w.values()) + 2 * (len(keys) - 1) <= 84
    assert w["recorded"] >= len("pass (compile_kernel, turn 2)")  # the recorded column does not wrap
    keys, w = fit_columns(t, 30)
    assert "metric" in keys and "verdict" in keys  # priority 0: never left out


def test_wrap_cell():
    assert wrap_cell("pass 5/5 + held-out pass", 12) == ["pass 5/5 +", "held-out", "pass"]
    assert wrap_cell("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert wrap_cell("abcdefghij", 4, wrap=False) == ["abc…"]
    assert cell_width("μs") == 2 and cell_width("表") == 2


# ---- the app's widgets, drawn from the view ------------------------------------------------------------
def test_the_panel_table_fits_100_columns_without_wrapping_the_recorded_value(run_kv):
    """Issue 24: at 100x30 the repro panel's body is 84 cells; the table fits it by priority (the
    ratio left out and named, the reproduced value and the verdict wrapped on words), and every
    recorded value stays on one line."""
    from ktui.tui.widgets.resultview import table_lines

    run, kv = run_kv
    t = next(p for p in repro_view(_report(run, kv, _entry(), cached=True)).parts if isinstance(p, Table))
    lines, left_out = table_lines(t, 84)
    text = [ln.plain for ln in lines]
    assert all(len(x) <= 84 for x in text) and left_out == ["ratio"]
    for rec in t.cells("recorded"):
        assert any(rec in x for x in text), rec  # whole, on one line
    lines, left_out = table_lines(t, 140)
    assert left_out == [] and "ratio" in lines[0].plain
    # a column left out with nothing in it is not named
    from dataclasses import replace

    no_ratio = replace(t, rows=tuple((*r[:3], type(r[3])(()), r[4]) for r in t.rows))
    assert table_lines(no_ratio, 84)[1] == []


def test_widgets_show_hostile_strings_as_text(run_kv):
    """Markup in a trace string stays text in the widgets (plain Text, never parsed), and no
    escape, bell or bidi control reaches a segment."""
    import asyncio

    from textual.app import App
    from textual.widgets import Static

    from ktui.tui.widgets.resultview import ResultDoc, ViewTable

    run, kv = run_kv
    parts = repro_view(_hostile_report(run, kv)).parts + profile_view(_profile()).parts

    class Host(App):
        def compose(self):
            yield ResultDoc(parts, id="doc")

    async def go():
        app = Host()
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause()
            doc = app.query_one(ResultDoc)
            shown = doc.plain
            assert "[bold red]M[/]" in shown and "<script>alert(1)</script>" in shown
            for w in doc.query(Static):
                content = w.render()
                assert not isinstance(content, str)  # a Text, not a markup string
                for span in getattr(content, "spans", []):
                    assert "link" not in str(span.style)
            for t in doc.query(ViewTable):
                strips = [t.render_line(y) for y in range(t.size.height)]
                for strip in strips:
                    for seg in strip:
                        assert not any(b in seg.text for b in RAW), seg.text
                        assert seg.style is None or not seg.style.link

    asyncio.run(go())


def test_findings_wrap_their_prose_before_their_code_evidence():
    # at 100 and 120 columns the evidence (code) stays whole and the description wraps (the
    # priority-narrowing tables first squeezed the evidence to its longest word)
    from rich.console import Console

    from ktui.report.draw import draw
    from ktui.view.repro import FindingView, findings_table

    f = (FindingView("timer_patch", "replaces the timer the harness reads (time.perf_counter) with a slower clock "
                     "so that the measured time shrinks", "time.perf_counter = _slow_clock", "turn 1 (v2)"),
         FindingView("torch_fallback", "forward calls torch.matmul instead of its kernel", "torch.matmul(a, b)",
                     "turn 3 (v4)"))
    for width in (100, 120):
        con = Console(width=width, record=True, color_system=None)
        draw(con, (findings_table(f),))
        out = con.export_text()
        assert "time.perf_counter = _slow_clock" in out and "torch.matmul(a, b)" in out, out
        assert max(len(line) for line in out.splitlines()) <= width


def test_a_recorded_row_not_compared_is_not_called_not_recorded(tmp_path):
    """`ktui repro` of a CUDA kernel on a CPU (not judged here): the rows read "compiles  pass
    (compile_kernel, turn 5)  —  not recorded", a verdict that denied the recorded value beside it."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT, SEED_TRACE

    env = {**os.environ, "KTUI_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120"}
    r = subprocess.run([sys.executable, "-m", "ktui", "repro", str(SEED_TRACE), "--final", "--device", "cpu"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert "NOT JUDGED HERE" in r.stdout, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith(("compiles", "correctness"))]
    assert len(rows) == 2 and all("pass (" in x for x in rows), rows
    assert all(x.rstrip().endswith("not judged") and "not recorded" not in x for x in rows), rows
