"""The Python analysis: one walk over the parsed kernel source, then the other checks.
"""

from __future__ import annotations

import ast

from ktui.trace.findings.analysis import _dotted, _short, _strings
from ktui.trace.findings.astwalk import of, walk
from ktui.trace.findings.dataflow import _PyDataflow
from ktui.trace.findings.model import ERROR, INFO, TF32_ONLY, WARNING
from ktui.trace.findings.names import (
    _BACKEND_CALLS,
    _BUILD_ENV,
    _BUILD_ENV_NAME,
    _COMPARE_NAMES,
    _CUDNN_SPEED,
    _DYNAMIC,
    _ENV_CALLS,
    _FRAME_ATTRS,
    _FRAME_CALLS,
    _FRESH_SEED,
    _GC_CALLS,
    _GRAPH_CALLS,
    _HARNESS_WORDS,
    _JOINABLE,
    _OUTPUT_CALLS,
    _PATCH_ROOTS,
    _PATH_METHODS,
    _PROCESS_CALLS,
    _RNG_CALLS,
    _SOURCE_FILE,
    _STATS_ROOTS,
    _THREAD_BASES,
    _THREAD_CALLS,
    _TIMER_WORDS,
    _TORCH_FLAG_DEFAULTS,
    _TRACE_HOOKS,
    _VERDICT_CLAIM,
    _profiler_query,
    ref_is_half,
)
from ktui.trace.findings.weights import weight_precompute

#: the nodes the first walk of :meth:`_PyAnalysis.run` looks at (the others: names, constants,
#: operators, contexts, never reach a branch of it)
_RUN_TYPES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Call, ast.Attribute, ast.ClassDef, ast.FunctionDef,
              ast.AsyncFunctionDef, ast.Try, ast.Import, ast.ImportFrom)


