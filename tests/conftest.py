"""Shared test paths. The third-party fixtures live in ../shared/fixtures (never copied here)."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
SEED_TRACE = ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"


@functools.cache
def importable(*modules: str) -> bool:
    """Whether ``modules`` import in a fresh interpreter (checked once per set; torch is never
    imported into the test process itself: the app's process must not have it)."""
    code = "import " + ", ".join(modules)
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def needs(*modules: str) -> pytest.MarkDecorator:
    """A skip mark for tests that need ``modules`` (re-execution: torch, ninja)."""
    return pytest.mark.skipif(not importable(*modules), reason="needs " + " and ".join(modules))


def fixture_path(rel: str) -> Path:
    p = FIXTURES / rel
    if not p.exists():
        pytest.skip(f"{p} not available")
    return p


@pytest.fixture
def seed_trace() -> Path:
    return SEED_TRACE


@pytest.fixture(autouse=True)
def _own_labels_file(tmp_path_factory, monkeypatch):
    """Every test reads and writes its own labels file (never the user's ~/.local/share/ktui)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
