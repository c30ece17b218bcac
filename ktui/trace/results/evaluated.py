"""Whether a harness's recorded error can be about the kernel version ktui rebuilt from the trace.

A harness may evaluate a file ktui never sees: a solution copied into a wrapper module, a file
of another name, the workspace at another moment. A Python syntax error is a property of the
text alone, so when the result file records one and the rebuilt version has no such error, the
record is about other code, and comparing it with a re-execution of this version would claim a
disagreement no one can stand behind. :func:`evaluated_other_code` says so, in words:

- the error names a line past this version's end (beyond the line after its last) (Python's ``"msg (FILE, line N)"``, or a
  traceback's ``File "FILE", line N`` under a ``SyntaxError``): the harness compiled other text;
- else the version parses here (same error class absent): the harness evaluated other code, or
  compiled it with another Python (the words say both).

No torch; nothing here raises on data (a hostile version that is too deep to parse is "may be").
"""

from __future__ import annotations

import ast
import re
import sys
import warnings

_SYNTAX = re.compile(r"\b(SyntaxError|IndentationError|TabError)\b")
_AT = re.compile(r"\(([^()\n]{1,300}), line (\d{1,9})\)")  # str(SyntaxError): "msg (file, line N)"
_FRAME = re.compile(r'File "([^"\n]{1,300})", line (\d{1,9})')
MAX_PARSE_CHARS = 2 << 20  # a larger version is not parsed here (never "about other code" then)


def _lines(code: str) -> int:
    return code.count("\n") + (0 if code.endswith("\n") else 1)


def _parses(code: str) -> bool | None:
    """True / False, or None when it cannot be told here (too large, too deep)."""
    if len(code) > MAX_PARSE_CHARS:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: warnings, not errors
            ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    except (RecursionError, MemoryError):
        return None
    return True


def names_syntax_error(error: str) -> bool:
    """Whether ``error`` records a Python syntax error (cheap: a kernel's code is read only then)."""
    return bool(error) and _SYNTAX.search(error[:8000]) is not None


def evaluated_other_code(error: str, code: str | None) -> str:
    """Why ``error`` (a harness's recorded error text) cannot be about ``code`` (the version ktui
    rebuilt), in words; "" when it may be (or says nothing that tells)."""
    if not error or not code:
        return ""
    head = error[:8000]
    m = _SYNTAX.search(head)
    if m is None:
        return ""
    cls = m.group(1)
    # the file it compiled: str(exc)'s "(file, line N)" after the class, else a traceback's last frame before it
    where = _AT.search(head, m.end()) or next(iter(reversed(list(_FRAME.finditer(head, 0, m.start())))), None)
    n = _lines(code)
    if where is not None and int(where.group(2)) > n + 1:  # an unexpected end of file may be line n + 1
        fname = where.group(1).strip()[:120]
        return (f"the harness recorded a {cls} at line {where.group(2)} of {fname}, and the version ktui rebuilt "
                f"from the trace has {n} lines: the harness evaluated other code than this version")
    if _parses(code):
        return (f"the harness recorded a {cls}, and the version ktui rebuilt from the trace parses here "
                f"(Python {sys.version_info.major}.{sys.version_info.minor}): the harness evaluated other code "
                f"than this version (or compiled it with another Python)")
    return ""
