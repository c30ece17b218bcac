"""Fast, lazy, per-line syntax highlighting of kernel code: Python, with the C++/CUDA inside
``load_inline`` source strings highlighted as CUDA (and JSON for tool arguments).

Pygments needs ~100-170 ms for a 2,000-line module (and ~0.3 ms per line lexed alone); a turn
view must redraw in a few milliseconds. So lines are highlighted one at a time, when they come
into view, by one compiled regex per language (~20 us a line), with monokai's colours:

- lines strictly inside a triple-quoted string that looks like C/C++/CUDA -> CUDA rules;
- lines inside any other triple-quoted string (docstrings), and the closing-quote line -> string;
- everything else -> Python rules.

Multi-line constructs other than triple-quoted strings (a ``/* */`` comment over several lines)
lose their colour on continuation lines: the price of constant-time redraws.
"""

from __future__ import annotations

import keyword
import re

from rich.style import Style
from rich.text import Text

from ktui.report.render_diff import clean
from ktui.tui.widgets.docview import LineSource

PY, CUDA, STR, JSON, PLAIN = "python", "cuda", "str", "json", "plain"

# monokai
S_KEYWORD = Style(color="#66d9ef")
S_OPERATOR_KW = Style(color="#ff4689")  # import/from/return/if... are "Keyword" in Pygments' Python
S_STRING = Style(color="#e6db74")
S_NUMBER = Style(color="#ae81ff")
S_COMMENT = Style(color="#959077", italic=True)
S_FUNC = Style(color="#a6e22e")
S_TYPE = Style(color="#66d9ef", italic=True)
S_CUDA = Style(color="#fd971f", bold=True)
S_PREPROC = Style(color="#959077")
S_JSON_KEY = Style(color="#ff4689")
S_CONST = Style(color="#ae81ff")

_PY_KEYWORDS = set(keyword.kwlist) - {"True", "False", "None"}
_PY_BUILTINS = {"self", "cls", "super", "len", "range", "print", "int", "float", "str", "list", "dict",
                "tuple", "set", "isinstance", "getattr", "setattr", "hasattr", "min", "max", "sum", "abs",
                "enumerate", "zip", "map", "any", "all", "open", "type", "object", "Exception"}
_PY = re.compile(
    r"(?P<comment>#.*$)"
    r"|(?P<string>[rbfuRBFU]{0,2}(?:'''.*?(?:'''|$)|\"\"\".*?(?:\"\"\"|$)|'(?:\\.|[^'\\])*'?|\"(?:\\.|[^\"\\])*\"?))"
    r"|(?P<deco>@[\w.]+)"
    r"|(?P<defname>(?<=\bdef )\w+|(?<=\bclass )\w+)"
    r"|(?P<number>\b(?:0[xob][\da-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?)\b)"
    r"|(?P<word>[A-Za-z_]\w*)"
)
_C_KEYWORDS = {"if", "else", "for", "while", "do", "return", "break", "continue", "switch", "case", "default",
               "struct", "class", "template", "typename", "namespace", "using", "const", "constexpr", "static",
               "inline", "extern", "volatile", "auto", "sizeof", "new", "delete", "goto", "public", "private",
               "true", "false", "nullptr", "operator", "static_cast", "reinterpret_cast", "const_cast"}
_C_TYPES = {"void", "int", "float", "double", "char", "bool", "long", "short", "unsigned", "signed", "size_t",
            "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "half",
            "half2", "float2", "float4", "int2", "int4", "dim3", "__half", "__half2", "__nv_bfloat16",
            "__nv_bfloat162"}
_CUDA_WORDS = {"__global__", "__device__", "__host__", "__shared__", "__constant__", "__restrict__",
               "__forceinline__", "__launch_bounds__", "__syncthreads", "__syncwarp", "threadIdx", "blockIdx",
               "blockDim", "gridDim", "warpSize", "__shfl_sync", "__shfl_down_sync", "__shfl_xor_sync",
               "atomicAdd", "__ldg"}
