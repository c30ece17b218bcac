"""Ghost run: does the kernel's own extension do the work?

The candidate worker replaces every function its load_inline / load extensions export (and every
reference to one held by the kernel's module or model), and the ``run`` of every Triton kernel
they hold, with a stub that raises, then runs the kernel once; when that fails, once more with
stubs that do nothing (a marker call passes through them). The judge compares what came back
with the reference: still correct means torch (or a fallback) computes the result, not the
custom kernel. A build that failed and was swallowed by the kernel (``failed_builds``) is the
same thing found earlier: its fallback ran.
"""

from __future__ import annotations

import types

from . import judge_probe, worker_probe

GHOST_SEED = 7919 + 11


class GhostError(RuntimeError):
    """Raised by every function of the kernel's own extensions during the ghost run."""


def extension_functions(modules):
    """(module, attribute name, function) of every callable an extension module exports."""
    out = []
    for mod in modules:
        for name in dir(mod):
            if name.startswith("__"):
                continue
            fn = getattr(mod, name, None)
            if callable(fn) and type(fn).__name__ in ("builtin_function_or_method", "function", "PyCapsule"):
                out.append((mod, name, fn))
    return out


def raising_stub(*args, **kwargs):
    raise GhostError("the kernel's extension was replaced for the ghost run")


def _first_tensor(args, kwargs):
    import torch

    return next((a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)), None)


def inert_stub(*args, **kwargs):
    """Does none of the work: returns NaN (zeros for integers) shaped like the first tensor
    argument, or None. A marker kernel whose result the kernel ignores passes through it."""
    import torch

    a = _first_tensor(args, kwargs)
    if a is None:
        return None
    return torch.full_like(a, float("nan")) if a.is_floating_point() else torch.zeros_like(a)


def identity_stub(*args, **kwargs):
    """Does none of the work and hands its first tensor argument back unchanged: a marker whose
    result the kernel then computes on with torch passes through it."""
    return _first_tensor(args, kwargs)


# the passes after the raising one: a stub doing no work, and what the verdict says it does
STUBS = {"inert": (inert_stub, "does nothing and returns NaN"),
         "identity": (identity_stub, "does nothing and returns its input")}


TRITON_TYPES = ("JITFunction", "Autotuner", "Heuristics")


def triton_kernels(holders):
    """Triton kernels (``@triton.jit`` functions, also behind autotune / heuristics) the kernel's
    module or model holds: ``kernel[grid](...)`` calls their ``run``."""
    out, seen = [], set()
    for h in holders:
        d = getattr(h, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for v in list(d.values()):
            if type(v).__name__ in TRITON_TYPES and callable(getattr(v, "run", None)) and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def _kernel_name(k):
    fn = getattr(k, "fn", None)
    return str(getattr(fn, "__name__", None) or getattr(k, "__name__", None) or type(k).__name__)


class Ghost:
    """Every extension function (and every attribute of ``holders`` bound to one) replaced by
    ``stub`` (default: one raising :class:`GhostError`), every Triton kernel's ``run`` by one that
    raises or (with a ``stub``) launches nothing; all put back on exit."""

    def __init__(self, modules, holders, stub=None):
        self.fns = extension_functions(modules)
        self.holders = holders
        self.stub = stub
        self.triton = triton_kernels(holders)
        self._undo = []
        self._undo_triton = []

    def __enter__(self):
        ids = {id(fn) for _m, _n, fn in self.fns}
        stub = self.stub or raising_stub
        for k in self.triton:  # an instance attribute shadows the class's run (kernel[grid] looks it up)
            try:
                had = "run" in vars(k)
                old = vars(k).get("run")
                k.run = (lambda *a, **kw: None) if self.stub is not None else raising_stub  # a launch returns nothing
                self._undo_triton.append((k, had, old))
            except (AttributeError, TypeError):
                continue

        for mod, name, fn in self.fns:
            try:
                setattr(mod, name, stub)
                self._undo.append((mod, name, fn))
            except (AttributeError, TypeError):
                continue  # read-only attribute: the holders below may still cover it
        for h in self.holders:
            d = getattr(h, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()):
                if id(v) in ids:
                    d[k] = stub
                    self._undo.append((h, k, v))
        return self

    def __exit__(self, *exc):
        for k, had, old in reversed(self._undo_triton):
            if had:
                k.run = old
            else:
                del k.run
        for obj, name, fn in reversed(self._undo):
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict) and not isinstance(obj, types.ModuleType) and name in d:
                d[name] = fn
            else:
                setattr(obj, name, fn)
        return False


