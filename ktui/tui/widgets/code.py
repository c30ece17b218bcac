"""Lazy, per-line syntax highlighting of kernel code: Python, with the C++/CUDA inside
``load_inline`` source strings highlighted as CUDA.

Lexing a 2,000-line module with Pygments takes ~100-170 ms; a turn view must redraw in a few.
So each line is lexed on its own, when it comes into view, with the lexer of its region:

- lines strictly inside a triple-quoted string that looks like C/C++/CUDA -> the CUDA lexer;
- lines inside any other triple-quoted string (docstrings) -> string style;
- everything else -> the Python lexer.

The regions come from one cheap scan of the text. Multi-line constructs other than triple-quoted
strings (a ``/* */`` comment over several lines) lose their colour on continuation lines: an
acceptable price for constant-time redraws.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pygments.lexers import CudaLexer, JsonLexer, PythonLexer
from pygments.token import Token
from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme
from rich.text import Text

from ktui.report.render_diff import clean
from ktui.tui.widgets.docview import LineSource

PY, CUDA, STR, JSON, PLAIN = "python", "cuda", "str", "json", "plain"

_THEME = PygmentsSyntaxTheme("monokai")
_LEXERS = {
    PY: PythonLexer(stripnl=False, ensurenl=False),
    CUDA: CudaLexer(stripnl=False, ensurenl=False),
    JSON: JsonLexer(stripnl=False, ensurenl=False),
}
_TRIPLE = re.compile(r"('''|\"\"\")")
_C_HINT = re.compile(r"#include|__global__|__device__|torch::|\bvoid\b|\bint\s+\w+\s*[=;(]|<<<|;\s*$", re.M)
STRING_STYLE = Style(color="#e6db74")


@lru_cache(maxsize=512)
def _token_style(ttype) -> Style:
    st = _THEME.get_style_for_token(ttype)
    # no background: the view's own background shows through
    return Style(color=st.color, bold=st.bold, italic=st.italic, underline=st.underline)


def regions(lines: list[str]) -> list[str]:
    """The lexer kind of each line (see the module doc)."""
    kinds = [PY] * len(lines)
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        m = _TRIPLE.search(line)
        if not m:
            i += 1
            continue
        quote = m.group(1)
        rest = line[m.end():]
        if quote in rest:  # opens and closes on the same line
            i += 1
            continue
        # find the closing line
        j = i + 1
        while j < n and quote not in lines[j]:
            j += 1
        body = lines[i + 1:j]
        kind = CUDA if _C_HINT.search("\n".join(body[:200])) else STR
        for k in range(i + 1, min(j, n)):
            kinds[k] = kind
        i = j + 1
    return kinds


def highlight_line(line: str, kind: str) -> Text:
    if kind == PLAIN or not line:
        return Text(line, end="")
    if kind == STR:
        return Text(line, style=STRING_STYLE, end="")
    lexer = _LEXERS.get(kind)
    if lexer is None:
        return Text(line, end="")
    t = Text(end="")
    for ttype, value in lexer.get_tokens(line):
        if ttype is Token.Text or ttype is Token.Text.Whitespace:
            t.append(value)
        else:
            t.append(value, _token_style(ttype))
    # the lexer may add or drop a final newline
    if t.plain != line:
        return Text(line, end="")
    return t


class CodeLines(LineSource):
    """Lines of a code string, highlighted one at a time on demand (cached)."""

    def __init__(self, code: str, language: str = PY):
        self.code = clean(code)
        self.lines = self.code.splitlines() or [""]
        if language == PY:
            self.kinds = regions(self.lines)
        else:
            self.kinds = [language] * len(self.lines)
        self._cache: dict[int, Text] = {}

    def __len__(self) -> int:
        return len(self.lines)

    def plain(self, i: int) -> str:
        return self.lines[i]

    def text(self, i: int) -> Text:
        t = self._cache.get(i)
        if t is None:
            t = highlight_line(self.lines[i], self.kinds[i])
            self._cache[i] = t
        return t


_CODE_CACHE: dict[tuple[str, str], CodeLines] = {}


def code_lines(code: str, language: str = PY) -> CodeLines:
    """A shared :class:`CodeLines` per (code, language): kernels recur across turns."""
    key = (language, code)
    got = _CODE_CACHE.get(key)
    if got is None:
        if len(_CODE_CACHE) > 256:
            _CODE_CACHE.clear()
        got = _CODE_CACHE[key] = CodeLines(code, language)
    return got
