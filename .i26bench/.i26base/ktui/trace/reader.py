"""Streaming reader for ensemble traces (V0-V3), one pass, never raising on input data.

``load(path)`` reads a file in chunks, parses each line with orjson, turns bad lines into
:class:`TraceProblem` entries (line number + excerpt) and feeds every good event to the
:class:`~ktui.trace.builder.Builder`. ``Follower`` does the same incrementally for a trace
that is still being written: each ``poll()`` reads only the bytes appended since the last one.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
from pathlib import Path

from ktui import settings
from ktui.trace.builder import Builder
from ktui.trace.lazy import LineSource
from ktui.trace.model import Event, Run, snapshot_run
from ktui.trace.notes import JSONError, loads

CHUNK = 8 << 20
_EXCERPT = 60
BOM = b"\xef\xbb\xbf"
SNIFF = 1 << 20  # bytes :func:`sniff` reads to tell a trace from anything else

MAX_LINE_MB = 64  # a line longer than this many MiB is not read (KTUI_MAX_LINE_MB sets another limit)


def max_line_bytes() -> int:
    """The longest line read, in bytes: ``KTUI_MAX_LINE_MB`` (MiB, may be a fraction), else
    :data:`MAX_LINE_MB`. A longer line is skipped without being held whole (a problem says so):
    one 500 MB line would otherwise take gigabytes to parse."""
    mb = settings.current().max_line_mb
    return max(1, int(mb * (1 << 20))) if mb is not None else MAX_LINE_MB << 20


def too_long_message(length: int, limit: int) -> str:
    return (f"line is {length / (1 << 20):,.1f} MiB long, over the {limit / (1 << 20):,.3g} MiB limit "
            f"(KTUI_MAX_LINE_MB): not read")


def split_lines(chunks, limit: int | None = None, sep: bytes | None = None):
    """The lines of a byte stream, in batches: yields ``(lines, skipped, partial)`` where ``lines``
    are complete lines (without separator), ``skipped`` is None or ``(length, terminated)`` of a
    line over ``limit`` bytes that follows them (never held whole: memory stays within the limit
    plus a chunk), and ``partial`` is the unterminated last line (in the last batch only). The
    separator is ``sep``, else decided from the first chunk (:func:`line_separator`)."""
    limit = max_line_bytes() if limit is None else limit
    parts: list[bytes] = []  # pieces of the line being read (no separator seen yet)
    plen = 0
    skipping = -1  # >= 0: bytes so far of a line over the limit, being skipped
    for chunk in chunks:
        if sep is None:
            sep = line_separator(chunk)
        start = 0
        if skipping >= 0 or parts:
            nl = chunk.find(sep)
            if nl < 0:
                if skipping >= 0:
                    skipping += len(chunk)
                else:
                    parts.append(chunk)
                    plen += len(chunk)
                    if plen > limit:
                        skipping, parts, plen = plen, [], 0
                continue
            if skipping >= 0:
                yield (), (skipping + nl, True), None
                skipping = -1
            elif plen + nl > limit:
                yield (), (plen + nl, True), None
            else:
                parts.append(chunk[:nl])
                yield (b"".join(parts),), None, None
            parts, plen = [], 0
            start = nl + 1
        lines = chunk.split(sep)  # the whole chunk (no copy of its tail); a head already read is dropped
        if start:
            del lines[0]
        rest = lines.pop()
        if len(chunk) - start > limit and any(len(x) > limit for x in lines):
            batch: list[bytes] = []
            for x in lines:
                if len(x) > limit:
                    yield batch, (len(x), True), None
                    batch = []
                else:
                    batch.append(x)
            lines = batch
        if lines:
            yield lines, None, None
        if rest:
            if len(rest) > limit:
                skipping = len(rest)
            else:
                parts, plen = [rest], len(rest)
        del chunk, lines, rest  # not held while the next chunk is read: memory stays at one chunk
    if skipping >= 0:
        yield (), (skipping, False), None
    elif parts:
        yield (), None, b"".join(parts)


MAX_DEPTH = 64  # nesting kept in the model; deeper values become DEEP (renderers recurse over it)
DEEP = "… (nested deeper than 64 levels)"


def cap_depth(v, limit: int = MAX_DEPTH):
    """``v`` with everything nested deeper than ``limit`` replaced by :data:`DEEP` (recursion is
    bounded by ``limit``)."""
    if isinstance(v, dict):
        return {k: cap_depth(x, limit - 1) for k, x in v.items()} if limit > 0 else DEEP
    if isinstance(v, list):
        return [cap_depth(x, limit - 1) for x in v] if limit > 0 else DEEP
    return v


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a trace (one line), or None for a regular file.

    Only regular files are opened: a FIFO would block ``open()`` and a device (``/dev/zero``)
    never ends. ``stat`` itself never blocks.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a trace file"
    if not stat.S_ISREG(st.st_mode):
        return f"not a regular file ({_kind(st.st_mode)}): not read"
    return None


class NotRegularFile(OSError):
    """Raised by :func:`open_regular` for FIFOs, devices and sockets."""


def open_regular(path: str | os.PathLike[str]):
    """Open a regular file for binary reading, never blocking: a FIFO or device that replaced the
    file since it was checked is refused (:class:`NotRegularFile`) instead of hanging."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"not a regular file ({_kind(mode)}): not read")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _excerpt(raw: bytes) -> str:
    s = raw[:_EXCERPT].decode("utf-8", "replace")
    s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in s)
    return s + ("…" if len(raw) > _EXCERPT else "")


