"""The index cache: one file per scanned root in ktui's cache directory (never beside the
traces), its entries keyed by each trace's real path and checked against its size and mtime; the
whole file is dropped when ktui's version, the entries' schema or the reading code changed."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any

from ktui import __version__, settings
from ktui.trace.notes import JSONError, loads

SCHEMA = 21  # bump when RunSummary, the skim, an importer's reading or the static findings change: invalidates
# cached entries (14: Codex refused patches, exit headers, formatters; Claude Code 2.x out-of-order, repeated
# and torn records; 15: one content fingerprint for every format, labels key on it; no_gpu_final;
# 16: the trace's reference sha1; 17: long lines are parsed in full, as the reader does; 18: record signatures;
# 20: rows are kept before the sweep's records, which are applied at every read; 21: result-file runs)


@functools.cache
def reader_fingerprint() -> str:
    """A digest of the code that reads traces (every module of ``ktui/trace``): a row cached by
    other reading code is dropped, whether or not someone remembered to bump :data:`SCHEMA` (an
    importer fixed without a bump kept serving its old rows until the file changed)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha1()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for n in sorted(filenames):
            if n.endswith(".py"):
                p = os.path.join(dirpath, n)
                h.update(os.path.relpath(p, root).encode("utf-8", "replace") + b"\0")
                try:
                    with open(p, "rb") as f:
                        h.update(f.read())
                except OSError:
                    h.update(b"?")
    return h.hexdigest()[:20]


def cache_dir() -> str:
    return str(settings.current().index_dir)


def cache_path(root: str) -> str:
    h = hashlib.sha1(os.path.realpath(root).encode("utf-8", "replace")).hexdigest()[:16]
    return os.path.join(cache_dir(), f"runs-index-{h}.json")


def load_cache(path: str) -> dict[str, dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            obj = loads(f.read())
    except OSError:
        return {}
    except JSONError:
        return {}
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA or not isinstance(obj.get("entries"), dict):
        return {}
    if obj.get("ktui") != __version__:  # another release may read or judge a trace differently
        return {}
    if obj.get("reader") != reader_fingerprint():  # this checkout's reading code changed since
        return {}
    return obj["entries"]


def inherited(root: str) -> dict[str, dict[str, Any]]:
    """The cache of the nearest directory above ``root`` that has one (``ktui runs sweep/cell``
    after ``ktui runs sweep``), read when ``root`` has no cache of its own. Its entries are keyed
    by real path (a linked trace's too) and checked against each file's size and mtime as any
    other; the scan keeps only those of its own files."""
    d = os.path.realpath(root)
    while True:
        parent = os.path.dirname(d)
        if parent == d:
            return {}
        d = parent
        p = cache_path(d)
        if os.path.exists(p):
            entries = load_cache(p)
            if entries:
                return entries


def save_cache(path: str, root: str, entries: dict[str, dict[str, Any]]) -> str | None:
    """Write atomically; return an error message instead of raising."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        body = {"schema": SCHEMA, "ktui": __version__, "reader": reader_fingerprint(), "root": os.path.realpath(root), "entries": entries}
        try:
            import orjson

            data = orjson.dumps(body)
        except ImportError:  # pragma: no cover
            data = json.dumps(body).encode()
        except TypeError:  # numbers orjson cannot hold (ints over 64 bits): the json module can
            data = json.dumps(body).encode()
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        return f"cannot write the index cache {path}: {exc.strerror or exc}"
    return None
