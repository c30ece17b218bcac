"""Runs addressed inside one file: ``PATH#KEY``.

Most formats hold one run a file; some hold many (a harness that writes one results file per
configuration, every problem's turns in it). An importer that reads such a file says which runs it
holds (their keys, :mod:`ktui.trace.importers.contract`), and each run is addressed as
``PATH#KEY``: the file's path, ``#``, the run's key (``L1/P2``). Every command that takes a
trace takes an address.

A path may itself contain ``#``: a string that names an existing file is that file, whole; else
the part before the last ``#`` is tried as the file. Nothing here reads a file's content.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SEP = "#"


@dataclass(frozen=True, slots=True)
class Address:
    path: str  # the file
    key: str | None = None  # the run inside it (None: the file as a whole)

    def __str__(self) -> str:
        return join(self.path, self.key)


def join(path: str, key: str | None) -> str:
    return path if key is None else f"{path}{SEP}{key}"


def split(text: str | os.PathLike[str]) -> Address:
    """The file and the key an address names. ``PATH`` that exists (even with ``#`` in it) is
    the file itself; ``PATH#KEY`` whose ``PATH`` exists is a run inside it; anything else is
    left whole (the caller says the file does not exist)."""
    s = os.fspath(text)
    if SEP not in s or os.path.lexists(s):
        return Address(s)
    path, key = s.rsplit(SEP, 1)
    if path and key and os.path.lexists(path):
        return Address(path, key)
    return Address(s)


def key_of(text: str | os.PathLike[str]) -> str | None:
    return split(text).key


__all__ = ["SEP", "Address", "join", "key_of", "split"]
