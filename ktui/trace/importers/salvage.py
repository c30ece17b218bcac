"""The whole items at the start of a JSON array that breaks off (a file copied while its harness
was still writing it): what the registry reads of such a file (:mod:`ktui.trace.importers.registry`)."""

from __future__ import annotations

from typing import Any


def salvage_array(raw: bytes) -> list[Any] | None:
    """The whole items at the start of a JSON array that is not valid JSON as a whole (a list
    a harness was still writing when the file was copied: it breaks off inside an item), or None
    when the text is not such an array or holds no whole item. Only a top-level array is read so;
    never raises."""
    import json

    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = raw.decode("utf-8", "replace")
    pos = len(text) - len(text.lstrip())
    if not text.startswith("[", pos):
        return None
    dec = json.JSONDecoder()
    items: list[Any] = []
    pos += 1
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        try:
            obj, pos = dec.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        items.append(obj)
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n or text[pos] != ",":
            break  # the end of the text, a "]" (then the array was whole: not ours to read) or garbage
        pos += 1
    if pos < n and text[pos] == "]" and not text[pos + 1:].strip():
        return None
    return items or None
