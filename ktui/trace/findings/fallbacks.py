"""The Python checks on fallbacks to torch: which calls are the file's own kernels (CUDA, Triton
and other DSLs), which are torch doing the work, and the try/except that falls back.
"""

from __future__ import annotations

import ast

from ktui.trace.findings.analysis import (
    _dotted,
    _short,
)
from ktui.trace.findings.astwalk import of
from ktui.trace.findings.model import ERROR, WARNING
from ktui.trace.findings.names import (
    _FALLBACK_OPS,
    _HALF_DTYPES,
    _NN_COMPUTE,
    ref_is_half,
)
from ktui.trace.findings.pybase import _PyBase

#: said of a custom kernel behind a reduced-precision test; a harness that runs the problem in that
#: precision (KernelBench's ``precision: fp16``) drops the finding (``findings._analysed``)
GHOST_WORDS = "a precision the reference's full-precision inputs never have (the custom path is never judged)"


class _PyFallbacks(_PyBase):
    """Fallbacks to torch: the file's own kernels and the calls that do the work (mixed into
    :class:`ktui.trace.findings.dataflow._PyDataflow`)."""

    def try_fallback(self, node: ast.Try, torch_op: str | None) -> None:
        build = self.is_build(ast.Module(body=node.body, type_ignores=[]))
        for h in node.handlers:
            if of(h, ast.Raise):
                continue
            own = self.handler_fallback(h)
            if build:
                fb = own or torch_op
                self.add("build_fallback", ERROR if fb else WARNING,
                         "catches a failed build of its extension and carries on"
                         + (f": the fallback {fb} runs instead" if fb else " (the custom kernel may never run)"),
                         h.lineno)
                return
            if own:
                self.add("build_fallback", ERROR, f"catches any failure of its custom path and computes the result "
                         f"with {own} instead", h.lineno)
                return

    def handler_fallback(self, h: ast.AST) -> str | None:
        for n in of(h, ast.Call):
            f = self.resolve(n.func) or ""
            if self.is_torch_op(f):
                return f
        return None

    # ---- torch fallbacks ------------------------------------------------------------------------------
    def is_torch_op(self, f: str) -> bool:
        if f.startswith("torch.nn.functional."):
            return f.rsplit(".", 1)[-1] not in ("pad",)
        if f.startswith("torch.ops.aten."):
            return True
        if f.startswith("torch.") and f.count(".") == 1 and f.split(".")[1] in _FALLBACK_OPS:
            return True
        if f.startswith("torch.linalg.") or f.startswith("torch.special."):
            return True
        return False

    # ---- what a name refers to: the kernel's own extension / Triton kernels, or torch ----------------
    @property
    def custom_names(self) -> set[str]:
        """Names (``ext``, ``self.ext``, ``mm``) bound to the file's own compiled code: a
        ``load_inline`` / ``cpp_extension.load`` / Triton / CuPy build, an attribute of one, or a
        ``@triton.jit`` function. A call through one of them is custom code whatever its name
        (an extension function called ``mm`` is not ``torch.mm``)."""
        names = getattr(self, "_custom_names", None)
        if names is not None:
            return names
        names = {fn.name for fn in self.functions if self.is_dsl_kernel(fn)}
        assigns = [n for n in of(self.tree, (ast.Assign, ast.AnnAssign)) if n.value is not None]
        for _ in range(3):  # aliases of aliases
            for n in assigns:
                v = n.value
                if v is None:  # (not in assigns: for the type checker)
                    continue
                custom = self.is_build(v) or self._raw_kernel(v) or self._dsl_compiled(v, names) or \
                    (_dotted(v) or "") in names or \
                    (_dotted(v) or "").split(".")[0] in names or self._self_head(_dotted(v) or "") in names
                if not custom:
                    continue
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    d = _dotted(t)
                    if d:
                        names.add(d)
        # handed on by keyword (``Block(c, fused_op=self.ext.fused_bn_relu)``): the parameter of that
        # name, and what it is stored in, are the file's own code too
        params = {a.arg for f in self.functions for a in [*f.args.args, *f.args.kwonlyargs]}
        by_name: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for f in self.functions:
            by_name.setdefault(f.name, []).append(f)

        def own(d: str) -> bool:
            return bool(d) and (d in names or d.split(".")[0] in names or self._self_head(d) in names
                                or d.rsplit(".", 1)[0] in names)

        calls = list(of(self.tree, ast.Call))
        for _ in range(3):  # handed on again
            for c in calls:
                for k in c.keywords:
                    if k.arg in params and own(_dotted(k.value) or ""):
                        names.add(k.arg)
                # handed on by position to the file's own function (``_launch(x, log_kernel)`` whose
                # body runs ``kernel[grid](...)``): that parameter is the file's own code in it
                # (a method, ``self.go(k, x)`` / ``self.runner.go(k, x)``, by its name; not a module's function)
                method = False
                callee: str | None = None
                if isinstance(c.func, ast.Name):
                    callee = c.func.id
                elif isinstance(c.func, ast.Attribute) and (_dotted(c.func) or ".").split(".")[0] not in self.alias:
                    method, callee = True, c.func.attr
                for f in by_name.get(callee or "", []):
                    pos = [*f.args.posonlyargs, *f.args.args]
                    if method != bool(pos and pos[0].arg in ("self", "cls")):
                        continue
                    pos = pos[1:] if method else pos
                    for a, p in zip(c.args, pos, strict=False):
                        if not isinstance(a, ast.Starred) and own(_dotted(a) or ""):
                            names.add(p.arg)
        for n in assigns:
            if isinstance(n, ast.Assign) and (_dotted(n.value) or "") in names:
                names.update(d for t in n.targets if (d := _dotted(t)))
        self._custom_names = names
        return names

    def _dsl_compiled(self, v: ast.AST, names: set[str]) -> bool:
        """``cute.compile(host_fn, ...)`` / ``tilelang.compile(builder(...))`` / ``builder(M, N)``: a
        value compiled from (or returned by a builder of) the file's own DSL kernel."""
        if not isinstance(v, ast.Call):
            return False
        f = self.resolve(v.func) or ""
        if self.is_dsl_compile(f):
            return True
        return isinstance(v.func, ast.Name) and v.func.id in names

    @staticmethod
    def _self_head(d: str) -> str:
        parts = d.split(".")
        return ".".join(parts[:2]) if parts[0] == "self" and len(parts) > 2 else ""

    def _raw_kernel(self, v: ast.AST) -> bool:
        if not isinstance(v, ast.Call):
            return False
        last = (self.resolve(v.func) or "").rsplit(".", 1)[-1]
        return last in ("RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "get_function", "jit",
                        "load_library", "compile_kernel")

    def is_custom_call(self, n: ast.Call) -> bool:
        """A call into the file's own compiled code (directly, not through a helper)."""
        names = self.custom_names
        if isinstance(n.func, ast.Subscript):  # kernel[grid](...): a Triton / Numba launch
            base = _dotted(n.func.value) or ""
            return base in names or (isinstance(n.func.value, ast.Name) and base in self.alias)
        d = _dotted(n.func) or ""
        if d in names or d.split(".")[0] in names or self._self_head(d) in names:
            return True
        if d.rsplit(".", 1)[0] in names:  # ext.fn where ext.fn itself is not bound
            return True
        full = self.resolve(n.func) or ""
        if self.is_dsl_compile(full) and any((_dotted(a) or "") in names for a in n.args):
            return True  # cute.compile(own_kernel, ...): builds (and with cute, runs) the file's own code
        if full.startswith("torch.ops.") and full.split(".")[2:3] not in (["aten"], ["prims"], ["quantized"]):
            return True  # an operator the kernel registered itself (TORCH_LIBRARY)
        return False

    def calls_custom(self, fn: ast.AST, depth: int = 0) -> bool:
        """Whether ``fn`` runs the file's own compiled code, directly or through the file's own
        functions and methods (a few levels deep)."""
        key = id(fn)
        if key in self._custom_cache:
            return self._custom_cache[key]
        self._custom_cache[key] = False  # recursion guard
        by_name = {f.name: f for f in self.functions}
        out = False
        for n in of(fn, ast.Call):
            if self.is_custom_call(n):
                out = True
                break
            callee = None
            if isinstance(n.func, ast.Name):
                callee = by_name.get(n.func.id)
            elif isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and \
                    n.func.value.id in ("self", "cls"):
                callee = by_name.get(n.func.attr)
            elif isinstance(n.func, ast.Attribute) and (_dotted(n.func) or ".").split(".")[0] == "self":
                # a helper object's method (``self.runner.go(kernel, x)``): the file's own method of that name
                callee = next((f for f in self.functions if f.name == n.func.attr and f.args.args
                               and f.args.args[0].arg == "self"), None)
            elif isinstance(n.func, ast.Attribute) and n.func.attr == "apply" and isinstance(n.func.value, ast.Name):
                cls = next((c for c in of(self.tree, ast.ClassDef) if c.name == n.func.value.id),
                           None)  # an autograd.Function
                if cls is not None and depth < 4 and self.calls_custom(cls, depth + 1):
                    out = True
                    break
            if callee is not None and callee is not fn and depth < 4 and self.calls_custom(callee, depth + 1):
                out = True
                break
        self._custom_cache[key] = out
        return out

    def fallbacks(self) -> str | None:
        nn_attrs: dict[str, str] = {}
        for fn in self.functions:
            if fn.name != "__init__":
                continue
            for n in of(fn, ast.Assign):
                if isinstance(n.value, ast.Call):
                    f = self.resolve(n.value.func) or ""
                    if f.startswith("torch.nn.") and _NN_COMPUTE.match(f.rsplit(".", 1)[-1]):
                        for t in n.targets:
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                                nn_attrs[t.attr] = f.rsplit(".", 1)[-1]
        first: str | None = None
        compiled = self.torch_compiled
        for fn in self.forwards:
            for n in of(fn, (ast.Call, ast.BinOp)):
                what = None
                if isinstance(n, ast.Call):
                    f = self.resolve(n.func) or ""
                    if self.is_torch_op(f):
                        what = f"{f}(...)"
                    elif (_dotted(n.func) or "") in compiled:
                        what = f"{_dotted(n.func)}(...), a torch.compile'd function (Inductor's code, not the kernel's)"
                    elif isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and \
                            n.func.value.id == "self" and n.func.attr in nn_attrs:
                        what = f"self.{n.func.attr} (an nn.{nn_attrs[n.func.attr]})"
                    elif isinstance(n.func, ast.Attribute) and n.func.attr in ("matmul", "mm", "bmm", "softmax",
                                                                               "log_softmax", "addmm", "baddbmm") \
                            and not (self.resolve(n.func.value) or "").startswith(("self", "torch")) \
                            and self._is_local_tensor(n.func.value):
                        what = f"tensor.{n.func.attr}(...)"
                elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
                    what = "the @ operator"
                if what:
                    first = first or what.replace("(...)", "")
                    if self._pending_fallback is None:
                        self._pending_fallback = (f"forward calls {what} (falls back to torch ops on the hot path)",
                                                  self.line(n))
                    break
        return first

    _pending_fallback: tuple[str, int | None] | None = None

    @property
    def torch_compiled(self) -> set[str]:
        """Names bound to ``torch.compile(...)`` (or functions decorated with it): torch's compiler
        writes that code, not the agent."""
        out = {f.name for f in self.functions for d in f.decorator_list
               if (self.resolve(d.func if isinstance(d, ast.Call) else d) or "") == "torch.compile"}
        for n in of(self.tree, ast.Assign):
            if isinstance(n.value, ast.Call) and (self.resolve(n.value.func) or "") == "torch.compile":
                out.update(d for t in n.targets if (d := _dotted(t)))
        return out

    def settle_fallback(self) -> None:
        """torch ops in a forward that also runs the file's own (working) kernels are a partial
        port, which KernelBench allows (a custom fused epilogue after nn.Conv2d): only a forward
        that runs no custom code, or only a marker kernel, falls back to torch."""
        ghost = self.ghost_branch()
        if ghost is not None:
            what, line = self._pending_fallback or ("forward computes with torch", ghost[1])
            self.add("torch_fallback", WARNING, f"{what}; its own kernel runs only under `{ghost[0]}`, {GHOST_WORDS}",
                     line)
            return
        if self._pending_fallback is None:
            return
        marker = self.has("dummy_kernel") or self.has("library_behind_marker") or self.has("build_fallback")
        if not marker and any(self.calls_custom(fn) for fn in self.forwards):
            return
        what, line = self._pending_fallback
        self.add("torch_fallback", WARNING, what, line)

    def ghost_branch(self) -> tuple[str, int | None] | None:
        """The forward reaches the file's own kernel only inside ``if`` tests that demand a reduced
        precision (``x.dtype == torch.float16``) where the reference computes in full precision:
        on the inputs it is judged on, torch computes every call (makora's "ghost optimization
        branch"). The test's text and line, or None."""
        if self.reference is None or ref_is_half(self.reference):
            return None
        by_name = {f.name: f for f in self.functions}
        found: tuple[str, int | None] | None = None
        for fn in self.forwards:
            for n in of(fn, ast.Call):
                callee = by_name.get(n.func.id) if isinstance(n.func, ast.Name) else \
                    by_name.get(n.func.attr) if isinstance(n.func, ast.Attribute) and \
                    isinstance(n.func.value, ast.Name) and n.func.value.id in ("self", "cls") else None
                if not (self.is_custom_call(n) or (callee is not None and callee is not fn and
                                                    self.calls_custom(callee))):
                    continue
                test = self._half_only_test(n, fn)
                if test is None:
                    return None  # a custom call the judged inputs reach
                found = found or test
        return found

    def _half_only_test(self, node: ast.AST, fn: ast.AST) -> tuple[str, int | None] | None:
        cur = node
        while cur is not fn:
            p = self.parent.get(cur)
            if p is None:
                return None
            if isinstance(p, ast.If) and cur in p.body and self._demands_half(p.test):
                return _short(p.test, 60), self.line(p)
            cur = p
        return None

    def _demands_half(self, test: ast.AST) -> bool:
        """``x.dtype == torch.float16`` / ``x.dtype in (torch.half, torch.bfloat16)``, alone or in an ``and``."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._demands_half(v) for v in test.values)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.In))):
            return False
        sides = [test.left, *test.comparators]
        if not any(isinstance(x, ast.Attribute) and x.attr == "dtype" for x in sides):
            return False
        other = test.comparators[0] if isinstance(test.left, ast.Attribute) and test.left.attr == "dtype" \
            else test.left
        vals = other.elts if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else [other]
        return bool(vals) and all((self.resolve(v) or "") in _HALF_DTYPES for v in vals)

    def _is_local_tensor(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Name) or node.id in self.alias:
            return False
        return node.id not in self.custom_names  # ext.mm(...): the extension's own function
