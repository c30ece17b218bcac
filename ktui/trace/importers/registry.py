"""The importer registry: every format but how the reader streams ensemble JSONL.

One module per format, each registered in :data:`FORMATS` (ensemble first). A format is chosen
from the parsed structure of the file (keys and shapes, never the file name): the first lines of
a line-based file, or the whole object of a single-object file (bounded in size). JSON of an
unknown kind gives a Run whose only problem is "not a trace (looks like X)". ``--format NAME``
(or ``$KTUI_FORMAT``) forces one.

:mod:`ktui.trace.reader` uses this module (:func:`load_other`, :class:`ImportFollower`) and is not
imported by it: the ensemble format is the reader's own (``STREAMED``), so :func:`load_as` reads
every other format, and the front door (:mod:`ktui.trace.importers`: ``load``, ``load_as``) hands
ensemble to the reader.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ktui import settings
from ktui.trace.address import Address
from ktui.trace.address import join as join_address
from ktui.trace.address import split as split_address
from ktui.trace.importers import (
    aide,
    aider,
    atif_jsonl,
    chat_messages,
    claude_code,
    codex_cli,
    codex_exec,
    ensemble,
    gemini_cli,
    gemini_cli_jsonl,
    harbor_atif,
    inspect_ai,
    kernel_samples,
    kernelagent,
    kernelbench_agentic,
    mini_swe_agent,
    openhands,
    openhands_v0,
    result_run,
    swe_agent,
)
from ktui.trace.importers.common import MAX_OBJECT_BYTES, TooBig, parse_json, read_bounded
from ktui.trace.importers.contract import Importer
from ktui.trace.importers.salvage import salvage_array
from ktui.trace.model import Run, TraceProblem
from ktui.trace.notes import JSONError
from ktui.trace.words import count

# The registry: (name, module). Line-based formats are tried on the first lines, single-object
# formats on the whole object. Order matters only among formats that could both match.
FORMATS: list[tuple[str, ModuleType]] = [
    ("ensemble", ensemble),
    ("claude-code", claude_code),
    ("codex-cli", codex_cli),
    ("codex-exec-json", codex_exec),
    ("inspect", inspect_ai),
    ("harbor-atif", harbor_atif),
    ("atif-jsonl", atif_jsonl),
    ("mini-swe-agent", mini_swe_agent),
    ("swe-agent", swe_agent),
    ("openhands", openhands),
    ("openhands-v0", openhands_v0),
    ("gemini-cli", gemini_cli),
    ("gemini-cli-jsonl", gemini_cli_jsonl),
    ("kernelagent", kernelagent),
    ("aide", aide),
    ("kernelbench-agentic", kernelbench_agentic),
    ("kernel-samples", kernel_samples),
    ("aider", aider),  # Markdown, not JSON: known by its first lines (detect_text)
    ("result-file", result_run),  # a result file that names its kernel file: after every trace format
    ("chat-messages", chat_messages),  # the most general shape: last
]
BY_NAME = dict(FORMATS)
# the same, checked against the contract (contract.py) and dispatched through: never getattr
IMPORTERS: list[Importer] = [Importer.of(mod, name) for name, mod in FORMATS]
ENV = "KTUI_FORMAT"
INTERNAL = "could not interpret this trace"  # an importer met a shape it did not expect
HEAD_LINES = 8
_HEAD_BYTES = 1 << 20


@dataclass(slots=True)
class Detection:
    name: str  # a FORMATS name, or "unknown" (JSON of another kind) / "none" (not JSON, empty)
    hint: str = ""  # for "unknown": what it looks like
    obj: Any = None  # the parsed whole object, when it was parsed to decide
    cut: bool = False  # obj is the whole items of a JSON array the file breaks off in (salvage_array)


def names() -> list[str]:
    return [n for n, _ in FORMATS]


def forced() -> str | None:
    return settings.current().format


def _needed(path: str | None) -> str:
    """The path, where no data was given (without one, a TypeError, as open(None) gave)."""
    if path is None:
        raise TypeError("a path or data is needed")
    return path


# ---- detection ------------------------------------------------------------------------------------
def _head_lines(path: str | None, data: bytes | None) -> tuple[list[bytes], bool]:
    """The first non-empty lines (at most HEAD_LINES, from the first MiB; the first line whole,
    up to MAX_OBJECT_BYTES), and whether the file has more."""
    if data is not None:
        buf, more = data[:_HEAD_BYTES], len(data) > _HEAD_BYTES
        if more and b"\n" not in buf:
            nl = data.find(b"\n")
            buf = data[: nl + 1] if nl >= 0 else data
            more = nl >= 0 and nl + 1 < len(data)
    else:
        with open(_needed(path), "rb") as f:
            buf = f.read(_HEAD_BYTES)
            more = bool(f.peek(1)) if hasattr(f, "peek") else False
            if more and not buf.lstrip(b"\xef\xbb\xbf \t\r\n").count(b"\n"):
                # the first line is longer than the head: read on to its end (bounded)
                parts = [buf]
                total = len(buf)
                while total <= MAX_OBJECT_BYTES:
                    c = f.read(8 << 20)
                    if not c:
                        more = False
                        break
                    nl = c.find(b"\n")
                    if nl >= 0:
                        parts.append(c[: nl + 1])
                        more = nl + 1 < len(c) or bool(f.peek(1))
                        break
                    parts.append(c)
                    total += len(c)
                buf = b"".join(parts)
    return head_lines_of(buf, more)


def head_lines_of(buf: bytes, more: bool) -> tuple[list[bytes], bool]:
    """:func:`_head_lines` of a head already read: ``more``, whether the file goes on past it."""
    if buf.startswith(b"\xef\xbb\xbf"):
        buf = buf[3:]
    # line by line up to the HEAD_LINES-th non-blank one (splitting the whole head cost the sweep
    # index a split of every trace's first MiB just to look at eight lines)
    out: list[bytes] = []
    pos = 0
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            break
        raw = buf[pos:nl]
        pos = nl + 1
        if raw.strip():
            out.append(raw.rstrip(b"\r"))
            if len(out) >= HEAD_LINES:
                return out, True
    tail = buf[pos:]  # after the last newline: a whole line only when the head is the whole file
    if buf.endswith(b"\n") or not more:
        if tail.strip():
            out.append(tail.rstrip(b"\r"))
            if len(out) >= HEAD_LINES:
                return out, True
        return out, more
    return out, more or bool(tail.strip())


def detect(path: str | None = None, data: bytes | None = None) -> Detection:
    """Which importer reads this file, from its parsed structure."""
    z = _zip_detect(path, data)
    if z is not None:
        return z
    try:
        lines, more = _head_lines(path, data)
    except OSError:
        return Detection("ensemble")  # the reader reports the I/O error
    objs = []
    for raw in lines:
        try:
            objs.append(parse_json(raw))
        except JSONError:
            objs.append(None)
    dicts = [o for o in objs if isinstance(o, dict)]
    if lines and objs and objs[0] is None:  # a text log of a format ktui reads (not JSON)
        for imp in IMPORTERS:
            if imp.detect_text is not None and _safe(imp.detect_text, lines):
                return Detection(imp.name)
    if len(lines) == 1 and not more and dicts:  # one compact object: a single-object format first
        for imp in IMPORTERS:
            f = imp.detect_object
            if f is not None and not imp.line_based and _safe(f, dicts[0]):
                return Detection(imp.name, obj=dicts[0])
    # the line-based format that matches the most head lines (a line of another format can carry
    # a key that looks like one of ours, e.g. a Codex payload with a ``kind``); ties: registry order
    best, best_n = None, 0
    for imp in IMPORTERS:
        f = imp.detect_line
        if f is None:
            continue
        n = sum(1 for o in dicts if _safe(f, o))
        if n > best_n:
            best, best_n = imp.name, n
    if best is not None:
        return Detection(best)
    single = None
    if len(lines) == 1 and not more and objs and objs[0] is not None:
        single = objs[0]
    elif (objs and objs[0] is None) or (lines and not dicts):
        try:
            whole = data if data is not None else read_bounded(_needed(path))
            single = parse_json(whole)
        except (TooBig, OSError):
            single = None
        except JSONError:
            single = None
            part = salvage_array(whole)
            for imp in IMPORTERS if part is not None else []:
                f = imp.detect_object
                if f is not None and not imp.line_based and _safe(f, part):
                    return Detection(imp.name, obj=part, cut=True)
    if single is not None:
        for imp in IMPORTERS:
            f = imp.detect_object
            if f is not None and _safe(f, single):
                return Detection(imp.name, obj=single)
        return Detection("unknown", describe(single), single)
    if dicts or any(o is not None for o in objs):
        return Detection("unknown", describe(dicts[0] if dicts else next(o for o in objs if o is not None)))
    hint = describe_text(lines)
    if hint:
        return Detection("unknown", hint)
    return Detection("ensemble")  # not JSON at all, or empty: the ensemble reader says what is wrong


# text (not JSON) logs of agents ktui has no reader for, known by their first lines
_TEXT_KINDS = [
    (re.compile(rb"^# \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s*$"),
     "an Aider input history (.aider.input.history: the prompts typed, no model output; ktui reads the "
     ".aider.chat.history.md beside it, and times its prompts from this file)"),
    (re.compile(rb"^_Exported on .{1,80} from Cursor \(\d"),
     "a Cursor chat export (Markdown), which ktui has no reader for"),
]


_LFS_SIZE = re.compile(rb"^size (\d{1,15})\s*$")


def describe_text(lines: list[bytes]) -> str:
    """What a text file that is not JSON looks like, where its first lines say (else "")."""
    if lines and lines[0].strip() == b"version https://git-lfs.github.com/spec/v1":
        size = next((int(m.group(1)) for x in lines[1:4] if (m := _LFS_SIZE.match(x.strip()))), None)
        return ("a Git LFS pointer: the trace itself" + (f" ({size:,} bytes)" if size is not None else "")
                + " is not in this checkout (git lfs pull fetches it)")
    for raw in lines[:3]:
        for pat, what in _TEXT_KINDS:
            if pat.match(raw.strip()):
                if what.startswith("an Aider input") and not any(x.startswith(b"+") for x in lines[1:]):
                    continue
                return what
    return ""


def _zip_detect(path: str | None, data: bytes | None) -> Detection | None:
    """A zip file: an Inspect ``.eval`` log, or a zip of another kind."""
    try:
        if data is not None:
            magic = data[:4]
        else:
            with open(_needed(path), "rb") as f:
                magic = f.read(4)
    except OSError:
        return None
    if magic != inspect_ai.ZIP_MAGIC:
        return None
    names = inspect_ai.zip_names(path if data is None else None, data)
    if names is None:
        return Detection("unknown", "a zip file that cannot be read")
    if inspect_ai.is_eval_zip(names):
        return Detection("inspect", "zip")
    shown = ", ".join(names[:4]) + ("…" if len(names) > 4 else "")
    return Detection("unknown", f"a zip file of {count(len(names), 'file')}: {shown}" if names else "an empty zip file")


def _safe(f, obj) -> bool:
    try:
        return bool(f(obj))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False


def describe(obj: Any) -> str:
    """What a JSON value of an unknown kind looks like, in a few words."""
    if isinstance(obj, list):
        head = [x for x in obj[:8] if isinstance(x, dict)]
        if head and all(x.get("type") in ("say", "ask") and "ts" in x for x in head):
            return ("Cline's UI messages (ui_messages.json); its task history is api_conversation_history.json "
                    "in the same folder")
        kinds = {type(x).__name__ for x in obj[:50]}
        return f"a JSON array of {count(len(obj), 'item')} ({', '.join(sorted(kinds)) or 'empty'})"
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}"
    keys = set(obj)
    known = [
        ({"nbformat", "cells"}, "a Jupyter notebook"),
        ({"name", "version", "dependencies"}, "an npm package.json"),
        ({"openapi", "paths"}, "an OpenAPI document"),
        ({"swagger", "paths"}, "an OpenAPI document"),
        ({"$schema", "properties"}, "a JSON Schema"),
        ({"compilerOptions"}, "a tsconfig.json"),
        ({"slug", "status"}, "a sweep record (runs.jsonl row)"),
        ({"run_id", "status"}, "a sweep record (runs.jsonl row)"),
        ({"runs"}, "a sweep record (runs.json)"),
        ({"traceEvents"}, "a Chrome trace-event profile"),
    ]
    for need, what in known:
        if need <= keys:
            return what
    if "messages" in keys and not isinstance(obj.get("messages"), list):
        return "an object whose 'messages' is not a list"
    if "payload" in keys:
        return "an event with a 'payload' that has no 'kind'"
    shown = ", ".join(sorted(str(k) for k in keys)[:8])
    return f"a JSON object with keys {shown}" + ("…" if len(keys) > 8 else "") if keys else "an empty JSON object"


# ---- loading ----------------------------------------------------------------------------------------
def not_a_trace(path: str, hint: str, fmt: str = "unknown") -> Run:
    run = Run(path=path)
    run.format = run.variant = fmt
    run.problems.append(TraceProblem(0, f"not a trace (looks like {hint})", "", "error"))
    try:
        run.size_bytes = os.path.getsize(path)
    except OSError:
        pass
    return run


def choose(path: str | None = None, data: bytes | None = None, fmt: str | None = None) -> Detection:
    """The format to read with: ``fmt`` (or $KTUI_FORMAT) when given, else detected."""
    fmt = fmt or forced()
    if fmt:
        return Detection(fmt)
    return detect(path, data)


def load_as(path: str, det: Detection, *, data: bytes | None = None, key: str | None = None) -> Run:
    """Read with the detected importer (any but the reader's own, ensemble: ``ValueError``), then
    attach the harness's result files (ktui.trace.results). ``key``: one run of a file that holds
    many (:mod:`ktui.trace.address`)."""
    from ktui.trace.results import attach

    run = _load_as(path, det, data=data, key=key)
    if key is not None:
        run.path = join_address(path, key)
    return attach(run)


def many_runs(det: Detection) -> Importer | None:
    """The importer when the detected format holds many runs a file (``runs_in``), else None."""
    imp = next((i for i in IMPORTERS if i.name == det.name), None)
    return imp if imp is not None and imp.runs_in is not None and imp.load_run is not None else None


def runs_in_file(path: str, data: bytes | None = None) -> tuple[Detection, list[str]] | None:
    """The keys of the runs a file of a many-runs format holds (the detection, with its parsed
    object), or None for a file of one run. Never raises on bad data."""
    try:
        det = choose(path if data is None else None, data)
    except OSError:
        return None
    imp = many_runs(det)
    if imp is None or det.obj is None or imp.runs_in is None:
        return None
    try:
        return det, list(imp.runs_in(det.obj))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError):
        return det, []


def _no_key(path: str, det: Detection, key: str) -> Run:
    run = Run(path=path)
    run.format = run.variant = det.name
    run.problems.append(TraceProblem(0, f"no run {key[:80]!r} inside: the file is one run ({det.name}); "
                                     "open it without '#'"))
    return run


def _load_as(path: str, det: Detection, *, data: bytes | None = None, key: str | None = None) -> Run:
    if det.name == "unknown":
        return not_a_trace(path, det.hint)
    imp = next((i for i in IMPORTERS if i.name == det.name), None)
    if imp is None:
        run = Run(path=path)
        run.problems.append(TraceProblem(0, f"unknown format {det.name!r} (known: {', '.join(names())})"))
        return run
    if key is not None and imp.load_run is None:
        return _no_key(path, det, key)
    if imp.streamed:
        raise ValueError(f"the {det.name} format is read by ktui.trace.reader, not by the registry")
    try:
        if imp.load_zip is not None and (det.hint == "zip" or _zip_detect(
                path if data is None else None, data) is not None):
            run = imp.load_zip(path, data=data)
            if run.size_bytes is None or not run.size_bytes:
                run.size_bytes = len(data) if data is not None else os.path.getsize(path)
        elif imp.load_lines is not None:
            run = imp.load_lines(path, data=data)
        else:
            obj = det.obj
            if obj is None:
                raw = data if data is not None else read_bounded(path)
                try:
                    obj = parse_json(raw)
                except JSONError as exc:
                    part = salvage_array(raw)
                    if part is not None and imp.detect_object is not None and _safe(imp.detect_object, part):
                        return _load_as(path, Detection(det.name, det.hint, part, True), data=data, key=key)
                    run = Run(path=path)
                    run.format = run.variant = det.name
                    run.problems.append(TraceProblem(0, f"not valid JSON ({str(exc)[:80]})"))
                    run.size_bytes = len(raw)
                    return run
                size = len(raw)
            else:
                size = len(data) if data is not None else os.path.getsize(path)
            assert imp.load_object is not None  # the contract: not line-based, so single-object
            if key is not None and imp.load_run is not None:
                run = imp.load_run(obj, path, key)
            elif key is not None:
                run = _no_key(path, det, key)
            else:
                run = imp.load_object(obj, path)
            run.size_bytes = size
            if det.cut:
                run.problems.append(TraceProblem(
                    0, f"the file is not whole JSON: it breaks off after item {len(obj):,} of its list (cut while "
                    f"being written, or damaged); the {count(len(obj), 'whole item')} before are read", "", "warning"))
    except TooBig as exc:
        run = Run(path=path)
        run.format = run.variant = det.name
        run.problems.append(TraceProblem(0, str(exc)))
    except IsADirectoryError:
        run = Run(path=path)
        run.problems.append(TraceProblem(0, "is a directory, not a trace file"))
    except OSError as exc:
        run = Run(path=path)
        run.problems.append(TraceProblem(0, f"cannot read file: {exc.strerror or exc}"))
    except RecursionError:
        run = Run(path=path)
        run.format = run.variant = det.name
        run.problems.append(TraceProblem(0, "JSON nested too deeply to read"))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # never raise on data
        run = Run(path=path)
        run.format = run.variant = det.name
        run.problems.append(TraceProblem(0, f"{INTERNAL} ({type(exc).__name__}: {str(exc)[:120]})"))
    return run


def load_other(path: str | os.PathLike[str], fmt: str | None = None, *, data: bytes | None = None) -> Run | None:
    """The reader's hook: a Run for any format but ensemble; None when the file is ensemble."""
    addr = split_address(path) if data is None else Address(os.fspath(path))
    path, key = addr.path, addr.key
    det = choose(path if data is None else None, data, fmt)
    if det.name == "ensemble":
        if key is not None:
            return _no_key(path, det, key)
        return None
    return load_as(path, det, data=data, key=key)


class ImportFollower:
    """Follow mode for the imported formats: the whole file is read again when its size or mtime
    changes (they are small next to ensemble sweeps, and single-object formats can only be read
    whole)."""

    def __init__(self, path: str, det: Detection, key: str | None = None) -> None:
        self.path = path
        self.det = det
        self.key = key  # one run of a file that holds many
        self._sig: tuple[int, int, int] | None = None
        self.run: Run = Run(path=path)

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> ImportFollower | None:
        addr = split_address(path)
        p = addr.path
        if not os.path.isfile(p):
            return None
        det = choose(p)
        if det.name == "ensemble" and addr.key is None:
            return None
        return cls(p, Detection(det.name, det.hint), addr.key)

    def poll(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if self._sig is not None or not self.run.problems:
                self._sig = None
                self.run = Run(path=self.path)
                self.run.problems.append(TraceProblem(0, f"cannot read file: {exc.strerror or exc}"))
                return True
            return False
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        if sig == self._sig:
            return False
        self._sig = sig
        if self.det.name == "ensemble":  # an address inside a file of one run
            self.run = _no_key(self.path, self.det, self.key or "")
        else:
            self.run = load_as(self.path, self.det, key=self.key)
        return True


__all__ = ["BY_NAME", "ENV", "FORMATS", "IMPORTERS", "INTERNAL", "Detection", "Importer", "ImportFollower", "choose",
           "describe", "detect", "forced", "load_as", "load_other", "many_runs", "names", "not_a_trace",
           "runs_in_file"]
