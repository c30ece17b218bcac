"""A plain (non-editable) install works: the wheel carries the bundled trace, and `ktui show`
with no argument runs from it, away from the source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

from conftest import ROOT

DATA = "ktui/data/popcorn_l1_p27_grok-4.3.jsonl"


def test_wheel_runs_ktui_show_without_the_source_tree(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "ktui", src / "ktui", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(wheels), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = wheels.glob("ktui-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert DATA in names and "ktui/tui/ktui.tcss" in names
    assert not any(n.startswith(("tests/", "traces/", "benchmarks/")) for n in names)
    # install it into a fresh target (dependencies come from this interpreter), run from elsewhere
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                        str(whl)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    run = tmp_path / "elsewhere"
    run.mkdir()
    where = subprocess.run([sys.executable, "-c", "import ktui, sys; print(ktui.__file__)"], capture_output=True,
                           text=True, cwd=run, env=env, timeout=60)
    assert where.stdout.strip().startswith(str(target)), where.stdout + where.stderr
    r = subprocess.run([sys.executable, "-m", "ktui", "show"], capture_output=True, text=True, cwd=run, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "L1 P27 27_permutation_all_to_all.py" in r.stdout and "grok-4.3" in r.stdout
    ep = [p for p in target.glob("ktui-*.dist-info/entry_points.txt")]
    assert ep and "ktui = ktui.cli:main" in ep[0].read_text()
