"""The events of a run: one :class:`Event` per parsed line, stored column-wise (:class:`EventLog`),
and the table that finds the turn of a line (:func:`turn_spans`).

The raw text of a line is not kept: it is read back by offset when needed."""

from __future__ import annotations

import copy
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload


@dataclass(slots=True, eq=False)
class Event:
    """One parsed line. The raw text is not kept: read it back by offset when needed."""

    line: int
    offset: int  # byte offset of the line in the file
    length: int  # byte length of the line (without the newline)
    kind: str
    tick: int | None = None
    ts_ms: int | None = None
    actor: str | None = None
    turn: int | None = None  # index of the turn this event belongs to, if any


class EventLog(Sequence[Event]):
    """Every event of a run, stored column-wise (40 bytes an event instead of ~270 for an
    object with boxed ints); ``Event`` objects are made on access.

    Line numbers and lengths are 32-bit, turns 32-bit (-1: none), kinds and actors 16-bit
    indexes into one list of names: a value that does not fit widens its column to 64 bits
    (:meth:`widen`), so nothing is ever cut."""

    _NONE = -(2**63)  # tick and ts_ms: unknown
    _NARROW = ("_line", "_length", "_turn", "_kind", "_actor")  # the columns :meth:`widen` widens

    def __init__(self) -> None:
        self._line = array("I")
        self._offset = array("q")
        self._length = array("I")
        self._tick = array("q")
        self._ts = array("q")
        self._turn = array("i")  # -1: no turn
        self._kind = array("H")
        self._actor = array("H")
        self._names: list[str | None] = [None]  # kinds and actors, interned; 0 is None
        self._ix: dict[str | None, int] = {None: 0}

    def widen(self) -> None:
        """Make the 32- and 16-bit columns 64-bit (a value did not fit; never in practice: 4 G
        lines, a 4 GiB line, 2 G turns or 65,536 kinds and actors)."""
        for name in self._NARROW:
            col = getattr(self, name)
            if col.typecode != "q":
                setattr(self, name, array("q", col))

    def _intern(self, s: str | None) -> int:
        i = self._ix.get(s)
        if i is None:
            i = self._ix[s] = len(self._names)
            self._names.append(s)
        return i

    def _i64(self, v: int | None) -> int:
        return v if v is not None and -(2**63) < v < 2**63 else self._NONE  # out of range: unknown

    def append(self, ev: Event) -> None:
        line, length, turn = ev.line, ev.length, -1 if ev.turn is None else ev.turn
        kind, actor = self._intern(ev.kind), self._intern(ev.actor)
        if self._line.typecode != "q" and not (0 <= line < 2**32 and 0 <= length < 2**32 and -1 <= turn < 2**31
                                                and kind < 2**16 and actor < 2**16):
            self.widen()
        self._line.append(line)
        self._offset.append(ev.offset)
        self._length.append(length)
        self._tick.append(self._i64(ev.tick))
        self._ts.append(self._i64(ev.ts_ms))
        self._turn.append(turn)
        self._kind.append(kind)
        self._actor.append(actor)

    def __len__(self) -> int:
        return len(self._line)

    def _event(self, i: int) -> Event:
        n = self._NONE
        tick, ts, turn = self._tick[i], self._ts[i], self._turn[i]
        return Event(self._line[i], self._offset[i], self._length[i], self._names[self._kind[i]] or "",
                     None if tick == n else tick, None if ts == n else ts, self._names[self._actor[i]],
                     None if turn < 0 else turn)

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._event(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._event(i)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self)):
            yield self._event(i)

    def offset_length(self, i: int) -> tuple[int, int]:
        """Where the ``i``-th event's line is: its byte offset and length."""
        return self._offset[i], self._length[i]

    @property
    def lines(self) -> array:
        """The line numbers, in order (for bisecting)."""
        return self._line


def copy_events(log: EventLog) -> EventLog:
    """An independent copy of an event log (its columns are arrays: copied whole, fast)."""
    new = EventLog.__new__(EventLog)
    for name in ("_line", "_offset", "_length", "_tick", "_ts", "_turn", "_kind", "_actor"):
        setattr(new, name, copy.copy(getattr(log, name)))
    new._names = list(log._names)
    new._ix = dict(log._ix)
    return new


class _TurnSpans:
    """Turns ordered by first line, with the running minimum of turn indexes from the right, so
    that "the first turn in turn order that spans a line" is a bisection plus a short scan.

    Turns of one actor do not overlap, and turns of several actors rarely do; the scan walks
    only over turns that start at or before ``line`` and end after it (overlapping turns)."""

    def __init__(self, run) -> None:
        order = sorted(run.turns, key=lambda t: (t.first_line, t.index))
        self.turns = order
        self.firsts = [t.first_line for t in order]
        # the largest last_line of any turn up to position i: a turn at or before position i can
        # span ``line`` only if this is >= line; its running max is non-decreasing
        best = -1
        self.reach: list[int] = []
        for t in order:
            best = max(best, t.last_line)
            self.reach.append(best)

    def turn_of(self, line: int) -> int | None:
        import bisect

        hi = bisect.bisect_right(self.firsts, line)  # turns starting at or before line: [0, hi)
        lo = bisect.bisect_left(self.reach, line, 0, hi)  # before lo, none reaches line
        found: int | None = None
        for t in self.turns[lo:hi]:
            if t.last_line >= line and (found is None or t.index < found):
                found = t.index
        return found


def turn_spans(run) -> _TurnSpans:
    return _TurnSpans(run)