_C = re.compile(
    r"(?P<comment>//.*$|/\*.*?(?:\*/|$))"
    r"|(?P<preproc>^\s*#\s*\w+.*$)"
    r"|(?P<string>\"(?:\\.|[^\"\\])*\"?|'(?:\\.|[^'\\])*'?)"
    r"|(?P<launch><<<|>>>)"
    r"|(?P<number>\b(?:0[xX][\da-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)[fFuUlL]*\b)"
    r"|(?P<func>[A-Za-z_]\w*(?=\s*(?:<[^<>()]*>)?\s*\())"
    r"|(?P<word>[A-Za-z_]\w*(?:::\w+)*)"
)
_JSON = re.compile(
    r"(?P<key>\"(?:\\.|[^\"\\])*\"(?=\s*:))"
    r"|(?P<string>\"(?:\\.|[^\"\\])*\"?)"
    r"|(?P<number>-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)"
    r"|(?P<const>\b(?:true|false|null)\b)"
)
_TRIPLE = re.compile(r"('''|\"\"\")")
_C_HINT = re.compile(r"#include|__global__|__device__|torch::|\bvoid\b|\bint\s+\w+\s*[=;(]|<<<|;\s*$", re.M)


def regions(lines: list[str]) -> list[str]:
    """The highlighting kind of each line (see the module doc)."""
    kinds = [PY] * len(lines)
    i = 0
    n = len(lines)
    while i < n:
        m = _TRIPLE.search(lines[i])
        if not m:
            i += 1
            continue
        quote = m.group(1)
        if quote in lines[i][m.end():]:  # opens and closes on the same line
            i += 1
            continue
        j = i + 1
        while j < n and quote not in lines[j]:
            j += 1
        body = lines[i + 1:j]
        kind = CUDA if _C_HINT.search("\n".join(body[:200])) else STR
        for k in range(i + 1, min(j, n)):
            kinds[k] = kind
        if j < n:
            kinds[j] = STR  # the closing quote's line
        i = j + 1
    return kinds


def _py_word(w: str) -> Style | None:
    if w in _PY_KEYWORDS:
        return S_OPERATOR_KW if w in ("import", "from", "return", "if", "elif", "else", "for", "while",
                                      "in", "not", "and", "or", "is", "raise", "try", "except", "finally",
                                      "with", "as", "assert", "yield", "break", "continue", "pass",
                                      "del", "await") else S_KEYWORD
    if w in ("True", "False", "None"):
        return S_KEYWORD
    if w in _PY_BUILTINS:
        return S_TYPE if w in ("self", "cls") else None
    return None


def _c_word(w: str) -> Style | None:
    if w in _CUDA_WORDS:
        return S_CUDA
    if w in _C_TYPES:
        return S_TYPE
    if w in _C_KEYWORDS:
        return S_KEYWORD
    if "::" in w:
        return S_TYPE if w.startswith(("torch::", "at::", "c10::", "std::")) else None
    return None


def highlight_line(line: str, kind: str) -> Text:
    """One line as a styled Text (the text itself is never changed)."""
    t = Text(line, end="")
    if not line or kind == PLAIN:
        return t
    if kind == STR:
        t.stylize(S_STRING)
        return t
    if kind == JSON:
        for m in _JSON.finditer(line):
            g = m.lastgroup
            style = {"key": S_JSON_KEY, "string": S_STRING, "number": S_NUMBER, "const": S_CONST}[g]
            t.stylize(style, m.start(), m.end())
        return t
    if kind == CUDA:
        for m in _C.finditer(line):
            g = m.lastgroup
            if g == "word":
                style = _c_word(m.group())
            elif g == "func":
                style = _c_word(m.group()) or S_FUNC
            else:
                style = {"comment": S_COMMENT, "preproc": S_PREPROC, "string": S_STRING, "launch": S_CUDA,
                         "number": S_NUMBER}[g]
            if style is not None:
                t.stylize(style, m.start(), m.end())
        return t
    for m in _PY.finditer(line):
        g = m.lastgroup
        if g == "word":
            style = _py_word(m.group())
        else:
            style = {"comment": S_COMMENT, "string": S_STRING, "deco": S_FUNC, "defname": S_FUNC,
                     "number": S_NUMBER}[g]
        if style is not None:
            t.stylize(style, m.start(), m.end())
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
            t = self._cache[i] = highlight_line(self.lines[i], self.kinds[i])
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
