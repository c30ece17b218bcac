"""Rows of a run kept by column: a list of tuples that costs a few bytes a row instead of a tuple
and a boxed line number each (issue 25: memory of a long trace).

:class:`Rows` behaves as the list of tuples it replaces (``run.messages``: ``(line, kind, actor,
text)``; ``run.notes``: ``(line, text)``): append, extend, insert, index, slices, iteration,
equality with a list; the tuples are made on access. Integer columns are 64-bit arrays, name
columns (kinds, actors) indexes into one list of names, other columns plain lists. A row whose
values do not fit its columns (a line that is not an int, a kind that is not a string) turns
the whole container into a plain list of tuples: nothing is ever changed or cut."""

from __future__ import annotations

import copy
from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from typing import Any

INT, NAME, OBJ = "int", "name", "obj"
_LO, _HI = -(2**63), 2**63


class Rows(MutableSequence[tuple]):
    """A list of equal-length tuples, stored by column (see the module's docstring)."""

    __slots__ = ("_spec", "_cols", "_names", "_ix", "_plain")

    def __init__(self, spec: tuple[str, ...], rows: Iterable[tuple] = ()) -> None:
        self._spec = spec
        self._cols: list[Any] = [array("q") if k == INT else array("I") if k == NAME else [] for k in spec]
        self._names: list[str | None] = [None]
        self._ix: dict[str | None, int] = {None: 0}
        self._plain: list[tuple] | None = None  # set once a row does not fit the columns
        self.extend(rows)

    # ---- storage -------------------------------------------------------------------------------
    def _fits(self, row: Any) -> bool:
        if type(row) is not tuple or len(row) != len(self._spec):
            return False
        for k, v in zip(self._spec, row, strict=True):
            if k == INT and not (type(v) is int and _LO <= v < _HI):
                return False
            if k == NAME and not (v is None or type(v) is str):
                return False
        return True

    def _name(self, s: str | None) -> int:
        i = self._ix.get(s)
        if i is None:
            i = self._ix[s] = len(self._names)
            self._names.append(s)
        return i

    def _encode(self, row: tuple) -> list[Any]:
        return [self._name(v) if k == NAME else v for k, v in zip(self._spec, row, strict=True)]

    def _row(self, i: int) -> tuple:
        c, names = self._cols, self._names
        if self._spec == MESSAGE:
            return (c[0][i], names[c[1][i]], names[c[2][i]], c[3][i])
        if self._spec == NOTE:
            return (c[0][i], c[1][i])
        return tuple(names[col[i]] if k == NAME else col[i] for k, col in zip(self._spec, c, strict=True))

    def _to_plain(self) -> list[tuple]:
        if self._plain is None:
            self._plain = [self._row(i) for i in range(len(self))]
            self._cols = [[] for _ in self._spec]
        return self._plain

    # ---- the list's interface -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._plain) if self._plain is not None else len(self._cols[0])

    def __getitem__(self, i):  # type: ignore[override]
        if self._plain is not None:
            return self._plain[i]
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(len(self)))]
        n = len(self._cols[0])
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("list index out of range")
        return self._row(i)

    def __iter__(self) -> Iterator[tuple]:
        if self._plain is not None:
            yield from self._plain
            return
        for i in range(len(self._cols[0])):
            yield self._row(i)

    def __setitem__(self, i, value) -> None:  # type: ignore[override]
        if isinstance(i, slice) or not self._fits(value):
            self._to_plain()[i] = value
            return
        if self._plain is not None:
            self._plain[i] = value
            return
        for c, v in zip(self._cols, self._encode(value), strict=True):
            c[i] = v

    def __delitem__(self, i) -> None:  # type: ignore[override]
        if self._plain is not None:
            del self._plain[i]
            return
        for c in self._cols:
            del c[i]

    def insert(self, i: int, value: tuple) -> None:
        if self._plain is not None or not self._fits(value):
            self._to_plain().insert(i, value)
            return
        for c, v in zip(self._cols, self._encode(value), strict=True):
            c.insert(i, v)

    def add_message(self, line: int, kind: str, actor: str | None, text: str) -> None:
        """``append((line, kind, actor, text))`` of a message without making the tuple (the
        builder's one call per message)."""
        if (self._plain is None and self._spec is MESSAGE and type(line) is int and _LO <= line < _HI
                and type(kind) is str and (actor is None or type(actor) is str)):
            ix = self._ix
            k, a = ix.get(kind), ix.get(actor)
            c = self._cols
            c[0].append(line)
            c[1].append(self._name(kind) if k is None else k)
            c[2].append(self._name(actor) if a is None else a)
            c[3].append(text)
        else:
            self.append((line, kind, actor, text))

    def message_adder(self):
        """:meth:`add_message`, as a function with the columns' appends bound (the builder's one
        call per message); it goes on working after the rows turned into a plain list."""
        if self._spec is not MESSAGE or self._plain is not None:
            return self.add_message
        ix, name = self._ix, self._name
        lines, kinds, actors, texts = (c.append for c in self._cols)

        def add(line: int, kind: str, actor: str | None, text: str) -> None:
            if (self._plain is None and type(line) is int and _LO <= line < _HI and type(kind) is str
                    and (actor is None or type(actor) is str)):
                k, a = ix.get(kind), ix.get(actor)
                lines(line)
                kinds(name(kind) if k is None else k)
                actors(name(actor) if a is None else a)
                texts(text)
            else:
                self.append((line, kind, actor, text))

        return add

    def add_note(self, line: int, text: str) -> None:
        """``append((line, text))`` of a note without making the tuple."""
        if self._plain is None and self._spec is NOTE and type(line) is int and _LO <= line < _HI:
            c = self._cols
            c[0].append(line)
            c[1].append(text)
        else:
            self.append((line, text))

    def append(self, value: tuple) -> None:
        if self._plain is None and self._fits(value):
            for c, v in zip(self._cols, self._encode(value), strict=True):
                c.append(v)
        else:
            self._to_plain().append(value)

    def extend(self, values: Iterable[tuple]) -> None:
        for v in list(values) if values is self else values:
            self.append(v)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return repr(list(self))

    def __copy__(self) -> Rows:
        return Rows(self._spec, self)

    def __deepcopy__(self, memo: dict) -> Rows:
        return Rows(self._spec, copy.deepcopy(list(self), memo))

    def __reduce__(self):
        return (Rows, (self._spec, list(self)))


MESSAGE = (INT, NAME, NAME, OBJ)  # run.messages: (line, kind, actor, text)
NOTE = (INT, OBJ)  # run.notes: (line, text)


def messages(rows: Iterable[tuple] = ()) -> Rows:
    return Rows(MESSAGE, rows)


def notes(rows: Iterable[tuple] = ()) -> Rows:
    return Rows(NOTE, rows)
