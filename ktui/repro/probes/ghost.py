"""Ghost run: does the kernel's own extension do the work?

The candidate worker replaces every function its load_inline / load extensions export (and every
reference to one held by the kernel's module or model) with a stub that raises, then runs the
kernel once. The judge compares what came back with the reference: still correct means torch (or
a fallback) computes the result, not the custom kernel. A build that failed and was swallowed by
the kernel (``failed_builds``) is the same thing found earlier: its fallback ran.
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


class Ghost:
    """Every extension function (and every attribute of ``holders`` bound to one) replaced by a
    stub raising :class:`GhostError`; put back on exit."""

    def __init__(self, modules, holders):
        self.fns = extension_functions(modules)
        self.holders = holders
        self._undo = []

    def __enter__(self):
        ids = {id(fn) for _m, _n, fn in self.fns}

        def stub(*args, **kwargs):
            raise GhostError("the kernel's extension was replaced for the ghost run")

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
        for obj, name, fn in reversed(self._undo):
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict) and not isinstance(obj, types.ModuleType) and name in d:
                d[name] = fn
            else:
                setattr(obj, name, fn)
        return False


@worker_probe("ghost")
def ghost_worker(wctx, args, fds, out_fds):
    """Run the kernel on slot ``args['slot']`` with its extensions replaced by raising stubs."""
    import torch

    from ..harness import shm

    mods = list(wctx.ext_modules or [])
    names = sorted({str(getattr(m, "__name__", "?")).rsplit("_k", 1)[0] for m in mods})
    if not mods:
        return {"findings": [], "data": {"state": "no_extension", "names": []}}
    model = wctx.model
    holders = [wctx.module, model]
    if hasattr(model, "modules"):
        holders += list(model.modules())
    inputs = wctx.slots[str(args["slot"])]
    with Ghost(mods, holders) as g:
        if not g.fns:
            return {"findings": [], "data": {"state": "no_functions", "names": names}}
        try:
            with torch.no_grad():
                outv = model(*inputs)
            if wctx.device is not None and wctx.device.type == "cuda":
                torch.cuda.synchronize(wctx.device)
        except Exception as exc:  # noqa: BLE001 - any failure means the extension is on the hot path
            return {"findings": [], "data": {"state": "raised", "names": names, "error": type(exc).__name__}}
    from ..harness.roles import _plain

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
    if not exts:
        ctx.add_check("ghost_run", None, "the kernel builds no extension")
        return
    ctx.trial(1, 1, "ghost_run")
    inputs, ref = ctx.candidate_inputs(int(ctx.job.seed) + GHOST_SEED, "p-ghost")
    data, ofd = ctx.candidate.call("probe", {"name": "ghost", "args": {"slot": "p-ghost"}})
    d = data.get("data") or {}
    state = d.get("state")
    names = ", ".join(str(n) for n in (d.get("names") or [])[:4] if isinstance(n, str)) or "?"
    if state == "raised":
        ctx.add_check("ghost_run", True, f"with its extension ({names}) replaced by one that raises, the kernel fails")
        return
    if state != "ran" or d.get("outputs") is None:
        ctx.add_check("ghost_run", None, "the extension exports no functions" if state == "no_functions"
                      else "the worker ran no ghost run")
        return
    out = ctx.hold(d["outputs"], ofd)
    if ctx.compare(ref.decoded(), out.decoded())["passed"]:
        ctx.add_check("ghost_run", False,
                      f"the custom kernel does not do the work (torch computes it): with every function of its "
                      f"extension ({names}) replaced by one that raises, the output is still correct")
    else:
        ctx.add_check("ghost_run", True, "without its extension the output is wrong: the extension does the work")
