"""One sanitizer, in the view: a result carries the words of a kernel, a probe or a trace raw (the
service cleans nothing), and every renderer that shows them neutralizes them: the text commands,
``--json`` (repro, profile, verify), the HTML, the app's widgets, ``ktui export``'s messages and
the exported script's own output. Hostile here: terminal escapes (OSC title, OSC 8 link, CSI),
a bell, a C1 CSI, a bidi override, Rich markup and HTML script."""

from __future__ import annotations

import copy
import io
import json
import re
from pathlib import Path

import pytest

from ktui.repro.api import ReproReport
from ktui.repro.recorded import recorded_for
from ktui.repro.verdict import compare
from ktui.trace import load

FIX = Path(__file__).resolve().parent / "fixtures" / "repro"
EVIL = "\x1b]0;pwned\x07 \x1b[31m[red]R[/red] \x1b]8;;http://x\x07L\x1b]8;;\x07 \u202egnp.exe \x9b2J <script>alert(1)</script>"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def _result_with_hostile_words() -> dict:
    """A cached result whose probes failed with hostile names, reasons and evidence, and whose
    kernel wrote a hostile error: what a kernel controls."""
    e = json.loads((FIX / "panel_result_cpu_run_v3.json").read_text())
    r = copy.deepcopy(e["result"])
    r["checks"] = [{"name": "chk" + EVIL, "ok": False, "detail": "detail " + EVIL, "evidence": "ev " + EVIL},
                   {"name": "fine", "ok": True}]
    r["findings"] = [{"class": "probe" + EVIL, "reason": "why " + EVIL, "evidence": "measured " + EVIL}]
    r["notes"] = ["note " + EVIL]
    return r


@pytest.fixture(scope="module")
def report() -> ReproReport:
    run = load(str(FIX / "cpu_run.jsonl"))
    kv = run.kernel("v3")
    rec = recorded_for(run, kv)
    res = _result_with_hostile_words()
    return ReproReport(trace="t", version=kv.label, sha1=kv.sha1, first_turn=2, turns=[2, 3], request={},
                       result=res, comparison=compare(rec, res), recorded=rec)


def _no_raw(text: str) -> None:
    for bad in RAW:
        assert bad not in text, (bad, text[max(0, text.find(bad) - 40): text.find(bad) + 40])


def test_the_service_keeps_the_words_raw(report):
    """The judge's finding rows hold what the kernel wrote, as it wrote it (it was sanitized
    there before; now only the views clean)."""
    comp = report.comparison
    dynamic = [f for f in comp.findings if f.source == "dynamic"]
    assert {f.cls for f in dynamic} == {("chk" + EVIL)[:60], ("probe" + EVIL)[:60]}  # a class name is cut at 60
    assert any(f.reason == "why " + EVIL and f.evidence == "measured " + EVIL for f in dynamic)
    assert "\x1b]0;pwned" in comp.reason  # the verdict's reason quotes them, raw


def test_text(report):
    from rich.console import Console

    from ktui.report.repro import brief_line, render_report, render_summary

    buf = io.StringIO()
    con = Console(file=buf, width=140, force_terminal=True, color_system="truecolor")
    render_report(con, report)
    render_summary(con, [report])
    con.print(brief_line(report), soft_wrap=True)
    out = buf.getvalue()
    for seq in ("\x1b]0;", "\x1b]8;;http", "\x1b[31m", "\x07", "\u202e", "\x9b"):
        assert seq not in out
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)  # Rich's own colours
    assert "[red]R[/red]" in plain and "␛]0;pwned␇" in plain and "<U+202E>" in plain  # shown, inert


def test_json(report):
    """``ktui repro --json``: the raw result and its comparison, every string cleaned on the way out."""
    from ktui.view.text import json_text

    out = json_text(report.to_dict())
    _no_raw(out)
    d = json.loads(out)
    reasons = [f["reason"] for f in d["comparison"]["findings"]]
    assert "why ␛]0;pwned␇ ␛[31m[red]R[/red] ␛]8;;http://x␇L␛]8;;␇ <U+202E>gnp.exe \\x9b2J <script>alert(1)</script>" in reasons
    assert "␛]0;pwned" in d["result"]["checks"][0]["name"] and "␛]0;pwned" in d["reason"]


