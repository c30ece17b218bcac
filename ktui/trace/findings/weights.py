"""``weight_precompute``: a product of the module's weights computed once and used by forward in their place.

A kernel that folds its parameters (``self.w_scaled = self.weight * s``, ``self.b = self.gemm.bias +
self.bias``, ``self.w_sum = self.linear.weight.sum(0)``, a BatchNorm folded into a convolution, the
weight's ``.data`` divided in place) at construction, or once on a first call behind a one-time flag,
answers for the parameters it was built with: a training step, a loaded checkpoint, any change of a
parameter is never seen (issue 26; ``parameter_update`` is the probe that shows it). What is not this class:

- a pure re-layout (``.t()``, ``.permute``, ``.contiguous()``, ``.flip``, ``.view``, a dtype or device
  move, ``.clone()``): the same numbers, laid out for the kernel (the probe still checks that it is kept
  up to date);
- a value re-made in forward (or under a test of the weights' ``_version`` / ``data_ptr()`` / shape):
  it follows the parameters;
- a new ``nn.Parameter`` made from the product: the kernel's own learnable parameter (training updates it);
- a product the reference computes at construction as well;
- constants that are not the module's state (``1 / math.sqrt(d)``), and values forward never reads.

No torch here (the trace domain); never raises (the caller guards).
"""

from __future__ import annotations

import ast
import re

from ktui.trace.findings.astwalk import of, walk

#: methods and functions that compute new numbers (a re-layout or a move is not one of them)
_COMPUTE = frozenset({
    "matmul", "mm", "bmm", "einsum", "addmm", "baddbmm", "mul", "div", "add", "sub", "sum", "mean", "exp",
    "sqrt", "rsqrt", "pow", "linear", "conv1d", "conv2d", "conv3d", "tanh", "sigmoid", "softmax", "cumsum",
    "prod", "inverse", "norm", "reciprocal", "log", "outer", "kron", "tensordot", "dot", "mv", "mul_", "div_",
    "add_", "sub_", "addcmul", "addcdiv", "true_divide", "multiply", "divide", "subtract", "square", "amax",
    "logsumexp", "var", "std", "chain_matmul", "multi_dot", "fold", "batch_norm",
})
_ARITH = (ast.Mult, ast.MatMult, ast.Div, ast.Add, ast.Sub, ast.Pow, ast.FloorDiv)
_STATE_LEAVES = ("weight", "bias", "running_mean", "running_var")
#: a tensor's description, not its values
_META = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "grad_fn"})
_META_CALLS = frozenset({"size", "numel", "dim", "nelement", "element_size", "data_ptr", "stride", "is_contiguous",
                         "get_device", "storage_offset"})
#: words in a test that follow the parameters (the product re-made when they change)
_FOLLOWS = re.compile(r"_version|data_ptr|\bshape\b|\bsize\(|\bweight\b|\bbias\b|\bparameters\(|\bstate_dict\b")


