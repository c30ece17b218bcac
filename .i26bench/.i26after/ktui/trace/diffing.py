"""Line diffs of kernel sources, on difflib. Pure: no Rich, no Textual.

Everything here works on plain strings and returns plain data, so the same diff feeds
``ktui show`` (sizes), ``ktui diff`` (Rich rendering in :mod:`ktui.report.render_diff`) and the
replay app's Kernels pane.

- :func:`diff_stats` -> ``(added, removed)`` line counts.
- :func:`unified_lines` -> a list of :class:`DiffLine` (hunk headers, context, removed, added), with
  intra-line change spans on paired removed/added lines.
- :func:`split_rows` -> a list of :class:`SplitRow` for a side-by-side view (old left, new right).
- :func:`unified_text` -> the classic ``diff -u`` text, for pipes.
- :func:`intraline_spans` -> the changed character ranges of two similar lines.

Line numbers are 1-based. Lines are compared without their line endings; a missing final newline
is not a difference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

Span = tuple[int, int]  # [start, end) character offsets in one line

# kinds of DiffLine
HUNK = "hunk"
CONTEXT = "context"
ADDED = "added"
REMOVED = "removed"

# kinds of SplitRow
EQUAL = "equal"
CHANGED = "changed"  # a removed line beside an added line
DELETED = "deleted"  # left only
INSERTED = "inserted"  # right only

# Lines with a similarity ratio below this are shown as a plain removal + addition, without spans.
PAIR_RATIO = 0.4

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # HUNK | CONTEXT | ADDED | REMOVED
    text: str  # the line (for HUNK: "@@ -a,b +c,d @@")
    old_no: int | None = None
    new_no: int | None = None
    spans: tuple[Span, ...] = ()  # changed ranges inside text (ADDED / REMOVED only)

    @property
    def prefix(self) -> str:
        return {ADDED: "+", REMOVED: "-", CONTEXT: " "}.get(self.kind, "")


@dataclass(frozen=True, slots=True)
class SplitRow:
    kind: str  # HUNK | EQUAL | CHANGED | DELETED | INSERTED
    left: str | None = None
    right: str | None = None
    left_no: int | None = None
    right_no: int | None = None
    left_spans: tuple[Span, ...] = ()
    right_spans: tuple[Span, ...] = ()
    text: str = ""  # for HUNK rows: "@@ -a,b +c,d @@"


def split_lines(s: str | None) -> list[str]:
    """The lines of ``s`` without line endings ('' and None give no lines)."""
    if not s:
        return []
    return s.splitlines()


def _matcher(a: list[str], b: list[str]) -> SequenceMatcher:
    # autojunk (difflib's default): in files of 200+ lines, lines that occur very often ("}", blank)
    # do not anchor matches. 50x faster on 2,000-line kernels, and such lines still join the
    # matching blocks around them, so the diffs come out the same in practice.
    return SequenceMatcher(None, a, b)


def diff_stats(a: str | None, b: str | None) -> tuple[int, int]:
    """``(added, removed)``: how many lines ``b`` adds to and removes from ``a``."""
    la, lb = split_lines(a), split_lines(b)
    if la == lb:
        return (0, 0)
    added = removed = 0
    for tag, i1, i2, j1, j2 in _matcher(la, lb).get_opcodes():
        if tag == "equal":
            continue
        removed += i2 - i1
        added += j2 - j1
    return (added, removed)


def is_identical(a: str | None, b: str | None) -> bool:
    return split_lines(a) == split_lines(b)


# ---------------------------------------------------------------------------------------------
# intra-line spans


def _tokens(s: str) -> list[str]:
    return _TOKEN.findall(s)


def _merge(spans: list[Span]) -> tuple[Span, ...]:
    out: list[Span] = []
    for s, e in spans:
        if s >= e:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return tuple(out)


def intraline_spans(old: str, new: str) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """The changed character ranges of ``old`` and of ``new``, found on word/punctuation tokens.

    ``int p = perm[j];`` vs ``int64_t p = perm[j];`` gives ``((0, 3),)`` and ``((0, 7),)``.
    """
    ta, tb = _tokens(old), _tokens(new)
    # token start offsets
    oa = [0]
    for t in ta:
        oa.append(oa[-1] + len(t))
    ob = [0]
    for t in tb:
        ob.append(ob[-1] + len(t))
    sa: list[Span] = []
    sb: list[Span] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            sa.append((oa[i1], oa[i2]))
        if j2 > j1:
            sb.append((ob[j1], ob[j2]))
    return _merge(sa), _merge(sb)


def _similar(a: str, b: str) -> bool:
    if not a.strip() or not b.strip():
        return False
    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= PAIR_RATIO


def _pairs(old: list[str], new: list[str]) -> list[tuple[int | None, int | None]]:
    """Align a replaced block: pair lines in order where they are similar, the rest alone.

    Returns ``(i, j)`` index pairs into ``old`` / ``new``; ``None`` on one side for an unpaired line.
    Keeps both sides in order.
    """
    out: list[tuple[int | None, int | None]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        if _similar(old[i], new[j]):
            out.append((i, j))
            i += 1
            j += 1
            continue
        # look a little ahead for a better partner on either side
        ahead_new = next((k for k in range(j + 1, min(len(new), j + 4)) if _similar(old[i], new[k])), None)
        ahead_old = next((k for k in range(i + 1, min(len(old), i + 4)) if _similar(old[k], new[j])), None)
        if ahead_new is not None and (ahead_old is None or ahead_new - j <= ahead_old - i):
            while j < ahead_new:
                out.append((None, j))
                j += 1
        elif ahead_old is not None:
            while i < ahead_old:
                out.append((i, None))
                i += 1
        else:
            out.append((i, j))  # dissimilar: shown side by side, without spans
            i += 1
            j += 1
    while i < len(old):
        out.append((i, None))
        i += 1
    while j < len(new):
        out.append((None, j))
        j += 1
    return out


def _hunk_header(group: list[tuple[str, int, int, int, int]]) -> str:
    i1, j1 = group[0][1], group[0][3]
    i2, j2 = group[-1][2], group[-1][4]

    def rng(start: int, stop: int) -> str:
        n = stop - start
        first = start + 1 if n else start
        return f"{first}" if n == 1 else f"{first},{n}"

    return f"@@ -{rng(i1, i2)} +{rng(j1, j2)} @@"


def _groups(la: list[str], lb: list[str], context: int | None):
    m = _matcher(la, lb)
    if context is None:  # the whole file as one group
        ops = m.get_opcodes()
        return [ops] if ops and not (len(ops) == 1 and ops[0][0] == "equal" and not la) else []
    return list(m.get_grouped_opcodes(max(0, context)))


# ---------------------------------------------------------------------------------------------
# unified


def unified_lines(a: str | None, b: str | None, context: int | None = 3,
                  intraline: bool = True) -> list[DiffLine]:
    """The unified diff of ``a`` -> ``b`` as :class:`DiffLine` rows (empty when identical).

    ``context=None`` keeps the whole file (one hunk).
    """
    la, lb = split_lines(a), split_lines(b)
    if la == lb:
        return []
    out: list[DiffLine] = []
    for group in _groups(la, lb, context):
        out.append(DiffLine(HUNK, _hunk_header(group)))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    out.append(DiffLine(CONTEXT, la[i1 + k], i1 + k + 1, j1 + k + 1))
                continue
            old, new = la[i1:i2], lb[j1:j2]
            spans_old: dict[int, tuple[Span, ...]] = {}
            spans_new: dict[int, tuple[Span, ...]] = {}
            if intraline and tag == "replace":
                for pi, pj in _pairs(old, new):
                    if pi is not None and pj is not None and _similar(old[pi], new[pj]):
                        spans_old[pi], spans_new[pj] = intraline_spans(old[pi], new[pj])
            for k, line in enumerate(old):
                out.append(DiffLine(REMOVED, line, i1 + k + 1, None, spans_old.get(k, ())))
            for k, line in enumerate(new):
                out.append(DiffLine(ADDED, line, None, j1 + k + 1, spans_new.get(k, ())))
    return out


def unified_text(a: str | None, b: str | None, label_a: str = "a", label_b: str = "b",
                 context: int = 3) -> str:
    """Classic ``diff -u`` text ('' when identical), ending with a newline."""
    rows = unified_lines(a, b, context=context, intraline=False)
    if not rows:
        return ""
    parts = [f"--- {label_a}", f"+++ {label_b}"]
    for r in rows:
        parts.append(r.text if r.kind == HUNK else r.prefix + r.text)
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# side by side


def split_rows(a: str | None, b: str | None, context: int | None = 3,
               intraline: bool = True) -> list[SplitRow]:
    """Side-by-side rows of ``a`` (left) -> ``b`` (right); empty when identical.

    A replaced block pairs similar lines on one row (``CHANGED``, with spans); the rest of the
    block gets rows with one side empty.
    """
    la, lb = split_lines(a), split_lines(b)
    if la == lb:
        return []
    out: list[SplitRow] = []
    for group in _groups(la, lb, context):
        out.append(SplitRow(HUNK, text=_hunk_header(group)))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    out.append(SplitRow(EQUAL, la[i1 + k], lb[j1 + k], i1 + k + 1, j1 + k + 1))
            elif tag == "delete":
                for k in range(i2 - i1):
                    out.append(SplitRow(DELETED, la[i1 + k], None, i1 + k + 1, None))
            elif tag == "insert":
                for k in range(j2 - j1):
                    out.append(SplitRow(INSERTED, None, lb[j1 + k], None, j1 + k + 1))
            else:
                old, new = la[i1:i2], lb[j1:j2]
                for pi, pj in _pairs(old, new):
                    if pi is not None and pj is not None:
                        ls: tuple[Span, ...] = ()
                        rs: tuple[Span, ...] = ()
                        if intraline and _similar(old[pi], new[pj]):
                            ls, rs = intraline_spans(old[pi], new[pj])
                        out.append(SplitRow(CHANGED, old[pi], new[pj], i1 + pi + 1, j1 + pj + 1, ls, rs))
                    elif pi is not None:
                        out.append(SplitRow(DELETED, old[pi], None, i1 + pi + 1, None))
                    else:
                        assert pj is not None
                        out.append(SplitRow(INSERTED, None, new[pj], None, j1 + pj + 1))
    return out