def test_repro_json_command_from_a_planted_cache(report, tmp_path, monkeypatch, capsys):
    """``ktui repro TRACE --version v3 --device cpu --json`` answered from the cache (nothing runs):
    what it prints holds no raw control, and the hostile words are there, inert."""
    from ktui.report.repro import repro_command
    from ktui.repro import cache
    from ktui.repro.api import ReproOptions, _key, resolve_reference

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("ktui.repro.api.run_request", lambda *a, **k: pytest.fail("ran the kernel"))
    run = load(str(FIX / "cpu_run.jsonl"))
    kv = run.kernel("v3")
    ref, _ = resolve_reference(run, None)
    e = json.loads((FIX / "panel_result_cpu_run_v3.json").read_text())
    e["key"], e["result"] = _key(kv, ReproOptions(device="cpu"), ref), report.result
    assert cache.store(e) is not None
    assert repro_command(FIX / "cpu_run.jsonl", version="v3", device="cpu", as_json=True) == 1  # suspicious
    out = capsys.readouterr().out
    _no_raw(out)
    d = json.loads(out)
    assert d["cached"] is True and d["verdict"] == "suspicious" and "␛]0;pwned␇" in d["reason"]
    assert d["result"]["checks"][0]["name"].startswith("chk␛]0;pwned␇")  # the raw result, cleaned on the way out


def test_html(report):
    from ktui.report.html_results import doc_html
    from ktui.view.repro import repro_view

    page = doc_html(repro_view(report).parts)
    _no_raw(page)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "[red]R[/red]" in page and "␛]0;pwned␇" in page


def test_app_widget(report):
    import asyncio

    from textual.app import App
    from textual.widgets import Static

    from ktui.tui.widgets.resultview import ResultDoc, ViewTable
    from ktui.view.repro import repro_view

    parts = repro_view(report).parts

    class Host(App):
        def compose(self):
            yield ResultDoc(parts, id="doc")

    async def go():
        app = Host()
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            doc = app.query_one(ResultDoc)
            assert "[red]R[/red]" in doc.plain and "<script>alert(1)</script>" in doc.plain
            _no_raw(doc.plain)
            for w in doc.query(Static):
                assert not isinstance(w.render(), str)  # a Text, never a markup string
            seen = ""
            for t in doc.query(ViewTable):
                for y in range(t.size.height):
                    for seg in t.render_line(y):
                        _no_raw(seg.text)
                        assert seg.style is None or not seg.style.link
                        seen += seg.text
            assert "probe␛]0;pwned" in seen.replace("\n", "") or "probe␛]0;" in seen  # the finding is in a table

    asyncio.run(go())


def test_verify_json_csv_and_text(report):
    from rich.console import Console

    from ktui.report.verify import render, write_csv, write_json
    from ktui.repro.verify.plan import RunRow
    from ktui.repro.verify.results import build_report

    row = RunRow(path="s/m/p.jsonl", real="/x", model="m", problem="P", version="v3", final=True,
                 recorded_outcome="passed", recorded_speedup=2.0, job="j", recorded=report.recorded)
    rep = build_report([row], {"j": report.result})
    assert "\x1b]0;pwned" in rep.rows[0].reason  # raw in the service's report
    buf = io.StringIO()
    write_json(rep, buf)
    _no_raw(buf.getvalue())
    assert "␛]0;pwned" in json.loads(buf.getvalue())["runs"][0]["reason"]
    buf = io.StringIO()
    write_csv(rep, buf)
    _no_raw(buf.getvalue())
    buf = io.StringIO()
    render(Console(file=buf, width=200, force_terminal=True), rep)
    for seq in ("\x1b]0;", "\x1b]8;;http", "\x1b[31m[", "\x07", "\u202e", "\x9b"):
        assert seq not in buf.getvalue()


def test_profile_json():
    from ktui.repro.profile.run import ProfileReport, SideProfile
    from ktui.view.text import json_text

    rep = ProfileReport(trace="t", version="v1", sha1="a" * 40, status="failed", message="boom " + EVIL,
                        sides={"kernel": SideProfile("kernel", "failed", message="compile " + EVIL)})
    out = json_text(rep.to_dict())
    _no_raw(out)
    assert json.loads(out)["sides"]["kernel"]["message"].startswith("compile ␛]0;pwned␇")
    assert ProfileReport.from_dict(json.loads(out)).status == "failed"  # still a profile


