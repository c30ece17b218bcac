"""screenshots/*.svg (shown in the README) are byte copies of accepted snapshot images.

After ``--snapshot-update`` run ``python tests/test_tui_screenshots.py`` to copy them over.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAPSHOTS = REPO / "tests" / "__snapshots__"
SCREENSHOTS = REPO / "screenshots"


def shot_name(snapshot: Path) -> str | None:
    """The screenshot a snapshot is copied to (None: not shown in the README)."""
    group, name = snapshot.parent.name, snapshot.stem
    if group == "test_tui_snapshots" and name.startswith("test_replay_"):
        return name.replace("test_replay_", "replay_") + ".svg"
    if group in ("test_compare", "test_runs", "test_tui_layout") and "[" in name:
        label = name.split("[", 1)[1].rstrip("]").split("-", 1)[-1]
        prefix = {"test_compare": "compare_", "test_runs": "runs_", "test_tui_layout": ""}[group]
        return "runs.svg" if (group, label) == ("test_runs", "fixtures") else f"{prefix}{label}.svg"
    return None


def pairs() -> list[tuple[Path, Path]]:
    out = []
    for snap in sorted(SNAPSHOTS.glob("*/*.svg")):
        name = shot_name(snap)
        if name:
            out.append((snap, SCREENSHOTS / name))
    return out


def test_screenshots_are_copies_of_the_snapshots():
    got = pairs()
    if not got:
        pytest.skip("no snapshots yet")
    for snap, shot in got:
        assert shot.is_file(), f"{shot} missing: run python tests/test_tui_screenshots.py"
        assert shot.read_bytes() == snap.read_bytes(), f"{shot} differs from {snap.name}: run " \
                                                       "python tests/test_tui_screenshots.py"


def test_readme_shows_only_existing_screenshots():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    import re

    for ref in re.findall(r"\(screenshots/([^)]+\.svg)\)", readme):
        assert (SCREENSHOTS / ref).is_file(), ref


if __name__ == "__main__":
    for snap, shot in pairs():
        if not shot.is_file() or shot.read_bytes() != snap.read_bytes():
            shutil.copyfile(snap, shot)
            print(f"{snap.relative_to(REPO)} -> {shot.relative_to(REPO)}", file=sys.stderr)
