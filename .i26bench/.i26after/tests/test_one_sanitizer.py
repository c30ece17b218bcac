"""One sanitizer: what the text commands and the app show goes through the view's ``clean``
(ktui.view.text), never straight through the domain's ``sanitize``."""

from __future__ import annotations

import re
from pathlib import Path

from ktui.view.text import clean

KTUI = Path(__file__).resolve().parent.parent / "ktui"


def test_display_modules_use_the_views_clean():
    direct = re.compile(r"from ktui\.trace\.text import [^\n]*\bsanitize\b|ktui\.trace\.text\.sanitize")
    offenders = [str(p.relative_to(KTUI)) for d in ("report", "tui") for p in sorted((KTUI / d).rglob("*.py"))
                 if direct.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_clean_is_sanitize_and_tabs():
    assert clean("a\tb\x1b[31m\u202e") == "a   b␛[31m<U+202E>"
    assert clean(None) == "" and clean(10**5000).startswith("~1e")