def test_export_messages_are_cleaned(tmp_path, monkeypatch, capsys):
    """``ktui export`` prints the trace's hardware and the output path: cleaned there, raw in the service."""
    from ktui.report.export import export_command
    from ktui.repro import export as svc

    run = load(str(FIX / "cpu_run.jsonl"))
    monkeypatch.setattr("ktui.repro.recorded.recorded_hardware", lambda run: "H100 " + EVIL)
    assert "\x1b]0;pwned" in svc.suggested_device(run)[1]  # raw
    out = tmp_path / ("r\x1b[2Jepro\u202e.py")
    assert export_command(FIX / "cpu_run.jsonl", version="v3", output=str(out)) == 0
    err = capsys.readouterr().err
    _no_raw(err)
    assert "the trace ran on H100 ␛]0;pwned␇" in err and "r␛[2Jepro<U+202E>.py" in err


def test_the_exported_script_shows_its_text_inert(tmp_path):
    """The standalone script has no view: its own ``_shown`` makes controls and bidi overrides
    visible in what it prints, and both of its prints of trace or kernel text go through it."""
    import ast

    from ktui.repro.export import export_script

    run = load(str(FIX / "cpu_run.jsonl"))
    kv = run.kernel("v3")
    text = export_script(run, kv, (FIX / "reference_scaled_relu.txt").read_text(), "fixture")
    tree = ast.parse(text)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_shown")
    ns: dict = {}
    exec(compile(ast.Module([fn], []), "script", "exec"), ns)
    shown = ns["_shown"]("a\n" + EVIL)
    _no_raw(shown)
    assert shown.startswith("a\n<U+001B>]0;pwned<U+0007>") and "<U+202E>" in shown
    prints = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "print"]
    assert any("_shown(report.format_result(" in p for p in prints)
    assert not any("format_result" in p and "_shown" not in p for p in prints)


def test_verify_progress_lines_are_cleaned():
    """``ktui verify``'s progress lines off a terminal: a build worker's words (what it compiles)
    and a failure's kind come from the judge's side; printed cleaned (the build line used to import
    ``one_line`` from where it no longer is, and raised)."""
    from ktui.report.verify import ProgressDisplay
    from ktui.repro.verify.engine import BUILD_PROGRESS, FAILED, QUEUED, Event

    class Planner:
        cached: dict = {}
        done = True

    buf = io.StringIO()
    show = ProgressDisplay(Planner(), live=False, stream=buf)
    show(Event(QUEUED, "j" * 40, 0.0, label="v1"))
    show(Event(BUILD_PROGRESS, "j" * 40, 0.0, label="v1" + EVIL, detail="nvcc " + EVIL, seconds=1.0))
    show(Event(FAILED, "j" * 40, 0.0, slot="cuda:0", label="v1", seconds=2.0,
               result={"failure": {"kind": "crash" + EVIL}}))
    out = buf.getvalue()
    _no_raw(out)
    assert out.startswith("verify: building v1␛]0;pwned␇") and "nvcc ␛]0;pwned␇" in out
    assert "verify: [1/1] v1 jjjjjjjjjj crash␛]0;pwned␇" in out and "on cuda:0 2.0s" in out


def test_verify_live_progress_shows_what_compiles_cleaned():
    """On a terminal the progress bar's counts say how many builds compile now and what the latest
    one compiles (build progress, issue 23), cleaned (a kernel names its extensions) and drawn as
    plain text (no Rich markup from a trace)."""
    from ktui.report.verify import ProgressDisplay
    from ktui.repro.verify.engine import BUILD_PROGRESS, BUILT, Event

    class Planner:
        cached: dict = {}
        done = True

    show = ProgressDisplay(Planner(), live=False, stream=io.StringIO())
    show(Event(BUILD_PROGRESS, "a" * 40, 0.0, label="v1", detail="compiling ext_a (MAX_JOBS=4)", seconds=1.0))
    show(Event(BUILD_PROGRESS, "b" * 40, 0.0, label="v2", detail="compiling [bold]x" + EVIL, seconds=1.0))
    text = show.counts()
    _no_raw(text)
    assert "2 compiling (v2: compiling [bold]x␛]0;pwned␇" in text
    show(Event(BUILT, "b" * 40, 0.0, label="v2", seconds=3.0))
    assert "1 compiling (v1: compiling ext_a (MAX_JOBS=4))" in show.counts()
    show(Event(BUILT, "a" * 40, 0.0, label="v1", seconds=3.0))
    assert "compiling" not in show.counts()
    import inspect

    src = inspect.getsource(ProgressDisplay.start)
    assert 'TextColumn("{task.fields[counts]}", markup=False)' in src
