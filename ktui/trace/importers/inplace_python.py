"""Files a Python script changes in place (``python3 - <<'PY' ... PY``, ``python -c "..."``; the
shell side is :mod:`ktui.trace.importers.inplace`).

Nothing here runs trace code: the script is parsed (``ast``) and only a few shapes are understood:
a path held in a string (or ``Path(...)``), the file read (``open(p).read()``,
``Path(p).read_text()``), ``.replace(old, new[, count])`` with literal strings (chained, or through
variables bound to literals), and the result written back (``open(p, 'w').write(s)``,
``Path(p).write_text(s)``, ``with open(p, 'w') as f: f.write(s)``), or a literal written whole.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from ktui.trace.importers.change import Apply, Change


class _Unknown(Exception):
    pass


@dataclass(slots=True)
class _Text:
    """A string value: a literal, or a file's content with replacements applied in order."""

    literal: str | None = None
    source: str | None = None  # the path it was read from
    steps: tuple[tuple[str, str, int], ...] = ()
    known: bool = True


_MAX_DEPTH = 120


def _too_deep(tree: ast.AST, limit: int = _MAX_DEPTH) -> bool:
    """Whether the script's syntax tree nests deeper than ``limit`` (walked without recursion)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in ast.iter_child_nodes(node))
    return False


def python_changes(src: str) -> list[Change]:
    """Files a Python script writes, and how."""
    if "write" not in src or len(src) > (8 << 20):
        return []
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError):
        return []
    if _too_deep(tree):  # decided here, not by whatever recursion limit the process has
        return []
    script = _Script()
    try:
        script.visit(tree.body)
    except (RecursionError, _Unknown):
        pass
    return script.out


class _Script:
    """The names a script binds (to a str path, a :class:`_Text` or ``("file", path, mode)``) as
    its statements are walked in order, and the changes its writes make."""

    def __init__(self) -> None:
        self.env: dict[str, object] = {}
        self.out: list[Change] = []

    # -- values
    def value(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _Text(literal=node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # 'a' + 'b'
            a, b = self.value(node.left), self.value(node.right)
            if isinstance(a, _Text) and isinstance(b, _Text) and a.literal is not None and b.literal is not None:
                return _Text(literal=a.literal + b.literal)
            raise _Unknown
        if isinstance(node, ast.Name):
            v = self.env.get(node.id)
            if v is None:
                raise _Unknown
            return v
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Unknown

    def _call(self, node: ast.Call) -> object:
        f = node.func
        # Path('x') / pathlib.Path('x')
        if (isinstance(f, ast.Name) and f.id == "Path") or (isinstance(f, ast.Attribute) and f.attr == "Path"):
            if len(node.args) == 1:
                return _path_of(self.value(node.args[0]))
            raise _Unknown
        if ((isinstance(f, ast.Attribute) and f.attr == "dedent") or (isinstance(f, ast.Name) and f.id == "dedent")) \
                and len(node.args) == 1:
            v = self.value(node.args[0])
            if isinstance(v, _Text) and v.literal is not None:
                return _Text(literal=textwrap.dedent(v.literal))
            raise _Unknown
        if isinstance(f, ast.Attribute):
            if f.attr == "read" and not node.args:  # open(p).read() / fh.read()
                return self._read(f.value)
            if f.attr == "read_text":
                return _Text(source=_path_of(self.value(f.value)))
            if f.attr == "replace" and 2 <= len(node.args) <= 3:
                return self._replace(f.value, node.args)
        raise _Unknown

    def _read(self, base: ast.AST) -> _Text:
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "open":
            if not base.args:
                raise _Unknown
            return _Text(source=_path_of(self.value(base.args[0])))
        v = self.value(base)
        if isinstance(v, tuple) and v[0] == "file":
            return _Text(source=v[1])
        raise _Unknown

    def _replace(self, on: ast.AST, args: list[ast.expr]) -> _Text:
        base = self.value(on)
        if not isinstance(base, _Text):
            raise _Unknown
        old, new = self.value(args[0]), self.value(args[1])
        if not (isinstance(old, _Text) and isinstance(new, _Text) and old.literal is not None
                and new.literal is not None):
            raise _Unknown
        count = -1
        if len(args) == 3:
            c = args[2]
            if not (isinstance(c, ast.Constant) and isinstance(c.value, int)):
                raise _Unknown
            count = c.value
        if base.literal is not None:
            return _Text(literal=base.literal.replace(old.literal, new.literal, count))
        return _Text(source=base.source, steps=base.steps + ((old.literal, new.literal, count),))

    # -- writes
    def write(self, path: str | None, content_node: ast.AST | None) -> None:
        if path is None:
            return
        try:
            v = self.value(content_node) if content_node is not None else None
        except _Unknown:
            v = None
        if isinstance(v, _Text) and v.literal is not None:
            self.out.append(Change(path, "python script", whole=v.literal))
        elif isinstance(v, _Text) and v.source is not None and _same(v.source, path):
            self.out.append(Change(path, "python script", _replacer(v.steps)))
        else:
            self.out.append(Change(path, "python script"))  # written, but not replayable

    def open_target(self, call: ast.AST) -> tuple[str | None, str]:
        """(path, mode) of an ``open(...)`` call."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "open" and call.args):
            return None, ""
        mode = "r"
        if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
            mode = call.args[1].value
        for kw in call.keywords:
            if kw.arg == "mode" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                mode = kw.value.value
        try:
            return _path_of(self.value(call.args[0])), mode
        except _Unknown:
            return "?", mode

    # -- statements
    def visit(self, stmts: list[ast.stmt]) -> None:
        for st in stmts:
            self._statement(st)

    def _statement(self, st: ast.stmt) -> None:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            try:
                self.env[st.targets[0].id] = self.value(st.value)
            except _Unknown:
                self.env.pop(st.targets[0].id, None)
            return
        if isinstance(st, (ast.AugAssign, ast.AnnAssign, ast.Assign, ast.For)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:  # a value ktui does not follow: forget the names it binds
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.env.pop(n.id, None)
            if not isinstance(st, ast.For):
                return
        if isinstance(st, ast.With):
            for item in st.items:
                path, mode = self.open_target(item.context_expr)
                if path is not None and isinstance(item.optional_vars, ast.Name):
                    self.env[item.optional_vars.id] = ("file", path, mode)
            self.visit(st.body)
            return
        if isinstance(st, (ast.If, ast.For, ast.While, ast.Try)):
            for block in (getattr(st, "body", []), getattr(st, "orelse", []), getattr(st, "finalbody", [])):
                self.visit(block)
            for h in getattr(st, "handlers", []):
                self.visit(h.body)
            return
        for node in ast.walk(st):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                self._write_call(node, node.func)

    def _write_call(self, node: ast.Call, f: ast.Attribute) -> None:
        arg = node.args[0] if node.args else None
        if f.attr == "write_text":
            try:
                self.write(_path_of(self.value(f.value)), arg)
            except _Unknown:
                pass
        elif f.attr in ("write", "writelines"):
            path, mode = self.open_target(f.value)
            if path is None and isinstance(f.value, ast.Name):
                v = self.env.get(f.value.id)
                if isinstance(v, tuple) and v[0] == "file":
                    path, mode = v[1], v[2]
            if path is None or path == "?" or not any(ch in mode for ch in "wax+"):
                return
            if "a" in mode or f.attr == "writelines":
                self.out.append(Change(path, "python script"))
            else:
                self.write(path, arg)


def _path_of(v: object) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, _Text) and v.literal is not None and v.literal and "\n" not in v.literal:
        return v.literal
    raise _Unknown


def _same(a: str, b: str) -> bool:
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1] and (a.startswith("/") != b.startswith("/"))


def _replacer(steps: tuple[tuple[str, str, int], ...]) -> Apply:
    def apply(old: str) -> str:
        for o, n, c in steps:
            old = old.replace(o, n, c)
        return old
    return apply
