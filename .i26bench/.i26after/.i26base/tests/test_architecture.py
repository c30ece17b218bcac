"""The architecture rules that import-linter cannot see: what a process actually loads."""

from __future__ import annotations

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


def test_the_view_model_needs_no_renderer():
    code = ("import sys\nimport ktui.view, ktui.view.build, ktui.view.fmt, ktui.trace.facts\n"
            "print(sorted(m for m in ('rich', 'textual', 'torch') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
