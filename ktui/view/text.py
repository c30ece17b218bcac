"""The one sanitizer: every trace string shown anywhere (Rich, plain text, ``--json``, CSV, the app,
titles) goes through :func:`clean` (or :func:`one_line` / :func:`safe_data`) first.

- C0 controls become the Unicode "control pictures" (``␛`` for ESC), DEL becomes ``␡``, C1
  controls become ``\\x9b``-style text, bidi overrides/isolates become ``<U+202E>``: the terminal
  never acts on them. Newlines are kept by :func:`clean`, tabs expanded.
- :func:`safe_data` walks JSON-like data (for ``--json``): strings (keys too) cleaned, nesting
  capped at :data:`MAX_DEPTH`, numbers that JSON or a float cannot hold turned into strings;
  :func:`json_text` writes a result's ``--json`` so.
- :func:`finite_data` (in :func:`json_data` / :func:`json_text`, for every JSON ktui writes): JSON
  has no inf or nan, so such a value becomes ``null`` and a field beside it,
  ``<name>_nonfinite``, says which it was (``"inf"``, ``"-inf"``, ``"nan"``); in a list, the
  list's ``<name>_nonfinite`` maps each such item's index (``"3"``, ``"2/1"`` nested) to it.

The service (``ktui/repro``) and the engine hand their words over raw (a test keeps them off the
sanitizer): they are cleaned here, when shown.

No Rich, no Textual: plain strings in, plain strings out.
"""

from __future__ import annotations

import math
from typing import Any

from ktui.trace.text import redact, sanitize, shorten  # noqa: F401  (re-exported: the view's one entry point)
from ktui.trace.words import count

TAB = 4
MAX_DEPTH = 24  # deeper structures are shown as "…"
MAX_INT_DIGITS = 19  # integers longer than this are written in e-notation


def clean(s: object) -> str:
    """A trace string made safe to show: control characters visible, tabs expanded."""
    if s is None:
        return ""
    if not isinstance(s, str):
        s = str(s) if not isinstance(s, int) else int_text(s)
    s = sanitize(s)
    if "\t" in s:
        s = s.expandtabs(TAB)
    return s


def one_line(s: object, limit: int = 0) -> str:
    """:func:`clean`, on one line (newlines become spaces), optionally shortened to ``limit``."""
    t = clean(s)
    if "\n" in t:
        t = t.replace("\r", "").replace("\n", " ")
    if limit and len(t) > limit:
        t = t[: limit - 1] + "…"
    return t


def int_text(v: int) -> str:
    """An int of any size as text (Python refuses ``str()`` of ints over 4,300 digits)."""
    if -(10**MAX_INT_DIGITS) < v < 10**MAX_INT_DIGITS:
        return str(v)
    digits = v.bit_length() * 0.30103  # log10(2)
    sign = "-" if v < 0 else ""
    return f"{sign}~1e{int(digits)}"


def safe_number(v: Any) -> Any:
    """A number JSON can hold (finite, 64-bit-ish ints) or its text."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**63 else int_text(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    return v


def safe_data(obj: Any, depth: int = 0) -> Any:
    """JSON-like data made safe to print: strings cleaned (no tab expansion), depth capped,
    numbers JSON can hold. Anything else becomes its cleaned ``str``."""
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, (int, float)):
        return safe_number(obj)
    if isinstance(obj, str):
        return sanitize(obj)
    if depth >= MAX_DEPTH:
        return "…"
    if isinstance(obj, dict):
        return {sanitize(k if isinstance(k, str) else str(safe_number(k))): safe_data(v, depth + 1)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [safe_data(v, depth + 1) for v in obj]
    return sanitize(str(obj))


NONFINITE = "_nonfinite"  # the suffix of the field that says why a number is null


def _nonfinite_word(v: float) -> str:
    return "nan" if v != v else ("inf" if v > 0 else "-inf")


def _nonfinite_items(v: Any, prefix: str = "", depth: int = 0) -> dict[str, str]:
    """Index path -> word for each non-finite float of a list (nested lists too; a dict in it
    carries its own ``_nonfinite`` fields)."""
    out: dict[str, str] = {}
    if depth >= MAX_DEPTH:
        return out
    for i, x in enumerate(v):
        if isinstance(x, float) and not math.isfinite(x):
            out[f"{prefix}{i}"] = _nonfinite_word(x)
        elif isinstance(x, (list, tuple)):
            out.update(_nonfinite_items(x, f"{prefix}{i}/", depth + 1))
    return out


def finite_data(obj: Any, depth: int = 0) -> Any:
    """``obj`` with every inf and nan (which JSON cannot hold) as ``None``, and beside each such
    value of a dict a field ``<key>_nonfinite`` naming it (``"inf"``, ``"-inf"``, ``"nan"``; for a
    list: ``{"<index>": word}``). A key of that name already there is kept as it is."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if depth >= MAX_DEPTH:
        return obj
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            out[k] = finite_data(v, depth + 1)
            why: Any = None
            if isinstance(v, float) and not math.isfinite(v):
                why = _nonfinite_word(v)
            elif isinstance(v, (list, tuple)):
                why = _nonfinite_items(v) or None
            if why is not None and f"{k}{NONFINITE}" not in obj:
                out[f"{k}{NONFINITE}"] = why  # right after the value it explains
        return out
    if isinstance(obj, (list, tuple)):
        return [finite_data(v, depth + 1) for v in obj]
    return obj


def json_data(obj: Any) -> Any:
    """``obj`` as ktui's JSON output holds it: :func:`finite_data`, then :func:`safe_data`."""
    return safe_data(finite_data(obj))


def pretty_json(obj: Any, max_chars: int = 200_000) -> str:
    """``obj`` as indented JSON, made safe (:func:`safe_data`), at most ``max_chars``."""
    import json

    s = json.dumps(safe_data(obj), indent=2, ensure_ascii=False)
    if len(s) > max_chars:
        s = s[:max_chars] + f"\n… {count(len(s) - max_chars, 'more character')}"
    return s.expandtabs(TAB) if "\t" in s else s


def json_text(obj: Any, indent: int | None = 1) -> str:
    """``--json`` of a result (a reproduction, a profile, a verify report), ``show --json``,
    ``validate --json``, ``search --json``: the raw data made safe (:func:`json_data`: every string
    cleaned, inf and nan as null with a ``_nonfinite`` field beside), as JSON text. The one place
    the commands' JSON is cleaned."""
    import json

    return json.dumps(json_data(obj), indent=indent, ensure_ascii=False, allow_nan=False)


def compact_json(obj: Any, limit: int = 400) -> str:
    """``obj`` on one line (strings as they are), made safe, at most ``limit`` characters."""
    import json

    if isinstance(obj, str):
        s = one_line(obj)
    else:
        s = json.dumps(safe_data(obj), ensure_ascii=False)
    return s if len(s) <= limit else s[: limit - 1] + "…"


