"""Streaming reader for ensemble traces (V0-V3), one pass, never raising on input data.

``load(path)`` reads a file in chunks (its lines: :mod:`ktui.trace.lines`); a
:class:`~ktui.trace.parse.LineParser` parses each line with orjson, turns bad lines into
:class:`TraceProblem` entries (line number + excerpt) and feeds every good event to the
:class:`~ktui.trace.builder.Builder`. ``Follower`` does the same incrementally for a trace
that is still being written: each ``poll()`` reads only the bytes appended since the last one.
"""

from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path

from ktui.trace.builder import Builder
from ktui.trace.lazy import LineSource, give_back_heap
from ktui.trace.lines import (  # noqa: F401 - the reader's own names, still imported from here
    BOM,
    CHUNK,
    DEEP,
    MAX_DEPTH,
    MAX_LINE_MB,
    NotRegularFile,
    cap_depth,
    file_problem,
    line_separator,
    max_line_bytes,
    open_regular,
    read_capped,
    shown_separator,
    split_lines,
    too_long_message,
)
from ktui.trace.model import Event, Run, snapshot_run
from ktui.trace.parse import LineParser, validate  # noqa: F401 - the reader's own names, still imported from here

SNIFF = 1 << 20  # bytes :func:`sniff` reads to tell a trace from anything else


def _iter_chunks(f, start: int = 0):
    f.seek(start)
    while True:
        chunk = read_capped(f, CHUNK)
        if not chunk:
            return
        yield chunk
        del chunk  # not held while the next one is read


class Follower:
    """Incremental reader: ``poll()`` consumes only bytes appended since the last call.

    A half-written last line is held back until its newline arrives. The line separator is
    decided once, from the first bytes that show one (:func:`shown_separator`).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.builder = Builder(str(path))
        self.parser = LineParser(self.builder)
        self._pos = 0  # bytes consumed (up to the last newline)
        self._tail = b""
        self._skip = 0  # bytes so far of a line over the limit (skipped, not held)
        self._sep: bytes | None = None  # the line separator, once the file shows one
        self._inode: tuple[int, int] | None = None
        self.run: Run = self.builder.run
        from ktui.trace.importers.registry import ImportFollower

        self._other = ImportFollower.of(self.path)  # another format: re-imported when the file changes
        self.poll()

    def poll(self) -> bool:
        """Read what was appended; rebuild derived state. True if anything changed."""
        if self._other is not None:
            changed = self._other.poll()
            self.run = self._other.run
            return changed
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if not any(p.message.startswith("cannot read") for p in self.builder.run.problems):
                self.builder.problem(0, f"cannot read file: {exc.strerror or exc}")
                self.run = self.builder.finish(final=False)
                return True
            return False
        ident = (st.st_dev, st.st_ino)
        if self._inode is not None and (ident != self._inode or st.st_size < self._pos):
            # truncated or replaced: start over
            self.builder = Builder(str(self.path))
            self.parser = LineParser(self.builder)
            self._pos, self._tail, self._sep, self._skip = 0, b"", None, 0
        self._inode = ident
        start = self._pos + len(self._tail) + self._skip
        if st.st_size <= start:
            return False
        limit = max_line_bytes()
        was = self.run.incomplete
        fed = False
        try:
            with open_regular(self.path) as f, _no_gc():
                f.seek(start)
                while True:  # in chunks: one huge appended line is never read whole
                    data = read_capped(f, CHUNK)
                    if not data:
                        break
                    fed = self._consume(data, limit) or fed
                    del data
        except OSError as exc:
            self.builder.problem(0, f"cannot read file: {exc.strerror or exc}")
            self.run = self.builder.finish(final=False)
            return True
        if fed:
            self.builder.run.size_bytes = st.st_size
        self.builder.run.incomplete = bool(self._tail.strip()) or self._skip > 0
        self.run = self.builder.finish(final=False)
        return fed or self.run.incomplete != was  # only a partial line: whether 'incomplete' changed

    def _consume(self, data: bytes, limit: int) -> bool:
        """Feed the complete lines of ``data`` (after what was held back); keep the partial last
        line, or only its length once it is over ``limit``. True when a line was fed or skipped."""
        fed = False
        if self._sep is None:
            self._sep = shown_separator(self._tail + data)
        sep = self._sep or b"\n"
        if self._skip:
            nl = data.find(sep)
            if nl < 0:
                self._skip += len(data)
                return False
            self.parser.skip_line(self._skip + nl, True, limit)
            self._pos += self._skip + nl + 1
            self._skip = 0
            data = data[nl + 1:]
            fed = True
        buf = self._tail + data if self._tail else data
        last_nl = buf.rfind(sep)
        if last_nl < 0:
            self._tail = buf
        else:
            complete, self._tail = buf[: last_nl], buf[last_nl + 1:]
            self.parser.feed_all(split_lines((complete, sep), limit, sep))
            self._pos += last_nl + 1
            fed = True
        if len(self._tail) > limit:
            self._skip, self._tail = len(self._tail), b""
        return fed


def _feed_chunks(parser: LineParser, chunks) -> int:
    """Feed every line of a byte stream to ``parser``; the last, unterminated one as partial;
    lines over the limit (:func:`max_line_bytes`) are skipped, each with a problem."""
    size = 0

    def counted():
        nonlocal size
        for chunk in chunks:
            size += len(chunk)
            yield chunk
            del chunk

    parser.feed_all(split_lines(counted()))
    return size


@contextlib.contextmanager
def _no_gc():
    """The model is a tree of many small acyclic objects: cyclic GC passes over them during a
    load only cost time (quadratically many scans on big traces), so pause it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def _file_problems(b: Builder):
    """A trace file that cannot be read (a directory, not a regular file, an I/O error) becomes the
    run's problem, never an exception (``load`` and ``load_stages``)."""
    try:
        yield
    except IsADirectoryError:
        b.problem(0, "is a directory, not a trace file")
    except NotRegularFile as exc:
        b.problem(0, str(exc))
    except OSError as exc:
        b.problem(0, f"cannot read file: {exc.strerror or exc}")