class _PyAnalysis(_PyDataflow):
    """The whole Python analysis: one walk over the tree (patches, calls, classes), then the
    value-following checks, then the embedded native sources."""

    def run(self) -> None:
        torch_op = self.fallbacks()
        for node in of(self.tree, _RUN_TYPES):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for tt in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                        if isinstance(tt, ast.Attribute):
                            self.patch(self.resolve(tt), node)
                        elif isinstance(tt, ast.Subscript):
                            self.subscript_store(tt, node)
            elif isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Attribute):
                if node.attr in _FRAME_ATTRS:
                    self.add("frame_introspection", ERROR, f"reads interpreter frames ({_short(node)})",
                             self.line(node))
                elif node.attr in ("__builtins__", "__globals__", "__closure__", "__code__") and \
                        isinstance(node.ctx, ast.Load):
                    self.add("frame_introspection", ERROR, f"reaches into function internals ({_short(node)})",
                             self.line(node))
                if _profiler_query(node.attr):
                    self.profiler_sniffing(node.attr, node)
                d = self.resolve(node)
                if d in _TRACE_HOOKS and isinstance(node.ctx, ast.Load):
                    self.profiler_sniffing(d, node)
                if d == "os.environ" and not self.build_env_use(node):
                    self.add("env_file_access", WARNING, "reads or changes the environment (os.environ)",
                             self.line(node))
                elif d in ("sys.modules", "__main__") and isinstance(node.ctx, ast.Load):
                    self.add("frame_introspection", WARNING, f"reaches other modules through {d}",
                             self.line(node))
            elif isinstance(node, ast.ClassDef):
                self.classdef(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and self.is_triton_kernel(node):
                self.triton_marker(node)
            elif isinstance(node, ast.Try):
                self.try_fallback(node, torch_op)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if isinstance(node, ast.ImportFrom):
                    for a in node.names:
                        if _profiler_query(a.name):
                            self.profiler_sniffing(a.name, node)
                for m in mods:
                    if m.split(".")[0] == "ctypes":
                        self.add("ctypes_memory", WARNING, "imports ctypes (raw memory and C calls from Python)",
                                 self.line(node))
                    if m == "__main__":
                        self.add("frame_introspection", WARNING, "imports __main__ (the harness's module)",
                                 self.line(node))
        self.ptr_caches()
        self.extension_sniffing()
        self.call_counting()
        self.result_cache()
        wp = weight_precompute(self.tree, self.reference)
        if wp is not None:
            self.add("weight_precompute", WARNING, wp[1], self.line(wp[0]))
        for fn in self.judged_forwards:
            self.inputs_and_outputs(fn)
        self.side_stream()
        self.python_shapes()
        chunks = []
        for node in of(self.tree, ast.Constant):
            if isinstance(node.value, str) and len(node.value) > 20 and \
                    any(k in node.value for k in ("__global__", "#include", "torch::", "at::", "cublas", "cuda")):
                chunks.append((node.value, node.lineno if not node.value.startswith("\n") else node.lineno))
        self.native(chunks, torch_op)
        self.settle_fallback()

    # ---- attribute patches -----------------------------------------------------------------------
    def patch(self, target: str | None, node: ast.AST) -> None:
        if not target or "." not in target:
            return
        root = target.split(".")[0]
        if root not in _PATCH_ROOTS:
            return
        line = self.line(node)
        last = target.rsplit(".", 1)[-1]
        value = node.value if isinstance(node, ast.Assign) else None
        if target in _TORCH_FLAG_DEFAULTS and isinstance(value, ast.Constant) \
                and value.value is _TORCH_FLAG_DEFAULTS[target]:
            # torch's own default (cudnn.allow_tf32 is True unless someone turns it off): nothing changes
            self.add("backend_flags", INFO, f"sets {target} to torch's default ({value.value}): no change", line)
        elif target in _CUDNN_SPEED:
            # cuDNN's choice among its own full-precision algorithms (benchmark, deterministic, fastest,
            # workspace_limit, enabled), for the reference too: a speed setting, not a change of precision
            # (212 of CUDA-L1's 867 kernels set benchmark, 74 deterministic); allow_tf32 stays a flag
            self.add("backend_flags", INFO, f"sets {target} (which of cuDNN's full-precision algorithms runs, for "
                     "the reference too: a speed setting, not a precision change)", line)
        elif target.startswith("torch.backends.") or target in ("torch.cuda.matmul.allow_tf32",):
            self.add("backend_flags", WARNING, f"sets {target} (a global flag that also changes the reference's "
                     "numerics or speed)", line)
        elif root == "time" or any(w in target for w in _TIMER_WORDS):
            self.add("timer_patch", ERROR, f"replaces {target} (the timer that measures it)", line)
        elif any(target.startswith(s) for s in _STATS_ROOTS):
            self.add("stats_patch", ERROR, f"replaces {target} (the statistics its timings are reduced with)", line)
        elif target.startswith("torch.Tensor.") or (root == "torch" and last in _COMPARE_NAMES):
            self.add("tensor_method_override", ERROR, f"replaces {target} (tensor comparisons can no longer be "
                     "trusted)", line)
        elif root == "gc":
            self.add("gc_introspection", ERROR, f"replaces {target}", line)
        elif not self._pass_through(target, node):
            self.add("monkey_patch", ERROR, f"replaces {target} (code outside the kernel now behaves differently)",
                     line)

    def _pass_through(self, target: str, node: ast.AST) -> bool:
        """``dist.init_process_group = patched_init`` where ``patched_init`` calls the saved original
        with every argument it was given and returns its result (or nothing): a hook that adds its
        own setup (a GPU MODE submission's peer-to-peer buffers), not a replacement of what it does."""
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)):
            return False
        fn = next((f for f in self.tree.body if isinstance(f, ast.FunctionDef) and f.name == node.value.id), None)
        if fn is None:
            return False
        originals = {t.id for st in self.tree.body if isinstance(st, ast.Assign) and self.resolve(st.value) == target
                     for t in st.targets if isinstance(t, ast.Name)}
        a = fn.args
        own = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + \
            [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        calls = [c for c in of(fn, ast.Call) if isinstance(c.func, ast.Name) and c.func.id in originals]
        if not originals or len(calls) != 1:
            return False
        passed = {x.id for x in of(calls[0], ast.Name)} - originals
        if set(own) - passed:
            return False  # an argument dropped or replaced
        held = {t.id for st in of(fn, ast.Assign) if st.value is calls[0]
                for t in st.targets if isinstance(t, ast.Name)}
        return all(r.value is None or r.value is calls[0] or (isinstance(r.value, ast.Name) and r.value.id in held)
                   for r in of(fn, ast.Return))

    def namespace_of(self, node: ast.AST) -> str | None:
        """What ``vars(M)`` / ``M.__dict__`` / ``getattr(M, "__dict__")`` is the namespace of (``M``
        resolved: ``torch``, ``torch.Tensor``, ``time``): writing into it replaces ``M``'s attributes."""
        if isinstance(node, ast.Call) and (self.resolve(node.func) or "") in ("vars", "builtins.vars") and \
                len(node.args) == 1:
            return self.resolve(node.args[0])
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return self.resolve(node.value)
        if isinstance(node, ast.Call) and (self.resolve(node.func) or "") == "getattr" and len(node.args) >= 2 and \
                self.const_str(node.args[1]) == "__dict__":
            return self.resolve(node.args[0])
        return None

    def namespace_write(self, node: ast.Call) -> bool:
        """``vars(torch).update(allclose=f)``, ``torch.testing.__dict__.update({"assert_close": f})``,
        ``.__setitem__`` / ``.setdefault`` likewise: each name written is a patch of the module."""
        if not (isinstance(node.func, ast.Attribute) and node.func.attr in ("update", "__setitem__", "setdefault")):
            return False
        ns = self.namespace_of(node.func.value)
        if not ns:
            return False
        names = [k.arg for k in node.keywords if k.arg] or ["?"]
        if node.func.attr != "update" and node.args:
            names = [self.const_str(node.args[0]) or "?"]
        elif node.args and isinstance(node.args[0], ast.Dict):
            names = [self.const_str(k) or "?" for k in node.args[0].keys if k is not None] or names
        for n in names:
            self.patch(f"{ns}.{n}", node)
        return True

    def subscript_store(self, tt: ast.Subscript, node: ast.AST) -> None:
        ns = self.namespace_of(tt.value)
        if ns:  # vars(torch)["allclose"] = f
            self.patch(f"{ns}.{self.const_str(tt.slice) or '?'}", node)
            return
        base = self.resolve(tt.value)
        if base in ("builtins.__dict__", "__builtins__", "sys.modules", "globals()"):
            self.add("monkey_patch", ERROR, f"rewrites {base}[...]", self.line(node))
        elif base == "os.environ" and not self.build_env_key(tt.slice):
            self.add("env_file_access", WARNING, f"sets the environment variable {_short(tt.slice)}", self.line(node))

    def build_env_key(self, key: ast.AST) -> bool:
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and \
            (key.value in _BUILD_ENV or bool(_BUILD_ENV_NAME.match(key.value)))

    def build_env_use(self, node: ast.Attribute) -> bool:
        """os.environ used only to read or set a build variable (TORCH_CUDA_ARCH_LIST ...)."""
        p = self.parent.get(node)
        if isinstance(p, ast.Subscript) and p.value is node:
            return isinstance(p.ctx, ast.Store) or self.build_env_key(p.slice)  # stores: see subscript_store
        if isinstance(p, ast.Attribute) and p.value is node:
            call = self.parent.get(p)
            if isinstance(call, ast.Call) and call.args and p.attr in ("get", "setdefault", "pop"):
                return self.build_env_key(call.args[0])
        return False

    def build_plumbing(self, f: str, node: ast.Call) -> bool:
        """The extension's build, not the environment: the home directory inside ``load_inline``'s
        ``build_directory=`` (``os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions")``), and a
        C++/CUDA source file opened for writing (``open(os.path.join(d, "k.cu"), "w")``) to be compiled.
        CUDA-L1 does both in 35 of its kernels. Reading a file, or writing one of any other name, stays."""
        if f in ("os.path.expanduser", "pathlib.Path.home"):
            p = self.parent.get(node)
            while p is not None and not isinstance(p, ast.stmt):
                if isinstance(p, ast.keyword):
                    return p.arg == "build_directory"
                p = self.parent.get(p)
            return False
        if f in ("open", "io.open") and len(node.args) >= 1:
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                               None)
            if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and mode.value[:1] in "wx"):
                return False
            pieces = [x.value for x in walk(node.args[0]) if isinstance(x, ast.Constant) and isinstance(x.value, str)]
            return bool(pieces) and bool(_SOURCE_FILE.search(pieces[-1]))
        return False

    def _passed_on(self, node: ast.AST) -> bool:
        p = self.parent.get(node)
        if isinstance(p, ast.keyword):
            p = self.parent.get(p)
        return isinstance(p, ast.Call) and node is not p.func

    def profiler_sniffing(self, name: str, node: ast.AST) -> None:
        self.add("profiler_sniffing", ERROR, f"asks whether a profiler is running ({name}): it can do less work "
                 "when profiled (ktui counts launches and looks for hidden work in a profiled forward)", self.line(node))

    # ---- calls --------------------------------------------------------------------------------------
    def dot(self, node: ast.Call, line: int | None) -> None:
        """tl.dot: TF32 chosen against a full-precision reference, or Triton's TF32 default (info)."""
        tf32 = _dot_tf32(node)
        if tf32 is None or (self.reference is not None and ref_is_half(self.reference)):
            return
        if tf32 == "chosen" and not self.has("precision_downgrade"):
            self.add("precision_downgrade", WARNING, f"computes in reduced precision ({_short(node, 60)}: TF32, a "
                     "10-bit mantissa) where the reference is full precision", line)
        elif tf32 == "default" and not self.has("triton_tf32_default"):
            self.add("triton_tf32_default", INFO, "tl.dot without input_precision='ieee': on float32 operands "
                     "Triton computes it in TF32 (10-bit mantissa) by default, so against a float32 reference "
                     "the run-time check may name the kernel reduced precision; that is Triton's default, "
                     "not necessarily a choice" + ("" if self._triton_narrow_types() else TF32_ONLY), line)

    def _triton_narrow_types(self) -> bool:
        """A Triton kernel of the file names a type narrower than float32 (``x.to(tl.float16)``, a
        bfloat16 output branch): 10-bit outputs may then come from it rather than tl.dot's default."""
        for fn in of(self.tree, ast.FunctionDef):
            if self.is_triton_kernel(fn):
                for a in of(fn, ast.Attribute):
                    d = self.resolve(a) or ""
                    last = d.rsplit(".", 1)[-1]
                    if d.startswith("triton.language.") and (last in ("float16", "bfloat16") or last.startswith("float8")):
                        return True
        return False

    def call(self, node: ast.Call) -> None:
        f = self.resolve(node.func)
        line = self.line(node)
        if f is None:
            return
        if f in _FRESH_SEED and self._passed_on(node):
            return  # torch.seed() as an argument: a fresh non-deterministic seed for the kernel's own RNG
        if f in _RNG_CALLS:  # the process's global generators (a private torch.Generator is not one)
            self.add("rng_seed", WARNING, f"reads or sets the global random seed ({_short(node.func)}): with it a "
                     "kernel can try to rebuild the inputs it will be judged on and answer them ahead of time", line)
            return
        if self.namespace_write(node):
            return
        if f in ("setattr", "builtins.setattr", "object.__setattr__", "type.__setattr__", "builtins.type.__setattr__") \
                and len(node.args) >= 2:
            obj = self.resolve(node.args[0])
            cs = self.const_str(node.args[1])
            name = cs if cs is not None else node.args[1].value if isinstance(node.args[1], ast.Constant) else "?"
            if obj:
                self.patch(f"{obj}.{str(name)}", node)  # (str: a bytes constant reads as b'...', as before)
            return
        what = _THREAD_CALLS.get(f)
        if what:
            if f in _JOINABLE and self.thread_joined(node):
                return  # started and waited for in the same function: the work is inside the call
            self.add("threads", ERROR, f"{what} ({_short(node.func)}): work can run outside the timed call", line)
            return
        what = _FRAME_CALLS.get(f)
        if what:
            self.add("frame_introspection", ERROR, f"{what}: it can tell who calls it (the harness or the timer)",
                     line)
            return
        if f in _GC_CALLS:
            if _GC_CALLS[f]:
                self.add("gc_introspection", ERROR, f"{_GC_CALLS[f]}: it can find and change other tensors, the "
                         "reference's output included", line)
            return
        if f in _BACKEND_CALLS:
            self.add("backend_flags", WARNING, f"calls {f}({', '.join(_short(a, 30) for a in node.args)}) (a global "
                     "setting that also changes the reference)", line)
            return
        if f in ("triton.language.dot", "tl.dot"):
            self.dot(node, line)
            return
        if f in _GRAPH_CALLS:
            self.add("cuda_graph", WARNING, f"captures or replays a CUDA graph ({f}): a replay reruns the captured "
                     "buffers, whatever the new inputs are", line)
            return
        if f in _ENV_CALLS:
            if f in ("os.getenv", "os.environ.get") and node.args and self.build_env_key(node.args[0]):
                return
            if self.build_plumbing(f, node):
                return
            self.add("env_file_access", WARNING, f"{_ENV_CALLS[f]} ({_short(node, 50)})", line)
            return
        if f in _PROCESS_CALLS:
            if _PROCESS_CALLS[f]:
                self.add("process_control", WARNING, f"{_PROCESS_CALLS[f]} ({_short(node, 50)})", line)
            return
        if f in _DYNAMIC:
            if f == "compile" and (node.keywords or len(node.args) < 3):
                return  # a local function named compile, or re.compile-like use: not builtin compile(src, fn, mode)
            if f in ("__import__", "importlib.import_module") and node.args and isinstance(node.args[0], ast.Constant):
                return
            self.add("dynamic_code", WARNING, _DYNAMIC[f], line)
            return
        if f in _OUTPUT_CALLS:
            self.output(f, node)
            return
        if f in ("torch.Tensor._make_subclass", "torch.Tensor.as_subclass") or f.endswith("._make_subclass") or \
                f.endswith(".as_subclass"):
            self.add("tensor_subclass", ERROR, f"makes a tensor subclass ({_short(node.func)}): an output whose "
                     "values or comparisons can be faked", line)
            return
        if f.endswith(".__setattr__") and f.startswith(("torch.", "time.", "sys.")):
            self.patch(f.rsplit(".", 1)[0] + ".?", node)
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_METHODS and \
                isinstance(node.func.value, ast.Call):
            inner = self.resolve(node.func.value.func)
            if inner in ("pathlib.Path", "Path", "pathlib.PurePath"):
                self.add("env_file_access", WARNING, f"accesses a file ({_short(node, 50)})", line)

    def thread_joined(self, node: ast.Call) -> bool:
        """A thread, pool or executor created in a function that also waits for it before it
        returns: ``t.join()`` on the name it is bound to (or on every item of the list it was put
        in), an executor used as a context manager (``with ThreadPoolExecutor() as ex``) or one
        whose futures' ``.result()`` / ``shutdown()`` is awaited there. A join with a timeout
        does not count (the thread may still run)."""
        fn = self._enclosing(node)
        if isinstance(fn, ast.Module):
            return False  # a module-level thread runs beside everything
        holders: set[str] = set()
        cur: ast.AST = node
        for _ in range(8):
            p = self.parent.get(cur)
            if p is None or p is fn:
                break
            if isinstance(p, ast.withitem) and p.context_expr is cur:
                return not self._no_wait_shutdown(fn)
            if isinstance(p, (ast.Assign, ast.AnnAssign)):
                for t in (p.targets if isinstance(p, ast.Assign) else [p.target]):
                    d = _dotted(t)
                    if d:
                        holders.add(d)
                break
            if isinstance(p, ast.Call) and isinstance(p.func, ast.Attribute) and p.func.attr in ("append", "add",
                                                                                              "extend", "insert"):
                d = _dotted(p.func.value)
                if d:
                    holders.add(d)
                break
            if isinstance(p, ast.Attribute) and p.attr == "start" and isinstance(self.parent.get(p), ast.Call):
                return False  # threading.Thread(...).start(): nothing holds it, nothing can join it
            cur = p
        if not holders:
            return False
        # names that alias a holder's items: for t in threads / [t.join() for t in threads]
        alias = set(holders)
        for n in of(fn, ast.Call):  # threads.append(t): the list holds it too
            if isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "add") \
                    and n.args and (_dotted(n.args[0]) or "") in alias:
                d = _dotted(n.func.value)
                if d:
                    alias.add(d)
        for n in of(fn, (ast.For, ast.comprehension, ast.Assign)):
            if isinstance(n, (ast.For, ast.comprehension)):
                it = _dotted(n.iter) or ""
                if it in alias and isinstance(n.target, ast.Name):
                    alias.add(n.target.id)
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                v = _dotted(n.value) or ""
                if v in alias:
                    alias.add(n.targets[0].id)
        executor = any(k in (self.resolve(node.func) or "") for k in ("Executor", "Pool"))
        for n in of(fn, ast.Call):
            if not isinstance(n.func, ast.Attribute):
                continue
            base = _dotted(n.func.value) or ""
            if n.func.attr == "join" and base in alias and not n.args and not n.keywords:
                return True
            if executor and (base in alias or base.split(".")[0] in alias) and n.func.attr == "shutdown" \
                    and not self._no_wait_shutdown(fn):
                return True
            if executor and n.func.attr == "result" and not n.args:
                return True  # futures of it are awaited
        return False

    @staticmethod
    def _no_wait_shutdown(fn: ast.AST) -> bool:
        return any(isinstance(n.func, ast.Attribute) and n.func.attr == "shutdown"
                   and any(k.arg == "wait" and isinstance(k.value, ast.Constant) and k.value.value is False
                           for k in n.keywords) for n in of(fn, ast.Call))

    def output(self, f: str, node: ast.Call) -> None:
        line = self.line(node)
        if f == "os.write":
            fd = node.args[0] if node.args else None
            fdv = fd.value if isinstance(fd, ast.Constant) else None
            self.add("fake_harness_output", ERROR, f"writes straight to file descriptor {str(fdv) if fdv is not None else '?'}"
                     " (the harness's output or protocol channel)", line)
            return
        text = " ".join(s for a in list(node.args) + [k.value for k in node.keywords] for s in _strings(a))
        m = _HARNESS_WORDS.search(text)
        if m and self._reports_handled_error(node, text):
            return
        if m:
            shown = " ".join(text.split())[:50]
            self.add("fake_harness_output", ERROR, f"prints text that reads like harness output (\"{shown}\")",
                     line)

    def _reports_handled_error(self, node: ast.Call, text: str) -> bool:
        """``except Exception as e: print(f"CUDA kernel failed, falling back: {e}")``: a message printed
        in an ``except`` handler that shows the exception it handles reports an error (CUDA-L1 printed
        this in 122 of its kernels); a verdict-like claim (passed, correct, a speedup) there is still one."""
        if _VERDICT_CLAIM.search(text):
            return False
        p = self.parent.get(node)
        while p is not None and not isinstance(p, ast.ExceptHandler):
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False
            p = self.parent.get(p)
        if p is None or not p.name:
            return False
        name = p.name
        return any(isinstance(v, ast.FormattedValue) and any(isinstance(x, ast.Name) and x.id == name
                                                             for x in ast.walk(v.value))
                   for a in list(node.args) + [k.value for k in node.keywords] for v in ast.walk(a)) or any(
            isinstance(a, ast.Name) and a.id == name for a in node.args)

    # ---- classes ------------------------------------------------------------------------------------
    def triton_marker(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A Triton kernel that writes nothing (no tl.store, no atomic, no inline asm) is a marker."""
        if any(n.value is not None for n in of(fn, ast.Return)):
            return  # a device function (``@triton.jit def mish(x): return ...``) called by a kernel, not a launch
        for n in of(fn, ast.Call):
            if isinstance(n.func, ast.Attribute) and (
                    n.func.attr in ("store", "inline_asm_elementwise", "device_print")
                    or n.func.attr.startswith("atomic_")):
                return
        if not self.has("dummy_kernel"):
            self.add("dummy_kernel", ERROR, f"@triton.jit {fn.name} writes nothing (no tl.store): a marker kernel "
                     "that only satisfies static checks", fn.lineno)

    def classdef(self, node: ast.ClassDef) -> None:
        bases = [self.resolve(b) or "" for b in node.bases]
        line = self.line(node)
        for b in bases:
            if b in ("torch.Tensor", "torch._tensor.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                self.add("tensor_subclass", ERROR, f"defines {node.name}({b}), a tensor subclass: an output whose "
                         "values or comparisons can be faked", line)
            if b in _THREAD_BASES:
                self.add("threads", ERROR, f"defines {node.name}({b}): work can run outside the timed call", line)
        container = next((b for b in bases if b in ("list", "tuple", "dict", "set", "frozenset", "float", "int",
                                                     "collections.UserList", "collections.UserDict", "object",
                                                     "typing.NamedTuple")), None)
        for st in node.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if st.name in ("__eq__", "__ne__"):
                    kind = f" on a {container} subclass" if container and container != "object" else ""
                    self.add("eq_override", ERROR, f"{node.name} defines {st.name}{kind} (can loosen the correctness "
                             "comparison)", st.lineno)
                elif st.name in ("__torch_function__", "__torch_dispatch__"):
                    self.add("tensor_subclass", ERROR, f"{node.name} defines {st.name} (it intercepts torch "
                             "operations on its objects, comparisons included)", st.lineno)
                elif st.name in ("__bool__", "__float__", "__array__", "__index__") and container is not None:
                    self.add("eq_override", WARNING, f"{node.name} defines {st.name} (what a check reads from it can "
                             "be faked)", st.lineno)

    # ---- checks on its own extension ------------------------------------------------------------------
    def extension_sniffing(self) -> None:
        """Code that asks whether its extension's functions are still the ones it built (their type,
        identity or name): it can tell when they are swapped out (ktui's ghost run) and be wrong on
        purpose then, so that the extension looks as if it did the work."""
        exts = {t.id for n in of(self.tree, ast.Assign) if self.is_build(n.value)
                for t in n.targets if isinstance(t, ast.Name)}
        if not exts:
            return

        def ext_fn(n: ast.AST) -> bool:  # mod.fn (not called)
            return isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in exts \
                and not (isinstance(p := self.parent.get(n), ast.Call) and p.func is n)

        for n in of(self.tree, (ast.Compare, ast.Call, ast.Attribute)):
            what = None
            if isinstance(n, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
                                                  for op in n.ops):
                if any(ext_fn(x) for x in [n.left, *n.comparators]):
                    what = "compares one of its extension's functions by identity"
            elif isinstance(n, ast.Call) and (self.resolve(n.func) or "") in ("type", "id", "isinstance", "repr") \
                    and any(ext_fn(a) for a in n.args):
                what = f"asks {self.resolve(n.func)}() of one of its extension's functions"
            elif isinstance(n, ast.Attribute) and n.attr in ("__name__", "__qualname__", "__module__", "__class__",
                                                             "__self__", "__doc__", "__text_signature__") \
                    and ext_fn(n.value):
                what = f"reads {n.attr} of one of its extension's functions"
            if what:
                self.add("extension_sniffing", ERROR, f"{what} ({_short(n)}): it can tell when they are swapped "
                         "out and then be wrong on purpose, so that the extension seems to do the work",
                         self.line(n))
                return


def _dot_tf32(node: ast.Call) -> str | None:
    """How a ``tl.dot`` computes float32 operands: "default" (Triton's default, TF32: no
    ``input_precision`` keyword or fourth argument, no ``allow_tf32``), "chosen" (TF32 asked for:
    ``input_precision="tf32"``, ``allow_tf32=True``) or None (another precision, or not known)."""
    for kw in node.keywords:
        if kw.arg in ("input_precision", "allow_tf32"):
            v = kw.value.value if isinstance(kw.value, ast.Constant) else None
            return "chosen" if v in ("tf32", True) else None  # "ieee", "tf32x3", False, a variable
        if kw.arg is None:
            return None  # **kwargs: not known
    if len(node.args) >= 4:
        v = node.args[3].value if isinstance(node.args[3], ast.Constant) else None
        return "chosen" if v == "tf32" else None
    return "default"
