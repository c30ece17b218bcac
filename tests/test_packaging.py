"""A plain (non-editable) install works: the wheel carries the bundled trace, and `ktui show`
with no argument runs from it, away from the source tree. pyproject.toml as setuptools reads it:
the licence is an SPDX expression with its file (``project.license`` as a TOML table is deprecated by
setuptools, which warned on every ``pip install -e .``), and the build asks for a setuptools that
reads it (77 or later)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
import zipfile

import pytest
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


PYPROJECT = ROOT / "pyproject.toml"


def test_the_license_is_an_spdx_string_with_its_file():
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads(PYPROJECT.read_text())
    project = data["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] and all((ROOT / f).is_file() for f in project["license-files"])
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))  # SPDX replaces them
    req = next(r for r in data["build-system"]["requires"] if r.startswith("setuptools"))
    m = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", req)
    assert m and int(m.group(1)) >= 77, req


def test_setuptools_reads_it_without_a_license_warning():
    pytest.importorskip("setuptools")
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), str(PYPROJECT))
    assert not [w for w in seen if "license" in str(w.message).lower()], [str(w.message)[:200] for w in seen]
    assert dist.metadata.license_expression == "MIT"
