"""``ktui report DIR --verify FILE``: the verify report (read back through VerifyReport.from_dict)
drawn as HTML from its view (ktui/report/html_results.py): every string escaped, roles as classes;
a file that is not a verify report is refused with the field that is wrong, and no page is written."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from ktui.report.html import report_command
from ktui.report.html_results import doc_html, role_class
from ktui.report.verify import write_json
from ktui.repro.verify.plan import RunRow
from ktui.repro.verify.results import build_report
from ktui.view.doc import Para, Table, cell, para

SWEEP = Path(__file__).resolve().parent / "fixtures" / "verify" / "sweep"
EVIL = '</td></table><script>alert(1)</script><img src=x onerror=alert(2)>"\'&amp;\x1b]0;t\x07\u202e'


def _verify_json(tmp_path) -> Path:
    rows = [RunRow(path=f"sweep/{EVIL}{i}.jsonl", real=f"/x{i}", model=EVIL if i else "m", problem="P", version="v1",
                   final=True, recorded_outcome="passed", recorded_speedup=2.0, note=f"no reference {EVIL}")
            for i in range(2)]
    report = build_report(rows, {}, stats={"runs": 2, "engine": EVIL})
    report.claims = list(report.rows)  # as if they were claims that do not hold: their lines are drawn
    buf = io.StringIO()
    write_json(report, buf)
    p = tmp_path / "verify.json"
    p.write_text(buf.getvalue())
    return p


def _section(page: str) -> str:
    i = page.index('<section id="verify-section">')
    return page[i: page.index("</section>", i)]


def test_the_verification_section_escapes_everything(tmp_path):
    out = tmp_path / "r.html"
    assert report_command(SWEEP, out, use_cache=False, quiet=True, verify_file=str(_verify_json(tmp_path))) == 0
    sec = _section(out.read_text())
    assert "<script" not in sec and "<img" not in sec and "onerror=alert(2)>" not in sec
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in sec and "&amp;amp;" in sec
    assert "\x1b" not in sec and "\x07" not in sec and "\u202e" not in sec and "␛]0;t␇" in sec
    # the tags in the section are only ktui's own
    assert set(re.findall(r"<(\w+)", sec)) <= {"section", "h2", "div", "p", "table", "thead", "tbody", "tr", "th",
                                                "td", "span", "caption"}
    assert "not judged here" in sec and "per model: recorded → reproduced" in sec


def test_a_bad_verify_file_writes_no_page(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": 1, "runs": [{"path": 3}], "models": [], "claims_not_holding": []}))
    out = tmp_path / "r.html"
    assert report_command(SWEEP, out, use_cache=False, quiet=True, verify_file=str(bad)) == 2
    assert not out.exists()
    assert "runs[0].path: expected a string" in capsys.readouterr().err
    assert report_command(SWEEP, out, use_cache=False, quiet=True, verify_file=str(tmp_path / "none.json")) == 2


def test_doc_html_roles_are_classes_and_text_is_escaped():
    t = Table("t", (), ())
    from ktui.view.doc import Column

    t = Table("t", (Column("a", "a<b"), Column("n", "n", justify="right")), ((cell("<x>", role="verdict.differs"),
                                                                           cell("1")),))
    h = doc_html((para(("v", "verdict.reproduced: fails the same way"), " & <i>"), t, Para(())))
    assert '<span class="r-verdict-reproduced-fails-the-same-way">v</span> &amp; &lt;i&gt;' in h
    assert '<th>a&lt;b</th>' in h and 'class="r-verdict-differs">&lt;x&gt;</td>' in h and 'class="num">1<' in h
    assert role_class('x" onclick="y') == "r-x-onclick-y"