def load(path: str | os.PathLike[str], *, keep_events: bool = True, format: str | None = None,
         findings: bool = True) -> Run:
    """Read a whole trace. Never raises on bad data; I/O problems become TraceProblems.

    Other formats (Claude Code, Codex, Inspect, ...) go to their importer (ktui.trace.importers);
    ``format`` forces one. ``findings=False``: the static findings of the kernel versions are
    left for later (``run.findings_pending``; the app computes them after its first paint)."""
    from ktui.trace.importers.registry import load_other

    keyed = _keyed(path, format)
    if keyed is not None:
        return keyed
    b = Builder(str(path), keep_events=keep_events)
    why = file_problem(path)
    if why is not None:
        b.problem(0, why)
        return b.finish(final=True)
    from ktui.trace.results import attach, kernelbench

    if format is None and kernelbench.is_sample(str(path)):
        return attach(kernelbench.load_sample(str(path)))
    other = load_other(path, format)
    if other is not None:
        return other
    if keep_events:  # long lines are read back from the file on demand (ktui.trace.lazy)
        b = Builder(str(path), keep_events=keep_events, source=LineSource(path))
    with _no_gc():
        with _file_problems(b):
            with open_regular(path) as f:
                b.run.size_bytes = _feed_chunks(LineParser(b), _iter_chunks(f))
        run = attach(b.finish(final=True, findings=findings))
    give_back_heap(run.size_bytes)
    return run


STAGE_MIN_BYTES = 4 << 20  # files at least this big are shown in two stages by :func:`load_stages`
STAGE_TURNS = 64  # the first stage ends once this many turns are known ...
STAGE_BYTES = 2 << 20  # ... or this many bytes were read
STAGE_CHUNK = 256 << 10  # read size until the first stage is out