class LineParser:
    """Turns raw lines into validated envelopes for a Builder."""

    def __init__(self, builder: Builder) -> None:
        self.b = builder
        self.line_no = 0
        self.offset = 0  # byte offset of the next line

    def feed_line(self, raw: bytes, terminated: bool = True) -> None:
        """One line without its newline. ``terminated`` is False for a final partial line."""
        self.line_no += 1
        line_no, offset, n = self.line_no, self.offset, len(raw)
        self.offset = offset + n + (1 if terminated else 0)
        body = raw[:-1] if raw[-1:] == b"\r" else raw
        if offset == 0 and body[:3] == BOM:  # a UTF-8 byte order mark: not part of the JSON
            body = body[3:]
        if n < 16 and not body.strip():
            return
        b = self.b
        try:
            obj = loads(body)
            if n > MAX_DEPTH and body.count(b"[") + body.count(b"{") > MAX_DEPTH:
                obj = cap_depth(obj, MAX_DEPTH)
        except JSONError as exc:
            if not terminated:
                b.run.incomplete = True
                return
            obj = _lossy(body)
            if obj is None:
                msg = str(exc).split(":", 1)[0] if "line 1 column" in str(exc) else str(exc)
                b.problem(line_no, f"not valid JSON ({_short(msg)})", _excerpt(body))
                return
            # one bad byte in a string does not cost the event: kept, decoded lossily, and said
            b.problem(line_no, "invalid UTF-8 byte(s) replaced by U+FFFD (the event is kept)", _excerpt(body),
                      severity="warning")
        except Exception as exc:  # noqa: BLE001 - the reader never raises on data
            b.problem(line_no, f"unreadable line ({type(exc).__name__})", _excerpt(body))
            return
        if b.run.incomplete:
            b.run.incomplete = False
        # the common, well-formed case without a function call per check
        if type(obj) is dict:
            payload = obj.get("payload")
            if type(payload) is dict:
                kind, tick, ts, actor = payload.get("kind"), obj.get("tick"), obj.get("ts_ms"), obj.get("actor")
                if (type(kind) is str and kind and type(tick) is int and type(ts) is int
                        and (actor is None or type(actor) is str)):
                    b.add(Event(line_no, offset, n, kind, tick, ts, actor), payload, obj)
                    return
        ev = validate(obj, line_no, offset, n, b, body)
        if ev is not None:
            b.add(ev[0], ev[1], obj)

    def skip_line(self, length: int, terminated: bool = True, limit: int | None = None) -> None:
        """A line too long to read (:func:`split_lines`): counted, and a problem says why."""
        self.line_no += 1
        self.offset += length + (1 if terminated else 0)
        self.b.problem(self.line_no, too_long_message(length, max_line_bytes() if limit is None else limit))

    def feed_all(self, batches) -> int:
        """Feed every batch of :func:`split_lines`; the bytes fed (separators included)."""
        start = self.offset
        feed = self.feed_line
        for lines, skipped, partial in batches:
            for raw in lines:
                feed(raw)
            if skipped is not None:
                self.skip_line(*skipped)
            if partial is not None:
                feed(partial, terminated=False)
        return self.offset - start

    def feed_object(self, obj: dict, length: int, terminated: bool = True) -> None:
        """A line decoded elsewhere (the sweep index rebuilds a long line's envelope without
        decoding its body): the same checks and the same builder as :meth:`feed_line`."""
        self.line_no += 1
        line_no, offset = self.line_no, self.offset
        self.offset = offset + length + (1 if terminated else 0)
        ev = validate(obj, line_no, offset, length, self.b, b"")
        if ev is not None:
            self.b.add(ev[0], ev[1], obj)