def _self_attr(node: ast.AST) -> str | None:
    """``self.a.b.c`` -> ``a.b.c``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and parts:
        return ".".join(reversed(parts))
    return None


def _fn_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_parameter_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _fn_name(node) in ("Parameter", "UninitializedParameter")


class _Module:
    """One ``nn.Module`` class: its state (parameters, submodules' weights), its methods."""

    def __init__(self, cls: ast.ClassDef):
        self.cls = cls
        self.methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.params: set[str] = set()
        self.mods: set[str] = set()
        init = self.methods.get("__init__")
        for n in of(init, ast.Assign) if init is not None else ():
            for t in n.targets:
                a = _self_attr(t)
                if a is None or "." in a or not isinstance(n.value, ast.Call):
                    continue
                f = ast.unparse(n.value.func)
                if _fn_name(n.value) == "Parameter":
                    self.params.add(a)
                elif f.startswith(("nn.", "torch.nn.")) and f.split(".")[-1][:1].isupper():
                    self.mods.add(a)
        for c in of(init, ast.Call) if init is not None else ():
            if _fn_name(c) in ("register_parameter", "register_buffer") and c.args and \
                    isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str) and \
                    not (len(c.args) > 1 and self._state(c.args[1], set())):
                self.params.add(c.args[0].value)

    def input_fed(self) -> set[str]:
        """Attributes a call's inputs are written into (``self.static_input.copy_(x)``, ``self.last = x``):
        what is computed from them is not a product of the weights alone."""
        out: set[str] = set()
        for name, fn in self.methods.items():
            if name == "__init__":
                continue
            args = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]} - {"self"}
            for n in walk(fn):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("copy_", "set_") \
                        and any(isinstance(x, ast.Name) and x.id in args for a in n.args for x in walk(a)):
                    a = _self_attr(n.func.value)
                    if a:
                        out.add(a)
                elif isinstance(n, ast.Assign) and any(isinstance(x, ast.Name) and x.id in args for x in walk(n.value)):
                    out |= {a for a in (_self_attr(t) for t in n.targets) if a}
        return out

    def _state(self, expr: ast.AST, derived: set[str]) -> str | None:
        """The module state whose VALUES ``expr`` reads (``self.weight``, ``self.fc.bias``, a local derived
        from it); its shape, dtype or device (``self.weight.shape[0] ** -0.5``) is not its values."""
        meta = set()
        for n in walk(expr):
            if isinstance(n, ast.Attribute) and n.attr in _META:
                meta.add(id(n.value))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _META_CALLS:
                meta.add(id(n.func.value))
        for n in walk(expr):
            if id(n) in meta:
                continue
            a = _self_attr(n) if isinstance(n, ast.Attribute) else None
            if a is not None:
                head, _, rest = a.partition(".")
                if (head in self.params and rest in ("", "data")) or \
                        (head in self.mods and rest.removesuffix(".data") in _STATE_LEAVES):
                    return "self." + a.removesuffix(".data")
            if isinstance(n, ast.Name) and n.id in derived:
                return n.id
        return None

    def products(self, fn: ast.AST) -> list[tuple[str, ast.AST, str]]:
        """``(target, node, what)`` for each ``self.X = <a product of the state>`` in ``fn``, following
        locals (``s = self.bn.weight / ...; self.w = self.conv.weight * s``); ``self.p.data = ...``
        (a parameter changed in place) included."""
        out: list[tuple[str, ast.AST, str]] = []
        derived: dict[str, bool] = {}  # a local read from the state -> whether it computed
        inputs: set[str] = set()
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != "__init__":
            # (the constructor's arguments are configuration, not the forward's inputs)
            args = fn.args
            inputs = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self"}
            inputs |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        fed = self.input_fed()
        nodes = [n for n in walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.Call))]
        nodes.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        for n in nodes:
            if isinstance(n, ast.Assign) and any(isinstance(x, ast.Name) and x.id in inputs for x in walk(n.value)):
                inputs |= {t.id for t in n.targets if isinstance(t, ast.Name)}  # from the call's inputs
                continue
            if isinstance(n, ast.Assign):
                targets, value = n.targets, n.value
            elif isinstance(n, ast.AugAssign):
                targets, value = [n.target], ast.BinOp(n.target, n.op, n.value)
            elif isinstance(n, ast.Call) and _fn_name(n) == "register_buffer" and len(n.args) >= 2 and \
                    isinstance(n.args[0], ast.Constant):
                targets, value = [ast.Attribute(ast.Name("self"), str(n.args[0].value))], n.args[1]
            else:
                continue
            if any(_is_parameter_call(v) for v in walk(value)):
                continue  # the kernel's own learnable parameter
            if any(isinstance(x, ast.Name) and x.id in inputs for x in walk(value)) or \
                    any(_self_attr(x) in fed for x in of(value, ast.Attribute)):
                continue  # reads the call's inputs: not a product of the weights alone
            src = self._state(value, set(derived))
            if src is None:
                continue
            computed = self._computes(value, set(derived)) or any(derived.get(x.id) for x in of(value, ast.Name))
            for t in targets:
                if isinstance(t, ast.Name):
                    derived[t.id] = derived.get(t.id, False) or computed
                elif computed and _self_attr(t) is not None:
                    out.append((_self_attr(t) or "", n, src))
        return out

    def _computes(self, expr: ast.AST, derived: set[str]) -> bool:
        """Arithmetic or a computing call on the state's values (``self.w * s``, ``self.w.sum(0)``); a
        re-layout's own arguments (``.view(out // groups, ...)``) are not the state's values."""
        for n in walk(expr):
            if isinstance(n, ast.BinOp) and isinstance(n.op, _ARITH):
                if self._state(n.left, derived) or self._state(n.right, derived):
                    return True
            elif isinstance(n, ast.Call) and _fn_name(n) in _COMPUTE:
                recv = n.func.value if isinstance(n.func, ast.Attribute) else None
                if (recv is not None and self._state(recv, derived)) or \
                        any(self._state(a, derived) for a in [*n.args, *(k.value for k in n.keywords)]):
                    return True
        return False

    def reads_outside_init(self, attr: str) -> bool:
        head = attr.split(".")[0]
        for name, fn in self.methods.items():
            if name == "__init__" or name in self.init_helpers():
                continue
            for n in of(fn, ast.Attribute):
                if isinstance(n.ctx, ast.Load) and _self_attr(n) in (attr, head):
                    return True
        return False

    def init_helpers(self) -> set[str]:
        """Methods called from ``__init__`` and from no other method (a ``_prepare()``)."""
        init = self.methods.get("__init__")
        if init is None:
            return set()

        def called(fn: ast.AST) -> set[str]:
            return {c.func.attr for c in of(fn, ast.Call) if isinstance(c.func, ast.Attribute)
                    and isinstance(c.func.value, ast.Name) and c.func.value.id == "self"}

        helpers = called(init) & set(self.methods)
        for name, fn in self.methods.items():
            if name != "__init__" and name not in helpers:
                helpers -= called(fn)
        return helpers - {"forward", "__call__"}

    def remade(self, attr: str, fn: ast.AST) -> bool:
        """``attr`` is assigned in ``fn`` unconditionally, set to None (invalidated), or under a test that
        is not a one-time one (a key of the weights' version or pointer, a mode): re-made when they change."""
        for n in walk(fn):
            if not isinstance(n, (ast.Assign, ast.AugAssign)):
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if not any(_self_attr(t) == attr for t in targets):
                continue
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None:
                return True  # invalidated (``self.fused_w = None`` when training): made again after
            tests = self._tests_above(n, fn)
            if not tests or any(_FOLLOWS.search(ast.unparse(t)) for t in tests) or \
                    not any(self._one_time(t, attr, fn) for t in tests):
                return True  # re-made on every call, or when something other than its absence says so
        return False

    @staticmethod
    def _tests_above(node: ast.AST, fn: ast.AST) -> list[ast.AST]:
        parents: dict[ast.AST, ast.AST] = {}
        for p in walk(fn):
            for c in ast.iter_child_nodes(p):
                parents[c] = p
        tests: list[ast.AST] = []
        cur = node
        while cur in parents:
            p = parents[cur]
            if isinstance(p, (ast.If, ast.While)) and cur is not p.test:
                tests.append(p.test)
            elif isinstance(p, ast.IfExp):
                tests.append(p.test)
            cur = p
        return tests

    def one_time_products(self) -> list[tuple[str, ast.AST, str]]:
        """Products made in forward (or a method it calls) only under a one-time test: one that reads
        the product itself (``if self.w is None:``, ``if not hasattr(self, "w")``) or a flag the same
        branch sets (``if not self.prepared: ...; self.prepared = True``); ``if self.training:`` and
        the like are not one-time."""
        out = []
        for name, fn in self.methods.items():
            if name == "__init__" or name in self.init_helpers():
                continue
            for attr, node, src in self.products(fn):
                tests = self._tests_above(node, fn)
                if tests and not any(_FOLLOWS.search(ast.unparse(t)) for t in tests) and \
                        any(self._one_time(t, attr, fn) for t in tests):
                    out.append((attr, node, src))
        return out

    def _one_time(self, test: ast.AST, attr: str, fn: ast.AST) -> bool:
        names = {a for a in (_self_attr(n) for n in of(test, ast.Attribute)) if a}
        names |= {c.args[1].value for c in of(test, ast.Call) if _fn_name(c) == "hasattr" and len(c.args) == 2
                  and isinstance(c.args[1], ast.Constant) and isinstance(c.args[1].value, str)}
        if attr in names or attr.split(".")[0] in names:
            return True
        flags = {_self_attr(t) for n in of(fn, ast.Assign) for t in n.targets
                 if isinstance(n.value, ast.Constant) and n.value.value is True}
        return bool(names & flags)


