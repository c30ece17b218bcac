"""ktui.settings: every KTUI_* variable and path read in one place, and the engine's own reader agrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ktui import settings
from ktui.engine.errors import default_cache_root
from ktui.settings import Settings

ROOT = Path(__file__).resolve().parent.parent / "ktui"
CASES = [
    {},
    {"HOME": "/h"},
    {"HOME": "/h", "XDG_CACHE_HOME": "/xc"},
    {"HOME": "/h", "XDG_CACHE_HOME": "/xc", "KTUI_CACHE_DIR": "/k/c"},
    {"HOME": "/h", "KTUI_CACHE_DIR": "rel/dir"},
    {"HOME": "/h", "KTUI_CACHE_DIR": "~/in-home"},
    {"HOME": "/h", "KTUI_CACHE_DIR": ""},
]


@pytest.mark.parametrize("env", CASES)
def test_the_engine_and_the_settings_agree_on_the_repro_cache(env, monkeypatch):
    for k in ("HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "KTUI_CACHE_DIR"):  # conftest sets XDG_DATA_HOME
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert str(settings.current().repro_cache_dir) == default_cache_root()
    assert settings.current() == Settings.from_env(env)


def test_paths():
    s = Settings.from_env({"HOME": "/h"})
    assert s.cache_dir == Path("/h/.cache/ktui") and s.log_file == Path("/h/.cache/ktui/ktui.log")
    assert s.repro_cache_dir == Path("/h/.cache/ktui/repro")
    assert s.labels_file == Path("/h/.local/share/ktui/labels.jsonl")
    s = Settings.from_env({"HOME": "/h", "XDG_CACHE_HOME": "/c", "XDG_DATA_HOME": "/d"})
    assert (s.cache_dir, s.repro_cache_dir, s.data_dir) == (Path("/c/ktui"), Path("/c/ktui/repro"), Path("/d/ktui"))
    s = Settings.from_env({"HOME": "/h", "KTUI_CACHE_DIR": "~/kc", "XDG_CACHE_HOME": "/c"})
    assert s.cache_dir == s.repro_cache_dir == Path("/h/kc")  # one directory when it is given


def test_values():
    s = Settings.from_env({"HOME": "/h", "KTUI_JOBS": "3", "KTUI_FORMAT": " codex-cli ", "KTUI_NCU": "/x/ncu",
                           "KTUI_PROFILE_KEEP": "/keep"})
    assert (s.jobs, s.format, s.ncu, s.profile_keep) == (3, "codex-cli", "/x/ncu", Path("/keep"))
    for bad in ("", "-1", "two", "2.5"):
        assert Settings.from_env({"HOME": "/h", "KTUI_JOBS": bad}).jobs is None
    assert Settings.from_env({"HOME": "/h", "KTUI_FORMAT": "  "}).format is None
    assert Settings.from_env({"HOME": "/h", "KTUI_MAX_LINE_MB": "0.5"}).max_line_mb == 0.5
    for bad in ("inf", "nan", "-2", "0", "x", ""):
        assert Settings.from_env({"HOME": "/h", "KTUI_MAX_LINE_MB": bad}).max_line_mb is None


def test_an_infinite_line_limit_is_the_default(monkeypatch):
    from ktui.trace.reader import MAX_LINE_MB, max_line_bytes

    monkeypatch.setenv("KTUI_MAX_LINE_MB", "inf")  # int(inf * 2**20) raised OverflowError in the reader
    assert max_line_bytes() == MAX_LINE_MB << 20
    monkeypatch.setenv("KTUI_MAX_LINE_MB", "0.25")
    assert max_line_bytes() == 1 << 18


def test_read_once_and_again_when_a_variable_changes(monkeypatch):
    monkeypatch.setenv("KTUI_JOBS", "2")
    a = settings.current()
    assert a is settings.current() and a.jobs == 2
    monkeypatch.setenv("KTUI_JOBS", "5")
    assert settings.current().jobs == 5


def test_the_readers_use_the_settings(monkeypatch, tmp_path):
    from ktui.repro import cache
    from ktui.repro.profile import ncu
    from ktui.trace import importers, index
    from ktui.tui.errors import log_path

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KTUI_FORMAT", "inspect")
    monkeypatch.setenv("KTUI_NCU", "/opt/x/ncu")
    monkeypatch.setenv("KTUI_JOBS", "4")
    assert index.cache_dir() == str(tmp_path) and cache.cache_root() == tmp_path
    assert log_path() == tmp_path / "ktui.log"
    assert importers.forced() == "inspect" and index.default_jobs() == 4
    assert ncu.candidates()[0] == "/opt/x/ncu"


def _sources():
    for p in sorted(ROOT.rglob("*.py")):
        yield p, p.read_text(encoding="utf-8")


def test_every_variable_is_declared():
    declared = set(settings.VARIABLES) | set(settings.ENGINE_VARIABLES)
    found = set()
    for _p, text in _sources():
        found |= set(re.findall(r"\bKTUI_[A-Z0-9_]*[A-Z0-9]\b", text))
    assert found - declared == set(), "a KTUI_ variable not in ktui/settings.py"
    assert set(settings.VARIABLES) <= found


def test_only_the_settings_and_the_engine_read_the_environment_for_ktui():
    reads = re.compile(r"""(environ(\.get)?[\[(]|getenv\()\s*["']KTUI_""")
    offenders = [str(p.relative_to(ROOT)) for p, text in _sources()
                 if reads.search(text) and p.name != "settings.py" and "engine" not in p.parts]
    assert offenders == []


def test_the_repro_panel_says_where_results_are_cached(monkeypatch, tmp_path):
    from ktui.tui.screens.repro_panel import cache_shown

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "c"))
    assert cache_shown() == str(tmp_path / "c")  # it said ~/.cache/ktui/repro whatever the setting
    monkeypatch.delenv("KTUI_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_shown() == "~/.cache/ktui/repro"
