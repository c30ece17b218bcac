"""Counts and times in words (``ktui/trace/words.py``): ``1 run`` / ``2 runs``, never ``1 runs`` or
``1 run(s)``, in every text the commands, the report and the app write; a recorded runtime no clock
could have measured (1e308, inf, nan, negative) reads "no valid time", never ``inf`` or
``1e+305 ms``."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SEED_TRACE

from ktui.trace.model import Metric
from ktui.trace.words import MAX_TIME_US, NO_VALID_TIME, count, plural, valid_time_us
from ktui.view import fmt


def test_count_agrees_with_its_number():
    assert count(1, "run") == "1 run" and count(0, "run") == "0 runs" and count(2, "run") == "2 runs"
    assert count(1204, "run") == "1,204 runs" and count(1, "kernel version") == "1 kernel version"
    assert count(3, "kernel version") == "3 kernel versions" and count(2, "match") == "2 matches"
    assert count(2, "launch") == "2 launches" and count(2, "entry") == "2 entries" and count(2, "day") == "2 days"
    assert count(2, "index") == "2 indexes" and count(2, "child") == "2 children"
    assert count("?", "slot") == "? slots" and plural(1, "is", "are") == "is" and plural(5, "is", "are") == "are"


@pytest.mark.parametrize("v", [1e308, -1e308, math.inf, -math.inf, math.nan, -1, -0.5, MAX_TIME_US, 10**400])
def test_a_time_no_clock_measured_reads_no_valid_time(v):
    assert valid_time_us(v) is None
    assert fmt.us(v) == NO_VALID_TIME
    assert fmt.metric_value(Metric("timing.runtime", "runtime", v, "us")) == NO_VALID_TIME
    from ktui.repro.judging.text import fmt as judged

    assert judged(v, "μs") == NO_VALID_TIME


@pytest.mark.parametrize(("v", "text"), [(0, "0 μs"), (0.0312, "0.0312 μs"), (41.2, "41.2 μs"), (150, "150 μs"),
                                         (1500, "1.5 ms"), (1e6, "1 s"), (3.2e7, "32 s"), (None, "—")])
def test_a_valid_time_keeps_its_unit(v, text):
    assert fmt.us(v) == text


def _trace_with_runtime(tmp_path: Path, raw: str) -> Path:
    """The bundled trace with its final result's runtime_us replaced by ``raw`` (a JSON number)."""
    text = SEED_TRACE.read_text()
    assert text.count('"runtime_us":0.0312') == 2
    out = tmp_path / f"rt_{len(raw)}.jsonl"
    out.write_text(text.replace('"runtime_us":0.0312', f'"runtime_us":{raw}'))
    return out


@pytest.mark.parametrize("raw", ["1e308", "1e307", "-1"])
def test_show_and_compare_say_no_valid_time(tmp_path, raw):
    path = _trace_with_runtime(tmp_path, raw)
    env = {**os.environ, "COLUMNS": "100", "KTUI_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["show", str(path)], ["compare", str(path), str(SEED_TRACE)]):
        r = subprocess.run([sys.executable, "-m", "ktui", *args], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode in (0, 1), r.stderr
        runtime = [ln for ln in r.stdout.splitlines() if re.search(r"\bruntime\b", ln) and "ref runtime" not in ln
                   and "_us" not in ln and "Kernel runtime" not in ln]
        assert runtime and any(NO_VALID_TIME in ln for ln in runtime), (args, runtime)
        for ln in runtime:
            assert not re.search(r"\binf\b|e\+30\d", ln), (args, ln)


# ---- the class: no count before a noun that cannot agree with it ----------------------------------
SCOPE = ["ktui/report", "ktui/view", "ktui/tui", "ktui/cli.py", "ktui/repro/verify", "ktui/repro/api.py",
         "ktui/trace/aggregate.py", "ktui/trace/facts.py", "ktui/trace/index"]
NOUNS = ("runs|problems|kernels|kernel versions|versions|turns|calls|tool calls|models|files|traces|lines|labels|hits|"
         "notes|trials|claims|slots|jobs|duplicates|threads|bytes|chars|characters|actors|launches|flags|items|"
         "records|entries|matches|results|errors|warnings|steps|events|messages|tokens|samples|rows|issues")
AFTER = re.compile(rf"^ (?:more |other |distinct |bad |correct |new )?(?:\w+\(s\)|(?:{NOUNS})\b(?!=))")  # (not key=value fields)
INLINE = re.compile(r"""^(?:s|es)$""")


def _never_one(expr: ast.expr) -> bool:
    """A size that is never 1 (a terminal's width, a constant limit)."""
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""
    return name.isupper() or name.endswith("width")


def _sites():
    files: list[Path] = []
    for s in SCOPE:
        p = ROOT / s
        files += [p] if p.suffix == ".py" else sorted(p.rglob("*.py"))
    for f in files:
        src = f.read_text()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.JoinedStr):
                vals = node.values
                for v, nxt in zip(vals, vals[1:], strict=False):
                    if (isinstance(v, ast.FormattedValue) and isinstance(nxt, ast.Constant)
                            and isinstance(nxt.value, str) and AFTER.match(nxt.value) and not _never_one(v.value)):
                        yield f"{f.relative_to(ROOT)}:{v.lineno}: {ast.get_source_segment(src, v)}{nxt.value[:30]!r}"
            # an inline plural ({'s' if n != 1 else ''}): the one helper says it
            if isinstance(node, ast.IfExp) and isinstance(node.body, ast.Constant) and isinstance(node.body.value, str) \
                    and INLINE.match(node.body.value) and isinstance(node.orelse, ast.Constant) and node.orelse.value == "":
                yield f"{f.relative_to(ROOT)}:{node.lineno}: inline plural {ast.get_source_segment(src, node)}"


def test_every_count_agrees_with_its_noun():
    """A count put straight before "run(s)" or "runs" reads "1 run(s)" / "1 runs" for one: every count
    the commands, the report and the app show goes through ktui.trace.words.count."""
    sites = list(_sites())
    assert not sites, "\n".join(sites)


def test_the_verify_summary_and_the_runs_summary_read_one_run(tmp_path):
    from ktui.repro.verify.record import stats_line

    line = stats_line({"runs": 1, "kernels": 1, "not_judged": 1, "wall_s": 0.1, "engine": "local", "slots": 1,
                       "jobs": 1})
    assert line.startswith("1 run · 1 distinct kernel · ") and "1 run not judged here" in line
    assert "(1 slot, 1 build job)" in line and "(s)" not in line
    env = {**os.environ, "COLUMNS": "100", "KTUI_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "ktui", "runs", str(SEED_TRACE.parent), "--print"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0 and re.search(r"\b1 run in ", r.stdout), r.stdout
    assert not re.search(r"\b1 (runs|problems|kernels|files)\b|\(s\)", r.stdout), r.stdout
    json.loads(subprocess.run([sys.executable, "-m", "ktui", "runs", str(SEED_TRACE.parent), "--format", "json"],
                              capture_output=True, text=True, env=env, timeout=120).stdout)


def test_the_report_pages_script_counts_with_one_helper_too():
    """The HTML report's script writes its counts through its own count(n, noun) (the page is read
    in a browser, without ktui): no number put straight before a plural noun."""
    from ktui.report.html_assets import JS

    bare = re.findall(rf'\+ "\s*(?:more )?(?:{NOUNS})\b', JS)
    assert not bare, bare
    assert "function count(n, noun)" in JS

