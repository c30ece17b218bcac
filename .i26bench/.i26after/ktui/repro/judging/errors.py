"""Whether two error texts say the same thing (paths, numbers, quotes and prefixes ignored)."""

from __future__ import annotations

import difflib
import re

_PATH = re.compile(r"(?:[\w.~-]*/)+[\w.-]+(?::\d+)*:?")
_HEX = re.compile(r"0x[0-9a-f]+")
_NUM = re.compile(r"\d+")
_PREFIX = re.compile(r"^(?:[\w.]*(?:error|exception)|runtime_error|compile_error|fatal|[\w.]+ failed)\s*:\s*")


def normalize_error(text: str) -> str:
    t = (text or "").strip().lower()
    t = t.replace("‘", "'").replace("’", "'").replace("`", "'").replace('"', "'")
    t = _PATH.sub(" ", t)
    t = _HEX.sub("#", t)
    t = _NUM.sub("#", t)
    t = " ".join(t.split())
    prev = None
    while prev != t:
        prev = t
        t = _PREFIX.sub("", t).strip()
    return t.strip(" .:;")


def _lines(text: str) -> list[str]:
    out = []
    for ln in (text or "").splitlines():
        n = normalize_error(ln)
        if n and not n.startswith("traceback") and not n.startswith("file "):
            out.append(n)
    whole = normalize_error(" ".join((text or "").split()))
    if whole:
        out.append(whole)
    return out


def same_error(recorded: str, reproduced: str) -> bool:
    """True when two error texts say the same thing."""
    a, b = _lines(recorded), _lines(reproduced)
    for x in a:
        for y in b:
            if len(x) < 8 or len(y) < 8:
                if x == y:
                    return True
                continue
            if x == y or x in y or y in x:
                return True
            if difflib.SequenceMatcher(None, x, y).ratio() >= 0.85:
                return True
    return False
