"""The bytes of a trace file: which files are read at all (regular files only, never blocking),
and their lines, split in batches without ever holding a line over the limit whole
(:func:`split_lines`). :mod:`ktui.trace.reader` parses what this yields."""

from __future__ import annotations

import os
import stat
from typing import Any

from ktui import settings

CHUNK = 8 << 20


BOM = b"\xef\xbb\xbf"


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


def read_capped(f: Any, cap: int) -> bytes:
    """What ``f.read(cap)`` gives (up to ``cap`` bytes from the file's position), read into a buffer
    of the bytes the file has left (``fstat``) instead of ``cap``: a plain ``read(cap)`` allocates
    ``cap`` bytes and gives most back, 80 of the 110 us a 130 kB trace's read cost with a 4 MiB
    cap (and a sweep record file was read with a 64 MiB one). A file that grew since reads on up
    to ``cap`` as before."""
    try:
        left = max(0, os.fstat(f.fileno()).st_size - f.tell())
    except (OSError, ValueError, AttributeError):
        return f.read(cap)  # type: ignore[no-any-return]
    want = min(cap, left + 1)
    data: bytes = f.read(want)
    if len(data) == want < cap:
        data += f.read(cap - want)
    return data


def shown_separator(data: bytes) -> bytes | None:
    """The line separator ``data`` shows: ``\n`` (also for CRLF), ``\r`` for classic-Mac
    (CR-only) line endings, None while it shows neither (a trailing CR may be half of a CRLF)."""
    if b"\n" in data:
        return b"\n"
    return b"\r" if b"\r" in data.rstrip(b"\r") else None


def line_separator(first_chunk: bytes) -> bytes:
    """``\n``, or ``\r`` for a file with classic-Mac (CR-only) line endings."""
    return shown_separator(first_chunk) or b"\n"


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
