"""The Python analysis' ground: the parsed source and the questions every check asks of it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ktui.trace.findings.analysis import _Analysis, _dotted, _is_main_test
from ktui.trace.findings.astwalk import children, of, walk

#: roots whose modules and classes, reached through a local name, are followed (a write through the
#: name is a write to them)
_ALIAS_ROOTS = frozenset({"torch", "time", "timeit", "statistics", "numpy", "triton", "gc", "sys", "os", "builtins",
                          "threading", "random"})

#: the packages of kernel DSLs whose decorated functions are the file's own GPU code
_DSL_ROOTS = frozenset({"triton", "cutlass", "cute", "tilelang", "tvm", "numba", "helion", "cuda", "warp",
                        "thunderkittens", "cupyx", "cupy"})


class _PyBase(_Analysis):
    """The parsed source: its tree, parents, import aliases, functions, self-test spans, and the
    questions the checks share (names resolved, a build, a Triton kernel)."""

    def __init__(self, code: str, reference: str | None, tree: ast.Module):
        super().__init__(code, reference)
        self.tree = tree
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in walk(tree):
            for child in children(node):
                self.parent[child] = node
        self.alias: dict[str, str] = {}
        for node in of(tree, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
                    else:
                        self.alias.setdefault(a.name.split(".")[0], a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
        if "F" not in self.alias:  # the usual spelling, even where the import is missing
            self.alias["F"] = "torch.nn.functional"
        self._value_aliases(tree)
        self.functions = list(of(tree, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.forwards = [f for f in self.functions if f.name in ("forward", "__call__")]
        entry = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and f.name == "kernel_function"]
        if entry and not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
            # KernelAgent's convention: the judged entry point is `kernel_function(...)`; a `Model`
            # in the same file is the reference its self-test compares against, not the hot path
            self.forwards = entry
        # the judged module's own forward: ModelNew's when the file defines it (helper modules may
        # legitimately return views of, or write into, the intermediate tensors they are given)
        judged = [n for n in of(tree, ast.ClassDef) if n.name == "ModelNew"]
        self.judged_forwards = [f for c in judged for f in c.body if isinstance(f, (ast.FunctionDef,
                                ast.AsyncFunctionDef)) and f.name in ("forward", "__call__")] or self.forwards
        self.defines_model = bool(judged)
        self._custom_cache: dict[int, bool] = {}
        self._builds: dict[ast.AST, bool] = {}
        self.self_test_script, self.self_test_lines = self._self_test()

    def _self_test(self) -> tuple[bool, tuple[tuple[int, int], ...]]:
        """(the file is the agent's own test script, the line ranges of self-test code in it).

        A test script imports ``ModelNew`` from the kernel module and does not define it; in the
        kernel module, the ``if __name__ == "__main__":`` block and the module-level functions only
        it calls (transitively) are self-test code: the judge imports the module, it never runs them."""
        imports_model = any((isinstance(n, ast.ImportFrom) and any(a.name == "ModelNew" for a in n.names))
                            or (isinstance(n, ast.Attribute) and n.attr == "ModelNew")  # sol.ModelNew()
                            or (isinstance(n, ast.Constant) and n.value == "ModelNew")  # getattr(mod, "ModelNew")
                            for n in of(self.tree, (ast.ImportFrom, ast.Attribute, ast.Constant)))
        if imports_model and not self.defines_model:
            return True, ()
        mains: list[ast.stmt] = [st for st in self.tree.body if isinstance(st, ast.If) and _is_main_test(st.test)]
        # a test run written at module level (no main guard): from the statement that builds the
        # reference `Model` as well as `ModelNew` on, the module-level code is a self-test; a
        # judged kernel module never instantiates the reference when it is imported
        tail = self._module_level_test()
        if tail is not None:
            mains += [st for st in self.tree.body[tail:] if not isinstance(
                st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) and st not in mains]
        if not mains:
            return False, ()
        top = {st.name: st for st in self.tree.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}

        def called(nodes: Sequence[ast.AST]) -> set[str]:
            return {n.func.id for x in nodes for n in of(x, ast.Call)
                    if isinstance(n.func, ast.Name) and n.func.id in top}

        # functions the judged code can reach: from every class body and module-level statement
        # that is not a function definition or the main block
        live_roots = [st for st in self.tree.body if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and st not in mains]
        live: set[str] = set()
        todo = called(live_roots)
        while todo:
            name = todo.pop()
            if name not in live:
                live.add(name)
                todo |= called([top[name]]) - live
        tests: set[str] = set()
        todo = called(mains)
        while todo:
            name = todo.pop()
            if name not in tests and name not in live:
                tests.add(name)
                todo |= called([top[name]]) - tests
        spans = [(m.lineno, getattr(m, "end_lineno", None) or m.lineno) for m in mains]
        spans += [(top[t].lineno, getattr(top[t], "end_lineno", None) or top[t].lineno) for t in tests]
        return False, tuple(spans)

    def _module_level_test(self) -> int | None:
        """Index of the first module-level statement from which the file instantiates both the
        reference ``Model`` (a class it defines) and ``ModelNew``, or None."""
        classes = {st.name for st in self.tree.body if isinstance(st, ast.ClassDef)}
        if not {"Model", "ModelNew"} <= classes:
            return None
        seen: set[str] = set()
        first = None
        for i, st in enumerate(self.tree.body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or \
                    (isinstance(st, ast.If) and _is_main_test(st.test)):
                continue
            made = {n.func.id for n in of(st, ast.Call) if isinstance(n.func, ast.Name)
                    and n.func.id in ("Model", "ModelNew")}
            if made and first is None:
                first = i
            seen |= made
            if seen == {"Model", "ModelNew"}:
                return first
        return None

    def resolve(self, node: ast.AST) -> str | None:
        d = _dotted(node)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        full = self.alias.get(head)
        if full is not None:
            return f"{full}.{rest}" if rest else full
        return d

    def line(self, node: ast.AST) -> int | None:
        return getattr(node, "lineno", None)

    def in_forward(self, node: ast.AST) -> bool:
        n = self.parent.get(node)
        while n is not None:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in ("forward", "__call__"):
                return True
            n = self.parent.get(n)
        return False

    def is_triton_kernel(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Decorated with triton.jit (also through autotune / heuristics, or `from triton import jit`)."""
        for d in fn.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            name = self.resolve(target) or ""
            if name in ("triton.jit", "jit") or name.endswith(".jit") and name.startswith("triton"):
                return True
        return False

    def _value_aliases(self, tree: ast.Module) -> None:
        """Names bound to a module or class reached by value (``c = torch.cuda``,
        ``E = getattr(torch.cuda, "Ev" + "ent")``): a write through them is a write to the original
        (``c.synchronize = ...`` patches ``torch.cuda.synchronize``)."""
        assigns = [(t.id, n.value) for n in of(tree, ast.Assign) if len(n.targets) == 1
                   and isinstance(t := n.targets[0], ast.Name)]
        for _ in range(3):  # aliases of aliases
            for name, v in assigns:
                if name in self.alias:
                    continue
                full = None
                if isinstance(v, (ast.Name, ast.Attribute)):
                    full = self.resolve(v)
                elif self.imported(v):
                    full = self.imported(v)
                elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "getattr" \
                        and len(v.args) >= 2:
                    base, attr = self.imported(v.args[0]) or self.resolve(v.args[0]), self.const_str(v.args[1])
                    full = f"{base}.{attr}" if base and attr else None
                if full and full.split(".")[0] in _ALIAS_ROOTS and full != name:
                    self.alias[name] = full

    def imported(self, node: ast.AST) -> str | None:
        """The module ``__import__("builtins")`` / ``importlib.import_module("torch.cuda")`` returns, by
        name (the string may be spelled in pieces): ``getattr(__import__("builtins"), "set" + "attr")``
        is ``setattr``."""
        if not isinstance(node, ast.Call) or not node.args:
            return None
        f = self.resolve(node.func) or ""
        if f not in ("__import__", "builtins.__import__", "importlib.import_module"):
            return None
        name = self.const_str(node.args[0])
        if not name:
            return None
        # __import__("a.b") returns the package a (without a fromlist); import_module returns a.b
        return name if f == "importlib.import_module" or node.keywords or len(node.args) > 3 else name.split(".")[0]

    def const_str(self, node: ast.AST, depth: int = 0) -> str | None:
        """A string the code spells in pieces: ``"elapsed" + "_time"``, a name bound once to one."""
        if depth > 8:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.const_str(node.left, depth + 1), self.const_str(node.right, depth + 1)
            return a + b if a is not None and b is not None else None
        if isinstance(node, ast.JoinedStr):
            parts = [self.const_str(x, depth + 1) for x in node.values]
            return "".join(x for x in parts if x is not None) if all(x is not None for x in parts) else None
        if isinstance(node, ast.Name):
            vals = [a.value for a in of(self.tree, ast.Assign) if len(a.targets) == 1
                    and isinstance(a.targets[0], ast.Name) and a.targets[0].id == node.id]
            if len(vals) == 1:
                return self.const_str(vals[0], depth + 1)
        return None

    def is_dsl_kernel(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Compiled by a kernel DSL: Triton, CuTe / CUTLASS Python (``@cute.kernel``, ``@cute.jit``),
        TileLang (``@T.prim_func``, ``@tilelang.jit``), Numba CUDA, Helion; or a builder function
        that defines one and returns it (TileLang's usual ``def matmul(M, N, K): @T.prim_func ...``)."""
        if self.is_triton_kernel(fn) or self._dsl_decorated(fn):
            return True
        inner = [n for n in of(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) if n is not fn]
        return any(self._dsl_decorated(n) for n in inner)

    def _dsl_decorated(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        for d in fn.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            name = self.resolve(target) or ""
            root, last = name.split(".", 1)[0], name.rsplit(".", 1)[-1]
            if root in _DSL_ROOTS and last in ("jit", "kernel", "prim_func", "autotune", "macro"):
                return True
        return False

    def is_dsl_compile(self, f: str) -> bool:
        """``cute.compile(fn, ...)``, ``tilelang.compile(prog)``: builds the file's own kernel."""
        root, last = f.split(".", 1)[0], f.rsplit(".", 1)[-1]
        return root in _DSL_ROOTS and last in ("compile", "lower", "build")

    # ---- try/except around the build --------------------------------------------------------------
    def is_build(self, node: ast.AST) -> bool:
        """Whether ``node`` builds the file's own extension (``load_inline``, ``cpp_extension.load``,
        a DSL's compile, a helper function that does); asked of every assignment up to four times an
        analysis, answered once a node."""
        got = self._builds.get(node)
        if got is None:
            got = self._builds[node] = self._is_build(node)
        return got

    def _is_build(self, node: ast.AST) -> bool:
        for n in of(node, ast.Call):
            f = self.resolve(n.func) or ""
            last = f.rsplit(".", 1)[-1]
            if last == "load_inline" or f.endswith("cpp_extension.load") or \
                    (f.startswith("triton") and last == "compile"):
                return True
            if isinstance(n.func, ast.Name) and n.func.id in self.build_helpers:
                return True
        return False

    @property
    def build_helpers(self) -> set[str]:
        if not hasattr(self, "_bh"):
            self._bh: set[str] = set()
            for fn in self.functions:
                if any((self.resolve(n.func) or "").rsplit(".", 1)[-1] == "load_inline" for n in of(fn, ast.Call)):
                    self._bh.add(fn.name)
        return self._bh

