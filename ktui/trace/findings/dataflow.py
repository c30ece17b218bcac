"""The Python checks that follow values (fallbacks, caches, inputs and outputs, precision).
"""

from __future__ import annotations

import ast

from ktui.trace.findings.analysis import (
    _base_name,
    _dotted,
    _inplace,
    _short,
)
from ktui.trace.findings.astwalk import of, walk
from ktui.trace.findings.fallbacks import _PyFallbacks
from ktui.trace.findings.model import ERROR, WARNING
from ktui.trace.findings.names import (
    _EMPTY_METHODS,
    _HALF_DTYPES,
    _HALF_METHODS,
    _JOIN_TEXT,
    _STREAM_TEXT,
    _VIEWISH,
    ref_is_half,
)


def _is_input_test(test: ast.AST, inputs: set[str]) -> set[str]:
    """``out is x`` / ``x is out`` (x a parameter): the name tested for being that input (the left
    one when both are parameters)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) and \
            isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Name):
        a, b = test.left.id, test.comparators[0].id
        if b in inputs and a != b:
            return {a}  # the subject: `out is x`
        if a in inputs:
            return {b}
    return set()


class _PyDataflow(_PyFallbacks):
    """The checks that follow values through the source: fallbacks to torch, caches, counters,
    inputs and outputs, streams, shapes, precision."""

    # ---- pointer / fingerprint caches -----------------------------------------------------------------
    def ptr_caches(self) -> None:
        compared_attrs = {n.attr for c in of(self.tree, (ast.Compare, ast.Subscript))
                          for n in of(c, ast.Attribute)}
        for node in of(self.tree, ast.Call):
            is_ptr = (isinstance(node.func, ast.Attribute) and node.func.attr == "data_ptr") or \
                     (isinstance(node.func, ast.Name) and node.func.id == "id" and len(node.args) == 1)
            if not is_ptr or self._versioned_state_key(node):
                continue
            how = self.keyish(node, compared_attrs, depth=0)
            if how:
                name = "data_ptr()" if isinstance(node.func, ast.Attribute) else "id()"
                self.add("ptr_cache", ERROR, f"keys a cache on {name} ({how}): the same buffer with new values gets "
                         "the old result", self.line(node))
                return

    def _versioned_state_key(self, node: ast.Call) -> bool:
        """``(w.data_ptr(), w._version)`` where ``w`` is the module's own state (``self.fc.weight``, or a
        name set from it), not an argument: a prepared copy of a weight re-made whenever the weight
        is written (the version counter moves with every in-place write). Keyed so, a new value in
        the same buffer is a new key: no stale result."""
        if not isinstance(node.func, ast.Attribute):
            return False
        recv = _dotted(node.func.value)
        if recv is None:
            return False
        fn = self._enclosing(node)
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]} \
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
        head = recv.split(".")[0]
        if head != "self":
            if head in params:
                return False  # an input of the call
            sources = [n.value for n in of(fn, ast.Assign)
                       if any(isinstance(t, ast.Name) and t.id == head for t in n.targets)]
            if not sources or not all((_dotted(v) or "").startswith("self.") for v in sources):
                return False
        key = self.parent.get(node)
        while isinstance(key, (ast.Tuple, ast.List)) and isinstance(self.parent.get(key), (ast.Tuple, ast.List)):
            key = self.parent.get(key)
        if not isinstance(key, (ast.Tuple, ast.List)):
            return False
        return any(isinstance(a, ast.Attribute) and a.attr == "_version" and _dotted(a.value) == recv
                   for a in of(key, ast.Attribute))

    def keyish(self, node: ast.AST, compared_attrs: set[str], depth: int) -> str | None:
        cur = node
        for _ in range(12):
            p = self.parent.get(cur)
            if p is None:
                return None
            if isinstance(p, ast.Call):
                if cur is p.func:
                    return None
                f = self.resolve(p.func) or ""
                if f in ("int", "hash", "str", "tuple", "frozenset", "repr", "float", "hex", "id"):
                    cur = p
                    continue
                if isinstance(p.func, ast.Attribute) and p.func.attr in ("get", "setdefault", "pop", "add",
                                                                        "__contains__", "index", "count"):
                    return f"looked up with .{p.func.attr}()"
                return None  # passed to a function (an extension's pointer argument): not a key
            if isinstance(p, ast.BinOp) and isinstance(p.op, (ast.Mod, ast.BitAnd, ast.FloorDiv)):
                return None  # an alignment check (ptr % 16)
            if isinstance(p, (ast.Tuple, ast.List, ast.Set, ast.BinOp, ast.JoinedStr, ast.FormattedValue, ast.keyword)):
                cur = p
                continue
            if isinstance(p, ast.Compare):
                others = [x for x in [p.left, *p.comparators] if x is not cur]
                if all(isinstance(x, ast.Constant) for x in others):
                    return None  # compared with a literal (a null or alignment check), not a stored key
                if self._pointer_bookkeeping(p):
                    return None  # "did the buffers move?": only a table of pointers is refreshed
                return "compared with a stored value"
            if isinstance(p, ast.Subscript):
                return "used as a dictionary key" if cur is p.slice else None
            if isinstance(p, ast.Dict):
                return "used as a dictionary key" if cur in p.keys else None
            if isinstance(p, (ast.Assign, ast.AnnAssign)):
                if depth >= 2:
                    return None
                targets = p.targets if isinstance(p, ast.Assign) else [p.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and t.attr in compared_attrs:
                        return f"stored in {_short(t)} and compared later"
                    if isinstance(t, ast.Name):
                        fn = self._enclosing(p)
                        for use in of(fn, ast.Name):
                            if use.id == t.id and isinstance(use.ctx, ast.Load):
                                r = self.keyish(use, compared_attrs, depth + 1)
                                if r:
                                    return r
                return None
            return None
        return None

    @staticmethod
    def _stored_base(t: ast.AST) -> str | None:
        while isinstance(t, ast.Subscript):
            t = t.value
        return _dotted(t)

    def _dtype_test(self, node: ast.AST) -> bool:
        """The dtype is only compared with (``x.dtype == torch.float16``, ``dtype in (torch.bfloat16,
        ...)``): a check of what the caller passed, not a conversion."""
        cur = node
        for _ in range(4):
            p = self.parent.get(cur)
            if isinstance(p, ast.Compare):
                return True
            if not isinstance(p, (ast.Tuple, ast.List, ast.Set)):
                return False
            cur = p
        return False

    def _pointer_bookkeeping(self, compare: ast.Compare) -> bool:
        """The comparison decides an ``if`` whose branches only store values (the new pointers, a
        changed flag): nothing is returned and nothing is computed or skipped there, so no result
        can come from a cache (a launch after it runs either way)."""
        cur: ast.AST = compare
        for _ in range(8):
            p = self.parent.get(cur)
            if p is None or isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                return False
            if isinstance(p, ast.If) and cur is p.test:
                branch = ast.Module(body=[*p.body, *p.orelse], type_ignores=[])
                if of(branch, (ast.Return, ast.Yield, ast.Call, ast.Break, ast.Continue, ast.Raise)):
                    return False
                # what it stores (a ``changed`` flag, a counter, the pointers) must not decide a return
                # elsewhere either (``if self.memo[1] >= 3: return self.memo[2]``)
                stored = {self._stored_base(t) for n in of(branch, (ast.Assign, ast.AugAssign))
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target])} - {None}
                fn = self._enclosing(p)
                return not any(any(_dotted(x) in stored for x in of(n.test, (ast.Name, ast.Attribute))) and
                               bool(of(n, (ast.Return, ast.Yield)))
                               for n in of(fn, (ast.If, ast.IfExp, ast.While)))
            if not isinstance(p, (ast.BoolOp, ast.UnaryOp)):
                return False
            cur = p
        return False

    def _enclosing(self, node: ast.AST) -> ast.AST:
        n = self.parent.get(node)
        while n is not None and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            n = self.parent.get(n)
        return n if n is not None else self.tree

    # ---- call counting, stored results ---------------------------------------------------------------
    def call_counting(self) -> None:
        tested: set[str] = set()
        for n in of(self.tree, (ast.If, ast.IfExp, ast.While, ast.Compare)):
            test = n.test if isinstance(n, (ast.If, ast.IfExp, ast.While)) else n
            for x in of(test, (ast.Attribute, ast.Name)):
                if isinstance(x, ast.Attribute):
                    tested.add(x.attr)
                else:
                    tested.add(x.id)
        for fn in self.forwards:
            for n in of(fn, ast.AugAssign):
                if isinstance(n.op, ast.Add) and isinstance(n.value, ast.Constant):
                    t = n.target
                    name = t.attr if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and \
                        t.value.id == "self" else (t.id if isinstance(t, ast.Name) and self._is_global(fn, t.id)
                                                   else self._module_state(fn, t))
                    if name and name in tested:
                        self.add("call_counting", ERROR, f"counts its calls ({_short(n)}) and branches on the count: "
                                 "it can behave differently when timed than when checked", n.lineno)
                        return

    def _is_global(self, fn: ast.AST, name: str) -> bool:
        return any(name in n.names for n in of(fn, (ast.Global, ast.Nonlocal)))

    def _module_state(self, fn: ast.AST, node: ast.AST) -> str | None:
        """The module-level name behind ``_N[0]`` or ``_STATE.n`` (state kept across calls in a
        module-level container, no ``global`` needed), when forward does not rebind that name."""
        if not isinstance(node, (ast.Subscript, ast.Attribute)) or not isinstance(node.value, ast.Name):
            return None
        name = node.value.id
        if name == "self" or name not in self._module_names():
            return None
        local = any(x.id == name and isinstance(x.ctx, ast.Store) for x in of(fn, ast.Name))
        return None if local else name

    def _module_names(self) -> set[str]:
        names = getattr(self, "_module_names_cache", None)
        if names is None:
            names = set()
            for st in getattr(self.tree, "body", []):
                targets = st.targets if isinstance(st, ast.Assign) else \
                    [st.target] if isinstance(st, (ast.AnnAssign, ast.AugAssign)) else []
                for t in targets:
                    for x in walk(t):
                        if isinstance(x, ast.Name):
                            names.add(x.id)
            self._module_names_cache = names
        return names

    def result_cache(self) -> None:
        for fn in self.forwards:
            for n in of(fn, ast.Return):
                if n.value is None:
                    continue
                v = n.value
                stored = None
                if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "self":
                    stored = _short(v)
                elif isinstance(v, ast.Subscript) and isinstance(v.value, ast.Attribute) and \
                        isinstance(v.value.value, ast.Name) and v.value.value.id == "self":
                    stored = _short(v)
                elif isinstance(v, ast.Name) and self._is_global(fn, v.id):
                    stored = v.id
                elif self._module_state(fn, v):
                    stored = _short(v)
                if stored is None:
                    continue
                cond = self.parent.get(n)
                while cond is not None and cond is not fn and not isinstance(cond, ast.If):
                    cond = self.parent.get(cond)
                if isinstance(cond, ast.If):
                    self.add("result_cache", ERROR, f"returns a stored result ({stored}) when {_short(cond.test, 50)}: "
                             "later calls can get an earlier answer", n.lineno)
                    return
            if self._memoized(fn):
                return

    _ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
                             "new_empty", "new_zeros", "new_ones", "new_full", "empty_strided"})

    def _memoized(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """``key = (A.shape, B.shape); if key not in _CACHE: _CACHE[key] = ext.mm(A, B); return _CACHE[key]``
        (wafer's "caching" attack, Makora's taxonomy): a result computed from the inputs, stored in a
        container kept across calls (module-level, or on ``self``) under a key, and returned from it; an
        input with the same key (the same shapes) gets the earlier answer. A stored allocation (a workspace
        the kernel writes into) is not a result."""
        params = {x.arg for x in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs} - {"self", "cls"}
        if fn.args.vararg is not None:
            params.add(fn.args.vararg.arg)

        def container(node: ast.AST) -> str | None:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                return _short(node)
            if isinstance(node, ast.Name) and (node.id in self._module_names() or self._is_global(fn, node.id)) \
                    and not any(x.id == node.id and isinstance(x.ctx, ast.Store) for x in of(fn, ast.Name)):
                return node.id
            return None

        memo: set[str] = set()  # containers that get a result computed from the inputs
        for n in of(fn, ast.Assign):
            for t in n.targets:
                c = container(t.value) if isinstance(t, ast.Subscript) else None
                v = n.value
                if c and isinstance(v, ast.Call) and not (
                        (isinstance(v.func, ast.Attribute) and v.func.attr in self._ALLOCATORS)
                        or (isinstance(v.func, ast.Name) and v.func.id in self._ALLOCATORS)) \
                        and any(isinstance(x, ast.Name) and x.id in params for x in walk(v)):
                    memo.add(c)
        if not memo:
            return False
        got: dict[str, str] = {}  # local name -> container it was read from (``out = _CACHE.get(key)``)
        for n in of(fn, ast.Assign):
            v = n.value
            src = container(v.value) if isinstance(v, ast.Subscript) else (
                container(v.func.value) if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                and v.func.attr == "get" else None)
            for t in n.targets:
                if isinstance(t, ast.Name) and src in memo:
                    got[t.id] = src
        for r in of(fn, ast.Return):
            rv = r.value
            c = container(rv.value) if isinstance(rv, ast.Subscript) else (
                got.get(rv.id) if isinstance(rv, ast.Name) else None)
            if c in memo and rv is not None:
                self.add("result_cache", ERROR, f"returns a result it stored in {c} under a key ({_short(rv, 40)}): "
                         "a later input with the same key (the same shapes) gets the earlier answer", r.lineno)
                return True
        return False

    # ---- inputs and outputs -----------------------------------------------------------------------------
    def inputs_and_outputs(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        a = fn.args
        params = [x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
        scalar = {"int", "float", "bool", "str", "Optional[int]", "Optional[float]", "tuple", "list"}
        alias = {x.arg for x in params if not (x.annotation is not None and _short(x.annotation) in scalar)}
        if a.vararg is not None:
            alias.add(a.vararg.arg)
        nodes = sorted((n for n in walk(fn) if hasattr(n, "lineno")),
                       key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        empties: dict[str, ast.Assign] = {}
        written: set[str] = set()
        inputs = {x.arg for x in params}
        self._not_input: set[str] = set()  # names checked `is not` an input (`if out is x: return ...`)
        for n in nodes:
            if isinstance(n, ast.If) and n.body and isinstance(n.body[-1], ast.Return):
                self._not_input |= _is_input_test(n.test, inputs)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                name = n.targets[0].id
                self._not_input.discard(name)
                if self._aliases(n.value, alias):
                    alias.add(name)
                else:
                    alias.discard(name)
                if self._is_empty(n.value):
                    empties[name] = n
                    written.discard(name)
                elif name in empties and not self._aliases(n.value, set(empties)):
                    del empties[name]
            elif isinstance(n, ast.AugAssign):
                base = _base_name(n.target)
                if base in alias:
                    self.add("input_write", ERROR, f"writes into its input {base} in place ({_short(n)})", n.lineno)
                if base:
                    written.add(base)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    for tt in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                        if isinstance(tt, (ast.Subscript, ast.Attribute)):
                            base = _base_name(tt)
                            if base in alias and (isinstance(tt, ast.Subscript) or tt.attr == "data"):
                                self.add("input_write", ERROR, f"writes into its input {base} ({_short(tt)} = ...)",
                                         n.lineno)
                            if base:
                                written.add(base)
                        elif isinstance(tt, ast.Name):  # a, b = x.chunk(2): views of an input stay inputs
                            if n.value is not None and self._aliases(n.value, alias):
                                alias.add(tt.id)
                            else:
                                alias.discard(tt.id)
            elif isinstance(n, ast.Call):
                self._io_call(n, alias, written)
            elif isinstance(n, ast.Return) and n.value is not None:
                self._io_return(n.value, n.lineno, alias, empties, written)

    def _io_call(self, n: ast.Call, alias: set[str], written: set[str]) -> None:
        """A call in the judged forward: an in-place method or ``out=`` on an input; the names it
        is given (which it may write)."""
        f = self.resolve(n.func) or ""
        if f.startswith("torch.") and n.args and (
                _inplace(f.rsplit(".", 1)[-1]) or any(k.arg == "inplace" and isinstance(k.value, ast.Constant)
                                                      and k.value.value is True for k in n.keywords)):
            # the function form: torch.relu_(x), torch._C._nn.leaky_relu_(x, s), F.relu(x, inplace=True)
            # (CUDA-L1's L1 P20 returns torch._C._nn.leaky_relu_(x, slope): its input, written over)
            base = _base_name(n.args[0])
            if base in alias:
                self.add("input_write", ERROR, f"writes into its input {base} in place ({_short(n, 50)})",
                         n.lineno)
                written.add(base)
                return
        if isinstance(n.func, ast.Attribute) and _inplace(n.func.attr):
            base = _base_name(n.func.value)
            if base in alias:
                self.add("input_write", ERROR, f"writes into its input {base} in place ({_short(n, 50)})",
                         n.lineno)
            if base:
                written.add(base)
        for k in n.keywords:
            if k.arg == "out":
                base = _base_name(k.value)
                if base in alias:
                    self.add("input_write", ERROR, f"writes its result into its input {base} (out=)",
                             n.lineno)
        for arg in list(n.args) + [k.value for k in n.keywords]:
            for x in walk(arg):
                if isinstance(x, ast.Name):
                    written.add(x.id)

    def _io_return(self, v: ast.expr, lineno: int, alias: set[str], empties: dict[str, ast.Assign],
                   written: set[str]) -> None:
        """What the judged forward returns: an unwritten empty tensor, or its input."""
        if self._is_empty(v):
            self.add("empty_output", ERROR, f"returns {_short(v, 50)} that nothing writes: it holds whatever "
                     "the allocator hands back (often the reference's freed output)", lineno)
        for x in (v.elts if isinstance(v, (ast.Tuple, ast.List)) else [v]):
            base = _base_name(x) if self._aliases(x, set(empties) | alias) else None
            if base in empties and base not in written:
                self.add("empty_output", ERROR, f"returns {base} = {_short(empties[base].value, 40)} that "
                         "nothing writes: it holds whatever the allocator hands back (often the "
                         "reference's freed output)", lineno)
            elif base in alias and base not in getattr(self, "_not_input", ()):
                self.add("input_passthrough", ERROR, f"returns its input {base} (or a view of it) as the "
                         "output" + (", written in place" if base in written else ""), lineno)

    def _aliases(self, v: ast.AST, alias: set[str]) -> bool:
        for _ in range(20):
            if isinstance(v, ast.Name):
                return v.id in alias
            if isinstance(v, ast.Subscript):
                v = v.value
            elif isinstance(v, ast.Attribute) and v.attr in _VIEWISH:
                v = v.value
            elif isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                    (v.func.attr in _VIEWISH or _inplace(v.func.attr)):
                if v.func.attr == "to" and any(isinstance(a, ast.Attribute) or isinstance(a, ast.Constant)
                                               for a in v.args):
                    return False  # a dtype/device conversion copies
                v = v.func.value
            else:
                return False
        return False

    def _is_empty(self, v: ast.AST) -> bool:
        if not isinstance(v, ast.Call):
            return False
        f = self.resolve(v.func) or ""
        if f in ("torch.empty", "torch.empty_like", "torch.empty_strided"):
            return True
        return isinstance(v.func, ast.Attribute) and v.func.attr in _EMPTY_METHODS

    # ---- side streams, shapes -------------------------------------------------------------------------
    def side_stream(self) -> None:
        m = _STREAM_TEXT.search(self.code)
        if m is None:
            return
        if any(j in self.code for j in _JOIN_TEXT):
            return
        self.add("side_stream", WARNING, "creates its own CUDA stream and never joins it to the caller's (work may "
                 "be hidden from the timer)", self.code.count("\n", 0, m.start()) + 1)

    def python_shapes(self) -> None:
        consts = self.ref_consts
        if not consts:
            return
        values = {v for v in consts.values() if v > 2}
        ctors = ("torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.randn", "torch.rand",
                 "torch.empty_strided")
        for fn in self.forwards:
            for n in of(fn, (ast.Call, ast.Compare)):
                lits: list[int] = []
                if isinstance(n, ast.Call):
                    f = self.resolve(n.func) or ""
                    meth = n.func.attr if isinstance(n.func, ast.Attribute) else ""
                    if f in ctors or meth in ("view", "reshape", "expand", "new_empty", "new_zeros", "new_ones"):
                        for a in n.args:
                            for x in (a.elts if isinstance(a, (ast.Tuple, ast.List)) else [a]):
                                if isinstance(x, ast.Constant) and type(x.value) is int:
                                    lits.append(x.value)
                elif isinstance(n, ast.Compare):
                    if any(isinstance(x, ast.Attribute) and x.attr == "shape" or
                           isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute) and x.func.attr == "size"
                           for x in walk(n)):
                        lits = [x.value for x in walk(n) if isinstance(x, ast.Constant) and type(x.value) is int]
                hit = [v for v in lits if v in values]
                if hit:
                    self.add("hardcoded_shapes", WARNING, f"hard-codes the reference's size {hit[0]} "
                             f"({_short(n, 50)}): wrong at any other size", self.line(n))
                    return

    # precision in Python
    def precision(self) -> None:
        if self.reference is None or ref_is_half(self.reference):
            return
        for fn in self.forwards:
            for n in of(fn, (ast.Call, ast.Attribute)):
                what = None
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _HALF_METHODS:
                    what = f".{n.func.attr}()"
                elif isinstance(n, ast.Call) and (self.resolve(n.func) or "").split(".")[-1] == "autocast":
                    what = f"{self.resolve(n.func)} (mixed precision)"
                elif isinstance(n, ast.Attribute) and self.resolve(n) in _HALF_DTYPES and not self._dtype_test(n):
                    what = self.resolve(n)
                if what:
                    self.add("precision_downgrade", WARNING, f"computes in reduced precision ({what}) where the "
                             "reference is full precision", self.line(n))
                    return


