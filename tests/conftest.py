"""Shared test paths. The third-party fixtures live in ../shared/fixtures (never copied here)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
SEED_TRACE = ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"


def fixture_path(rel: str) -> Path:
    p = FIXTURES / rel
    if not p.exists():
        pytest.skip(f"{p} not available")
    return p


@pytest.fixture
def seed_trace() -> Path:
    return SEED_TRACE
