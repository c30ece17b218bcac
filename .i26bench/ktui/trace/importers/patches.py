"""Patches applied to a file's last known content: Codex ``apply_patch`` bodies (``*** Begin Patch``
... ``*** Update File:`` hunks, applied the way the tool does) and unified-diff hunks (``patch`` /
``git apply``, :mod:`ktui.trace.importers.inplace`). Pure functions over strings.
"""

from __future__ import annotations


# ---- apply_patch -------------------------------------------------------------------------------
def parse_patch(text: str) -> list[tuple[str, str, list[str], str | None]]:
    """``*** Begin Patch`` ... ``*** End Patch`` into (op, path, body lines, move-to) tuples."""
    ops: list[tuple[str, str, list[str], str | None]] = []
    if not isinstance(text, str):
        return ops
    cur: list | None = None
    for ln in text.split("\n"):
        if ln.startswith("*** Add File: "):
            cur = ["add", ln[len("*** Add File: "):].strip(), [], None]
            ops.append(cur)
        elif ln.startswith("*** Update File: "):
            cur = ["update", ln[len("*** Update File: "):].strip(), [], None]
            ops.append(cur)
        elif ln.startswith("*** Delete File: "):
            cur = ["delete", ln[len("*** Delete File: "):].strip(), [], None]
            ops.append(cur)
            cur = None
        elif ln.startswith("*** Move to: ") and cur is not None:
            cur[3] = ln[len("*** Move to: "):].strip()
        elif ln.startswith("*** End Patch") or ln.startswith("*** Begin Patch") or ln == "*** End of File":
            if ln.startswith("*** End Patch"):
                cur = None
        elif cur is not None:
            cur[2].append(ln)
    return [tuple(o) for o in ops]  # type: ignore[misc]


def split_hunks(body: list[str]) -> list[list[str]]:
    hunks: list[list[str]] = [[]]
    for ln in body:
        if ln.startswith("@@"):
            if hunks[-1]:
                hunks.append([])
            continue
        hunks[-1].append(ln)
    return [h for h in hunks if h]


def body_text(lines: list[str], add: bool) -> str:
    """An Add File body (every line '+'), or the new side of a hunk."""
    out = []
    for ln in lines:
        if ln.startswith("+"):
            out.append(ln[1:])
        elif not add and ln.startswith(" "):
            out.append(ln[1:])
        elif not add and ln == "":
            out.append("")
    text = "\n".join(out)
    return text + "\n" if add and out else text


def _find(lines: list[str], seq: list[str], start: int) -> int:
    if not seq:
        return start
    n = len(seq)
    for norm in (lambda s: s, lambda s: s.rstrip(), lambda s: s.strip()):
        want = [norm(s) for s in seq]
        for i in range(start, len(lines) - n + 1):
            if norm(lines[i]) == want[0] and [norm(x) for x in lines[i:i + n]] == want:
                return i
    return -1