def load_stages(path: str | os.PathLike[str], *, findings: bool = True, stage_turns: int | None = None,
                stage_bytes: int | None = None, min_bytes: int | None = None):
    """:func:`load` in two stages, for a screen that draws before the whole file is read: yields
    ``(run, complete)`` pairs: for a file of at least ``min_bytes``, first a copy of the run of
    its first lines (once ``stage_turns`` turns are known or ``stage_bytes`` were read, whichever
    comes first; ``complete`` False), then the whole run (``complete`` True). The copy shares
    nothing with the run the reader goes on building. Other formats, and smaller files: the
    whole run, once. Never raises on bad data."""
    stage_turns = STAGE_TURNS if stage_turns is None else stage_turns
    stage_bytes = STAGE_BYTES if stage_bytes is None else stage_bytes
    min_bytes = STAGE_MIN_BYTES if min_bytes is None else min_bytes
    from ktui.trace.results import attach, kernelbench

    keyed = _keyed(path)
    if keyed is not None:
        yield keyed, True
        return
    why = file_problem(path)
    if why is not None or kernelbench.is_sample(str(path)):
        yield load(path, findings=findings), True
        return
    other = _other(path)
    if other is not None:
        yield other, True
        return
    b = Builder(str(path), source=LineSource(path))
    parser = LineParser(b)
    staged = False
    with _no_gc():
        with _file_problems(b):
            with open_regular(path) as f:
                total = os.fstat(f.fileno()).st_size
                staged = total < min_bytes  # small: no first stage
                size = 0

                def chunks():
                    nonlocal size
                    while True:
                        chunk = f.read(CHUNK if staged else STAGE_CHUNK)
                        if not chunk:
                            return
                        size += len(chunk)
                        yield chunk
                        del chunk

                batches = split_lines(chunks())
                for lines, skipped, partial in batches:
                    if staged:
                        parser.feed_all([(lines, skipped, partial)])
                        continue
                    for i, raw in enumerate(lines):  # the first stage ends at a line
                        parser.feed_line(raw)
                        if len(b.run.turns) > stage_turns or parser.offset >= stage_bytes:
                            staged = True
                            b.run.size_bytes = parser.offset
                            yield attach(snapshot_run(b.finish(final=False, findings=False))), False
                            lines = lines[i + 1:]
                            break
                    else:
                        lines = ()
                    parser.feed_all([(lines, skipped, partial)])
                b.run.size_bytes = size
        run = attach(b.finish(final=True, findings=findings))
    give_back_heap(run.size_bytes)
    yield run, True


def _keyed(path, format: str | None = None) -> Run | None:
    """One run of a file that holds many (``PATH#KEY``, :mod:`ktui.trace.address`), or None
    when ``path`` names a file."""
    from ktui.trace.address import split

    if split(path).key is None:
        return None
    from ktui.trace.importers.registry import load_other

    return load_other(path, format)


def _other(path):
    from ktui.trace.importers.registry import load_other

    return load_other(path, None)


def sniff(path: str | os.PathLike[str]) -> Run:
    """A quick look: the run of the first :data:`SNIFF` bytes (the whole file when it is small,
    else ``load`` when the start holds no event), enough to tell whether it is a trace at all."""
    keyed = _keyed(path)
    if keyed is not None:
        return keyed
    why = file_problem(path)
    if why is not None:
        b = Builder(str(path))
        b.problem(0, why)
        return b.finish(final=True)
    from ktui.trace.results import kernelbench

    if kernelbench.is_sample(str(path)):  # a KernelBench sample file: small, read whole
        return load(path, keep_events=False)
    try:
        with open_regular(path) as f:
            head = f.read(SNIFF + 1)
    except OSError as exc:
        b = Builder(str(path))
        b.problem(0, str(exc) if isinstance(exc, NotRegularFile) else f"cannot read file: {exc.strerror or exc}")
        return b.finish(final=True)
    if len(head) <= SNIFF:
        return load_bytes(head, str(path))
    cut = head.rfind(b"\n")
    run = load_bytes(head[: cut + 1] if cut >= 0 else head, str(path))
    return run if len(run.events) else load(path, keep_events=False)


def load_bytes(data: bytes, path: str = "<bytes>", format: str | None = None) -> Run:
    """Parse an in-memory trace (tests, fuzzing)."""
    from ktui.trace.importers.registry import load_other

    other = load_other(path, format, data=data)
    if other is not None:
        return other
    b = Builder(path)
    b.run.size_bytes = _feed_chunks(LineParser(b), [data])
    return b.finish(final=True)


def read_raw_line(path: str | os.PathLike[str], event: Event, limit: int = 1 << 20) -> str:
    """The raw text of one event's line, read by offset (at most ``limit`` bytes)."""
    try:
        with open_regular(path) as f:
            f.seek(event.offset)
            raw = f.read(min(event.length, limit))
    except OSError as exc:
        return f"<cannot read line {event.line}: {exc.strerror or exc}>"
    text = raw.decode("utf-8", "replace")
    if event.length > limit:
        text += f"… [{event.length - limit:,} more bytes]"
    return text
