"""Labels and notes on a run, a turn or a kernel version, kept outside the traces.

A label is one line of a JSON Lines file the user can share or commit (ktui never writes a
trace): by default ``$XDG_DATA_HOME/ktui/labels.jsonl`` (``~/.local/share/ktui/labels.jsonl``);
``--labels FILE`` names another, and a sweep's own ``DIR/ktui-labels.jsonl`` is read by every
command that reads ``DIR`` (``ktui runs``, ``report``, ``labels export``). Each line::

    {"v": 1, "op": "add", "id": "fp1:<sha1>", "label": "hack", "note": "times a cached output",
     "scope": "version", "version": "v3", "kernel_sha1": "...", "turn": null,
     "trace": "sweep/run7/trace.jsonl", "at": "2026-05-01T12:00:00Z", "by": "alice"}

``op`` is ``add`` or ``remove`` (the file is only ever appended to; the last line about one
(run, scope, label) wins, so two people's files can be concatenated). ``id`` is the trace's
content identity, not its path: ``fp1:`` + sha1 of its first 4 KiB, its last 4 KiB and its size
(the runs index's duplicate fingerprint), so a moved or copied trace keeps its labels and a
different trace at the same path does not inherit them. A file is data from elsewhere: lines
that do not parse or have the wrong shape are counted and skipped, never trusted.

No Textual, no Rich.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SWEEP_FILE = "ktui-labels.jsonl"  # beside a sweep: read by every command that reads the sweep
SCOPES = ("run", "turn", "version")
MAX_LABEL = 64
MAX_NOTE = 4000
MAX_LINE = 16384
MAX_FILE = 64 << 20
_LABEL_OK = re.compile(r"^[^\s,;\"'`\\<>|]+$")
_HEAD = 4096


def content_id(path: str | os.PathLike[str]) -> str:
    """The trace's content identity: ``fp1:`` + sha1(first 4 KiB | last 4 KiB | size)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(_HEAD)
        if size > _HEAD:
            f.seek(max(0, size - _HEAD))
            tail = f.read(_HEAD)
        else:
            tail = head
    return "fp1:" + fingerprint(head, tail, size)


def fingerprint(head: bytes, tail: bytes, size: int) -> str:
    """sha1 of (first 4 KiB, last 4 KiB, size): what :func:`content_id` and the runs index hash."""
    h = hashlib.sha1(head[:_HEAD])
    h.update(b"|" + tail[-_HEAD:] + b"|" + str(size).encode())
    return h.hexdigest()


def default_file() -> str:
    """``$XDG_DATA_HOME/ktui/labels.jsonl`` (:attr:`ktui.settings.Settings.labels_file`)."""
    from ktui import settings

    return str(settings.current().labels_file)