def _reference_products(reference: str | None) -> bool:
    """The reference computes a product of its weights at construction too."""
    if not reference or "__init__" not in reference:
        return False
    try:
        tree = ast.parse(reference)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    for cls in of(tree, ast.ClassDef):
        m = _Module(cls)
        init = m.methods.get("__init__")
        if init is not None and m.products(init):
            return True
    return False


def weight_precompute(tree: ast.AST, reference: str | None) -> tuple[ast.AST, str] | None:
    """The first product of the module's weights made once (at construction, or on a first call)
    and read by forward in their place: (node, what), or None."""
    found = []
    for cls in of(tree, ast.ClassDef):
        m = _Module(cls)
        if "forward" not in m.methods or (not m.params and not m.mods):
            continue
        init = m.methods.get("__init__")
        once = []
        for fn in ([init] if init is not None else []) + [m.methods[h] for h in sorted(m.init_helpers())]:
            once += [(a, n, s, "at construction") for a, n, s in m.products(fn)]
        once += [(a, n, s, "once, on a first call") for a, n, s in m.one_time_products()]
        for attr, node, src, when in once:
            if attr.endswith(".data") or attr.split(".")[-1] in _STATE_LEAVES:
                # a parameter itself changed (self.conv.weight.data = ... / d): forward reads it as usual
                found.append((node, f"changes {attr.removesuffix('.data')} itself from {src} {when}: forward uses "
                                    "the folded values, a parameter change is not folded again"))
                continue
            if not m.reads_outside_init(attr):
                continue
            if any(m.remade(attr, fn) for name, fn in m.methods.items()
                   if name != "__init__" and name not in m.init_helpers()):
                continue
            found.append((node, f"self.{attr} is computed from {src} {when} and read by forward in its place: a "
                                "parameter change is never seen"))
    if not found or _reference_products(reference):
        return None
    found.sort(key=lambda f: getattr(f[0], "lineno", 0) or 0)
    return found[0]