def _lossy(body: bytes):
    """The JSON of a line that is not valid UTF-8, its bad bytes replaced by U+FFFD; None when it
    is valid UTF-8 (its error is another) or still not JSON (a binary file)."""
    try:
        body.decode("utf-8")
        return None
    except UnicodeDecodeError:
        pass
    try:
        obj = loads(body.decode("utf-8", "replace").encode("utf-8"))
    except Exception:  # noqa: BLE001 - still not JSON: the caller reports the first error
        return None
    return obj if type(obj) is dict else None


def _short(msg: str) -> str:
    return msg if len(msg) <= 80 else msg[:77] + "..."


def validate(obj, line_no: int, offset: int, length: int, b: Builder, raw: bytes):
    """Check the envelope; return (Event, payload) or None (with a problem recorded)."""
    if not isinstance(obj, dict):
        b.problem(line_no, f"event is a JSON {type(obj).__name__}, not an object", _excerpt(raw))
        return None
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        what = "missing" if payload is None else f"a {type(payload).__name__}"
        b.problem(line_no, f"'payload' is {what}, expected an object", _excerpt(raw))
        return None
    kind = payload.get("kind")
    if not isinstance(kind, str) or not kind:
        b.problem(line_no, "'payload.kind' is missing or not a string", _excerpt(raw))
        return None
    tick = obj.get("tick")
    ts = obj.get("ts_ms")
    actor = obj.get("actor")
    if tick is not None and (not isinstance(tick, int) or isinstance(tick, bool)):
        b.problem(line_no, f"'tick' is {type(tick).__name__}, expected an integer", _excerpt(raw), "warning")
        tick = None
    if ts is not None and (not isinstance(ts, (int, float)) or isinstance(ts, bool)):
        b.problem(line_no, f"'ts_ms' is {type(ts).__name__}, expected an integer", _excerpt(raw), "warning")
        ts = None
    elif ts is None and "ts_ms" not in obj:
        b.problem(line_no, "'ts_ms' is missing", _excerpt(raw), "warning")
    if actor is not None and not isinstance(actor, str):
        b.problem(line_no, f"'actor' is {type(actor).__name__}, expected a string", _excerpt(raw), "warning")
        actor = None
    ev = Event(line=line_no, offset=offset, length=length, kind=kind, tick=tick,
               ts_ms=int(ts) if ts is not None else None, actor=actor)
    return ev, payload


def _iter_chunks(f, start: int = 0):
    f.seek(start)
    while True:
        chunk = f.read(CHUNK)
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
                    data = f.read(CHUNK)
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


def shown_separator(data: bytes) -> bytes | None:
    """The line separator ``data`` shows: ``\n`` (also for CRLF), ``\r`` for classic-Mac
    (CR-only) line endings, None while it shows neither (a trailing CR may be half of a CRLF)."""
    if b"\n" in data:
        return b"\n"
    return b"\r" if b"\r" in data.rstrip(b"\r") else None


def line_separator(first_chunk: bytes) -> bytes:
    """``\n``, or ``\r`` for a file with classic-Mac (CR-only) line endings."""
    return shown_separator(first_chunk) or b"\n"


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


def load(path: str | os.PathLike[str], *, keep_events: bool = True, format: str | None = None,
         findings: bool = True) -> Run:
    """Read a whole trace. Never raises on bad data; I/O problems become TraceProblems.

    Other formats (Claude Code, Codex, Inspect, ...) go to their importer (ktui.trace.importers);
    ``format`` forces one. ``findings=False``: the static findings of the kernel versions are
    left for later (``run.findings_pending``; the app computes them after its first paint)."""
    from ktui.trace.importers.registry import load_other

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
        try:
            with open_regular(path) as f:
                b.run.size_bytes = _feed_chunks(LineParser(b), _iter_chunks(f))
        except IsADirectoryError:
            b.problem(0, "is a directory, not a trace file")
        except NotRegularFile as exc:
            b.problem(0, str(exc))
        except OSError as exc:
            b.problem(0, f"cannot read file: {exc.strerror or exc}")
        return attach(b.finish(final=True, findings=findings))


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
        try:
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
        except IsADirectoryError:
            b.problem(0, "is a directory, not a trace file")
        except NotRegularFile as exc:
            b.problem(0, str(exc))
        except OSError as exc:
            b.problem(0, f"cannot read file: {exc.strerror or exc}")
        run = attach(b.finish(final=True, findings=findings))
    yield run, True


def _other(path):
    from ktui.trace.importers.registry import load_other

    return load_other(path, None)


def sniff(path: str | os.PathLike[str]) -> Run:
    """A quick look: the run of the first :data:`SNIFF` bytes (the whole file when it is small,
    else ``load`` when the start holds no event), enough to tell whether it is a trace at all."""
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