def files_for(root: str | os.PathLike[str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The label files a command reads: the default one, the sweep's own, then ``extra``."""
    out = [default_file()]
    if root is not None and os.path.isdir(root):
        out.append(os.path.join(os.fspath(root), SWEEP_FILE))
    out.extend(os.fspath(e) for e in extra if e)
    seen: list[str] = []
    for p in out:
        if os.path.abspath(p) not in (os.path.abspath(s) for s in seen):
            seen.append(p)
    return seen


class LabelError(ValueError):
    """A label the user asked for that cannot be (one line)."""


def check_label(label: str) -> str:
    label = (label or "").strip()
    if not label:
        raise LabelError("empty label")
    if len(label) > MAX_LABEL:
        raise LabelError(f"label longer than {MAX_LABEL} characters")
    if not _LABEL_OK.match(label) or not label.isprintable():
        raise LabelError(f"label {label!r}: one word, no spaces, commas, quotes or control characters")
    return label


@dataclass
class Label:
    id: str
    label: str
    scope: str = "run"
    turn: int | None = None
    version: str | None = None
    kernel_sha1: str | None = None
    note: str = ""
    trace: str = ""
    at: str = ""
    by: str = ""
    source: str = ""  # the file it came from

    @property
    def where(self) -> str:
        """'' for the run, 'turn 4' or 'v3'."""
        if self.scope == "turn":
            return f"turn {self.turn}"
        if self.scope == "version":
            return self.version or (self.kernel_sha1 or "")[:10]
        return ""

    @property
    def short(self) -> str:
        """What a table cell shows: ``hack`` (the run), ``hack@v3``, ``hack@t4``."""
        if self.scope == "turn":
            return f"{self.label}@t{self.turn}"
        if self.scope == "version":
            return f"{self.label}@{self.version or (self.kernel_sha1 or '')[:8]}"
        return self.label

    def key(self) -> tuple:
        return (self.id, self.scope, self.turn, self.version, self.label)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "scope": self.scope, "turn": self.turn, "version": self.version,
                "kernel_sha1": self.kernel_sha1, "note": self.note, "trace": self.trace, "at": self.at, "by": self.by}


def _label_from(d: Any, source: str) -> tuple[str, Label] | None:
    """(op, Label) from one parsed line, or None when its shape is wrong."""
    if not isinstance(d, dict) or d.get("v") != 1 or d.get("op") not in ("add", "remove"):
        return None
    lid, label, scope = d.get("id"), d.get("label"), d.get("scope", "run")
    if not isinstance(lid, str) or not lid.startswith("fp1:") or len(lid) > 64:
        return None
    if not isinstance(label, str) or scope not in SCOPES:
        return None
    try:
        label = check_label(label)
    except LabelError:
        return None
    turn, version, ksha = d.get("turn"), d.get("version"), d.get("kernel_sha1")
    if scope == "turn" and not (isinstance(turn, int) and not isinstance(turn, bool) and 0 <= turn < 1 << 31):
        return None
    if scope == "version" and not (isinstance(version, str) and 0 < len(version) <= 32):
        return None
    if ksha is not None and not (isinstance(ksha, str) and len(ksha) <= 64):
        return None
    note = d.get("note") or ""
    strs = [d.get(k) or "" for k in ("trace", "at", "by")]
    if not isinstance(note, str) or not all(isinstance(x, str) for x in strs):
        return None
    return d["op"], Label(id=lid, label=label, scope=scope, turn=turn if scope == "turn" else None,
                          version=version if scope == "version" else None, kernel_sha1=ksha,
                          note=note[:MAX_NOTE], trace=strs[0][:4096], at=strs[1][:64], by=strs[2][:128],
                          source=source)


@dataclass
class LabelStore:
    """The labels in force, read from one or more files (later lines and files win)."""

    files: list[str] = field(default_factory=list)
    by_id: dict[str, list[Label]] = field(default_factory=dict)
    bad_lines: int = 0  # lines skipped (not JSON, wrong shape, too long)
    problems: list[str] = field(default_factory=list)  # files that could not be read

    @classmethod
    def read(cls, files: Iterable[str]) -> LabelStore:
        st = cls(files=list(files))
        state: dict[tuple, Label | None] = {}
        for p in st.files:
            try:
                if os.path.getsize(p) > MAX_FILE:
                    st.problems.append(f"{p}: over {MAX_FILE >> 20} MiB, not read")
                    continue
                with open(p, "rb") as fh:
                    data = fh.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                st.problems.append(f"{p}: cannot read: {exc.strerror or exc}")
                continue
            for raw in data.split(b"\n"):
                if not raw.strip():
                    continue
                if len(raw) > MAX_LINE:
                    st.bad_lines += 1
                    continue
                try:
                    got = _label_from(json.loads(raw.decode("utf-8", "replace")), p)
                except (ValueError, RecursionError):
                    got = None
                if got is None:
                    st.bad_lines += 1
                    continue
                op, lab = got
                k = lab.key()
                state.pop(k, None)  # re-inserted last: the order of the latest word
                state[k] = lab if op == "add" else None
        for kept in state.values():
            if kept is not None:
                st.by_id.setdefault(kept.id, []).append(kept)
        return st

    def __bool__(self) -> bool:
        return bool(self.by_id)

    def for_id(self, cid: str | None) -> list[Label]:
        return list(self.by_id.get(cid or "", ()))

    def names(self) -> list[str]:
        return sorted({lab.label for labs in self.by_id.values() for lab in labs})


def record(cid: str, label: str, *, op: str = "add", scope: str = "run", turn: int | None = None,
           version: str | None = None, kernel_sha1: str | None = None, note: str = "", trace: str = "",
           ) -> dict[str, Any]:
    label = check_label(label)
    if scope not in SCOPES:
        raise LabelError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
    if len(note) > MAX_NOTE:
        raise LabelError(f"note longer than {MAX_NOTE} characters")
    try:
        by = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name: the line says nobody
        by = ""
    return {"v": 1, "op": op, "id": cid, "label": label, "scope": scope,
            "turn": turn if scope == "turn" else None, "version": version if scope == "version" else None,
            "kernel_sha1": kernel_sha1, "note": note, "trace": trace,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": by}


def append(path: str, rec: dict[str, Any]) -> None:
    """Append one record (one write of one line, O_APPEND) to ``path``; OSError on failure."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    line = (json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        # a file whose last line has no newline (edited by hand): start on a line of our own
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    line = b"\n" + line
        os.write(fd, line)
    finally:
        os.close(fd)
