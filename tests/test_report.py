"""``ktui report``: one self-contained HTML file, its data, and the page in headless Chromium
(Debian's ``chromium`` driven by Playwright): charts, sorting, filtering, a run's detail, and
trace text that never runs as script."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from chart_sweep import EVIL_MODEL, INJECTIONS, injection_trace, make_chart_sweep
from click.testing import CliRunner
from conftest import FIXTURES, ROOT

from ktui.cli import main
from ktui.report.html import build_report, run_detail
from ktui.report.html_assets import JS
from ktui.trace import load
from ktui.view import build_view

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures not present")
pytestmark = needs_fixtures

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _have_browser() -> bool:
    if not CHROMIUM.exists():
        return False
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


needs_browser = pytest.mark.skipif(not _have_browser(), reason="needs /usr/bin/chromium and playwright")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def sweep(tmp_path) -> Path:
    sw = make_chart_sweep(tmp_path)
    (sw / "hand" / "injection.jsonl").write_text(injection_trace())
    return sw


@pytest.fixture
def report(sweep, tmp_path) -> tuple[Path, str]:
    out = tmp_path / "report.html"
    res = CliRunner().invoke(main, ["report", str(sweep), "-o", str(out), "--no-cache"])
    assert res.exit_code == 0, res.output
    return out, out.read_text(encoding="utf-8")


def _details(page: str) -> dict[int, dict]:
    out = {}
    for m in re.finditer(r'<script type="application/octet-stream" id="d(\d+)">([A-Za-z0-9+/=]*)</script>', page):
        out[int(m.group(1))] = json.loads(gzip.decompress(base64.b64decode(m.group(2))))
    return out


def _data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="ktui-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


# ---- the file ---------------------------------------------------------------------------------------
def test_report_is_self_contained_and_escapes_trace_text(report):
    _, page = report
    # nothing is fetched at view time: no external src / href, no @import, connections forbidden
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page
    assert "default-src 'none'" in page and "connect-src 'none'" in page
    nonce = re.search(r"script-src 'nonce-([^']+)'", page).group(1)
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert sum(1 for s in scripts if f'nonce="{nonce}"' in s) == 1
    assert all(s.startswith(('<script type="application/json"', '<script type="application/octet-stream"',
                             f'<script nonce="{nonce}"')) for s in scripts)
    # every injected string is inert: escaped in HTML, \u-escaped in the JSON, gzipped in the details
    for inj in INJECTIONS:
        assert inj not in page
    assert "<script>window.__pwned" not in page and "onerror=\"window" not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page  # the evil model, escaped, in the charts
    assert "\x1b" not in page


def test_script_never_parses_html():
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                 "setAttribute(\"on", "srcdoc", "createContextualFragment", "DOMParser"):
        assert sink not in JS, sink


def test_report_data_is_the_runs_table_and_the_view_model(report, sweep):
    _, page = report
    data = _data(page)
    paths = [r["c"][0] for r in data["rows"]]
    assert len(paths) == 14 and "hand/injection.jsonl" in paths
    assert [c["key"] for c in data["columns"]][:6] == ["path", "model", "outcome", "speedup", "hacks", "flags"]
    details = _details(page)
    assert sorted(details) == list(range(14))
    seed_i = paths.index("project/seed.jsonl")
    d = details[seed_i]
    v = build_view(load(ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"))
    assert d["facts"] == [[f.label, f.text, f.role] for f in v.header.facts]  # says what the app says
    assert [f[1] for f in d["flags"]] == [f.code for f in v.flags]
    assert len(d["turns"]) == len(v.turns) == 9
    assert [t["blocks"][0][6] for t in d["turns"]] == [
        [[[sp.text, sp.role] for sp in line] for line in t.blocks[0].lines] for t in v.turns]
    assert [(x["a"], x["b"]) for x in d["diffs"]] == [("v1", "v2"), ("v2", "v3"), ("v3", "v4")]
    assert any(k == "added" for k, _ in d["diffs"][-1]["lines"])
    assert d == json.loads(json.dumps(run_detail(str((sweep / "project" / "seed.jsonl").resolve()))))
    inj = details[paths.index("hand/injection.jsonl")]
    text = json.dumps(inj)
    assert "\\u001b" not in text and "\x1b" not in text  # escape codes made visible by the view's sanitizer


def test_report_parses_each_trace_once(sweep, monkeypatch):
    """Each run's row and detail come from one parse of its trace (the row is the loaded run's,
    ktui.trace.index.summarize_loaded), not a skim for the index and a load for the detail; the
    page is the same as with the row skimmed apart."""
    from ktui.trace.reader import LineParser

    seen: list[str] = []
    init = LineParser.__init__

    def counting(self, builder):
        seen.append(builder.run.path)
        init(self, builder)

    monkeypatch.setattr(LineParser, "__init__", counting)
    page, stats = build_report(sweep, use_cache=False, jobs=1)
    data = _data(page)
    ensemble = [r["c"][0] for r in data["rows"] if r["c"][-1].startswith("ensemble")]
    assert len(ensemble) >= 5
    parsed = {(sweep / p).resolve() for p in seen}  # the skim names a file as found (relative)
    assert len(seen) == len(parsed), sorted(seen)  # none parsed twice
    assert all((sweep / p).resolve() in parsed for p in ensemble)
    details = _details(page)
    for i, row in enumerate(data["rows"]):
        assert details[i] == json.loads(json.dumps(run_detail(str((sweep / row["c"][0]).resolve()))))


def test_report_cli_errors(tmp_path):
    res = CliRunner().invoke(main, ["report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "no such" in res.output
    res = CliRunner().invoke(main, ["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 1 and not (tmp_path / "r.html").exists()  # no 0-run page (issue 24)
    assert "no runs to report" in res.output
    res = CliRunner().invoke(main, ["report", str(FIXTURES), "-o", str(tmp_path / "missing" / "r.html")])
    assert res.exit_code == 2 and "cannot write" in res.output


def test_report_in_helper_processes_is_the_same(sweep, monkeypatch):
    monkeypatch.setattr("ktui.report.html.PARALLEL_MIN", 2)
    a, _ = build_report(sweep, use_cache=False, jobs=2)
    b, _ = build_report(sweep, use_cache=False, jobs=1)
    assert _details(a) == _details(b) and _data(a) == _data(b)


# ---- in Chromium --------------------------------------------------------------------------------------
@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _open(browser, path: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    return page, errors


def _shown_paths(page) -> list[str]:
    # the whole path (a long one is cut in the middle in the cell, whole in its tooltip)
    return page.eval_on_selector_all("#runs tbody tr td:first-child", "tds => tds.map(td => td.title || td.textContent)")


def _pwned(page):
    return page.evaluate("window.__pwned === undefined && window.parent.__pwned === undefined ? null : "
                         "String(window.__pwned)")


@needs_browser
def test_report_in_chromium(browser, report):
    path, _ = report
    page, errors = _open(browser, path)
    # the charts render: one series per model (7 with the injection run's model; rep1-model's one run
    # has no kernel and is charted nowhere) in each
    assert page.eval_on_selector_all("svg.fast-p g.series", "n => n.length") == 7
    assert page.eval_on_selector_all("svg.fast-p g.series path", "n => n.length") == 7
    assert page.eval_on_selector_all("svg.speedup g.series", "n => n.length") == 7
    assert page.eval_on_selector_all("svg.grid g.series", "n => n.length") == 7
    assert page.eval_on_selector_all("svg.grid g.cell", "n => n.length") == 12
    assert page.eval_on_selector_all("svg.first-correct g.series", "n => n.length") == 3 * 5  # 5 models got one
    box = page.eval_on_selector("svg.fast-p", "s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; }")
    assert box[0] > 400 and box[1] > 150
    assert page.eval_on_selector_all("#aggregates tbody tr", "n => n.length") == 8  # 7 models + all runs
    assert len(_shown_paths(page)) == 14
    # sorting: click "speedup" (ascending, unknown last), again (descending, unknown last too)
    page.click("#runs thead th[data-col='speedup']")
    col = "#runs tbody tr td.c-speedup"
    sp = page.eval_on_selector_all(col, "tds => tds.map(td => td.textContent)")
    known = [float(x[:-1]) for x in sp if x != "—"]
    assert known == sorted(known) and sp[0] != "—" and sp[-1] == "—"
    page.click("#runs thead th[data-col='speedup']")
    sp = page.eval_on_selector_all(col, "tds => tds.map(td => td.textContent)")
    assert [float(x[:-1]) for x in sp[:3]] == [3.0, 2.4, 2.0] and sp[-1] == "—"
    # filtering: text (every word), outcome, model, and a grid cell
    page.fill("#f-text", "hand p28")
    assert sorted(_shown_paths(page)) == ["hand/agentb_p28.jsonl", "hand/agentb_p28_again.jsonl", "hand/grok_p28.jsonl"]
    page.select_option("#f-outcome", "passed")
    assert sorted(_shown_paths(page)) == ["hand/agentb_p28.jsonl", "hand/grok_p28.jsonl"]
    page.select_option("#f-model", "grok-4.3")
    assert _shown_paths(page) == ["hand/grok_p28.jsonl"]
    assert "showing 1 of 14" in page.text_content("#shown")
    page.fill("#f-text", "")
    page.select_option("#f-outcome", "")
    page.select_option("#f-model", "")
    cell = page.eval_on_selector_all("svg.grid g.cell", "gs => gs.map(g => g.querySelector('title').textContent)")
    k = next(i for i, t in enumerate(cell) if t.startswith("test-agent-b × L1 P28"))
    page.click(f"svg.grid g.cell >> nth={k}")
    assert sorted(_shown_paths(page)) == ["hand/agentb_p28.jsonl", "hand/agentb_p28_again.jsonl"]
    page.click("#cell-clear")
    assert len(_shown_paths(page)) == 14
    # a run's detail: the seed's transcript and its kernel diffs
    page.click("#runs tbody tr:has-text('project/seed.jsonl')")
    page.wait_for_selector("#detail[data-state='ready']")
    assert page.eval_on_selector_all("#detail .turn", "n => n.length") == 9
    assert "grok-4.3" in page.text_content("#detail .facts")
    page.click("#detail .tabs button[data-tab='diffs']")
    assert page.eval_on_selector_all("#detail pre.diff", "n => n.length") == 3
    assert page.eval_on_selector_all("#detail pre.diff .d-added", "n => n.length") > 0
    # hostile runs: open them, unfold everything, switch tabs; nothing ever runs
    for name in ("hand/injection.jsonl", "hand/evil.jsonl"):
        page.click(f"#runs tbody tr:has-text('{name}')")
        page.wait_for_selector(f"#detail[data-state='ready']:has(h2:text-is('{name}'))")
        for _ in range(20):
            if not page.query_selector("#detail .fold"):
                break
            page.click("#detail .fold >> nth=0")
        page.click("#detail .tabs button[data-tab='diffs']")
        page.click("#detail .tabs button[data-tab='transcript']")
        assert page.eval_on_selector_all("#detail script, #detail img, #detail iframe, #detail svg, #detail a",
                                         "n => n.length") == 0
        body = page.text_content("#detail")
        want = INJECTIONS[:3] if name == "hand/injection.jsonl" else [EVIL_MODEL.split("\x1b")[0]]
        assert all(w in body for w in want)  # shown, as text
    page.wait_for_timeout(300)
    assert _pwned(page) is None
    assert page.evaluate("document.title").startswith("ktui report")
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    assert not errors, errors


@needs_browser
def test_report_opens_at_a_run_from_the_address(browser, report):
    path, page_text = report
    i = [r["c"][0] for r in _data(page_text)["rows"]].index("hand/evil.jsonl")
    page = browser.new_page()
    page.goto(path.as_uri() + f"#run-{i}")
    page.wait_for_selector("#detail[data-state='ready']", timeout=20_000)
    assert EVIL_MODEL.split("\x1b")[0][:30] in page.text_content("#detail .facts")
    assert _pwned(page) is None


def test_fixture_report_numbers_match_runs_json(tmp_path):
    """`ktui report ../shared/fixtures`: the aggregates table says what `ktui runs --format json` says."""
    out = tmp_path / "r.html"
    assert CliRunner().invoke(main, ["report", str(FIXTURES), "-o", str(out), "--no-cache"]).exit_code == 0
    page = out.read_text()
    res = CliRunner().invoke(main, ["runs", str(FIXTURES), "--format", "json", "--no-cache"])
    body = json.loads(res.output)
    for a in body["aggregates"]:
        row = re.search(r"<tr><td class=\"\">" + re.escape(a["model"]) + r"</td>(.*?)</tr>", page).group(1)
        cells = re.findall(r"<td class=\"num\">(.*?)</td>", row)
        assert cells[0] == str(a["runs"]) and cells[1] == str(a["passed"])
        assert cells[3] == f"{a['fast_0'] * 100:.0f}%"
    assert len(_data(page)["rows"]) == len(body["runs"])


@needs_browser
def test_fixture_report_in_chromium(browser, tmp_path):
    """The acceptance command: `ktui report ../shared/fixtures -o report.html`, every chart drawn."""
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(FIXTURES), "-o", str(out), "--no-cache"]).exit_code == 0
    page, errors = _open(browser, out)
    models = 3  # claude-sonnet-4-5, gpt-5.5, openai/gpt-5.5-priority (rep1-model's run has no kernel)
    for chart, n in (("fast-p", models), ("speedup", models), ("grid", models), ("first-correct", 3)):
        assert page.eval_on_selector_all(f"svg.{chart} g.series", "n => n.length") == n, chart
    assert page.eval_on_selector_all("svg.grid g.cell", "n => n.length") == 5
    assert len(_shown_paths(page)) == 6
    page.click("#runs tbody tr >> nth=0")
    page.wait_for_selector("#detail[data-state='ready']")
    assert page.eval_on_selector_all("#detail .turn", "n => n.length") >= 1
    assert _pwned(page) is None and not errors, errors


@needs_browser
@pytest.mark.parametrize("width", [1400, 1000, 1920])
def test_runs_table_never_scrolls_sideways(browser, report, width):
    """At 1,400 px the page scrolled sideways (12 columns, no wrapping); now the table fits: the
    least important columns hide (and a note says so), long cells end in an ellipsis with the whole
    text on hover; trace, outcome, speedup, hack classes and flags always shown."""
    path, _ = report
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    dims = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth, "
                         "document.querySelector('.tablewrap').scrollWidth, "
                         "document.querySelector('.tablewrap').clientWidth]")
    assert dims[0] <= dims[1] and dims[2] <= dims[3], dims
    shown = page.eval_on_selector_all("#runs thead th", "ths => ths.filter(t => t.offsetWidth > 0)"
                                                        ".map(t => t.dataset.col)")
    assert shown[0] == "path" and {"outcome", "speedup", "hacks", "flags"} <= set(shown), shown
    hidden_note = page.eval_on_selector_all(".narrow-note", "ps => ps.filter(p => p.offsetHeight > 0)"
                                                             ".map(p => p.textContent)")
    if width >= 1920:
        assert "format" in shown and "persona" in shown and not hidden_note
    else:
        assert "format" not in shown and len(hidden_note) == 1 and "hidden" in hidden_note[0]
    cells = page.eval_on_selector_all("#runs tbody td.c-path", "tds => tds.map(td => [td.title, td.textContent, "
                                      "td.scrollWidth <= td.clientWidth])")
    assert all(title for title, _, _ in cells)  # the whole path on hover
    for title, text, fits in cells:  # a long one cut in the middle: its start and its file name stay
        assert fits and (text == title or (text.count("…") == 1 and title.startswith(text.split("…")[0])
                                           and title.endswith(text.split("…")[1]))), (title, text)
    if width == 1000:
        assert any("…" in text for _, text, _ in cells)
    page.close()


def test_broken_traces_still_make_a_report(tmp_path):
    note = b'{"tick":0,"ts_ms":1,"actor":null,"payload":{"kind":"system","note":"x"}}\n'
    (tmp_path / "garbage.jsonl").write_bytes(b"\xff\xfe\x00 not json\n{\"tick\": 1}\n" + note)
    (tmp_path / "empty.jsonl").write_bytes(b"")  # not a trace: not counted
    (tmp_path / "deep.jsonl").write_text('{"tick":0,"ts_ms":1,"actor":null,"payload":{"kind":"system","note":"'
                                         + "[" * 3000 + '"}}\n')
    page, stats = build_report(tmp_path, use_cache=False)
    assert stats["runs"] == 2
    details = _details(page)
    assert len(details) == 2
    for d in details.values():
        assert ("error" in d) or ("turns" in d and "problems" in d)
    assert any(d.get("problems") for d in details.values())  # the reader's problems are shown


def test_report_on_a_folder_of_bad_files_writes_nothing_and_says_why(tmp_path, monkeypatch):
    """It wrote a 0-run page and exited 1 without a word."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "bad"
    d.mkdir()
    (d / "a.jsonl").write_bytes(bytes(range(256)) * 20)
    (d / "b.jsonl").write_text("not json\n")
    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", str(d), "-o", str(out)])
    assert res.exit_code == 1 and not out.exists()
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ktui: ") and "no runs to report" in lines[0]
    assert "2 files are not traces" in lines[0] and "not a trace" in lines[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(main, ["report", str(empty), "-o", str(out)])
    assert res.exit_code == 1 and not out.exists() and "no trace files" in res.output


@needs_browser
@pytest.mark.parametrize("width", [1400, 900])
def test_a_long_model_name_does_not_widen_the_page(browser, tmp_path, width):
    """The model filter (a <select>) took the width of its longest option: one run whose model
    name was 300 characters long (a provider path, or a hostile trace) made the page 2,492 px
    wide at 1,400 and 900 px. The select is now no wider than the page; the name is whole in it."""
    from conftest import SEED_TRACE

    sw = tmp_path / "sweep"
    sw.mkdir()
    long_model = "openrouter/" + "a-very-long-provider-deployment-name-" * 8 + "v1"
    text = SEED_TRACE.read_text(encoding="utf-8")
    assert '\\"model\\": \\"grok-4.3\\"' in text
    (sw / "a.jsonl").write_text(text, encoding="utf-8")
    (sw / "b.jsonl").write_text(text.replace('\\"model\\": \\"grok-4.3\\"', f'\\"model\\": \\"{long_model}\\"'),
                                encoding="utf-8")
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(sw), "-o", str(out), "--no-cache"]).exit_code == 0
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(out.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    assert long_model in page.eval_on_selector_all("#f-model option", "os => os.map(o => o.value)")
    dims = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert dims[0] <= dims[1], dims
    page.close()


@needs_browser
@pytest.mark.parametrize("width", [900, 1400])
def test_the_grid_labels_are_not_cut(browser, tmp_path, width):
    """The grid's problem labels are drawn at -40 degrees from the top of their column: the last
    ones ran past the chart's right edge (20 px of room), so at 900 px the real Harbor sweep's
    'ssm_scan · mamba_130m' and 'w8a8_smoothquant' were cut by the card. The chart is as wide as
    its last label."""
    from test_result_run import _sweep

    sw = tmp_path / "sweep"
    for i in range(10):  # result files: the problem is the task's name (as in a Harbor job)
        _sweep(sw, f"w8a8smoothquantllama3down{i}_claude_v1", "claude")
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(sw), "-o", str(out), "--no-cache"]).exit_code == 0
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(out.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    cut = page.evaluate("""() => { const c = document.querySelector('#chart-grid'); const cr = c.getBoundingClientRect();
        const s = c.querySelector('svg').getBoundingClientRect(); const out = [];
        for (const t of c.querySelectorAll('svg text.pl')) { const r = t.getBoundingClientRect();
          if (r.right > Math.min(cr.right, s.right) + 0.5) out.push([t.textContent, r.right, cr.right, s.right]); }
        return [c.querySelectorAll('svg text.pl').length, out]; }""")
    assert cut[0] == 10 and cut[1] == [], cut
    page.close()


@needs_browser
def test_the_page_counts_agree_with_their_nouns(browser, tmp_path):
    """One run, one kernel version: the page says "1 run" and "Kernel diffs (1 version)" (its script
    wrote "1 runs", "(1 versions)", "1 lines", as the text commands did before ktui.trace.words)."""
    sweep = tmp_path / "one"
    sweep.mkdir()
    shutil.copy(FIXTURES / "ensemble" / "v0_popcorn_mock_single_problem.jsonl", sweep / "run.jsonl")
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(sweep), "-o", str(out), "--no-cache"]).exit_code == 0
    page, errors = _open(browser, out)
    assert page.text_content("#shown") == "1 run"
    page.click("#runs tbody tr >> nth=0")
    page.wait_for_selector("#detail[data-state='ready']")
    tabs = page.eval_on_selector_all("#detail .tabs button", "bs => bs.map(b => b.textContent)")
    assert "Kernel diffs (1 version)" in tabs and "Transcript (2 turns)" in tabs, tabs
    assert not errors, errors


