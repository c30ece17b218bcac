"""Walking a sweep: every trace file under a directory once, in a stable order: a directory's
entries in natural order (:func:`ktui.trace.order.name_key`: ``run2`` before ``run10``, as the
runs table sorts its columns), so that the rows of ``ktui runs`` come in that order.

Directory walking follows symbolic links, visits each real directory once (symlink loops are
reported, not followed), lists each real file once (by device and inode), skips the record
files (read by :class:`~ktui.trace.index.records.Records` on the way) and never raises: what
cannot be read becomes a :class:`~ktui.trace.index.summary.ScanIssue`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any

from ktui.trace.index.records import RECORD_FILES, Records
from ktui.trace.index.summary import ScanIssue, TraceFile
from ktui.trace.labels import SWEEP_FILE as LABELS_FILE
from ktui.trace.order import name_key
from ktui.trace.reader import file_problem
from ktui.trace.results.kernelbench import SAMPLE

# files looked at as traces (which format a file is comes from its content, never its name)
TRACE_EXTS = (".jsonl", ".json", ".traj", ".eval",  # .eval: Inspect's zipped logs
              ".aider.chat.history.md")  # Aider's Markdown transcript (ktui.trace.importers.aider)
# KernelBench run folders: one kernel file per sample (ktui.trace.results.kernelbench), a run each
_SAMPLE_FILE = SAMPLE


def _listed(d: str, keys: dict[str, tuple[list[str | int], str]]) -> list[os.DirEntry[str]]:
    """A directory's entries in natural order (``keys``: the names' keys made so far in this walk;
    a name's key made once). OSError where it cannot be listed."""
    with os.scandir(d) as it:
        entries = list(it)
    if len(entries) > 1:
        def key(e: os.DirEntry[str]) -> tuple[list[str | int], str]:
            k = keys.get(e.name)
            if k is None:
                k = keys[e.name] = name_key(e.name)
            return k

        entries.sort(key=key)
    return entries


def looked_at(name: str) -> bool:
    """Whether a file of this name is read as a possible run: a trace extension or a KernelBench
    sample file, not a sweep record nor ktui's own labels file beside a sweep (it was "not a trace",
    an error that made ``validate DIR`` exit 1). Every walk of a directory (``runs``, ``validate``)
    asks this."""
    return (name not in RECORD_FILES and name != LABELS_FILE
            and (name.endswith(TRACE_EXTS) or _SAMPLE_FILE.match(name) is not None))


def agent_copy(dirname: str, names: set[str] | frozenset[str]) -> bool:
    """Whether a subdirectory is an agent CLI's own copy of the run its folder already holds: Harbor's
    claude-code agent keeps Claude Code's config dir (``sessions/projects/...<session>.jsonl``)
    beside the ``trajectory.json`` Harbor converted from that same session; listing both counted
    every trial twice, the copy with no result (a pass rate halved). Both walks (``runs``,
    ``validate``) ask this."""
    return dirname == "sessions" and "trajectory.json" in names