# Codex's seek_sequence also matches lines whose typographic punctuation differs (fancy dashes,
# quotes and spaces read as their ASCII forms)
_PUNCT = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"}
                       | {c: "'" for c in "\u2018\u2019\u201a\u201b"}
                       | {c: '"' for c in "\u201c\u201d\u201e\u201f"}
                       | {c: " " for c in "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                                          "\u202f\u205f\u3000"})


def _seek(lines: list[str], seq: list[str], start: int, eof: bool = False) -> int:
    """Where ``seq`` starts in ``lines`` at or after ``start`` (Codex's seek_sequence: exact, then
    ignoring trailing, then surrounding whitespace, then typographic punctuation; an end-of-file
    chunk is looked for at the end first); -1 if nowhere."""
    if not seq:
        return start
    n = len(seq)
    if n > len(lines):
        return -1
    for norm in (lambda x: x, lambda x: x.rstrip(), lambda x: x.strip(), lambda x: x.strip().translate(_PUNCT)):
        want = [norm(x) for x in seq]
        if eof and [norm(x) for x in lines[len(lines) - n:]] == want and len(lines) - n >= start:
            return len(lines) - n
        for i in range(start, len(lines) - n + 1):
            if norm(lines[i]) == want[0] and [norm(x) for x in lines[i:i + n]] == want:
                return i
    return -1


def codex_chunks(body: list[str]) -> list[tuple[str | None, list[str], list[str], bool]]:
    """An apply_patch Update File body as Codex parses it: chunks of (``@@ anchor`` line or None,
    old lines, new lines, ends at ``*** End of File``)."""
    chunks: list[list] = []
    cur: list | None = None
    for ln in body:
        if ln.startswith("@@"):
            ctx = ln[2:].strip() if ln[2:3] == " " else ""
            cur = [ctx or None, [], [], False]
            chunks.append(cur)
            continue
        if ln == "*** End of File":
            if cur is not None:
                cur[3] = True
            continue
        if cur is None:  # a first chunk without '@@'
            cur = [None, [], [], False]
            chunks.append(cur)
        if ln.startswith("+"):
            cur[2].append(ln[1:])
        elif ln.startswith("-"):
            cur[1].append(ln[1:])
        else:  # context: ' ' + text, or an empty line
            cur[1].append(ln[1:] if ln.startswith(" ") else ln)
            cur[2].append(ln[1:] if ln.startswith(" ") else ln)
    return [(c[0], c[1], c[2], c[3]) for c in chunks if c[0] is not None or c[1] or c[2]]


def apply_codex_patch(base: str, body: list[str]) -> tuple[str, str | None]:
    """Apply a Codex ``apply_patch`` Update File body to ``base`` the way the tool does
    (codex-rs apply-patch ``compute_replacements``): an ``@@ anchor`` line moves the search past the
    line it names; a chunk with no old lines (additions only) goes at the end of the file; old lines
    are looked for from the end of the previous chunk on (then, leniently, from the top); the file
    ends with a newline. (new text, None) or (base, why not)."""
    lines = base.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    reps: list[tuple[int, int, list[str]]] = []
    at = 0
    for ctx, old, new, eof in codex_chunks(body):
        if ctx is not None:
            i = _seek(lines, [ctx], at)
            if i < 0:
                i = _seek(lines, [ctx], 0)
            if i < 0:
                return base, f"the '@@ {excerpt_line(ctx)}' line is not in the last known content"
            at = i + 1
        if not old:
            reps.append((len(lines) - 1 if lines and lines[-1] == "" else len(lines), 0, new))
            continue
        i = _seek(lines, old, at, eof)
        if i < 0 and old[-1] == "":
            old, new = old[:-1], (new[:-1] if new and new[-1] == "" else new)
            i = _seek(lines, old, at, eof)
        if i < 0:
            i = _seek(lines, old, 0, eof)
        if i < 0:
            return base, "a hunk's context is not in the last known content"
        reps.append((i, len(old), new))
        at = i + len(old)
    for i, n, new in sorted(reps, key=lambda r: r[0], reverse=True):
        lines[i:i + n] = new
    return "\n".join(lines) + "\n", None


def excerpt_line(s: str, n: int = 40) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"


def apply_hunks(base: str, body: list[str]) -> tuple[str, str | None]:
    """Apply an Update File body to ``base``; (new text, None) or (base, why not)."""
    trailing_nl = base.endswith("\n")
    lines = base.split("\n")
    if trailing_nl:
        lines.pop()
    pos = 0
    for h in split_hunks(body):
        old = [ln[1:] if ln[:1] in (" ", "-") else ln for ln in h if not ln.startswith("+")]
        new = [ln[1:] if ln[:1] in (" ", "+") else ln for ln in h if not ln.startswith("-")]
        i = _find(lines, old, pos)
        if i < 0:
            i = _find(lines, old, 0)
        if i < 0:
            return base, "a hunk's context is not in the last known content"
        lines[i:i + len(old)] = new
        pos = i + len(new)
    text = "\n".join(lines)
    return (text + "\n" if trailing_nl else text), None
