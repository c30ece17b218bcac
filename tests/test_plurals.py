"""No "(s)" or "(es)" in what ktui says: a count agrees with its noun (``1 process``, ``2 processes``,
:func:`ktui.trace.words.count`; the engine's copy :mod:`ktui.engine.words` follows the same rule).
Checked in the source (every string ktui builds, docstrings and comments aside) and in the output
of the main commands on the bundled trace and ``../shared/fixtures``."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, SEED_TRACE

HEDGED = re.compile(r"[A-Za-z]\((?:e?s)\)")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_no_hedged_plural_in_any_string_ktui_builds():
    bad = []
    for f in sorted((ROOT / "ktui").rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if HEDGED.search(node.value.replace("appendChild(s)", "")):  # JavaScript
                    bad.append(f"{f.relative_to(ROOT)}:{node.lineno}: {node.value[:80]!r}")
    assert bad == [], "\n".join(bad)


def test_the_engine_counts_as_the_domain_does():
    from ktui.engine import words as engine_words
    from ktui.trace import words

    nouns = ["run", "process", "match", "index", "entry", "day", "tool call", "memfd or shared mapping",
             "device-to-host transfer", "bad output", "child", "box", "wish"]
    for n in (0, 1, 2, 1204, 1.5):
        for noun in nouns:
            assert engine_words.count(n, noun) == words.count(n, noun)
            assert engine_words.plural(n, "is", "are") == words.plural(n, "is", "are")
    assert engine_words.count(1, "process") == "1 process" and engine_words.count(3, "process") == "3 processes"


def _run(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "KTUI_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100",
           "XDG_DATA_HOME": str(tmp_path / "data")}
    r = subprocess.run([sys.executable, "-m", "ktui", *args], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=300)
    assert "Traceback" not in r.stderr, (args, r.stderr[-2000:])
    return r.stdout + r.stderr


def test_main_commands_say_no_hedged_plural(tmp_path):
    if not FIXTURES.is_dir():
        pytest.skip(f"{FIXTURES} not available")
    fixtures = [str(FIXTURES / d) for d in sorted(os.listdir(FIXTURES)) if (FIXTURES / d).is_dir()]
    traces = sorted(str(p) for p in FIXTURES.rglob("*.jsonl"))[:6]
    seed = str(SEED_TRACE)
    cmds = [("show", seed), ("validate", seed, *fixtures), ("diff", seed), ("compare", seed, *traces[:2], "--print"),
            ("search", seed, "kernel"), ("labels", "export", fixtures[0])]
    cmds += [("runs", d, "--print") for d in fixtures]
    cmds += [("show", t) for t in traces] + [("validate", t) for t in traces]
    inputs = {p: Path(p).read_text(encoding="utf-8", errors="replace") for p in [seed, *traces]}
    inputs.update({str(p): p.read_text(encoding="utf-8", errors="replace") for d in fixtures
                   for p in Path(d).rglob("*.jsonl")})
    said = "\n".join(inputs.values())
    for args in cmds:
        out = _run(tmp_path, *args)
        assert out.strip(), args
        for hit in re.finditer(r"\S*" + HEDGED.pattern, out):
            # a trace's own words ("the same output tensor(s)" in a task prompt) are shown as they are
            assert hit.group(0) in said, (args, out[max(0, hit.start() - 120): hit.end() + 40])