def _display(path: str, root: str) -> str:
    """``path`` relative to ``root`` (the walk builds every path by joining names onto root)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if path.startswith(prefix):
        return path[len(prefix):]
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def iter_traces(root: str | os.PathLike[str], issues: list[ScanIssue], records: Records | None = None,
                ) -> Iterator[TraceFile]:
    """Every trace file under ``root`` once, as the walk finds it, in a stable order.

    Subdirectories come before the files next to them (``<uuid>/trace.jsonl`` before the flat
    link to it), and a directory's records are read before anything below it is yielded. A file
    reached twice (through links) is yielded the first time only.
    """
    root = os.fspath(root)
    try:
        st = os.stat(root)
    except OSError as exc:
        issues.append(ScanIssue(root, f"cannot read: {exc.strerror or exc}", "error"))
        return
    if not os.path.isdir(root):
        yield TraceFile(root, os.path.realpath(root), st.st_size, st.st_mtime_ns, os.path.islink(root), root)
        return
    seen_files: set[tuple[int, int]] = set()
    seen_dirs: set[tuple[int, int]] = set()
    # every path below is built by joining names onto root: shown is what follows this prefix
    # (:func:`_display`'s answer, without its checks per file: 10,000 cells of 3 entries each)
    prefix = root if root.endswith(os.sep) else root + os.sep
    n_prefix = len(prefix)

    def shown_of(path: str) -> str:
        return path[n_prefix:] if path.startswith(prefix) else _display(path, root)

    keys: dict[str, tuple[list[str | int], str]] = {}  # names repeat from cell to cell (trace.jsonl, runs.jsonl)
    # stack items: ("dir", (path, real path or None)) or ("files", [(TraceFile, (dev, ino))...])
    stack: list[tuple[str, Any]] = [("dir", (root, None))]
    while stack:
        what, item = stack.pop()
        if what == "files":
            for tf, ident in item:
                if ident not in seen_files:
                    seen_files.add(ident)
                    if tf.is_link:
                        tf.real = os.path.realpath(tf.found)
                    yield tf
            continue
        d, real_dir = item
        shown = shown_of(d)
        try:
            dst = os.stat(d)
        except OSError as exc:
            issues.append(ScanIssue(shown, f"cannot read directory: {exc.strerror or exc}", "warning"))
            continue
        key = (dst.st_dev, dst.st_ino)
        if key in seen_dirs:
            if os.path.islink(d):
                issues.append(ScanIssue(shown, f"symlink to a directory already scanned ({os.readlink(d)}); "
                                        "not followed again", "info"))
            continue
        seen_dirs.add(key)
        try:
            entries = _listed(d, keys)
        except OSError as exc:
            issues.append(ScanIssue(shown, f"cannot list directory: {exc.strerror or exc}", "warning"))
            continue
        if real_dir is None:
            real_dir = os.path.realpath(d)
        # os.path.join(real_dir, name) for a name scandir gave (never absolute, no separator)
        real_base = real_dir if real_dir.endswith(os.sep) else real_dir + os.sep
        files: list[tuple[TraceFile, tuple[int, int]]] = []
        subdirs: list[tuple[str, str | None]] = []
        names: frozenset[str] | None = None  # the directory's names: asked only beside a "sessions" folder
        for e in entries:
            name = e.name
            try:
                is_link = e.is_symlink()
                if e.is_dir():
                    if name == "sessions":
                        if names is None:
                            names = frozenset(x.name for x in entries)
                        if agent_copy(name, names):
                            issues.append(ScanIssue(shown_of(e.path), "the agent's own session copy of the run in "
                                                    "trajectory.json beside it; not listed again", "info"))
                            continue
                    if not name.startswith(".") and name != "__pycache__":
                        subdirs.append((e.path, None if is_link else real_base + name))
                    continue
                if not e.is_file() and name.endswith(".jsonl") and not is_link:
                    issues.append(ScanIssue(_display(e.path, root), file_problem(e.path) or "not a regular file",
                                            "warning"))
                    continue
                if not e.is_file():
                    if is_link and (name.endswith(".jsonl") or "." not in name):
                        try:
                            os.stat(e.path)  # it leads somewhere: to a device or a FIFO, not "broken"
                            reason = "symlink: " + (file_problem(e.path) or "not a regular file")
                        except OSError as exc:
                            reason = f"broken symlink ({exc.strerror or exc})"
                        issues.append(ScanIssue(_display(e.path, root), reason, "warning"))
                    continue
                if name in RECORD_FILES:
                    if records is not None:
                        records.read(e.path, issues, shown_of(e.path))
                    continue
                if not looked_at(name):
                    continue
                fst = e.stat()
                # the real path of a link is resolved only if it is not a duplicate (see above)
                real = e.path if is_link else real_base + name
                tf = TraceFile(shown_of(e.path), real, fst.st_size, fst.st_mtime_ns, is_link, e.path)
                files.append((tf, (fst.st_dev, fst.st_ino)))
            except OSError as exc:
                issues.append(ScanIssue(shown_of(e.path), f"cannot read: {exc.strerror or exc}", "warning"))
        stack.append(("files", files))
        for sd in reversed(subdirs):
            stack.append(("dir", sd))


def discover(root: str | os.PathLike[str], issues: list[ScanIssue], records: Records | None = None,
             ) -> list[TraceFile]:
    """:func:`iter_traces` as a list."""
    return list(iter_traces(root, issues, records))


_WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", None)


def willneed(path: str) -> bool:
    """Ask the kernel to start reading a whole file into the page cache, without waiting for it
    (``posix_fadvise(WILLNEED)``): a cold scan overlaps the disk with the parsing of the files
    before. Best effort: False where the platform has no such call or the file cannot be opened
    (the skim says why later). Opened non-blocking, so that a FIFO cannot hang it."""
    if _WILLNEED is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device is never read ahead
            return False
        os.posix_fadvise(fd, 0, 0, _WILLNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
