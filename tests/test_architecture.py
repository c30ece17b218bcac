"""The architecture rules that import-linter cannot see: what a process actually loads."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT

SCREENS = ["ktui.tui.app", "ktui.tui.screens.replay", "ktui.tui.screens.compare", "ktui.tui.screens.runs",
           "ktui.tui.screens.help", "ktui.tui.screens.base", "ktui.tui.screens.repro_panel", "ktui.report.show",
           "ktui.report.compare", "ktui.report.runs", "ktui.view", "ktui.cli"]


def test_the_app_process_never_imports_torch():
    code = ("import sys, importlib\n"
            f"for m in {SCREENS!r}:\n    importlib.import_module(m)\n"
            "import ktui.tui.screens as s, pkgutil\n"
            "for i in pkgutil.iter_modules(s.__path__):\n    importlib.import_module('ktui.tui.screens.' + i.name)\n"
            "print('torch' in sys.modules, sorted(m for m in sys.modules if m.startswith('ktui.tui.screens.')))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded, screens = r.stdout.strip().split(" ", 1)
    assert loaded == "False", "a screen imported torch"
    assert "ktui.tui.screens.replay" in screens and "ktui.tui.screens.runs" in screens


def test_no_module_the_app_loads_can_import_torch():
    """Not only at import time: a module the app process loads (the engine's sandbox, errors and
    build-cache helpers among them) holds no `import torch` anywhere, even inside a function, so
    no call the app makes can load it. The judge and its workers, which use torch, are other
    processes."""
    code = ("import sys, importlib, pkgutil\n"
            f"for m in {SCREENS!r}:\n    importlib.import_module(m)\n"
            "import ktui.tui.screens as s\n"
            "for i in pkgutil.iter_modules(s.__path__):\n    importlib.import_module('ktui.tui.screens.' + i.name)\n"
            # the service the app's workers call in its process (repro, verify, profile, export)
            "import ktui.repro as r\n"
            "for i in pkgutil.walk_packages(r.__path__, 'ktui.repro.'):\n"
            "    if i.name != 'ktui.repro.verify.ray_engine':\n        importlib.import_module(i.name)\n"
            "print('\\n'.join(sorted(m.__file__ for n, m in list(sys.modules.items())\n"
            "                         if n.startswith('ktui') and getattr(m, '__file__', None))))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    files = r.stdout.split()
    assert any(f.endswith("engine/sandbox.py") for f in files)  # the app does load engine modules
    assert any(f.endswith("repro/verify/engine.py") for f in files)  # and the whole repro service
    pattern = re.compile(r"^\s*(?:import\s+torch\b|from\s+torch\b)", re.M)
    offenders = [f for f in files if pattern.search(open(f, encoding="utf-8").read())]
    assert offenders == [], offenders


def test_the_view_model_needs_no_renderer():
    code = ("import sys\nimport ktui.view, ktui.view.build, ktui.view.fmt, ktui.trace.facts\n"
            "print(sorted(m for m in ('rich', 'textual', 'torch') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


# ---- one sanitizer, in the view ------------------------------------------------------------------
SANITIZERS = {"ktui.trace.text": {"sanitize"}, "ktui.view.text": None, "ktui.view": {"text"}}  # None: any name


def sanitizer_uses(source: str) -> list[str]:
    """Where a module's source reaches a sanitizer: an import of ``ktui.trace.text.sanitize`` or of
    the view's text module (``clean``, ``one_line``, ``safe_data``...), or a ``….sanitize`` attribute."""
    import ast

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in SANITIZERS:
            names = SANITIZERS[node.module]
            out += [f"from {node.module} import {a.name}" for a in node.names if names is None or a.name in names]
        elif isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names
                    if a.name in ("ktui.trace.text", "ktui.view.text") or a.name.startswith("ktui.view.text.")]
        elif isinstance(node, ast.Attribute) and node.attr == "sanitize":
            out.append(".sanitize")
    return out


def test_the_check_finds_a_sanitizer():
    assert sanitizer_uses("from ktui.trace.text import shorten, sanitize as s") == ["from ktui.trace.text import sanitize"]
    assert sanitizer_uses("def f():\n    from ktui.view.text import clean\n") == ["from ktui.view.text import clean"]
    assert sanitizer_uses("import ktui.trace.text\nktui.trace.text.sanitize('x')") == ["import ktui.trace.text",
                                                                                       ".sanitize"]
    assert sanitizer_uses("from ktui.view import text") == ["from ktui.view import text"]
    assert sanitizer_uses("from ktui.trace.text import shorten, redact") == []


def test_the_service_and_the_engine_never_sanitize():
    """Results carry raw words (a check's name, a probe's reason, a kernel's error); the views clean
    them once when they are shown (ktui/view/text.py). A sanitizer in ktui/repro or ktui/engine
    would clean some words twice and tempt a renderer to trust the rest."""
    pkg = ROOT / "ktui"
    offenders = {str(p.relative_to(pkg)): uses for d in ("repro", "engine") for p in sorted((pkg / d).rglob("*.py"))
                 if (uses := sanitizer_uses(p.read_text(encoding="utf-8")))}
    assert offenders == {}