@worker_probe("ghost")
def ghost_worker(wctx, args, fds, out_fds):
    """Run the kernel on slot ``args['slot']`` with its extensions replaced by raising stubs, or
    (``args['mode']``, a key of :data:`STUBS`) by stubs doing no work, on prepared memory."""
    import torch

    from .. import shm

    mods = list(wctx.ext_modules or [])
    names = sorted({str(getattr(m, "__name__", "?")).rsplit("_k", 1)[0] for m in mods})
    model = wctx.model
    holders = [wctx.module, model]
    if hasattr(model, "modules"):
        holders += list(model.modules())
    tk = triton_kernels(holders)
    names += sorted({_kernel_name(k) for k in tk})
    if not mods and not tk:
        return {"findings": [], "data": {"state": "no_extension", "names": []}}
    inputs = wctx.slots[str(args["slot"])]
    no_work = args.get("mode") in STUBS
    with Ghost(mods, holders, STUBS[args["mode"]][0] if no_work else None) as g:
        if not g.fns and not g.triton:
            return {"findings": [], "data": {"state": "no_functions", "names": names}}
        try:
            if no_work:
                # freed memory of the output's size holds a sentinel first: a kernel whose output
                # the (now idle) extension was to write is not "correct" by a stale earlier result
                from .unwritten import poisoned_forwards

                (enc,), _t, _p = poisoned_forwards(wctx, args, inputs, out_fds, attempts=1)
                return {"findings": [], "data": {"state": "ran", "names": names, "outputs": enc}}
            with torch.no_grad():
                outv = model(*inputs)
            if wctx.device is not None and wctx.device.type == "cuda":
                torch.cuda.synchronize(wctx.device)
        except Exception as exc:  # noqa: BLE001 - any failure means the extension is on the hot path
            return {"findings": [], "data": {"state": "raised", "names": names, "error": type(exc).__name__}}
    from ..values import plain as _plain

    with torch._C.DisableTorchFunctionSubclass():
        enc = shm.encode_value(_plain(outv), out_fds)
    return {"findings": [], "data": {"state": "ran", "names": names, "outputs": enc}}


@judge_probe("ghost_run")
def ghost_run(ctx):
    failed = (ctx.result.get("build") or {}).get("failed_builds") or []
    exts = (ctx.result.get("build") or {}).get("extensions") or []
    if failed and len(failed) >= len(exts):
        # every extension it tried to build failed, and the kernel still loaded: a fallback runs
        ctx.add_check("ghost_run", False,
                      f"the extension {failed[0].get('name', '?')} failed to build and the kernel carried on: "
                      "its fallback ran (the custom kernel does not do the work)")
        return
    triton = "triton" in str(ctx.job.kernel_code or "")
    if not exts and not triton:
        ctx.add_check("ghost_run", None, "the kernel builds no extension")
        return
    ctx.trial(1, 1, "ghost_run")
    inputs, ref = ctx.candidate_inputs(int(ctx.input_seed) + GHOST_SEED, "p-ghost")
    data, ofd = ctx.candidate.call("probe", {"name": "ghost", "args": {"slot": "p-ghost"}})
    d = data.get("data") or {}
    state = d.get("state")
    names = ", ".join(str(n) for n in (d.get("names") or [])[:4] if isinstance(n, str)) or "?"
    if state == "raised":
        # a marker kernel raises too when its call raises: run again with an extension that does
        # nothing (returns NaN, then its input); still correct means it never did the work
        seen = []
        for mode in ("inert", "identity"):
            got = _no_work_run(ctx, ref, mode)
            if got is True:
                ctx.add_check("ghost_run", False,
                              f"the custom kernel does not do the work (torch computes it): with every function of "
                              f"its extension ({names}) replaced by one that {STUBS[mode][1]}, the output is still "
                              "correct (a marker call)")
                return
            if got is False:
                seen.append(STUBS[mode][1])
        ctx.add_check("ghost_run", True, f"with its extension ({names}) replaced by one that raises, the kernel fails"
                      + "".join(f"; by one that {w}, its output is wrong" for w in seen))
        return
    if state != "ran" or d.get("outputs") is None:
        ctx.add_check("ghost_run", None, {"no_functions": "the extension exports no functions",
                                          "no_extension": "the kernel builds no extension and holds no Triton "
                                                          "kernel"}.get(state, "the worker ran no ghost run"))
        return
    out = ctx.hold(d["outputs"], ofd)
    if ctx.compare(ref.decoded(), out.decoded())["passed"]:
        ctx.add_check("ghost_run", False,
                      f"the custom kernel does not do the work (torch computes it): with every function of its "
                      f"extension ({names}) replaced by one that raises, the output is still correct")
    else:
        ctx.add_check("ghost_run", True, "without its extension the output is wrong: the extension does the work")


def _no_work_run(ctx, ref, mode):
    """True: still correct with the extension's functions doing nothing (``mode``: what they
    return, :data:`STUBS`); False: wrong or failing; None: not run."""
    from .unwritten import output_nbytes, preparable

    nbytes = output_nbytes(ref)
    data, ofd = ctx.candidate.call("probe", {"name": "ghost", "args": {
        "slot": "p-ghost", "mode": mode, "nbytes": nbytes if preparable(nbytes) else []}})
    d = data.get("data") or {}
    if d.get("state") == "raised":
        return False
    if d.get("state") != "ran" or d.get("outputs") is None:
        return None
    out = ctx.hold(d["outputs"], ofd)
    return bool(ctx.compare(ref.decoded(), out.decoded())["passed"])
