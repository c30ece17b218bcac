"""Files changed in place by a shell command: ``sed -i``, ``perl -pi``, ``awk -i inplace``, unified
diffs (``patch`` / ``git apply`` of a heredoc, or of a diff file written earlier in the trace) and
Python scripts (``python3 - <<'PY' ... PY``, ``python -c "..."``) that read a file, change it and
write it back.

Nothing here runs trace code: Python scripts are parsed, and a few shapes understood, by
:mod:`ktui.trace.importers.inplace_python`. sed / perl ``s/pattern/replacement/flags``
expressions are applied line by line, as the tools do.

Each change is a :class:`~ktui.trace.importers.change.Change`: the path, and either a function
that computes the new content from the old one (``None`` when the old content is needed but the
change cannot be replayed: the file is "modified in place, content unknown"), or the whole new
content.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator

from ktui.trace.importers.change import Apply, Change
from ktui.trace.importers.inplace_python import python_changes
from ktui.trace.importers.patches import apply_hunks

_PATCH_HEREDOC = re.compile(r"(?:^|[\s;&|(])(?:patch|git\s+apply)\b[^\n<]*<<-?\s*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z_][\w.-]*))")
_PATCH_FILE = re.compile(r"(?:^|[\s;&|(])(?:patch\b[^\n<|;&]*<\s*|git\s+apply\s+(?:-\S+\s+)*)([^\s;&|<>]+)")
_PY_HEREDOC = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?python[\d.]*\b[^\n<]*<<-?\s*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z_][\w.-]*))")
_PY_C = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?python[\d.]*\s+(?:-\w+\s+)*-c\s")
_TOOLS = ("sed", "perl", "awk", "gawk", "python", "patch", "git")


def changes(command: str) -> list[Change]:
    """The in-place changes a shell command makes, in order."""
    if not isinstance(command, str) or not command or not any(t in command for t in _TOOLS):
        return []
    out: list[Change] = []
    body_spans: list[tuple[int, int]] = []
    if "patch" in command or "apply" in command:
        for body in _heredoc_bodies(command, _PATCH_HEREDOC, body_spans):
            out += diff_changes(body)
    if "python" in command:
        for body in _heredoc_bodies(command, _PY_HEREDOC, body_spans):
            out += python_changes(body)
    rest = _outside(command, body_spans)
    for ln in _logical_lines(rest):
        if "python" in ln and _PY_C.search(ln):
            out += _python_c(ln)
        if "sed" in ln or "perl" in ln or "awk" in ln:
            out += _stream_editors(ln)
    return out


def _heredoc_bodies(command: str, pattern: re.Pattern[str], spans: list[tuple[int, int]]) -> Iterator[str]:
    """The bodies of the heredocs ``pattern`` opens in ``command``; each body's span is added to
    ``spans`` (the rest of the command is read apart from them)."""
    for m in pattern.finditer(command):
        delim = m.group(1) or m.group(2) or m.group(3)
        start = command.find("\n", m.end())
        if start < 0:
            continue
        start += 1
        end = _heredoc_end(command, start, delim)
        spans.append((start, end))
        yield command[start:end]


def _heredoc_end(command: str, start: int, delim: str) -> int:
    pos = start
    while pos <= len(command):
        nl = command.find("\n", pos)
        cur = command[pos: nl if nl >= 0 else len(command)]
        if cur.strip() == delim:
            return pos
        if nl < 0:
            break
        pos = nl + 1
    return len(command)


def _outside(command: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return command
    parts, pos = [], 0
    for a, b in sorted(spans):
        parts.append(command[pos:a])
        pos = b
    parts.append(command[pos:])
    return "".join(parts)


def _logical_lines(text: str) -> list[str]:
    return [ln for ln in text.replace("\\\n", " ").split("\n") if ln.strip()]


def _words(line: str) -> list[str] | None:
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lex.whitespace_split = True
        lex.commenters = ""
        return list(lex)
    except ValueError:
        return None


def _commands(line: str) -> list[list[str]]:
    words = _words(line)
    if words is None:
        return []
    cmds: list[list[str]] = [[]]
    for w in words:
        if w and all(ch in ";&|()<>" for ch in w):
            cmds.append([])
        else:
            cmds[-1].append(w)
    return [c for c in cmds if c]


def diff_files(command: str) -> list[str]:
    """Diff files a command applies (``patch -p1 < fix.diff``, ``git apply fix.diff``): their
    content may be in the trace (written earlier)."""
    if "patch" not in command and "apply" not in command:
        return []
    return [m.group(1) for m in _PATCH_FILE.finditer(command) if not m.group(1).startswith("-")]


# ---- unified diffs (patch, git apply) --------------------------------------------------------------
def _strip(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path


def diff_changes(diff: str) -> list[Change]:
    """A unified diff's changes, one per file: hunks applied to the file's last known content
    (context lines matched, not line numbers), a new file (``--- /dev/null``) written whole."""
    if not isinstance(diff, str) or "@@" not in diff:
        return []
    out: list[Change] = []
    lines = diff.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old_path, new_path = _strip(lines[i][4:]), _strip(lines[i + 1][4:])
            i += 2
            body: list[str] = []
            while i < len(lines) and not (lines[i].startswith("--- ") and i + 1 < len(lines)
                                          and lines[i + 1].startswith("+++ ")) and not lines[i].startswith("diff "):
                ln = lines[i]
                if ln.startswith("@@"):
                    body.append("@@")
                elif ln[:1] in (" ", "+", "-") or ln == "":
                    body.append(ln if ln else " ")
                i += 1
            while body and body[-1] == " ":
                body.pop()
            if new_path == "/dev/null":
                continue
            if old_path == "/dev/null":
                added = [ln[1:] for ln in body if ln.startswith("+")]
                out.append(Change(new_path, "patch (new file)", whole="\n".join(added) + ("\n" if added else "")))
            else:
                out.append(Change(new_path, "patch", _hunks(body)))
            continue
        i += 1
    return out


def _hunks(body: list[str]) -> Apply:
    def apply(old: str) -> str:
        new, err = apply_hunks(old, body)
        if err:
            raise ValueError(err)
        return new
    return apply


# ---- sed / perl / awk -------------------------------------------------------------------------------
def _stream_editors(line: str) -> list[Change]:
    out: list[Change] = []
    for words in _commands(line):
        while words and (words[0] in ("sudo", "command", "env") or "=" in words[0] and not words[0].startswith("-")):
            words = words[1:]
        if not words:
            continue
        tool = words[0].rsplit("/", 1)[-1]
        if tool in ("sed", "gsed"):
            out += _sed(words[1:])
        elif tool == "perl":
            out += _perl(words[1:])
        elif tool in ("awk", "gawk") and "inplace" in words:
            files = [w for w in words[1:] if not w.startswith("-") and w != "inplace"][1:]
            out += [Change(f, "awk -i inplace") for f in files]
    return out


def _sed(args: list[str]) -> list[Change]:
    inplace, ere = False, False
    scripts: list[str] = []
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a.startswith("--in-place"):
            inplace = True
        elif a in ("-E", "-r", "--regexp-extended"):
            ere = True
        elif a.startswith("-") and len(a) > 1 and not a.startswith("--"):
            flags = a[1:]
            if "i" in flags:
                inplace = True
                # -i.bak: the rest is a suffix; -Ei / -ni: other flags; BSD: -i '' (empty suffix)
                if flags.endswith("i") and i + 1 < len(args) and args[i + 1] == "":
                    i += 1
                flags = flags.split("i", 1)[0]
            if "E" in flags or "r" in flags:
                ere = True
            if "n" in flags:
                return [Change(f, "sed -n -i") for f in files] if inplace else []
            if "e" in flags and i + 1 < len(args):
                scripts.append(args[i + 1])
                i += 2
                continue
        elif not scripts:
            scripts.append(a)
        else:
            files.append(a)
        i += 1
    if not inplace or not files:
        return []
    fn = _sed_program(";".join(scripts), ere)
    return [Change(f, "sed -i", fn) for f in files]


def _split_subst(expr: str) -> tuple[str, str, str, str] | None:
    """``s<d>pat<d>rep<d>flags`` -> (pat, rep, flags, rest)."""
    if len(expr) < 4 or expr[0] != "s":
        return None
    d = expr[1]
    if d.isalnum() or d in "\\\n ":
        return None
    parts: list[str] = []
    cur: list[str] = []
    i = 2
    while i < len(expr) and len(parts) < 2:
        ch = expr[i]
        if ch == "\\" and i + 1 < len(expr):
            nxt = expr[i + 1]
            cur.append(nxt if nxt == d else ch + nxt)
            i += 2
            continue
        if ch == d:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if len(parts) < 2:
        return None
    m = re.match(r"[gIip0-9]*", expr[i:])
    flags = m.group(0) if m else ""
    return parts[0], parts[1], flags, expr[i + len(flags):]


def _bre_to_py(pat: str) -> str:
    out, i = [], 0
    while i < len(pat):
        ch = pat[i]
        if ch == "\\" and i + 1 < len(pat):
            nxt = pat[i + 1]
            out.append(nxt if nxt in "(){}+?|" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + ch if ch in "(){}+?|" else ch)
        i += 1
    return "".join(out)


def _repl(rep: str, amp: bool) -> Callable[[re.Match], str]:
    def fn(m: re.Match) -> str:
        out, i = [], 0
        while i < len(rep):
            ch = rep[i]
            if ch == "\\" and i + 1 < len(rep):
                nxt = rep[i + 1]
                if nxt.isdigit():
                    out.append(m.group(int(nxt)) or "")
                elif nxt == "n":
                    out.append("\n")
                elif nxt == "t":
                    out.append("\t")
                else:
                    out.append(nxt)
                i += 2
                continue
            if ch == "&" and amp:
                out.append(m.group(0))
            elif ch == "$" and not amp and i + 1 < len(rep) and rep[i + 1].isdigit():
                out.append(m.group(int(rep[i + 1])) or "")
                i += 2
                continue
            else:
                out.append(ch)
            i += 1
        return "".join(out)
    return fn


# patterns ktui will not run on trace content: a quantified group holding a quantifier (the
# catastrophic-backtracking shapes, e.g. (a+)+), backreferences, lookarounds; and replay stops on
# content beyond this size
_RISKY = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*[+*{]|\\[1-9]|\(\?[=!<]")
MAX_REPLAY = 4 << 20


def _subst_program(text: str, ere: bool, perl: bool) -> Apply | None:
    """A program of ``s///`` commands (separated by ``;`` or newlines) as a line-by-line function;
    None when it holds anything else."""
    steps: list[tuple[re.Pattern, Callable[[re.Match], str], int]] = []
    rest = text.strip()
    while rest:
        got = _split_subst(rest)
        if got is None:
            return None
        pat, rep, flags, rest = got
        rest = rest.strip()
        if rest.startswith((";", "\n")):
            rest = rest[1:].strip()
        elif rest:
            return None
        py = pat if (ere or perl) else _bre_to_py(pat)
        if len(py) > 2000 or _RISKY.search(py):
            return None
        try:
            rx = re.compile(py, re.I if ("I" in flags or "i" in flags) else 0)
        except (re.error, RecursionError, OverflowError):
            return None
        nums = re.findall(r"\d+", flags)
        if nums:
            return None  # "replace the n-th match": not replayed
        steps.append((rx, _repl(rep, amp=not perl), 0 if "g" in flags else 1))
    if not steps:
        return None

    def apply(old: str) -> str:
        if len(old) > MAX_REPLAY:
            raise ValueError("too large to replay")
        lines = old.split("\n")
        for k, ln in enumerate(lines):
            for rx, fn, count in steps:
                ln = rx.sub(fn, ln, count=count)
            lines[k] = ln
        return "\n".join(lines)
    return apply


def _sed_program(text: str, ere: bool) -> Apply | None:
    return _subst_program(text, ere, perl=False)


def _perl(args: list[str]) -> list[Change]:
    inplace, looping = False, False
    scripts: list[str] = []
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and not files:
            flags = a[1:]
            if "i" in flags:
                inplace = True
            if "p" in flags or "n" in flags:
                looping = looping or "p" in flags
            if flags.endswith("e") and i + 1 < len(args):
                scripts.append(args[i + 1])
                i += 2
                continue
        elif scripts:
            files.append(a)
        i += 1
    if not inplace or not files:
        return []
    fn = _subst_program(";".join(scripts), ere=True, perl=True) if looping else None
    return [Change(f, "perl -i", fn) for f in files]


# ---- Python ---------------------------------------------------------------------------------------
def _python_c(line: str) -> list[Change]:
    words = _words(line)
    if not words:
        return []
    for k, w in enumerate(words):
        if w == "-c" and k + 1 < len(words) and k > 0 and "python" in words[k - 1].rsplit("/", 1)[-1]:
            return python_changes(words[k + 1])
    return []