@needs_browser
def test_a_runs_metrics_sit_beside_their_labels(browser, tmp_path, monkeypatch):
    """A Harbor run's result group (result file, pass rule, reward ...): the table took the page's
    whole width, each value ~1,100 px right of its label at 1,400 px; now it is as wide as it needs."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    jobs = ROOT / "tests" / "fixtures" / "real" / "harbor_minimal" / "results" / "jobs"
    out = tmp_path / "r.html"
    assert CliRunner().invoke(main, ["report", str(jobs), "-o", str(out)]).exit_code == 0
    page, errors = _open(browser, out)
    page.click("#runs tbody tr")
    page.wait_for_selector("#detail table.metrics", timeout=10_000)
    gaps = page.evaluate("() => Array.from(document.querySelectorAll('#detail table.metrics tr')).filter("
                         "tr => tr.cells.length >= 2).map(tr => tr.cells[1].getBoundingClientRect().right - "
                         "tr.cells[0].getBoundingClientRect().left)")
    assert gaps and max(gaps) < 700, gaps  # a label and its value (right-aligned in its cell): not 1,247 px
    head = page.eval_on_selector("#detail table.metrics th", "th => th.colSpan")
    assert head == 4 and not errors, errors


@needs_browser
def test_sorting_by_trace_puts_problem_numbers_in_their_order(browser, tmp_path, monkeypatch):
    """As in the app (ktui.report.runs.natural_key): problem1, problem2, problem10, not
    problem1, problem10, problem2."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "sweep"
    d.mkdir()
    seed = (ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl").read_text(encoding="utf-8")
    for n in (10, 2, 1):  # three runs (the same bytes would be one run and two duplicates)
        (d / f"problem{n}.jsonl").write_text(seed.replace("grok-4.3", f"grok-4.{n}"), encoding="utf-8")
    out = tmp_path / "r.html"
    assert CliRunner().invoke(main, ["report", str(d), "-o", str(out)]).exit_code == 0
    page, errors = _open(browser, out)
    page.click("#runs thead th[data-col='path']")
    assert _shown_paths(page) == ["problem1.jsonl", "problem2.jsonl", "problem10.jsonl"] and not errors, errors
